"""Chains of scaled extensions (Farina, Ling, Fang, Sandholm 2019, Definition 4 and Theorem 1).

A chain ``{1} ◁h1 X1 ◁h2 X2 … ◁hn Xn`` describes a polytope by the order in which its entries are
filled: entry 0 is the constant 1; step ``k`` fills a contiguous block of new entries with
``h_k(x) · y`` for some ``y ∈ X_k``, where ``X_k`` is a simplex ``Δ_s`` (a *split* of an already
filled value) or the singleton ``{1}`` (a *sum* of already filled values), and
``h_k(x) = Σ_{j ∈ sources(k)} x[j]`` sums already-filled entries (every ``h`` appearing in the
sequence form and in ``DECOMPOSE`` is such a sum).

Storage is flat: entries are numbered in fill order, so step ``k`` fills entries
``target_ptr[k] .. target_ptr[k+1]-1``; its sources are the CSR row ``source[source_ptr[k]:
source_ptr[k+1]]``.  ``entry_index`` maps each entry to its natural index (a sequence for the
sequence form, a position in the relevant-pair arrays for Ξ), ``level`` groups steps whose
sources are all filled by earlier levels, which is what the vectorized passes iterate over.

The steps themselves are stored one of two ways (``Chain.steps``): one entry per step in
three arrays (:class:`StepArrays`: any chain), or run-length encoded (:class:`StepRuns`) for a
chain whose steps are numbered in level order, as ``DECOMPOSE`` numbers Ξ's: consecutive steps of
one kind, size and number of sources form a run, and a run is four numbers.  On the Battleship
correlation plans a run holds ~70 steps, so Ξ keeps only its ``source`` array per step: the three
per-step arrays were 9 bytes per step, 4.1 bytes per relevant pair on the large instance.  The
compiled kernels of such a chain read its sources shifted (:class:`ShiftedSources`): a step
whose sources are the step before's each plus one keeps a byte instead of its slots, and
``rm`` puts the full ``source`` array on disk (:meth:`Chain.source_on_disk`).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from efce.errors import ChainError
from efce.games.arrays import concat_ranges
from efce.games.resources.compiled import compiled
from efce.games.resources.memory import ParkedArrays

if TYPE_CHECKING:  # annotations only: the backend layer lives above this one
    from efce.solvers.backends.protocol import ComputeBackend

#: Step kind: a simplex ``Δ_n`` of ``n`` entries, scaled by its parent entry.
SIMPLEX = 0
#: Step kind: one entry equal to its parent entry (``{1}``).
SINGLETON = 1


def index_dtype(bound: int) -> type[np.int32] | type[np.int64]:
    """The narrowest of int32/int64 that holds every index below ``bound``: the chains of the
    large Battleship instances have ~10⁸ entries, and int32 halves their index arrays."""
    return np.int32 if bound < 2**31 else np.int64


@dataclass(frozen=True, eq=False)
class StepArrays:
    """A chain's steps one entry each (any step numbering): step ``k`` is of ``kind[k]``, fills
    entries ``target_ptr[k] : target_ptr[k+1]`` and sums ``source[source_ptr[k] : source_ptr[k+1]]``
    of its chain."""

    kind: np.ndarray
    target_ptr: np.ndarray
    source_ptr: np.ndarray

    @property
    def num_steps(self) -> int:
        return len(self.kind)

    @property
    def num_entries(self) -> int:
        return int(self.target_ptr[-1])


@dataclass(frozen=True, eq=False)
class StepRuns:
    """A chain's steps run-length encoded: run ``r`` is the steps ``ptr[r] : ptr[r+1]``, each of
    ``run_kind[r]``, filling ``run_size[r]`` consecutive entries from ``run_nsrc[r]`` consecutive
    sources; the run's first step fills from entry ``run_entry[r]`` and reads from source slot
    ``run_source[r]`` (``run_entry[R]`` and ``run_source[R]`` close the last run).  So step
    ``k = ptr[r] + i`` fills ``run_entry[r] + i · run_size[r]`` onwards and reads
    ``source[run_source[r] + i · run_nsrc[r] :][: run_nsrc[r]]``: the steps' targets and sources
    follow one another, as in a chain numbered in fill order (``DECOMPOSE``'s).

    ``kind``, ``target_ptr`` and ``source_ptr`` give the one-per-step arrays of
    :class:`StepArrays`, made on first use and kept (small chains, teaching views, tests); the
    compiled passes of a big chain read the runs (``runs_of``), so they never exist there.
    All run arrays are int64 (the runs are few) but ``run_kind`` (int8).
    """

    ptr: np.ndarray
    run_kind: np.ndarray
    run_size: np.ndarray
    run_nsrc: np.ndarray
    run_entry: np.ndarray
    run_source: np.ndarray

    @classmethod
    def from_arrays(cls, kind: np.ndarray, target_ptr: np.ndarray, source_ptr: np.ndarray) -> StepRuns:
        """The runs of steps given one per step (``target_ptr`` and ``source_ptr`` as in
        :class:`StepArrays`).

        Raises
        ------
        ChainError
            The arrays do not describe steps (lengths, or a step without an entry).
        """
        if len(target_ptr) != len(kind) + 1 or len(source_ptr) != len(kind) + 1:
            raise ChainError("target_ptr and source_ptr need one entry per step and one more")
        size = np.diff(target_ptr).astype(np.int64)
        nsrc = np.diff(source_ptr).astype(np.int64)
        if len(size) and size.min() < 1:
            raise ChainError(f"step {int(np.argmin(size))} fills no entry")
        new_run = np.ones(len(kind), dtype=bool)
        new_run[1:] = (kind[1:] != kind[:-1]) | (size[1:] != size[:-1]) | (nsrc[1:] != nsrc[:-1])
        first = np.flatnonzero(new_run)
        ptr = np.append(first, len(kind)).astype(np.int64)
        run_entry = np.append(np.asarray(target_ptr, dtype=np.int64)[first], int(target_ptr[-1]))
        run_source = np.append(np.asarray(source_ptr, dtype=np.int64)[first], int(source_ptr[-1]))
        return cls(ptr, kind[first].astype(np.int8), size[first], nsrc[first], run_entry, run_source)

    @classmethod
    def from_counts(
        cls, counts: np.ndarray, run_kind: np.ndarray, run_size: np.ndarray, run_nsrc: np.ndarray
    ) -> StepRuns:
        """The runs of ``counts[r]`` steps each, in order, the first filling from entry 1 and
        reading from source slot 0."""
        counts = np.asarray(counts, dtype=np.int64)
        run_size = np.asarray(run_size, dtype=np.int64)
        run_nsrc = np.asarray(run_nsrc, dtype=np.int64)
        ptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        run_entry = np.ones(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts * run_size, out=run_entry[1:])
        run_entry[1:] += 1
        run_source = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts * run_nsrc, out=run_source[1:])
        return cls(ptr, np.asarray(run_kind, dtype=np.int8), run_size, run_nsrc, run_entry, run_source)

    @property
    def num_runs(self) -> int:
        return len(self.run_kind)

    @property
    def num_steps(self) -> int:
        return int(self.ptr[-1])

    @property
    def num_entries(self) -> int:
        return int(self.run_entry[-1])

    @property
    def counts(self) -> np.ndarray:
        """Steps per run."""
        return np.diff(self.ptr)

    @cached_property
    def kind(self) -> np.ndarray:
        """int8 kind of every step."""
        return np.repeat(self.run_kind, self.counts)

    @cached_property
    def target_ptr(self) -> np.ndarray:
        """First entry of every step, and the number of entries (int64)."""
        return self._pointers(self.run_entry, self.run_size)

    @cached_property
    def source_ptr(self) -> np.ndarray:
        """First source slot of every step, and the number of source slots (int64)."""
        return self._pointers(self.run_source, self.run_nsrc)

    def _pointers(self, starts: np.ndarray, widths: np.ndarray) -> np.ndarray:
        # within a run the steps are `width` apart, and each run starts where the last ended
        out = np.empty(self.num_steps + 1, dtype=np.int64)
        out[0] = starts[0]
        np.cumsum(np.repeat(widths, self.counts), out=out[1:])
        out[1:] += starts[0]
        return out

    def simplex_entries(self) -> int:
        """Entries filled by simplex steps (the size of a local rule's state over the chain)."""
        simplex = self.run_kind == SIMPLEX
        return int((self.counts[simplex] * self.run_size[simplex]).sum())

    def kernel_arrays(self) -> tuple[np.ndarray, ...]:
        """``(ptr, run_kind, run_size, run_nsrc, run_entry, run_source)``, the order the compiled
        run kernels take them in."""
        return self.ptr, self.run_kind, self.run_size, self.run_nsrc, self.run_entry, self.run_source


#: The largest ``shift`` of :class:`ShiftedSources` (uint8): a step further than this from the last step
#: that keeps its sources keeps its own.
MAX_SOURCE_SHIFT = 255


@dataclass(frozen=True, eq=False)
class ShiftedSources:
    """A run-length encoded chain's ``source`` array without the steps that repeat the step
    before them shifted by one.

    In ``DECOMPOSE``'s chains about every second step of a run reads the sources of the step
    before it, each plus one (three quarters of the source slots on Battleship,
    ``docs/results/memory.md``).  Such a step keeps no source slot: ``shift[k] = d > 0`` says
    that step ``k`` reads the sources of the last step before it with ``shift = 0``, each plus
    ``d``; a step with ``shift[k] = 0`` (every run's first step among them) keeps its own in
    ``stored``, in step order.  So step ``k`` of run ``r`` reads ``stored[c - n : c] + shift[k]``
    with ``n = run_nsrc[r]`` and ``c`` the stored slots of the steps up to ``k`` (``k``
    included), which a pass carries from step to step: forwards ``c += n`` at a step with
    ``shift = 0``, backwards ``c -= n`` after it.  ``run_stored[r]`` is ``c`` before run ``r``'s
    first step (``run_stored[R]``, all of them).

    On large Battleship the sources take 1.2 bytes per relevant pair this way (the shifts 0.45
    of them) instead of 4.9 bytes in ``source``, and the passes read as many fewer.
    """

    shift: np.ndarray
    stored: np.ndarray
    run_stored: np.ndarray

    @classmethod
    def of(cls, runs: StepRuns, source: np.ndarray) -> ShiftedSources:
        """The shifted form of ``source``, the source array of the chain whose steps are ``runs``.

        Raises
        ------
        ChainError
            The runs' source slots do not follow one another to the end of ``source``.
        """
        ends = runs.run_source[:-1] + runs.counts * runs.run_nsrc
        bad = np.flatnonzero(ends != runs.run_source[1:])
        if len(bad) or runs.run_source[0] != 0 or runs.run_source[-1] != len(source):
            at = int(runs.ptr[bad[0]]) if len(bad) else 0
            raise ChainError(f"the runs of steps do not follow one another at step {at}")
        shift, run_stored = _source_shifts(runs.ptr, runs.run_nsrc, runs.run_source, source, MAX_SOURCE_SHIFT)
        stored = np.empty(int(run_stored[-1]), dtype=source.dtype)
        _fill_stored(runs.ptr, runs.run_nsrc, runs.run_source, source, shift, stored)
        return cls(shift, stored, run_stored)

    def expanded(self, runs: StepRuns) -> np.ndarray:
        """The ``source`` array this holds (a new array, one slot per source of every step)."""
        source = np.empty(int(runs.run_source[-1]), dtype=self.stored.dtype)
        _expand_sources(runs.ptr, runs.run_nsrc, runs.run_source, self.shift, self.stored, source)
        return source

    @property
    def nbytes(self) -> int:
        return int(self.shift.nbytes + self.stored.nbytes + self.run_stored.nbytes)


@compiled(cache=True, nogil=True)
def _source_shifts(ptr, run_nsrc, run_source, source, max_shift):
    """``shift`` of every step and ``run_stored`` (:class:`ShiftedSources`)."""
    shift = np.zeros(ptr[len(ptr) - 1], dtype=np.uint8)
    run_stored = np.zeros(len(ptr), dtype=np.int64)
    c = 0
    for r in range(len(ptr) - 1):
        run_stored[r] = c
        ns = run_nsrc[r]
        s = run_source[r]
        for k in range(ptr[r], ptr[r + 1]):
            if k > ptr[r] and shift[k - 1] < max_shift:
                same = True
                for j in range(s, s + ns):
                    if source[j] != source[j - ns] + 1:
                        same = False
                        break
                if same:
                    shift[k] = shift[k - 1] + 1
            if shift[k] == 0:
                c += ns
            s += ns
    run_stored[len(ptr) - 1] = c
    return shift, run_stored


@compiled(cache=True, nogil=True)
def _fill_stored(ptr, run_nsrc, run_source, source, shift, stored):
    """The source slots of the steps with ``shift = 0`` into ``stored``, in step order."""
    c = 0
    for r in range(len(ptr) - 1):
        ns = run_nsrc[r]
        s = run_source[r]
        for k in range(ptr[r], ptr[r + 1]):
            if shift[k] == 0:
                for j in range(ns):
                    stored[c + j] = source[s + j]
                c += ns
            s += ns


@compiled(cache=True, nogil=True)
def _expand_sources(ptr, run_nsrc, run_source, shift, stored, source):
    """:meth:`ShiftedSources.expanded` into ``source``."""
    c = 0
    for r in range(len(ptr) - 1):
        ns = run_nsrc[r]
        s = run_source[r]
        for k in range(ptr[r], ptr[r + 1]):
            d = shift[k]
            if d == 0:
                c += ns
            for j in range(ns):
                source[s + j] = stored[c - ns + j] + d
            s += ns


@dataclass(frozen=True, eq=False)
class _ChainFields:
    """The stored fields of :class:`Chain` (its constructor also takes the three per-step arrays
    of :class:`StepArrays` instead of ``steps``)."""

    steps: StepArrays | StepRuns
    source: np.ndarray
    entry_index: np.ndarray | None
    describe_entry: Callable[[int], str] = field(default=str, repr=False)
    name: str = "chain"
    known_level: np.ndarray | None = field(default=None, repr=False)
    level_sorted: bool = False
    level_ptr: np.ndarray | None = field(default=None, repr=False)
    natural_entry: np.ndarray | None = field(default=None, repr=False)
    level_order: np.ndarray | None = field(default=None, repr=False)
    shifted: ShiftedSources | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False, init=False)
class Chain(_ChainFields):
    """``{1} ◁h1 X1 ◁h2 … ◁hn Xn`` as flat arrays.

    Attributes
    ----------
    steps : StepArrays or StepRuns
        The steps' kinds, targets and source slots (module docstring); the constructor takes
        them as ``steps`` or as the three arrays ``kind`` (int8[S], :data:`SIMPLEX` or
        :data:`SINGLETON` per step), ``target_ptr`` (int[S + 1]: step ``k`` fills entries
        ``target_ptr[k] : target_ptr[k+1]``, ``target_ptr[0] = 1``) and ``source_ptr``
        (int[S + 1]), which :attr:`kind`, :attr:`target_ptr` and :attr:`source_ptr` give back
        either way.
    source : int[...]
        ``h_k(x) = x[source[source_ptr[k]:source_ptr[k+1]]].sum()``.
    entry_index : int64[N] or None
        Natural index of each entry (entry 0 is the constant 1); ``None`` when entries are their
        own natural indices (the trigger chain) or when only ``natural_entry`` is kept.
    ``describe_entry`` : callable
        ``entry_index value -> str`` label, e.g. ``"(2, ∅)"``.
    known_level : int32[S], optional
        The level of every step when the builder knows it (``DECOMPOSE``, the sequence form and
        the trigger chain do); otherwise :attr:`level` computes it from the sources.
    level_sorted : bool
        True when the steps are numbered in level order already (then :attr:`step_order` is
        ``0..S-1`` and each level a range of it).
    level_ptr : int64[depth + 1], optional
        The steps of level ``d`` (from 1) are positions ``level_ptr[d-1] : level_ptr[d]`` of
        :attr:`step_order` (of ``0..S-1`` for a level-sorted chain): the levels without an int32
        per step (``DECOMPOSE`` gives this instead of ``known_level``, the trigger chain this and
        ``level_order``; :attr:`level` is then expanded on demand only).
    natural_entry : int[N], optional
        Natural index → entry, kept instead of ``entry_index`` (:meth:`labelled`).
    level_order : int32[S], optional
        With ``level_ptr``, the steps in level order (stable), for a chain not numbered in
        level order: :attr:`step_order` itself, so no per-step level is kept besides it.
    shifted : ShiftedSources, optional
        The sources of a chain stored as runs as its compiled kernels read them, when made
        already (:meth:`source_on_disk` keeps them); otherwise :attr:`shifted_sources` makes
        them from ``source``.

    A chain is immutable: a frozen dataclass, every field given at construction.  The derived
    arrays (:attr:`level`, :attr:`step_order`, :attr:`levels`, ``step_size``, ...) are
    lazily computed views (``functools.cached_property``): computed from the fields on first use
    and kept; no code assigns them.
    """

    def __init__(
        self,
        kind: np.ndarray | None = None,
        target_ptr: np.ndarray | None = None,
        source_ptr: np.ndarray | None = None,
        source: np.ndarray | None = None,
        entry_index: np.ndarray | None = None,
        describe_entry: Callable[[int], str] = str,
        name: str = "chain",
        known_level: np.ndarray | None = None,
        level_sorted: bool = False,
        level_ptr: np.ndarray | None = None,
        natural_entry: np.ndarray | None = None,
        level_order: np.ndarray | None = None,
        shifted: ShiftedSources | None = None,
        *,
        steps: StepArrays | StepRuns | None = None,
    ):
        if (steps is None) == (kind is None or target_ptr is None or source_ptr is None):
            raise ChainError("a chain takes its steps as steps= or as kind, target_ptr and source_ptr")
        if source is None:
            raise ChainError("a chain needs its source array")
        if steps is None:
            assert kind is not None and target_ptr is not None and source_ptr is not None  # checked
            steps = StepArrays(kind, target_ptr, source_ptr)
        super().__init__(
            steps,
            source,
            entry_index,
            describe_entry,
            name,
            known_level,
            level_sorted,
            level_ptr,
            natural_entry,
            level_order,
            shifted,
        )

    # ------------------------------------------------------------------ steps
    @property
    def kind(self) -> np.ndarray:
        """int8 :data:`SIMPLEX` or :data:`SINGLETON` per step (made once from runs)."""
        return self.steps.kind

    @property
    def target_ptr(self) -> np.ndarray:
        """Step ``k`` fills entries ``target_ptr[k] : target_ptr[k+1]`` (made once from runs)."""
        return self.steps.target_ptr

    @property
    def source_ptr(self) -> np.ndarray:
        """Step ``k`` reads ``source[source_ptr[k] : source_ptr[k+1]]`` (made once from runs)."""
        return self.steps.source_ptr

    @property
    def runs(self) -> StepRuns | None:
        """The steps run-length encoded, if the chain is stored so (:class:`StepRuns`)."""
        return self.steps if isinstance(self.steps, StepRuns) else None

    @cached_property
    def shifted_sources(self) -> ShiftedSources | None:
        """The sources without the steps that repeat the step before them shifted by one
        (:class:`ShiftedSources`), for a chain stored as runs: what its compiled kernels read
        (the ``shifted`` field, or made from ``source`` on first use).  ``None`` for a chain
        stored step by step."""
        runs = self.runs
        if runs is None:
            return None
        return self.shifted if self.shifted is not None else ShiftedSources.of(runs, self.source)

    def source_on_disk(self) -> Chain:
        """This chain with ``source`` on disk: a read-only memory map of an unlinked temporary
        file instead of memory, every other array shared, and :attr:`shifted_sources` kept (its
        compiled kernels read those only: ``rm`` on Ξ holds 4.9 bytes per relevant pair of
        large Battleship less).  Every value stays the same, and reading ``source`` still works
        (it brings the pages read in from the file, as clean pages the system may drop again).
        Itself for a chain stored step by step, a small one, one whose ``source`` is a map
        already, on a system that cannot unlink a mapped file, or when the temporary folder
        cannot take the array (:class:`~efce.games.resources.memory.ParkedArrays`).

        Returns
        -------
        Chain
            The chain with its source array on disk, or this one.
        """
        if self.runs is None or os.name != "posix" or _is_mapped(self.source):
            return self
        shifted = self.shifted_sources  # made from the array before it leaves memory
        with ParkedArrays(source=self.source) as parked:
            if not parked.on_disk:
                return self
            # the map stays readable once the file is removed (POSIX)
            return dataclasses.replace(self, source=parked.mapped("source"), shifted=shifted)

    # ------------------------------------------------------------------ natural indices
    @property
    def natural_index(self) -> np.ndarray:
        """The natural index of every entry: ``entry_index``, or (not kept) the inverse of
        ``natural_entry``, or ``0..N-1`` for a chain whose entries are their own indices."""
        if self.entry_index is not None:
            return self.entry_index
        if self.natural_entry is not None:
            out = np.empty(self.num_entries, dtype=self.natural_entry.dtype)
            out[self.natural_entry] = np.arange(len(self.natural_entry), dtype=self.natural_entry.dtype)
            return out
        return np.arange(self.num_entries, dtype=index_dtype(self.num_entries))

    def natural_of(self, entry: int) -> int:
        """The natural index of one entry (see :attr:`natural_index`)."""
        if self.entry_index is not None:
            return int(self.entry_index[entry])
        if self.natural_entry is not None:
            return int(np.flatnonzero(self.natural_entry == entry)[0])
        return int(entry)

    def unlabelled(self) -> Chain:
        """This chain's steps without natural labels (no ``entry_index``, ``natural_entry`` or
        ``describe_entry``): all a regret minimizer reads.  A solver runs on it so that no array
        per entry beyond the steps, and nothing a label function refers to, stays reachable
        from its engines.  Shares every array with this chain."""
        return dataclasses.replace(self, entry_index=None, natural_entry=None, describe_entry=str)

    def labelled(self, natural_entry: np.ndarray, describe_entry: Callable[[int], str]) -> Chain:
        """This chain keeping ``natural_entry`` (natural index → entry, the inverse of
        ``entry_index``) instead of ``entry_index`` — one int per entry, not two, for a solver that
        needs one direction — and labelled by ``describe_entry``.  Shares every other array."""
        return dataclasses.replace(
            self, entry_index=None, natural_entry=natural_entry, describe_entry=describe_entry
        )

    # ------------------------------------------------------------------ sizes
    @property
    def num_entries(self) -> int:
        return self.steps.num_entries

    @property
    def num_steps(self) -> int:
        return self.steps.num_steps

    @cached_property
    def step_size(self) -> np.ndarray:
        return np.diff(self.target_ptr)

    @cached_property
    def num_sources(self) -> np.ndarray:
        return np.diff(self.source_ptr)

    @property
    def num_simplex_steps(self) -> int:
        runs = self.runs
        if runs is not None:
            return int(runs.counts[runs.run_kind == SIMPLEX].sum())
        return int(np.count_nonzero(self.kind == SIMPLEX))

    @property
    def num_singleton_steps(self) -> int:
        return self.num_steps - self.num_simplex_steps

    @property
    def simplex_entries(self) -> int:
        """Entries filled by simplex steps: the size of a local rule's state over the chain."""
        runs = self.runs
        if runs is not None:
            return runs.simplex_entries()
        return int(np.diff(self.target_ptr)[self.kind == SIMPLEX].sum())

    @property
    def widest_step(self) -> int:
        """The most entries a step fills (at least 1), without keeping ``step_size``."""
        runs = self.runs
        if runs is not None:
            return int(runs.run_size.max(initial=1))
        return int(np.diff(self.target_ptr).max(initial=1))

    def packed(self) -> Chain:
        """This chain with its steps run-length encoded (:class:`StepRuns`), sharing every other
        array; itself if they are already.  Only a chain whose steps fill consecutive entries in
        their own order, with sources stored in step order, can be (``DECOMPOSE``'s).

        Raises
        ------
        ChainError
            The steps are not numbered in fill order.
        """
        if self.runs is not None:
            return self
        tptr, sptr = self.target_ptr, self.source_ptr
        if tptr[0] != 1 or sptr[0] != 0 or np.any(np.diff(tptr) < 1) or np.any(np.diff(sptr) < 0):
            raise ChainError("only a chain whose steps fill consecutive entries in order can be packed")
        return dataclasses.replace(self, steps=StepRuns.from_arrays(self.kind, tptr, sptr))

    @cached_property
    def entry_step(self) -> np.ndarray:
        """Step that fills each entry (-1 for the root entry)."""
        out = np.empty(self.num_entries, dtype=np.int64)
        out[0] = -1
        out[1:] = np.repeat(np.arange(self.num_steps, dtype=np.int64), self.step_size)
        return out

    @cached_property
    def source_step(self) -> np.ndarray:
        """For every source slot, the step it belongs to."""
        return np.repeat(np.arange(self.num_steps, dtype=np.int64), self.num_sources)

    @cached_property
    def level(self) -> np.ndarray:
        """``level[k] = 1 + max(level of the steps filling k's sources)`` (root entry: level 0)."""
        if self.known_level is not None:
            return self.known_level
        if self.level_ptr is not None:
            in_order = np.repeat(np.arange(1, len(self.level_ptr), dtype=np.int32), np.diff(self.level_ptr))
            if self.level_sorted:
                return in_order
            out = np.empty(self.num_steps, dtype=np.int32)
            out[self.step_order] = in_order
            return out
        self.validate()
        entry_level = np.zeros(self.num_entries, dtype=np.int32)
        step_level = np.zeros(self.num_steps, dtype=np.int32)
        # A vectorized fixed point: iteration d settles every step of level <= d.
        while True:
            new_step_level = np.maximum.reduceat(entry_level[self.source], self.source_ptr[:-1]) + 1
            if np.array_equal(new_step_level, step_level):
                return step_level
            step_level = new_step_level
            entry_level[1:] = np.repeat(step_level, self.step_size)

    @cached_property
    def step_order(self) -> np.ndarray:
        """Every step in level order (stable): the concatenation of :attr:`levels`, which are
        views into it, so the passes that run the whole order hold no copy of it."""
        if self.level_sorted:
            return np.arange(self.num_steps, dtype=index_dtype(self.num_steps + 1))
        if self.level_order is not None:
            return self.level_order
        return level_order(self.level)[0]

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """Steps grouped by level, ascending (views into :attr:`step_order`)."""
        order = self.step_order
        if self.level_ptr is not None:
            return [order[self.level_ptr[i] : self.level_ptr[i + 1]] for i in range(len(self.level_ptr) - 1)]
        sorted_level = self.level if self.level_sorted else self.level[order]
        bounds = np.searchsorted(sorted_level, np.arange(1, int(self.level.max(initial=0)) + 2))
        return [order[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1)]

    @property
    def depth(self) -> int:
        if self.level_ptr is not None and self.known_level is None:
            return len(self.level_ptr) - 1
        return int(self.level.max(initial=0))

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Raise :class:`ChainError` unless every step only reads entries filled before it and
        singleton steps fill exactly one entry.  One compiled pass with no per-source
        temporaries: on the large Battleship Ξ chain the vectorized check held two int64 arrays
        per source slot (about 1.9 GB)."""
        runs = self.runs
        first_entry = runs.run_entry[0] if runs is not None else self.target_ptr[0]
        if first_entry != 1:
            raise ChainError("target_ptr[0] must be 1 (entry 0 is the constant 1)")
        if runs is not None:
            shifted = self.shifted_sources
            assert shifted is not None  # a chain stored as runs
            reason, k = _first_invalid_run_step(
                *runs.kernel_arrays(), shifted.run_stored, shifted.shift, shifted.stored
            )
        else:
            reason, k = _first_invalid_step(self.target_ptr, self.source_ptr, self.source, self.kind)
        if reason:
            raise ChainError(
                {
                    1: f"step {k} fills no entry",
                    2: f"step {k} has an empty h",
                    3: "a singleton step must fill exactly one entry",
                    4: f"step {k} reads an entry that is not filled before it",
                    5: f"the runs of steps do not follow one another at step {k}",
                }[reason]
            )
        labels = self.entry_index if self.entry_index is not None else self.natural_entry
        if labels is not None and len(labels) != self.num_entries:
            raise ChainError("entry_index must label every entry")

    # ------------------------------------------------------------------ feasibility
    def violations(
        self,
        arrays: Sequence[np.ndarray],
        scales: Sequence[float] | np.ndarray | None = None,
        *,
        backend: ComputeBackend | str | None = None,
    ) -> tuple[float, ...]:
        """The largest violation of the chain's own constraints by each point
        ``x_r = scales[r] · arrays[r]`` (entry order), in one pass over the steps for all of them.

        Step ``k`` of a chain fills ``x[T_k] = h_k(x) · y`` with ``y`` in a simplex or the
        singleton ``{1}`` and ``h_k(x) = Σ_{j ∈ S_k} x[j]`` (module docstring), so, as ``h_k ≥ 0``
        by induction on the steps, the chain's polytope is

        .. math::

            x[0] = 1, \\quad x ≥ 0, \\quad Σ_{e ∈ T_k} x[e] = Σ_{j ∈ S_k} x[j] \\ \\text{for every step } k

        (a singleton step has one target, so the same equation reads ``x[t] = h_k(x)``).  The
        violation of ``x_r`` is ``max(|x_r[0] − 1|, max_e −x_r[e], max_k |Σ_{T_k} x_r − Σ_{S_k} x_r|)``.

        For the chain ``DECOMPOSE`` builds, this polytope *is* the set of correlation plans Ξ
        (Farina, Ling, Fang, Sandholm 2019, section 4.3 and Theorem 1: the chain's entries are
        the relevant pairs and its points exactly the plans satisfying Definition 3), so a point
        whose violation here is 0 satisfies Definition 3 exactly.  Nonzero violations are not
        the same numbers as :class:`polytopes.feasibility.FeasibilityCheck`'s (a Definition-3
        equation is a linear combination of step equations), which is why the solver still checks
        the plan it reports with that independent check.  Unlike it it reads neither the relevant
        pairs nor a pair → entry map, only the chain the solver already holds, so a solver can
        check its iterates while those arrays are out of memory.

        The sweep runs on a compute backend (:mod:`efce.solvers.backends`; ``backend``, default the
        CPU on every thread numba may use), whose CPU kernel splits the steps into ranges of
        about equal work (targets plus sources) among its threads; each step's sums are
        computed by one thread in a fixed order and the result is a maximum, so it is the same
        on any number of threads.

        Parameters
        ----------
        arrays : sequence of ndarray
            Points in entry order, one value per entry each; float32 ones are read without a
            float64 copy (one pass for them, one for the others; sums are taken in float64).
        scales : sequence of float, optional
            One factor per array (default 1), e.g. ``1 / Σ_t w_t`` for a running sum.
        backend : ComputeBackend or str, optional
            Where the sweep runs (:func:`efce.solvers.backends.get_backend`).

        Returns
        -------
        tuple of float
            The violation of each point.

        Raises
        ------
        ValueError
            A point without one value per entry, or not one scale per point.
        """
        arrays = tuple(_array(a) for a in arrays)
        factors = np.ones(len(arrays)) if scales is None else np.asarray(scales, dtype=np.float64)
        if any(a.shape != (self.num_entries,) for a in arrays) or factors.shape != (len(arrays),):
            raise ValueError(
                f"points of shapes {[a.shape for a in arrays]} with {factors.size} scales; "
                f"expected ({self.num_entries},) each and one scale per point"
            )
        return _backend(backend).chain_violations(self, arrays, factors)

    # ------------------------------------------------------------------ points
    def rescaled_point(
        self, values: np.ndarray, *, backend: ComputeBackend | str | None = None
    ) -> np.ndarray:
        """The chain point whose local strategies are the normalized target blocks of
        ``values``: top-down, ``x[0] = 1`` and for every step ``k``

        .. math::

            x[T_k] = h_k(x) \\, \\frac{v[T_k]}{Σ_{e ∈ T_k} v[e]}

        (uniform on the block when its sum is not positive; ``x[t] = h_k(x)`` for a singleton
        step).  A point of the chain is returned as it is, up to float64 rounding; a point that
        is feasible only to float32's precision (a running sum kept in float32) comes back
        feasible to float64's, each entry moved by a few float32 roundings relative to its
        value (one per step above it).  Only ratios within a block are read, so a running sum
        gives the same point as the average.

        Parameters
        ----------
        values : ndarray
            Nonnegative values in entry order (float32 or float64).
        backend : ComputeBackend or str, optional
            Where the pass runs (default: the CPU; :func:`efce.solvers.backends.get_backend`).

        Returns
        -------
        ndarray
            float64 point of the chain (entry order), a new array.

        Raises
        ------
        ValueError
            ``values`` without one value per entry.
        """
        values = _array(values)
        if values.shape != (self.num_entries,):
            raise ValueError(f"values of shape {values.shape}; expected ({self.num_entries},)")
        if values.dtype not in (np.float32, np.float64):
            values = np.asarray(values, dtype=np.float64)
        return _backend(backend).rescaled_point(self, values)

    def h_values(self, x: np.ndarray) -> np.ndarray:
        """``h_k(x)`` for every step, from a full point ``x`` in entry order."""
        return np.add.reduceat(x[self.source], self.source_ptr[:-1]) if len(self.source) else np.zeros(0)

    def point(self, weights: np.ndarray) -> np.ndarray:
        """The point (entry order) with local simplex weights ``weights`` (entry order: the
        weight of every entry within its step's simplex; ignored for singleton steps).

        Top-down pass, level by level."""
        x = np.empty(self.num_entries)
        x[0] = 1.0
        w = np.where(np.repeat(self.kind == SINGLETON, self.step_size), 1.0, weights[1:])
        for steps in self.levels:
            h = self._h_of(x, steps)
            for_each_entry = np.repeat(h, self.step_size[steps])
            entries = concat_ranges(self.target_ptr[steps], self.step_size[steps])
            x[entries] = for_each_entry * w[entries - 1]
        return x

    def _h_of(self, x: np.ndarray, steps: np.ndarray) -> np.ndarray:
        src = concat_ranges(self.source_ptr[steps], self.num_sources[steps])
        starts = np.cumsum(self.num_sources[steps]) - self.num_sources[steps]
        return np.add.reduceat(x[self.source[src]], starts) if len(src) else np.zeros(len(steps))

    def random_weights(self, rng: np.random.Generator, *, vertex: bool = False) -> np.ndarray:
        """Random local simplex weights (uniform on each simplex, or a random vertex)."""
        w = np.ones(self.num_entries)
        step = self.entry_step[1:]
        if vertex:
            pick = self.target_ptr[:-1] + (rng.random(self.num_steps) * self.step_size).astype(np.int64)
            w[1:] = 0.0
            w[pick] = 1.0
        else:
            g = rng.exponential(size=self.num_entries - 1)
            sums = np.bincount(step, weights=g, minlength=self.num_steps)
            w[1:] = g / sums[step]
        return w

    def random_point(self, rng: np.random.Generator, *, vertex: bool = False) -> np.ndarray:
        """A random point of the chain (entry order): uniform weights on every simplex, or a
        random vertex (one action per simplex) with ``vertex=True``."""
        return self.point(self.random_weights(rng, vertex=vertex))

    def weights_of(self, x: np.ndarray) -> np.ndarray:
        """Local simplex coordinates of ``x`` (entries whose ``h`` is 0 get uniform weights)."""
        h = self.h_values(x)
        step = self.entry_step[1:]
        hh = h[step]
        w = np.ones(self.num_entries)
        safe = hh > 0
        w[1:] = np.where(safe, x[1:] / np.where(safe, hh, 1.0), 1.0 / self.step_size[step])
        return w

    def to_natural(self, x: np.ndarray, size: int | None = None) -> np.ndarray:
        """Reorder a point from entry order to natural order."""
        if self.entry_index is None and self.natural_entry is not None:
            out = np.zeros(len(self.natural_entry) if size is None else size)
            out[: len(self.natural_entry)] = np.asarray(x)[self.natural_entry]
            return out
        index = self.natural_index
        out = np.zeros(int(index.max()) + 1 if size is None else size)
        out[index] = x
        return out

    def from_natural(self, values: np.ndarray) -> np.ndarray:
        """Reorder a vector from natural order (sequences / relevant pairs) to entry order."""
        if self.entry_index is None and self.natural_entry is not None:
            out = np.empty(self.num_entries, dtype=np.asarray(values).dtype)
            out[self.natural_entry] = values
            return out
        return np.asarray(values)[self.natural_index]

    # ------------------------------------------------------------------ text
    def notation(self, max_steps: int | None = 40) -> str:
        """The chain in the paper's notation, e.g. ``{1} ◁ Δ2 ◁ Δ2 ◁ Δ2 ◁ Δ3``."""
        parts = ["{1}"]
        shown = self.num_steps if max_steps is None else min(self.num_steps, max_steps)
        for k in range(shown):
            parts.append(f"Δ{self.step_size[k]}" if self.kind[k] == SIMPLEX else "{1}")
        text = " ◁ ".join(parts)
        if shown < self.num_steps:
            text += f" ◁ … ({self.num_steps - shown} more steps)"
        return text

    def step_description(self, k: int) -> str:
        """``h_k`` and the entries step ``k`` fills, with natural labels."""
        src = self.source[self.source_ptr[k] : self.source_ptr[k + 1]]
        tgt = range(int(self.target_ptr[k]), int(self.target_ptr[k + 1]))
        h = " + ".join(self._label(e) for e in src)
        filled = ", ".join(self._label(e) for e in tgt)
        if self.kind[k] == SIMPLEX:
            return f"◁ Δ{len(tgt)}: ({filled}) ∈ ({h})·Δ{len(tgt)}"
        return f"◁ {{1}}: {filled} = {h}"

    def _label(self, entry: int) -> str:
        from .render import entry_label  # the teaching views own the notation

        return entry_label(self, entry)

    def __str__(self) -> str:
        return self.notation()


def level_order(level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, level_ptr)``: the steps sorted by ``level`` (stable; int32 below 2³¹ steps)
    and the bounds of each level ``d ≥ 1`` in that order — what :attr:`Chain.step_order` and
    ``Chain.level_ptr`` hold."""
    order = np.argsort(level, kind="stable").astype(index_dtype(len(level) + 1))
    depth = int(level.max(initial=0))
    level_ptr = np.searchsorted(level[order], np.arange(1, depth + 2)).astype(np.int64)
    return order, level_ptr


@compiled(cache=True, nogil=True)
def _first_invalid_step(target_ptr, source_ptr, source, kind):
    """``(reason, k)`` for the first step ``k`` breaking a rule of :meth:`Chain.validate`
    (1: fills no entry, 2: no source, 3: a singleton filling more than one entry, 4: reads an
    entry not filled before it), or ``(0, -1)``."""
    for k in range(len(target_ptr) - 1):
        size = target_ptr[k + 1] - target_ptr[k]
        if size < 1:
            return 1, k
        if source_ptr[k + 1] <= source_ptr[k]:
            return 2, k
        if kind[k] == SINGLETON and size != 1:
            return 3, k
        for j in range(source_ptr[k], source_ptr[k + 1]):
            if source[j] >= target_ptr[k]:
                return 4, k
    return 0, -1


@compiled(cache=True, nogil=True)
def _first_invalid_run_step(
    ptr, run_kind, run_size, run_nsrc, run_entry, run_source, run_stored, shift, stored
):
    """:func:`_first_invalid_step` for steps stored as runs (:class:`StepRuns`) with their sources
    shifted (:class:`ShiftedSources`), with reason 5: a run does not start where the previous one
    ends."""
    for r in range(len(run_kind)):
        count = ptr[r + 1] - ptr[r]
        if count < 1 or run_entry[r + 1] != run_entry[r] + count * run_size[r]:
            return 5, ptr[r]
        if run_source[r + 1] != run_source[r] + count * run_nsrc[r]:
            return 5, ptr[r]
        if run_size[r] < 1:
            return 1, ptr[r]
        if run_nsrc[r] < 1:
            return 2, ptr[r]
        if run_kind[r] == SINGLETON and run_size[r] != 1:
            return 3, ptr[r]
        lo, c, ns = run_entry[r], run_stored[r], run_nsrc[r]
        for k in range(ptr[r], ptr[r + 1]):
            d = shift[k]
            if d == 0:
                c += ns
            for j in range(c - ns, c):
                if stored[j] + d >= lo:
                    return 4, k
            lo += run_size[r]
    return 0, -1


def _backend(backend: ComputeBackend | str | None) -> ComputeBackend:
    """The compute backend a chain's sweeps run on.  The backend layer lives above this one
    (:mod:`efce.solvers.backends`, whose kernels read chains): imported on first use."""
    from efce.solvers.backends import get_backend

    return get_backend(backend)


def _is_mapped(array: np.ndarray) -> bool:
    """Whether ``array`` views a memory-mapped file."""
    base: object = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = getattr(base, "base", None)
    return False


def _array(values):
    """``values`` as an array: a backend's array (one with a shape and a dtype, e.g. on a device)
    as it is, anything else through numpy."""
    return values if hasattr(values, "shape") and hasattr(values, "dtype") else np.asarray(values)
