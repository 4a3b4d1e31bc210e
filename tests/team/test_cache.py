"""Team pages in the figures cache per labels version: once per change, in the background when
large."""

from __future__ import annotations

import math
import time

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler import config
from ndcg_labeler.extensions import db
from ndcg_labeler.models import FiguresCache, TestSet
from ndcg_labeler.services import _figures_cache as figures_cache
from ndcg_labeler.services import team
from ndcg_labeler.services.team import pages
from ndcg_labeler.services.team.policies import Cell, PolicyComparison, RunRow
from tests.factory import build, judge, make_user


def _two_raters(app: Flask):
    """Pair q/a graded 2 by both raters: 100% agreement on one pair."""
    ann, bob = make_user(app, "ann"), make_user(app, "bob")
    built = build(app, pool={"q": ["a", "b"]}, target=2, members=(ann, bob))
    judge(app, built.test_set_id, "q", "a", "ann", grade=2)
    judge(app, built.test_set_id, "q", "a", "bob", grade=2)
    return built


def _counting(monkeypatch):
    calls = []
    original = pages.agreement_report

    def counted(test_set, **kwargs):
        calls.append(test_set.id)
        return original(test_set, **kwargs)

    monkeypatch.setattr(pages, "agreement_report", counted)
    return calls


def _settled(client, url: str):
    """GET the page until its figures are in (202 while computed in the background)."""
    deadline = time.monotonic() + 20
    page = client.get(url)
    while page.status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.05)
        page = client.get(url)
    return page


def test_agreement_is_computed_once_per_labels_version(app: Flask, monkeypatch) -> None:
    built = _two_raters(app)
    calls = _counting(monkeypatch)
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        first = team.cached_agreement_report(test_set)
        again = team.cached_agreement_report(test_set)
        assert first.value.summary.percent_agreement == 1.0
        assert again == first and not again.updating
        assert len(calls) == 1
    judge(app, built.test_set_id, "q", "a", "bob", grade=0)  # now 2 vs 0: no agreement
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        changed = team.cached_agreement_report(test_set)
        assert changed.value.summary.percent_agreement == 0.0
        assert not changed.updating
        assert len(calls) == 2


def test_large_sets_show_the_last_figures_while_one_refresh_runs(app: Flask, monkeypatch) -> None:
    built = _two_raters(app)
    calls = _counting(monkeypatch)
    app.config["NDCG_FIGURES_CACHE_INLINE_MAX"] = 0  # every set counts as large
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        assert team.cached_agreement_report(test_set).value.summary.percent_agreement == 1.0
    judge(app, built.test_set_id, "q", "a", "bob", grade=0)
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        stale = team.cached_agreement_report(test_set)
        # The last figures, flagged; the first request started the recomputation.
        assert stale.updating and stale.value.summary.percent_agreement == 1.0
        deadline = time.monotonic() + 20
        while True:
            db.session.rollback()
            fresh = team.cached_agreement_report(test_set)
            if not fresh.updating or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert not fresh.updating
        assert fresh.value.summary.percent_agreement == 0.0
        # The first inline computation and one background refresh, however many requests
        # asked meanwhile (the polling loop above asked many times).
        assert len(calls) == 2
        row = db.session.scalars(sa.select(FiguresCache)).one()
        assert row.refreshing_since is None


def test_the_deprecated_setting_name_is_still_read(app: Flask, tmp_path, monkeypatch) -> None:
    """TEAM_CACHE_INLINE_MAX, the name before the figures cache was renamed, works for one
    release: as a setting (it wins) and from the environment."""
    assert config.figures_cache_inline_max({"NDCG_FIGURES_CACHE_INLINE_MAX": 7}) == 7
    both = {"NDCG_FIGURES_CACHE_INLINE_MAX": 7, "TEAM_CACHE_INLINE_MAX": 0}
    assert config.figures_cache_inline_max(both) == 0
    monkeypatch.delenv("NDCG_FIGURES_CACHE_INLINE_MAX", raising=False)
    monkeypatch.setenv("TEAM_CACHE_INLINE_MAX", "3")
    assert config.from_environment(str(tmp_path))["NDCG_FIGURES_CACHE_INLINE_MAX"] == 3
    built = _two_raters(app)
    app.config["TEAM_CACHE_INLINE_MAX"] = 0  # every set counts as large, as before the rename
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        team.cached_agreement_report(test_set)
    judge(app, built.test_set_id, "q", "a", "bob", grade=0)
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        assert team.cached_agreement_report(test_set).updating
        deadline = time.monotonic() + 20
        while team.cached_agreement_report(test_set).updating and time.monotonic() < deadline:
            db.session.rollback()  # the background refresh ends before the test does
            time.sleep(0.05)


def test_people_page_says_updating_when_figures_are_stale(app: Flask, as_admin) -> None:
    built = _two_raters(app)
    app.config["NDCG_FIGURES_CACHE_INLINE_MAX"] = 0
    client = as_admin
    url = f"/test-sets/{built.test_set_id}/people"
    first = _settled(client, url)  # the first figures were computed in the background
    assert first.status_code == 200 and "updating…" not in first.text
    # Hold the refresh lease as another process would: the page must not start a second one.
    with app.app_context():
        db.session.execute(sa.update(FiguresCache).values(refreshing_since=sa.func.now()))
        db.session.commit()
    judge(app, built.test_set_id, "q", "b", "ann", grade=1)
    page = client.get(url)
    assert page.status_code == 200 and "updating…" in page.text
    # The JSON twin serves the same last figures and says they are being updated.
    data = client.get(url + ".json").get_json()
    assert data["updating"] is True and [p["annotator"] for p in data["people"]] == ["ann", "bob"]


def test_stored_figures_round_trip_exactly() -> None:
    """Dict keys that are not strings, tuples, NaN and None come back as they went in."""
    cells = {"median": Cell(0.5, 3, 1), "mean": Cell(float("nan"), 0, None)}
    comparison = PolicyComparison(
        10, "median", ("median", "mean"), [RunRow(7, "bm25", cells)], {"mean": []}
    )
    back = figures_cache.decode(figures_cache.encode(comparison))
    assert back.policies == ("median", "mean") and back.rows[0].run_id == 7
    assert back.rows[0].cells["median"] == Cell(0.5, 3, 1)
    assert math.isnan(back.rows[0].cells["mean"].mean)
    assert figures_cache.decode(figures_cache.encode({(1, 2): [None]})) == {(1, 2): [None]}


def test_a_large_sets_first_figures_are_computed_in_the_background(
    app: Flask, as_admin, monkeypatch
) -> None:
    built = _two_raters(app)
    calls = _counting(monkeypatch)
    app.config["NDCG_FIGURES_CACHE_INLINE_MAX"] = 0  # every set counts as large
    url = f"/test-sets/{built.test_set_id}/agreement"
    first = as_admin.get(url)
    # Nothing stored yet: the page answers at once and asks again; one refresh runs.
    assert first.status_code == 202
    assert "Computing these figures for the first time" in first.text
    assert '<meta http-equiv="refresh" content="3">' in first.text
    page = _settled(as_admin, url)
    assert page.status_code == 200 and "Percent agreement" in page.text
    assert len(calls) == 1  # however many requests asked meanwhile
    # The downloads never wait either: 202 with Retry-After (for scripts; no refreshing page
    # that would download again and again), then the figures.
    people = f"/test-sets/{built.test_set_id}/people"
    kinds = {url + ".json": "agreement", people + ".csv": "people", people + ".json": "people"}
    for download, kind in kinds.items():
        # Nothing stored of its kind. Each download settles before the next is asked: people.csv
        # and people.json share figures, and the thread the first starts would otherwise store
        # them (on a set this small, at once) before the second asks.
        with app.app_context():
            db.session.execute(sa.delete(FiguresCache).where(FiguresCache.kind == kind))
            db.session.commit()
        asked = as_admin.get(download)
        assert asked.status_code == 202 and asked.headers["Retry-After"] == "3", download
        assert asked.json["status"] == "computing" and "refresh" not in asked.text
        assert _settled(as_admin, download).status_code == 200
    assert _settled(as_admin, url + ".json").json["percent_agreement"] == 1.0
    assert "ann" in as_admin.get(people + ".csv").text
    assert len(calls) == 2  # once for the page, once after the figures were deleted


def test_review_pages_are_stored_per_labels_version_and_never_shown_stale(
    app: Flask, as_admin, monkeypatch
) -> None:
    built = _two_raters(app)
    app.config["NDCG_FIGURES_CACHE_INLINE_MAX"] = 0  # large: other pages would show stale figures
    calls = []
    original = pages.review_queue

    def counted(test_set, **kwargs):
        calls.append(kwargs)
        return original(test_set, **kwargs)

    monkeypatch.setattr(pages, "review_queue", counted)
    url = f"/test-sets/{built.test_set_id}/review"
    assert ">a<" not in as_admin.get(url).text  # 2 and 2: not disputed
    assert ">a<" not in as_admin.get(url).text
    assert len(calls) == 1  # the second request read the stored page
    judge(app, built.test_set_id, "q", "a", "bob", grade=0)  # now 2 vs 0: disputed
    page = as_admin.get(url).text
    assert ">a<" in page and "updating" not in page  # recomputed at once, not stale
    assert len(calls) == 2
    assert ">a<" in as_admin.get(url + "?all=1").text  # its own stored page
    assert len(calls) == 3
