"""The compiled chain engine: a regret minimizer for a whole chain of scaled extensions.

Unrolling Algorithm 1 of Farina, Ling, Fang, Sandholm 2019 (section 3.2) over a chain
``{1} ◁h1 X1 ◁h2 … ◁hn Xn`` gives two passes over flat arrays:

* RECOMMEND (top-down, steps in level order): ``x[targets_k] = h_k(x) · y_k`` with ``y_k`` the
  local simplex strategy (``y_k = 1`` for singleton steps);
* OBSERVELOSS (bottom-up, reverse order): with ``ℓ̃`` initialised to the observed loss, each step
  ``k`` lets its local minimizer observe ``ℓ̃[targets_k]`` and then adds ``⟨ℓ̃[targets_k], y_k⟩``
  to ``ℓ̃`` of every source of ``h_k`` (Algorithm 1's ``ℓ̃_x = ℓ_x + ⟨ℓ_y, y⟩ a``).

Both passes are sequential compiled loops with the local rules of :mod:`solvers.local` fused in
(the same arithmetic, written for numba); :mod:`solvers.algebra` is the readable object-level
reference and the tests check that both produce the same iterates.  Cost per iteration is linear
in the number of entries plus sources.
"""

from __future__ import annotations

import numba
import numpy as np

from polytopes.chain import SINGLETON, Chain

from .local import Hedge, LocalRule, PredictiveRMPlus, RegretMatching

_RM, _HEDGE, _PRMP = 0, 1, 2


class ChainEngine:
    """Regret minimizer over ``chain`` with one local rule per simplex step.

    Points and losses are in the chain's entry order.  ``recommend()`` returns a new array (or
    fills ``out``); ``observe(loss)`` does not modify ``loss`` unless ``overwrite=True``, which
    uses it as work space instead of copying it (no allocation per iteration).
    """

    def __init__(self, chain: Chain, rule: LocalRule):
        self.chain = chain
        self.rule = rule
        self._order = np.concatenate(chain.levels) if chain.num_steps else np.zeros(0, np.int64)
        self._kind = chain.kind.astype(np.int8)
        self._params = _rule_params(rule)
        n = chain.num_entries
        self._a = np.zeros(n)
        self._b = np.zeros(n if self._params[0] == _PRMP else 1)
        self._t = 0
        self._buffer = np.zeros(max(int(chain.step_size.max(initial=1)), 1))

    @property
    def iterations(self) -> int:
        return self._t

    def recommend(self, out: np.ndarray | None = None) -> np.ndarray:
        x = np.empty(self.chain.num_entries) if out is None else out
        rule_id, plus, alpha, beta, eta = self._params
        _recommend(self._kind, self.chain.target_ptr, self.chain.source_ptr, self.chain.source,
                   self._order, rule_id, self._a, self._b, eta, x)
        return x

    def observe(self, loss: np.ndarray, overwrite: bool = False) -> None:
        usable = overwrite and loss.dtype == np.float64 and loss.flags.c_contiguous and loss.flags.writeable
        work = loss if usable else np.array(loss, dtype=np.float64, copy=True)
        self._t += 1
        rule_id, plus, alpha, beta, eta = self._params
        pos, neg = _discounts(alpha, beta, self._t)
        _observe(self._kind, self.chain.target_ptr, self.chain.source_ptr, self.chain.source,
                 self._order, rule_id, plus, pos, neg, self._a, self._b, eta, work, self._buffer)

    def local_strategies(self) -> np.ndarray:
        """The unscaled local strategies ``y_k`` of every step, in entry order (1 for singletons)."""
        y = np.ones(self.chain.num_entries)
        rule_id, plus, alpha, beta, eta = self._params
        _local_all(self._kind, self.chain.target_ptr, rule_id, self._a, self._b, eta, y)
        return y


def _rule_params(rule: LocalRule):
    if isinstance(rule, RegretMatching):
        alpha = np.nan if rule.alpha is None else float(rule.alpha)
        beta = np.nan if rule.beta is None else float(rule.beta)
        return (_RM, bool(rule.plus), alpha, beta, 0.0)
    if isinstance(rule, Hedge):
        return (_HEDGE, False, np.nan, np.nan, float(rule.eta))
    if isinstance(rule, PredictiveRMPlus):
        return (_PRMP, True, np.nan, np.nan, 0.0)
    raise TypeError(f"the compiled engine has no kernel for local rule {rule!r}; use solvers.algebra")


def _discounts(alpha: float, beta: float, t: int) -> tuple[float, float]:
    """DCFR factors for positive and negative regrets after iteration ``t`` (1 = none)."""
    pos = 1.0 if np.isnan(alpha) else t ** alpha / (t ** alpha + 1)
    neg = 1.0 if np.isnan(beta) else t ** beta / (t ** beta + 1)
    return pos, neg


@numba.njit(inline="always")
def _strategy(rule_id, a, b, lo, hi, eta, out, out_lo):
    """Local strategy of the simplex on entries ``[lo, hi)`` into ``out[out_lo:]``
    (mirrors ``LocalRule.recommend`` of solvers/local.py)."""
    n = hi - lo
    total = 0.0
    if rule_id == _HEDGE:
        m = -np.inf
        for e in range(lo, hi):
            z = -eta * a[e]
            if z > m:
                m = z
        for e in range(lo, hi):
            w = np.exp(-eta * a[e] - m)
            out[out_lo + e - lo] = w
            total += w
    else:
        for e in range(lo, hi):
            w = a[e] + b[e] if rule_id == _PRMP else a[e]
            w = w if w > 0.0 else 0.0
            out[out_lo + e - lo] = w
            total += w
    if total > 0.0:
        scale = 1.0 / total
        for i in range(n):
            out[out_lo + i] = out[out_lo + i] * scale
    else:
        for i in range(n):
            out[out_lo + i] = 1.0 / n


@numba.njit(cache=True)
def _recommend(kind, tptr, sptr, source, order, rule_id, a, b, eta, x):
    x[0] = 1.0
    for k in order:
        h = 0.0
        for j in range(sptr[k], sptr[k + 1]):
            h += x[source[j]]
        lo, hi = tptr[k], tptr[k + 1]
        if kind[k] == SINGLETON:
            x[lo] = h
        else:
            _strategy(rule_id, a, b, lo, hi, eta, x, lo)
            for e in range(lo, hi):
                x[e] = h * x[e]


@numba.njit(cache=True)
def _local_all(kind, tptr, rule_id, a, b, eta, y):
    for k in range(len(kind)):
        if kind[k] != SINGLETON:
            _strategy(rule_id, a, b, tptr[k], tptr[k + 1], eta, y, tptr[k])


@numba.njit(cache=True)
def _observe(kind, tptr, sptr, source, order, rule_id, plus, pos, neg, a, b, eta, loss, buf):
    for idx in range(len(order) - 1, -1, -1):
        k = order[idx]
        lo, hi = tptr[k], tptr[k + 1]
        if kind[k] == SINGLETON:
            v = loss[lo]
        else:
            _strategy(rule_id, a, b, lo, hi, eta, buf, 0)
            v = 0.0
            for e in range(lo, hi):
                v += loss[e] * buf[e - lo]
            if rule_id == _HEDGE:
                for e in range(lo, hi):
                    a[e] += loss[e]
            elif rule_id == _PRMP:
                for e in range(lo, hi):
                    inst = v - loss[e]
                    r = a[e] + inst
                    a[e] = r if r > 0.0 else 0.0
                    b[e] = inst
            else:
                for e in range(lo, hi):
                    r = a[e] + (v - loss[e])
                    r = r * (pos if r > 0 else neg)
                    if plus and r < 0.0:
                        r = 0.0
                    a[e] = r
        for j in range(sptr[k], sptr[k + 1]):
            loss[source[j]] += v


def chain_minimum(chain: Chain, loss: np.ndarray) -> float:
    """``min_{x ∈ chain} ⟨loss, x⟩`` (entry order), by the split of section 3.2 applied
    bottom-up: a simplex step contributes its smallest accumulated loss to its sources."""
    work = np.array(loss, dtype=np.float64, copy=True)
    order = np.concatenate(chain.levels) if chain.num_steps else np.zeros(0, np.int64)
    return float(_chain_minimum(chain.kind.astype(np.int8), chain.target_ptr, chain.source_ptr,
                                chain.source, order, work))


@numba.njit(cache=True)
def _chain_minimum(kind, tptr, sptr, source, order, loss):
    for idx in range(len(order) - 1, -1, -1):
        k = order[idx]
        lo, hi = tptr[k], tptr[k + 1]
        v = loss[lo]
        if kind[k] != SINGLETON:
            for e in range(lo + 1, hi):
                if loss[e] < v:
                    v = loss[e]
        for j in range(sptr[k], sptr[k + 1]):
            loss[source[j]] += v
    return loss[0]
