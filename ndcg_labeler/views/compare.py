"""Comparing runs: means with bootstrap intervals, paired tests, per-query deltas, scatter."""

from __future__ import annotations

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import (
    ServiceError,
    comparison,
    dashboard,
    jobs,
    live,
    paginate,
    pooling,
    runs,
    whole_number,
)
from ndcg_labeler.views import figures
from ndcg_labeler.views._scoring import chosen_runs, page_arg, score_options
from ndcg_labeler.views.access import (
    admin_required,
    get_test_set_or_404,
    may_see_grades,
    require_grades_visible,
)

bp = Blueprint("compare", __name__, url_prefix="/test-sets/<int:test_set_id>/dashboard/compare")

PER_PAGE = 100
# The first pairs of "what to label next" the page lists (the JSON export has them all).
NEXT_SHOWN = 50


def _next_labels(
    test_set: TestSet,
    chosen: list[Run],
    options: live.ScoreOptions,
    result: comparison.Comparison,
    wait: bool,
) -> tuple[pooling.CompareOrder | None, bool]:
    """What to label next between A and B (two runs, people who may see grades): the unjudged
    pairs of their top k by weight, and the labels remaining before the comparison is robust;
    and whether it is left to its own fragment (a large comparison not ordered yet in this
    process nor stored for the current grades, unless `wait`: ordering 7,000 queries' pairs
    must not hold the page up)."""
    if len(chosen) != 2 or not may_see_grades(test_set):
        return None, False
    depth = min(options.k, pooling.MAX_DEPTH)
    if wait or not result.large:
        return pooling.plan_for_compare(test_set, chosen[0], chosen[1], depth, options), False
    found = pooling.plan_page_for_compare(
        test_set, chosen[0], chosen[1], depth, options, NEXT_SHOWN, compute=False
    )
    return found, found is None


def _gate_args(options: live.ScoreOptions) -> dict[str, str]:
    """What "Gate B against A" carries of the page's options: its label source, and its
    cutoff as the gate's measure when it is not the gate's default NDCG@10."""
    out: dict[str, str] = {}
    if options.k != live.ScoreOptions().k:
        out["measure"] = f"ndcg_cut_{options.k}"
    if options.labels != "human":
        out["labels"] = options.labels
    return out


def _context(test_set_id: int, stats: bool, background: bool = False) -> dict[str, object]:
    test_set = get_test_set_or_404(test_set_id)
    options = score_options()
    all_runs = runs.list_runs(test_set)
    chosen = chosen_runs(test_set)
    if not chosen and "run" not in request.args:
        chosen = all_runs[:2]  # a first visit compares the two oldest runs
    result = None
    error = None
    if len(chosen) >= 2:
        try:
            result = comparison.compare_runs(chosen, options, stats, background=background)
        except ServiceError as exc:
            abort(400, description=str(exc))
    elif all_runs:
        error = "Choose at least two runs to compare."
    # Each run's NDCG per query is the grades summed up: on a blind set annotators keep the
    # means and the verdicts, not the scatter and the table (as the run table is kept).
    per_query = result is not None and may_see_grades(test_set)
    deltas = paginate(result.deltas if per_query else [], page_arg(), PER_PAGE)
    next_labels, next_pending = (
        _next_labels(test_set, chosen, options, result, wait=stats) if result else (None, False)
    )
    return {
        "test_set": test_set,
        # The chosen runs first, in their order: a form sends its checked boxes in the order
        # they stand, so the picker keeps A, B (swapped or not) and adds a new pick last.
        "all_runs": chosen + [run for run in all_runs if run not in chosen],
        "runs": chosen,
        "run_args": {"run": [run.id for run in chosen]},
        "raw_options": options,
        "option_args": live.option_args(options),
        "gate_args": _gate_args(options),
        "result": result,
        "scatter": figures.scatter(result) if per_query else None,
        "per_query": per_query,
        "error": error,
        "policy_text": comparison.UNDEFINED_POLICY,
        "deltas": deltas,
        "version": dashboard.version_token(test_set.id),
        "k_choices": live.k_choices(options.k, chosen),
        "policies": live.policies(),
        "next_labels": next_labels,
        "next_pending": next_pending,
        "next_shown": NEXT_SHOWN,
        "sample_size": comparison.sample_size(result, inline=False) if result else None,
    }


def _stats_arg() -> bool:
    """?stats=1 computes intervals and tests at once (pages without JavaScript ask for it);
    otherwise the page shows the stored ones, or fetches them (importing scipy.stats alone
    takes a second in a fresh worker, so the page never waits for them)."""
    return request.args.get("stats") == "1"


@bp.get("/")
def page(test_set_id: int) -> str:
    """Pick two or more runs; see whether the differences between them are real."""
    return render_template("dashboard/compare.html", **_context(test_set_id, _stats_arg()))


@bp.get("/_results")
def fragment(test_set_id: int) -> str:
    """The comparison's live part."""
    return render_template("dashboard/_compare.html", **_context(test_set_id, _stats_arg()))


@bp.get("/_stats")
def stats_fragment(test_set_id: int) -> tuple[str, int]:
    """Means with bootstrap intervals and the paired tests: computed here up to
    INLINE_MAX_VALUES (compared queries × runs); beyond, the first request starts their
    computation in the background and the fragment (202) asks again every second until they
    are stored."""
    context = _context(test_set_id, stats=False, background=True)
    result = context["result"]
    if not isinstance(result, comparison.Comparison):
        abort(400, description=str(context["error"] or "choose at least two runs"))
    status = 200 if result.stats_ready else 202  # 202: computing, asked again in a second
    return render_template("dashboard/_compare_stats.html", poll=True, **context), status


@bp.get("/_next")
def next_fragment(test_set_id: int) -> str:
    """What to label next between A and B, ordered in this request (the page of a large
    comparison asks for it once it has shown the rest)."""
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)  # which pairs are judged is the grades' business
    chosen = chosen_runs(test_set)
    if not chosen and "run" not in request.args:
        chosen = runs.list_runs(test_set)[:2]  # as the page's first visit
    if len(chosen) != 2:
        abort(400, description="choose exactly two runs")
    options = score_options()
    depth = min(options.k, pooling.MAX_DEPTH)
    try:
        plan = pooling.plan_page_for_compare(
            test_set, chosen[0], chosen[1], depth, options, NEXT_SHOWN, compute=True
        )
    except ServiceError as exc:
        abort(400, description=str(exc))
    return render_template(
        "dashboard/_compare_next.html",
        test_set=test_set,
        runs=chosen,
        run_args={"run": [run.id for run in chosen]},
        option_args=live.option_args(options),
        next_labels=plan,
        next_pending=False,
        next_shown=NEXT_SHOWN,
    )


@bp.post("/queue")
@admin_required
def queue(test_set_id: int) -> Response:
    """Add what to label next between A and B to the labeling queue, in weight order (admins)."""
    test_set = get_test_set_or_404(test_set_id)
    chosen = chosen_runs(test_set)
    options = score_options()
    back = url_for(
        "compare.page",
        test_set_id=test_set.id,
        run=[r.id for r in chosen],
        **live.option_args(options),
    )
    if len(chosen) != 2:
        flash("Nothing added: choose exactly two runs.", "error")
        return redirect(back)
    try:
        depth = min(options.k, pooling.MAX_DEPTH)
        done = pooling.add_for_compare(test_set, chosen[0], chosen[1], depth, options)
    except ServiceError as exc:
        flash(f"Nothing added: {exc}", "error")
        return redirect(back)
    flash(
        f"Queued {done.added} new pair{'s' if done.added != 1 else ''} and put "
        f"{done.requeued} queued one{'s' if done.requeued != 1 else ''} in weight order "
        f"({done.not_in_corpus} not in the corpus).",
        "success",
    )
    return redirect(back)


@bp.post("/fuse")
@admin_required
def fuse(test_set_id: int) -> Response:
    """Create a fused run (RRF, CombSUM or CombMNZ) from the runs being compared (admins)."""
    test_set = get_test_set_or_404(test_set_id)
    chosen = []
    for ref in request.form.getlist("run"):
        try:
            run = runs.get_run(test_set, whole_number(ref, "run"))
        except ServiceError as exc:
            abort(400, description=str(exc))
        if run is None:
            abort(400, description=f"no run {ref} in this test set")
        chosen.append(run)
    k_text = request.form.get("k", "60").strip() or "60"
    try:
        k = whole_number(k_text, "k")  # fuse_runs says which k the method takes
        if sum(run.num_entries for run in chosen) > current_app.config["NDCG_FUSE_JOB_ENTRIES"]:
            # Large: seconds to minutes of work; the job worker does it, with its progress page.
            job = jobs.enqueue_fuse(
                test_set,
                chosen,
                request.form.get("name", ""),
                request.form.get("method", "rrf"),
                k,
                current_user,
            )
            return redirect(url_for("jobs.show", job_id=job.id))
        fused = runs.fuse_runs(
            test_set,
            chosen,
            request.form.get("name", ""),
            current_user,
            method=request.form.get("method", "rrf"),
            k=k,
        )
    except ServiceError as exc:
        flash(f"Could not fuse the runs: {exc}", "error")
        return redirect(
            url_for("compare.page", test_set_id=test_set.id, run=[r.id for r in chosen])
        )
    flash(f"Run {fused.name} created: {fused.notes}.", "success")
    ids = [r.id for r in chosen] + [fused.id]
    return redirect(url_for("compare.page", test_set_id=test_set.id, run=ids))
