"""Regret minimizers — where a new local rule goes: the :class:`~.protocol.RegretMinimizer`
protocol, local rules on simplexes (:mod:`.local`), internal regret (:mod:`.internal`), the
algebra that composes minimizers (:mod:`.algebra`), and the compiled chain engine
(:mod:`.engine`, kernels in :mod:`.kernels`)."""
