"""The gate's page: the verdict of `flask gate` in the browser, its two reports, its errors as
a form error (400) and a blind set's per-query figures kept from annotators.

The scenario is tests/evaluation/scenario.py's: six queries, the candidate moves each one's
relevant chunk down. Expected p-values come from scipy on the hand-listed per-query values.
"""

from __future__ import annotations

import html
import io
import json
import re
import shlex
from xml.etree import ElementTree as ET

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet, User
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.accounts import create_token
from tests.evaluation.scenario import BASE_VALUES, CAND, CANDIDATE, build_gate_set
from tests.factory import AuthActions, build_test_set, grant, trec, without_tokens


@pytest.fixture
def gate_set(app: Flask) -> int:
    return build_gate_set(app)


def run_ids(app: Flask, test_set_id: int) -> dict[str, int]:
    with app.app_context():
        rows = db.session.execute(
            sa.select(Run.name, Run.id).where(Run.test_set_id == test_set_id)
        ).all()
        return dict(rows)


def gate_url(app: Flask, test_set_id: int, what: str = "", **args: object) -> str:
    """The page (or one of its reports) with base as baseline and cand as candidate unless
    args say otherwise."""
    ids = run_ids(app, test_set_id)
    query = {"baseline": ids["base"], "candidate": ids["cand"], **args}
    with app.test_request_context():
        from flask import url_for

        endpoint = {"": "gate.page", "md": "gate.markdown", "xml": "gate.junit"}[what]
        return url_for(endpoint, test_set_id=test_set_id, **query)


def text_of(page: str) -> str:
    """The page's visible text, one space between words."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_a_clear_regression_fails_with_the_paired_t_tests_p(
    app: Flask, as_admin: FlaskClient, gate_set: int
) -> None:
    # P_1 per query: baseline 1 everywhere, candidate 1, 0, 0, 0, 1, 0 (scenario.py).
    p = float(stats.ttest_rel(CAND["P_1"], BASE_VALUES).pvalue)
    assert p < 0.05  # about 0.010: one measure, so Holm leaves it as it is
    response = as_admin.get(gate_url(app, gate_set, measure="P_1"))
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert 'data-outcome="fail"' in page
    shown = text_of(page)
    assert "Fail: the candidate regressed" in shown
    row = shown[shown.index("P_1 fail") :]
    mean = float(np.mean(CAND["P_1"]))
    assert row.startswith(f"P_1 fail 1.0000 {mean:.4f} {mean - 1:+.4f}")
    assert f"6 {p:.4f} {p:.4f}" in row and " yes " in row  # queries, p, p (Holm), regressed
    # The worst queries, as the Markdown report lists them: each dropped from 1 to 0.
    worst = page[page.index('class="dash-table worst-queries"') :]
    for qid in ("q2", "q3", "q4", "q6"):
        assert f'<th scope="row">{qid}</th>' in worst
    assert "q1</th>" not in worst and "q5</th>" not in worst
    assert "fail: Holm-adjusted paired t-test" in shown
    assert "labels human: people's grades and imported qrels" in shown


def test_a_clear_improvement_passes(app: Flask, as_admin: FlaskClient, gate_set: int) -> None:
    ids = run_ids(app, gate_set)
    url = gate_url(app, gate_set, baseline=ids["cand"], candidate=ids["base"], measure="RR")
    d = np.asarray(BASE_VALUES) - np.asarray(CAND["recip_rank"], dtype=float)
    p_ni = float(stats.ttest_1samp(d + 0.01, 0.0, alternative="greater").pvalue)
    assert p_ni < 0.05
    page = as_admin.get(url).get_data(as_text=True)
    assert 'data-outcome="pass"' in page and 'data-measure="RR"' in page
    assert "Pass: the candidate may ship" in text_of(page)
    assert f"{p_ni:.4f}" in page
    assert "worst-queries" not in page  # nothing failed


def test_an_open_verdict_says_how_many_queries_would_decide_it(
    app: Flask, as_admin: FlaskClient, gate_set: int
) -> None:
    page = as_admin.get(gate_url(app, gate_set, measure="P_1", max_drop="0.7")).get_data(
        as_text=True
    )
    assert 'data-outcome="inconclusive"' in page
    shown = text_of(page)
    assert "Inconclusive: not enough evidence yet" in shown
    assert "paired queries would decide it" in shown  # the measure's note
    assert "max drop 0.7, alpha 0.05" in shown


def test_the_reports_are_the_clis_reports(
    app: Flask, as_admin: FlaskClient, runner: FlaskCliRunner, gate_set: int, tmp_path
) -> None:
    args = {"measure": ["P_1", "RR"], "max_drop": "0.02"}
    md = as_admin.get(gate_url(app, gate_set, "md", **args))
    xml = as_admin.get(gate_url(app, gate_set, "xml", **args))
    assert md.status_code == xml.status_code == 200
    assert md.mimetype == "text/markdown" and xml.mimetype == "application/xml"
    assert 'filename="gate.md"' in md.headers["Content-Disposition"]
    cli = ["gate", "gate", "--baseline", "base", "--candidate", "cand", "--measure", "P_1"]
    cli += ["--measure", "RR", "--max-drop", "0.02", "--markdown", str(tmp_path / "g.md")]
    assert runner.invoke(args=[*cli, "--junit", str(tmp_path / "g.xml")]).exit_code in (1, 3)
    assert md.get_data(as_text=True) == (tmp_path / "g.md").read_text(encoding="utf-8")
    assert xml.get_data(as_text=True) == (tmp_path / "g.xml").read_text(encoding="utf-8")
    suite = ET.fromstring(xml.data).find("testsuite")
    assert suite is not None and suite.get("tests") == "2"


def test_the_page_shows_the_cli_command_and_api_call_that_give_the_same_verdict(
    app: Flask, as_admin: FlaskClient, admin_id: int, gate_set: int
) -> None:
    page = as_admin.get(gate_url(app, gate_set, measure="P_1, RR", alpha="0.1")).get_data(
        as_text=True
    )
    cli = html.unescape(re.search(r'<pre id="gate-cli"[^>]*><code>(.*?)</code>', page).group(1))
    assert cli == (
        "flask --app app gate gate --baseline base --candidate cand --measure P_1 "
        "--measure RR --max-drop 0.01 --alpha 0.1"
    )
    call = html.unescape(re.search(r'<pre id="gate-api"[^>]*><code>(.*?)</code>', page).group(1))
    body = json.loads(re.search(r"-d '(.*?)' ", call).group(1))
    assert call.endswith("/api/testsets/gate/gate")
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    api = as_admin.post(
        "/api/testsets/gate/gate", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    out = api.get_json()
    assert out["outcome"] == "fail" and out["alpha"] == 0.1
    assert [m["measure"] for m in out["measures"]] == ["P_1", "RR"]


def test_compare_links_to_the_gate_for_its_two_runs_and_back(
    app: Flask, as_admin: FlaskClient, gate_set: int
) -> None:
    ids = run_ids(app, gate_set)
    compare = f"/test-sets/{gate_set}/dashboard/compare/?run={ids['base']}&run={ids['cand']}"
    page = as_admin.get(compare).get_data(as_text=True)
    link = html.unescape(re.search(r'<a href="([^"]+)" id="gate-link"', page).group(1))
    assert link == (
        f"/test-sets/{gate_set}/dashboard/gate/?baseline={ids['base']}&candidate={ids['cand']}"
    )
    gate_page = as_admin.get(link).get_data(as_text=True)
    assert 'id="gate-result"' in gate_page
    assert f'<option value="{ids["cand"]}" selected>cand</option>' in gate_page
    assert html.escape(compare) in gate_page  # the compare page for the same two runs
    overview = as_admin.get(f"/test-sets/{gate_set}/dashboard/").get_data(as_text=True)
    assert f'href="/test-sets/{gate_set}/dashboard/gate/"' in overview


def test_the_gate_link_carries_the_compare_pages_cutoff(
    app: Flask, as_admin: FlaskClient, gate_set: int
) -> None:
    # Runs compared at NDCG@3: "Gate B against A" must not answer for NDCG@10 instead.
    ids = run_ids(app, gate_set)
    compare = f"/test-sets/{gate_set}/dashboard/compare/?run={ids['base']}&run={ids['cand']}&k=3"
    page = as_admin.get(compare).get_data(as_text=True)
    link = html.unescape(re.search(r'<a href="([^"]+)" id="gate-link"', page).group(1))
    assert link == (
        f"/test-sets/{gate_set}/dashboard/gate/?baseline={ids['base']}&candidate={ids['cand']}"
        "&measure=ndcg_cut_3"
    )
    gate_page = as_admin.get(link).get_data(as_text=True)
    assert 'name="measure" value="ndcg_cut_3"' in gate_page
    assert "ndcg_cut_10" not in gate_page.split('id="gate-result"', 1)[1]
    # And back: the gate's NDCG cutoff is the compare page's k.
    back = re.search(r'<a href="([^"]+)" id="compare-link"', gate_page)
    assert html.unescape(back.group(1)) == (
        f"/test-sets/{gate_set}/dashboard/compare/?run={ids['base']}&run={ids['cand']}&k=3"
    )


def test_a_first_visit_prefills_the_form_and_runs_nothing(
    app: Flask, as_admin: FlaskClient, gate_set: int
) -> None:
    response = as_admin.get(f"/test-sets/{gate_set}/dashboard/gate/")
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and 'id="gate-result"' not in page
    assert 'name="max_drop" value="0.01"' in page and 'name="alpha" value="0.05"' in page
    assert 'name="measure" value="ndcg_cut_10"' in page


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"candidate": "999999"}, "has no run 999999 (candidate)"),
        ({"baseline": "abc"}, "baseline must be a whole number"),
        ({"measure": "ndgc"}, "ndgc"),
        ({"max_drop": "-1"}, "max_drop must be a number from 0 to"),
        ({"max_drop": "x"}, "max_drop must be a number, not 'x'"),
        ({"alpha": "2"}, "alpha must be a number from 0 to 1"),
        ({"alpha": "nan"}, "alpha must be a number from 0 to 1"),
        ({"labels": "fill:nobody"}, "unknown judge 'nobody'"),
        ({"labels": "machine:"}, "labels must be human, machine:JUDGE"),
    ],
)
def test_bad_input_is_a_form_error_with_status_400(
    app: Flask, as_admin: FlaskClient, gate_set: int, args: dict[str, str], message: str
) -> None:
    response = as_admin.get(gate_url(app, gate_set, **args))
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    start = page.index('id="gate-error">')
    error = text_of(page[start + len('id="gate-error">') : page.index("</div>", start)])
    assert error.startswith("There is a problem") and message in error
    assert '<form method="get" class="filters gate-form"' in page  # to correct and retry
    for what in ("md", "xml"):
        report = as_admin.get(gate_url(app, gate_set, what, **args))
        assert report.status_code == 400 and message in html.unescape(report.get_data(True))


def test_a_report_without_runs_is_a_400(app: Flask, as_admin: FlaskClient, gate_set: int) -> None:
    response = as_admin.get(f"/test-sets/{gate_set}/dashboard/gate/gate.md")
    assert response.status_code == 400
    assert "choose a baseline and a candidate" in response.get_data(as_text=True)


def test_an_archived_run_past_its_kept_depth_is_a_form_error(
    app: Flask, as_admin: FlaskClient
) -> None:
    deep = [f"d{n:02d}" for n in range(1, 16)]
    with app.app_context():
        test_set = build_test_set("kept", {"q1": "one", "q2": "two"}, [("q1", "d01", 1)])
        for name in ("base", "cand"):
            rankings = trec({"q1": deep, "q2": deep})
            run_service.upload_run(test_set, io.BytesIO(rankings), "r.trec", name, None)
        run = db.session.scalar(sa.select(Run).where(Run.name == "cand"))
        run_service.archive_run(run, 10)
        test_set_id = test_set.id
        db.session.remove()
    kept = as_admin.get(gate_url(app, test_set_id, measure="nDCG@10"))
    assert kept.status_code == 200
    response = as_admin.get(gate_url(app, test_set_id, measure="AP"))
    assert response.status_code == 400
    assert "archived: it kept its top 10" in html.unescape(response.get_data(as_text=True))


def _blind(app: Flask, test_set_id: int, annotator_id: int) -> None:
    grant(app, test_set_id, annotator_id)
    with app.app_context():
        db.session.get_one(TestSet, test_set_id).judgments_per_pair = 2  # blind judging
        db.session.commit()


def test_a_blind_annotator_sees_the_verdict_but_no_query(
    app: Flask, client: FlaskClient, auth: AuthActions, annotator_id: int, gate_set: int
) -> None:
    _blind(app, gate_set, annotator_id)
    auth.login("ann")
    # cand's recip_rank on q6 is 1/4 by hand: a per-query figure the worst queries would list.
    page = without_tokens(client.get(gate_url(app, gate_set, measure="RR")).get_data(as_text=True))
    assert 'data-outcome="fail"' in page
    assert "worst-queries" not in page and "q6" not in page and "0.2500" not in page
    assert 'id="worst-withheld"' in page and "per-query figures are for admins" in page
    for what in ("md", "xml"):
        report = client.get(gate_url(app, gate_set, what, measure="RR"))
        text = report.get_data(as_text=True)
        assert report.status_code == 200 and "per-query figures are for admins" in text
        assert "q6" not in text and "0.2500" not in text


def test_an_admin_sees_the_worst_queries_on_a_blind_set(
    app: Flask, as_admin: FlaskClient, annotator_id: int, gate_set: int
) -> None:
    _blind(app, gate_set, annotator_id)
    page = as_admin.get(gate_url(app, gate_set, measure="RR")).get_data(as_text=True)
    assert '<th scope="row">q6</th>' in page and "0.2500" in page
    report = as_admin.get(gate_url(app, gate_set, "md", measure="RR")).get_data(as_text=True)
    assert "| q6 | 1.0000 | 0.2500 | -0.7500 |" in report


def test_people_outside_the_test_set_get_404(
    app: Flask, as_annotator: FlaskClient, gate_set: int
) -> None:
    for what in ("", "md", "xml"):
        assert as_annotator.get(gate_url(app, gate_set, what)).status_code == 404


def test_the_printed_command_and_call_name_runs_and_set_as_flask_gate_reads_them(
    app: Flask, as_admin: FlaskClient, runner: FlaskCliRunner, admin_id: int
) -> None:
    """`flask gate` and the API refuse a plain reference that is one object's id and another's
    name. Test set "1" (id 2, after "decoy", id 1) has runs base (id 1) and cand (id 2), and a
    run named "1" (id 3) ranking as cand does: a plain "1" is refused as both test sets and
    both runs. The printed command and call name them `name:1`, read as the runs gated."""
    with app.app_context():
        build_test_set("decoy", {"x": "question x"}, [("x", "r", 1)])
        db.session.remove()
    ts = build_gate_set(app, "1")
    with app.app_context():
        test_set = db.session.get_one(TestSet, ts)
        run_service.upload_run(test_set, io.BytesIO(trec(CANDIDATE)), "c.trec", "1", None)
        db.session.remove()
    ids = run_ids(app, ts)
    assert (ts, ids["base"], ids["cand"], ids["1"]) == (2, 1, 2, 3)
    page = as_admin.get(
        f"/test-sets/{ts}/dashboard/gate/?baseline={ids['base']}&candidate={ids['1']}"
    ).get_data(as_text=True)
    cli = html.unescape(re.search(r'<pre id="gate-cli"[^>]*><code>(.*?)</code>', page).group(1))
    assert cli == (
        "flask --app app gate name:1 --baseline base --candidate name:1 --measure ndcg_cut_10 "
        "--max-drop 0.01 --alpha 0.05"
    )
    out = json.loads(runner.invoke(args=[*shlex.split(cli)[3:], "--json"]).output)
    assert (out["testset"], out["baseline"], out["candidate"]) == ("1", "base", "1")
    call = html.unescape(re.search(r'<pre id="gate-api"[^>]*><code>(.*?)</code>', page).group(1))
    body = json.loads(re.search(r"-d '(.*?)' ", call).group(1))
    assert (body["baseline"], body["candidate"]) == ("base", "name:1")
    assert call.endswith("/api/testsets/name:1/gate")
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    api = as_admin.post(
        "/api/testsets/name:1/gate", json=body, headers={"Authorization": f"Bearer {token}"}
    ).get_json()
    assert (api["testset"], api["baseline"], api["candidate"]) == ("1", "base", "1")
    assert api["outcome"] == out["outcome"]
