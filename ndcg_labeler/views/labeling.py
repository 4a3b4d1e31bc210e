"""Labeling screens: the queue, one pair per screen, and the per-query review of my grades."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, abort, redirect, render_template, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.extensions import db
from ndcg_labeler.forms.labeling import LabelForm, ShortcutsForm
from ndcg_labeler.models import Chunk, Pair, Query, TestSet
from ndcg_labeler.services import ServiceError, checklist, judges, labeling, whole_number
from ndcg_labeler.views.access import get_test_set_or_404

bp = Blueprint("labeling", __name__, url_prefix="/test-sets/<int:test_set_id>")


def pair_or_404(test_set: TestSet, pair_id: int) -> Pair:
    """The pair, or 404 when it is not in this test set."""
    pair = db.session.get(Pair, pair_id)
    if pair is None or pair.test_set_id != test_set.id:
        abort(404)
    return pair


def _local(target: str | None) -> str | None:
    """A same-site path to return to, or None (never an open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return None
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else None


def _int_or_zero(value: str | None) -> int:
    """Lenient integer: the browser's active-time timer is a hint, never a reason to refuse."""
    try:
        return int(float(value or 0))
    except (TypeError, ValueError):
        return 0


@bp.get("/label", endpoint="next")
def next_pair(test_set_id: int) -> str | Response:
    """Hand out the next pair (redirect to it), or show that nothing is left."""
    test_set = get_test_set_or_404(test_set_id)
    pair = labeling.next_pair(test_set, current_user)
    if pair is not None:
        return redirect(url_for("labeling.pair", test_set_id=test_set.id, pair_id=pair.id))
    return render_template(
        "labeling/done.html",
        test_set=test_set,
        progress=labeling.progress(test_set, current_user),
        previous=labeling.previous_pair(test_set, current_user),
        queries=labeling.answered_queries(test_set, current_user),
        # What is missing and who can fix it, when there is nothing to label at all.
        checklist=checklist.checklist(test_set, current_user, 0),
    )


def _expected_version(form: LabelForm) -> int | None:
    """The version the form was rendered with; None (no check) when the form sent none, a
    ServiceError when it is not a version (saving unchecked could overwrite a newer answer)."""
    text = (form.version.data or "").strip()
    return whole_number(text, "version") if text else None


def save_answer(form: LabelForm, pair: Pair) -> labeling.SaveResult | None:
    """Apply the pressed button through the judging service (ServiceError when refused;
    labeling.Conflict when my judgment changed elsewhere since the page was rendered). None
    when a skip left an earlier answer as it was."""
    if form.action.data == "skip":
        return labeling.skip_pair(pair, current_user, note=form.note.data or "")
    if form.action.data == "cant_tell":
        verdict: dict[str, Any] = {"status": "cant_tell"}
    elif form.grade.data is not None:
        verdict = {"grade": form.grade.data}
    else:
        raise ServiceError("Choose a grade, “can't tell” or skip.")
    return labeling.save_for_pair(
        pair,
        current_user,
        **verdict,
        note=form.note.data or "",
        active_ms=_int_or_zero(form.active_ms.data),
        expected_version=_expected_version(form),
    )


@bp.route("/label/<int:pair_id>", methods=["GET", "POST"], endpoint="pair")
def pair_view(test_set_id: int, pair_id: int) -> str | Response | tuple[str, int]:
    """One pair per screen; POST saves my answer and redirects (reload never resubmits)."""
    test_set = get_test_set_or_404(test_set_id)
    pair = pair_or_404(test_set, pair_id)
    mine = labeling.my_judgment(pair, current_user)
    if request.method == "GET" and request.args.get("conflict"):
        shown = conflict_page(test_set, pair, mine)
        if shown is not None:
            return shown
    form = LabelForm(note=mine.note if mine else "")
    if form.validate_on_submit():
        try:
            save_answer(form, pair)
        except labeling.Conflict:
            # Redirect to this pair's own address: a reload shows the conflict again, here.
            tried = "cant_tell" if form.action.data == "cant_tell" else str(form.grade.data)
            target = url_for(
                "labeling.pair",
                test_set_id=test_set.id,
                pair_id=pair.id,
                conflict=tried,
                next=_local(form.next.data),
                note=form.note.data or None,
            )
            return redirect(target, 303)
        except ServiceError as exc:
            form.grade.errors = [*form.grade.errors, str(exc)]
        else:
            target = _local(form.next.data) or url_for("labeling.next", test_set_id=test_set.id)
            return redirect(target)
    status = 400 if request.method == "POST" else 200
    return render_template("labeling/pair.html", **pair_context(test_set, pair, form)), status


def conflict_page(test_set: TestSet, pair: Pair, mine: Any) -> tuple[str, int] | None:
    """The conflict page for `?conflict=<grade|cant_tell>` (where a refused save redirects):
    what is stored now beside what I tried; None when nothing conflicts any more."""
    tried = request.args.get("conflict", "")
    try:
        grade = None if tried == "cant_tell" else whole_number(tried, "conflict")
    except ServiceError:
        abort(400, description=f"conflict must be a grade or cant_tell, not '{tried}'")
    verdict = ("cant_tell", None) if grade is None else ("graded", grade)
    if mine is None or (mine.status, mine.grade) == verdict:
        return None
    form = LabelForm(
        formdata=None,
        note=request.args.get("note", ""),
        next=_local(request.args.get("next")),
        action="cant_tell" if tried == "cant_tell" else None,
        grade=verdict[1],
    )
    conflict = labeling.Conflict(mine.status, mine.grade, mine.version, mine.updated_at)
    context = pair_context(test_set, pair, form)
    return render_template("labeling/conflict.html", **context, conflict=conflict), 409


def card_context(test_set: TestSet, pair: Pair, form: LabelForm) -> dict[str, Any]:
    """What one pair's card shows (labeling/_card.html): the pair, my judgment, the back link."""
    return {
        "test_set": test_set,
        "pair": pair,
        "query": db.session.get_one(Query, pair.query_id),
        "chunk": db.session.get_one(Chunk, pair.chunk_id),
        "mine": labeling.my_judgment(pair, current_user),
        "previous": labeling.previous_pair(test_set, current_user, current=pair),
        "form": form,
        "suggestions": judges.suggestions(test_set, pair),
    }


def pair_context(test_set: TestSet, pair: Pair, form: LabelForm) -> dict[str, Any]:
    """What the pair screen shows: its card, my progress and the shortcuts switch."""
    return {
        **card_context(test_set, pair, form),
        "progress": labeling.progress(test_set, current_user),
        "shortcuts_form": ShortcutsForm(),
    }


@bp.get("/queries/<int:query_id>/review", endpoint="query_review")
def query_review(test_set_id: int, query_id: int) -> str:
    """All chunks of one query with MY grades (only mine), each re-gradable here."""
    test_set = get_test_set_or_404(test_set_id)
    query = db.session.get(Query, query_id)
    if query is None or query.test_set_id != test_set.id:
        abort(404)
    return render_template(
        "labeling/review.html",
        test_set=test_set,
        query=query,
        items=labeling.my_answers(query, current_user),
        form=LabelForm(),
    )


@bp.post("/label/shortcuts", endpoint="shortcuts")
def shortcuts(test_set_id: int) -> Response:
    """Switch my single-key shortcuts on or off, then go back to where I was."""
    test_set = get_test_set_or_404(test_set_id)
    form = ShortcutsForm()
    if form.validate_on_submit():
        current_user.shortcuts_enabled = form.enabled.data == "1"
        db.session.commit()
    return redirect(_local(form.next.data) or url_for("labeling.next", test_set_id=test_set.id))
