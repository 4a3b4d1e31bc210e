"""Machine judges in the browser: define judges (admins), run one, read its calibration."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.forms.judges import JudgeForm, RunJudgeForm
from ndcg_labeler.services import ServiceError, jobs, judges, paginate
from ndcg_labeler.views._scoring import page_arg
from ndcg_labeler.views.access import admin_required, get_test_set_or_404

bp = Blueprint("judges", __name__)

LABELS_PER_PAGE = 50


@bp.route("/judges/", methods=["GET", "POST"])
@admin_required
def index() -> str | Response:
    """Every judge, and the form that adds one."""
    form = JudgeForm()
    if form.validate_on_submit():
        try:
            judge = judges.add_judge(
                form.name.data or "",
                form.base_url.data or "",
                form.model.data or "",
                api_key_env=(form.api_key_env.data or "").strip(),
                prompt_template=form.prompt_template.data or "",
                temperature=float(form.temperature.data or 0),
                max_tokens=form.max_tokens.data or judges.DEFAULT_MAX_TOKENS,
                timeout=float(form.timeout.data or 60),
                concurrency=form.concurrency.data or 8,
                requests_per_minute=form.requests_per_minute.data or 0,
                actor=current_user._get_current_object(),
            )
        except judges.TemplateRefused as exc:
            form.prompt_template.errors.append(str(exc))
        except ServiceError as exc:
            form.name.errors.append(str(exc))
        else:
            flash(f"Judge {judge.name} added.", "success")
            return redirect(url_for("judges.index"))
    return render_template(
        "judges/index.html",
        judges=judges.list_judges(),
        form=form,
        default_template=judges.DEFAULT_TEMPLATE,
    )


@bp.get("/test-sets/<int:test_set_id>/judges/")
@admin_required
def for_test_set(test_set_id: int) -> str:
    """The judges, each linking to its calibration on this test set."""
    test_set = get_test_set_or_404(test_set_id)
    return render_template(
        "judges/for_test_set.html", test_set=test_set, judges=judges.list_judges()
    )


@bp.route("/test-sets/<int:test_set_id>/judges/<int:judge_id>", methods=["GET", "POST"])
@admin_required
def calibration(test_set_id: int, judge_id: int) -> str | Response:
    """A judge on one test set: calibration against people, its labels, and a run form."""
    test_set = get_test_set_or_404(test_set_id)
    judge = judges.get_judge(judge_id) or abort(404)
    form = RunJudgeForm()
    if form.validate_on_submit():
        which = form.pairs.data or "unjudged"
        if which == "sample":
            which = f"sample:{form.sample.data or 100}"
        try:
            job = jobs.enqueue_judge(test_set, judge.id, which, current_user)
        except ServiceError as exc:
            form.pairs.errors.append(str(exc))
        else:
            flash(f"{judge.name} runs in the background: follow it here.", "info")
            return redirect(url_for("jobs.show", job_id=job.id))
    found = judges.judge_agreement(test_set, judge)
    labels = paginate(judges.labels_of(test_set, judge), page_arg(), LABELS_PER_PAGE, rows=True)
    return render_template(
        "judges/calibration.html",
        test_set=test_set,
        judge=judge,
        found=found,
        labels=labels,
        form=form,
        references=judges.REFERENCES,
    )
