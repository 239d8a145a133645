"""DECOMPOSE (Farina et al. 2019, section 4.3) against a literal transcription of the paper,
the paper's examples, and the verification checks (a)–(d)."""

import json
import sys

import numpy as np
import pytest

from efce import games
from efce.games import GameError
from efce.games.relevant import connected_infosets, relevant_pairs
from efce.polytopes import SIMPLEX, SINGLETON, Chain, correlation_plan, sequence_form, verify, vsf_constraints


def literal_decompose(game):
    """The recursion of section 4.3 written as plainly as possible (sets, recursion)."""
    sp = (game.sequences(0), game.sequences(1))
    conn = set(zip(*(a.tolist() for a in connected_infosets(game)), strict=True))

    def connected(p, i, j):  # infoset i of player p, infoset j of the other player
        return ((i, j) if p == 0 else (j, i)) in conn

    def seqs(p, i):
        return [int(sp[p].infoset_first_seq[i]) + a for a in range(int(sp[p].infoset_num_actions[i]))]

    def children(p, s):
        return [i for i in range(sp[p].num_infosets) if sp[p].infoset_parent_seq[i] == s]

    def relevant_seq_infoset(p, s, j):  # sequence s of player p ⋈ infoset j of the other
        return s == 0 or connected(p, int(sp[p].seq_infoset[s]), j)

    def pair(p, mine, other):
        return (mine, other) if p == 0 else (other, mine)

    steps = []
    sys.setrecursionlimit(10_000)

    def decompose(s1, s2):
        s = (s1, s2)
        crit = []
        for p in (0, 1):
            o = 1 - p
            crit.append([i for i in children(p, s[p]) if any(connected(p, i, j) for j in children(o, s[o]))])
        c = 0 if len(crit[0]) <= 1 else 1
        assert len(crit[c]) <= 1, "Proposition 2"
        o = 1 - c
        star = crit[c][0] if crit[c] else None
        for i in children(c, s[c]):
            if relevant_seq_infoset(o, s[o], i):
                targets = [pair(c, a, s[o]) for a in seqs(c, i)]
                steps.append((SIMPLEX, frozenset(targets), frozenset([s])))
                for t in targets:
                    decompose(*t)
        below = [
            j
            for j in range(sp[o].num_infosets)
            if sp[o].is_descendant([sp[o].infoset_parent_seq[j]], [s[o]])[0]
            and relevant_seq_infoset(c, s[c], j)
        ]
        for j in below:  # infosets are numbered top-down
            if star is not None and connected(c, star, j):
                for b in seqs(o, j):
                    steps.append(
                        (
                            SINGLETON,
                            frozenset([pair(c, s[c], b)]),
                            frozenset(pair(c, a, b) for a in seqs(c, star)),
                        )
                    )
            else:
                steps.append(
                    (
                        SIMPLEX,
                        frozenset(pair(c, s[c], b) for b in seqs(o, j)),
                        frozenset([pair(c, s[c], int(sp[o].infoset_parent_seq[j]))]),
                    )
                )

    decompose(0, 0)
    return steps


def chain_steps(chain, pairs):
    def lab(entries):
        idx = chain.entry_index[entries]
        return frozenset(zip(pairs.sigma1[idx].tolist(), pairs.sigma2[idx].tolist(), strict=True))

    return [
        (
            int(chain.kind[k]),
            lab(np.arange(chain.target_ptr[k], chain.target_ptr[k + 1])),
            lab(chain.source[chain.source_ptr[k] : chain.source_ptr[k + 1]]),
        )
        for k in range(chain.num_steps)
    ]


TEST_GAMES = {
    "fig1": games.farina_fig1,
    "fig2": games.farina_fig2,
    "sheriff-1-1-1": lambda: games.sheriff(max_bribe=1, max_items=1, rounds=1),
    "sheriff-2-2-2": lambda: games.sheriff(max_bribe=2, max_items=2, rounds=2),
    "battleship-2x2-1-2": lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    "battleship-1x3-1-2": lambda: games.battleship(rows=1, cols=3, ship_sizes=[1], shots=2),
    "battleship-1x3-2-2": lambda: games.battleship(rows=1, cols=3, ship_sizes=[2], shots=2),
    "goofspiel-sorted-3": lambda: games.goofspiel(2, 3, prizes="sorted"),
}


@pytest.mark.parametrize(
    "name", ["fig1", "fig2", "sheriff-1-1-1", "sheriff-2-2-2", "battleship-1x3-1-2", "goofspiel-sorted-3"]
)
def test_compiled_decompose_equals_the_literal_recursion(name):
    game = TEST_GAMES[name]()
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    assert sorted(chain_steps(chain, pairs), key=repr) == sorted(literal_decompose(game), key=repr)


@pytest.mark.parametrize("name", sorted(TEST_GAMES))
def test_verification_passes_on_every_test_game(name):
    game = TEST_GAMES[name]()
    chain = correlation_plan(game)
    report = verify(chain, game, max_dense=2500)
    assert report.passed, str(report)
    assert chain.num_entries == len(relevant_pairs(game))


def test_figure1_sequence_form_chain():
    game = games.farina_fig1()
    chain = sequence_form(game.sequences(0), game.sequence_labels(0))
    assert chain.notation() == "{1} ◁ Δ2 ◁ Δ2 ◁ Δ2 ◁ Δ3"
    # h1 = x[∅], h2 = x[1], h3 = x[1], h4 = x[2] (section 3.1)
    labels = game.sequence_labels(0)
    sources = [labels[int(chain.entry_index[chain.source[k]])] for k in range(chain.num_steps)]
    assert sources == ["∅", "1", "1", "2"]
    filled = [
        [labels[int(e)] for e in chain.entry_index[chain.target_ptr[k] : chain.target_ptr[k + 1]]]
        for k in range(chain.num_steps)
    ]
    assert filled == [["1", "2"], ["3", "4"], ["5", "6"], ["7", "8", "9"]]


def test_figure2_fill_order_and_dropped_constraints():
    game = games.farina_fig2()
    chain = correlation_plan(game)
    pairs = relevant_pairs(game)
    names = (game.sequence_labels(0), game.sequence_labels(1))
    phase = {}
    for k in range(chain.num_steps):
        for e in range(chain.target_ptr[k], chain.target_ptr[k + 1]):
            i = chain.entry_index[e]
            phase[(names[0][pairs.sigma1[i]], names[1][pairs.sigma2[i]])] = int(chain.level[k]) + 1
    phase[("∅", "∅")] = 1
    # Figure 2 (right): ∅ row is 1 then 4s; rows 1 and 2 are 2 then 3s.
    for s2 in ["1", "2", "3", "4"]:
        assert phase[("∅", s2)] == 4
        assert phase[("1", s2)] == phase[("2", s2)] == 3
    assert phase[("1", "∅")] == phase[("2", "∅")] == 2
    report = verify(chain, game)
    assert sorted(report.unused_constraints) == ["ξ[∅, 1] + ξ[∅, 2] = ξ[∅, ∅]", "ξ[∅, 3] + ξ[∅, 4] = ξ[∅, ∅]"]
    assert len(vsf_constraints(game).rhs) == 12  # ξ[∅,∅] = 1 plus the 11 of section 4.1


def _mutated(chain, **arrays):
    fields = dict(
        kind=chain.kind,
        target_ptr=chain.target_ptr,
        source_ptr=chain.source_ptr,
        source=chain.source,
        entry_index=chain.entry_index,
        describe_entry=chain.describe_entry,
        name=chain.name,
    )
    fields.update(arrays)
    return Chain(**fields)


def test_verification_fails_loudly_on_broken_chains():
    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    chain = correlation_plan(game)
    # A singleton step that sums the wrong entries.
    k = int(np.flatnonzero(chain.kind == SINGLETON)[0])
    source = chain.source.copy()
    source[chain.source_ptr[k]] = 0
    report = verify(_mutated(chain, source=source), game)
    assert not report.passed
    assert not report.to_dict()["random_points"]["passed"]
    # Two entries swapped between steps: labels no longer match what is filled.
    entry_index = chain.entry_index.copy()
    entry_index[[5, 40]] = entry_index[[40, 5]]
    assert not verify(_mutated(chain, entry_index=entry_index), game).passed
    # A step that reads an entry filled later.
    k = chain.num_steps // 2
    source = chain.source.copy()
    source[chain.source_ptr[k]] = chain.num_entries - 1
    report = verify(_mutated(chain, source=source), game)
    assert not report.passed and "not filled before" in report.to_dict()["structure"]["detail"]


def test_levels_are_views_of_one_step_order_that_the_minimizer_runs_without_a_copy():
    from efce.polytopes.triggers import trigger_deviations
    from efce.solvers.regret.algebra import chain_minimizer

    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    for chain in (correlation_plan(game), sequence_form(game.sequences(0)), trigger_deviations(game).chain):
        order = chain.step_order
        assert np.array_equal(np.concatenate(chain.levels), order)
        assert all(np.shares_memory(level, order) for level in chain.levels if len(level))
        assert np.all(np.diff(chain.level[order]) >= 0)
        assert chain_minimizer(chain, "rm+")._order is order


def test_validate_names_each_broken_rule_and_caches_nothing():
    from efce.polytopes.chain import ChainError

    chain = correlation_plan(games.sheriff(max_bribe=2, max_items=2, rounds=2))
    chain.validate()
    # The check must not leave per-source arrays behind (they cost ~1.9 GB on the large instance).
    assert "source_step" not in vars(chain)
    single = int(np.flatnonzero(chain.kind == SINGLETON)[0])
    simplex = int(np.flatnonzero(chain.kind == SIMPLEX)[0])
    late = chain.source.copy()
    late[chain.source_ptr[single]] = chain.target_ptr[single]
    empty_h = chain.source_ptr.copy()
    empty_h[simplex + 1 :] -= chain.source_ptr[simplex + 1] - chain.source_ptr[simplex]
    kind = chain.kind.copy()
    kind[simplex] = SINGLETON
    for broken, message in [
        (dict(source=late), f"step {single} reads an entry that is not filled"),
        (
            dict(
                source_ptr=empty_h,
                source=np.delete(
                    chain.source, np.arange(chain.source_ptr[simplex], chain.source_ptr[simplex + 1])
                ),
            ),
            f"step {simplex} has an empty h",
        ),
        (dict(kind=kind), "a singleton step must fill exactly one entry"),
    ]:
        with pytest.raises(ChainError, match=message):
            _mutated(chain, **broken).validate()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: games.kuhn(2), "private chance"),
        (lambda: games.leduc(2), "private chance"),
        (lambda: games.kuhn(3), "two-player"),
    ],
)
def test_decompose_refuses_games_outside_its_scope(make, message):
    with pytest.raises(GameError, match=message):
        correlation_plan(make())
    with pytest.raises(GameError, match=message):
        vsf_constraints(make())


def test_cli_decompose_json(capsys):
    from efce.experiments.cli import main

    assert main(["decompose", "sheriff:max_bribe=1,max_items=1,rounds=2", "--verify", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] is True and out["entries"] == out["relevant_pairs"]
    assert out["simplex_steps"] > 0 and out["singleton_steps"] > 0 and out["levels"] > 0
    assert set(out["checks"]) == {
        "structure",
        "random_points",
        "unused_constraints",
        "lp_vertices",
        "dimension",
    }
    assert main(["decompose", "kuhn", "--json"]) == 2
    assert "chance" in json.loads(capsys.readouterr().out)["error"]


def test_counting_and_filling_passes_call_one_compiled_variant(monkeypatch):
    """DECOMPOSE's two passes (count, then fill) pass arguments of the same types, so numba
    compiles one variant of the kernel for both: a second cost a first run 10 s more compiling."""
    import numba

    from efce.polytopes import decompose as module

    kernel, seen = module._decompose_kernel, []

    def recording(*args):
        seen.append(tuple(numba.typeof(a) for a in args))
        return kernel(*args)

    monkeypatch.setattr(module, "_decompose_kernel", recording)
    correlation_plan(games.sheriff(max_bribe=1, max_items=1, rounds=1))
    assert len(seen) == 2
    assert seen[0] == seen[1]


def _table_types(spec):
    from efce.polytopes.decompose import _Tables

    tables = vars(_Tables(games.make_game(spec)))
    return {k: tuple(a.dtype for a in v) if isinstance(v, tuple) else v.dtype for k, v in tables.items()}


@pytest.mark.parametrize(
    "spec",
    [
        "sheriff:max_bribe=1,max_items=1,rounds=1",
        "goofspiel:players=2,ranks=3,prizes=random",  # public chance: pairs without a critical player
        "battleship:rows=2,cols=2,ship_sizes=[1],shots=1",
    ],
)
def test_decompose_tables_have_one_layout_with_int32_connected_pair_tables(spec):
    """The tables over connected infoset pairs are int32 (half the bytes of DECOMPOSE's largest
    tables), and every game, with or without chance moves, gets the same types: one compiled
    variant of the kernel."""
    types = _table_types(spec)
    assert types == _table_types("farina-fig2")
    assert types["conn_pos"] == types["conn_inf"] == (np.dtype(np.int32),) * 2
    for name in ("crit_s2", "crit_n1", "crit_i1", "crit_n2", "crit_j2", "multi_i", "multi_j"):
        assert types[name] == np.dtype(np.int32), name
