"""The labeling loop's background calls (JavaScript on): prefetch, lease on show, save, release.

The page (views/labeling.py) stays a plain form that works without JavaScript. With it on,
static/js/labeling.js keeps the next few pairs prefetched as rendered cards, leases a pair only
when it shows it, saves each answer in the background (retrying until acknowledged) and gives
the lease back when the page is left unanswered.
"""

from __future__ import annotations

from flask import Blueprint, get_template_attribute, jsonify, render_template, request
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.forms.labeling import LabelForm
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import ServiceError, labeling, whole_number
from ndcg_labeler.views._args import whole_arg
from ndcg_labeler.views.access import get_test_set_or_404
from ndcg_labeler.views.labeling import card_context, pair_or_404, save_answer

bp = Blueprint("label_loop", __name__, url_prefix="/test-sets/<int:test_set_id>/label")

# Cards prefetched per call, and the most pair ids a page may ask to leave out.
MAX_AHEAD = 5
MAX_EXCLUDE = 500


def _ids(text: str) -> set[int]:
    """Comma-separated pair ids (garbage ignored: the list is a hint, never a reason to fail)."""
    found = set()
    for part in text.split(",")[:MAX_EXCLUDE]:
        try:
            found.add(whole_number(part, "exclude"))
        except ServiceError:
            continue
    return found


def _progress_html(test_set: TestSet) -> str:
    """My progress bars as the page shows them, for the page to swap in after a save."""
    bars = get_template_attribute("labeling/_macros.html", "progress_bars")
    return str(bars(labeling.progress(test_set, current_user)))


@bp.get("/upcoming.json", endpoint="upcoming")
def upcoming(test_set_id: int) -> Response:
    """The next pairs the queue would hand me, rendered as cards; none of them is leased."""
    test_set = get_test_set_or_404(test_set_id)
    count = min(whole_arg("n", 3, 1), MAX_AHEAD)
    pairs = labeling.upcoming(
        test_set,
        current_user,
        query_id=whole_arg("query", None),
        exclude=_ids(request.args.get("exclude", "")),
        n=count,
    )
    cards = [
        {
            "pair_id": pair.id,
            "query_id": pair.query_id,
            "html": render_template(
                "labeling/_card.html", **card_context(test_set, pair, LabelForm(formdata=None))
            ),
        }
        for pair in pairs
    ]
    return jsonify(cards=cards)


@bp.post("/<int:pair_id>/lease.json", endpoint="lease")
def lease(test_set_id: int, pair_id: int) -> Response:
    """Lease the pair the page now shows; `leased: false` when others already cover it."""
    pair = pair_or_404(get_test_set_or_404(test_set_id), pair_id)
    return jsonify(leased=labeling.claim(pair, current_user))


@bp.post("/<int:pair_id>/release", endpoint="release")
def release(test_set_id: int, pair_id: int) -> tuple[str, int]:
    """Give the lease back (sent with navigator.sendBeacon when the page is left)."""
    pair = pair_or_404(get_test_set_or_404(test_set_id), pair_id)
    labeling.release(pair, current_user)
    return "", 204


@bp.post("/<int:pair_id>/save.json", endpoint="save")
def save(test_set_id: int, pair_id: int) -> tuple[Response, int]:
    """Save one answer sent by the page in the background: 200 with my new progress, 409 when
    my judgment changed elsewhere since the card was rendered, 400 when the answer is refused."""
    test_set = get_test_set_or_404(test_set_id)
    pair = pair_or_404(test_set, pair_id)
    form = LabelForm()
    if not form.validate_on_submit():
        errors = [message for messages in form.errors.values() for message in messages]
        return jsonify(error="; ".join(errors) or "the answer was not understood"), 400
    try:
        saved = save_answer(form, pair)
    except labeling.Conflict as conflict:
        return jsonify(
            error=str(conflict),
            stored={"status": conflict.status, "grade": conflict.grade},
            version=conflict.version,
        ), 409
    except ServiceError as exc:
        return jsonify(error=str(exc)), 400
    if saved is None:  # a skip that kept my earlier answer: report the version it has
        mine = labeling.my_judgment(pair, current_user)
        version = mine.version if mine else 0
    else:
        version = saved.version
    return jsonify(saved=True, version=version, progress=_progress_html(test_set)), 200
