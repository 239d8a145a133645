"""Games outside the two-player exact methods' scope — private chance moves, more than two
players — are refused in one line before anything is built, by every such method and for every
concept, naming the reason and the methods that do solve them."""

import json
import subprocess
import sys

import pytest

import efce
from efce.concepts import CONCEPTS
from efce.errors import GameError

EXACT = ("rm", "lp-highs", "lp-pdlp", "lp-cvxpy")
OUTSIDE = {
    "kuhn:players=2": "private chance",
    "leduc:players=2": "private chance",
    "kuhn:players=3": "3 players",
}


@pytest.fixture
def nothing_built(monkeypatch):
    """Fail if a model builder runs: the refusal must come first."""
    import efce.baselines.efce_lp as efce_lp
    import efce.polytopes.decompose as decompose

    def built(*args, **kwargs):
        raise AssertionError("a model was built for a game the method refuses")

    monkeypatch.setattr(decompose, "_decompose_kernel", built)
    monkeypatch.setattr(efce_lp, "_assemble", built)


@pytest.mark.parametrize("spec", list(OUTSIDE))
@pytest.mark.parametrize("method", EXACT)
def test_every_exact_method_refuses_in_one_line(spec, method, nothing_built):
    for concept in CONCEPTS:
        with pytest.raises(GameError) as refused:
            efce.solve(spec, method, concept=concept)
        message = str(refused.value)
        assert "\n" not in message
        assert OUTSIDE[spec] in message and spec in message
        assert "methods that solve it:" in message and "icfr" in message


def test_the_command_line_refuses_with_one_json_error():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "efce",
            "solve",
            "kuhn:players=2",
            "--method",
            "lp-highs",
            "--concept",
            "efcce",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    payload = json.loads(out.stdout)
    assert "private chance" in payload["error"] and "\n" not in payload["error"]
