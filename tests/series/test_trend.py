"""A series over time: runs join it from the CLI, the API and the browser form; the trend's
means, intervals and significance marks are checked against the hand formula and scipy."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from tests.factory import build_test_set
from tests.runs.test_api import bearer, token_for
from tests.series.helpers import CORPUS, GOOD, QRELS, QUERIES, SLIGHTLY_BETTER, WORSE, ndcg, trec


@pytest.fixture
def nightly(app: Flask, runner: FlaskCliRunner, as_admin: FlaskClient, admin_id: int, tmp_path):
    """Three runs of series 'nightly' (CLI, then API, then the upload form) and one outside it."""
    with app.app_context():
        test_set_id = build_test_set("trend", QUERIES, QRELS, CORPUS).id
    first = tmp_path / "good.trec"
    first.write_text(trec(GOOD))
    done = runner.invoke(
        args=["run", "upload", "trend", str(first), "--name", "n1", "--series", "nightly"]
    )
    assert done.exit_code == 0 and "series 'nightly'" in done.output, done.output
    outside = runner.invoke(args=["run", "upload", "trend", str(first), "--name", "other"])
    assert outside.exit_code == 0, outside.output
    data = {"file": (io.BytesIO(trec(WORSE).encode()), "n2.trec"), "series": "nightly"}
    token = token_for(app, admin_id)
    answer = as_admin.post(f"/api/testsets/{test_set_id}/runs", data=data, headers=bearer(token))
    assert answer.status_code == 201 and answer.get_json()["series"] == "nightly"
    form = {"file": (io.BytesIO(trec(SLIGHTLY_BETTER).encode()), "n3.trec"), "series": "nightly"}
    posted = as_admin.post(f"/test-sets/{test_set_id}/runs/upload", data=form)
    assert posted.status_code == 302, posted.data[-500:]
    with app.app_context():
        assert {r.name: r.series for r in db.session.scalars(db.select(Run))} == {
            "n1": "nightly",
            "other": None,
            "n2": "nightly",
            "n3": "nightly",
        }
    return test_set_id


def _values(ranks: list[int]) -> np.ndarray:
    return np.array([ndcg(r) for r in ranks])


def test_the_trend_has_hand_means_t_intervals_and_scipy_p_values(
    runner: FlaskCliRunner, nightly: int
) -> None:
    result = runner.invoke(args=["run", "series", "trend", "nightly", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert (found["series"], found["k"]) == ("nightly", 10)
    points = found["points"]
    assert [p["run"] for p in points] == ["n1", "n2", "n3"]
    runs = [_values(GOOD), _values(WORSE), _values(SLIGHTLY_BETTER)]
    for point, values in zip(points, runs, strict=True):
        assert point["mean_ndcg"] == pytest.approx(values.mean())
        # One judged chunk in each top 10 (judged@k counts over k, as trec_eval's judged_10).
        assert point["mean_judged"] == pytest.approx(1 / 10)
        if values.std() > 0:
            low, high = stats.t.interval(0.95, 5, loc=values.mean(), scale=stats.sem(values))
            assert (point["ci_low"], point["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert points[0]["previous"] is None and points[0]["significant"] is False
    drop = stats.ttest_rel(runs[1], runs[0]).pvalue
    rise = stats.ttest_rel(runs[2], runs[1]).pvalue
    assert drop < 0.05 < rise  # the data were chosen so: one real drop, one small rise
    assert points[1]["delta"] == pytest.approx((runs[1] - runs[0]).mean())
    assert points[1]["p_value"] == pytest.approx(drop) and points[1]["significant"] is True
    assert points[2]["p_value"] == pytest.approx(rise) and points[2]["significant"] is False
    # No scheduled check has passed: the baseline is the latest run.
    assert found["baseline"]["run"] == "n3"
    listed = runner.invoke(args=["run", "series", "trend", "--json"])
    assert json.loads(listed.output) == {
        "series": [{"series": "nightly", "runs": 3, "latest": "n3"}]
    }
    table = runner.invoke(args=["run", "series", "trend", "nightly"])
    assert "n2\t" in table.output and "-0.4345 *" in table.output


def test_the_series_page_charts_links_and_pins_the_baseline(
    as_admin: FlaskClient, nightly: int
) -> None:
    page = as_admin.get(f"/test-sets/{nightly}/series/nightly")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert '<svg class="chart-svg"' in html and "significant down" in html
    # Each point after the first links to the comparison with the run before it.
    assert html.count(f'href="/test-sets/{nightly}/dashboard/compare/?run=') >= 4
    assert 'class="change down"' in html and 'class="change up"' not in html
    listing = as_admin.get(f"/test-sets/{nightly}/series/").get_data(as_text=True)
    assert "nightly" in listing and "n3" in listing
    twin = as_admin.get(f"/test-sets/{nightly}/series/nightly/json?k=5").get_json()
    assert twin["k"] == 5 and [p["run"] for p in twin["points"]] == ["n1", "n2", "n3"]

    pinned = as_admin.post(f"/test-sets/{nightly}/series/nightly/baseline", data={"run": "n1"})
    assert pinned.status_code == 302
    twin = as_admin.get(f"/test-sets/{nightly}/series/nightly/json").get_json()
    assert twin["baseline"] == {"run": "n1", "why": "pinned"}
    wrong = as_admin.post(f"/test-sets/{nightly}/series/nightly/baseline", data={"run": "other"})
    assert wrong.status_code == 302
    twin = as_admin.get(f"/test-sets/{nightly}/series/nightly/json").get_json()
    assert twin["baseline"]["run"] == "n1"  # 'other' is not in the series: refused
    # The page's choices name runs by id in the id: form, never read as a run named so.
    choice = re.search(r'<option value="(id:[0-9]+)"[^>]*>n2<', html)
    assert choice is not None, "the pin's choices name runs as id:N"
    as_admin.post(f"/test-sets/{nightly}/series/nightly/baseline", data={"run": choice.group(1)})
    twin = as_admin.get(f"/test-sets/{nightly}/series/nightly/json").get_json()
    assert twin["baseline"] == {"run": "n2", "why": "pinned"}


def test_a_separator_setting_puts_runs_in_the_series_their_names_start_with(
    app: Flask, runner: FlaskCliRunner, as_admin: FlaskClient, tmp_path
) -> None:
    from dataclasses import replace

    from ndcg_labeler.services import ServiceError, testsets

    with app.app_context():
        test_set = build_test_set("prefixes", QUERIES, QRELS, CORPUS)
        test_set_id = test_set.id
        with pytest.raises(ServiceError, match="without spaces"):
            testsets.update_settings(
                test_set, replace(testsets.settings_of(test_set), series_separator="- ")
            )
        db.session.rollback()
        testsets.update_settings(
            test_set, replace(testsets.settings_of(test_set), series_separator="-")
        )
    page = as_admin.get(f"/test-sets/{test_set_id}/settings").get_data(as_text=True)
    assert 'name="series_separator"' in page and 'value="-"' in page
    path = tmp_path / "run.trec"
    path.write_text(trec(GOOD))
    slash = runner.invoke(args=["run", "upload", "prefixes", str(path), "--series", "a/b"])
    assert slash.exit_code == 1 and "cannot contain '/'" in slash.output
    # "." and ".." as a path segment are resolved away by browsers: no page could show them.
    dots = runner.invoke(args=["run", "upload", "prefixes", str(path), "--series", ".."])
    assert dots.exit_code == 1 and "cannot be named '..'" in dots.output
    uploads = (
        ("exp-a", []),
        ("plain", []),
        ("-odd", []),
        ("exp-b", ["--series", "x"]),
        ("..-c", []),
    )
    for name, extra in uploads:
        done = runner.invoke(args=["run", "upload", "prefixes", str(path), "--name", name, *extra])
        assert done.exit_code == 0, done.output
    with app.app_context():
        found = {r.name: r.series for r in db.session.scalars(db.select(Run))}
    assert found == {"exp-a": "exp", "plain": None, "-odd": None, "exp-b": "x", "..-c": None}


def test_pinning_a_series_that_does_not_exist_or_both_ways_at_once_is_refused(
    as_admin: FlaskClient, runner: FlaskCliRunner, app: Flask, nightly: int
) -> None:
    from ndcg_labeler.models import SeriesSetting

    typo = runner.invoke(args=["run", "series", "trend", "nightyl", "--unpin"])
    assert typo.exit_code == 1 and "has no series named 'nightyl'" in typo.output
    both = runner.invoke(args=["run", "series", "trend", "nightly", "--pin", "n1", "--unpin"])
    assert both.exit_code == 1 and "not both" in both.output
    posted = as_admin.post(
        f"/test-sets/{nightly}/series/nosuch/baseline", data={"run": ""}, follow_redirects=True
    )
    assert "Could not pin the baseline: test set" in posted.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalars(db.select(SeriesSetting)).all() == []
    unpinned = runner.invoke(args=["run", "series", "trend", "nightly", "--unpin"])
    assert unpinned.exit_code == 0, unpinned.output


def test_the_upload_form_shows_a_bad_series_name_on_its_own_field(
    as_admin: FlaskClient, nightly: int
) -> None:
    form = {"file": (io.BytesIO(trec(GOOD).encode()), "n4.trec"), "series": "a/b"}
    page = as_admin.post(f"/test-sets/{nightly}/runs/upload", data=form)
    html = page.get_data(as_text=True)
    assert page.status_code == 422
    assert 'id="series-error"' in html and "cannot contain &#39;/&#39;" in html
    assert 'id="file-error"' not in html


def test_the_pinned_baseline_cannot_be_deleted_until_it_is_unpinned(
    as_admin: FlaskClient, runner: FlaskCliRunner, app: Flask, nightly: int
) -> None:
    # Deleting it used to unpin it silently: the next scheduled run was gated against another
    # run, and nobody had chosen that.
    pinned = runner.invoke(args=["run", "series", "trend", "nightly", "--pin", "n1"])
    assert pinned.exit_code == 0, pinned.output
    refused = runner.invoke(args=["run", "delete", "trend", "n1"])
    assert refused.exit_code == 1
    assert "run 'n1' is the pinned baseline of series 'nightly'" in refused.output
    assert "--unpin" in refused.output
    with app.app_context():
        run_id = db.session.scalar(db.select(Run.id).where(Run.name == "n1"))
    posted = as_admin.post(f"/test-sets/{nightly}/runs/{run_id}/delete", follow_redirects=True)
    html = posted.get_data(as_text=True)
    assert "Could not delete the run: run &#39;n1&#39; is the pinned baseline" in html
    twin = as_admin.get(f"/test-sets/{nightly}/series/nightly/json").get_json()
    assert twin["baseline"] == {"run": "n1", "why": "pinned"}
    # Unpinned (or another run pinned), it goes.
    assert runner.invoke(args=["run", "series", "trend", "nightly", "--unpin"]).exit_code == 0
    deleted = runner.invoke(args=["run", "delete", "trend", "n1"])
    assert deleted.exit_code == 0, deleted.output
    with app.app_context():
        assert db.session.get(Run, run_id) is None
