"""Machine judges in the browser: define judges (admins), run one, read its calibration, draw
its audit sample of queries, archive, restore or delete one, ask one again."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.forms.judges import (
    AskAgainForm,
    AuditSampleForm,
    DeleteJudgeForm,
    JudgeForm,
    JudgeSettingsForm,
    JudgeStateForm,
    RunJudgeForm,
)
from ndcg_labeler.forms.probes import field_errors
from ndcg_labeler.models import Judge, TestSet
from ndcg_labeler.services import (
    ServiceError,
    audit_samples,
    counted,
    ensembles,
    jobs,
    judge_costs,
    judges,
    paginate,
)
from ndcg_labeler.views._scoring import page_arg
from ndcg_labeler.views.access import admin_required, get_test_set_or_404

bp = Blueprint("judges", __name__)

LABELS_PER_PAGE = 50
# N offered for a first audit sample (capped at the test set's number of queries).
DEFAULT_AUDIT = 100


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
                **form.numbers(),
                actor=current_user._get_current_object(),
            )
        except judges.TemplateRefused as exc:
            form.prompt_template.errors.append(str(exc))
        except ServiceError as exc:
            form.name.errors.append(str(exc))
        else:
            prices = [
                judge_costs.check_price(form.input_price.data, "input"),
                judge_costs.check_price(form.output_price.data, "output"),
            ]
            if prices != [None, None]:
                judge_costs.set_prices(judge, *prices, current_user._get_current_object())
            flash(f"Judge {judge.name} added.", "success")
            return redirect(url_for("judges.index"))
    return render_template(
        "judges/index.html",
        judges=judges.list_judges(),
        archived=judges.list_archived(),
        form=form,
        default_template=judges.DEFAULT_TEMPLATE,
    )


def _price(value: object) -> float | None:
    """A form's Decimal as a float (None stays None)."""
    return None if value is None else float(value)  # type: ignore[arg-type]


@bp.get("/test-sets/<int:test_set_id>/judges/")
@admin_required
def for_test_set(test_set_id: int) -> str:
    """The judges, each linking to its calibration on this test set."""
    test_set = get_test_set_or_404(test_set_id)
    return render_template(
        "judges/for_test_set.html",
        test_set=test_set,
        judges=judges.list_judges(),
        archived=judges.list_archived(),
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
            which = f"sample:{(form.sample.data or '').strip() or 100}"
        try:
            max_cost = judge_costs.read_budget(form.max_cost.data)
            job = jobs.enqueue_judge(test_set, judge.id, which, current_user, max_cost=max_cost)
        except ServiceError as exc:
            form.pairs.errors.append(str(exc))
        else:
            flash(f"{judge.name} runs in the background: follow it here.", "info")
            return redirect(url_for("jobs.show", job_id=job.id))
    return _calibration_page(test_set, judge, form, _audit_form(test_set, judge))


@bp.post("/test-sets/<int:test_set_id>/judges/<int:judge_id>/audit")
@admin_required
def audit_sample(test_set_id: int, judge_id: int) -> str | Response:
    """Draw the judge's audit sample of N queries, or extend it to N (CSRF-checked form)."""
    test_set = get_test_set_or_404(test_set_id)
    judge = judges.get_judge(judge_id) or abort(404)
    audit_form = AuditSampleForm(prefix="audit")
    if audit_form.validate_on_submit():
        try:
            state = audit_samples.draw_audit(
                test_set,
                judge,
                audit_form.queries.data or "",
                seed=audit_form.seed_number(),
                reseed=bool(audit_form.reseed.data),
                actor=current_user,
            )
        except ServiceError as exc:
            audit_form.queries.errors.append(str(exc))
        else:
            flash(
                f"Audit sample: {len(state.queries)} queries, seed {state.seed}; "
                f"{len(state.audited)} audited.",
                "success",
            )
            url = url_for("judges.calibration", test_set_id=test_set.id, judge_id=judge.id)
            return redirect(url + "#audit-heading")
    return _calibration_page(test_set, judge, RunJudgeForm(formdata=None), audit_form)


def _audit_form(test_set: TestSet, judge: Judge) -> AuditSampleForm:
    """The sample form, N preset to the sample's size (or 100, at most the set's queries)."""
    state = audit_samples.audit_state(test_set, judge)
    size = len(state.queries) or min(DEFAULT_AUDIT, state.query_count)
    return AuditSampleForm(prefix="audit", formdata=None, queries=str(size) if size else "")


def _calibration_page(
    test_set: TestSet, judge: Judge, form: RunJudgeForm, audit_form: AuditSampleForm
) -> str:
    """The calibration page with its two forms (either may carry errors)."""
    found = judges.judge_agreement(test_set, judge)
    audit = audit_samples.audit_state(test_set, judge)
    labels = paginate(judges.labels_of(test_set, judge), page_arg(), LABELS_PER_PAGE, rows=True)
    return render_template(
        "judges/calibration.html",
        test_set=test_set,
        judge=judge,
        found=found,
        labels=labels,
        form=form,
        audit=audit,
        audited_qids=set(audit.audited),
        empty_qids=set(audit.no_pairs),
        audit_form=audit_form,
        again_form=AskAgainForm(prefix="again"),
        references=judges.REFERENCES,
        extras=ensembles.calibration_extras(test_set, judge),  # few-shot, ensembles, worst
        key_warnings=ensembles.key_warnings(judge),  # of this (web) process: a hint only
    )


@bp.post("/test-sets/<int:test_set_id>/judges/<int:judge_id>/again")
@admin_required
def ask_again(test_set_id: int, judge_id: int) -> Response:
    """Ask the judge again about answers it gave under its current prompt (a background job)."""
    test_set = get_test_set_or_404(test_set_id)
    judge = judges.get_judge(judge_id) or abort(404)
    form = AskAgainForm(prefix="again")
    back = url_for("judges.calibration", test_set_id=test_set.id, judge_id=judge.id)
    if not form.validate_on_submit():
        wrong = field_errors(form) or "choose which answers, and a budget or none"
        flash(f"Ask again: {wrong}", "error")
        return redirect(back + "#again-heading")
    try:
        job = jobs.enqueue_judge(
            test_set,
            judge.id,
            f"again:{form.which.data}",
            current_user,
            max_cost=judge_costs.read_budget(form.max_cost.data),
        )
    except ServiceError as exc:
        flash(str(exc), "error")
        return redirect(back + "#again-heading")
    flash(f"{judge.name} is asked again in the background: follow it here.", "info")
    return redirect(url_for("jobs.show", job_id=job.id))


@bp.post("/judges/<int:judge_id>/archive")
@admin_required
def archive(judge_id: int) -> Response:
    """Archive a judge: gone from the label lists, its answers kept."""
    judge = judges.get_judge(judge_id) or abort(404)
    if JudgeStateForm().validate_on_submit() and judges.archive_judge(judge, current_user):
        flash(f"Judge {judge.name} archived: its answers are kept.", "success")
    return redirect(url_for("judges.index"))


@bp.post("/judges/<int:judge_id>/restore")
@admin_required
def restore(judge_id: int) -> Response:
    """Take a judge out of the archive."""
    judge = judges.get_judge(judge_id) or abort(404)
    if JudgeStateForm().validate_on_submit() and judges.restore_judge(judge, current_user):
        flash(f"Judge {judge.name} restored.", "success")
    return redirect(url_for("judges.index"))


@bp.route("/judges/<int:judge_id>/edit", methods=["GET", "POST"])
@admin_required
def edit(judge_id: int) -> str | Response:
    """Change a judge's base URL, concurrency, timeout and rate limit (audited); its answers
    stay as they are."""
    judge = judges.get_judge(judge_id) or abort(404)
    if judge.ensemble:
        abort(404)  # an ensemble asks through its members: their settings count
    form = JudgeSettingsForm()
    if not form.is_submitted():
        form = JudgeSettingsForm(
            formdata=None,
            base_url=judge.base_url,
            timeout=f"{judge.timeout:g}",
            concurrency=str(judge.concurrency),
            requests_per_minute=str(judge.requests_per_minute),
        )
    elif form.validate_on_submit():
        try:
            changed = judges.edit_judge(
                judge, current_user._get_current_object(), **form.settings()
            )
        except ServiceError as exc:
            form.base_url.errors.append(str(exc))
        else:
            said = "saved" if changed else "unchanged"
            flash(f"Settings of {judge.name} {said}.", "success")
            return redirect(url_for("judges.index"))
    return render_template("judges/edit.html", judge=judge, form=form)


@bp.route("/judges/<int:judge_id>/delete", methods=["GET", "POST"])
@admin_required
def delete(judge_id: int) -> str | Response:
    """Ask for the judge's name, then delete it with its machine labels (audited)."""
    judge = judges.get_judge(judge_id) or abort(404)
    form = DeleteJudgeForm()
    if form.validate_on_submit():
        if (form.confirm.data or "").strip() != judge.name:
            form.confirm.errors.append(f"type {judge.name} exactly to delete this judge")
        else:
            gone = judges.delete_judge(judge, current_user)
            labels = counted(gone["machine_labels"], "machine label")
            flash(f"Judge {gone['judge']} deleted with its {labels}.", "success")
            return redirect(url_for("judges.index"))
    return render_template(
        "judges/delete.html", judge=judge, form=form, labels=judges.label_count(judge)
    )
