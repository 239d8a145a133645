"""The object-level algebra of regret minimizers (functional, optax-like).

Every constructor returns an immutable :class:`~solvers.regret.protocol.RegretMinimizer` — ``dim``,
``init() -> state``, ``recommend(state) -> point``, ``observe(state, loss, *, donate=False) ->
state`` (the caller's state is never mutated unless donated) — with the exact linear
minimization oracle ``minimize(loss) -> (value, point)``.  Sign convention: minimizers observe
**losses** (see :mod:`solvers.regret.protocol`).

Constructors
------------
* :func:`simplex` — ``Δ_k`` run by a :class:`~solvers.regret.local.LocalRule` on one segment;
* :func:`singleton` — ``{1} ⊂ R^1``;
* :func:`scaled_extension` — ``X ◁h Y`` with ``h(x) = <a, x> + b`` (Farina, Ling, Fang, Sandholm
  2019, Definition 4), minimized by Algorithm 1; Proposition 1 bounds its regret;
* :func:`cartesian_product`, :func:`convex_hull` — regret circuits (Farina, Kroer, Sandholm,
  ICML 2019);
* :func:`chain_minimizer` — Algorithm 1 composed left-associatively along a
  :class:`polytopes.Chain`, unrolled into two flat passes with one local-rule state over all
  simplex steps.  It runs the passes of a compute backend (:mod:`efce.solvers.backends`, the CPU's
  numba kernels by default) when the rule brings a kernel, and level-vectorized numpy passes
  otherwise;
  :func:`nested_chain_minimizer` builds the literal nesting of :func:`scaled_extension` objects
  (reference implementation, short chains only);
* :func:`sequence_form_minimizer` — the chain minimizer of a sequence-form polytope; with
  :class:`~solvers.regret.local.RegretMatching` this is CFR (section 3.2).

Helpers :func:`regret` and :func:`run` compute exact cumulative regrets of a loss sequence.

Examples
--------
Regret matching on a simplex, then CFR's minimizer over a sequence-form polytope:

>>> import numpy as np
>>> rm = simplex(3, "rm")
>>> state = rm.init()
>>> rm.recommend(state)
array([0.33333333, 0.33333333, 0.33333333])
>>> rm.recommend(rm.observe(state, np.array([1.0, 0.0, 0.0])))
array([0. , 0.5, 0.5])
>>> rm.minimize(np.array([1.0, 0.0, 2.0]))
(0.0, array([0., 1., 0.]))
>>> from efce.games import kuhn
>>> from efce.polytopes import sequence_form
>>> cfr = chain_minimizer(sequence_form(kuhn().sequences(0)), "rm+")
>>> cfr.dim, cfr.recommend(cfr.init())[:3]
(13, array([1. , 0.5, 0.5]))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from efce.games.arrays import concat_ranges
from efce.games.game import SequenceSpace
from efce.polytopes.chain import SIMPLEX, Chain
from efce.polytopes.sequence_form import sequence_form
from efce.solvers.backends import ChainPasses, ComputeBackend, get_backend
from efce.solvers.regret.local import Kernel, LocalRule, Segments
from efce.solvers.regret.protocol import LinearOracle, RegretMinimizer, State, copy_state
from efce.solvers.regret.registry import as_rule

#: Tolerance for checking ``h >= 0`` on ``X`` when building a scaled extension.
H_TOLERANCE = 1e-9
#: Longest chain :func:`nested_chain_minimizer` accepts (Python recursion depth).
MAX_NESTED_STEPS = 200
#: The names :func:`chain_minimizer` takes for ``backend`` besides a compute backend object or a
#: compute backend's name (``"cpu"``): ``"compiled"`` is the default compute backend, ``"numpy"``
#: the numpy passes, ``"auto"`` the first of the two that the rule supports.
BACKENDS = ("compiled", "numpy")


def _as_loss(loss: ArrayLike, dim: int) -> np.ndarray:
    loss = np.asarray(loss, dtype=np.float64)
    if loss.shape != (dim,):
        raise ValueError(f"loss has shape {loss.shape}, expected ({dim},)")
    return loss


def _work_buffer(loss: ArrayLike, dim: int, donate: bool) -> np.ndarray:
    """``loss`` itself when donated and usable as a float64 work array, else a copy."""
    if donate and type(loss) is np.ndarray and loss.dtype == np.float64 and loss.shape == (dim,):
        flags = loss.flags
        if flags.c_contiguous and flags.writeable:
            return loss
    return _as_loss(loss, dim).copy()


_NO_TOTAL = np.zeros(0)


def _oracle(rm: RegretMinimizer) -> LinearOracle:
    """``rm`` as a set with a linear minimization oracle: the exact ``minimize`` of a composite
    set needs one in every part."""
    if not isinstance(rm, LinearOracle):
        raise TypeError(f"{type(rm).__name__} has no linear minimization oracle (minimize)")
    return rm


def accumulation(
    accumulate: tuple[np.ndarray, float] | None, n: int, dtypes: tuple = (np.float64,)
) -> tuple[np.ndarray, float]:
    """``(total, w)`` of a recommend's ``accumulate`` option (an empty total: none), checked.

    Raises
    ------
    ValueError
        ``total`` is not a writable contiguous array of ``n`` entries of one of ``dtypes``.
    """
    if accumulate is None:
        return _NO_TOTAL, 0.0
    total, w = accumulate
    if not (
        type(total) is np.ndarray
        and total.dtype in dtypes
        and total.shape == (n,)
        and total.flags.c_contiguous
        and total.flags.writeable
    ):
        kinds = " or ".join(np.dtype(d).name for d in dtypes)
        raise ValueError(f"accumulate needs a writable contiguous {kinds} total of shape ({n},)")
    return total, float(w)


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

    def observe(self, state: State, loss: ArrayLike, *, donate: bool = False) -> State:
        new = state if donate else copy_state(state)
        self.rule.observe(new, _as_loss(loss, self.k), self.segments)
        return new

    def minimize(self, loss: ArrayLike) -> tuple[float, np.ndarray]:
        loss = _as_loss(loss, self.k)
        i = int(np.argmin(loss))
        point = np.zeros(self.k)
        point[i] = 1.0
        return float(loss[i]), point


def simplex(k: int, rule: LocalRule | str) -> Simplex:
    """A regret minimizer over the probability simplex ``Δ_k`` run by ``rule``."""
    if k < 1:
        raise ValueError(f"a simplex needs at least one vertex, got k={k}")
    return Simplex(int(k), as_rule(rule), Segments.from_sizes([k]))


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

    def observe(self, state: State, loss: ArrayLike, *, donate: bool = False) -> State:
        _as_loss(loss, 1)
        return ()

    def minimize(self, loss: ArrayLike) -> tuple[float, np.ndarray]:
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

    rm_x: RegretMinimizer
    rm_y: RegretMinimizer
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

    def observe(self, state: State, loss: ArrayLike, *, donate: bool = False) -> State:
        loss = _work_buffer(loss, self.dim, donate) if donate else _as_loss(loss, self.dim)
        sx, sy = state
        lx, ly = loss[: self.rm_x.dim], loss[self.rm_x.dim :]
        value = float(ly @ self.rm_y.recommend(sy))  # before Y's state is updated (or donated)
        if donate:
            lx += value * self.a  # ℓ̃_x of Algorithm 1, in the donated buffer
            lx_tilde = lx
        else:
            lx_tilde = lx + value * self.a
        return (self.rm_x.observe(sx, lx_tilde, donate=donate), self.rm_y.observe(sy, ly, donate=donate))

    def minimize(self, loss: ArrayLike) -> tuple[float, np.ndarray]:
        """``min_x <ℓx + a·m_y, x> + b·m_y`` with ``m_y = min_y <ℓy, y>`` (section 3.2)."""
        loss = _as_loss(loss, self.dim)
        lx, ly = loss[: self.rm_x.dim], loss[self.rm_x.dim :]
        m_y, y = _oracle(self.rm_y).minimize(ly)
        m_x, x = _oracle(self.rm_x).minimize(lx + m_y * self.a)
        return m_x + self.b * m_y, np.concatenate([x, self.h(x) * y])


def scaled_extension(
    rm_x: RegretMinimizer, rm_y: RegretMinimizer, a: ArrayLike, b: float = 0.0, *, check: bool = True
) -> ScaledExtension:
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
        h_min = _oracle(rm_x).minimize(a)[0] + b
        if h_min < -H_TOLERANCE:
            raise ValueError(
                f"h(x) = <a, x> + b is negative on X (min {h_min:.3g}); Definition 4 needs h ≥ 0"
            )
    return ScaledExtension(rm_x, rm_y, a, b)


# ---------------------------------------------------------------------------- regret circuits
@dataclass(frozen=True, eq=False)
class CartesianProduct:
    """``Z_1 × … × Z_m``; state: tuple of the children's states."""

    rms: tuple[RegretMinimizer, ...]

    @property
    def dim(self) -> int:
        return sum(rm.dim for rm in self.rms)

    def _split(self, loss: np.ndarray) -> list[np.ndarray]:
        return np.split(loss, np.cumsum([rm.dim for rm in self.rms])[:-1])

    def init(self) -> State:
        return tuple(rm.init() for rm in self.rms)

    def recommend(self, state: State) -> np.ndarray:
        return np.concatenate([rm.recommend(s) for rm, s in zip(self.rms, state, strict=True)])

    def observe(self, state: State, loss: ArrayLike, *, donate: bool = False) -> State:
        parts = self._split(_as_loss(loss, self.dim))  # disjoint views: each may be donated
        return tuple(
            rm.observe(s, part, donate=donate) for rm, s, part in zip(self.rms, state, parts, strict=True)
        )

    def minimize(self, loss: ArrayLike) -> tuple[float, np.ndarray]:
        results = [
            _oracle(rm).minimize(part)
            for rm, part in zip(self.rms, self._split(_as_loss(loss, self.dim)), strict=True)
        ]
        return float(sum(v for v, _ in results)), np.concatenate([p for _, p in results])


def cartesian_product(*rms: RegretMinimizer) -> CartesianProduct:
    """Regret minimizer over ``Z_1 × … × Z_m``: ``R^T = Σ_i R_i^T``."""
    if not rms:
        raise ValueError("a Cartesian product needs at least one factor")
    return CartesianProduct(tuple(rms))


@dataclass(frozen=True, eq=False)
class ConvexHull:
    """``co(Z_1 ∪ … ∪ Z_m)`` (all ``Z_i ⊂ R^n``); state ``(state_λ, (state_1, …, state_m))``."""

    rms: tuple[RegretMinimizer, ...]
    mixer: Simplex

    @property
    def dim(self) -> int:
        return self.rms[0].dim

    def init(self) -> State:
        return (self.mixer.init(), tuple(rm.init() for rm in self.rms))

    def _points(self, children: tuple) -> np.ndarray:
        return np.stack([rm.recommend(s) for rm, s in zip(self.rms, children, strict=True)])

    def recommend(self, state: State) -> np.ndarray:
        s_lambda, children = state
        return self.mixer.recommend(s_lambda) @ self._points(children)

    def observe(self, state: State, loss: ArrayLike, *, donate: bool = False) -> State:
        loss = _as_loss(loss, self.dim)
        s_lambda, children = state
        loss_lambda = self._points(children) @ loss
        last = len(self.rms) - 1
        # Every child observes the same loss: only the last one may be handed the donated buffer.
        observed = tuple(
            rm.observe(s, loss if not donate or i == last else loss.copy(), donate=donate)
            for i, (rm, s) in enumerate(zip(self.rms, children, strict=True))
        )
        return (self.mixer.observe(s_lambda, loss_lambda, donate=donate), observed)

    def minimize(self, loss: ArrayLike) -> tuple[float, np.ndarray]:
        loss = _as_loss(loss, self.dim)
        results = [_oracle(rm).minimize(loss) for rm in self.rms]
        i = int(np.argmin([v for v, _ in results]))
        return results[i]


def convex_hull(*rms: RegretMinimizer, rule: LocalRule | str) -> ConvexHull:
    """Regret minimizer over the convex hull of the children's sets: a simplex minimizer over the
    mixing weights ``λ`` observes ``(<ℓ, z_i>)_i``; ``R^T ≤ R_λ^T + max_i R_i^T``."""
    if not rms:
        raise ValueError("a convex hull needs at least one set")
    dims = {rm.dim for rm in rms}
    if len(dims) != 1:
        raise ValueError(f"all sets of a convex hull must live in the same space, got dims {sorted(dims)}")
    return ConvexHull(tuple(rms), simplex(len(rms), rule))


# ---------------------------------------------------------------------------- chains
@dataclass(frozen=True, eq=False)
class ChainMinimizer:
    """Algorithm 1 along ``{1} ◁h1 X1 ◁h2 … ◁hn Xn`` (left-associative), flattened.

    The point is in the chain's entry order (entry 0 is the constant 1).  The state is one
    :class:`~solvers.regret.local.LocalRule` state over all simplex steps, with the segments
    :attr:`segments` (one per simplex step, in level order — for the chains of DECOMPOSE and of
    the sequence form, which are sorted by level, that is step order).  Every segment is an independent
    local minimizer, so this performs exactly the arithmetic of the nested construction
    (:func:`nested_chain_minimizer`):

    * recommend, top-down: ``x[targets_k] = h_k(x) · y_k``;
    * observe, bottom-up over the steps in reverse order: ``ℓ̃`` starts as the loss, step ``k``
      adds ``<ℓ̃[targets_k], y_k>`` to ``ℓ̃`` at each of its sources; the simplex of step ``k``
      observes ``ℓ̃[targets_k]`` (all local updates use the pre-update ``y``).

    Backends (same state, same iterates up to the order of floating-point sums):

    * a compute backend (:class:`~efce.solvers.backends.protocol.ComputeBackend`; the CPU's numba
      kernels by default) — both passes with the rule's kernel fused in
      (:meth:`~efce.solvers.backends.protocol.ComputeBackend.chain_passes`); needs
      ``rule.kernel()``; cost per iteration linear in the number of entries plus sources;
    * ``None``, the numpy passes — ``rule.recommend`` / ``rule.observe`` once over all simplex
      steps, and the passes level by level with numpy (steps of a level only read earlier
      levels); any rule.

    Immutable: a frozen dataclass of ``chain``, ``rule`` and ``backend`` (a compute backend
    object, or ``None`` for numpy; :func:`chain_minimizer` takes names too), checked at
    construction.  What the backends derive from them (``kernel``, the bound passes, the numpy
    passes' layouts) are lazily computed views (``functools.cached_property``): computed on first
    use and kept, never assigned.
    """

    #: The chain whose polytope the minimizer plays on.
    chain: Chain
    #: The local rule every simplex step runs.
    rule: LocalRule
    #: Where the passes run: a compute backend object, or ``None`` for the numpy passes.
    backend: ComputeBackend | None

    def __post_init__(self) -> None:
        self.chain.validate()
        if self.backend is None:
            return
        if isinstance(self.backend, str):
            raise TypeError(
                f"ChainMinimizer takes a compute backend object or None, got {self.backend!r}; "
                f"chain_minimizer(chain, rule, backend=...) takes names"
            )
        if self.kernel is None:
            raise ValueError(
                f"local rule {self.rule.name!r} ({type(self.rule).__name__}) has no "
                f"compiled kernel; use backend='numpy' (or 'auto')"
            )
        _ = self._passes  # bound once, here, not on the first pass

    @cached_property
    def kernel(self) -> Kernel | None:
        """The rule's compiled kernel (None when it has none)."""
        return self.rule.kernel()

    @property
    def _compiled_kernel(self) -> Kernel:
        """The kernel the compiled passes run (only asked for with a backend)."""
        kernel = self.kernel
        assert kernel is not None, "__post_init__ refuses a compute backend for a rule without kernel"
        return kernel

    @property
    def compiled(self) -> bool:
        """Whether the passes run the rule's kernel in a compute backend (else numpy)."""
        return self.backend is not None

    @cached_property
    def _n(self) -> int:
        return self.chain.num_entries

    @cached_property
    def _passes(self) -> ChainPasses:
        """The backend's passes over the chain with the rule's kernel
        (:class:`~efce.solvers.backends.protocol.ChainPasses`)."""
        assert self.backend is not None, "only the compiled path binds passes"
        return self.backend.chain_passes(self.chain, self._compiled_kernel)

    @property
    def dim(self) -> int:
        return self._n

    @property
    def segments(self) -> Segments:
        """One segment per simplex step, in level order.  Kept only by the numpy passes: the
        compiled passes find each step's state with a running counter, and on the large
        Battleship chains the offsets are ~0.25 GB that :meth:`init` needs once."""
        if self.backend is None:
            return self._kept_segments
        runs = self.chain.runs
        if runs is not None:  # from the runs: no array per step made and kept
            simplex = runs.run_kind == SIMPLEX
            return Segments.from_sizes(np.repeat(runs.run_size[simplex], runs.counts[simplex]))
        # np.diff, not the chain's cached step_size: an int per step the loop never reads
        return Segments.from_sizes(np.diff(self.chain.target_ptr)[self._simplex_steps()])

    @cached_property
    def _kept_segments(self) -> Segments:
        return Segments.from_sizes(self.chain.step_size[self._simplex_steps()])

    # -------------------------------------------------------------- regret minimizer interface
    def init(self) -> State:
        """The rule's state over :attr:`segments` (on the backend's device, if any)."""
        state = self.rule.init(self.segments)
        if self.backend is None:
            return state
        to_device = self.backend.to_device
        return {key: to_device(value) for key, value in state.items()}

    def recommend(
        self, state: State, out: np.ndarray | None = None, accumulate: tuple[np.ndarray, float] | None = None
    ) -> np.ndarray:
        """The current point (a new array, or written into ``out``); ``accumulate=(total, w)``
        also adds ``w`` times it into ``total`` (same shape), in the same pass on a compute
        backend, which also takes a float32 ``total`` (the passes' ``sum_dtypes``; the numpy
        passes float64 only)."""
        if out is not None and (
            out.shape != (self._n,) or out.dtype != np.float64 or not out.flags.c_contiguous
        ):
            raise ValueError(f"out must be a contiguous float64 array of shape ({self._n},)")
        backend = self.backend
        passes = self._passes if backend is not None else None
        total, w = accumulation(accumulate, self._n, (np.float64,) if passes is None else passes.sum_dtypes)
        if backend is not None and passes is not None:
            x = backend.empty(self._n) if out is None else out
            a, b, _ = self._compiled_kernel.arrays(state)
            passes.recommend(a, b, x, total, w)
            return x
        x = self.chain.point(self._local_weights(state))
        if out is not None:
            out[:] = x
            x = out
        if len(total):
            total += w * x
        return x

    def observe(self, state: State, loss: ArrayLike, *, donate: bool = False) -> State:
        """The state after observing ``loss``; with ``donate=True`` the state's arrays and the
        loss buffer are updated in place (see :mod:`solvers.regret.protocol`)."""
        work = _work_buffer(loss, self._n, donate)
        new = state if donate else copy_state(state)
        if self.backend is not None:
            a, b, t = self._compiled_kernel.arrays(new)
            self._passes.observe(a, b, t, work)
            return new
        w = self._local_weights(state)
        for entries, starts, sources, counts in reversed(self._levels):
            values = np.add.reduceat(work[entries] * w[entries], starts)
            np.add.at(work, sources, np.repeat(values, counts))
        self.rule.observe(new, work[self._simplex_entries], self.segments)
        return new

    def minimize(self, loss: ArrayLike) -> tuple[float, np.ndarray]:
        """Bottom-up ``m_k = min ℓ̃[targets_k]`` (``ℓ̃[target]`` for a singleton step) added to
        the sources, then the top-down vertex of the chosen entries (section 3.2 recursively);
        ties go to the first entry."""
        value, vertex = chain_linear_minimum(self.chain, loss, backend=self.backend)
        assert vertex is not None  # asked for (vertex=True is the default)
        return value, vertex

    # -------------------------------------------------------------- layouts of the backends
    @cached_property
    def _order(self) -> np.ndarray:
        """Steps in level order (the compiled passes run it forwards and backwards); the chain's
        own array, not a copy (at 10^8 steps a copy is ~0.4 GB)."""
        return self.chain.step_order

    def _simplex_steps(self) -> np.ndarray:
        """The simplex steps in level order: segment ``j`` of the state is step
        ``_simplex_steps()[j]`` (the compiled passes walk the state with a running counter).
        Not kept: one int64 per step is memory at 10^8 entries."""
        if self.chain.level_sorted:  # the level order is the identity: no step_order needed
            return np.flatnonzero(self.chain.kind == SIMPLEX)
        return self._order[self.chain.kind[self._order] == SIMPLEX]

    @cached_property
    def _simplex_entries(self) -> np.ndarray:
        """Entry of every state position (numpy backend)."""
        steps = self._simplex_steps()
        return concat_ranges(self.chain.target_ptr[steps], self.chain.step_size[steps])

    @cached_property
    def _levels(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Per level: its entries, the start of each step's block, the sources of all its steps
        and their counts (numpy backend)."""
        chain = self.chain
        out = []
        for steps in chain.levels:
            sizes = chain.step_size[steps]
            counts = chain.num_sources[steps]
            out.append(
                (
                    concat_ranges(chain.target_ptr[steps], sizes),
                    np.cumsum(sizes) - sizes,
                    chain.source[concat_ranges(chain.source_ptr[steps], counts)],
                    counts,
                )
            )
        return out

    def _local_weights(self, state: State) -> np.ndarray:
        """Local weights of every entry (the rule's strategies; 1 on singleton steps)."""
        w = np.ones(self.dim)
        w[self._simplex_entries] = self.rule.recommend(state, self.segments)
        return w


def _compute_backend(backend, rule: LocalRule) -> ComputeBackend | None:
    """The compute backend a chain minimizer runs ``rule`` on (``None``: the numpy passes), from
    an object, a compute backend's name, or ``"compiled"`` / ``"numpy"`` / ``"auto"``."""
    if backend == "numpy":
        return None
    has_kernel = rule.kernel() is not None
    if backend == "auto":
        return get_backend() if has_kernel else None
    if isinstance(backend, str) and backend != "compiled":
        try:
            backend = get_backend(backend)
        except ValueError:
            raise ValueError(
                f"unknown chain-minimizer backend '{backend}'; valid: auto, {', '.join(BACKENDS)} "
                f"or a compute backend's name"
            ) from None
    elif backend == "compiled":
        backend = get_backend()
    return backend  # a rule without kernel is refused by ChainMinimizer


def chain_minimizer(
    chain: Chain, rule: LocalRule | str, *, backend: ComputeBackend | str = "auto"
) -> ChainMinimizer:
    """Regret minimizer over the polytope of ``chain`` (point in entry order): Algorithm 1
    composed left-associatively, singleton steps by :func:`singleton`, simplex steps by
    independent copies of ``rule``.

    ``backend="auto"`` runs the rule's compiled kernel on the default compute backend (the CPU
    on every thread numba may use) when it has one
    (:meth:`~solvers.regret.local.LocalRule.kernel`) and the vectorized numpy passes otherwise;
    ``"compiled"`` (a ValueError for a rule without kernel) and ``"numpy"`` force one, and a
    compute backend object or name (``"cpu"``; :func:`efce.solvers.backends.get_backend`) runs
    the kernel there.  The minimizer keeps the backend object (``None`` for numpy) as
    :attr:`ChainMinimizer.backend`.

    Raises
    ------
    ValueError
        An unknown backend, or a compiled backend for a rule without kernel.
    """
    rule = as_rule(rule)
    return ChainMinimizer(chain, rule, _compute_backend(backend, rule))


def chain_linear_minimum(
    chain: Chain,
    loss: ArrayLike,
    *,
    vertex: bool = True,
    donate: bool = False,
    backend: ComputeBackend | None = None,
) -> tuple[float, np.ndarray | None]:
    """``min_{x ∈ chain} ⟨loss, x⟩`` (entry order) and, with ``vertex``, a vertex attaining it:
    the exact linear minimization oracle of the chain, by the split of section 3.2 applied
    bottom-up (on ``backend``, default the CPU; ties go to the first entry of a step).  With
    ``donate``, a float64 ``loss`` is the work array itself (overwritten) instead of a copy."""
    work = _work_buffer(loss, chain.num_entries, donate)
    if not vertex:
        return get_backend(backend).chain_minimum(chain, work), None
    from efce.solvers.backends.protocol import cpu_backend  # the vertex kernel exists on the CPU only

    return cpu_backend(backend).chain_vertex(chain, work)


def nested_chain_minimizer(chain: Chain, rule: LocalRule | str) -> Singleton | ScaledExtension:
    """The literal nesting ``((({1} ◁h1 X1) ◁h2 X2) …)`` of :func:`scaled_extension` objects
    (reference implementation of :func:`chain_minimizer`; at most
    :data:`MAX_NESTED_STEPS` steps)."""
    if chain.num_steps > MAX_NESTED_STEPS:
        raise ValueError(
            f"nested_chain_minimizer builds {chain.num_steps} nested objects; at most "
            f"{MAX_NESTED_STEPS} are allowed (use chain_minimizer)"
        )
    chain.validate()
    rule = as_rule(rule)
    rm: Singleton | ScaledExtension = singleton()
    for k in range(chain.num_steps):
        lo, hi = int(chain.target_ptr[k]), int(chain.target_ptr[k + 1])
        a = np.zeros(lo)
        np.add.at(a, chain.source[chain.source_ptr[k] : chain.source_ptr[k + 1]], 1.0)
        y = simplex(hi - lo, rule) if chain.kind[k] == SIMPLEX else singleton()
        rm = scaled_extension(rm, y, a, 0.0, check=False)  # h is a sum of entries: h ≥ 0
    return rm


def sequence_form_minimizer(
    space: SequenceSpace, rule: LocalRule | str, *, backend: str = "auto"
) -> ChainMinimizer:
    """Regret minimizer over a player's sequence-form polytope (point indexed by sequence);
    with :class:`~solvers.regret.local.RegretMatching` this is CFR (section 3.2)."""
    return chain_minimizer(sequence_form(space), rule, backend=backend)


# ---------------------------------------------------------------------------- regrets
def regret(rm: RegretMinimizer, losses: Sequence[np.ndarray], points: Sequence[np.ndarray]) -> float:
    """Exact cumulative regret ``Σ_t <ℓ_t, z_t> − min_{z∈Z} <Σ_t ℓ_t, z>`` (``rm`` needs a linear
    minimization oracle)."""
    loss_rows = np.asarray(losses, dtype=np.float64).reshape(-1, rm.dim)
    point_rows = np.asarray(points, dtype=np.float64).reshape(-1, rm.dim)
    if len(loss_rows) == 0:
        return 0.0
    incurred = float(np.einsum("ti,ti->", loss_rows, point_rows))
    return incurred - _oracle(rm).minimize(loss_rows.sum(axis=0))[0]


def run(
    rm: RegretMinimizer,
    loss_fn: Callable[[int, np.ndarray], np.ndarray],
    iterations: int,
    state: State | None = None,
) -> tuple[State, np.ndarray, np.ndarray]:
    """Drive ``rm`` for ``iterations`` rounds; ``loss_fn(t, z_t)`` gives the loss of round ``t``
    (it may depend on the recommendation).  Returns ``(state, points[T, n], losses[T, n])``."""
    state = rm.init() if state is None else state
    points = np.empty((iterations, rm.dim))
    losses = np.empty((iterations, rm.dim))
    for t in range(iterations):
        points[t] = rm.recommend(state)
        losses[t] = loss_fn(t, points[t])
        state = rm.observe(state, losses[t], donate=False)
    return state, points, losses


__all__ = [
    "BACKENDS",
    "CartesianProduct",
    "ChainMinimizer",
    "ConvexHull",
    "ScaledExtension",
    "Simplex",
    "Singleton",
    "cartesian_product",
    "chain_linear_minimum",
    "chain_minimizer",
    "convex_hull",
    "nested_chain_minimizer",
    "regret",
    "run",
    "scaled_extension",
    "sequence_form_minimizer",
    "simplex",
    "singleton",
]
