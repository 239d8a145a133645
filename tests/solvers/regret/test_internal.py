"""Internal regret: Blum–Mansour against plain (external) regret matching on an adaptive
adversary, and the swap-regret measure itself."""

import numpy as np
import pytest

from efce.solvers.regret import algebra
from efce.solvers.regret.internal import BlumMansour, internal_regret
from efce.solvers.regret.local import RegretMatching, Segments

HORIZONS = (250, 1000, 4000)


def cycling_adversary(p: np.ndarray) -> np.ndarray:
    """The loss of a round, chosen after seeing the learner's point ``p`` over 3 actions: with
    ``a`` its most likely action, ``a + 1`` (mod 3) gains 1 and ``a + 2`` loses 2.

    Every action is in turn the best, the middle and the worst one, so no fixed action beats an
    external-regret learner by much; but the learner is always one step behind the cycle — its
    favourite action ``a`` is beaten by ``a + 1`` — so its swap regret ``a → a + 1`` grows
    linearly unless it minimizes internal regret."""
    a = int(np.argmax(p))
    loss = np.zeros(3)
    loss[(a + 1) % 3] = -1.0
    loss[(a + 2) % 3] = 2.0
    return loss


def play(rule, T):
    rm = algebra.simplex(3, rule)
    _, points, losses = algebra.run(rm, lambda t, p: cycling_adversary(p), T)
    seg = Segments.from_sizes([3])
    internal = [internal_regret(points[:n], losses[:n], seg)[0] / n for n in HORIZONS]
    external = algebra.regret(rm, losses, points) / T
    return internal, external


def test_internal_regret_vanishes_for_blum_mansour_and_not_for_regret_matching():
    rm_internal, rm_external = play(RegretMatching(), HORIZONS[-1])
    # External regret matching: its external regret vanishes, its internal regret is linear.
    assert rm_external < 0.01, rm_external
    assert min(rm_internal) > 0.4, rm_internal
    # Blum–Mansour over the same regret matching: average internal regret → 0 (about 1/√T).
    bm_internal, _ = play(BlumMansour(RegretMatching()), HORIZONS[-1])
    assert bm_internal[-1] < 0.02, bm_internal
    assert bm_internal[1] < 0.6 * bm_internal[0] and bm_internal[2] < 0.6 * bm_internal[1], bm_internal


def test_internal_regret_measure():
    """``internal_regret`` against its definition, pair by pair, on random play."""
    rng = np.random.default_rng(0)
    seg = Segments.from_sizes([2, 4])
    P = np.concatenate([rng.dirichlet(np.ones(2), 30), rng.dirichlet(np.ones(4), 30)], axis=1)
    L = rng.normal(size=(30, 6))
    got = internal_regret(P, L, seg)
    for s, (lo, hi) in enumerate(zip(seg.ptr[:-1], seg.ptr[1:], strict=True)):
        best = max(
            sum(P[t, lo + a] * (L[t, lo + a] - L[t, lo + b]) for t in range(30))
            for a in range(hi - lo)
            for b in range(hi - lo)
        )
        assert got[s] == pytest.approx(best, abs=1e-12)


def test_blum_mansour_plays_a_stationary_distribution_of_its_rows():
    """After every observation the played point ``p`` satisfies ``p = p Q`` for the rows ``Q``
    recommended by the base minimizers."""
    seg = Segments.from_sizes([3, 1, 4])
    rule = BlumMansour()
    state = rule.init(seg)
    rng = np.random.default_rng(1)
    rows_seg = Segments.from_sizes(np.repeat(seg.sizes, seg.sizes))
    for _ in range(25):
        rule.observe(state, rng.normal(size=seg.total), seg)
        p = rule.recommend(state, seg)
        base = {k[5:]: v for k, v in state.items() if k.startswith("base_")}
        rows = rule.base.recommend(base, rows_seg)
        block = 0
        for lo, m in zip(seg.ptr[:-1], seg.sizes, strict=True):
            Q = rows[block : block + m * m].reshape(m, m)
            np.testing.assert_allclose(p[lo : lo + m] @ Q, p[lo : lo + m], atol=1e-12)
            assert p[lo : lo + m].sum() == pytest.approx(1.0, abs=1e-12)
            block += m * m
