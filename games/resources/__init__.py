"""Machine resources — memory budget and peak RSS (:mod:`.memory`), size estimates of games
before they are built (:mod:`.estimate`), numba's kernel cache (:mod:`.numba_cache`), atomic
file writes (:mod:`.atomic`)."""
