"""ICFR and CFR-S: decentralized no-regret dynamics whose empirical frequency of play converges to
an EFCE (ICFR) or an EFCCE (CFR-S) in n-player games with chance (Celli, Marchesi, Farina,
Gatti 2020, Algorithms 1 and 2).

Every iteration each player samples a pure plan top-down, all players observe their utilities
against the others' sampled plans (chance in expectation), and every player updates local regret
minimizers with the laminar utilities of equation (14),
``û_I(a) = u_I(a) + Σ_{I' ∈ C(I,a)} û_{I'}(π(I'))``.

ICFR (SAMPLEINTERNAL / UPDATEINTERNAL).  At an infoset ``I`` reached by the partially sampled
plan, the action is drawn from an internal-regret minimizer of ``I``
(:class:`solvers.regret.internal.BlumMansour` over regret matching); otherwise from the external-regret
minimizer (regret matching) of ``(σ_I, I)``, ``σ_I ∈ Σᶜ(I)`` the sequence of the deepest ancestor
infoset the plan reaches.  Only the minimizer that produced the action is updated.  All
minimizers of a player are stored flat and updated in one vectorized call each (slots of the
external minimizers are ``(I, ancestor depth j, action b)``).

CFR-S (SAMPLE / UPDATE).  One regret-matching minimizer per infoset, sampled at every infoset and
updated with ``û`` at every infoset.

The empirical frequency is stored as counts of joint *reduced* plans (actions at infosets the
player's own plan does not reach are irrelevant to every trigger agent): each player's distinct
reduced plans are bit-packed and deduplicated, joint plans are tuples of ids.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from efce.errors import GameError
from efce.games.game import Game
from efce.games.payoffs import terminal_map
from efce.solvers.driver import IterationDriver, ProgressCallback
from efce.solvers.evaluation.device_gaps import FactoredDevice, evaluator
from efce.solvers.options import (
    EQUILIBRIUM_REPORT,
    ITERATIONS,
    SEED,
    TARGET_GAP,
    TIME_LIMIT,
    Method,
    defaults,
)
from efce.solvers.regret.internal import BlumMansour
from efce.solvers.regret.local import LocalRule, RegretMatching, Segments
from efce.solvers.regret.registry import as_rule
from efce.solvers.result import SolveResult, TraceRow
from efce.solvers.warm_up import segments_warm_up

METHODS = ("icfr", "cfr-s")

#: The options of ``icfr`` and ``cfr-s`` (:data:`SOLVE_METHODS`): type, range and default of each.
OPTIONS = (ITERATIONS.with_default(10_000), TIME_LIMIT, TARGET_GAP, SEED)
#: Option name → the default of ``icfr`` and ``cfr-s`` (:data:`OPTIONS`), :func:`solve_icfr`'s own.
DEFAULTS = defaults(OPTIONS)


# ---------------------------------------------------------------------- plan store
class PlanStore:
    """Counts of joint reduced plans, compactly (see module doc)."""

    def __init__(self, game: Game):
        self.widths = [game.sequences(p).num_infosets for p in range(game.num_players)]
        maxA = max(
            (
                int(game.sequences(p).infoset_num_actions.max())
                for p in range(game.num_players)
                if game.sequences(p).num_infosets
            ),
            default=1,
        )
        self.bits = 2 if maxA + 1 <= 4 else 4 if maxA + 1 <= 16 else 8
        self.ids: list[dict[bytes, int]] = [{} for _ in self.widths]
        self.keys: list[list[bytes]] = [[] for _ in self.widths]
        self.counts: dict[tuple, int] = {}
        self.total = 0

    def _pack(self, plan: np.ndarray) -> bytes:
        v = (plan + 1).astype(np.uint8)
        if self.bits == 8:
            return v.tobytes()
        per = 8 // self.bits
        pad = (-len(v)) % per
        if pad:
            v = np.concatenate([v, np.zeros(pad, np.uint8)])
        v = v.reshape(-1, per)
        out = np.zeros(len(v), dtype=np.uint8)
        for j in range(per):
            out |= v[:, j] << (j * self.bits)
        return out.tobytes()

    def _unpack(self, key: bytes, width: int) -> np.ndarray:
        b = np.frombuffer(key, dtype=np.uint8)
        if self.bits == 8:
            v = b
        else:
            per = 8 // self.bits
            mask = (1 << self.bits) - 1
            v = np.stack([(b >> (j * self.bits)) & mask for j in range(per)], axis=1).ravel()
        return v[:width].astype(np.int16) - 1

    def add(self, plans: list[np.ndarray], count: int = 1) -> None:
        ids = []
        for p, plan in enumerate(plans):
            k = self._pack(plan)
            i = self.ids[p].get(k)
            if i is None:
                i = len(self.keys[p])
                self.ids[p][k] = i
                self.keys[p].append(k)
            ids.append(i)
        key = tuple(ids)
        self.counts[key] = self.counts.get(key, 0) + count
        self.total += count

    def device(self) -> FactoredDevice:
        tables = []
        for p, w in enumerate(self.widths):
            t = np.full((max(len(self.keys[p]), 1), max(w, 1)), -1, dtype=np.int8)
            for i, k in enumerate(self.keys[p]):
                t[i, :w] = self._unpack(k, w)
            tables.append(t[:, :w] if w else t[:, :0])
        ids = np.array(list(self.counts.keys()), dtype=np.int64).reshape(-1, len(self.widths))
        probs = np.array(list(self.counts.values()), dtype=np.float64) / self.total
        return FactoredDevice(tables, ids, probs)


# ---------------------------------------------------------------------- per-player learner
class _Learner:
    def __init__(self, game: Game, i: int, method: str, rule: LocalRule, internal_rule: LocalRule):
        space = game.sequences(i)
        self.space = space
        self.nI = space.num_infosets
        self.S = space.num_sequences
        self.A = space.infoset_num_actions.astype(np.int64)
        self.maxA = int(self.A.max()) if self.nI else 1
        self.first = space.infoset_first_seq.astype(np.int64)
        self.pseq = space.infoset_parent_seq.astype(np.int64)
        self.pinf = space.seq_infoset[self.pseq].astype(np.int64)  # -1 for root infosets
        self.depth = space.infoset_depth.astype(np.int64)
        self.seg = Segments.from_sizes(self.A) if self.nI else Segments.from_sizes([])
        self.method = method
        self.levels = []
        for d in range(int(self.depth.max()) + 1 if self.nI else 0):
            J = np.flatnonzero(self.depth == d)
            A = self.A[J]
            pad = self.seg.ptr[J][:, None] + np.arange(self.maxA)[None, :]
            mask = np.arange(self.maxA)[None, :] < A[:, None]
            seqs = np.repeat(self.first[J], A) + (np.arange(int(A.sum())) - np.repeat(np.cumsum(A) - A, A))
            self.levels.append((J, np.where(mask, pad, 0), mask, A, seqs))
        self.rm = rule
        if method == "icfr":
            self.internal = internal_rule
            self.int_state = self.internal.init(self.seg)
            self._build_external()
            self.ext_state = self.rm.init(self.ext_seg)
        else:
            self.state = self.rm.init(self.seg)

    def _build_external(self):
        """Slots (I, j, b): I at depth d ≥ 1, j < d the depth of an ancestor infoset I_j, b an
        action of I_j other than the one leading to I (the sequences Σᶜ(I))."""
        space = self.space
        D = int(self.depth.max()) if self.nI else 0
        self.ext_table = np.full((self.nI, max(D, 1), self.maxA), -1, dtype=np.int64)
        anc_inf = np.full((self.nI, max(D, 1)), -1, dtype=np.int64)
        anc_act = np.full((self.nI, max(D, 1)), -1, dtype=np.int64)
        s = self.pseq.copy()
        d = self.depth.copy()
        for _ in range(D):
            live = np.flatnonzero(d > 0)
            anc_inf[live, d[live] - 1] = space.seq_infoset[s[live]]
            anc_act[live, d[live] - 1] = space.seq_action[s[live]]
            s[live] = space.seq_parent[s[live]]
            d[live] -= 1
        inf, j, b = np.nonzero(np.ones_like(self.ext_table, dtype=bool))
        valid = (anc_inf[inf, j] >= 0) & (b < self.A[np.maximum(anc_inf[inf, j], 0)]) & (b != anc_act[inf, j])
        inf, j, b = inf[valid], j[valid], b[valid]
        self.ext_table[inf, j, b] = np.arange(len(inf))
        self.ext_seg = Segments.from_sizes(self.A[inf]) if len(inf) else Segments.from_sizes([])
        self.ext_infoset = inf

    # -------------------------------------------------------------- sampling
    def sample(self, rng: np.random.Generator):
        """Returns (plan, plays[S] bool, reached[nI] bool, ext_slot[nI] or None)."""
        plan = np.zeros(self.nI, dtype=np.int64)
        plays = np.zeros(self.S, dtype=bool)
        plays[0] = True
        reached = np.zeros(self.nI, dtype=bool)
        if self.method == "icfr":
            x = np.concatenate(
                [
                    self.internal.recommend(self.int_state, self.seg),
                    self.rm.recommend(self.ext_state, self.ext_seg),
                ]
            )
            trig = np.full(self.nI, -1, dtype=np.int64)  # sequence σ_I for unreached infosets
            slot = np.full(self.nI, -1, dtype=np.int64)
        else:
            x = self.rm.recommend(self.state, self.seg)
        space = self.space
        for J, pad, mask, A, _ in self.levels:
            r = plays[self.pseq[J]]
            reached[J] = r
            idx = pad
            if self.method == "icfr" and not r.all():
                un = np.flatnonzero(~r)
                Ju = J[un]
                P = self.pinf[Ju]
                t = np.where(reached[P], self.first[P] + plan[P], trig[P])
                trig[Ju] = t
                tI = space.seq_infoset[t]
                sl = self.ext_table[Ju, self.depth[tI], space.seq_action[t]]
                slot[Ju] = sl
                idx = idx.copy()
                idx[un] = np.where(
                    mask[un],
                    self.seg.total + self.ext_seg.ptr[sl][:, None] + np.arange(self.maxA)[None, :],
                    0,
                )
            probs = np.where(mask, x[idx], 0.0)
            cum = np.cumsum(probs, axis=1)
            u = rng.random(len(J)) * cum[:, -1]
            a = np.minimum((cum < u[:, None]).sum(axis=1), A - 1)
            plan[J] = a
            plays[self.first[J] + a] = r
        return plan, plays, reached, (slot if self.method == "icfr" else None)

    # -------------------------------------------------------------- update
    def laminar_utilities(self, L: np.ndarray, plan: np.ndarray) -> np.ndarray:
        """û of equation (14) for every (I, a), in sequence order minus one (= seg order)."""
        uhat = np.zeros(self.seg.total)
        childsum = np.zeros(self.S)
        for J, _, _, _, seqs in reversed(self.levels):
            uh = L[seqs] + childsum[seqs]
            uhat[seqs - 1] = uh
            V = uhat[self.first[J] - 1 + plan[J]]
            childsum += np.bincount(self.pseq[J], weights=V, minlength=self.S)
        return uhat

    def update(self, uhat: np.ndarray, reached: np.ndarray, slot) -> None:
        if self.method == "cfr-s":
            self.rm.observe(self.state, -uhat, self.seg)
            return
        owner = self.seg.owner
        self.internal.observe(self.int_state, np.where(reached[owner], -uhat, 0.0), self.seg)
        un = np.flatnonzero(~reached)
        if len(un) and self.ext_seg.count:
            loss = np.zeros(self.ext_seg.total)
            A = self.A[un]
            within = np.arange(int(A.sum())) - np.repeat(np.cumsum(A) - A, A)
            dst = np.repeat(self.ext_seg.ptr[slot[un]], A) + within
            src = np.repeat(self.seg.ptr[un], A) + within
            loss[dst] = -uhat[src]
            self.rm.observe(self.ext_state, loss, self.ext_seg)


# ---------------------------------------------------------------------- driver
#: Checkpoint growth factor of ICFR/CFR-S runs (see :class:`~solvers.driver.IterationDriver`).
ICFR_CHECKPOINT_GROWTH = 1.5


class Dynamics:
    """ICFR / CFR-S state for a game; :meth:`step` runs one iteration."""

    def __init__(
        self,
        game: Game,
        method: str = "icfr",
        seed: int = 0,
        *,
        rule: LocalRule | str | None = None,
        internal_rule: LocalRule | str | None = None,
    ):
        if method not in METHODS:
            raise GameError(f"unknown method '{method}'; valid: {', '.join(METHODS)}")
        rule = RegretMatching() if rule is None else as_rule(rule)
        internal_rule = BlumMansour(rule) if internal_rule is None else as_rule(internal_rule)
        self.game = game
        self.method = method
        self.rng = np.random.default_rng(seed)
        self.learners = [_Learner(game, i, method, rule, internal_rule) for i in range(game.num_players)]
        tm = terminal_map(game)
        self.term_seq = tm.sequences.astype(np.int64)  # [T, n]
        self.pcu = tm.weighted_payoffs()  # [T, n]
        self.store = PlanStore(game)
        self.iterations = 0

    def step(self) -> list[np.ndarray]:
        """One iteration: every player samples a plan, the reached learners observe their
        utilities, the joint reduced plan is counted; returns it (per player, the action chosen
        at each infoset, -1 where the plan does not reach it)."""
        n = self.game.num_players
        samples = [lr.sample(self.rng) for lr in self.learners]
        reach = np.stack([samples[p][1][self.term_seq[:, p]] for p in range(n)], axis=0)  # [n, T]
        reach_f = reach.astype(np.float64)
        for i, lr in enumerate(self.learners):
            if n == 1:
                opp = np.ones(reach.shape[1])
            elif n == 2:
                opp = reach_f[1 - i]
            else:
                opp = np.prod(reach_f[[j for j in range(n) if j != i]], axis=0)
            L = np.bincount(self.term_seq[:, i], weights=opp * self.pcu[:, i], minlength=lr.S)
            plan, _, reached, slot = samples[i]
            lr.update(lr.laminar_utilities(L, plan), reached, slot)
        reduced = [np.where(s[2], s[0], -1) for s in samples]
        self.store.add(reduced)
        self.iterations += 1
        return reduced

    def empirical_device(self) -> FactoredDevice:
        return self.store.device()


def solve_icfr(
    game: Game,
    iterations: int = DEFAULTS["iterations"],
    seed: int = DEFAULTS["seed"],
    method: str = "icfr",
    *,
    time_limit: float | None = DEFAULTS["time_limit"],
    target_gap: float | None = DEFAULTS["target_gap"],
    check_every: int | None = None,
    progress: ProgressCallback | None = None,
    rule: LocalRule | str | None = None,
    internal_rule: LocalRule | str | None = None,
) -> SolveResult:
    """Run ICFR (``method="icfr"``) or CFR-S (``"cfr-s"``) for ``iterations`` iterations (default
    10,000, with seed 0, no target and no time limit: the declared defaults, :data:`OPTIONS`).

    At the checkpoints of :class:`~solvers.driver.IterationDriver` (every ``check_every``
    iterations, default a geometric schedule) trace rows record the EFCE gap of the empirical
    frequency of play (``extra``: EFCCE and NFCCE gaps); ``target_gap`` stops once the EFCE gap
    (ICFR) or the EFCCE gap (CFR-S, whose target is the coarse equilibrium) is reached.
    ``point`` is the empirical frequency as a :class:`solvers.evaluation.device_gaps.FactoredDevice`.
    ``info["iteration_seconds"]`` is the time of the iterations without gap evaluations.

    Both methods sample an action at every infoset, so they take local rules (not chain
    minimizers): ``rule`` (default regret matching) is the external-regret minimizer — of every
    infoset for CFR-S, of the ``(σ_I, I)`` pairs for ICFR — and ``internal_rule`` (default
    :class:`~solvers.regret.internal.BlumMansour` over ``rule``) ICFR's internal-regret minimizer of
    the reached infosets; any :class:`~solvers.regret.local.LocalRule` or rule name works."""
    started = time.perf_counter()
    dyn = Dynamics(game, method, seed, rule=rule, internal_rule=internal_rule)
    ev = evaluator(game)
    setup = time.perf_counter() - started
    # The n-player gaps cost far more than an iteration: a sparser schedule (about 25 points).
    driver = IterationDriver(
        iterations=iterations,
        time_limit=time_limit,
        check_every=check_every,
        growth=ICFR_CHECKPOINT_GROWTH,
        progress=progress,
    )
    gaps = None
    for it in driver:
        dyn.step()
        if driver.checkpoint_due():
            with driver.paused():
                gaps = ev(dyn.empirical_device())
            target = gaps.efce if method == "icfr" else gaps.efcce
            row = TraceRow(it, driver.elapsed(), gaps.efce, extra={"efcce": gaps.efcce, "nfcce": gaps.nfcce})
            if driver.record(
                row, converged=target_gap is not None and target <= target_gap, aim=(target, target_gap)
            ):
                break
    assert gaps is not None  # the driver's last iteration is always a checkpoint
    info = {
        "efce_gap": gaps.efce,
        "efcce_gap": gaps.efcce,
        "nfcce_gap": gaps.nfcce,
        "utilities": gaps.utilities.tolist(),
        "welfare": gaps.welfare,
        "support": len(dyn.store.counts),
        "iteration_seconds": driver.iteration_seconds,
        "seed": seed,
    }
    return SolveResult(
        method=method,
        point=dyn.empirical_device(),
        status=driver.status,
        iterations=dyn.iterations,
        setup_seconds=setup,
        seconds=driver.elapsed(),
        trace=driver.trace,
        info=info,
    )


# ----------------------------------------------------------------------------- declaration
def _check_before_warm_up(game: Game, o: Mapping[str, Any], device: bool) -> None:
    if device:
        # The empirical frequency has at most one joint plan per iteration: refuse up front
        # what could not be written (the exact support is checked again when writing).
        from efce.solvers.evaluation.device import check_device_size
        from efce.solvers.methods.trigger import joint_plan_count

        check_device_size(
            game,
            min(o["iterations"], joint_plan_count(game)),
            f"joint plans (bound for {o['iterations']} iterations)",
        )


def _run(
    variant: str, game: Game, *, progress: ProgressCallback | None, device: bool = False, **o
) -> SolveResult:
    _check_before_warm_up(game, o, device)
    return solve_icfr(
        game,
        o["iterations"],
        seed=o["seed"],
        method=variant,
        time_limit=o["time_limit"],
        target_gap=o["target_gap"],
        progress=progress,
    )


def _runner(variant: str):
    # A partial of a module-level function, not a closure: a warm-up's helper processes
    # receive the runner pickled (efce.solvers.parallel_compile).
    return functools.partial(_run, variant)


def _method(variant: str, description: str) -> Method:
    run = _runner(variant)
    warm_up = segments_warm_up(run, check=_check_before_warm_up)
    return Method(
        variant,
        description,
        OPTIONS,
        run,
        players=None,
        writes_device=True,
        warm_up=warm_up,
        compiles_kernels=True,
        payoff_info=EQUILIBRIUM_REPORT,
    )


#: ``icfr`` and ``cfr-s`` for :func:`efce.solve` (collected by :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    _method("icfr", "ICFR (EFCE, n players, chance; Celli et al. 2020)"),
    _method("cfr-s", "CFR-S (EFCCE, n players, chance; Celli et al. 2020)"),
)
