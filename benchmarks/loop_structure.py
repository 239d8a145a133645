"""How much of the two largest index arrays of rm's loop is structure that a smaller layout could
recompute: Ξ's ``source`` array (one int32 per source slot) and the payoff operator's ``rows``
(one int32 per nonzero of ``A``'s deviation part).  Together they are about 11 of the loop's
bytes per relevant pair on Battleship (``docs/results/memory.md``).

* **Ξ's sources.**  Within a run of equal steps (:class:`efce.polytopes.chain.StepRuns`), a step
  whose sources are the sources of the step before it, each plus one, could be stored as a flag
  (the pass carries the sources from one step to the next); only the other steps would keep
  theirs.  Printed: the share of such steps and of the source slots the others keep.
* **A's rows.**  Per player, the rows one trigger slot reads are ``ξ[σ̂, σ_{-i}(z)]`` for the
  terminals ``z`` of its line; printed: how many of them are distinct per slot (the rows a
  two-level layout, one index per line entry into a table per slot, would keep), and the share of
  consecutive differences within a slot's line that fit 16 bits (a delta layout).

One JSON line on stdout::

    python benchmarks/loop_structure.py "battleship:rows=3,cols=2,ship_sizes=[1],shots=3"
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def source_structure(chain) -> dict:
    """Steps whose sources are the previous step's plus one (same run), and the source slots the
    other steps hold."""
    steps = chain.steps
    src = chain.source.astype(np.int64)
    sp = steps.source_ptr
    nsrc = np.diff(sp)
    run = np.repeat(np.arange(steps.num_runs), steps.counts)
    # a slot matches when the slot nsrc before it (the same source of the step before) is one less
    slot_step = np.repeat(np.arange(len(nsrc)), nsrc)
    width = nsrc[slot_step]
    back = np.arange(len(src)) - width
    ok = back >= 0
    ok[ok] = src[back[ok]] + 1 == src[ok]
    has_prev = np.zeros(len(nsrc), dtype=bool)
    has_prev[1:] = (run[1:] == run[:-1]) & (nsrc[1:] > 0)
    shift = has_prev.copy()
    with_slots = np.flatnonzero(nsrc > 0)
    shift[with_slots] &= np.logical_and.reduceat(ok, sp[:-1][with_slots])
    kept = int(nsrc[~shift].sum())
    return {
        "xi_steps": int(len(nsrc)),
        "xi_source_slots": int(len(src)),
        "steps_previous_plus_one": round(float(shift.mean()), 4),
        "source_slots_kept": kept,
        "source_slots_kept_share": round(kept / max(len(src), 1), 4),
    }


def row_structure(tables) -> list[dict]:
    """Per player: nonzeros, distinct rows per trigger slot, line entries, and the share of
    consecutive row differences within a slot's line that fit 16 bits."""
    out = []
    for t in tables.players:
        width = np.diff(t.line_start)
        infosets = np.flatnonzero((width > 0) & (t.trig_count > 0))
        distinct = fits = pairs = 0
        for inf in infosets:
            w, c = int(width[inf]), int(t.trig_count[inf])
            block = np.sort(t.rows[t.row_start[inf] : t.row_start[inf] + c * w].reshape(c, w), axis=1)
            distinct += int(c + (block[:, 1:] != block[:, :-1]).sum())
            d = np.diff(t.rows[t.row_start[inf] : t.row_start[inf] + c * w].reshape(c, w).astype(np.int64))
            fits += int((np.abs(d) < 2**15).sum())
            pairs += d.size
        out.append(
            {
                "player": t.player + 1,
                "nonzeros": int(len(t.rows)),
                "distinct_rows_per_slot": distinct,
                "line_entries": int(t.line_start[-1]),
                "deltas_in_16_bits": round(fits / max(pairs, 1), 4),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("game", help="a game spec")
    args = parser.parse_args()

    from efce.games.spec import make_game
    from efce.solvers.methods.efce import build_efce_model

    model = build_efce_model(make_game(args.game))
    pairs = len(model.pairs)
    print(
        json.dumps(
            {
                "game": args.game,
                "relevant_pairs": pairs,
                **source_structure(model.xi_steps),
                "rows": row_structure(model.tables),
            }
        )
    )


if __name__ == "__main__":
    main()
