"""Ensembles, few-shot settings and the "machine vs people" queue in the browser (admins)."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.forms.judges import EnsembleForm, FewShotForm, ResolveConflictForm
from ndcg_labeler.forms.probes import field_errors
from ndcg_labeler.services import ServiceError, corrections, counted, ensembles, judges
from ndcg_labeler.views.access import admin_required, get_test_set_or_404

bp = Blueprint("machine_review", __name__)


@bp.route("/judges/ensembles/new", methods=["GET", "POST"])
@admin_required
def new_ensemble() -> str | Response:
    """The form that defines an ensemble of two or more judges."""
    form = EnsembleForm()
    form.members.choices = [
        (j.name, f"{j.name} ({j.model})")
        for j in judges.list_judges()
        if not ensembles.is_ensemble(j)
    ]
    if form.validate_on_submit():
        try:
            judge = ensembles.add_ensemble(
                form.name.data or "",
                form.members.data or [],
                form.combine.data or "median",
                actor=current_user._get_current_object(),
            )
        except ServiceError as exc:
            form.name.errors.append(str(exc))
        else:
            flash(f"Ensemble {judge.name} added.", "success")
            return redirect(url_for("judges.index"))
    return render_template("judges/ensemble_new.html", form=form)


@bp.post("/test-sets/<int:test_set_id>/judges/<int:judge_id>/few-shot")
@admin_required
def few_shot(test_set_id: int, judge_id: int) -> Response:
    """Set how many few-shot examples the judge's prompts carry (CSRF-checked)."""
    test_set = get_test_set_or_404(test_set_id)
    judge = judges.get_judge(judge_id) or abort(404)
    form = FewShotForm()
    back = url_for("judges.calibration", test_set_id=test_set.id, judge_id=judge.id)
    if not form.validate_on_submit():
        wrong = (
            field_errors(form) or f"give a number of examples from 0 to {ensembles.MAX_FEW_SHOT}"
        )
        flash(f"Not changed: {wrong}.", "error")
        return redirect(back + "#versions-heading")
    try:
        changed = ensembles.set_few_shot(
            judge, form.k.data or "", current_user._get_current_object()
        )
    except ServiceError as exc:
        flash(f"Not changed: {exc}", "error")
    else:
        if changed:
            shots = counted(judge.few_shot, "example")
            flash(f"{judge.name} now puts {shots} in each prompt.", "success")
    return redirect(back + "#versions-heading")


@bp.get("/test-sets/<int:test_set_id>/judges/conflicts")
@admin_required
def conflicts(test_set_id: int) -> str:
    """The "machine vs people" queue: open conflicts, then the resolved ones."""
    test_set = get_test_set_or_404(test_set_id)
    return render_template(
        "judges/conflicts.html",
        test_set=test_set,
        open_rows=corrections.list_conflicts(test_set),
        resolved_rows=corrections.list_conflicts(test_set, resolved=True),
        form=ResolveConflictForm(formdata=None),
        resolutions=corrections.RESOLUTIONS,
    )


@bp.post("/test-sets/<int:test_set_id>/judges/conflicts/<int:conflict_id>/resolve")
@admin_required
def resolve(test_set_id: int, conflict_id: int) -> Response:
    """Close one conflict, saying who was right (audited)."""
    test_set = get_test_set_or_404(test_set_id)
    form = ResolveConflictForm()
    if form.validate_on_submit():
        try:
            corrections.resolve_conflict(
                test_set,
                conflict_id,
                form.resolution.data or "",
                current_user._get_current_object(),
            )
        except ServiceError as exc:
            flash(f"Not resolved: {exc}", "error")
        else:
            flash("Resolved.", "success")
    else:
        flash("Not resolved: choose who was right.", "error")
    return redirect(url_for("machine_review.conflicts", test_set_id=test_set.id))
