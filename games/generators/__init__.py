"""Benchmark game generators — where a new game goes: one module per generator (Kuhn, Leduc,
Goofspiel, Battleship, Sheriff, the papers' figure games), built on :mod:`.builder`.

Each module declares beside its code the parameters of its games (``PARAMETERS``) and the games
themselves (``GAMES``: :class:`~efce.games.generators.params.GameGenerator`, with the size
estimate); :data:`efce.games.spec.GENERATORS` collects the declarations of every module here,
so a new game is one new module.  The generators are re-exported by :mod:`efce.games`
(``efce.games.kuhn(...)``).
"""
