"""Reading and writing Gambit's extensive-form ``.efg`` files (format ``EFG 2 R``).

The format (https://gambitproject.readthedocs.io/en/latest/formats.html) is a header ::

    EFG 2 R "title" { "Player 1" "Player 2" }
    "optional comment"

followed by the nodes of the tree in depth-first preorder, one entry per node::

    p "node name" player infoset "infoset name" { "a1" "a2" } outcome "outcome name" { payoffs }
    c "node name" infoset "infoset name" { "a1" 1/2 "a2" 1/2 } outcome ...
    t "node name" outcome "outcome name" { payoffs }

Players are numbered from 1; chance moves are ``c`` entries.  Infoset numbers are per player
(per chance for ``c``); the infoset name and action list need only appear at the first node of
an infoset.  Outcomes are numbered globally; the name and payoff block need only appear at the
first node that uses an outcome, ``0`` means "no outcome".  Outcomes may sit on internal nodes:
the payoff of a terminal is the sum of the outcomes on its path.  Numbers are integers,
decimals (``.25``, ``1.5e-3``) or fractions (``1/3``), read exactly; payoffs may be separated by
commas.  Numbers must be finite and at most :data:`~games.game.MAX_ABS_PAYOFF` (1e100) in
absolute value: ``nan``, ``inf``, ``1e400`` or ``1e308`` are refused with their line rather than
overflowing later in the solvers.  Whitespace (including newlines) is free between tokens; any
Unicode whitespace counts (a no-break space U+00A0 pasted from a web page, U+2028), but only
``\n`` starts a new line for the line numbers in messages, as in text editors.  Other control
characters outside quoted strings are refused as ``file:line: unexpected character U+XXXX``.
As an extension, ``#`` starts a comment running to the end of the line (outside quoted
strings); Gambit itself does not accept comments, so :func:`dumps` never writes them.

An infoset without a name is labelled ``P:N``, its position (from 1) among player P's infosets
in the game's own order, which is also the number :func:`dumps` writes and the positional name
device files use (:mod:`solvers.evaluation.device`) — not the file's infoset number, which may differ.

The game comment is kept as ``game.comment`` and the name of the outcome attached to each
terminal node as ``game.outcome_names`` (one per terminal, in the game's terminal order), so
that :func:`save` writes them back.  Names of outcomes on internal nodes are not kept: the
writer gives every terminal its own outcome holding the payoffs summed along the path.

Every malformed input raises :class:`~games.game.GameError` with a one-line message of the form
``file:line: what is wrong``.
"""

from __future__ import annotations

import os
import re
from fractions import Fraction

import numpy as np

from efce.errors import GameError
from efce.games.game import CHANCE, MAX_ABS_PAYOFF, PROBABILITY_TOLERANCE, TERMINAL, ExplicitLabels, Game
from efce.interrupts import check_stop

__all__ = ["load", "loads", "save", "dumps"]


# ---------------------------------------------------------------------------------- labels
# ---------------------------------------------------------------------------------- lexer
_LEXER = re.compile(
    r"""
    (?P<nl>\n)
  | (?P<ws>[^\S\n]+)
  | (?P<comment>\#[^\n]*)
  | (?P<punct>[{},])
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<open>")
  | (?P<word>[^\s{},"\#\x00-\x1f\x7f-\x9f]+)
  | (?P<bad>.)
""",
    re.VERBOSE | re.DOTALL,
)

_NUMBER = re.compile(r"[+-]?(?:\d+/\d+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)", re.ASCII)
_INTEGER = re.compile(r"\+?\d+", re.ASCII)
_EXPONENT = re.compile(r"[eE]([+-]?\d+)$", re.ASCII)
#: Longest number (characters) and largest decimal exponent read; beyond them exact arithmetic
#: would be slow (``1e999999999`` is a billion-digit integer) long before it is meaningful.
_MAX_NUMBER_CHARS = 400
_MAX_EXPONENT = 400
_NON_FINITE = ("nan", "inf", "infinity")
_ONE_LINE = {
    c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in [*range(0x20), 0x7F, 0x85, 0x2028, 0x2029]
}
_ONE_LINE.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
_UNESCAPE = re.compile(r'\\(["\\])')

#: Tokens (and nodes) read between two looks at the stop request (a power of two, minus one).
_CHECK_EVERY = 2**16 - 1

# token kinds
_STR, _NUM, _SYM, _EOF = "string", "number", "symbol", "end of file"


class _Token:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind: str, text: str, line: int):
        self.kind, self.text, self.line = kind, text, line

    def describe(self) -> str:
        if self.kind == _EOF:
            return "end of file"
        if self.kind == _STR:
            text = self.text if len(self.text) <= 30 else self.text[:27] + "..."
            return f"string {_quote(text)}"
        if self.kind in "{},":
            return f"'{self.kind}'"
        return f"{self.kind} '{self.text}'"


def _tokenize(text: str, source: str) -> list[_Token]:
    tokens: list[_Token] = []
    line = 1
    pos, end = 0, len(text)
    match = _LEXER.match
    count = 0
    while pos < end:
        count += 1
        if not count & _CHECK_EVERY:  # a stop request is honoured between chunks of the file
            check_stop(f"reading {source}")
        m = match(text, pos)
        assert m is not None  # the last alternative, (?P<bad>.) under DOTALL, matches any character
        kind = m.lastgroup
        value = m.group()
        if kind == "nl":
            line += 1
        elif kind == "str":
            tokens.append(_Token(_STR, _UNESCAPE.sub(r"\1", value[1:-1]), line))
            line += value.count("\n")
        elif kind == "word":
            tokens.append(_Token(_NUM if _NUMBER.fullmatch(value) else _SYM, value, line))
        elif kind == "punct":
            tokens.append(_Token(value, value, line))
        elif kind == "open":
            raise GameError(f"{source}:{line}: unterminated string (missing closing '\"')")
        elif kind == "bad":
            raise GameError(
                f"{source}:{line}: unexpected character U+{ord(value):04X} (outside a quoted string)"
            )
        pos = m.end()
    # End of file is reported at the last line holding a token (a truncated file's last line).
    tokens.append(_Token(_EOF, "", tokens[-1].line if tokens else 1))
    return tokens


# ---------------------------------------------------------------------------------- parser
class _Parser:
    def __init__(self, text: str, source: str):
        self.source = source
        self.tokens = _tokenize(text, source)
        self.pos = 0

    # -- token helpers
    def error(self, line: int, message: str) -> GameError:
        # Names quoted from the file may hold line breaks; the message stays on one line.
        return GameError(f"{self.source}:{line}: {message.translate(_ONE_LINE)}")

    def peek(self) -> _Token:
        return self.tokens[self.pos]

    def next(self) -> _Token:
        tok = self.tokens[self.pos]
        if tok.kind != _EOF:
            self.pos += 1
        return tok

    def expect(self, kind: str, what: str) -> _Token:
        tok = self.next()
        if tok.kind != kind:
            raise self.unexpected(tok, what)
        return tok

    def unexpected(self, tok: _Token, what: str) -> GameError:
        if tok.kind == _EOF:
            return self.error(tok.line, f"unexpected end of file: expected {what}")
        if tok.kind == _SYM and tok.text.lower().lstrip("+-") in _NON_FINITE:
            return self.error(
                tok.line,
                f"expected {what}, found the non-finite number '{tok.text}' (numbers must be finite)",
            )
        return self.error(tok.line, f"expected {what}, found {tok.describe()}")

    def number(self, tok: _Token) -> Fraction:
        """The exact value of a number token; refuses values that are not finite doubles of a
        sane magnitude (|x| <= :data:`~games.game.MAX_ABS_PAYOFF`)."""
        text = tok.text
        exponent = _EXPONENT.search(text)
        if len(text) > _MAX_NUMBER_CHARS or (exponent and abs(int(exponent.group(1))) > _MAX_EXPONENT):
            raise self.error(
                tok.line,
                f"number '{_shorten(text)}' is out of range (numbers must "
                f"be finite, at most {MAX_ABS_PAYOFF:g} in absolute value)",
            )
        try:
            value = Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise self.error(tok.line, f"invalid number '{text}'") from None
        if abs(value) > MAX_ABS_PAYOFF:
            raise self.error(
                tok.line,
                f"number '{text}' is too large (numbers must be at most "
                f"{MAX_ABS_PAYOFF:g} in absolute value)",
            )
        return value

    def integer(self, what: str, minimum: int = 0) -> tuple[int, _Token]:
        tok = self.expect(_NUM, what)
        if not _INTEGER.fullmatch(tok.text) or len(tok.text) > 19 or not minimum <= int(tok.text) < 2**62:
            raise self.error(
                tok.line, f"expected {what} (an integer >= {minimum}), found '{_shorten(tok.text)}'"
            )
        return int(tok.text), tok

    # -- the file
    def parse(self) -> Game:
        tok = self.next()
        if tok.kind != _SYM or tok.text != "EFG":
            raise self.unexpected(tok, "the file header 'EFG 2 R'")
        tok = self.next()
        if tok.kind != _NUM or tok.text != "2":
            raise self.error(tok.line, f"only EFG version 2 is supported, found {tok.describe()}")
        tok = self.next()
        if tok.kind != _SYM or tok.text not in ("R", "D"):
            raise self.unexpected(tok, "the number type 'R' or 'D' after 'EFG 2'")
        title = self.expect(_STR, "the game title (a quoted string)").text
        self.expect("{", "'{' before the player names")
        players: list[str] = []
        while True:
            tok = self.next()
            if tok.kind == "}":
                break
            if tok.kind != _STR:
                raise self.unexpected(tok, "a player name (quoted string) or '}'")
            players.append(tok.text)
        if not players:
            raise self.error(tok.line, "the game has no players")
        self.num_players = len(players)
        comment = self.next().text if self.peek().kind == _STR else ""
        self.parse_tree()
        tok = self.peek()
        if tok.kind != _EOF:
            raise self.error(
                tok.line, f"unexpected {tok.describe()} after the end of the game tree (trailing garbage)"
            )
        return self.build(title, players, comment)

    # -- the tree
    def parse_tree(self) -> None:
        n = self.num_players
        # Per node, in file (preorder) order.
        self.parent: list[int] = []
        self.action: list[int] = []
        self.player: list[int] = []
        self.key: list[int] = []
        self.prob: list[float] = []
        self.chance_names: dict[int, list[str]] = {}
        self.terminal_payoffs: list[tuple] = []
        # Registries: infosets per player (number -> (name, actions, line)), chance infosets
        # (number -> (name, actions, probs, line)), outcomes (number -> (payoffs, line)).
        self.infosets: list[dict[int, tuple[str, list[str], int]]] = [{} for _ in range(n)]
        self.chance_infosets: dict[int, tuple[str, list[str], list[Fraction], int]] = {}
        self.outcomes: dict[int, tuple[tuple[Fraction, ...], int]] = {}
        self.outcome_names: dict[int, str] = {}
        # Per terminal (file order): the name of the outcome attached to the terminal node.
        self.terminal_outcome_names: list[str] = []
        self.last_outcome_name = ""
        # Perfect recall: each player's own history at every infoset, with the first line.
        self.recall: list[dict[int, tuple[object, int]]] = [{} for _ in range(n)]
        zero_history = (None,) * n
        # Stack entries: [node, num_children, next_action, accumulated payoffs, histories, probs]
        stack: list[list] = []
        parent, action, acc, hist, prob = -1, -1, None, zero_history, 1.0
        while True:
            node, k, acc_node, probs = self.parse_node(parent, action, acc, hist, prob)
            if not node & _CHECK_EVERY:
                check_stop(f"reading {self.source}")
            if k:
                if self.player[node] >= 0:
                    p = self.player[node]
                    child_hist = [hist[:p] + ((self.key[node], a),) + hist[p + 1 :] for a in range(k)]
                else:
                    child_hist = [hist] * k
                stack.append([node, k, 0, acc_node, child_hist, probs])
            while stack and stack[-1][2] == stack[-1][1]:
                stack.pop()
            if not stack:
                return
            top = stack[-1]
            parent, action, acc = top[0], top[2], top[3]
            hist = top[4][action]
            prob = float(top[5][action]) if top[5] is not None else 1.0
            top[2] += 1

    def parse_node(self, parent, action, acc, hist, prob):
        tok = self.next()
        node = len(self.parent)
        line = tok.line
        if tok.kind == _EOF:
            raise self.error(
                line, "unexpected end of file: expected a node ('p', 'c' or 't'); the game tree is incomplete"
            )
        if tok.kind != _SYM or tok.text not in ("p", "c", "t"):
            raise self.error(line, f"unknown node type {tok.describe()} (expected 'p', 'c' or 't')")
        kind = tok.text
        name = self.expect(_STR, f"a node name (quoted string) after '{kind}'").text
        self.parent.append(parent)
        self.action.append(action)
        self.prob.append(prob)
        probs = None
        if kind == "t":
            self.player.append(TERMINAL)
            self.key.append(-1)
            k = 0
        elif kind == "p":
            p, ptok = self.integer("a player number")
            if not 1 <= p <= self.num_players:
                raise self.error(
                    ptok.line,
                    f"player {p} does not exist: the header names "
                    f"{self.num_players} players (numbered from 1; chance "
                    f"moves are 'c' nodes)",
                )
            p -= 1
            number, itok = self.integer("an infoset number")
            k = self.parse_player_infoset(p, number, itok.line)
            self.player.append(p)
            self.key.append(number)
            self.check_recall(p, number, hist, line)
        else:
            number, itok = self.integer("an infoset number")
            names, probs = self.parse_chance_infoset(number, itok.line, name)
            k = len(names)
            self.player.append(CHANCE)
            self.key.append(-1)
            self.chance_names[node] = names
        acc = self.parse_outcome(acc)
        if kind == "t":
            if acc is not None and any(abs(x) > MAX_ABS_PAYOFF for x in acc):
                raise self.error(
                    line,
                    f"the payoffs of this terminal (summed along its path) "
                    f"exceed {MAX_ABS_PAYOFF:g} in absolute value",
                )
            self.terminal_payoffs.append(acc)
            self.terminal_outcome_names.append(self.last_outcome_name)
        return node, k, acc, probs

    def parse_action_list(self, what: str, with_probs: bool):
        self.expect("{", f"'{{' after {what}")
        names, probs = [], []
        while True:
            tok = self.next()
            if tok.kind == "}":
                break
            if tok.kind != _STR:
                raise self.unexpected(tok, "an action name (quoted string) or '}'")
            names.append(tok.text)
            if with_probs:
                ptok = self.next()
                if ptok.kind != _NUM:
                    raise self.unexpected(ptok, f"the probability of chance action {_quote(tok.text)}")
                probs.append((self.number(ptok), ptok.line))
        if not names:
            raise self.error(tok.line, f"empty action list after {what}")
        return names, probs

    def parse_player_infoset(self, p: int, number: int, line: int) -> int:
        known = self.infosets[p].get(number)
        label = f"player {p + 1}'s infoset {number}"
        if self.peek().kind != _STR:
            if known is None:
                tok = self.peek()
                if tok.kind == "{":
                    raise self.error(
                        tok.line,
                        f"expected the infoset name (quoted string) before the action list of {label}",
                    )
                raise self.error(
                    line,
                    f"{label} is used before its actions are listed "
                    f"(expected an infoset name and action list)",
                )
            return len(known[1])
        name = self.next().text
        names, _ = self.parse_action_list("infoset name", with_probs=False)
        if known is None:
            self.infosets[p][number] = (name, names, line)
            return len(names)
        old_name, old_names, old_line = known
        described = _infoset_description(p, number, old_name)
        if len(old_names) != len(names):
            raise self.error(
                line, f"{described} has {len(names)} actions here but {len(old_names)} at line {old_line}"
            )
        if old_names != names:
            raise self.error(
                line,
                f"{described} lists actions {_quote_list(names)} here but "
                f"{_quote_list(old_names)} at line {old_line}",
            )
        if old_name != name:
            raise self.error(
                line, f"{described} is named {_quote(name)} here but {_quote(old_name)} at line {old_line}"
            )
        return len(names)

    def parse_chance_infoset(self, number: int, line: int, node_name: str):
        known = self.chance_infosets.get(number)
        if self.peek().kind != _STR:
            if known is None:
                raise self.error(
                    line, f"chance infoset {number} is used before its actions and probabilities are listed"
                )
            return known[1], known[2]
        name = self.next().text
        names, probs_lines = self.parse_action_list("infoset name", with_probs=True)
        probs = [q for q, _ in probs_lines]
        where = f"chance node {_quote(node_name)}" if node_name else "the chance node"
        for a, (q, qline) in zip(names, probs_lines, strict=True):
            if q < 0:
                raise self.error(
                    qline,
                    f"negative probability {q} for action {_quote(a)} at {where} (chance infoset {number})",
                )
        total = sum(probs, Fraction(0))
        if abs(float(total) - 1.0) > PROBABILITY_TOLERANCE:
            raise self.error(
                line,
                f"chance probabilities at {where} (chance infoset {number}) "
                f"sum to {total} = {float(total):.12g}, not 1",
            )
        if known is not None:
            old_name, old_names, old_probs, old_line = known
            described = f"chance infoset {number}" + (f" {_quote(old_name)}" if old_name else "")
            if old_names != names:
                raise self.error(
                    line,
                    f"{described} lists actions {_quote_list(names)} here but "
                    f"{_quote_list(old_names)} at line {old_line}",
                )
            if old_probs != probs:
                raise self.error(
                    line, f"{described} has probabilities different from those at line {old_line}"
                )
            if old_name != name:
                raise self.error(
                    line,
                    f"{described} is named {_quote(name)} here but {_quote(old_name)} at line {old_line}",
                )
        else:
            self.chance_infosets[number] = (name, names, probs, line)
        return names, probs

    def parse_outcome(self, acc):
        number, tok = self.integer("an outcome number (0 for none)")
        nxt = self.peek()
        if nxt.kind in (_STR, "{"):
            if number == 0:
                raise self.error(nxt.line, "outcome 0 means 'no outcome' and cannot have a name or payoffs")
            if nxt.kind == _STR:
                self.outcome_names.setdefault(number, self.next().text)
            self.expect("{", f"'{{' before the payoffs of outcome {number}")
            payoffs = []
            while True:
                t = self.next()
                if t.kind == "}":
                    break
                if t.kind == ",":
                    continue
                if t.kind != _NUM:
                    raise self.unexpected(t, f"a payoff (number) or '}}' in outcome {number}")
                payoffs.append(self.number(t))
            if len(payoffs) != self.num_players:
                raise self.error(
                    tok.line,
                    f"outcome {number} has {len(payoffs)} payoffs, expected "
                    f"{self.num_players} (one per player)",
                )
            payoffs = tuple(payoffs)
            known = self.outcomes.get(number)
            if known is None:
                self.outcomes[number] = (payoffs, tok.line)
            elif known[0] != payoffs:
                raise self.error(
                    tok.line,
                    f"outcome {number} has payoffs "
                    f"{_format_payoffs(payoffs)} here but "
                    f"{_format_payoffs(known[0])} at line {known[1]}",
                )
        elif number == 0:
            self.last_outcome_name = ""
            return acc
        else:
            known = self.outcomes.get(number)
            if known is None:
                raise self.error(tok.line, f"outcome {number} is used before its payoffs are given")
            payoffs = known[0]
        self.last_outcome_name = self.outcome_names.get(number, "")
        if acc is None:
            return payoffs
        return tuple(a + b for a, b in zip(acc, payoffs, strict=True))

    def check_recall(self, p: int, number: int, hist, line: int) -> None:
        own = hist[p]
        known = self.recall[p].get(number)
        if known is None:
            self.recall[p][number] = (own, line)
        elif known[0] != own:
            name = self.infosets[p][number][0]
            raise self.error(
                line,
                f"imperfect recall: {_infoset_description(p, number, name)} "
                f"(first at line {known[1]}) is reached here through a "
                f"different history of player {p + 1}'s own moves",
            )

    # -- the Game
    def build(self, title: str, players: list[str], comment: str = "") -> Game:
        n = self.num_players
        player = np.array(self.player, dtype=np.int64)
        key = np.array(self.key, dtype=np.int64)
        parent = np.array(self.parent, dtype=np.int64)
        # Unnamed infosets are labelled by their position P:N (from 1) in the game's order, the
        # one numbering used by `efce info --infosets`, device files and `dumps`; the file's own
        # infoset number would read as a position and silently name another infoset.
        order_keys = bfs_infoset_keys(parent, player, key, n)
        names = [{num: info[0] for num, info in self.infosets[p].items()} for p in range(n)]
        for p in range(n):
            for position, k in enumerate(order_keys[p]):
                names[p][k] = names[p][k] or f"{p + 1}:{position + 1}"
        actions = [{num: info[1] for num, info in self.infosets[p].items()} for p in range(n)]
        payoffs = np.array(
            [[float(x) for x in acc] if acc is not None else [0.0] * n for acc in self.terminal_payoffs],
            dtype=np.float64,
        ).reshape(-1, n)
        labels = ExplicitLabels(
            [[names[p][k] for k in order_keys[p]] for p in range(n)],
            [[actions[p][k] for k in order_keys[p]] for p in range(n)],
        )
        name = title or os.path.splitext(os.path.basename(self.source))[0] or "game"

        def finish(game: Game) -> dict:
            # Authoritative labels from the game's own numbering.
            new_position = np.empty(game.num_nodes, dtype=np.int64)
            new_position[game.original_order] = np.arange(game.num_nodes)
            # from_tree records how it renumbered the nodes and the infosets
            assert game.original_order is not None and game.infoset_keys is not None
            labels = ExplicitLabels(
                [
                    [
                        self.infosets[p][int(k)][0] or f"{p + 1}:{i + 1}"
                        for i, k in enumerate(game.infoset_keys[p])
                    ]
                    for p in range(n)
                ],
                [[actions[p][int(k)] for k in game.infoset_keys[p]] for p in range(n)],
                {int(new_position[v]): names_ for v, names_ in self.chance_names.items()},
            )
            # Terminals are numbered in breadth-first order; file order is preorder.
            file_terminal_row = np.cumsum(player == TERMINAL) - 1
            rows = file_terminal_row[game.original_order[game.terminal_nodes]]
            return {"labels": labels, "outcome_names": [self.terminal_outcome_names[int(r)] for r in rows]}

        try:
            game = Game.from_tree(
                num_players=n,
                parent=parent,
                action=np.array(self.action, dtype=np.int64),
                player=player,
                infoset_key=key,
                terminal_payoffs=payoffs,
                chance_prob=np.array(self.prob, dtype=np.float64),
                labels=labels,
                name=name,
                player_names=players,
                comment=comment,
                finish=finish,
                infoset_describer=lambda p, k: _infoset_description(
                    p, k, self.infosets[p][k][0] if k in self.infosets[p] else ""
                ),
            )
        except GameError as exc:
            raise GameError(f"{self.source}: {exc}") from None
        return game


def bfs_infoset_keys(
    parent: np.ndarray, player: np.ndarray, key: np.ndarray, num_players: int
) -> list[list[int]]:
    """Per player, the infoset keys in the order :meth:`Game.from_tree` will number them, for a
    tree given in depth-first preorder with children in action order (a stable sort of such a
    preorder by depth is the breadth-first order).  Used to label infosets in errors raised
    while the game is being built (by this reader and by :mod:`games.formats.openspiel`).

    Returns
    -------
    list of list of int
        Per player, the distinct keys of that player's nodes, in the order their infosets
        are numbered.
    """
    depth = np.zeros(len(parent), dtype=np.int64)
    for v in range(1, len(parent)):
        depth[v] = depth[parent[v]] + 1
    bfs = np.argsort(depth, kind="stable")
    out = []
    for p in range(num_players):
        nodes = bfs[player[bfs] == p]
        _, first = np.unique(key[nodes], return_index=True)
        out.append([int(k) for k in key[nodes][np.sort(first)]])
    return out


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _shorten(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _quote_list(names: list[str]) -> str:
    return "{ " + " ".join(_quote(a) for a in names) + " }"


def _format_payoffs(payoffs) -> str:
    return "{ " + ", ".join(str(x) for x in payoffs) + " }"


def _infoset_description(p: int, number: int, name: str) -> str:
    return f"player {p + 1}'s infoset {number}" + (f" {_quote(name)}" if name else "")


# ---------------------------------------------------------------------------------- API
def loads(text: str, source: str = "<string>") -> Game:
    """Parse the text of an ``.efg`` file; ``source`` names it in error messages."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return _Parser(text, source).parse()


def load(path: str | os.PathLike) -> Game:
    """Read a Gambit ``.efg`` file."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise GameError(f"{source}: cannot read the file ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # old Gambit files predate UTF-8
    return loads(text, source=source)


def _format_number(x: float) -> str:
    """Exact text for ``x``: an integer, a small fraction that reads back as exactly ``x``,
    or the shortest decimal that does (``repr``)."""
    x = float(x)
    if not np.isfinite(x):
        raise GameError(f"cannot write the non-finite number {x} to an .efg file")
    if x == int(x) and abs(x) < 2**53:
        return str(int(x))
    frac = Fraction(x).limit_denominator(1_000_000)
    if float(frac) == x:
        return f"{frac.numerator}/{frac.denominator}"
    return repr(x)


def dumps(game: Game) -> str:
    """The game as the text of a Gambit ``.efg`` file (``EFG 2 R``).

    Infosets are numbered per player from 1 in the game's canonical order, every terminal has
    its own outcome, chance nodes each have their own chance infoset, and the infoset name and
    actions are repeated at every node (as Gambit itself writes them)."""
    n = game.num_players
    labels = game.labels
    infoset_text = []
    for p in range(n):
        count = game.sequences(p).num_infosets
        infoset_text.append(
            [
                f"{_quote(labels.infoset(game, p, i))} {_quote_list(labels.actions(game, p, i))}"
                for i in range(count)
            ]
        )
    out = [
        f"EFG 2 R {_quote(game.name)} {{ {' '.join(_quote(s) for s in game.player_names)} }}",
        _quote(getattr(game, "comment", "") or ""),
        "",
    ]
    player, infoset = game.player, game.infoset
    first_child, num_children = game.first_child, game.num_children
    outcome_names = getattr(game, "outcome_names", None)
    chance_number = 0
    stack = [0]
    while stack:
        v = stack.pop()
        k = int(num_children[v])
        if k:
            first = int(first_child[v])
            stack.extend(range(first + k - 1, first - 1, -1))
        pl = int(player[v])
        if pl == TERMINAL:
            t = int(game.terminal_index[v])
            pay = ", ".join(_format_number(x) for x in game.payoffs[t])
            name = outcome_names[t] if outcome_names else ""
            out.append(f't "" {t + 1} {_quote(name)} {{ {pay} }}')
        elif pl == CHANCE:
            chance_number += 1
            names = labels.chance_actions(game, v)
            probs = game.chance_prob[first : first + k]
            body = " ".join(f"{_quote(a)} {_format_number(q)}" for a, q in zip(names, probs, strict=True))
            out.append(f'c "" {chance_number} "" {{ {body} }} 0')
        else:
            i = int(infoset[v])
            out.append(f'p "" {pl + 1} {i + 1} {infoset_text[pl][i]} 0')
    out.append("")
    return "\n".join(out)


def save(game: Game, path: str | os.PathLike) -> None:
    """Write ``game`` to ``path`` as a Gambit ``.efg`` file."""
    with open(os.fspath(path), "w", encoding="utf-8", newline="\n") as fh:
        fh.write(dumps(game))
