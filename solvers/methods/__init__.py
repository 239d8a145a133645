"""Solution methods — where a new method goes: the EFCE saddle-point solver
(:mod:`~efce.solvers.methods.efce`), CFR/CFR+ (:mod:`~efce.solvers.methods.cfr`), ICFR and CFR-S
(:mod:`~efce.solvers.methods.icfr`), trigger-regret dynamics (:mod:`~efce.solvers.methods.trigger`),
optimal-welfare EFCE (:mod:`~efce.solvers.methods.welfare`) and self-play helpers
(:mod:`~efce.solvers.methods.selfplay`).  Every method returns
:class:`efce.solvers.result.SolveResult`."""
