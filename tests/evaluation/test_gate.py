"""`flask gate`: means, deltas, paired t-tests, Holm-adjusted and non-inferiority p-values,
outcomes and queries needed, checked against scipy called directly on the hand-listed
per-query values (tests/evaluation/scenario.py)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.services import runs as run_service
from tests.evaluation.scenario import BASE_VALUES, CAND, build_gate_set
from tests.factory import build_test_set, trec


@pytest.fixture
def gate_set(app: Flask) -> int:
    return build_gate_set(app)


def gate(runner: FlaskCliRunner, *args: str):
    return runner.invoke(args=["gate", "gate", "--baseline", "base", "--candidate", "cand", *args])


def p_value(measure: str) -> float:
    return float(stats.ttest_rel(CAND[measure], BASE_VALUES).pvalue)


def deltas(measure: str) -> np.ndarray:
    return np.asarray(CAND[measure], dtype=float) - np.asarray(BASE_VALUES)


def p_noninferiority(d: np.ndarray, max_drop: float) -> float:
    """The one-sided test of H0: mean d ≤ −max_drop, straight from scipy."""
    return float(stats.ttest_1samp(d + max_drop, 0.0, alternative="greater").pvalue)


def first_n_clearing(d: np.ndarray, max_drop: float, alpha: float) -> int:
    """A plain scan: the first n whose one-sided bound clears −max_drop at d's mean and sd."""
    mean, sd = d.mean(), d.std(ddof=1)
    n = 2
    while mean - stats.t.ppf(1 - alpha, n - 1) * sd / math.sqrt(n) <= -max_drop:
        n += 1
    return n


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
    # Every adjusted p is above 0.05 (about 0.075): with three measures nothing fails, and
    # nothing passes either (each mean drops far beyond 0.01): inconclusive, exit 3.
    assert result.exit_code == 3, result.output
    out = json.loads(result.output)
    assert out["testset"] == "gate" and out["baseline"] == "base" and out["candidate"] == "cand"
    assert out["outcome"] == "inconclusive" and out["passed"] is False
    assert out["labels"] == "human" and out["machine_labels"] is False
    assert out["max_drop"] == 0.01 and out["alpha"] == 0.05  # the default max drop
    # The six hand-listed queries pair up on every measure, as the Markdown's column says.
    assert out["paired_queries"] == 6
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
        assert m["p_noninferiority"] == pytest.approx(p_noninferiority(deltas(name), 0.01))
        assert m["queries"] == m["paired_queries"] == 6
        assert m["delta_sd"] == pytest.approx(deltas(name).std(ddof=1))
        assert m["regressed"] is False and m["outcome"] == "inconclusive"
        # The mean is below −max_drop: no number of queries makes it pass.
        assert m["queries_needed"] is None and "will not make it pass" in m["note"]
    assert holm_nd == pytest.approx(holm_p1)  # all three end at 3 × p(P_1) ≈ 0.075
    assert 0.05 < holm_p1 < 0.1


def test_a_significant_drop_fails_with_exit_1(runner: FlaskCliRunner, gate_set: int) -> None:
    # One measure: no adjustment, p(P_1) ≈ 0.025 < 0.05 and the mean drops by 2/3.
    result = gate(runner, "--measure", "P_1", "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["passed"] is False and out["outcome"] == "fail"
    assert out["measures"][0]["p_adjusted"] == pytest.approx(p_value("P_1"))
    assert out["measures"][0]["regressed"] is True and out["measures"][0]["outcome"] == "fail"
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
    assert [m["outcome"] for m in out["measures"]] == ["inconclusive", "fail"]
    assert out["outcome"] == "fail"  # one failing measure fails the run


def test_an_open_verdict_says_how_many_queries_would_decide_it(
    runner: FlaskCliRunner, gate_set: int
) -> None:
    # P_1 drops by 2/3 < 0.7: not a failure; non-inferiority p ≈ 0.44: not a pass either.
    result = gate(runner, "--measure", "P_1", "--max-drop", "0.7", "--json")
    assert result.exit_code == 3
    m = json.loads(result.output)["measures"][0]
    d = deltas("P_1")
    assert m["outcome"] == "inconclusive" and m["regressed"] is False
    assert m["p_noninferiority"] == pytest.approx(p_noninferiority(d, 0.7))
    assert m["p_noninferiority"] > 0.05
    # By hand: gap 0.7 − 2/3 = 1/30, sd √(4/15); normal approximation (1.645 · sd · 30)² ≈ 650.
    assert m["queries_needed"] == first_n_clearing(d, 0.7, 0.05)
    assert 640 < m["queries_needed"] < 670
    assert f"about {m['queries_needed']} paired queries" in m["note"]
    # At alpha 0 nothing can ever pass, however many queries there are.
    result = gate(runner, "--measure", "P_1", "--max-drop", "0.7", "--alpha", "0", "--json")
    m = json.loads(result.output)["measures"][0]
    assert result.exit_code == 3 and m["queries_needed"] is None
    assert "more queries than any test set holds" in m["note"]


def test_a_clear_improvement_passes_with_exit_0(runner: FlaskCliRunner, gate_set: int) -> None:
    result = runner.invoke(
        args=[
            "gate",
            "gate",
            "--baseline",
            "cand",
            "--candidate",
            "base",
            "--measure",
            "recip_rank",
            "--json",
        ]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    m = out["measures"][0]
    d = -deltas("recip_rank")  # base − cand: every query improves or ties
    assert out["outcome"] == "pass" and out["passed"] is True
    assert m["outcome"] == "pass" and m["regressed"] is False and m["queries_needed"] is None
    assert m["p_noninferiority"] == pytest.approx(p_noninferiority(d, 0.01))
    assert m["p_noninferiority"] < 0.05
    # 80% power at alpha 0.05 for the observed delta and for 0.02, from the noncentral t.
    sd = d.std(ddof=1)

    def power(effect: float, n: int) -> float:
        nc, c = effect * math.sqrt(n) / sd, stats.t.ppf(0.975, n - 1)
        return stats.nct.sf(c, n - 1, nc) + stats.nct.cdf(-c, n - 1, nc)

    sizes = m["sample_size"]
    assert sizes["power"] == 0.8 and sizes["delta"] == 0.02
    for effect, n in ((d.mean(), sizes["observed_delta"]), (0.02, sizes["delta_queries"])):
        assert power(effect, n - 1) < 0.8 <= power(effect, n)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--measure", "P_1", "--max-drop", "0.7"], 3),  # inconclusive
        (["--measure", "P_1", "--max-drop", "0.7", "--inconclusive", "pass"], 0),
        (["--measure", "P_1", "--max-drop", "0.7", "--inconclusive", "fail"], 1),
        (["--measure", "P_1", "--inconclusive", "pass"], 1),  # a failure stays a failure
        (["--measure", "P_1", "--inconclusive", "maybe"], 2),
    ],
)
def test_exit_codes_and_the_inconclusive_mapping(
    runner: FlaskCliRunner, gate_set: int, args: list[str], code: int
) -> None:
    result = gate(runner, *args)
    assert result.exit_code == code, result.output
    if code != 2:
        assert "Retrieval gate" in result.output


def test_fewer_than_two_paired_queries_are_inconclusive(app: Flask, runner: FlaskCliRunner) -> None:
    with app.app_context():
        test_set = build_test_set("one", {"q1": "question"}, [("q1", "r", 1), ("q1", "n", 0)])
        for name, ranking in (("base", ["r", "n"]), ("cand", ["n", "r"])):
            run_service.upload_run(
                test_set, io.BytesIO(trec({"q1": ranking})), "r.trec", name, None
            )
        db.session.remove()
    result = runner.invoke(
        args=["gate", "one", "--baseline", "base", "--candidate", "cand", "--json"]
    )
    assert result.exit_code == 3
    out = json.loads(result.output)
    m = out["measures"][0]
    assert out["paired_queries"] == m["paired_queries"] == 1
    assert m["queries"] == 1 and m["outcome"] == "inconclusive" and m["p_value"] is None
    assert m["p_noninferiority"] is None and m["queries_needed"] is None
    assert "fewer than 2 paired queries" in m["note"]


def test_the_candidate_against_itself_passes(runner: FlaskCliRunner, gate_set: int) -> None:
    result = runner.invoke(
        args=["gate", "gate", "--baseline", "cand", "--candidate", "cand", "--json"]
    )
    assert result.exit_code == 0
    m = json.loads(result.output)["measures"][0]
    assert m["measure"] == "ndcg_cut_10" and m["delta"] == 0.0 and m["p_value"] == 1.0
    # No spread at all: the mean (0 > −0.01) decides, and the report says so.
    assert m["outcome"] == "pass" and m["p_noninferiority"] == 0.0 and m["delta_sd"] == 0.0
    assert "decided by the mean alone" in m["note"]
    assert m["sample_size"]["observed_delta"] is None  # nothing to detect
    # With no margin the same runs cannot show "not worse": inconclusive, never a pass.
    result = runner.invoke(
        args=["gate", "gate", "--baseline", "cand", "--candidate", "cand", "--max-drop", "0"]
    )
    assert result.exit_code == 3
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
            "unknown judge 'gpt'",
        ),
        (
            ["gate", "--baseline", "base", "--candidate", "cand", "--labels", "machine:"],
            "labels must be human, machine:JUDGE, fill:JUDGE or ppi:JUDGE",
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


def test_junit_has_one_case_per_measure_a_failure_per_fail_and_a_skip_per_open_one(
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
    assert root.get("skipped") == "1"
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties["outcome"] == "fail" and properties["labels"] == "human"
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["recip_rank", "P_1"]
    # recip_rank drops by 0.4028 < 0.5 but not surely so: inconclusive, a skipped case.
    assert cases[0].find("failure") is None
    skipped = cases[0].find("skipped")
    assert skipped is not None
    assert skipped.get("message").startswith("recip_rank inconclusive: about ")
    assert "Queries for 80% power" in cases[0].find("system-out").text
    failure = cases[1].find("failure")
    assert failure is not None and "P_1 failed: regressed by -0.6667" in failure.get("message")
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
    assert text.splitlines()[0] == "### Retrieval gate: ❌ failed"
    assert "| recip_rank | 1.0000 | 0.5972 | -0.4028 | 6 |" in text
    assert "| fail | — |" in text
    assert "Grades: labels human: people's grades and imported qrels." in text
    worst = [line for line in text.splitlines() if line.startswith("| q") and "qid" not in line]
    # Worst first: q6 (−0.75), q4 (−0.6667), q2 and q3 (−0.5); q1 and q5 did not drop.
    assert [line.split(" | ")[0] for line in worst] == ["| q6", "| q4", "| q2", "| q3"]
    assert "| q6 | 1.0000 | 0.2500 | -0.7500 |" in text


def test_markdown_shows_pass_and_inconclusive(
    runner: FlaskCliRunner, gate_set: int, tmp_path: Path
) -> None:
    path = tmp_path / "gate.md"
    gate(runner, "--measure", "P_1", "--max-drop", "0.7", "--markdown", str(path))
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "### Retrieval gate: ❔ inconclusive"
    assert "| inconclusive |" in text and "paired queries would decide it" in text
    assert "Worst queries" not in text  # only failures list them
    result = runner.invoke(
        args=["gate", "gate", "--baseline", "cand", "--candidate", "base", "--measure", "P_1"]
    )
    assert result.output.splitlines()[0] == "### Retrieval gate: ✅ passed"
    assert "| pass | — |" in result.output


def test_junit_stays_well_formed_xml_when_a_qid_holds_a_control_character(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    # XML 1.0 allows no U+0001 even escaped; a TREC file's qid may hold one. Every query drops
    # from NDCG@1 = 1 to 0 (sd 0, so p = 0): the gate fails and lists the worst queries.
    qids = ["a\x01b", "q2", "q3"]
    with app.app_context():
        test_set = build_test_set(
            "ctl", {q: f"query {q}" for q in qids}, [(q, "r", 1) for q in qids]
        )
        for name, top in (("base", "r"), ("cand", "n")):
            run = trec({q: [top] for q in qids})
            run_service.upload_run(test_set, io.BytesIO(run), "r.trec", name, None)
        db.session.remove()
    path = tmp_path / "gate.xml"
    args = ["gate", "ctl", "--baseline", "base", "--candidate", "cand", "--junit", str(path)]
    result = runner.invoke(args=[*args, "--measure", "ndcg_cut_1"])
    assert result.exit_code == 1, result.output
    failure = ET.parse(path).getroot().find("testsuite/testcase/failure")  # parses: well formed
    assert failure is not None and "a\\x01b: 1.0000 → 0.0000 (-1.0000)" in (failure.text or "")
