"""Local regret minimizers on simplexes, vectorized over many simplexes at once.

Sign convention (used everywhere in :mod:`solvers`): regret minimizers **observe losses**
(Farina, Ling, Fang, Sandholm 2019, section 2.3: RECOMMEND / OBSERVELOSS).  A player who
maximizes utility ``u`` feeds the loss ``-u``.

A :class:`LocalRule` runs one independent regret minimizer per segment of a flat array (a
:class:`Segments` partition): this is how a chain minimizer updates every simplex of a chain in
one call, and how the object-level algebra runs a single simplex (one segment).  Its state is a
dict of flat arrays that :meth:`LocalRule.observe` updates in place; the regret minimizers of
:mod:`solvers.regret.algebra` own that state and copy it unless the caller donates it, so a rule never
has to.

A rule may bring a compiled form (:meth:`LocalRule.kernel`, a :class:`Kernel`): the chain
minimizer then runs it fused into a compute backend's passes (:mod:`efce.solvers.backends`); a
rule without one runs on the vectorized numpy path.  The built-in rules' arithmetic is written
once, in :mod:`efce.solvers.backends.cpu.rules`, and their ``recommend``/``observe`` run it on
the CPU backend.

Rules
-----
* :class:`RegretMatching` — Hart & Mas-Colell 2000; ``plus=True`` is RM+ (Tammelin et al. 2015);
  optional DCFR discounting (Brown & Sandholm 2019) of positive/negative regrets by
  ``t^α/(t^α+1)`` and ``t^β/(t^β+1)``.
* :class:`Hedge` — multiplicative weights, ``x ∝ exp(-η L)`` with cumulative loss ``L``.
* :class:`PredictiveRMPlus` — predictive RM+ (Farina, Kroer, Sandholm 2021) with the last
  instantaneous regret as prediction.
* :class:`solvers.regret.internal.BlumMansour` — internal regret (numpy path).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from efce.solvers.backends import HEDGE, PRM_PLUS, RM, get_backend
from efce.solvers.backends.sizing import state_variant_size


@dataclass(frozen=True, eq=False)
class Segments:
    """A partition of ``range(ptr[-1])`` into consecutive nonempty segments."""

    ptr: np.ndarray

    @classmethod
    def from_sizes(cls, sizes: npt.ArrayLike) -> Segments:
        """The partition into consecutive segments of ``sizes`` entries."""
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


#: A compiled rule keeps its per-entry state (regrets, predictions, cumulative losses) in float32
#: when it runs on at least this many entries, in float64 below (see :func:`state_dtype`).
FLOAT32_STATE_MIN_ENTRIES = 1 << 20


def state_dtype(entries: int) -> type:
    """The dtype of a compiled rule's per-entry state over ``entries`` entries: float32 from
    :data:`FLOAT32_STATE_MIN_ENTRIES` (about a million) entries on, float64 below.

    The kernels read the state, compute in float64 and round only what they store, so the
    strategies — and the points built top-down from them — are float64 whatever the state's
    dtype, and the chain's points stay feasible to float64 rounding.  Only the regrets carry
    float32's ~7 significant digits: on the large chains (the Battleship correlation plans,
    10⁶–10⁸ entries) that halves the biggest arrays of a run; small games keep float64 and
    therefore every iterate they had.  (A method's warm-up may choose for a stand-in size:
    :func:`efce.solvers.backends.sizing.sized_as`.)"""
    return np.float32 if state_variant_size(entries) >= FLOAT32_STATE_MIN_ENTRIES else np.float64


def prediction_dtype(entries: int) -> type:
    """The dtype of PRM+'s per-entry prediction over ``entries`` entries: ``uint16`` holding
    bfloat16 bits (8 significant bits, float32's range; read and written by the kernels'
    :func:`~efce.solvers.backends.cpu.rules.widened` /
    :func:`~efce.solvers.backends.cpu.rules.narrowed`) where
    :func:`state_dtype` is float32, float64 below.

    PRM+'s regret bound (Farina, Kroer, Sandholm 2021) holds for *any* sequence of
    predictions — it degrades only with ``Σ_t ‖r_t − m_t‖²`` — so rounding the last
    instantaneous regret by ~0.2 % changes the bound by a negligible term, while the regrets
    themselves (whose rounding would accumulate) stay float32."""
    return np.uint16 if state_dtype(entries) == np.float32 else np.float64


class Kernel(NamedTuple):
    """The compiled form of a local rule: a family of :mod:`efce.solvers.backends` (``RM``,
    ``HEDGE``, ``PRM_PLUS``), its parameters, and the state keys of the kernel's two per-entry
    arrays (the same key twice when the family reads
    one array).  Every kernel state also has the counter ``"t"`` (``float64[1]``); the per-entry
    arrays are float32 or float64 (:func:`state_dtype`), predictions :func:`prediction_dtype`."""

    family: int
    plus: bool = False
    alpha: float = np.nan
    beta: float = np.nan
    eta: float = 0.0
    keys: tuple[str, str] = ("regret", "regret")

    def arrays(self, state: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arrays ``(a, b, t)`` of ``state`` that the kernel reads and writes."""
        return state[self.keys[0]], state[self.keys[1]], state["t"]


class LocalRule:
    """A regret minimizer per segment of a :class:`Segments` partition (losses, not utilities).

    Subclasses implement

    * ``init(seg) -> state`` — a dict of flat numpy arrays;
    * ``recommend(state, seg) -> point`` — nonnegative, summing to one on every segment; it must
      not modify ``state``;
    * ``observe(state, loss, seg)`` — the loss of the last recommendation; updates ``state`` in
      place and only reads ``loss``;

    and may override :meth:`kernel`."""

    @property
    def name(self) -> str:
        """The rule's name in results and traces (``"hedge"``, ``"rm+"``, ...).  Read-only here so
        that a subclass may give it as a class attribute or as a property of its parameters."""
        return "local"

    def init(self, seg: Segments) -> dict[str, np.ndarray]:
        """The state of a fresh minimizer on every segment of ``seg``: flat numpy arrays by name."""
        raise NotImplementedError

    def recommend(self, state: dict[str, np.ndarray], seg: Segments) -> np.ndarray:
        """The current point: nonnegative, summing to one on every segment; ``state`` unchanged."""
        raise NotImplementedError

    def observe(self, state: dict[str, np.ndarray], loss: np.ndarray, seg: Segments) -> None:
        """Take the loss of the last recommendation: updates ``state`` in place, only reads ``loss``."""
        raise NotImplementedError

    def kernel(self) -> Kernel | None:
        """The compiled form of this rule, or ``None`` (then chain minimizers run the rule's own
        ``recommend``/``observe`` on their numpy path).  A rule that returns a kernel promises
        that the kernel computes exactly its ``init``/``recommend``/``observe``."""
        return None


_CPU = None


def _cpu():
    """The CPU backend the rules run their segments on (serial kernels: no thread count)."""
    global _CPU
    if _CPU is None:
        _CPU = get_backend("cpu")
    return _CPU


class _CompiledRule(LocalRule):
    """A rule whose arithmetic is its kernel (one definition, in :mod:`efce.solvers.backends.cpu.rules`,
    run on the CPU backend)."""

    def _spec(self) -> Kernel:
        raise NotImplementedError

    def kernel(self) -> Kernel | None:
        # A subclass that redefines the arithmetic without declaring a kernel of its own must not
        # silently run as the parent's kernel: it gets the numpy path.
        cls = type(self)
        if any(getattr(cls, m) is not getattr(_CompiledRule, m) for m in ("init", "recommend", "observe")):
            return None
        return self._spec()

    #: State keys kept as :func:`prediction_dtype` rather than :func:`state_dtype`.
    prediction_keys: tuple[str, ...] = ()

    def init(self, seg):
        spec = self._spec()
        n = seg.total
        # zeros: +0.0 in every dtype, bfloat16 bits included
        state = {
            key: np.zeros(n, dtype=prediction_dtype(n) if key in self.prediction_keys else state_dtype(n))
            for key in dict.fromkeys(spec.keys)
        }
        state["t"] = np.zeros(1)
        return state

    def recommend(self, state, seg):
        spec = self._spec()
        a, b, _ = spec.arrays(state)
        out = np.empty(seg.total)
        _cpu().recommend_segments(spec.family, spec.eta, a, b, seg.ptr, out)
        return out

    def observe(self, state, loss, seg):
        spec = self._spec()
        loss = np.ascontiguousarray(loss, dtype=np.float64)
        if loss.shape != (seg.total,):
            raise ValueError(f"loss has shape {loss.shape}, expected ({seg.total},)")
        a, b, t = spec.arrays(state)
        _cpu().observe_segments(
            spec.family, spec.plus, spec.alpha, spec.beta, spec.eta, a, b, t, seg.ptr, loss
        )


@dataclass(frozen=True)
class RegretMatching(_CompiledRule):
    """Regret matching; ``plus=True`` gives RM+.  ``alpha``/``beta`` enable DCFR discounting.

    State: ``regret`` (cumulative, discounted) and ``t``."""

    plus: bool = False
    alpha: float | None = None
    beta: float | None = None

    @property
    def name(self) -> str:
        base = "rm+" if self.plus else "rm"
        return base if self.alpha is None and self.beta is None else f"{base}(α={self.alpha},β={self.beta})"

    def _spec(self):
        return Kernel(
            RM,
            plus=bool(self.plus),
            alpha=np.nan if self.alpha is None else float(self.alpha),
            beta=np.nan if self.beta is None else float(self.beta),
        )


@dataclass(frozen=True)
class Hedge(_CompiledRule):
    """Multiplicative weights with learning rate ``eta``: ``x ∝ exp(-η · cumulative loss)``.

    State: ``cumulative_loss`` and ``t``."""

    eta: float = 1.0
    name = "hedge"

    def _spec(self):
        return Kernel(HEDGE, eta=float(self.eta), keys=("cumulative_loss", "cumulative_loss"))


@dataclass(frozen=True)
class PredictiveRMPlus(_CompiledRule):
    """Predictive RM+: ``x ∝ [R + m]^+`` with ``m`` the last instantaneous regret.

    State: ``regret``, ``prediction`` (bfloat16 bits on big chains: :func:`prediction_dtype`)
    and ``t``."""

    name = "prm+"
    prediction_keys = ("prediction",)

    def _spec(self):
        return Kernel(PRM_PLUS, keys=("regret", "prediction"))


# Rules by name: the one registry is :mod:`efce.solvers.regret.registry` (re-exported here).
from .registry import RULE_NAMES, RULES, as_rule, make_rule  # noqa: E402,F401
