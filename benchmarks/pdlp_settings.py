"""OR-Tools PDLP's settings on the toolkit's LPs: how many iterations, and how much memory, each
needs to PDLP's own optimality (relative and absolute KKT tolerance 1e-6, 2 threads, the toolkit's
model of :func:`efce.baselines.build_efce_lp` with the welfare objective).  One PDLP call in this
process, no stages and no project checks, so the settings compare alone:

* ``default``: PDLP's defaults (what ``lp-pdlp`` ran before Glop's presolve);
* ``glop``: Glop's presolve first (``presolve_options.use_glop``; ``lp-pdlp``'s cold stage on LPs
  of up to ``PRESOLVE_MAX_NONZEROS`` nonzeros);
* ``polish``: feasibility polishing (``use_feasibility_polishing``; it cannot be combined with
  Glop's presolve);
* ``highs``: HiGHS's presolve first (``highspy``), PDLP on the LP it leaves.  The point PDLP
  returns is the presolved LP's, which only HiGHS's postsolve maps back to ξ, so the line gives
  the presolved LP's ``objective`` (the welfare there) and no welfare or violation of ξ.

Two more knobs, for experiments the settings above do not cover:

* ``--follow-values local`` solves an equivalent LP in which each trigger's following value is
  not one row over its whole subtree but a chain of local rows: one free variable ``f[σ]`` per
  sequence of the player, ``f[σ] ≤ Σ_{z: σ_i(z) = σ} p_c(z) u_i(z) ξ[σ(z)] + Σ_{σ' child of σ}
  f[σ']``, and each following row reads the ``f`` of the trigger's sequences (its own for EFCE,
  its infoset's for EFCCE, the root infosets' for NFCCE).  Relaxing the definition to ``≤`` keeps
  the projection on ``(ξ, v)`` the same, since ``f`` only appears on the larger side of the
  following rows.  ``dense`` is the toolkit's model;
* ``--pdlp-param FIELD:VALUE`` (repeatable) sets further fields of PDLP's parameters in protobuf
  text, e.g. ``--pdlp-param "scheduler_type: SCHEDULER_TYPE_EIGEN_THREADPOOL"``.

Prints one JSON line: termination, iterations, seconds (HiGHS's presolve included), welfare and
Definition-3 violation of the returned ξ, and the process's peak resident memory.

    python benchmarks/pdlp_settings.py GAME --concept efcce --setting glop --time-limit 150
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import time

import numpy as np


def local_follow_block(base):
    """``base`` (:func:`efce.baselines.efce_lp.incentive_block`) with its following rows made
    local through one free variable per sequence (the module docstring's ``--follow-values local``)."""

    def block(game, pairs, i, tm_seq, weight, concept="efce"):
        blk = base(game, pairs, i, tm_seq, weight, concept)
        space = game.sequences(i)
        n_dev, n_rows, n_val = blk.num_dev_rows, blk.num_rows, blk.num_values
        seqs = np.arange(1, space.num_sequences, dtype=np.int64)
        f_col, def_row = n_val + seqs - 1, n_rows + seqs - 1  # f[σ] and the row defining it
        parent = space.seq_parent[seqs].astype(np.int64)
        has_parent = parent > 0
        infoset = space.seq_infoset[seqs].astype(np.int64)
        if concept == "efce":  # the trigger σ̂ reads f[σ̂]
            follow_row, reads = n_dev + seqs - 1, np.ones(len(seqs), bool)
        elif concept == "efcce":  # the trigger Î reads f[(Î, a)] for every a
            follow_row, reads = n_dev + infoset, np.ones(len(seqs), bool)
        else:  # the player's one trigger reads the root infosets' sequences
            follow_row, reads = np.full(len(seqs), n_dev), space.infoset_parent_seq[infoset] == 0
        own = tm_seq[:, i].astype(np.int64)
        zs = np.flatnonzero(own > 0)
        dev = blk.rows < n_dev  # the deviation rows' ξ terms stay; the following rows' go
        return dataclasses.replace(
            blk,
            rows=np.concatenate([blk.rows[dev], n_rows + own[zs] - 1]),
            cols_xi=np.concatenate([blk.cols_xi[dev], pairs.index(tm_seq[zs, 0], tm_seq[zs, 1])]),
            vals_xi=np.concatenate([blk.vals_xi[dev], weight[zs]]),
            rows_v=np.concatenate([blk.rows_v, def_row, n_rows + parent[has_parent] - 1, follow_row[reads]]),
            cols_v=np.concatenate([blk.cols_v, f_col, f_col[has_parent], f_col[reads]]),
            vals_v=np.concatenate(
                [blk.vals_v, -np.ones(len(seqs)), np.ones(int(has_parent.sum())), np.ones(int(reads.sum()))]
            ),
            num_rows=n_rows + len(seqs),
            num_values=n_val + len(seqs),
        )

    return block


def highs_presolved(c, A, row_lower, row_upper, col_lower, col_upper):
    """The LP ``min cᵀx, row_lower ≤ A x ≤ row_upper, col_lower ≤ x ≤ col_upper`` after HiGHS's
    presolve, in the same form (the toolkit's welfare LPs have no objective offset to carry)."""
    import highspy
    import scipy.sparse as sp

    from efce.baselines.backends import highs_model
    from efce.baselines.lp_highs import new_highs

    def infinite(v):  # HiGHS's infinity as NumPy's
        v = np.asarray(v, dtype=np.float64)
        return np.where(v >= highspy.kHighsInf, np.inf, np.where(v <= -highspy.kHighsInf, -np.inf, v))

    lp = highs_model(A, c, col_lower, col_upper, row_lower, row_upper, maximize=False)
    highs = new_highs()  # HiGHS's banner kept off stdout, which has the JSON line
    highs.setOptionValue("output_flag", False)
    highs.passModel(lp)
    highs.presolve()
    p = highs.getPresolvedLp()
    assert p.offset_ == 0.0, "a presolve that moved the objective: its offset is not carried"
    shape = (p.num_row_, p.num_col_)
    matrix = sp.csc_matrix(
        (np.array(p.a_matrix_.value_), np.array(p.a_matrix_.index_), np.array(p.a_matrix_.start_)),
        shape=shape,
    )
    return (
        np.array(p.col_cost_),
        matrix,
        infinite(p.row_lower_),
        infinite(p.row_upper_),
        infinite(p.col_lower_),
        infinite(p.col_upper_),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("game", help="a game spec, e.g. sheriff:max_bribe=3,max_items=3,rounds=4")
    parser.add_argument("--concept", default="efce", choices=("efce", "efcce", "nfcce"))
    parser.add_argument("--setting", default="default", choices=("default", "glop", "polish", "highs"))
    parser.add_argument("--time-limit", type=float, default=150.0)
    parser.add_argument("--follow-values", default="dense", choices=("dense", "local"))
    parser.add_argument("--pdlp-param", action="append", default=[], help="FIELD:VALUE, protobuf text")
    parser.add_argument("--verbose", action="store_true", help="PDLP's own log on stdout")
    args = parser.parse_args()

    from google.protobuf import text_format
    from ortools.pdlp import solve_log_pb2, solvers_pb2
    from ortools.pdlp.python import pdlp

    from efce.baselines import build_efce_lp
    from efce.games.spec import make_game

    if args.follow_values == "local":
        from efce.baselines import efce_lp

        efce_lp.incentive_block = local_follow_block(efce_lp.incentive_block)
    model = build_efce_lp(make_game(args.game), objective="welfare", concept=args.concept)
    lp = (
        -np.asarray(model.c, dtype=np.float64),
        model.A,
        model.row_lower,
        model.row_upper,
        model.col_lower,
        model.col_upper,
    )
    presolve_seconds = 0.0
    if args.setting == "highs":  # timed with PDLP: Glop's presolve runs inside PDLP's call
        presolve_started = time.perf_counter()
        lp = highs_presolved(*lp)
        presolve_seconds = time.perf_counter() - presolve_started
    qp = pdlp.QuadraticProgram()
    (
        qp.objective_vector,
        qp.constraint_matrix,
        qp.constraint_lower_bounds,
        qp.constraint_upper_bounds,
        qp.variable_lower_bounds,
        qp.variable_upper_bounds,
    ) = lp
    params = solvers_pb2.PrimalDualHybridGradientParams()
    params.num_threads = 2
    params.verbosity_level = 2 if args.verbose else 0
    criteria = params.termination_criteria
    criteria.simple_optimality_criteria.eps_optimal_relative = 1e-6
    criteria.simple_optimality_criteria.eps_optimal_absolute = 1e-6
    criteria.time_sec_limit = args.time_limit
    if args.setting == "glop":
        params.presolve_options.use_glop = True
    elif args.setting == "polish":
        params.use_feasibility_polishing = True
        # PDLP refuses polishing otherwise.
        params.handle_some_primal_gradients_on_finite_bounds_as_residuals = False
    for param in args.pdlp_param:
        text_format.Merge(param, params)
    started = time.perf_counter()
    result = pdlp.primal_dual_hybrid_gradient(qp, params)
    seconds = time.perf_counter() - started + presolve_seconds
    log = result.solve_log
    primal = np.asarray(result.primal_solution)
    xi = primal[: model.num_xi]
    # empty when PDLP refused the parameters; a presolved LP's point is not ξ
    solved = xi.size == model.num_xi and args.setting != "highs"
    print(
        json.dumps(
            {
                "game": args.game,
                "concept": args.concept,
                "setting": args.setting,
                "follow_values": args.follow_values,
                "pdlp_params": args.pdlp_param,
                "time_limit": args.time_limit,
                "termination": solve_log_pb2.TerminationReason.Name(log.termination_reason),
                "iterations": int(log.iteration_count),
                "seconds": round(seconds, 1),
                "highs_presolve_seconds": round(presolve_seconds, 1),
                "objective": float(-(lp[0] @ primal)) if primal.size == len(lp[0]) else None,
                "welfare": float(model.c[: model.num_xi] @ xi) if solved else None,
                "violation": float(model.vsf.max_violation(xi)) if solved else None,
                "nonzeros": int(model.nonzeros),
                "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
