"""Brute-force EFCE of small games: the normal-form LP over distributions of joint reduced pure
plans with every trigger constraint written out (von Stengel and Forges 2008, Definition 2.2's
trigger agents), solved by scipy.optimize.linprog.  Independent of baselines/efce_lp.py."""

from __future__ import annotations

import itertools

import numpy as np
import scipy.optimize

from efce.games.payoffs import sequence_form_payoffs


def _children(space, seq):
    return [int(j) for j in np.flatnonzero(space.infoset_parent_seq == seq)]


def _plans_from(space, infosets):
    """All reduced pure plans (0/1 sequence vectors) that pick one action at every infoset in
    ``infosets`` and recursively at the infosets below the chosen actions."""
    n = space.num_sequences
    if not infosets:
        return [np.zeros(n)]
    per_infoset = []
    for inf in infosets:
        options = []
        first, k = int(space.infoset_first_seq[inf]), int(space.infoset_num_actions[inf])
        for a in range(k):
            s = first + a
            for sub in _plans_from(space, _children(space, s)):
                x = sub.copy()
                x[s] = 1.0
                options.append(x)
        per_infoset.append(options)
    return [np.sum(combo, axis=0) for combo in itertools.product(*per_infoset)]


def pure_plans(space):
    plans = _plans_from(space, _children(space, 0))
    for x in plans:
        x[0] = 1.0
    return np.array(plans)


def count_plans(space, seq=0) -> int:
    total = 1
    for inf in _children(space, seq):
        first, k = int(space.infoset_first_seq[inf]), int(space.infoset_num_actions[inf])
        total *= sum(count_plans(space, first + a) for a in range(k))
    return total


def subtree_sequences(space, infoset):
    first, k = int(space.infoset_first_seq[infoset]), int(space.infoset_num_actions[infoset])
    out = []
    for s in range(1, space.num_sequences):
        anc = s
        while anc > 0:
            if first <= anc < first + k:
                out.append(s)
                break
            anc = int(space.seq_parent[anc])
    return np.array(out, dtype=int)


def normal_form_efce_welfare(game, objective="welfare") -> float:
    """Max social welfare (or player ``objective``'s utility, 0/1) over EFCE, by the
    normal-form LP."""
    spaces = [game.sequences(0), game.sequences(1)]
    plans = [pure_plans(s) for s in spaces]
    A = sequence_form_payoffs(game)
    U = [plans[0] @ A[i].toarray() @ plans[1].T for i in (0, 1)]  # |P1| × |P2|
    n1, n2 = len(plans[0]), len(plans[1])
    rows = []
    for i in (0, 1):
        space, mine, other = spaces[i], plans[i], plans[1 - i]
        Ai = A[i].toarray() if i == 0 else A[i].toarray().T  # own sequences × other sequences
        for inf in range(space.num_infosets):
            sub = subtree_sequences(space, inf)
            devs = _plans_from(space, [inf])
            first, k = int(space.infoset_first_seq[inf]), int(space.infoset_num_actions[inf])
            for a in range(k):
                trig = mine[:, first + a] > 0.5
                for y in devs:
                    dev = mine.copy()
                    dev[:, sub] = y[sub]
                    gain = (dev - mine) @ Ai @ other.T  # own plan × other plan
                    gain[~trig] = 0.0
                    row = gain if i == 0 else gain.T
                    rows.append(row.ravel())
    A_ub = np.array(rows)  # gain ≤ 0
    welfare = (U[0] + U[1]).ravel() if objective == "welfare" else U[objective].ravel()
    res = scipy.optimize.linprog(
        -welfare,
        A_ub=A_ub,
        b_ub=np.zeros(len(rows)),
        A_eq=np.ones((1, n1 * n2)),
        b_eq=[1.0],
        bounds=(0, None),
        method="highs",
    )
    assert res.status == 0, res.message
    return -res.fun
