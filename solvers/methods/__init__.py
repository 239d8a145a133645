"""Solution methods — where a new method goes: the EFCE saddle-point solver (:mod:`.efce`),
CFR/CFR+ (:mod:`.cfr`), ICFR and CFR-S (:mod:`.icfr`), trigger-regret dynamics
(:mod:`.trigger`), optimal-welfare EFCE (:mod:`.welfare`) and self-play helpers
(:mod:`.selfplay`).  Every method returns :class:`efce.solvers.result.SolveResult`."""
