"""Sheriff, the bargaining benchmark of Farina, Ling, Fang and Sandholm (2019c), "Correlation in
extensive-form games: saddle-point formulation and benchmarks" (NeurIPS 2019), a simplified
*Sheriff of Nottingham*, with exactly the rules and defaults of OpenSpiel's ``sheriff``
(``open_spiel/games/sheriff/sheriff.cc``).

Rules
-----
* The Smuggler (player 1) secretly loads ``0 .. max_items`` illegal items into the cargo.
* Then ``rounds`` bargaining rounds follow.  In each, the Smuggler offers a bribe
  ``0 .. max_bribe`` (public), and the Sheriff (player 2) answers whether he would inspect the
  cargo (public).  Only the final round is binding: the last bribe is the one paid (if the cargo
  is not inspected) and the Sheriff's last answer is the actual inspection decision.
* Payoffs (Smuggler, Sheriff):

  - not inspected: ``(items * item_value - bribe, bribe)`` with ``bribe`` the last bribe;
  - inspected, ``items >= 1``: ``(-items * item_penalty, items * item_penalty)``;
  - inspected, no illegal item: ``(sheriff_penalty, -sheriff_penalty)``.

Vocabulary: *max bribe* = ``max_bribe``, *max items* = ``max_items``, *rounds* = ``rounds``
(OpenSpiel ``num_rounds``), *item value* = ``item_value``, *penalty* (per illegal item found) =
``item_penalty``, *inspection cost* (paid by the Sheriff to the Smuggler for inspecting a legal
cargo) = ``sheriff_penalty``.

With the defaults (bribe 3, items 3, 4 rounds): 2,341 / 2,340 infosets and 9,365 / 4,681
sequences (empty sequence included), 16,384 terminals.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from efce.errors import GameError
from efce.games.game import TERMINAL, Game
from efce.games.generators.builder import Expansion, build_game, edges_from_counts
from efce.games.generators.params import GameGenerator, Param
from efce.games.resources.estimate import SizeEstimate, check_size

SMUGGLER, SHERIFF = 0, 1


#: Parameters of a game spec string (type and range; defaults: the function's own), read by
#: :data:`efce.games.spec.PARAMETERS`.
PARAMETERS = {
    "max_bribe": Param("int", 0, 1000),
    "max_items": Param("int", 1, 1000),
    "rounds": Param("int", 1, 1000),
    "item_value": Param("number", 0),
    "item_penalty": Param("number", 0),
    "sheriff_penalty": Param("number", 0),
}


def _int_param(value, name: str, minimum: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (Integral, np.integer, Real, np.floating))
        or not float(value).is_integer()
    ):
        raise GameError(f"sheriff: {name} must be an integer, got {value!r}")
    # Integers convert exactly; an integral float (checked above) goes through float().
    value = int(value) if isinstance(value, (Integral, np.integer)) else int(float(value))
    if value < minimum:
        raise GameError(f"sheriff: {name} must be at least {minimum}, got {value}")
    return value


def _value_param(value, name: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise GameError(f"sheriff: {name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or value < 0:
        raise GameError(f"sheriff: {name} must be finite and >= 0, got {value}")
    return value


def sheriff(
    max_bribe: int = 3,
    max_items: int = 3,
    rounds: int = 4,
    item_value: float = 1.0,
    item_penalty: float = 2.0,
    sheriff_penalty: float = 3.0,
) -> Game:
    """Sheriff (Farina et al. 2019c; OpenSpiel ``sheriff``).

    Parameters
    ----------
    max_bribe : int
        Largest bribe the Smuggler may offer in a round (>= 0); bribes are ``0..max_bribe``.
    max_items : int
        Largest number of illegal items the cargo holds (>= 1).
    rounds : int
        Number of bargaining rounds (>= 1); the last one is binding.
    item_value : float
        Smuggler's gain per illegal item that gets through (>= 0).
    item_penalty : float
        Per-item penalty the Smuggler pays the Sheriff when caught (>= 0).
    sheriff_penalty : float
        Inspection cost: what the Sheriff pays the Smuggler for inspecting a legal cargo (>= 0).
    """
    max_bribe = _int_param(max_bribe, "max_bribe", 0)
    max_items = _int_param(max_items, "max_items", 1)
    rounds = _int_param(rounds, "rounds", 1)
    item_value = _value_param(item_value, "item_value")
    item_penalty = _value_param(item_penalty, "item_penalty")
    sheriff_penalty = _value_param(sheriff_penalty, "sheriff_penalty")
    check_size(
        sheriff_size,
        f"sheriff:max_bribe={max_bribe},max_items={max_items},rounds={rounds}",
        max_bribe=max_bribe,
        max_items=max_items,
        rounds=rounds,
    )
    nb = max_bribe + 1
    # Tokens: 1 + items (Smuggler only); then public 1 + (max_items+1) + bribe; then public
    # feedback 1 + (max_items+1) + nb + {0: no inspection, 1: inspection}.
    bribe_base = 1 + (max_items + 1)
    feedback_base = bribe_base + nb

    def expand(state):
        t = int(state["t"][0])
        F = len(state["t"])
        items, bribe, inspect = state["items"], state["bribe"], state["inspect"]
        if t == 0:  # the Smuggler loads the cargo
            k = max_items + 1
            e_parent, e_action = edges_from_counts([k])
            obs = np.zeros((k, 2), dtype=np.int64)
            obs[:, SMUGGLER] = 1 + e_action
            child = {
                "t": np.ones(k, np.int64),
                "items": e_action,
                "bribe": np.zeros(k, np.int64),
                "inspect": np.zeros(k, bool),
            }
            return Expansion(
                np.array([SMUGGLER]), np.zeros((0, 2)), e_parent, e_action, obs, child, edge_label=e_action
            )
        if t == 2 * rounds + 1:  # all rounds played
            caught = inspect & (items > 0)
            legal_inspected = inspect & (items == 0)
            smuggler = np.where(
                caught,
                -items * item_penalty,
                np.where(legal_inspected, sheriff_penalty, items * item_value - bribe),
            )
            sheriff_pay = np.where(
                caught, items * item_penalty, np.where(legal_inspected, -sheriff_penalty, bribe.astype(float))
            )
            payoffs = np.stack([smuggler, sheriff_pay], axis=1).astype(np.float64)
            return Expansion(
                np.full(F, TERMINAL),
                payoffs,
                np.zeros(0, np.int64),
                np.zeros(0, np.int64),
                np.zeros((0, 2), np.int64),
                {"t": np.zeros(0, np.int64)},
            )
        smuggler_turn = t % 2 == 1
        k = nb if smuggler_turn else 2
        e_parent, e_action = edges_from_counts(np.full(F, k))
        child = {
            "t": np.full(len(e_parent), t + 1, np.int64),
            "items": items[e_parent],
            "bribe": e_action if smuggler_turn else bribe[e_parent],
            "inspect": inspect[e_parent] if smuggler_turn else e_action.astype(bool),
        }
        token = (bribe_base if smuggler_turn else feedback_base) + e_action
        obs = np.repeat(token[:, None], 2, axis=1)
        label = (max_items + 1 + e_action) if smuggler_turn else (max_items + 1 + nb + e_action)
        return Expansion(
            np.full(F, SMUGGLER if smuggler_turn else SHERIFF),
            np.zeros((0, 2)),
            e_parent,
            e_action,
            obs,
            child,
            edge_label=label,
        )

    def action_label(player: int, code: int) -> str:
        if code <= max_items:
            return f"load {code}"
        if code <= max_items + nb:
            return f"bribe {code - max_items - 1}"
        return "inspect" if code - max_items - 1 - nb else "no inspection"

    def token_label(player: int, token: int) -> str:
        if token == 0:
            return ""
        if token < bribe_base:
            return f"items {token - 1}"
        if token < feedback_base:
            return f"bribe {token - bribe_base}"
        return "inspect" if token - feedback_base else "no inspection"

    root = {
        "t": np.zeros(1, np.int64),
        "items": np.zeros(1, np.int64),
        "bribe": np.zeros(1, np.int64),
        "inspect": np.zeros(1, bool),
    }
    return build_game(
        name=(
            f"sheriff:max_bribe={max_bribe},max_items={max_items},rounds={rounds},"
            f"item_value={item_value:g},item_penalty={item_penalty:g},"
            f"sheriff_penalty={sheriff_penalty:g}"
        ),
        num_players=2,
        root_state=root,
        expand=expand,
        token_label=token_label,
        action_label=action_label,
        player_names=["Smuggler", "Sheriff"],
    )


# ------------------------------------------------------------------------------ size estimate
def sheriff_size(max_bribe: int, max_items: int, rounds: int, **_values: object) -> SizeEstimate:
    """Exact node and terminal counts of :func:`sheriff` from its parameters (a lower bound beyond
    1000 rounds, too many to count quickly)."""
    if rounds > 1000:  # at least 2^rounds nodes; counting them is slow
        return SizeEstimate(2**rounds, 2**rounds, 2, exact=False, lower_bound=True)
    count = max_items + 1
    total = 1 + count
    for _ in range(rounds):
        count *= max_bribe + 1
        total += count
        count *= 2
        total += count
    return SizeEstimate(total, count, 2)


#: The game spec strings name (:data:`efce.games.spec.GENERATORS`).
GAMES = (GameGenerator("sheriff", sheriff, PARAMETERS, estimate=sheriff_size),)


__all__ = ["sheriff", "sheriff_size"]
