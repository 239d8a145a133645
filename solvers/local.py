"""Local regret minimizers on simplexes, vectorized over many simplexes at once.

Sign convention (used everywhere in :mod:`solvers`): regret minimizers **observe losses**
(Farina, Ling, Fang, Sandholm 2019, section 2.3: RECOMMEND / OBSERVELOSS).  A player who
maximizes utility ``u`` feeds the loss ``-u``.

A :class:`LocalRule` runs one independent regret minimizer per segment of a flat array (a
:class:`Segments` partition): this is how the compiled engine updates every simplex of a level in
one vectorized call, and how the object-level algebra runs a single simplex (one segment).  State
is a dict of flat arrays updated in place, so both drivers share the arithmetic exactly.

Rules
-----
* :class:`RegretMatching` — Hart & Mas-Colell 2000; ``plus=True`` is RM+ (Tammelin et al. 2015);
  optional DCFR discounting (Brown & Sandholm 2019) of positive/negative regrets by
  ``t^α/(t^α+1)`` and ``t^β/(t^β+1)``.
* :class:`Hedge` — multiplicative weights, ``x ∝ exp(-η L)`` with cumulative loss ``L``.
* :class:`PredictiveRMPlus` — predictive RM+ (Farina, Kroer, Sandholm 2021) with the last
  instantaneous regret as prediction.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True, eq=False)
class Segments:
    """A partition of ``range(ptr[-1])`` into consecutive nonempty segments."""

    ptr: np.ndarray

    @classmethod
    def from_sizes(cls, sizes) -> "Segments":
        sizes = np.asarray(sizes, dtype=np.int64)
        ptr = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=ptr[1:])
        return cls(ptr)

    @property
    def count(self) -> int:
        return len(self.ptr) - 1

    @property
    def total(self) -> int:
        return int(self.ptr[-1])

    @cached_property
    def sizes(self) -> np.ndarray:
        return np.diff(self.ptr)

    @cached_property
    def owner(self) -> np.ndarray:
        """Segment of every element."""
        return np.repeat(np.arange(self.count, dtype=np.int64), self.sizes)

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per-segment sums."""
        if self.count == 0:
            return np.zeros(0)
        return np.add.reduceat(values, self.ptr[:-1])

    def spread(self, per_segment: np.ndarray) -> np.ndarray:
        """Broadcast one value per segment to its elements."""
        return per_segment[self.owner]

    def normalize_or_uniform(self, weights: np.ndarray) -> np.ndarray:
        """``weights / segment sum``, or uniform where a segment sums to 0."""
        total = self.sums(weights)
        positive = total > 0
        scale = np.where(positive, 1.0 / np.where(positive, total, 1.0), 0.0)
        uniform = np.where(positive, 0.0, 1.0 / self.sizes)
        return weights * self.spread(scale) + self.spread(uniform)


class LocalRule:
    """A regret minimizer per segment.  Subclasses implement the three methods."""

    name = "local"

    def init(self, seg: Segments) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def recommend(self, state: dict[str, np.ndarray], seg: Segments) -> np.ndarray:
        """The current point: nonnegative, summing to one on every segment."""
        raise NotImplementedError

    def observe(self, state: dict[str, np.ndarray], loss: np.ndarray, seg: Segments) -> None:
        """Observe the loss vector of the last recommendation (state updated in place)."""
        raise NotImplementedError


def _instantaneous_regret(x: np.ndarray, loss: np.ndarray, seg: Segments) -> np.ndarray:
    """``r_a = <loss, x> - loss_a`` per segment: how much better action ``a`` would have been."""
    return seg.spread(seg.sums(x * loss)) - loss


@dataclass
class RegretMatching(LocalRule):
    """Regret matching; ``plus=True`` gives RM+.  ``alpha``/``beta`` enable DCFR discounting."""

    plus: bool = False
    alpha: float | None = None
    beta: float | None = None

    @property
    def name(self) -> str:
        base = "rm+" if self.plus else "rm"
        return base if self.alpha is None and self.beta is None else f"{base}(α={self.alpha},β={self.beta})"

    def init(self, seg):
        return {"regret": np.zeros(seg.total), "t": np.zeros(1)}

    def recommend(self, state, seg):
        return seg.normalize_or_uniform(np.maximum(state["regret"], 0.0))

    def observe(self, state, loss, seg):
        x = self.recommend(state, seg)
        r = state["regret"]
        r += _instantaneous_regret(x, loss, seg)
        state["t"] += 1
        t = float(state["t"][0])
        if self.alpha is not None or self.beta is not None:
            pos = t ** self.alpha / (t ** self.alpha + 1) if self.alpha is not None else 1.0
            neg = t ** self.beta / (t ** self.beta + 1) if self.beta is not None else 1.0
            r *= np.where(r > 0, pos, neg)
        if self.plus:
            np.maximum(r, 0.0, out=r)


@dataclass
class Hedge(LocalRule):
    """Multiplicative weights with learning rate ``eta``: ``x ∝ exp(-η · cumulative loss)``."""

    eta: float = 1.0
    name = "hedge"

    def init(self, seg):
        return {"cumulative_loss": np.zeros(seg.total)}

    def recommend(self, state, seg):
        z = -self.eta * state["cumulative_loss"]
        if seg.count:
            z = z - seg.spread(np.maximum.reduceat(z, seg.ptr[:-1]))
        return seg.normalize_or_uniform(np.exp(z))

    def observe(self, state, loss, seg):
        state["cumulative_loss"] += loss


@dataclass
class PredictiveRMPlus(LocalRule):
    """Predictive RM+: ``x ∝ [R + m]^+`` with ``m`` the last instantaneous regret."""

    name = "prm+"

    def init(self, seg):
        return {"regret": np.zeros(seg.total), "prediction": np.zeros(seg.total)}

    def recommend(self, state, seg):
        return seg.normalize_or_uniform(np.maximum(state["regret"] + state["prediction"], 0.0))

    def observe(self, state, loss, seg):
        x = self.recommend(state, seg)
        inst = _instantaneous_regret(x, loss, seg)
        r = state["regret"]
        r += inst
        np.maximum(r, 0.0, out=r)
        state["prediction"][:] = inst


RULES = {"rm": lambda: RegretMatching(), "rm+": lambda: RegretMatching(plus=True),
         "hedge": lambda: Hedge(), "prm+": lambda: PredictiveRMPlus(),
         "dcfr": lambda: RegretMatching(alpha=1.5, beta=0.0)}


def make_rule(name: str) -> LocalRule:
    """A fresh local rule by name: ``rm``, ``rm+``, ``hedge``, ``prm+`` or ``dcfr``."""
    if name not in RULES:
        raise ValueError(f"unknown local regret minimizer '{name}'; valid: {', '.join(RULES)}")
    return RULES[name]()
