"""Regret minimizers — where a new local rule goes: the :class:`~.protocol.RegretMinimizer`
protocol, local rules on simplexes (:mod:`.local`), internal regret (:mod:`.internal`), the
algebra that composes minimizers (:mod:`.algebra`), and the chain engine (:mod:`.engine`), whose
compiled passes a compute backend runs (:mod:`efce.solvers.backends`)."""
