"""Evaluation — where a new gap goes: equilibrium gaps of correlation plans
(:mod:`~efce.solvers.evaluation.gaps`) and of correlation devices
(:mod:`~efce.solvers.evaluation.device_gaps`, devices in :mod:`~efce.solvers.evaluation.device`),
best responses (:mod:`~efce.solvers.evaluation.best_response`) and the payoff operators they
share with the solvers (:mod:`~efce.solvers.evaluation.payoff_operator`)."""
