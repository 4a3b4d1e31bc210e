"""The release gate in the browser: pass, fail or inconclusive for a candidate run against a
baseline, as `flask gate` and `POST /api/testsets/<set>/gate` answer it, with both reports."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from flask import Blueprint, abort, render_template, request, url_for
from werkzeug.wrappers import Response

from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError, gate, runs, whole_number
from ndcg_labeler.views._scoring import measure_args
from ndcg_labeler.views.access import get_test_set_or_404, may_see_grades

bp = Blueprint("gate", __name__, url_prefix="/test-sets/<int:test_set_id>/dashboard/gate")

# NDCG at a cutoff, as trec_eval or ir_measures names it (ndcg_cut_3, nDCG@3).
_NDCG_AT = re.compile(r"(?:ndcg_cut_|ndcg@)(\d+)", re.IGNORECASE)
DEFAULT_ALPHA = 0.05  # as `flask gate --alpha` and the API's "alpha"


@dataclass(frozen=True)
class GateForm:
    """The page's GET form as typed (the names are the API's JSON keys)."""

    baseline: str
    candidate: str
    measures: list[str]
    max_drop: str
    alpha: str
    labels: str

    @property
    def asked(self) -> bool:
        """True once both runs are named: the page then runs the gate."""
        return bool(self.baseline.strip() and self.candidate.strip())

    def args(self) -> dict[str, object]:
        """The form as query arguments (the reports' links carry the same request)."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "measure": self.measures,
            "max_drop": self.max_drop,
            "alpha": self.alpha,
            "labels": self.labels,
        }


def _form() -> GateForm:
    """The form from the query string; unset fields get the gate's defaults."""
    return GateForm(
        baseline=request.args.get("baseline", ""),
        candidate=request.args.get("candidate", ""),
        measures=measure_args() or list(gate.DEFAULT_MEASURES),
        max_drop=request.args.get("max_drop", "").strip() or f"{gate.DEFAULT_MAX_DROP:g}",
        alpha=request.args.get("alpha", "").strip() or f"{DEFAULT_ALPHA:g}",
        labels=request.args.get("labels", "").strip() or "human",
    )


def _run(test_set: TestSet, text: str, name: str) -> Run:
    """The test set's run with the id the form sent, or a ServiceError naming the field."""
    run = runs.get_run(test_set, whole_number(text, name))
    if run is None:
        raise ServiceError(f"test set '{test_set.name}' has no run {text.strip()} ({name})")
    return run


def _number(text: str, name: str) -> float:
    """The field as a number (run_gate checks its range), or a ServiceError naming it."""
    try:
        return float(text)
    except ValueError:
        raise ServiceError(f"{name} must be a number, not '{text[:40]}'") from None


def _verdict(test_set: TestSet, form: GateForm) -> gate.GateResult:
    """run_gate on the form's arguments, withholding per-query figures from those who may not
    see them (an annotator of a blind set, as the API does); ServiceError on bad input."""
    result = gate.run_gate(
        test_set,
        _run(test_set, form.baseline, "baseline"),
        _run(test_set, form.candidate, "candidate"),
        measures=form.measures,
        max_drop=_number(form.max_drop, "max_drop"),
        alpha=_number(form.alpha, "alpha"),
        labels=form.labels,
        max_drop_name="max_drop",
    )
    return result if may_see_grades(test_set) else result.withholding_queries()


def _compare_args(result: gate.GateResult) -> dict[str, object]:
    """What "Compare these two runs" carries: the label source, and the cutoff of the first
    NDCG measure gated as the compare page's k when it is not that page's default 10."""
    out: dict[str, object] = {}
    cutoffs = [int(m[1]) for c in result.measures if (m := _NDCG_AT.fullmatch(c.measure))]
    if cutoffs and cutoffs[0] != 10:
        out["k"] = cutoffs[0]
    if result.labels != "human":
        out["labels"] = result.labels
    return out


def _api_call(result: gate.GateResult) -> str:
    """The curl command that asks the API for the same verdict."""
    url = url_for("api.gate_check", test_set=gate.refs(result)[0], _external=True)
    return (
        'curl -fsS -H "Authorization: Bearer $NDCG_TOKEN" -H "Content-Type: application/json" '
        f"-d {shlex.quote(gate.api_body(result))} {shlex.quote(url)}"
    )


@bp.get("/")
def page(test_set_id: int) -> tuple[str, int]:
    """Choose a baseline, a candidate, measures and margins; see whether the candidate may ship."""
    test_set = get_test_set_or_404(test_set_id)
    all_runs = runs.list_runs(test_set)
    form = _form()
    result, error = None, None
    if form.asked:
        try:
            result = _verdict(test_set, form)
        except ServiceError as exc:
            error = str(exc)
    return render_template(
        "dashboard/gate.html",
        test_set=test_set,
        all_runs=all_runs,
        form=form,
        chosen=_chosen(form, all_runs),
        result=result,
        error=error,
        cli=gate.cli_command(result) if result else None,
        api_call=_api_call(result) if result else None,
        compare_args=_compare_args(result) if result else {},
        measure_help=gate.MEASURE_HELP,
        default_max_drop=gate.DEFAULT_MAX_DROP,
        withheld=gate.WITHHELD,
        # The reports' own sentences, so the page and the downloads say the same.
        gate_rule=gate.rule_line,
        gate_labels=gate.labels_line,
        gate_power=gate.power_line,
    ), 400 if error else 200


def _chosen(form: GateForm, all_runs: list[Run]) -> tuple[Run | None, ...]:
    """The runs the selects show chosen: those named, else the two oldest (as compare)."""
    if not form.asked:
        return tuple(all_runs[:2]) if len(all_runs) >= 2 else (None, None)
    by_id = {run.id: run for run in all_runs}
    found = []
    for text in (form.baseline, form.candidate):
        try:
            found.append(by_id.get(whole_number(text, "run")))
        except ServiceError:
            found.append(None)
    return tuple(found)


def _report(test_set_id: int) -> gate.GateResult:
    """The verdict the page would show, for its downloads (400 saying why on bad input)."""
    test_set = get_test_set_or_404(test_set_id)
    form = _form()
    if not form.asked:
        abort(400, description="choose a baseline and a candidate run")
    try:
        return _verdict(test_set, form)
    except ServiceError as exc:
        abort(400, description=str(exc))


@bp.get("/gate.md")
def markdown(test_set_id: int) -> Response:
    """The verdict as the Markdown report of `flask gate --markdown`."""
    return Response(
        gate.markdown(_report(test_set_id)),
        mimetype="text/markdown",
        headers={"Content-Disposition": 'attachment; filename="gate.md"'},
    )


@bp.get("/gate.xml")
def junit(test_set_id: int) -> Response:
    """The verdict as the JUnit XML report of `flask gate --junit`."""
    return Response(
        gate.junit_xml(_report(test_set_id)),
        mimetype="application/xml",
        headers={"Content-Disposition": 'attachment; filename="gate.xml"'},
    )
