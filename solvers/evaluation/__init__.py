"""Evaluation — where a new gap goes: equilibrium gaps of correlation plans (:mod:`.gaps`) and of
correlation devices (:mod:`.device_gaps`, devices in :mod:`.device`), best responses
(:mod:`.best_response`) and the payoff operators they share with the solvers
(:mod:`.payoff_operator`)."""
