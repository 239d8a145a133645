"""The trigger tables' index arrays are int32 and share the sequence space's own arrays (issue 39:
large Battleship's rm held 1.1 bytes per relevant pair more with int64 copies); the offsets that
count nonzeros stay int64, so that a game with more than 2³¹ of them still indexes them.  Each
field has one kind of array (read-only or writable) for every game and concept: EFCE's
``trig_count`` once was the space's read-only array and the coarse concepts' a new one, and a
kernel variant compiled for one kind ran the other as Python inside ``lp-pdlp``'s clock
(``tests/baselines/test_pdlp_clock_runs_compiled.py`` caught it).  The positions, preorder and
children come from the space's infoset tree, int32 too (0.6 bytes per pair less on large), as
is Y's ``block_start`` where Y's entries fit."""

import numpy as np
import pytest

from efce import games
from efce.concepts import CONCEPTS
from efce.games.relevant import relevant_pairs
from efce.polytopes.decompose import correlation_plan
from efce.polytopes.triggers import trigger_deviations
from efce.solvers.evaluation.payoff_operator import build_payoff_operator

#: Per infoset, sequence or trigger slot: counts that fit int32 in any game.
INT32_FIELDS = (
    "first",
    "num_actions",
    "infoset_parent",
    "pos",
    "pre",
    "end",
    "cum",
    "child_ptr",
    "child_inf",
    "term_ptr",
    "trig_count",
    "trig_slot",
    "slot_trigger",
    "follow_trigger",
)
#: Offsets into the lines and rows, which count nonzeros.
INT64_FIELDS = ("line_start", "row_start")
#: The table's field and the sequence space's array it is.
SHARED_WITH_SPACE = {
    "first": "infoset_first_seq",
    "num_actions": "infoset_num_actions",
    "infoset_parent": "infoset_parent_seq",
}


@pytest.mark.parametrize("concept", sorted(CONCEPTS))
@pytest.mark.parametrize("spec", ["farina-fig1", "sheriff:max_bribe=1,max_items=1,rounds=1"])
def test_trigger_tables_hold_int32_indices_without_copies(spec, concept):
    game = games.spec.make_game(spec)
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    entry_of_pair = np.empty(len(pairs), dtype=np.int32)
    entry_of_pair[chain.entry_index] = np.arange(len(pairs))
    triggers = trigger_deviations(game, concept=concept)
    operator = build_payoff_operator(game, pairs, triggers, entry_of_pair)
    assert triggers.block_preorder_start.dtype == np.int32
    assert triggers.block_start.dtype == np.int32
    for i, table in enumerate(operator.tables.players):
        space = game.sequences(i)
        for field in INT32_FIELDS:
            assert getattr(table, field).dtype == np.int32, (i, field)
        for field in INT64_FIELDS:
            assert getattr(table, field).dtype == np.int64, (i, field)
        for field, own in SHARED_WITH_SPACE.items():
            assert np.shares_memory(getattr(table, field), getattr(space, own)), (i, field)
            # read-only for every game, so the kernels reading them compile one variant
            assert not getattr(table, field).flags.writeable, (i, field)
        assert table.trig_count.flags.writeable  # a new array for every concept
        assert operator.slot_base[i].dtype == np.int32
