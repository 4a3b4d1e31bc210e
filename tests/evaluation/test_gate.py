"""`flask gate`: means, deltas, paired t-tests and Holm-adjusted p-values checked against
scipy called directly on the hand-listed per-query values (tests/evaluation/scenario.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from scipy import stats

from tests.evaluation.scenario import BASE_VALUES, CAND, build_gate_set


@pytest.fixture
def gate_set(app: Flask) -> int:
    return build_gate_set(app)


def gate(runner: FlaskCliRunner, *args: str):
    return runner.invoke(args=["gate", "gate", "--baseline", "base", "--candidate", "cand", *args])


def p_value(measure: str) -> float:
    return float(stats.ttest_rel(CAND[measure], BASE_VALUES).pvalue)


def test_the_paired_t_statistic_matches_the_hand_computation() -> None:
    # P_1 deltas 0, −1, −1, −1, 0, −1: mean −2/3, sd √(4/15), t = (−2/3) / (sd/√6) = −√10.
    assert stats.ttest_rel(CAND["P_1"], BASE_VALUES).statistic == pytest.approx(-math.sqrt(10))
    assert p_value("P_1") == pytest.approx(2 * stats.t.sf(math.sqrt(10), 5))


def test_json_gives_means_deltas_and_holm_adjusted_p_values(
    runner: FlaskCliRunner, gate_set: int
) -> None:
    measures = ["recip_rank", "P_1", "ndcg_cut_3"]
    result = gate(runner, "--measure", "recip_rank,P_1", "--measure", "ndcg_cut_3", "--json")
    # Holm by hand: sorted P_1 < recip_rank < ndcg_cut_3, multiplied by 3, 2, 1, kept monotone.
    p = {m: p_value(m) for m in measures}
    holm_p1 = 3 * p["P_1"]
    holm_rr = max(holm_p1, 2 * p["recip_rank"])
    holm_nd = max(holm_rr, p["ndcg_cut_3"])
    assert p["P_1"] < p["recip_rank"] < p["ndcg_cut_3"]
    # Every adjusted p is above 0.05 (about 0.075): with three measures nothing regresses.
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["testset"] == "gate" and out["baseline"] == "base" and out["candidate"] == "cand"
    assert out["passed"] is True
    assert [m["measure"] for m in out["measures"]] == measures
    by_name = {m["measure"]: m for m in out["measures"]}
    expected_mean = {
        "recip_rank": (1 + 1 / 2 + 1 / 2 + 1 / 3 + 1 + 1 / 4) / 6,
        "P_1": 2 / 6,
        "ndcg_cut_3": (1 + 1 / math.log2(3) + 1 / math.log2(3) + 1 / 2 + 1 + 0) / 6,
    }
    adjusted = {"P_1": holm_p1, "recip_rank": holm_rr, "ndcg_cut_3": holm_nd}
    for name in measures:
        m = by_name[name]
        assert m["baseline"] == pytest.approx(1.0)
        assert m["candidate"] == pytest.approx(expected_mean[name])
        assert m["delta"] == pytest.approx(expected_mean[name] - 1.0)
        assert m["p_value"] == pytest.approx(p[name])
        assert m["p_adjusted"] == pytest.approx(adjusted[name])
        assert m["regressed"] is False
    assert holm_nd == pytest.approx(holm_p1)  # all three end at 3 × p(P_1) ≈ 0.075
    assert 0.05 < holm_p1 < 0.1


def test_a_significant_drop_fails_with_exit_1(runner: FlaskCliRunner, gate_set: int) -> None:
    # One measure: no adjustment, p(P_1) ≈ 0.025 < 0.05 and the mean drops by 2/3.
    result = gate(runner, "--measure", "P_1", "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["passed"] is False
    assert out["measures"][0]["p_adjusted"] == pytest.approx(p_value("P_1"))
    assert out["measures"][0]["regressed"] is True
    # With alpha 0.1 the three-measure family regresses everywhere (adjusted p ≈ 0.075).
    result = gate(runner, "--measure", "recip_rank,P_1,ndcg_cut_3", "--alpha", "0.1", "--json")
    assert result.exit_code == 1
    assert all(m["regressed"] for m in json.loads(result.output)["measures"])


def test_max_drop_tolerates_small_drops(runner: FlaskCliRunner, gate_set: int) -> None:
    # recip_rank drops by 0.4028 (< 0.5 tolerated); P_1 by 0.6667 (> 0.5): only P_1 fails.
    result = gate(runner, "--measure", "recip_rank,P_1", "--alpha", "0.1", "--max-drop", "0.5")
    assert result.exit_code == 1
    out = json.loads(
        gate(
            runner, "--measure", "recip_rank,P_1", "--alpha", "0.1", "--max-drop", "0.5", "--json"
        ).output
    )
    assert [m["regressed"] for m in out["measures"]] == [False, True]
    assert gate(runner, "--measure", "P_1", "--max-drop", "0.7").exit_code == 0


def test_the_candidate_against_itself_passes(runner: FlaskCliRunner, gate_set: int) -> None:
    result = runner.invoke(
        args=["gate", "gate", "--baseline", "cand", "--candidate", "cand", "--json"]
    )
    assert result.exit_code == 0
    m = json.loads(result.output)["measures"][0]
    assert m["measure"] == "ndcg_cut_10" and m["delta"] == 0.0 and m["p_value"] == 1.0
    # The reverse direction is an improvement: never a regression, however significant.
    result = runner.invoke(
        args=["gate", "gate", "--baseline", "cand", "--candidate", "base", "--measure", "P_1"]
    )
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--baseline", "base", "--candidate", "cand"], "unknown test set 'nope'"),
        (["gate", "--baseline", "base", "--candidate", "zzz"], "has no run 'zzz'"),
        (["gate", "--baseline", "base", "--candidate", "cand", "--measure", "ndgc"], "ndgc"),
        (["gate", "--baseline", "base", "--candidate", "cand", "--alpha", "2"], "alpha"),
        (["gate", "--baseline", "base", "--candidate", "cand", "--max-drop", "x"], "max-drop"),
        (
            ["gate", "--baseline", "base", "--candidate", "cand", "--labels", "fill:gpt"],
            "no machine judges yet",
        ),
        (
            ["gate", "--baseline", "base", "--candidate", "cand", "--labels", "machine:x"],
            "no machine judges yet",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    runner: FlaskCliRunner, gate_set: int, args: list[str], message: str
) -> None:
    result = runner.invoke(args=["gate", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]


def test_runs_and_test_sets_are_found_by_id_too(
    app: Flask, runner: FlaskCliRunner, gate_set: int
) -> None:
    result = runner.invoke(
        args=["gate", str(gate_set), "--baseline", "base", "--candidate", "cand", "--json"]
    )
    assert json.loads(result.output)["testset"] == "gate"


def test_junit_has_one_case_per_measure_and_a_failure_per_regression(
    runner: FlaskCliRunner, gate_set: int, tmp_path: Path
) -> None:
    path = tmp_path / "gate.xml"
    result = gate(
        runner,
        "--measure",
        "recip_rank,P_1",
        "--max-drop",
        "0.5",
        "--alpha",
        "0.1",
        "--junit",
        str(path),
    )
    assert result.exit_code == 1
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["recip_rank", "P_1"]
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure is not None and "P_1 regressed by -0.6667" in failure.get("message")
    # The worst queries are listed: the four where the relevant chunk left rank 1.
    for qid in ("q2", "q3", "q4", "q6"):
        assert f"{qid}: 1.0000 → 0.0000" in failure.text


def test_markdown_lists_the_worst_five_queries_of_each_regression(
    runner: FlaskCliRunner, gate_set: int, tmp_path: Path
) -> None:
    path = tmp_path / "gate.md"
    result = gate(runner, "--measure", "recip_rank", "--markdown", str(path))
    assert result.exit_code == 1  # alone, recip_rank's p ≈ 0.029 < 0.05
    text = path.read_text(encoding="utf-8")
    assert "regressed" in text.splitlines()[0]
    assert "| recip_rank | 1.0000 | 0.5972 | -0.4028 |" in text
    worst = [line for line in text.splitlines() if line.startswith("| q") and "qid" not in line]
    # Worst first: q6 (−0.75), q4 (−0.6667), q2 and q3 (−0.5); q1 and q5 did not drop.
    assert [line.split(" | ")[0] for line in worst] == ["| q6", "| q4", "| q2", "| q3"]
    assert "| q6 | 1.0000 | 0.2500 | -0.7500 |" in text
