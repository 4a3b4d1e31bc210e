"""A judge's gullibility probes and costs in the browser: start a probe (a background job), set
the judge's prices; the calibration page shows the last probe, the money spent and estimates."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, flash, redirect, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.forms.probes import PricesForm, ProbeForm, field_errors
from ndcg_labeler.models import Judge, TestSet
from ndcg_labeler.services import ServiceError, jobs, judge_costs, judges, probes
from ndcg_labeler.views.access import admin_required, get_test_set_or_404

bp = Blueprint("judge_probes", __name__)

# The run form's pair choices that get an estimate on the calibration page.
ESTIMATED = (
    ("unjudged", "Unjudged pairs"),
    ("human", "Pairs people graded"),
    ("all", "Every pair"),
)


@bp.post("/test-sets/<int:test_set_id>/judges/<int:judge_id>/probe")
@admin_required
def probe(test_set_id: int, judge_id: int) -> Response:
    """Start a gullibility probe of the judge (CSRF-checked form); follow it on its job page."""
    test_set = get_test_set_or_404(test_set_id)
    judge = judges.get_judge(judge_id) or abort(404)
    back = url_for("judges.calibration", test_set_id=test_set.id, judge_id=judge.id)
    form = ProbeForm(prefix="probe")
    if not form.validate_on_submit():
        wrong = field_errors(form) or (
            f"give a number of pairs from 1 to {probes.MAX_PAIRS}, and a budget or none"
        )
        flash(f"Probe: {wrong}", "error")
        return redirect(back + "#probe-heading")
    try:
        job = jobs.enqueue_probe(
            test_set,
            judge.id,
            probes.read_pairs(form.pairs.data),
            current_user,
            max_cost=judge_costs.read_budget(form.max_cost.data),
        )
    except ServiceError as exc:
        flash(str(exc), "error")
        return redirect(back + "#probe-heading")
    flash(f"{judge.name} is probed in the background: follow it here.", "info")
    return redirect(url_for("jobs.show", job_id=job.id))


@bp.post("/test-sets/<int:test_set_id>/judges/<int:judge_id>/prices")
@admin_required
def prices(test_set_id: int, judge_id: int) -> Response:
    """Set the judge's prices per million tokens (audited); back to the calibration page."""
    test_set = get_test_set_or_404(test_set_id)
    judge = judges.get_judge(judge_id) or abort(404)
    back = url_for("judges.calibration", test_set_id=test_set.id, judge_id=judge.id)
    form = PricesForm(prefix="prices")
    if not form.validate_on_submit():
        wrong = field_errors(form) or (
            f"give dollars per million tokens from 0 to {judge_costs.MAX_PRICE:g}"
        )
        flash(f"Prices: {wrong}", "error")
        return redirect(back + "#cost-heading")
    judge_costs.set_prices(
        judge,
        judge_costs.check_price(form.input_price.data, "input"),
        judge_costs.check_price(form.output_price.data, "output"),
        current_user._get_current_object(),
    )
    flash(f"Prices of {judge.name} saved.", "success")
    return redirect(back + "#cost-heading")


@bp.app_template_global()
def probe_panel(test_set: TestSet, judge: Judge) -> dict[str, Any]:
    """What the calibration page shows of probes and costs (its own forms included)."""
    choices = [which for which, _ in ESTIMATED]
    found = judge_costs.estimate_runs(test_set, judge, choices)
    estimates = [(label, guess) for (_, label), guess in zip(ESTIMATED, found, strict=True)]
    probe_estimate = None
    if not judge.ensemble:  # an ensemble is not probed (its members are)
        probe_estimate = probes.estimate_probe(test_set, judge, probes.DEFAULT_PAIRS)
    return {
        "last": probes.last_probe(test_set, judge),
        "probe_estimate": probe_estimate,
        "spending": judge_costs.spending(test_set.id, judge),
        "estimates": estimates,
        "probe_form": ProbeForm(prefix="probe", formdata=None),
        "prices_form": PricesForm(
            prefix="prices",
            formdata=None,
            input_price=judge.input_price,
            output_price=judge.output_price,
        ),
        "flag_points": probes.FLAG_POINTS,
        "variants": probes.VARIANTS,
    }
