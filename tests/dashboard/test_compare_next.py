"""The compare page's decision figures: the queries a paired test needs, what to label next."""

from __future__ import annotations

import re
import statistics
import time

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Pair, TestSet
from ndcg_labeler.services.comparison import stats as comparison_stats
from tests.factory import A3, B3, AuthActions, Demo, grant

COMPARED = ("q1", "q2", "q3", "q5")  # q4 is undefined (no grade)


def _power_n(effect: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """The smallest n whose two-sided paired t-test power reaches `power` (scipy, brute force)."""
    n = np.arange(2, 40_000)
    df = n - 1
    critical = stats.t.isf(alpha / 2, df)
    shift = abs(effect) * np.sqrt(n) / sd
    reached = stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift)
    return int(n[np.argmax(reached >= power)])


def test_the_page_says_how_many_queries_a_paired_test_needs(
    as_admin: FlaskClient, dash: Demo
) -> None:
    html = as_admin.get(dash.url("/compare/?k=3")).get_data(as_text=True)
    d = [B3[q] - A3[q] for q in COMPARED]  # the factory's hand-computed NDCG@3
    mean, sd = statistics.fmean(d), statistics.stdev(d)
    observed, at_002 = _power_n(mean, sd), _power_n(0.02, sd)
    assert observed < at_002
    sentence = " ".join(html.split('<p id="sample-size">')[1].split("</p>")[0].split())
    assert sentence == (
        f"A paired t-test (two-sided, alpha 0.05) needs <strong>{observed}</strong> queries to "
        f"detect a difference of the observed size ({mean:+.4f}) with 80% power, and "
        f"<strong>{at_002}</strong> to detect a difference of 0.02; this comparison has 4."
    )


def test_the_page_lists_what_to_label_next_and_the_labels_remaining(
    as_admin: FlaskClient, dash: Demo
) -> None:
    html = as_admin.get(dash.url("/compare/_results?k=4")).get_data(as_text=True)
    # Depth = k = 4; weights by hand in tests/dashboard/test_for_compare.py.
    rows = [html.index(f'data-qid="{q}" data-docid="{d}"') for q, d in
            (("q3", "f2"), ("q4", "a"), ("q2", "ghost"), ("q1", "y"))]  # fmt: skip
    assert rows == sorted(rows)
    assert (
        '<td>ghost <span class="badge unjudged" title="no corpus gave this chunk a text">' in html
    )
    assert '>not in the corpus</span></td><td class="num">1.5000</td>' in html
    notice = " ".join(html.split('id="next-not-in-corpus">')[1].split("</p>")[0].split())
    assert notice.startswith("1 of the chunks listed is in no corpus: it has no text")
    remaining = " ".join(html.split('<p id="labels-remaining">')[1].split("</p>")[0].split())
    assert remaining.startswith("<strong>Robust:</strong>")
    assert "<strong>0</strong> labels remaining" in remaining
    assert f"run={dash.run_a}&amp;run={dash.run_b}&amp;k=4" in html  # the JSON export link
    assert "Add these 4 pairs to the labeling queue, in this order" in html
    exported = as_admin.get(
        dash.url(f"/export/compare-next.json?run={dash.run_a}&run={dash.run_b}&k=4")
    )
    assert [(p["qid"], p["docid"]) for p in exported.json] == [
        ("q3", "f2"), ("q4", "a"), ("q2", "ghost"), ("q1", "y")
    ]  # fmt: skip
    shallow = as_admin.get(
        dash.url(f"/export/compare-next.json?run={dash.run_a}&run={dash.run_b}&depth=1")
    )
    assert [(p["qid"], p["docid"]) for p in shallow.json] == [("q3", "f2"), ("q4", "a")]
    for bad in (f"run={dash.run_a}", f"run={dash.run_a}&run={dash.run_b}&depth=x"):
        assert as_admin.get(dash.url(f"/export/compare-next.json?{bad}")).status_code == 400


def test_only_admins_queue_them_and_the_queue_keeps_the_order(
    app: Flask, client: FlaskClient, auth: AuthActions, annotator_id: int, admin_id: int,
    dash: Demo,
) -> None:  # fmt: skip
    grant(app, dash.test_set_id, annotator_id)
    auth.login("ann")
    page = client.get(dash.url("/compare/?k=4")).get_data(as_text=True)
    assert 'id="next-table"' in page and "Add these" not in page
    form = {"run": [str(dash.run_a), str(dash.run_b)]}
    assert client.post(dash.url("/compare/queue?k=4"), data=form).status_code == 403
    auth.logout()
    auth.login("admin")
    done = client.post(dash.url("/compare/queue?k=4"), data=form, follow_redirects=True)
    assert "Queued 3 new pairs and put 0 queued ones in weight order (1 not in the corpus)." in (
        done.get_data(as_text=True)
    )
    with app.app_context():
        ts = db.session.get_one(TestSet, dash.test_set_id)
        priorities = db.session.scalars(
            sa.select(Pair.priority).where(Pair.test_set_id == ts.id, Pair.priority < 0)
            .order_by(Pair.priority)
        ).all()  # fmt: skip
    assert priorities == [-3, -2, -1]
    one = client.post(
        dash.url("/compare/queue"), data={"run": [str(dash.run_a)]}, follow_redirects=True
    )
    assert "Nothing added: choose exactly two runs." in one.get_data(as_text=True)


def test_blind_sets_keep_the_pairs_from_annotators(
    app: Flask, client: FlaskClient, auth: AuthActions, annotator_id: int, dash: Demo
) -> None:
    grant(app, dash.test_set_id, annotator_id)
    with app.app_context():
        db.session.get_one(TestSet, dash.test_set_id).judgments_per_pair = 2  # blind judging
        db.session.commit()
    auth.login("ann")
    page = client.get(dash.url("/compare/?k=4")).get_data(as_text=True)
    assert 'id="sample-size"' in page  # a figure about the means: shown
    assert 'id="next-table"' not in page and 'id="labels-remaining"' not in page
    both = f"run={dash.run_a}&run={dash.run_b}"
    assert client.get(dash.url(f"/export/compare-next.json?{both}")).status_code == 403


def _sentence(html: str) -> str:
    return " ".join(html.split('<p id="sample-size">')[1].split("</p>")[0].split())


def test_a_large_comparisons_page_leaves_power_and_ordering_to_their_fragments(
    as_admin: FlaskClient, dash: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above PAGE_INLINE_MAX_VALUES the page neither computes the power figures (scipy.stats: a
    second in a fresh worker) nor orders the unjudged pairs (seconds at 7,000 queries): the
    statistics fragment brings the power figures, stored with the statistics, and a fragment
    of its own the pairs, kept in the process for the page's next visit."""
    monkeypatch.setattr("ndcg_labeler.services.comparison.compare.INLINE_MAX_VALUES", 3)
    monkeypatch.setattr("ndcg_labeler.services.comparison.compare.PAGE_INLINE_MAX_VALUES", 3)
    computed = []
    original = comparison_stats.power_figures
    monkeypatch.setattr(
        comparison_stats, "power_figures", lambda *a, **k: computed.append(1) or original(*a, **k)
    )
    both = f"run={dash.run_a}&run={dash.run_b}&k=3"
    page = as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert 'id="sample-size"' not in page and computed == []
    assert 'id="next-table"' not in page and f"/compare/_next?{both.replace('&', '&amp;')}" in page
    # The statistics fragment: computed in the background, the power figures with them.
    deadline = time.monotonic() + 20
    stats_part = as_admin.get(dash.url(f"/compare/_stats?{both}"))
    while stats_part.status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.05)
        stats_part = as_admin.get(dash.url(f"/compare/_stats?{both}"))
    d = [B3[q] - A3[q] for q in COMPARED]  # the factory's hand-computed NDCG@3
    mean, sd = statistics.fmean(d), statistics.stdev(d)
    assert _sentence(stats_part.get_data(as_text=True)) == (
        f"A paired t-test (two-sided, alpha 0.05) needs <strong>{_power_n(mean, sd)}</strong> "
        f"queries to detect a difference of the observed size ({mean:+.4f}) with 80% power, "
        f"and <strong>{_power_n(0.02, sd)}</strong> to detect a difference of 0.02; this "
        "comparison has 4."
    )
    assert computed == [1]
    # Stored: the page shows them without computing them again.
    again = as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert _sentence(again) == _sentence(stats_part.get_data(as_text=True)) and computed == [1]
    # What to label next, in its fragment: the same list the small page shows (weights by hand
    # in tests/dashboard/test_for_compare.py, at depth = k = 3 here).
    part = as_admin.get(dash.url(f"/compare/_next?{both}")).get_data(as_text=True)
    assert 'id="next-table"' in part and 'id="labels-remaining"' in part
    exported = as_admin.get(dash.url(f"/export/compare-next.json?{both}")).json
    rows = [part.index(f'data-qid="{p["qid"]}" data-docid="{p["docid"]}"') for p in exported]
    assert rows == sorted(rows) and len(rows) == part.count("<tr data-qid=")
    assert "Add these" in part and 'name="csrf_token"' in part
    shown = as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert 'id="next-table"' in shown and "/compare/_next?" not in shown
    for bad in (f"run={dash.run_a}", f"run={dash.run_a}&run={dash.run_a}"):
        assert as_admin.get(dash.url(f"/compare/_next?{bad}")).status_code == 400


def test_a_fresh_worker_shows_the_stored_page_of_what_to_label_next(
    app: Flask, as_admin: FlaskClient, dash: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ordered once by the /_next fragment, a large comparison's first pairs, their count and
    labels remaining are stored: a worker that never ordered them shows them at once, the same
    as the fragment; a grade makes the page ask the fragment again."""
    from ndcg_labeler.services.pooling import for_compare
    from tests.factory import grade, the_test_set

    monkeypatch.setattr("ndcg_labeler.services.comparison.compare.PAGE_INLINE_MAX_VALUES", 3)
    monkeypatch.setattr("ndcg_labeler.views.compare.NEXT_SHOWN", 2)  # fewer than the 3 pairs
    ordered = []
    original = for_compare._plan
    monkeypatch.setattr(
        for_compare, "_plan", lambda *a, **k: ordered.append(1) or original(*a, **k)
    )
    both = f"run={dash.run_a}&run={dash.run_b}&k=3"

    def section(html: str) -> str:
        # A CSRF token carries the second it was signed in, so two requests may differ there.
        part = html.split('<div id="compare-next">')[1].split("</section>")[0]
        return re.sub(r'name="csrf_token" value="[^"]*"', "", part)

    part = as_admin.get(dash.url(f"/compare/_next?{both}")).get_data(as_text=True)
    assert ordered == [1] and part.count("<tr data-qid=") == 2 and "Add these 3 pairs" in part
    app.extensions["ndcg_compare_plans"].clear()  # as in a worker that never ordered them
    page = as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert ordered == [1] and section(page) == section(part)
    with app.app_context():
        grade(the_test_set(dash), "q3", "f2", 1, "maria")
        db.session.remove()
    app.extensions["ndcg_compare_plans"].clear()
    moved = as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert 'id="next-table"' not in moved and "/compare/_next?" in moved and ordered == [1]
