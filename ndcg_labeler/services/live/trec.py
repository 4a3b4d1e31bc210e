"""trec_eval's `-q` layout of a run's live scores, for `flask run score --trec` and exports."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ndcg_labeler.models import Run
from ndcg_labeler.scoring import COUNT_MEASURES, DEFAULT_CUTOFFS, Evaluation, trec_all
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services.live.engine import live_state, scoring_lock
from ndcg_labeler.services.live.options import ScoreOptions


def _evaluation(arrays: dict[str, np.ndarray], cutoffs: tuple[int, ...]) -> Evaluation:
    """Rebuild a scoring.Evaluation (for trec_all) from the stored arrays."""

    def cut(prefix: str) -> dict[int, np.ndarray]:
        return {k: arrays[f"{prefix}_{k}"] for k in cutoffs}

    return Evaluation(
        cutoffs=cutoffs,
        ndcg=arrays["ndcg"],
        dcg=arrays["dcg"],
        idcg=arrays["idcg"],
        ndcg_cut=cut("ndcg_cut"),
        dcg_cut=cut("dcg_cut"),
        idcg_cut=cut("idcg_cut"),
        P=cut("P"),
        recall=cut("recall"),
        judged_at=cut("judged_at"),
        ndcg_if_unjudged_top_cut=cut("ndcg_if_unjudged_top_cut"),
        ndcg_condensed_cut=cut("ndcg_condensed_cut"),
        recip_rank=arrays["recip_rank"],
        ap=arrays["map"],
        num_rel=arrays["num_rel"],
        num_rel_ret=arrays["num_rel_ret"],
        num_ret=arrays["num_ret"],
    )


def trec_measures(k: int) -> list[str]:
    """The measures `--trec` prints, in trec_eval's order (its cutoffs, plus k)."""
    cuts = sorted({*DEFAULT_CUTOFFS, k})
    return [
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "recip_rank",
        *(f"P_{c}" for c in cuts),
        *(f"recall_{c}" for c in cuts),
        "ndcg",
        *(f"ndcg_cut_{c}" for c in cuts),
    ]


def _trec_format(measure: str, qid: str, value: float) -> str:
    """One line as trec_eval prints it: name padded to 22, tab, qid, tab, value."""
    if measure in COUNT_MEASURES or measure == "num_q":
        return f"{measure:<22}\t{qid}\t{round(value)}"
    return f"{measure:<22}\t{qid}\t{value:.4f}"


def check_trec_layout(run: Run) -> None:
    """Refuse trec_eval's layout for an archived run, saying what it still gives.

    The layout always prints map, recip_rank, ndcg and num_ret (whole-list figures) and P,
    recall and ndcg_cut to 1000. An archived run has only its top entries: those lines would be
    the figures stored before archiving, stale after the next grade, as a gate or a measures
    export naming them would be (refused the same way). Leaving them out would make a file
    trec_eval never writes, which a script comparing runs line by line would misread.
    """
    if run.kept_depth is None:
        return
    raise ServiceError(
        f"run '{run.name}' is archived: it kept its top {run.kept_depth} entries per query, so "
        "trec_eval's layout, which always prints whole-list measures (map, recip_rank, ndcg, "
        "num_ret) and cutoffs up to 1000, is no longer available; measures cut at k up to "
        f"{run.kept_depth} still are (the CSV and JSON exports, `flask run score --measure`)"
    )


def view_ndcg_names(k: int, options: ScoreOptions) -> dict[str, str]:
    """The view's own NDCG lines the layout adds beside trec_eval's: name -> trec_eval's measure.

    trec_eval's ndcg and ndcg_cut use linear gain and the ideal from every judged grade of the
    query, so those names always carry that figure. A view with gain=exp or ideal=retrieved
    gets its figures under names trec_eval does not have: `exp` for the gain, `retrieved` for
    the ideal (ndcg_exp, ndcg_cut_retrieved_10, ndcg_cut_exp_retrieved_10 ...); none when the
    view is trec_eval's.
    """
    tag = options.layout_tag
    if not tag:
        return {}
    cuts = sorted({*DEFAULT_CUTOFFS, k})
    return {f"ndcg{tag}": "ndcg", **{f"ndcg_cut{tag}_{c}": f"ndcg_cut_{c}" for c in cuts}}


def trec_eval_lines(run: Run, options: ScoreOptions | None = None) -> list[str]:
    """trec_eval's `-q` output: per-query lines, then `all` with trec_eval's averaging.

    Like trec_eval without -c, the queries are those of the run that have judgments (qrels),
    in qid byte order; undefined values print as 0; counts are summed in `all`. ndcg and
    ndcg_cut are trec_eval's (linear gain, ideal from all judged grades) whatever the gain
    and ideal options; under gain=exp or ideal=retrieved the view's figures follow each block
    under view_ndcg_names. An archived run is refused (ServiceError): see check_trec_layout.
    """
    check_trec_layout(run)
    options = options or ScoreOptions()
    trec = replace(options, gain="linear", ideal="judged")
    own_names = view_ndcg_names(options.k, options)
    with scoring_lock():
        current, _state, resolved, queries = live_state(run, trec)
        keep = current.judged_any & ~current.missing
        arrays = {name: values[keep].copy() for name, values in current.arrays.items()}
        qids = [q for q, kept in zip(queries.qids, keep.tolist(), strict=True) if kept]
        own_arrays = None
        if own_names:
            # Same queries (which are judged and in the run depends on neither gain nor ideal).
            own_current = live_state(run, options)[0]
            own_arrays = {name: values[keep].copy() for name, values in own_current.arrays.items()}
    cutoffs = tuple(sorted(resolved.cutoffs))
    blocks = [(_evaluation(arrays, cutoffs), {m: m for m in trec_measures(options.k)})]
    if own_arrays is not None:
        blocks.append((_evaluation(own_arrays, cutoffs), own_names))
    lines = []
    for i, qid in enumerate(qids):
        for evaluation, names in blocks:
            for name, measure in names.items():
                lines.append(_trec_format(name, qid, evaluation.trec_value(measure, i)))
    lines.append(f"{'runid':<22}\tall\t{run.name}")
    lines.append(_trec_format("num_q", "all", float(len(qids))))
    for evaluation, names in blocks:
        for name, measure in names.items():
            lines.append(_trec_format(name, "all", trec_all(evaluation, measure)))
    return lines
