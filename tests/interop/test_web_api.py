"""Interop from the browser's import page, its download links, and the JSON API."""

from __future__ import annotations

import io
import json
import time
import uuid
from pathlib import Path

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Judgment, Query, TestSet, User
from ndcg_labeler.services import interop, jobs, runs
from ndcg_labeler.services.accounts import create_token
from tests.factory import AuthActions, grant, make_test_set, make_user
from tests.interop.test_cli import QUEPID, SNAPSHOT, SRW


def _token(app: Flask, user_id: int) -> dict[str, str]:
    with app.app_context():
        token = create_token(db.session.get(User, user_id))
        db.session.remove()
    return {"Authorization": f"Bearer {token}"}


def _count(app: Flask, model: type) -> int:
    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(model))


def test_import_page_imports_a_quepid_file_and_links_the_downloads(
    app: Flask, as_admin: FlaskClient
) -> None:
    set_id = make_test_set(app, "Web")
    page = as_admin.get(f"/test-sets/{set_id}/import")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert f'action="/test-sets/{set_id}/import/peer"' in html
    for link in ("quepid-judgments.csv", "srw-judgments.json", "srw-query-set.json"):
        assert f"/test-sets/{set_id}/dashboard/export/{link}" in html
    bad = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={
            "peer-fmt": "quepid",
            "peer-file": (io.BytesIO(b"query,docid,rating\nq,a,7\n"), "c.csv"),
        },
    )
    assert bad.status_code == 422
    assert "c.csv:2: docid &#39;a&#39;: rating 7 is not a grade" in bad.get_data(as_text=True)
    assert _count(app, Query) == 0
    good = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": "quepid", "peer-file": (io.BytesIO(QUEPID.encode()), "case.csv")},
    )
    assert good.status_code == 200
    assert "queries: 3 created" in good.get_data(as_text=True)
    assert _count(app, Judgment) == 3
    csv = as_admin.get(f"/test-sets/{set_id}/dashboard/export/quepid-judgments.csv")
    assert csv.status_code == 200 and csv.mimetype == "text/csv"
    header, *rows = csv.get_data(as_text=True).splitlines()
    assert header == "query,docid,rating"
    # Queries come in qid order (t-<hash>: no meaning), each query's docids together.
    assert sorted(rows) == ["blue shoes,d3,2", "green hat,,", "red dress,d1,3", "red dress,d2,0"]
    queries = json.loads(
        as_admin.get(f"/test-sets/{set_id}/dashboard/export/srw-query-set.json").data
    )
    assert queries["sampling"] == "manual"
    assert {q["queryText"] for q in queries["querySetQueries"]} == {
        "red dress",
        "blue shoes",
        "green hat",
    }


def test_api_imports_exports_and_uploads_a_snapshot(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    headers = _token(app, admin_id)
    set_id = make_test_set(app, "Api")
    answer = client.post(
        f"/api/testsets/{set_id}/import",
        data={"srw_judgments": (io.BytesIO(SRW.encode()), "srw.json")},
        headers=headers,
    )
    assert answer.status_code == 201, answer.json
    assert answer.json["files"] == ["srw.json"]
    both = client.post(
        f"/api/testsets/{set_id}/import",
        data={
            "srw_judgments": (io.BytesIO(SRW.encode()), "srw.json"),
            "queries": (io.BytesIO(b"q1\tx\n"), "q.tsv"),
        },
        headers=headers,
    )
    assert both.status_code == 400 and "on its own" in both.json["detail"]
    exported = client.get(f"/api/testsets/{set_id}/export?format=srw-judgments", headers=headers)
    assert exported.status_code == 200
    body = json.loads(exported.data)
    assert body["type"] == "IMPORT_JUDGMENT"
    ratings = {
        (entry["query"], r["docId"]): r["rating"]
        for entry in body["judgmentRatings"]
        for r in entry["ratings"]
    }
    assert ratings == {("red dress", "d1"): "3.000", ("red dress", "d2"): "1.000"}
    wrong = client.get(f"/api/testsets/{set_id}/export?format=xml", headers=headers)
    assert (
        wrong.status_code == 400 and "quepid, srw-judgments, srw-queries" in (wrong.json["detail"])
    )
    run = client.post(
        f"/api/testsets/{set_id}/runs",
        data={
            "file": (io.BytesIO(SNAPSHOT.encode()), "snap.csv"),
            "format": "quepid-snapshot",
            "name": "snap",
        },
        headers=headers,
    )
    assert run.status_code == 201, run.json
    assert run.json["format"] == "quepid-snapshot"
    # "blue shoes" is not in this set: left out and reported, as any run's unknown query.
    assert run.json["report"]["unknown_queries"]["count"] == 1
    snapshot = client.get(f"/api/testsets/{set_id}/runs/snap/export", headers=headers)
    assert snapshot.status_code == 200 and snapshot.mimetype == "text/csv"
    rows = [line.split(",")[3:6] for line in snapshot.get_data(as_text=True).splitlines()[1:]]
    assert rows == [["red dress", "d1", "1"], ["red dress", "d2", "2"], ["red dress", "d9", "3"]]


def test_a_large_peer_file_is_checked_now_and_imported_by_a_job(
    app: Flask, as_admin: FlaskClient, tmp_path: Path
) -> None:
    app.config["NDCG_JOB_THRESHOLD_MB"] = 1 / 1024  # above 1 KiB: a job
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "jobs-queue.sqlite3")
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"
    set_id = make_test_set(app, "Big")
    rows = "".join(f"query {i},d{i},{i % 4}\n" for i in range(200))
    body = ("query,docid,rating\n" + rows).encode()
    bad = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": "quepid", "peer-file": (io.BytesIO(body + b"q,x,9\n"), "big.csv")},
    )
    assert bad.status_code == 422  # checked in the request: no job for a bad file
    assert "big.csv:202: docid &#39;x&#39;: rating 9" in bad.get_data(as_text=True)
    response = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": "quepid", "peer-file": (io.BytesIO(body), "big.csv")},
    )
    assert response.status_code == 302 and response.headers["Location"].startswith("/jobs/")
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    assert _count(app, Query) == 0
    worker = jobs.worker(app, threads=1)
    worker._set_signal_handlers = lambda: None  # pytest keeps its own SIGINT handler
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with app.app_context():
                state = db.session.get(Job, job_id).state
                db.session.remove()
            if state in ("done", "failed"):
                break
            time.sleep(0.05)
    finally:
        worker.stop(graceful=True)
    assert state == "done"
    assert _count(app, Query) == 200 and _count(app, Judgment) == 200


def test_api_qrels_refuses_a_format_it_does_not_write(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    headers = _token(app, admin_id)
    set_id = make_test_set(app, "Fmt")
    for fmt in ("TREC", "csv", ""):
        wrong = client.get(f"/api/testsets/{set_id}/qrels?format={fmt}", headers=headers)
        assert wrong.status_code == 400, fmt
        assert wrong.json["detail"] == f"format must be json or trec, not '{fmt}'"
    assert (
        client.get(f"/api/testsets/{set_id}/qrels?format=trec", headers=headers).status_code == 200
    )
    assert client.get(f"/api/testsets/{set_id}/qrels", headers=headers).json == {"qrels": {}}


RATING_MAP_ONLY = "the rating map applies to Quepid judgments and SRW judgment lists only"


def test_api_refuses_a_rating_map_it_would_not_apply(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    headers = _token(app, admin_id)
    set_id = make_test_set(app, "Map")
    srw_queries = b'{"querySetQueries": [{"queryText": "tv"}]}'
    for data in (
        {"srw_queries": (io.BytesIO(srw_queries), "qs.json")},
        {"queries": (io.BytesIO(b"q1\tx\n"), "q.tsv")},
        {"ir_datasets": "ndcg-test/never-looked-up"},
    ):
        wrong = client.post(
            f"/api/testsets/{set_id}/import", data={**data, "rating_map": "0-10"}, headers=headers
        )
        assert wrong.status_code == 400, data
        assert wrong.json["detail"] == RATING_MAP_ONLY
    assert _count(app, Query) == 0


def test_import_page_refuses_a_rating_map_it_would_not_apply(
    app: Flask, as_admin: FlaskClient
) -> None:
    set_id = make_test_set(app, "MapWeb")
    page = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={
            "peer-fmt": "srw-queries",
            "peer-rating_map": "0-10",
            "peer-file": (io.BytesIO(b'{"querySetQueries": [{"queryText": "tv"}]}'), "qs.json"),
        },
    )
    assert page.status_code == 422
    assert RATING_MAP_ONLY in page.get_data(as_text=True)
    assert _count(app, Query) == 0


def test_upload_page_stores_a_quepid_snapshot_as_one(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    set_id = make_test_set(app, "Snap")
    as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": "quepid", "peer-file": (io.BytesIO(QUEPID.encode()), "case.csv")},
    )
    page = as_admin.get(f"/test-sets/{set_id}/runs/upload").get_data(as_text=True)
    assert 'name="format"' in page and 'value="quepid-snapshot"' in page
    answer = as_admin.post(
        f"/test-sets/{set_id}/runs/upload",
        data={
            "file": (io.BytesIO(SNAPSHOT.encode()), "snap.csv"),
            "format": "quepid-snapshot",
            "name": "from-quepid",
        },
    )
    assert answer.status_code == 302, answer.get_data(as_text=True)
    shown = as_admin.get(answer.headers["Location"]).get_data(as_text=True)
    assert "snap.csv (quepid-snapshot)" in shown
    listed = as_admin.get(f"/api/testsets/{set_id}/runs", headers=_token(app, admin_id))
    assert [r["format"] for r in listed.json["runs"]] == ["quepid-snapshot"]
    # Positions 1, 2, 3 of "red dress" are d1, d2, d9 (the file lists them out of order).
    with app.app_context():
        test_set = db.session.get(TestSet, set_id)
        lists = runs.ranked_lists(runs.require_run(test_set, "from-quepid"))
    assert [d for d, _ in lists[interop.text_qid("red dress")]] == ["d1", "d2", "d9"]
    # Not a snapshot: its error names the file's line, and nothing is stored.
    bad = as_admin.post(
        f"/test-sets/{set_id}/runs/upload",
        data={
            "file": (io.BytesIO(b"q1 Q0 d1 1 1.0 x\n"), "r.trec"),
            "format": "quepid-snapshot",
            "name": "wrong",
        },
    )
    assert bad.status_code == 422 and "nothing was stored" in bad.get_data(as_text=True)


NOTHING_NEW = "nothing new: every query is in the test set already, and no ratings"


def test_an_srw_query_set_with_nothing_new_says_so_as_the_cli_does(
    app: Flask, client: FlaskClient, as_admin: FlaskClient, admin_id: int
) -> None:
    headers = _token(app, admin_id)
    set_id = make_test_set(app, "Again")
    query_set = b'{"querySetQueries": [{"queryText": "led tv"}, {"queryText": "tv"}]}'
    first = client.post(
        f"/api/testsets/{set_id}/import",
        data={"srw_queries": (io.BytesIO(query_set), "qs.json")},
        headers=headers,
    )
    assert first.status_code == 201
    assert first.json["report"] == ["queries: 2 created, 0 updated, 0 unchanged"]
    assert first.json["nothing_new"] is False and first.json["message"] is None
    again = client.post(
        f"/api/testsets/{set_id}/import",
        data={"srw_queries": (io.BytesIO(query_set), "qs.json")},
        headers=headers,
    )
    assert again.status_code == 201
    assert again.json["report"] == [] and again.json["files"] == ["qs.json"]
    assert again.json["nothing_new"] is True and again.json["message"] == NOTHING_NEW
    page = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": "srw-queries", "peer-file": (io.BytesIO(query_set), "qs.json")},
    )
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "<h2>Nothing new</h2>" in html and f"<p>N{NOTHING_NEW[1:]}.</p>" in html
    assert "<h2>Imported</h2>" not in html


def test_qrels_and_export_of_a_blind_set_say_why_to_an_annotator(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    set_id = make_test_set(app, "Blind")
    annotator = make_user(app, "ann")
    grant(app, set_id, annotator)
    headers = _token(app, annotator)
    assert client.get(f"/api/testsets/{set_id}/qrels", headers=headers).status_code == 200
    with app.app_context():
        db.session.get_one(TestSet, set_id).judgments_per_pair = 2  # blind judging
        db.session.commit()
    blind = "this test set is judged blind: its grades are for admins"
    for path in ("qrels", "export?format=quepid"):
        answer = client.get(f"/api/testsets/{set_id}/{path}", headers=headers)
        assert answer.status_code == 403 and answer.json["detail"] == blind, path
    admin = _token(app, admin_id)
    assert client.get(f"/api/testsets/{set_id}/qrels", headers=admin).status_code == 200


def test_a_blind_sets_query_set_export_is_offered_to_its_annotators(
    app: Flask, client: FlaskClient, as_admin: FlaskClient, auth: AuthActions
) -> None:
    set_id = make_test_set(app, "BlindQueries")
    as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": "quepid", "peer-file": (io.BytesIO(QUEPID.encode()), "case.csv")},
    )
    annotator = make_user(app, "blindie")
    grant(app, set_id, annotator)
    with app.app_context():
        db.session.get_one(TestSet, set_id).judgments_per_pair = 2  # blind judging
        db.session.commit()
    headers = _token(app, annotator)
    auth.logout()
    auth.login("blindie")
    # Where the annotator sees the queries, the query set (texts only) is offered.
    page = client.get(f"/test-sets/{set_id}/queries").get_data(as_text=True)
    link = f"/test-sets/{set_id}/dashboard/export/srw-query-set.json"
    assert f'href="{link}"' in page
    texts = {q["queryText"] for q in json.loads(client.get(link).data)["querySetQueries"]}
    assert texts == {"red dress", "blue shoes", "green hat"}
    api = client.get(f"/api/testsets/{set_id}/export?format=srw-queries", headers=headers)
    assert api.status_code == 200 and json.loads(api.data)["querySetQueries"]
    # What reveals grades stays refused, in the browser and over the API.
    for path in ("quepid-judgments.csv", "srw-judgments.json"):
        assert client.get(f"/test-sets/{set_id}/dashboard/export/{path}").status_code == 403
    assert "quepid-judgments" not in page and "srw-judgments" not in page
    blind = "this test set is judged blind: its grades are for admins"
    for fmt in ("quepid", "srw-judgments"):
        answer = client.get(f"/api/testsets/{set_id}/export?format={fmt}", headers=headers)
        assert answer.status_code == 403 and answer.json["detail"] == blind, fmt
    # A format that does not exist is that, not a blind set's refusal.
    wrong = client.get(f"/api/testsets/{set_id}/export?format=srw-query", headers=headers)
    assert wrong.status_code == 400, wrong.json
    assert "quepid, srw-judgments, srw-queries" in wrong.json["detail"]
