"""Retention: `flask run archive`, the run page's button and the API keep a run's top N entries
per query; the run still scores at cutoffs up to N and refuses deeper ones.

Hand computation: q1's relevant chunk a (grade 1) is at rank 15 of 15, q2's x (grade 1) at
rank 1. NDCG@10 = (0 + 1) / 2 = 0.5; NDCG@20 = (1/log2(16) + 1) / 2 = 0.625.
"""

from __future__ import annotations

import io
import math
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_docids
from ndcg_labeler.models import AuditEvent, Query, Run, RunQuery, TestSet
from ndcg_labeler.services import ServiceError, comparison, gate, live
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.accounts import create_token
from tests.factory import build_test_set, grade, make_user, trec

SET = "kept"
DEEP = [f"d{n:02d}" for n in range(1, 15)] + ["a"]


@pytest.fixture
def deep(app: Flask) -> int:
    """Test set 'kept' and run 'deep' (16 entries); returns the test set's id."""
    with app.app_context():
        test_set = build_test_set(SET, {"q1": "one", "q2": "two"}, [("q1", "a", 1), ("q2", "x", 1)])
        for name in ("deep", "whole"):
            rankings = trec({"q1": DEEP, "q2": ["x"]})
            run_service.upload_run(test_set, io.BytesIO(rankings), "d.trec", name, None)
        test_set_id = test_set.id
        db.session.remove()
        return test_set_id


def _run(name: str = "deep") -> Run:
    return db.session.scalar(db.select(Run).where(Run.name == name))


def test_archiving_keeps_the_top_n_and_the_cutoffs_up_to_it(app: Flask, deep: int) -> None:
    with app.app_context():
        run = _run()
        assert live.score_run(run, live.ScoreOptions(k=20)).mean_ndcg == pytest.approx(0.625)
        assert run_service.archive_run(run, 10) == 5
        db.session.expire_all()
        run = _run()
        assert (run.kept_depth, run.num_entries, run.archived) == (10, 11, True)
        q1 = db.session.scalar(db.select(RunQuery.docids).where(RunQuery.run_id == run.id))
        lists = [
            decode_docids(row).decode().split("\n")
            for row in db.session.scalars(
                db.select(RunQuery.docids).where(RunQuery.run_id == run.id)
            )
        ]
        assert sorted(lists) == [DEEP[:10], ["x"]] and q1 is not None
        result = live.score_run(run)
        assert result.mean_ndcg == pytest.approx(0.5)
        assert all(row.ap is None for row in result.rows())  # needs the whole list
        with pytest.raises(ServiceError, match=r"archived.*up to 10, not at k=20"):
            live.score_run(run, live.ScoreOptions(k=20))
        # A grade given after archiving: d03 (rank 3) gets grade 2. q1's NDCG@10 is
        # (2/log2(4)) / (2 + 1/log2(3)), re-scored from the kept entries.
        grade(db.session.get_one(TestSet, deep), "q1", "d03", 2, "ann")
        q1_ndcg = 1.0 / (2 + 1 / math.log2(3))
        assert live.score_run(_run()).mean_ndcg == pytest.approx((q1_ndcg + 1) / 2)
        event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "run.archive"))
        assert event is not None and event.details["keep"] == 10
        assert (event.details["entries_before"], event.details["entries_after"]) == (16, 11)
        with pytest.raises(ServiceError, match="already archived"):
            run_service.archive_run(_run(), 10)
        with pytest.raises(ServiceError, match="at least 10"):
            run_service.archive_run(_run("whole"), 5)


def test_archiving_that_would_drop_nothing_is_refused(app: Flask, deep: int) -> None:
    """A depth past the run's lists would mark it archived (losing AP and RR) for nothing;
    a huge one used to overflow while cutting the lists."""
    with app.app_context():
        with pytest.raises(ServiceError, match=r"at most 1000 entries per query.*drop nothing"):
            run_service.archive_run(_run(), 10**30)
        # Stored to depth 1000, but its longest list (q1) has 15 entries.
        with pytest.raises(ServiceError, match=r"at most 15 entries per query.*drop nothing"):
            run_service.archive_run(_run(), 15)
        db.session.expire_all()
        run = _run()
        assert (run.kept_depth, run.num_entries) == (None, 16)
        assert (
            db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "run.archive"))
            is None
        )
        assert run_service.archive_run(run, 14) == 1


def test_the_cli_refuses_a_bad_depth_before_asking(
    app: Flask, deep: int, runner: FlaskCliRunner
) -> None:
    for keep, message in (("5", "at least 10"), ("99999999999999999999", "drop nothing")):
        refused = runner.invoke(args=["run", "archive", SET, "deep", "--keep", keep])
        assert refused.exit_code != 0 and message in refused.output, refused.output
        assert "for good?" not in refused.output and refused.exception is not None
        assert isinstance(refused.exception, SystemExit)  # an Error: line, not a traceback


def test_dashboard_pages_refuse_cutoffs_an_archived_run_dropped(
    app: Flask, deep: int, as_admin: FlaskClient
) -> None:
    """The query table and its exports were a 500 past the kept depth; the drill-down showed
    an NDCG@20 computed from the 10 entries left as if they were the top 20."""
    with app.app_context():
        run = _run()
        run_service.archive_run(run, 10)
        query = db.session.scalar(db.select(Query).where(Query.qid == "q1"))
        with pytest.raises(ServiceError, match="up to 10, not at k=20"):
            live.query_detail(run, query, live.ScoreOptions(k=20))
        base = f"/test-sets/{deep}/dashboard"
        urls = [
            f"{base}/runs/{run.id}",
            f"{base}/runs/{run.id}/_table",
            f"{base}/export/runs/{run.id}/queries.csv",
            f"{base}/export/runs/{run.id}/queries.json",
            f"{base}/runs/{run.id}/queries/{query.id}/",
            f"{base}/runs/{run.id}/queries/{query.id}/_detail",
            f"{base}/export/runs/{run.id}/queries/{query.id}.json",
            f"{base}/export/runs/{run.id}/queries/{query.id}.csv",
        ]
    for url in urls:
        assert as_admin.get(f"{url}?k=10").status_code == 200, url
        deeper = as_admin.get(f"{url}?k=20")
        assert deeper.status_code == 400, url
        assert "up to 10, not at k=20" in deeper.get_data(as_text=True), url


def test_a_series_leaves_out_runs_archived_shallower_than_k(
    app: Flask, deep: int, as_admin: FlaskClient, runner: FlaskCliRunner
) -> None:
    """One archived nightly made the series page a 500 and `flask run series` an error at
    any deeper k; the trend now leaves it out and says so, as the overview does."""
    with app.app_context():
        test_set = db.session.get_one(TestSet, deep)
        for name in ("n1", "n2"):
            rankings = io.BytesIO(trec({"q1": DEEP, "q2": ["x"]}))
            run_service.upload_run(test_set, rankings, "n.trec", name, None, series="nightly")
        run_service.archive_run(_run("n1"), 10)
    page = as_admin.get(f"/test-sets/{deep}/series/nightly?k=20")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert 'id="left-out"' in text and ">n1</a> (top 10)" in text and ">n2<" in text
    data = as_admin.get(f"/test-sets/{deep}/series/nightly/json?k=20").get_json()
    assert [p["run"] for p in data["points"]] == ["n2"]
    assert data["left_out"] == [
        {"run": "n1", "run_id": data["left_out"][0]["run_id"], "kept_depth": 10}
    ]
    listed = runner.invoke(args=["run", "series", SET, "nightly", "--k", "20"])
    assert listed.exit_code == 0, listed.output
    assert "n2\t" in listed.stdout and "Left out at k=20" in listed.stderr
    whole = as_admin.get(f"/test-sets/{deep}/series/nightly/json?k=10").get_json()
    assert ([p["run"] for p in whole["points"]], whole["left_out"]) == (["n1", "n2"], [])


def test_the_pin_menu_lists_every_run_of_the_series_at_any_k(
    app: Flask, deep: int, as_admin: FlaskClient
) -> None:
    """At k=20 the "Pin the baseline" menu left out n1, archived at 10, though pinning names
    a run, not a cutoff (a scheduled gate may well run at k=10)."""
    with app.app_context():
        test_set = db.session.get_one(TestSet, deep)
        for name in ("n1", "n2"):
            rankings = io.BytesIO(trec({"q1": DEEP, "q2": ["x"]}))
            run_service.upload_run(test_set, rankings, "n.trec", name, None, series="nightly")
        run_service.archive_run(_run("n1"), 10)
        n1, n2 = _run("n1").id, _run("n2").id
    for k in ("20", "10"):
        html = as_admin.get(f"/test-sets/{deep}/series/nightly?k={k}").get_data(as_text=True)
        start = html.index('<select name="run">')
        menu = html[start : html.index("</select>", start)]
        options = re.findall(r'<option value="((?:id:\d+)?)"[^>]*>([^<]*)</option>', menu)
        n1_label = "n1 (archived at top 10: not in the trend at k=20)" if k == "20" else "n1"
        # Runs by id in the id: form (never read as a run named by digits).
        assert options == [
            ("", "none: the last passing run"),
            (f"id:{n1}", n1_label),
            (f"id:{n2}", "n2"),
        ]
    pinned = as_admin.post(f"/test-sets/{deep}/series/nightly/baseline", data={"run": str(n1)})
    assert pinned.status_code == 302
    html = as_admin.get(f"/test-sets/{deep}/series/nightly?k=20").get_data(as_text=True)
    assert f'<option value="id:{n1}" selected>' in html


def test_pages_of_an_archived_run_offer_only_the_cutoffs_it_kept(
    app: Flask, deep: int, as_admin: FlaskClient
) -> None:
    """The k menus of an archived run's pages offered 20 and 100 too, each a dead end: a
    bare 400 page in place of the one the menu was on."""
    with app.app_context():
        run_service.archive_run(_run(), 10)
        run, whole = _run(), _run("whole")
        query = db.session.scalar(db.select(Query).where(Query.qid == "q1"))
        ids = (run.id, whole.id, query.id)
    run_id, whole_id, query_id = ids
    base = f"/test-sets/{deep}"
    pages = {
        f"{base}/runs/{run_id}": 'name="k"',
        f"{base}/dashboard/runs/{run_id}": 'id="opt-k"',
        f"{base}/dashboard/runs/{run_id}/queries/{query_id}/": 'id="opt-k"',
        f"{base}/dashboard/compare/?run={whole_id}&run={run_id}": 'id="opt-k"',
    }
    for url, select in pages.items():
        html = as_admin.get(url).get_data(as_text=True)
        menu = html[html.index(select) : html.index("</select>", html.index(select))]
        assert re.findall(r'<option value="(\d+)"', menu) == ["1", "3", "5", "10"], url
    # A whole run's pages keep every cutoff.
    html = as_admin.get(f"{base}/dashboard/runs/{whole_id}").get_data(as_text=True)
    menu = html[html.index('id="opt-k"') : html.index("</select>", html.index('id="opt-k"'))]
    assert re.findall(r'<option value="(\d+)"', menu) == ["1", "3", "5", "10", "20", "100"]


def test_the_overview_names_the_runs_it_left_out_at_a_deeper_k(
    app: Flask, deep: int, as_admin: FlaskClient
) -> None:
    """At k=20 the overview dropped the run archived to 10 without a word, and with two runs
    said "1 of 2 runs shown: pinned, the latest of each series, the 5 newest and the 5 best",
    a reason that was not the one."""
    with app.app_context():
        run_service.archive_run(_run(), 10)
        deep_id = _run().id
    base = f"/test-sets/{deep}/dashboard"
    page = as_admin.get(f"{base}/?k=20").get_data(as_text=True)
    assert 'id="more-runs"' not in page and "Every run scored" in page
    assert 'id="left-out"' in page
    assert "Left out at k = 20, archived to fewer entries per query:" in page
    assert f'href="/test-sets/{deep}/runs/{deep_id}">deep</a> (top 10)' in page
    data = as_admin.get(f"{base}/export/overview.json?k=20").get_json()
    assert [r["run"] for r in data["runs"]] == ["whole"]
    assert data["left_out"] == [{"run": "deep", "run_id": deep_id, "kept_depth": 10}]
    at_ten = as_admin.get(f"{base}/export/overview.json?k=10").get_json()
    assert ([r["run"] for r in at_ten["runs"]], at_ten["left_out"]) == (["deep", "whole"], [])
    assert 'id="left-out"' not in as_admin.get(f"{base}/?k=10").get_data(as_text=True)


def test_the_k_charts_say_which_cutoffs_an_archived_run_did_not_keep(
    app: Flask, deep: int, as_admin: FlaskClient
) -> None:
    """ "Mean NDCG@k as k grows" called NDCG@20 and @100 of a run archived at 10 "undefined",
    a word that means no judged relevant chunk, not entries deleted."""
    with app.app_context():
        run_service.archive_run(_run(), 10)
        deep_id = _run().id
    base = f"/test-sets/{deep}/dashboard"
    gone = "not kept (archived at top 10)"
    # By hand (module docstring): NDCG@k = 0.5 up to k=10, 0.625 from k=20 (a at rank 15).
    expected = {
        "deep": f"deep: k=1 0.5000, k=3 0.5000, k=5 0.5000, k=10 0.5000, k=20 {gone}, k=100 {gone}",
        "whole": "whole: k=1 0.5000, k=3 0.5000, k=5 0.5000, k=10 0.5000, k=20 0.6250, "
        "k=100 0.6250",
    }
    for url, chart_id, names in (
        (f"{base}/?k=10", "chart-over-k", ["deep", "whole"]),
        (f"{base}/runs/{deep_id}?k=10", "chart-k", ["deep"]),
    ):
        page = as_admin.get(url).get_data(as_text=True)
        desc = re.search(rf'<desc id="{chart_id}-desc">(.*?)</desc>', page)
        assert desc is not None, url
        assert desc[1] == "; ".join(expected[name] for name in names), url
        # The legend says it too, for those who do not read the description.
        assert "deep (archived at top 10: no mean past k=10)</li>" in page, url


def test_an_archived_run_compares_at_kept_cutoffs_only(app: Flask, deep: int) -> None:
    with app.app_context():
        run_service.archive_run(_run(), 10)
        pair = [_run(), _run("whole")]
        found = comparison.compare_runs(pair, live.ScoreOptions(k=10))
        assert found is not None
        with pytest.raises(ServiceError, match="archived"):
            comparison.compare_runs(pair, live.ScoreOptions(k=20))


@pytest.mark.parametrize("measure", ["nDCG@20", "AP", "nDCG", "Rprec", "NumRet"])
def test_an_archived_run_gates_at_kept_cutoffs_only(app: Flask, deep: int, measure: str) -> None:
    """Deeper cutoffs and whole-list measures are refused, not read from the figures stored
    before archiving (they would go stale with the next grade)."""
    with app.app_context():
        run_service.archive_run(_run(), 10)
        test_set = db.session.get_one(TestSet, deep)
        kept = gate.run_gate(test_set, _run("whole"), _run(), ["nDCG@10", "NumRel"])
        # Both runs rank the same: NDCG@10 (0 + 1) / 2 for each (see the module docstring).
        assert [(c.baseline, c.candidate) for c in kept.measures] == [(0.5, 0.5), (1.0, 1.0)]
        with pytest.raises(ServiceError, match=r"archived: it kept its top 10") as refused:
            gate.run_gate(test_set, _run("whole"), _run(), [measure])
        # The message is a whole sentence: what is gone and what it still gives.
        assert str(refused.value).endswith(("still are", "not at k=20"))


def test_an_archived_run_is_not_fused(app: Flask, deep: int) -> None:
    with app.app_context():
        run_service.archive_run(_run(), 10)
        test_set = db.session.get_one(TestSet, deep)
        with pytest.raises(ServiceError, match=r"archived.*fusion needs whole runs"):
            run_service.check_fusion(test_set, [_run(), _run("whole")], "rrf", 60)


def test_the_cli_asks_first(app: Flask, deep: int, runner: FlaskCliRunner) -> None:
    refused = runner.invoke(args=["run", "archive", SET, "deep", "--keep", "10"], input="n\n")
    assert refused.exit_code != 0 and "delete the rest of its 16 entries" in refused.output
    with app.app_context():
        assert _run().kept_depth is None
    done = runner.invoke(args=["run", "archive", SET, "deep", "--keep", "10", "--yes"])
    assert done.exit_code == 0, done.output
    assert "kept 11 entries (top 10 per query), dropped 5" in done.output
    listed = runner.invoke(args=["run", "list", SET, "--archived"])
    assert (
        listed.exit_code == 0 and "deep\t" in listed.output and "archived (top 10)" in listed.output
    )
    deeper = runner.invoke(args=["run", "score", SET, "deep", "--k", "20"])
    assert deeper.exit_code != 0 and "up to 10" in deeper.output


def test_the_run_page_and_the_api_archive(
    app: Flask, deep: int, as_admin: FlaskClient, client: FlaskClient
) -> None:
    with app.app_context():
        run_id = _run().id
        whole_id = _run("whole").id
    page = as_admin.get(f"/test-sets/{deep}/runs/{run_id}").get_data(as_text=True)
    assert "Archive this run" in page and "data-confirm=" in page
    odd = as_admin.post(f"/test-sets/{deep}/runs/{run_id}/archive", data={"keep": "²"})
    assert odd.status_code == 302  # refused with a message, not a 500
    answer = as_admin.post(f"/test-sets/{deep}/runs/{run_id}/archive", data={"keep": "10"})
    assert answer.status_code == 302
    page = as_admin.get(f"/test-sets/{deep}/runs/{run_id}").get_data(as_text=True)
    assert "keeps its top 10 entries per query" in page
    deeper = as_admin.get(f"/test-sets/{deep}/runs/{run_id}?k=20")
    assert deeper.status_code == 400 and "up to 10" in deeper.get_data(as_text=True)
    listed = as_admin.get(f"/test-sets/{deep}/runs/?archived=yes").get_data(as_text=True)
    assert ">deep<" in listed and ">whole<" not in listed and "archived, top 10" in listed
    admin = make_user(app, "robot", "admin")
    with app.app_context():
        from ndcg_labeler.models import User

        token = create_token(db.session.get_one(User, admin))
    headers = {"Authorization": f"Bearer {token}"}
    url = f"/api/testsets/{SET}/runs/{whole_id}/archive"
    assert client.post(url, json={"keep": "ten"}, headers=headers).status_code == 400
    assert client.post(url, json={"keep": 9}, headers=headers).status_code == 400
    assert client.post(url, json={"keep": 10**30}, headers=headers).status_code == 400
    done = client.post(url, json={"keep": 10}, headers=headers)
    assert done.status_code == 200, done.get_json()
    body = done.get_json()
    assert (body["archived"], body["kept_depth"], body["entries_dropped"]) == (True, 10, 5)


def test_trec_eval_export_of_an_archived_run_is_refused(
    app: Flask, deep: int, as_admin: FlaskClient, runner: FlaskCliRunner
) -> None:
    """trec_eval's layout prints map, recip_rank, ndcg, num_ret and cutoffs up to 1000: for a
    run archived to its top 10 those came from the figures stored before archiving (stale after
    the next grade), so `--trec` and trec_eval.txt are refused, saying what still works."""
    with app.app_context():
        run_id, whole_id = _run().id, _run("whole").id
        run_service.archive_run(_run(), 10)
    whole = runner.invoke(args=["run", "score", SET, "whole", "--trec"])
    assert whole.exit_code == 0 and "map" in whole.output
    refused = runner.invoke(args=["run", "score", SET, "deep", "--trec"])
    assert refused.exit_code != 0 and "map " not in refused.output
    assert "kept its top 10 entries per query" in refused.output, refused.output
    assert "trec_eval" in refused.output and isinstance(refused.exception, SystemExit)
    base = f"/test-sets/{deep}/dashboard"
    assert as_admin.get(f"{base}/export/runs/{whole_id}/trec_eval.txt").status_code == 200
    download = as_admin.get(f"{base}/export/runs/{run_id}/trec_eval.txt")
    said = download.get_data(as_text=True)
    assert download.status_code == 400 and "kept its top 10 entries per query" in said
    # The run's page no longer offers the download it would refuse.
    assert "trec_eval.txt" not in as_admin.get(f"{base}/runs/{run_id}").get_data(as_text=True)
    assert "trec_eval.txt" in as_admin.get(f"{base}/runs/{whole_id}").get_data(as_text=True)
