"""Local rules for the tests: independent per-simplex references of the built-in rules, and
user-defined rules the compiled engine does not know."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from efce.solvers.regret.internal import BlumMansour
from efce.solvers.regret.local import Hedge, LocalRule, PredictiveRMPlus, RegretMatching, Segments


@dataclass
class DecayedRegretMatching(LocalRule):
    """A rule unknown to the engine: regret matching on regrets decayed by ``gamma`` per round,
    mixed with ``floor`` of the uniform strategy (numpy over all segments at once)."""

    gamma: float = 0.9
    floor: float = 0.05
    name = "decayed-rm"

    def init(self, seg: Segments):
        return {"regret": np.zeros(seg.total)}

    def recommend(self, state, seg):
        rm = seg.normalize_or_uniform(np.maximum(state["regret"], 0.0))
        return (1.0 - self.floor) * rm + self.floor / seg.spread(seg.sizes)

    def observe(self, state, loss, seg):
        x = self.recommend(state, seg)
        r = state["regret"]
        r *= self.gamma
        r += seg.spread(seg.sums(x * loss)) - loss


class ClippedLossRM(RegretMatching):
    """A subclass of regret matching that redefines ``observe`` (it sees the loss clipped to
    ``[-0.5, 0.5]``) without declaring a kernel: it must not run as plain RM."""

    def observe(self, state, loss, seg):
        super().observe(state, np.clip(loss, -0.5, 0.5), seg)


def every_rule() -> dict[str, LocalRule]:
    """Every local rule of the package, and two user-defined ones."""
    return {
        "rm": RegretMatching(),
        "rm+": RegretMatching(plus=True),
        "dcfr": RegretMatching(alpha=1.5, beta=0.0),
        "hedge": Hedge(eta=0.7),
        "prm+": PredictiveRMPlus(),
        "blum-mansour": BlumMansour(),
        "blum-mansour(rm+)": BlumMansour(RegretMatching(plus=True)),
        "user": DecayedRegretMatching(),
        "user-subclass": ClippedLossRM(),
    }


def reference_step(rule: LocalRule, state: dict, loss: np.ndarray | None, seg: Segments) -> np.ndarray:
    """Textbook formulas of the built-in rules, one simplex at a time (plain numpy, independent
    of :mod:`efce.solvers.backends.cpu.rules`): the strategy of ``state``; with a ``loss``, ``state`` is then
    updated in place."""
    x = np.empty(seg.total)
    pos = neg = 1.0
    if loss is not None:
        state["t"] += 1  # every built-in rule counts its rounds
        t = state["t"][0]
    if loss is not None and isinstance(rule, RegretMatching):
        if rule.alpha is not None:
            pos = t**rule.alpha / (t**rule.alpha + 1)
        if rule.beta is not None:
            neg = t**rule.beta / (t**rule.beta + 1)
    for lo, hi in zip(seg.ptr[:-1], seg.ptr[1:], strict=True):
        if isinstance(rule, Hedge):
            z = -rule.eta * state["cumulative_loss"][lo:hi]
            w = np.exp(z - z.max())
        elif isinstance(rule, PredictiveRMPlus):
            w = np.maximum(state["regret"][lo:hi] + state["prediction"][lo:hi], 0.0)
        else:
            w = np.maximum(state["regret"][lo:hi], 0.0)
        y = w / w.sum() if w.sum() > 0 else np.full(hi - lo, 1.0 / (hi - lo))
        x[lo:hi] = y
        if loss is None:
            continue
        ell = loss[lo:hi]
        regret = ell @ y - ell
        if isinstance(rule, Hedge):
            state["cumulative_loss"][lo:hi] += ell
        elif isinstance(rule, PredictiveRMPlus):
            state["regret"][lo:hi] = np.maximum(state["regret"][lo:hi] + regret, 0.0)
            state["prediction"][lo:hi] = regret
        else:
            r = state["regret"][lo:hi] + regret
            r = r * np.where(r > 0, pos, neg)
            state["regret"][lo:hi] = np.maximum(r, 0.0) if rule.plus else r
    return x
