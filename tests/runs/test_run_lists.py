"""Lists of many runs: search, tags, sorting by the stored mean, pages, and only the page scored.

Expected means are hand-computed: a relevant chunk (grade 1) at rank 2 gives NDCG@10
1/log2(3) = 0.63093 (its ideal is the same grade at rank 1).
"""

from __future__ import annotations

import importlib
import io
import json
import math

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.accounts import create_token
from ndcg_labeler.views import runs as runs_view
from tests.factory import build_test_set, grade, make_test_set, trec

# The module, not the function the dashboard package exports under the same name.
overview_module = importlib.import_module("ndcg_labeler.services.dashboard.overview")
engine = importlib.import_module("ndcg_labeler.services.live.engine")
SET = "many"
RUNS = {  # name: (rankings, notes, tags), uploaded in this order
    "bm25-base": ({"q1": ["a"], "q2": ["x"]}, "", ["baseline"]),
    "dense-v1": ({"q1": ["b", "a"], "q2": ["x"]}, "Nightly build", ["dense", "nightly"]),
    "dense-v2": ({"q1": ["b"], "q2": ["y"]}, "", ["dense"]),
}
# Mean NDCG@10 of each run over q1 and q2, by hand.
MEANS = {"bm25-base": 1.0, "dense-v1": (1 / math.log2(3) + 1) / 2, "dense-v2": 0.0}


@pytest.fixture
def many(app: Flask) -> int:
    """Test set 'many' (q1: a relevant, q2: x relevant) and the three RUNS; returns its id."""
    with app.app_context():
        test_set = build_test_set(SET, {"q1": "one", "q2": "two"}, [("q1", "a", 1), ("q2", "x", 1)])
        for name, (rankings, notes, tags) in RUNS.items():
            run = run_service.upload_run(
                test_set, io.BytesIO(trec(rankings)), f"{name}.trec", name, None, notes=notes
            )
            run_service.mark_run(run, add=tags)
        test_set_id = test_set.id
        db.session.remove()
        return test_set_id


def _names(page: run_service.RunFilter, app: Flask, test_set_id: int) -> list[str]:
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        return [run.name for run in run_service.find_runs(test_set, page).runs]


def test_the_upload_stores_each_runs_mean_and_lists_sort_by_it(app: Flask, many: int) -> None:
    with app.app_context():
        stored = {run.name: run.mean_ndcg for run in db.session.scalars(db.select(Run))}
    assert stored == pytest.approx(MEANS)
    best = _names(run_service.RunFilter(sort="best"), app, many)
    assert best == ["bm25-base", "dense-v1", "dense-v2"]
    assert _names(run_service.RunFilter(sort="worst"), app, many) == best[::-1]
    assert _names(run_service.RunFilter(sort="newest"), app, many) == list(RUNS)[::-1]
    assert _names(run_service.RunFilter(sort="name"), app, many) == sorted(RUNS)


def test_search_tags_and_pages(app: Flask, many: int) -> None:
    assert _names(run_service.RunFilter(search="DENSE"), app, many) == ["dense-v1", "dense-v2"]
    assert _names(run_service.RunFilter(search="nightly b"), app, many) == ["dense-v1"]  # notes
    assert _names(run_service.RunFilter(search="%"), app, many) == []  # no wildcard
    assert _names(run_service.RunFilter(tag="dense"), app, many) == ["dense-v1", "dense-v2"]
    assert _names(run_service.RunFilter(tag="dens"), app, many) == []  # whole tags only
    with app.app_context():
        test_set = db.session.get_one(TestSet, many)
        page = run_service.find_runs(test_set, run_service.RunFilter(limit=1, offset=1))
        assert ([r.name for r in page.runs], page.total, page.has_next) == (["dense-v1"], 3, True)
        last = run_service.find_runs(test_set, run_service.RunFilter(limit=2, offset=2))
        assert ([r.name for r in last.runs], last.has_next) == (["dense-v2"], False)


@pytest.mark.parametrize(
    ("wanted", "message"),
    [
        (run_service.RunFilter(sort="fastest"), "sort must be one of"),
        (run_service.RunFilter(limit=0), "limit must be"),
        (run_service.RunFilter(offset=-1), "offset must be"),
    ],
)
def test_a_bad_filter_is_refused(ctx: Flask, wanted: run_service.RunFilter, message: str) -> None:
    with pytest.raises(ServiceError, match=message):
        wanted.checked()


def test_search_folds_the_case_of_any_letter(app: Flask, many: int) -> None:
    """SQLite's lower() folds ASCII only: the exact name 'Ärger-run' was not found by
    'Ärger', nor a note 'CAFÉ' by 'café'."""
    with app.app_context():
        test_set = db.session.get_one(TestSet, many)
        rankings = io.BytesIO(trec({"q1": ["a"]}))
        run_service.upload_run(test_set, rankings, "u.trec", "Ärger-run", None, notes="CAFÉ")
    for text in ("Ärger", "ärger", "ÄRGER-RUN", "café", "Café"):
        found = _names(run_service.RunFilter(search=text), app, many)
        assert found == ["Ärger-run"], text
    assert _names(run_service.RunFilter(search="%"), app, many) == []


def test_tags_are_words_and_marking_is_audited(app: Flask, many: int) -> None:
    with app.app_context():
        run = db.session.scalar(db.select(Run).where(Run.name == "dense-v2"))
        with pytest.raises(ServiceError, match="no spaces"):
            run_service.mark_run(run, add=["two words"])
        run_service.mark_run(run, add=["prod"], remove=["dense"], pinned=True)
        db.session.expire_all()
        run = db.session.scalar(db.select(Run).where(Run.name == "dense-v2"))
        assert (run.tag_names, run.pinned) == (["prod"], True)
        assert run_service.test_set_tags(run.test_set) == ["baseline", "dense", "nightly", "prod"]


def test_the_runs_page_scores_only_the_runs_it_shows(
    app: Flask, many: int, as_admin: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs_view, "PER_PAGE", 2)
    scored: list[str] = []
    real = engine.score_run

    def spy(run: Run, *args: object) -> object:
        scored.append(run.name)
        return real(run, *args)

    monkeypatch.setattr(engine, "score_run", spy)
    # Right after the uploads every run's stored list line is current: nothing is scored.
    first = as_admin.get(f"/test-sets/{many}/runs/?sort=best").get_data(as_text=True)
    assert scored == [] and f"{MEANS['dense-v1']:.4f}" in first
    # A grade moves the labels version: only the page's two runs are scored again.
    with app.app_context():
        grade(db.session.get_one(TestSet, many), "q2", "y", 1, "ann")
    first = as_admin.get(f"/test-sets/{many}/runs/?sort=best").get_data(as_text=True)
    assert scored == ["bm25-base", "dense-v1"]
    # dense-v1's q2 still has x at rank 1; its ideal now holds two grade-1 chunks:
    # NDCG@10 = 1 / (1 + 1/log2(3)).
    q2 = 1 / (1 + 1 / math.log2(3))
    assert f"{(1 / math.log2(3) + q2) / 2:.4f}" in first
    assert first.index(">bm25-base<") < first.index(">dense-v1<")
    assert ">dense-v2<" not in first and "Runs 1–2 of 3" in first and 'rel="next"' in first
    assert "page=2" in first and "sort=best" in first
    second = as_admin.get(f"/test-sets/{many}/runs/?sort=best&page=2").get_data(as_text=True)
    assert ">dense-v2<" in second and ">bm25-base<" not in second and 'rel="prev"' in second
    found = as_admin.get(f"/test-sets/{many}/runs/?q=dense&tag=nightly").get_data(as_text=True)
    assert ">dense-v1<" in found and ">dense-v2<" not in found and "Runs 1–1 of 1" in found
    none = as_admin.get(f"/test-sets/{many}/runs/?q=nothing-like-it").get_data(as_text=True)
    assert "No run matches" in none
    assert as_admin.get(f"/test-sets/{many}/runs/?sort=fastest").status_code == 400
    assert as_admin.get(f"/test-sets/{many}/runs/?page=²").status_code == 400


def test_the_overview_shows_the_runs_that_matter(
    app: Flask, many: int, as_admin: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(overview_module, "SHOWN_ALL", 1)
    monkeypatch.setattr(overview_module, "SHOWN_NEWEST", 1)
    monkeypatch.setattr(overview_module, "SHOWN_BEST", 1)
    scored: list[int] = []
    real = engine.live_state

    def spy(run: Run, *args: object, **kwargs: object) -> object:
        scored.append(run.id)
        return real(run, *args, **kwargs)

    monkeypatch.setattr(engine, "live_state", spy)
    data = as_admin.get(f"/test-sets/{many}/dashboard/export/overview.json").get_json()
    page = as_admin.get(f"/test-sets/{many}/dashboard/").get_data(as_text=True)
    assert scored == []  # default options: the stored list lines and means over k serve it
    assert f"{MEANS['dense-v2']:.4f}" in page and "chart-over-k" in page
    assert "2 of 3 runs shown: pinned, the latest of each series" in page
    # The newest (dense-v2) and the best (bm25-base); dense-v1 is neither.
    assert [row["run"] for row in data["runs"]] == ["bm25-base", "dense-v2"]
    assert data["runs_total"] == 3
    as_admin.post(
        f"/test-sets/{many}/runs/{_run_id(app, 'dense-v1')}/curate",
        data={"tags": "dense nightly", "pinned": "1", "csrf_token": _csrf(as_admin, many)},
    )
    page = as_admin.get(f"/test-sets/{many}/dashboard/").get_data(as_text=True)
    assert ">dense-v1<" in page and "3 of 3 runs shown" not in page
    data = as_admin.get(f"/test-sets/{many}/dashboard/export/overview.json").get_json()
    assert [row["run"] for row in data["runs"]] == list(RUNS)


def test_the_overview_shows_the_latest_run_of_each_series(
    app: Flask, many: int, as_admin: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(overview_module, "SHOWN_ALL", 1)
    monkeypatch.setattr(overview_module, "SHOWN_NEWEST", 1)
    monkeypatch.setattr(overview_module, "SHOWN_BEST", 1)
    with app.app_context():
        # dense-v1 is the latest of "nightly" (the older run in it is bm25-base); dense-v2,
        # newer, is in no series.
        for name in ("bm25-base", "dense-v1"):
            db.session.get_one(Run, _run_id(app, name)).series = "nightly"
        db.session.commit()
    data = as_admin.get(f"/test-sets/{many}/dashboard/export/overview.json").get_json()
    assert [row["run"] for row in data["runs"]] == list(RUNS)


def _run_id(app: Flask, name: str) -> int:
    with app.app_context():
        return db.session.scalar(db.select(Run.id).where(Run.name == name))


def _csrf(client: FlaskClient, test_set_id: int) -> str:
    """Forms' CSRF token as the run page carries it (the test config may switch CSRF off)."""
    text = client.get(f"/test-sets/{test_set_id}/runs/").get_data(as_text=True)
    marker = 'name="csrf_token" value="'
    return text.split(marker, 1)[1].split('"', 1)[0] if marker in text else ""


def test_the_api_lists_a_page_with_its_total(app: Flask, many: int, client: FlaskClient) -> None:
    from tests.factory import make_user

    user = make_user(app, "robot", "admin")
    with app.app_context():
        from ndcg_labeler.models import User

        token = create_token(db.session.get_one(User, user))
    headers = {"Authorization": f"Bearer {token}"}
    url = f"/api/testsets/{SET}/runs"
    data = client.get(f"{url}?sort=best&per_page=1&page=2", headers=headers).get_json()
    assert [r["name"] for r in data["runs"]] == ["dense-v1"]
    assert (data["total"], data["page"], data["per_page"], data["next_page"]) == (3, 2, 1, 3)
    assert data["runs"][0]["tags"] == ["dense", "nightly"]
    assert data["runs"][0]["mean_ndcg"] == pytest.approx(MEANS["dense-v1"])
    data = client.get(f"{url}?q=dense&tag=dense&archived=no", headers=headers).get_json()
    assert ([r["name"] for r in data["runs"]], data["next_page"]) == (
        ["dense-v1", "dense-v2"],
        None,
    )
    # "²" is a digit to str.isdigit() but not to int(): refused, not a 500.
    for bad in ("sort=fastest", "page=0", "per_page=201", "archived=maybe", "page=²", "per_page=²"):
        assert client.get(f"{url}?{bad}", headers=headers).status_code == 400, bad
    tagged = client.post(
        f"{url}/dense-v2/tags", json={"add": ["prod"], "pinned": True}, headers=headers
    ).get_json()
    assert (tagged["tags"], tagged["pinned"]) == (["dense", "prod"], True)
    bad = client.post(f"{url}/dense-v2/tags", json={"add": "prod"}, headers=headers)
    assert bad.status_code == 400


def test_run_list_flags(app: Flask, many: int, runner: FlaskCliRunner) -> None:
    def listed(*args: str) -> dict:
        result = runner.invoke(args=["run", "list", SET, "--json", *args])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    data = listed("--sort", "best", "--limit", "2")
    assert [r["run"] for r in data["runs"]] == ["bm25-base", "dense-v1"]
    assert data["total"] == 3
    assert [r["mean_ndcg"] for r in data["runs"]] == pytest.approx([1.0, MEANS["dense-v1"]])
    assert [r["run"] for r in listed("--search", "dense", "--offset", "1")["runs"]] == ["dense-v2"]
    assert [r["run"] for r in listed("--tag", "baseline")["runs"]] == ["bm25-base"]
    assert listed("--archived")["runs"] == []
    assert len(listed("--whole")["runs"]) == 3
    text = runner.invoke(args=["run", "list", SET, "--tag", "nightly"])
    assert text.exit_code == 0 and "[dense, nightly]" in text.output
    tagged = runner.invoke(args=["run", "tag", SET, "dense-v2", "--add", "prod", "--pin"])
    assert tagged.exit_code == 0 and "dense, prod; pinned" in tagged.output
    bad = runner.invoke(args=["run", "list", SET, "--sort", "fastest"])
    assert bad.exit_code != 0
    none = runner.invoke(args=["run", "list", SET, "--search", "zzz"])
    assert (none.exit_code, none.stdout, none.stderr) == (0, "", f"No run of '{SET}' matches.\n")
    make_test_set(app, "empty")
    empty = runner.invoke(args=["run", "list", "empty"])
    assert (empty.exit_code, empty.stdout) == (0, "")
    assert empty.stderr == "'empty' has no runs yet: flask run upload adds one.\n"
