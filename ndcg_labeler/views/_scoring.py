"""Request helpers shared by the dashboard blueprints: score options, runs, htmx detection."""

from __future__ import annotations

from flask import abort, request

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError, live, read_page, runs, whole_number
from ndcg_labeler.views.access import may_see_grades


def score_options() -> live.ScoreOptions:
    """Scoring options from the query string; 400 with the reason when malformed or when
    ?labels= names no judge."""
    try:
        # parse_options looks the judge up, once for every page: scoring looks it up again
        # deep inside the views, where an unknown name would escape as a 500.
        options = live.parse_options(request.args)
    except ServiceError as exc:
        abort(400, description=str(exc))
    _policy_allowed(options)
    return options


def _policy_allowed(options: live.ScoreOptions) -> None:
    """403 with the reason when an annotator of a blind test set asks for another aggregation
    policy than the set's: a run's mean under max or min is the others' grades summed up."""
    test_set_id = (request.view_args or {}).get("test_set_id")
    if options.policy is None or not isinstance(test_set_id, int):
        return
    test_set = db.session.get(TestSet, test_set_id)
    if test_set is None or options.policy == test_set.aggregation or may_see_grades(test_set):
        return
    abort(
        403,
        description=(
            "This test set is judged blind by several annotators per pair, so scores under "
            f"another aggregation policy than its own ({test_set.aggregation}) are shown to "
            "admins only: under max or min, a run's mean would tell the others' grades."
        ),
    )


def k_arg() -> int:
    """The ?k= cutoff alone (default 10), parsed as on every score page; 400 saying why."""
    try:
        return live.parse_options({"k": request.args.get("k")}).k
    except ServiceError as exc:
        abort(400, description=str(exc))


def kept_or_400(run: Run, options: live.ScoreOptions) -> None:
    """400 with the reason when `run` is archived shallower than the options' cutoff."""
    try:
        options.check_kept(run)
    except ServiceError as exc:
        abort(400, description=str(exc))


def measure_args() -> list[str]:
    """The ?measure= values given (blank ones, as an empty form field sends, left out)."""
    return [value for value in request.args.getlist("measure") if value.strip()]


def run_or_404(test_set: TestSet, run_id: int) -> Run:
    """The run of the test set with this id, or 404."""
    return runs.get_run(test_set, run_id) or abort(404)


def chosen_runs(test_set: TestSet, field: str = "run") -> list[Run]:
    """Runs named by repeated ?run=ID arguments (unknown ids: 404), in the order given."""
    chosen = []
    for value in request.values.getlist(field):
        try:
            run_id = whole_number(value, "run")
        except ServiceError:
            abort(400, description=f"run must be a run id, not '{value}'")
        run = run_or_404(test_set, run_id)
        if run not in chosen:
            chosen.append(run)
    return chosen


def is_htmx() -> bool:
    """True for requests htmx sends (they want a fragment, not a page)."""
    return request.headers.get("HX-Request") == "true"


def page_arg(name: str = "page") -> int:
    """The ?page= (or ?`name`=) number, 1 when absent; a 400 saying why when it is not a whole
    number of at least 1 (services.read_page). One past the end is paginate's: the last page,
    with the pager saying there is no such page."""
    try:
        return read_page(request.args.get(name), name)
    except ServiceError as exc:
        abort(400, description=str(exc))
