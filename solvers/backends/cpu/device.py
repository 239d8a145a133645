"""The sweep of the n-player device gaps (:mod:`efce.solvers.evaluation.device_gaps` has the
algorithm): a depth-first walk per joint plan of a correlation device accumulating, for one
player, the value of every trigger at every depth and the following values.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel


@kernel()
def device_deviation_sums(
    i: int,
    tab: np.ndarray,
    rows: np.ndarray,
    probs: np.ndarray,
    first_child: np.ndarray,
    num_children: np.ndarray,
    player: np.ndarray,
    infoset: np.ndarray,
    chance_prob: np.ndarray,
    term_index: np.ndarray,
    payoff_i: np.ndarray,
    node_seq_i: np.ndarray,
    chain_inf: np.ndarray,
    chain_act: np.ndarray,
    seq_depth: np.ndarray,
    first_seq_i: np.ndarray,
    L: np.ndarray,
    F: np.ndarray,
) -> None:
    """DFS per joint plan; fills ``L[τ, slot, b]`` and ``F[σ]`` (``F[0]`` = utility).

    Joint plan ``k`` of player ``p`` is row ``rows[k, p]`` of the table ``tab``."""
    n_nodes = first_child.shape[0]
    stack = np.empty(n_nodes, dtype=np.int64)
    weight = np.empty(n_nodes, dtype=np.float64)
    for k in range(rows.shape[0]):
        pk = probs[k]
        if pk == 0.0:
            continue
        top = 0
        stack[0] = 0
        weight[0] = pk
        top = 1
        while top > 0:
            top -= 1
            v = stack[top]
            w = weight[top]
            t = term_index[v]
            if t >= 0:
                c = w * payoff_i[t]
                if c == 0.0:
                    continue
                tau = node_seq_i[v]
                L[tau, 0, 0] += c
                d = seq_depth[tau]
                consistent = True
                for j in range(d):
                    b = tab[rows[k, i], chain_inf[tau, j]]
                    if b < 0:
                        consistent = False
                        break
                    L[tau, j + 1, b] += c
                    if b != chain_act[tau, j]:
                        consistent = False
                        break
                if consistent:
                    F[0] += c
                    for j in range(d):
                        F[first_seq_i[chain_inf[tau, j]] + chain_act[tau, j]] += c
                continue
            pl = player[v]
            fc = first_child[v]
            if pl == -1:
                for a in range(num_children[v]):
                    stack[top] = fc + a
                    weight[top] = w * chance_prob[fc + a]
                    top += 1
            elif pl == i:
                for a in range(num_children[v]):
                    stack[top] = fc + a
                    weight[top] = w
                    top += 1
            else:
                a = tab[rows[k, pl], infoset[v]]
                if a >= 0:
                    stack[top] = fc + a
                    weight[top] = w
                    top += 1
