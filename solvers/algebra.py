"""The object-level algebra of regret minimizers (functional, optax-like).

A *regret minimizer* over a compact convex set ``Z ⊂ R^n`` is an immutable object with

* ``dim`` — ``n``;
* ``init() -> state`` — a pytree (dicts / tuples) of numpy arrays;
* ``recommend(state) -> np.ndarray`` — the current point of ``Z``;
* ``observe(state, loss) -> state`` — the state after observing the loss of the last
  recommendation.  The input state is never mutated (arrays are copied before the in-place
  :class:`~solvers.local.LocalRule` update);
* ``minimize(loss) -> (value, point)`` — the exact linear minimization oracle
  ``min_{z ∈ Z} <loss, z>`` and a minimizer (used to compute regrets exactly).

Sign convention: minimizers observe **losses** (see :mod:`solvers.local`).

Constructors
------------
* :func:`simplex` — ``Δ_k`` run by a :class:`~solvers.local.LocalRule` on one segment;
* :func:`singleton` — ``{1} ⊂ R^1``;
* :func:`scaled_extension` — ``X ◁h Y`` with ``h(x) = <a, x> + b`` (Farina, Ling, Fang, Sandholm
  2019, Definition 4), minimized by Algorithm 1; Proposition 1 bounds its regret;
* :func:`cartesian_product`, :func:`convex_hull` — regret circuits (Farina, Kroer, Sandholm,
  ICML 2019);
* :func:`chain_minimizer` — Algorithm 1 composed left-associatively along a
  :class:`polytopes.Chain`, run as a flat loop over the steps (or level-vectorized) with one flat
  :class:`~solvers.local.LocalRule` state over all simplex steps;
  :func:`nested_chain_minimizer` builds the literal nesting of :func:`scaled_extension` objects
  (reference implementation, short chains only);
* :func:`sequence_form_minimizer` — the chain minimizer of a sequence-form polytope; with
  :class:`~solvers.local.RegretMatching` this is CFR (section 3.2).

Helpers :func:`regret` and :func:`run` compute exact cumulative regrets of a loss sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from games.arrays import concat_ranges
from polytopes.chain import SIMPLEX, Chain
from polytopes.sequence_form import sequence_form

from .local import LocalRule, Segments, make_rule

#: Tolerance for checking ``h >= 0`` on ``X`` when building a scaled extension.
H_TOLERANCE = 1e-9
#: Longest chain :func:`nested_chain_minimizer` accepts (Python recursion depth).
MAX_NESTED_STEPS = 200

State = Any


def _rule(rule: LocalRule | str) -> LocalRule:
    return make_rule(rule) if isinstance(rule, str) else rule


def _copy_state(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: np.array(value, copy=True) for key, value in state.items()}


def _as_loss(loss, dim: int) -> np.ndarray:
    loss = np.asarray(loss, dtype=np.float64)
    if loss.shape != (dim,):
        raise ValueError(f"loss has shape {loss.shape}, expected ({dim},)")
    return loss


# ---------------------------------------------------------------------------- simplex, singleton
@dataclass(frozen=True, eq=False)
class Simplex:
    """``Δ_k`` with a local rule on a single segment.  State: the rule's dict of arrays."""

    k: int
    rule: LocalRule
    segments: Segments = field(repr=False)

    @property
    def dim(self) -> int:
        return self.k

    def init(self) -> State:
        return self.rule.init(self.segments)

    def recommend(self, state: State) -> np.ndarray:
        return self.rule.recommend(state, self.segments)

    def observe(self, state: State, loss) -> State:
        new = _copy_state(state)
        self.rule.observe(new, _as_loss(loss, self.k), self.segments)
        return new

    def minimize(self, loss) -> tuple[float, np.ndarray]:
        loss = _as_loss(loss, self.k)
        i = int(np.argmin(loss))
        point = np.zeros(self.k)
        point[i] = 1.0
        return float(loss[i]), point


def simplex(k: int, rule: LocalRule | str) -> Simplex:
    """A regret minimizer over the probability simplex ``Δ_k`` run by ``rule``."""
    if k < 1:
        raise ValueError(f"a simplex needs at least one vertex, got k={k}")
    return Simplex(int(k), _rule(rule), Segments.from_sizes([k]))


@dataclass(frozen=True, eq=False)
class Singleton:
    """``{1} ⊂ R^1``: nothing to learn; the state is the empty tuple."""

    @property
    def dim(self) -> int:
        return 1

    def init(self) -> State:
        return ()

    def recommend(self, state: State) -> np.ndarray:
        return np.ones(1)

    def observe(self, state: State, loss) -> State:
        _as_loss(loss, 1)
        return ()

    def minimize(self, loss) -> tuple[float, np.ndarray]:
        loss = _as_loss(loss, 1)
        return float(loss[0]), np.ones(1)


def singleton() -> Singleton:
    """A (trivial) regret minimizer over ``{1}``."""
    return Singleton()


# ---------------------------------------------------------------------------- scaled extension
@dataclass(frozen=True, eq=False)
class ScaledExtension:
    """``Z = X ◁h Y = {(x, h(x)·y) : x ∈ X, y ∈ Y}`` with ``h(x) = <a, x> + b`` (Algorithm 1).

    State: ``(state_x, state_y)``."""

    rm_x: Any
    rm_y: Any
    a: np.ndarray
    b: float = 0.0

    @property
    def dim(self) -> int:
        return self.rm_x.dim + self.rm_y.dim

    def h(self, x: np.ndarray) -> float:
        return float(self.a @ x) + self.b

    def init(self) -> State:
        return (self.rm_x.init(), self.rm_y.init())

    def recommend(self, state: State) -> np.ndarray:
        sx, sy = state
        x = self.rm_x.recommend(sx)
        y = self.rm_y.recommend(sy)
        return np.concatenate([x, self.h(x) * y])

    def observe(self, state: State, loss) -> State:
        loss = _as_loss(loss, self.dim)
        sx, sy = state
        lx, ly = loss[:self.rm_x.dim], loss[self.rm_x.dim:]
        y = self.rm_y.recommend(sy)
        lx_tilde = lx + float(ly @ y) * self.a
        return (self.rm_x.observe(sx, lx_tilde), self.rm_y.observe(sy, ly))

    def minimize(self, loss) -> tuple[float, np.ndarray]:
        """``min_x <ℓx + a·m_y, x> + b·m_y`` with ``m_y = min_y <ℓy, y>`` (section 3.2)."""
        loss = _as_loss(loss, self.dim)
        lx, ly = loss[:self.rm_x.dim], loss[self.rm_x.dim:]
        m_y, y = self.rm_y.minimize(ly)
        m_x, x = self.rm_x.minimize(lx + m_y * self.a)
        return m_x + self.b * m_y, np.concatenate([x, self.h(x) * y])


def scaled_extension(rm_x, rm_y, a, b: float = 0.0, *, check: bool = True) -> ScaledExtension:
    """Algorithm 1: a regret minimizer for ``X ◁h Y``, ``h(x) = <a, x> + b``.

    Proposition 1: ``R_Z^T ≤ R_X^T + max_{x∈X} h(x)·R_Y^T`` (≤ ``R_X^T + h*·[R_Y^T]^+`` with
    ``h* = max_X h``).  With ``check`` (default) ``h ≥ 0`` on ``X`` is verified with the linear
    minimization oracle of ``rm_x``."""
    a = np.array(a, dtype=np.float64).reshape(-1)
    if a.shape != (rm_x.dim,):
        raise ValueError(f"h has {a.shape[0]} coefficients but X lives in R^{rm_x.dim}")
    a.setflags(write=False)
    b = float(b)
    if check:
        h_min = rm_x.minimize(a)[0] + b
        if h_min < -H_TOLERANCE:
            raise ValueError(f"h(x) = <a, x> + b is negative on X (min {h_min:.3g}); Definition 4 "
                             f"needs h ≥ 0")
    return ScaledExtension(rm_x, rm_y, a, b)


# ---------------------------------------------------------------------------- regret circuits
@dataclass(frozen=True, eq=False)
class CartesianProduct:
    """``Z_1 × … × Z_m``; state: tuple of the children's states."""

    rms: tuple

    @property
    def dim(self) -> int:
        return sum(rm.dim for rm in self.rms)

    def _split(self, loss: np.ndarray) -> list[np.ndarray]:
        return np.split(loss, np.cumsum([rm.dim for rm in self.rms])[:-1])

    def init(self) -> State:
        return tuple(rm.init() for rm in self.rms)

    def recommend(self, state: State) -> np.ndarray:
        return np.concatenate([rm.recommend(s) for rm, s in zip(self.rms, state)])

    def observe(self, state: State, loss) -> State:
        parts = self._split(_as_loss(loss, self.dim))
        return tuple(rm.observe(s, l) for rm, s, l in zip(self.rms, state, parts))

    def minimize(self, loss) -> tuple[float, np.ndarray]:
        results = [rm.minimize(l) for rm, l in zip(self.rms, self._split(_as_loss(loss, self.dim)))]
        return float(sum(v for v, _ in results)), np.concatenate([p for _, p in results])


def cartesian_product(*rms) -> CartesianProduct:
    """Regret minimizer over ``Z_1 × … × Z_m``: ``R^T = Σ_i R_i^T``."""
    if not rms:
        raise ValueError("a Cartesian product needs at least one factor")
    return CartesianProduct(tuple(rms))


@dataclass(frozen=True, eq=False)
class ConvexHull:
    """``co(Z_1 ∪ … ∪ Z_m)`` (all ``Z_i ⊂ R^n``); state ``(state_λ, (state_1, …, state_m))``."""

    rms: tuple
    mixer: Simplex

    @property
    def dim(self) -> int:
        return self.rms[0].dim

    def init(self) -> State:
        return (self.mixer.init(), tuple(rm.init() for rm in self.rms))

    def _points(self, children: tuple) -> np.ndarray:
        return np.stack([rm.recommend(s) for rm, s in zip(self.rms, children)])

    def recommend(self, state: State) -> np.ndarray:
        s_lambda, children = state
        return self.mixer.recommend(s_lambda) @ self._points(children)

    def observe(self, state: State, loss) -> State:
        loss = _as_loss(loss, self.dim)
        s_lambda, children = state
        loss_lambda = self._points(children) @ loss
        return (self.mixer.observe(s_lambda, loss_lambda),
                tuple(rm.observe(s, loss) for rm, s in zip(self.rms, children)))

    def minimize(self, loss) -> tuple[float, np.ndarray]:
        results = [rm.minimize(loss) for rm in self.rms]
        i = int(np.argmin([v for v, _ in results]))
        return results[i]


def convex_hull(*rms, rule: LocalRule | str) -> ConvexHull:
    """Regret minimizer over the convex hull of the children's sets: a simplex minimizer over the
    mixing weights ``λ`` observes ``(<ℓ, z_i>)_i``; ``R^T ≤ R_λ^T + max_i R_i^T``."""
    if not rms:
        raise ValueError("a convex hull needs at least one set")
    dims = {rm.dim for rm in rms}
    if len(dims) != 1:
        raise ValueError(f"all sets of a convex hull must live in the same space, got dims {sorted(dims)}")
    return ConvexHull(tuple(rms), simplex(len(rms), rule))


# ---------------------------------------------------------------------------- chains
def _add_to_sources(lt: np.ndarray, src, single, unique: bool, v: float) -> None:
    """Algorithm 1's ``ℓ̃_x += v · a``: ``h`` is the sum of the step's source entries."""
    if single is not None:
        lt[single] += v
    elif unique:
        lt[src] += v
    else:
        np.add.at(lt, src, v)


@dataclass(frozen=True, eq=False)
class ChainMinimizer:
    """Algorithm 1 along ``{1} ◁h1 X1 ◁h2 … ◁hn Xn`` (left-associative), flattened.

    The point is in the chain's entry order (entry 0 is the constant 1).  The state is one
    :class:`~solvers.local.LocalRule` state over all simplex steps, with the segments
    :attr:`segments` (one per simplex step, in step order; the weights of segment ``j`` are the
    entries ``simplex_entries[segments.ptr[j]:segments.ptr[j+1]]``).  Every segment is an
    independent local minimizer, so this performs exactly the arithmetic of the nested
    construction (:func:`nested_chain_minimizer`):

    * recommend, top-down: ``x[targets_k] = h_k(x) · y_k``;
    * observe, bottom-up over the steps in reverse order: ``ℓ̃`` starts as the loss, step ``k``
      adds ``<ℓ̃[targets_k], y_k>`` to ``ℓ̃`` at each of its sources; then the simplex of step
      ``k`` observes ``ℓ̃[targets_k]`` (all local updates use the pre-update ``y``).

    ``vectorized=True`` runs the same passes level by level (numpy over all steps of a level);
    sums over a source then accumulate in a different order (equal up to rounding)."""

    chain: Chain
    rule: LocalRule
    vectorized: bool = False
    segments: Segments = field(init=False, repr=False)
    simplex_entries: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        chain = self.chain
        chain.validate()
        simplex_steps = np.flatnonzero(chain.kind == SIMPLEX)
        sizes = chain.step_size[simplex_steps]
        object.__setattr__(self, "segments", Segments.from_sizes(sizes))
        object.__setattr__(self, "simplex_entries", concat_ranges(chain.target_ptr[simplex_steps], sizes))
        # Per-step Python tuples for the flat loop: (lo, hi, sources, simplex offset or -1).
        offsets = np.full(chain.num_steps, -1, dtype=np.int64)
        offsets[simplex_steps] = self.segments.ptr[:-1]
        steps = []
        for k in range(chain.num_steps):
            src = chain.source[chain.source_ptr[k]:chain.source_ptr[k + 1]]
            single = int(src[0]) if len(src) == 1 else None
            unique = len(np.unique(src)) == len(src)
            steps.append((int(chain.target_ptr[k]), int(chain.target_ptr[k + 1]), src, single,
                          unique, int(offsets[k])))
        object.__setattr__(self, "_steps", tuple(steps))

    @property
    def dim(self) -> int:
        return self.chain.num_entries

    # -------------------------------------------------------------- regret minimizer interface
    def init(self) -> State:
        return self.rule.init(self.segments)

    def local_weights(self, state: State) -> np.ndarray:
        """Flat local recommendations ``y`` of all simplex steps (segment order)."""
        return self.rule.recommend(state, self.segments)

    def recommend(self, state: State) -> np.ndarray:
        y = self.local_weights(state)
        if self.vectorized:
            w = np.ones(self.dim)
            w[self.simplex_entries] = y
            return self.chain.point(w)
        x = np.empty(self.dim)
        x[0] = 1.0
        for lo, hi, src, single, _, off in self._steps:
            h = x[single] if single is not None else x[src].sum()
            if off >= 0:
                x[lo:hi] = h * y[off:off + hi - lo]
            else:
                x[lo] = h
        return x

    def propagate(self, state: State, loss) -> np.ndarray:
        """The accumulated loss ``ℓ̃`` (entry order) of the bottom-up pass of :meth:`observe`."""
        lt = np.array(_as_loss(loss, self.dim), dtype=np.float64, copy=True)
        y = self.local_weights(state)
        if self.vectorized:
            w = np.ones(self.dim)
            w[self.simplex_entries] = y
            self._bottom_up(lt, lambda entries, starts: np.add.reduceat(lt[entries] * w[entries], starts))
            return lt
        for lo, hi, src, single, unique, off in reversed(self._steps):
            v = float(lt[lo:hi] @ y[off:off + hi - lo]) if off >= 0 else lt[lo]
            _add_to_sources(lt, src, single, unique, v)
        return lt

    def observe(self, state: State, loss) -> State:
        lt = self.propagate(state, loss)
        new = _copy_state(state)
        self.rule.observe(new, lt[self.simplex_entries], self.segments)
        return new

    def minimize(self, loss) -> tuple[float, np.ndarray]:
        """Bottom-up ``m_k = min ℓ̃[targets_k]`` (``ℓ̃[target]`` for a singleton step) added to
        the sources, then the top-down point of the chosen vertices (section 3.2 recursively)."""
        chain = self.chain
        lt = np.array(_as_loss(loss, self.dim), dtype=np.float64, copy=True)
        w = np.zeros(self.dim)
        w[0] = 1.0
        if self.vectorized:
            def step_min(entries, starts):
                values = lt[entries]
                mins = np.minimum.reduceat(values, starts)
                sizes = np.diff(np.append(starts, len(entries)))
                is_min = values == np.repeat(mins, sizes)
                first = np.minimum.reduceat(np.where(is_min, entries, self.dim), starts)
                w[first] = 1.0
                return mins
            self._bottom_up(lt, step_min)
        else:
            for lo, hi, src, single, unique, off in reversed(self._steps):
                i = lo + int(np.argmin(lt[lo:hi]))
                w[i] = 1.0
                _add_to_sources(lt, src, single, unique, lt[i])
        return float(lt[0]), chain.point(w)

    # -------------------------------------------------------------- helpers
    def _bottom_up(self, lt: np.ndarray, step_value: Callable) -> None:
        """Levels deepest first: ``lt[sources_k] += step_value(...)[k]`` for each step ``k``."""
        chain = self.chain
        for steps in reversed(chain.levels):
            sizes = chain.step_size[steps]
            entries = concat_ranges(chain.target_ptr[steps], sizes)
            starts = np.cumsum(sizes) - sizes
            values = step_value(entries, starts)
            counts = chain.num_sources[steps]
            src = chain.source[concat_ranges(chain.source_ptr[steps], counts)]
            np.add.at(lt, src, np.repeat(values, counts))


def chain_minimizer(chain: Chain, rule: LocalRule | str, *, vectorized: bool = False) -> ChainMinimizer:
    """Regret minimizer over the polytope of ``chain`` (point in entry order): Algorithm 1
    composed left-associatively, singleton steps by :func:`singleton`, simplex steps by
    independent copies of ``rule``."""
    return ChainMinimizer(chain, _rule(rule), vectorized)


def nested_chain_minimizer(chain: Chain, rule: LocalRule | str):
    """The literal nesting ``((({1} ◁h1 X1) ◁h2 X2) …)`` of :func:`scaled_extension` objects
    (reference implementation of :func:`chain_minimizer`; at most
    :data:`MAX_NESTED_STEPS` steps)."""
    if chain.num_steps > MAX_NESTED_STEPS:
        raise ValueError(f"nested_chain_minimizer builds {chain.num_steps} nested objects; at most "
                         f"{MAX_NESTED_STEPS} are allowed (use chain_minimizer)")
    chain.validate()
    rule = _rule(rule)
    rm = singleton()
    for k in range(chain.num_steps):
        lo, hi = int(chain.target_ptr[k]), int(chain.target_ptr[k + 1])
        a = np.zeros(lo)
        np.add.at(a, chain.source[chain.source_ptr[k]:chain.source_ptr[k + 1]], 1.0)
        y = simplex(hi - lo, rule) if chain.kind[k] == SIMPLEX else singleton()
        rm = scaled_extension(rm, y, a, 0.0, check=False)  # h is a sum of entries: h ≥ 0
    return rm


def sequence_form_minimizer(space, rule: LocalRule | str, *, vectorized: bool = False) -> ChainMinimizer:
    """Regret minimizer over a player's sequence-form polytope (point indexed by sequence);
    with :class:`~solvers.local.RegretMatching` this is CFR (section 3.2)."""
    return chain_minimizer(sequence_form(space), rule, vectorized=vectorized)


# ---------------------------------------------------------------------------- regrets
def regret(rm, losses: Sequence[np.ndarray], points: Sequence[np.ndarray]) -> float:
    """Exact cumulative regret ``Σ_t <ℓ_t, z_t> − min_{z∈Z} <Σ_t ℓ_t, z>``."""
    losses = np.asarray(losses, dtype=np.float64).reshape(-1, rm.dim)
    points = np.asarray(points, dtype=np.float64).reshape(-1, rm.dim)
    if len(losses) == 0:
        return 0.0
    incurred = float(np.einsum("ti,ti->", losses, points))
    return incurred - rm.minimize(losses.sum(axis=0))[0]


def run(rm, loss_fn: Callable[[int, np.ndarray], np.ndarray], iterations: int,
        state: State | None = None) -> tuple[State, np.ndarray, np.ndarray]:
    """Drive ``rm`` for ``iterations`` rounds; ``loss_fn(t, z_t)`` gives the loss of round ``t``
    (it may depend on the recommendation).  Returns ``(state, points[T, n], losses[T, n])``."""
    state = rm.init() if state is None else state
    points = np.empty((iterations, rm.dim))
    losses = np.empty((iterations, rm.dim))
    for t in range(iterations):
        points[t] = rm.recommend(state)
        losses[t] = loss_fn(t, points[t])
        state = rm.observe(state, losses[t])
    return state, points, losses


__all__ = ["CartesianProduct", "ChainMinimizer", "ConvexHull", "ScaledExtension", "Simplex",
           "Singleton", "cartesian_product", "chain_minimizer", "convex_hull",
           "nested_chain_minimizer", "regret", "run", "scaled_extension", "sequence_form_minimizer",
           "simplex", "singleton"]
