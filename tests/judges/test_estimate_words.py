"""The estimate's words: one pair, two pairs, and nothing to ask (never "about 1 pairs" nor
"about 0 pairs, ~$0.00")."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.services import judges
from ndcg_labeler.services.judge_costs import Estimate
from tests.factory import build_test_set

UPPER = "about 4 characters a token, and up to 512 output tokens each: an upper bound"


def test_one_is_singular_and_more_are_plural() -> None:
    one = Estimate(1, 25, 512, 0.25, "prompt", 1, 512)
    assert one.text() == f"about 1 pair, ~$0.25 (from the prompt length of 1 pair, {UPPER})"
    two = Estimate(2, 50, 20, 0.5, "seen", 1, 512)
    assert two.text() == "about 2 pairs, ~$0.50 (from the average tokens of 1 answer so far)"
    many = Estimate(1234, 50, 20, None, "seen", 3, 512)
    assert many.text() == (
        "about 1,234 pairs, cost unknown (no prices set) (from the average tokens of 3 answers "
        "so far)"
    )


def test_nothing_to_ask_says_so_without_a_price() -> None:
    for basis, answers in (("seen", 4), ("prompt", 0)):
        assert Estimate(0, 0, 0, 0.0, basis, answers, 512).text() == "nothing to ask"


def test_a_probe_of_one_pair_and_a_run_of_none(app: Flask, runner: FlaskCliRunner) -> None:
    with app.app_context():
        build_test_set("one", {"q1": "x"}, [("q1", "d1", 0)], corpus={"d1": "y"})
        judges.add_judge("j", "http://127.0.0.1:9/v1", "m")
    probe = runner.invoke(args=["judges", "run", "one", "--judge", "j", "--estimate"])
    # The only pair is graded: no unjudged pair is left to ask.
    assert probe.exit_code == 0 and probe.output == "nothing to ask\n", probe.output
    from ndcg_labeler.services import probes, testsets

    with app.app_context():
        found = probes.estimate_probe(testsets.require_by_name("one"), judges.require_judge("j"), 5)
        assert found.text().startswith("about 9 questions (1 pair, 9 variants each), ")
        assert "from the prompt length of 9 questions" in found.text()
