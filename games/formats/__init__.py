"""File formats and converters — where a new format goes: Gambit ``.efg`` (:mod:`.efg`,
read by :func:`efce.games.load`, written by :func:`efce.games.save`) and OpenSpiel games
(:mod:`.openspiel`, optional ``open_spiel`` extra)."""
