"""Dashboard pages: access on every route, what the pages show, sorting links, live updates."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.factory import create_app
from ndcg_labeler.models import Chunk, Query
from tests.factory import A3, B3, AuthActions, Demo, grade, grant, the_test_set


def _query_id(app: Flask, demo: Demo, qid: str) -> int:
    with app.app_context():
        return db.session.scalar(
            sa.select(Query.id).where(Query.test_set_id == demo.test_set_id, Query.qid == qid)
        )


def _get_routes(app: Flask, demo: Demo) -> list[str]:
    """Every GET route of the dashboards except pooling (admins only, tested on its own)."""
    q1 = _query_id(app, demo, "q1")
    run, both = f"/runs/{demo.run_a}", f"run={demo.run_a}&run={demo.run_b}"
    paths = [
        "/",
        "/_overview",
        "/live",
        run,
        f"{run}/_table",
        f"{run}/queries/{q1}/",
        f"{run}/queries/{q1}/_detail",
        f"/compare/?{both}",
        f"/compare/_results?{both}",
        "/export/overview.csv",
        "/export/overview.json",
        "/export/qrels.txt",
        f"/export{run}/queries.csv",
        f"/export{run}/queries.json",
        f"/export{run}/trec_eval.txt",
        f"/export{run}/queries/{q1}.csv",
        f"/export{run}/queries/{q1}.json",
        f"/export/compare.csv?{both}",
        f"/export/compare.json?{both}",
        f"/export/compare-next.json?{both}",
    ]
    return [demo.url(p) for p in paths]


def test_access_on_every_route(
    app: Flask, client: FlaskClient, auth, annotator_id: int, admin_id: int, dash: Demo
) -> None:
    routes = _get_routes(app, dash)
    for url in routes:
        response = client.get(url)
        assert response.status_code == 302, url
        assert "/login" in response.headers["Location"]
    auth.login("ann")
    for url in routes:
        assert client.get(url).status_code == 404, url  # not a member: hidden
    grant(app, dash.test_set_id, annotator_id)
    for url in routes:
        assert client.get(url).status_code == 200, url
    auth.logout()
    auth.login("admin")
    for url in routes:
        assert client.get(url).status_code == 200, url


def test_overview_page(as_admin: FlaskClient, dash: Demo) -> None:
    html = as_admin.get(dash.url("/?k=3")).get_data(as_text=True)
    mean_a = sum(v for v in A3.values() if v is not None) / 4
    assert f"{mean_a:.4f}" in html
    assert "mean over <strong>4</strong> of 5 queries; 1 undefined; 0 missing from run" in html
    assert "mean over <strong>4</strong> of 5 queries; 1 undefined; 2 missing from run" in html
    assert (
        "NDCG@<strong>3</strong>" in html
        and "ideal from <strong>all judged chunks</strong>" in html
    )
    assert "grades combined by <strong>median</strong>" in html
    assert "Label progress" in html
    assert "<svg" in html and "Mean NDCG@k as k grows" in html
    assert 'hx-trigger="every 1s"' in html
    other = as_admin.get(dash.url("/?k=3&aggregation=max&gain=exp")).get_data(as_text=True)
    assert (
        "grades combined by <strong>max</strong>" in other and "gain <strong>exp</strong>" in other
    )
    for bad in ("k=0", "k=abc", "gain=log", "ideal=none", "aggregation=vote"):
        assert as_admin.get(dash.url(f"/?{bad}")).status_code == 400, bad


def test_every_mean_carries_its_t_interval(as_admin: FlaskClient, dash: Demo) -> None:
    for name, per_query in (("A", A3), ("B", B3)):
        values = [v for v in per_query.values() if v is not None]
        mean = sum(values) / len(values)
        low, high = stats.t.interval(0.95, len(values) - 1, loc=mean, scale=stats.sem(values))
        compact = f"[{low:.4f}, {high:.4f}] n={len(values)}"
        spoken = f"95% t interval {low:.4f} to {high:.4f} over {len(values)} queries"
        overview = as_admin.get(dash.url("/?k=3")).get_data(as_text=True)
        assert compact in overview and spoken in overview, name
        assert "Badges and intervals" in overview
        run_id = dash.run_a if name == "A" else dash.run_b
        table = as_admin.get(dash.url(f"/runs/{run_id}?k=3")).get_data(as_text=True)
        assert compact in table and spoken in table, name
        exported = as_admin.get(dash.url("/export/overview.json?k=3")).json
        row = next(r for r in exported["runs"] if r["run"] == name)
        assert (row["n"], row["ci_method"], row["ci_reason"]) == (len(values), "t", None)
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low), pytest.approx(high))


def test_run_table_page(app: Flask, as_admin: FlaskClient, dash: Demo) -> None:
    url = dash.url(f"/runs/{dash.run_a}")
    html = as_admin.get(url + "?k=3").get_data(as_text=True)
    rows = [q for q in ("q1", "q3", "q2", "q4", "q5") if f'data-qid="{q}"' in html]
    positions = [html.index(f'data-qid="{q}"') for q in rows]
    assert positions == sorted(positions) and len(rows) == 5  # largest gap first
    assert f"{A3['q1']:.4f}" in html and "poor</span>" in html
    assert "no relevant judged chunk: IDCG is 0" in html
    assert "&lt;b&gt;dress&lt;/b&gt; code" in html and "<b>dress</b>" not in html
    assert "?k=3&amp;sort=ndcg&amp;dir=asc" in html  # sort links keep the options
    assert 'aria-sort="descending"' in html
    by_ndcg = as_admin.get(url + "?k=3&sort=ndcg&dir=asc").get_data(as_text=True)
    assert by_ndcg.index('data-qid="q1"') < by_ndcg.index('data-qid="q3"')
    assert 'aria-sort="ascending"' in by_ndcg
    filtered = as_admin.get(url + "?k=3&band=undefined").get_data(as_text=True)
    assert 'data-qid="q4"' in filtered and 'data-qid="q1"' not in filtered
    texted = as_admin.get(url + "?q=DRESS").get_data(as_text=True)
    assert 'data-qid="q3"' in texted and 'data-qid="q2"' not in texted
    missing = as_admin.get(dash.url(f"/runs/{dash.run_b}?band=missing")).get_data(as_text=True)
    assert missing.count('badge missing">missing from run</span>') == 2
    assert as_admin.get(url + "?sort=evil").status_code == 400
    assert as_admin.get(dash.url("/runs/999999")).status_code == 404


def test_fragments_are_partials(as_admin: FlaskClient, dash: Demo) -> None:
    for path in ("/_overview", f"/runs/{dash.run_a}/_table"):
        html = as_admin.get(dash.url(path)).get_data(as_text=True)
        assert html.lstrip().startswith('<div id="live-scores"')
        assert "<html" not in html


def test_live_endpoint_changes_after_a_grade(app: Flask, as_admin: FlaskClient, dash: Demo):
    first = as_admin.get(dash.url("/live")).json
    token = first["token"]
    same = as_admin.get(dash.url(f"/live?since={token}"))
    assert same.json["changed"] is False and "HX-Trigger" not in same.headers
    assert same.headers["Cache-Control"] == "no-store"
    with app.app_context():
        grade(the_test_set(dash), "q4", "a", 2, "maria")
        db.session.remove()
    moved = as_admin.get(dash.url(f"/live?since={token}"))
    assert moved.json["changed"] is True
    assert moved.json["labels_version"] == first["labels_version"] + 1
    assert moved.headers["HX-Trigger"] == "scores-changed"
    # The re-fetched fragment has the new numbers: q4 now has a grade (a 2 at rank 1 of A).
    html = as_admin.get(dash.url(f"/runs/{dash.run_a}/_table?k=3")).get_data(as_text=True)
    assert "no relevant judged chunk" not in html
    assert f"since={moved.json['token']}" in html


@pytest.mark.parametrize("path", ["/compare/", "/compare/_results"])
def test_compare_page(as_admin: FlaskClient, dash: Demo, path: str) -> None:
    html = as_admin.get(dash.url(path + "?k=3")).get_data(as_text=True)  # default: A and B
    assert "left out of all of them" in html
    assert "Compared: <strong>4</strong> of 5 queries (1 left out)" in html
    assert '<td class="num">2</td><td class="num">0</td><td class="num">2</td>' in html
    rows = [html.index(f'<tr data-qid="{q}">') for q in ("q5", "q1", "q3", "q2")]
    assert rows == sorted(rows)  # largest |B − A| first
    assert "<svg" in html and "above the diagonal" in html


def test_compare_needs_two_runs(as_admin: FlaskClient, dash: Demo) -> None:
    one = as_admin.get(dash.url(f"/compare/?run={dash.run_a}")).get_data(as_text=True)
    assert "Choose at least two runs to compare." in one
    assert as_admin.get(dash.url("/compare/?run=abc")).status_code == 400
    assert as_admin.get(dash.url("/compare/?run=999999")).status_code == 404
    assert as_admin.get(dash.url(f"/export/compare.json?run={dash.run_a}")).status_code == 400


def test_nav_links_to_the_dashboard(as_admin: FlaskClient, dash: Demo) -> None:
    html = as_admin.get(f"/test-sets/{dash.test_set_id}").get_data(as_text=True)
    assert f'href="/test-sets/{dash.test_set_id}/dashboard/"' in html


def test_a_second_server_process_sees_grades_made_through_the_first(
    app: Flask, as_admin: FlaskClient, dash: Demo
) -> None:
    """Two apps over one database have separate score caches, as two processes would."""
    keys = ("TESTING", "SECRET_KEY", "SQLALCHEMY_DATABASE_URI", "NDCG_DEMO", "WTF_CSRF_ENABLED")
    other = create_app({**{k: app.config[k] for k in keys}, "INSTANCE_PATH": app.instance_path})
    second = other.test_client()
    assert AuthActions(second).login("admin").status_code == 302
    table = dash.url(f"/runs/{dash.run_a}/_table?k=3&band=undefined")
    assert 'data-qid="q4"' in second.get(table).get_data(as_text=True)  # warms its cache
    token = second.get(dash.url("/live")).json["token"]
    q4 = _query_id(app, dash, "q4")
    with app.app_context():
        chunk = db.session.scalar(sa.select(Chunk.id).where(Chunk.docid == "a"))
    posted = as_admin.post(
        dash.url(f"/runs/{dash.run_a}/queries/{q4}/grade"), data={"chunk_id": chunk, "grade": 2}
    )
    assert posted.status_code == 302
    moved = second.get(dash.url(f"/live?since={token}"))
    assert moved.json["changed"] is True and moved.headers["HX-Trigger"] == "scores-changed"
    # q4 now has a relevant grade: it is no longer undefined in the other process either.
    assert 'data-qid="q4"' not in second.get(table).get_data(as_text=True)
    with other.app_context():
        db.engine.dispose()
