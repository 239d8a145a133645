"""Benchmark game generators — where a new game goes: one module per generator (Kuhn, Leduc,
Goofspiel, Battleship, Sheriff, the papers' figure games), built on :mod:`.builder`.

The generators are re-exported by :mod:`efce.games` (``efce.games.kuhn(...)``) and named by
game spec strings through :data:`efce.games.spec.GENERATORS`.
"""
