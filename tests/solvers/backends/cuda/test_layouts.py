"""The GPU's layouts, checked on the host against the CPU model they come from: ``A`` and ``Aᵀ``
as CSR hold the operator's matrix and add in its order; the chains' wide steps and transposed
scatter list exactly what the CPU's serial up pass adds, in its order; the memory estimate bounds
the exact bytes.  No numba-cuda needed."""

from __future__ import annotations

import numpy as np
import pytest

from efce.games import load
from efce.games.payoffs import terminal_map
from efce.games.spec import make_game
from efce.solvers.backends.cuda.layouts import (
    CUDA_FIXED_BYTES,
    _estimated_value_bytes,
    _payoff_nonzeros,
    _trigger_chain_counts,
    chain_layout,
    estimate_cuda_bytes,
    payoff_layout,
    run_device_bytes,
)
from efce.solvers.methods.efce import build_efce_model
from tests.paths import GAME_DATA

SMALL_SHERIFF = "sheriff:max_bribe=1,max_items=1,rounds=1"
GAMES = ["farina-fig1", "farina-fig2", SMALL_SHERIFF, "three_doors"]
#: Player 1 has sequences three deep: a following row with three terms of one player.
DEEPER_SHERIFF = "sheriff:max_bribe=1,max_items=1,rounds=2"


def game_of(name: str):
    return load(GAME_DATA / f"{name}.efg") if name == "three_doors" else make_game(name)


_MODELS: dict = {}


def model_of(name: str, tau: float | None = None):
    key = (name, tau)
    if key not in _MODELS:
        _MODELS[key] = build_efce_model(game_of(name), tau)
    return _MODELS[key]


def serial_csr_product(csr, v: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """Each row summed left to right in CSR order (what one GPU thread does)."""
    out = np.empty(csr.shape[0])
    for r in range(csr.shape[0]):
        acc = 0.0
        for j in range(csr.ptr[r], csr.ptr[r + 1]):
            acc += csr.val[j] * v[csr.col[j]]
        out[r] = sign * acc
    return out


@pytest.mark.parametrize("tau", [None, 0.75])
@pytest.mark.parametrize("name", [*GAMES, DEEPER_SHERIFF])
def test_csr_of_a_and_its_transpose_hold_the_operator_and_add_in_its_order(name, tau):
    model = model_of(name, tau)
    operator = model.operator
    layout = payoff_layout(operator, model.game, short_threshold=2, long_threshold=4)
    dense = operator.to_sparse().toarray()
    assert np.array_equal(layout.a.to_scipy().toarray(), dense)
    assert np.array_equal(layout.at.to_scipy().toarray(), dense.T)
    assert layout.a.nnz == np.count_nonzero(dense) + (1 if tau == 0.0 else 0)  # no stored zeros
    assert not np.any(layout.a.val == 0.0) or tau == 0.0
    rng = np.random.default_rng(7)
    # magnitudes 1e-8 .. 1e8, so that another order of a row's terms rounds differently
    y = rng.standard_normal(operator.shape[1]) * 10.0 ** rng.integers(-8, 9, operator.shape[1])
    x = rng.standard_normal(operator.shape[0]) * 10.0 ** rng.integers(-8, 9, operator.shape[0])
    # Bit for bit: the CSR rows add in the operator's order (up to the sign of a zero).
    assert np.array_equal(serial_csr_product(layout.a, y), operator @ y)
    assert np.array_equal(
        serial_csr_product(layout.at, x, -1.0),
        operator.rmatvec(x, out=np.empty(operator.shape[1]), sign=-1.0),
    )
    # The row classes partition the rows by length.
    for csr in (layout.a, layout.at):
        lengths = np.diff(csr.ptr)
        assert np.array_equal(csr.long_rows, np.flatnonzero(lengths > 4))
        assert np.array_equal(csr.medium_rows, np.flatnonzero((lengths > 2) & (lengths <= 4)))
    if tau is None:
        assert layout.a.tau_position == layout.at.tau_position == -1 and layout.lambda_tau == -1
        assert layout.a.nnz == _payoff_nonzeros(model.game, terminal_map(model.game))
    else:
        assert layout.lambda_tau == model.triggers.num_triggers
        assert layout.a.val[layout.a.tau_position] == tau == layout.at.val[layout.at.tau_position]
        assert layout.a.col[layout.a.tau_position] == layout.lambda_tau
        assert layout.at.col[layout.at.tau_position] == 0


def serial_additions(chain):
    """What the CPU's serial OBSERVELOSS adds into each destination, in order, and the level
    that fills each destination (-1: none, the root): ``({destination: [entry holding the value,
    ...]}, {entry: level})``, steps by descending level-order position, each step's sources in
    order, written from the chain's own arrays."""
    adds: dict[int, list[int]] = {}
    for steps in chain.levels[::-1]:
        for k in steps[::-1]:
            for j in range(chain.source_ptr[k], chain.source_ptr[k + 1]):
                adds.setdefault(int(chain.source[j]), []).append(int(chain.target_ptr[k]))
    filled_at = dict.fromkeys(range(chain.num_entries), -1)
    for L, steps in enumerate(chain.levels):
        for k in steps:
            for e in range(chain.target_ptr[k], chain.target_ptr[k + 1]):
                filled_at[e] = L
    assert sum(len(level) for level in chain.levels) == len(chain.step_order)
    return adds, filled_at


@pytest.mark.parametrize("side", ["xi", "y"])
@pytest.mark.parametrize("name", GAMES)
def test_chain_layout_gathers_exactly_the_serial_up_pass_additions_in_order(name, side):
    model = model_of(name)
    chain = model.xi_steps if side == "xi" else model.triggers.chain
    layout = chain_layout(chain, wide_threshold=3, split_threshold=8, piece_size=4)
    assert (len(layout.order) == 0) == (side == "xi")  # Ξ is numbered in level order, Y is not
    adds, filled_at = serial_additions(chain)
    assert len(layout.gather_part_ptr) == layout.depth + 2 == len(chain.levels) + 2
    got: dict[int, list[int]] = {}
    for part in range(layout.depth + 1):  # the root's, then level L's at part L + 1
        for p in range(layout.gather_part_ptr[part], layout.gather_part_ptr[part + 1]):
            e = p if side == "xi" else int(layout.gather_dest[p])  # Ξ: every entry, in order
            assert filled_at[e] == part - 1  # gathered just before its own level runs
            values = layout.gather_value[layout.gather_ptr[p] : layout.gather_ptr[p + 1]].tolist()
            if values:
                assert e not in got
                got[e] = values
    assert got == adds
    if side == "xi":
        assert len(layout.gather_dest) == 0 and len(layout.gather_ptr) == chain.num_entries + 1
    else:  # Y lists only the entries that receive additions
        assert sorted(layout.gather_dest.tolist()) == sorted(adds)
    # per level: split steps, those with more than 8 entries; wide steps, the others with more
    # entries plus sources than 3
    for L, steps in enumerate(chain.levels):
        positions = np.arange(layout.level_ptr[L], layout.level_ptr[L + 1])
        size = chain.step_size[steps]
        work = size + chain.num_sources[steps]
        wide = layout.wide_steps[layout.wide_ptr[L] : layout.wide_ptr[L + 1]]
        split = layout.split_steps[layout.split_ptr[L] : layout.split_ptr[L + 1]]
        assert np.array_equal(wide, positions[(work > 3) & (size <= 8)])
        assert np.array_equal(split, positions[size > 8])
    sizes = np.diff(chain.target_ptr)[chain.step_order[layout.split_steps]]
    assert np.array_equal(np.diff(layout.piece_ptr), -(-sizes // 4))  # pieces of at most 4 entries
    assert np.array_equal(layout.piece_step, np.repeat(np.arange(len(sizes)), -(-sizes // 4)))
    assert layout.simplex_entries == int(chain.step_size[chain.kind == 0].sum())


#: Games of three families whose chains differ in shape (Ξ's steps per pair 0.34, 0.61 and
#: 0.89), big enough (264K-375K pairs) that the per-run scalars weigh nothing per pair.
ESTIMATED = (
    "battleship:rows=2,cols=3,ship_sizes=[1],shots=2",
    "sheriff:max_bribe=3,max_items=3,rounds=4",
    "goofspiel:players=2,ranks=4,prizes=random",  # public chance
)


def test_memory_estimate_bounds_the_exact_device_bytes():
    # On the tiny games the fixed allowance dominates; on the others the counted part alone
    # bounds the exact bytes, within 50 %.
    for name in ("farina-fig1", "three_doors", *ESTIMATED):
        game = game_of(name)
        for tau in (None, 1.0):
            model = build_efce_model(game, tau)
            exact = run_device_bytes(
                chain_layout(model.xi_steps),
                chain_layout(model.triggers.chain),
                payoff_layout(model.operator, game),
                predictive=True,
                averaged_deviator=tau is not None,
            )
            estimate = estimate_cuda_bytes(game, welfare=tau is not None)
            assert exact <= estimate and estimate - CUDA_FIXED_BYTES <= 1.5 * exact, name
            if name in ESTIMATED:
                assert exact <= estimate - CUDA_FIXED_BYTES, name


@pytest.mark.parametrize("name", ["farina-fig1", *ESTIMATED])
def test_the_estimate_counts_ys_steps_and_destinations_and_the_value_type_exactly(name):
    game = game_of(name)
    model = model_of(name)
    y = chain_layout(model.triggers.chain)
    assert _trigger_chain_counts(game) == (y.num_steps, len(y.gather_dest))
    payoff = payoff_layout(model.operator, game)
    tm = terminal_map(game)
    assert _estimated_value_bytes(game, tm, welfare=False) == payoff.a.val.itemsize == payoff.at.val.itemsize
    # Battleship's and Sheriff's payoffs are small integers: float32 values, unless τ is held
    assert payoff.a.val.dtype == (np.float64 if game.has_chance else np.float32)
    assert payoff_layout(model_of(name, 0.5).operator, game).a.val.dtype == np.float64
    assert _estimated_value_bytes(game, tm, welfare=True) == 8
    # and the per-step pointers in int32, the chains' own being int64 where stored as runs
    xi = chain_layout(model.xi_steps)
    assert xi.target_ptr.dtype == xi.source_ptr.dtype == np.int32
    assert np.array_equal(xi.target_ptr, model.xi_steps.target_ptr)
