"""Dashboard page data: the test-set overview and a run's sortable, filterable query table.

Every number comes from services.scores.score_run (the CLI's `flask run score` numbers); this
module only selects, orders, pages and labels them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import natural_key
from ndcg_labeler.models import Run, TestSet, User
from ndcg_labeler.services import ServiceError, ppi
from ndcg_labeler.services import labeling as labeling_service
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services._db import paginate, read_page
from ndcg_labeler.services.dashboard.bands import BAND_FILTERS, BANDS, bands_of
from ndcg_labeler.services.labeling import Progress
from ndcg_labeler.services.live import (
    K_CHOICES,
    ListedScores,
    QueryScore,
    Resolved,
    RunScores,
    ScoreOptions,
    listed_scores,
    score_run,
)
from ndcg_labeler.services.live import means_over_k as live_means_over_k

# Band filter values: the four bands, plus queries without NDCG and those the run lacks.
PER_PAGE = 100
SORT_COLUMNS = ("qid", "query", "dcg", "idcg", "ndcg", "gap", "loss", "judged", "relevant")
DEFAULT_SORT = ("gap", "desc")


def versions(test_set_id: int) -> tuple[int, int] | None:
    """(labels_version, runs_version) of a test set: one primary-key SELECT."""
    t = TestSet.__table__
    row = db.session.execute(
        sa.select(t.c.labels_version, t.c.runs_version).where(t.c.id == test_set_id)
    ).first()
    return None if row is None else (int(row[0]), int(row[1]))


def version_token(test_set_id: int) -> str:
    """Both counters as one token ("labels.runs") for live pages to compare."""
    found = versions(test_set_id)
    return "" if found is None else f"{found[0]}.{found[1]}"


def undefined_reason(ideal: str) -> str:
    """Why a query has no NDCG under the ideal option."""
    if ideal == "retrieved":
        return "no relevant chunk retrieved: IDCG is 0"
    return "no relevant judged chunk: IDCG is 0"


# ---- overview -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSummary:
    """One run's line in the overview."""

    run: Run
    scores: RunScores | ListedScores
    uploader: str | None
    estimate: ppi.PPIFigures | None = None  # under labels=ppi:JUDGE

    @property
    def mean(self) -> float | None:
        """Mean NDCG@k over the queries with a defined value."""
        return self.scores.mean_ndcg


@dataclass(frozen=True)
class Overview:
    """The test-set overview: every run's mean NDCG@k, coverage and the labeling progress."""

    test_set: TestSet
    options: Resolved
    runs: list[RunSummary]
    progress: Progress
    version: str
    means_by_k: list[tuple[str, list[float | None]]]
    """Each run's name and mean NDCG@k for every k in K_CHOICES (for the chart)."""
    audit: ppi.AuditStatus | None = None
    """The judge's audit status under machine:, fill: and ppi: labels."""
    runs_total: int = 0
    """How many runs the test set has (`runs` may show only those that matter)."""
    left_out: list[Run] = field(default_factory=list)
    """Runs that matter but were archived shallower than k, so cannot score at k."""

    def to_json(self) -> dict[str, Any]:
        """The overview table as JSON (means as `flask run score --json` prints them)."""
        return {
            "testset": self.test_set.name,
            **self.options.describe(),
            "labels_version": int(self.version.split(".")[0]) if self.version else None,
            "progress": {
                "pairs": self.progress.pairs,
                "done": self.progress.done,
                "judgments_per_pair": self.progress.target,
            },
            "runs": [
                {
                    "run": s.run.name,
                    "mean_ndcg": s.mean,
                    **s.scores.interval_json(),
                    "queries": s.scores.num_queries,
                    "undefined": s.scores.num_undefined,
                    "missing": s.scores.num_missing,
                    "judged_at_k": s.scores.mean_judged_at_k,
                    **({"ppi": s.estimate.to_json()} if s.estimate else {}),
                    **({"ppi_basis": s.estimate.basis_json()} if s.estimate else {}),
                    "mean_if_unjudged_top": s.scores.mean_if_unjudged_top,
                    "mean_condensed": s.scores.mean_condensed,
                    **s.scores.means_json(),
                }
                for s in self.runs
            ],
            "runs_total": self.runs_total,
            "left_out": [
                {"run": run.name, "run_id": run.id, "kept_depth": run.kept_depth}
                for run in self.left_out
            ],
            **({"audit": self.audit.to_json()} if self.audit else {}),
        }


def means_over_k(
    run: Run, options: ScoreOptions, ks: Sequence[int] = K_CHOICES
) -> list[float | None]:
    """Mean NDCG@k of a run for each k in `ks` (the other options unchanged); None past the
    depth an archived run kept."""
    return live_means_over_k(run, options, ks)


# Up to this many runs the overview shows them all; past it, the runs that matter: the pinned
# ones, the latest of each series, the newest and the best (by their stored mean NDCG@10), the
# rest a click away.
SHOWN_ALL = 12
SHOWN_NEWEST = 5
SHOWN_BEST = 5
SHOWN_PINNED = 20
SHOWN_SERIES = 10  # the latest run of each of the series most recently run


def _latest_of_each_series(test_set: TestSet, limit: int) -> list[Run]:
    """The latest run (by upload time, then id) of each of the `limit` series run last."""
    rank = (
        sa.func.row_number()
        .over(partition_by=Run.series, order_by=(Run.uploaded_at.desc(), Run.id.desc()))
        .label("rank")
    )
    latest = (
        sa.select(Run.id, Run.uploaded_at, rank)
        .where(Run.test_set_id == test_set.id, Run.series.is_not(None))
        .subquery()
    )
    ids = (
        sa.select(latest.c.id)
        .where(latest.c.rank == 1)
        .order_by(latest.c.uploaded_at.desc(), latest.c.id.desc())
        .limit(limit)
    )
    return list(db.session.scalars(sa.select(Run).where(Run.id.in_(ids))))


def runs_that_matter(test_set: TestSet, k: int) -> tuple[list[Run], list[Run], int]:
    """The runs the overview shows, oldest first, those of them left out because they were
    archived shallower than k (they cannot score at k), and how many runs the test set has."""
    every = run_service.find_runs(test_set, run_service.RunFilter(limit=SHOWN_ALL + 1))
    if every.total <= SHOWN_ALL:
        chosen = every.runs
    else:
        picks = [
            run_service.RunFilter(pinned=True, sort="newest", limit=SHOWN_PINNED),
            run_service.RunFilter(sort="newest", limit=SHOWN_NEWEST),
            run_service.RunFilter(sort="best", archived=None, limit=SHOWN_BEST),
        ]
        found = {
            run.id: run for pick in picks for run in run_service.find_runs(test_set, pick).runs
        }
        found.update((run.id, run) for run in _latest_of_each_series(test_set, SHOWN_SERIES))
        chosen = sorted(found.values(), key=lambda run: (run.uploaded_at, run.id))
    shown = [run for run in chosen if run.kept_depth is None or k <= run.kept_depth]
    left_out = [run for run in chosen if run.kept_depth is not None and k > run.kept_depth]
    return shown, left_out, every.total


def overview(test_set: TestSet, user: User, options: ScoreOptions) -> Overview:
    """The runs that matter scored under `options`, with the labeling progress."""
    runs, left_out, total = runs_that_matter(test_set, options.k)
    names = run_service.uploaders(runs)
    version = version_token(test_set.id)
    # Under the default options each run's stored list line has every figure shown here.
    lines = listed_scores(runs) if options == ScoreOptions() else {}
    summaries = [
        RunSummary(
            run,
            lines.get(run.id) or score_run(run, options),
            names.get(run.id),
            ppi.run_estimate(run, options),
        )
        for run in runs
    ]
    resolved = _resolved(test_set, options)
    return Overview(
        test_set=test_set,
        options=resolved,
        runs=summaries,
        progress=labeling_service.progress(test_set, user),
        version=version,
        means_by_k=[(r.name, means_over_k(r, options)) for r in runs],
        audit=ppi.audit_status(test_set, options.labels),
        runs_total=total,
        left_out=left_out,
    )


def _resolved(test_set: TestSet, options: ScoreOptions) -> Resolved:
    """Options with the test set's defaults, for pages that have no run to score."""
    return options.resolve(test_set.aggregation, test_set.relevance_threshold, test_set.scale_max)


# ---- per-run query table ------------------------------------------------------------------


@dataclass(frozen=True)
class QueryRow:
    """A row of the query table: the scores, the band and why NDCG may be undefined."""

    score: QueryScore
    band: str
    reason: str | None


@dataclass(frozen=True)
class TableQuery:
    """How the table is ordered, filtered and paged (from the query string)."""

    sort: str = DEFAULT_SORT[0]
    direction: str = DEFAULT_SORT[1]
    text: str = ""
    band: str = ""
    page: int = 1

    def args(self, **changes: Any) -> dict[str, Any]:
        """Query-string arguments for a link (defaults left out)."""
        values = {
            "sort": self.sort,
            "dir": self.direction,
            "q": self.text,
            "band": self.band,
            "page": self.page,
            **changes,
        }
        defaults = {"sort": DEFAULT_SORT[0], "dir": DEFAULT_SORT[1], "q": "", "band": "", "page": 1}
        out = {name: v for name, v in values.items() if v != defaults[name]}
        if "sort" in out:
            out["dir"] = values["dir"]  # spelled out next to any other column: ?sort=x&dir=y
        return out

    def sort_args(self, column: str) -> dict[str, Any]:
        """Link arguments that sort by `column` (a second click flips the direction)."""
        if column == self.sort:
            direction = "asc" if self.direction == "desc" else "desc"
        else:
            direction = "asc" if column in ("qid", "query", "ndcg") else "desc"
        return self.args(sort=column, dir=direction, page=1)


def parse_table_query(args: Mapping[str, str]) -> TableQuery:
    """Sort, direction, text filter, band filter and page from a query string; a ServiceError
    says what is malformed."""
    sort = args.get("sort") or DEFAULT_SORT[0]
    direction = args.get("dir") or DEFAULT_SORT[1]
    chosen_band = args.get("band") or ""
    page = read_page(args.get("page"))
    if sort not in SORT_COLUMNS:
        raise ServiceError(f"sort must be one of {', '.join(SORT_COLUMNS)}")
    if direction not in ("asc", "desc"):
        raise ServiceError("dir must be asc or desc")
    if chosen_band and chosen_band not in BAND_FILTERS:
        raise ServiceError(f"band must be one of {', '.join(BAND_FILTERS)}")
    return TableQuery(sort, direction, (args.get("q") or "").strip()[:200], chosen_band, page)


@dataclass(frozen=True)
class QueryTable:
    """One page of a run's query table, with what the page around it shows."""

    scores: RunScores
    query: TableQuery
    rows: list[QueryRow]
    paging: Pagination
    """The page of matching queries (Flask-SQLAlchemy Pagination over row indices)."""
    defined: list[float]
    """NDCG@k of every query of the run where it is defined (for the histogram)."""
    band_counts: dict[str, int]

    @property
    def matched(self) -> int:
        """How many queries match the filters."""
        return int(self.paging.total or 0)


@lru_cache(maxsize=16)
def _natural_ranks(qids: tuple[str, ...]) -> np.ndarray:
    """Each row's place in natural qid order (q2 before q10); rows are in qid byte order."""
    order = sorted(range(len(qids)), key=lambda i: natural_key(qids[i]))
    ranks = np.empty(len(qids), dtype=np.int64)
    ranks[order] = np.arange(len(qids), dtype=np.int64)
    return ranks


def _order(scores: RunScores, column: str, direction: str, index: np.ndarray) -> np.ndarray:
    """Row indices (of `index`) sorted by a column; undefined values (and, for judged@k, the
    queries missing from the run) last; ties by qid in natural order."""
    natural = _natural_ranks(tuple(scores.qids))[index]
    if column == "qid":
        ranked = index[np.argsort(natural, kind="stable")]
        return ranked if direction == "asc" else ranked[::-1]
    if column == "query":
        texts, ids = scores.texts(), scores.query_ids
        place = dict(zip(index.tolist(), natural.tolist(), strict=True))

        def text(i: int) -> str:
            return texts.get(int(ids[i]), "").casefold()

        if direction == "asc":
            ranked = sorted(index.tolist(), key=lambda i: (text(i), place[i]))
        else:  # text descending, ties still by qid ascending
            ranked = sorted(index.tolist(), key=lambda i: (text(i), -place[i]), reverse=True)
        return np.array(ranked, dtype=np.int64)
    values = {
        "dcg": scores.dcg,
        "idcg": scores.idcg,
        "ndcg": scores.ndcg,
        "gap": scores.idcg - scores.dcg,
        "loss": 1.0 - scores.ndcg,
        "judged": scores.judged_at_k,
        "relevant": scores.num_rel.astype(np.float64),
    }[column][index]
    undefined = np.isnan(values)
    if column == "judged":
        # A query the run has no ranking for has nothing to judge: its 0% would put it first
        # in "label next: the least judged queries", where no label can help.
        undefined |= scores.missing[index]
    key = np.where(undefined, 0.0, values)
    if direction == "desc":
        key = -key
    # lexsort: the last key is the primary one; natural qid order breaks ties.
    return index[np.lexsort((natural, key, undefined))]


def query_table(
    run: Run, options: ScoreOptions, query: TableQuery, per_page: int = PER_PAGE
) -> QueryTable:
    """The run's queries at k, filtered, sorted and paged; the histogram covers them all."""
    scores = score_run(run, options)
    bands = bands_of(scores.ndcg)
    keep = np.ones(len(scores.qids), dtype=bool)
    if query.band == "missing":
        keep &= scores.missing
    elif query.band:
        keep &= bands == query.band
    if query.text:
        needle = query.text.casefold()
        texts = scores.texts()
        keep &= np.array(
            [
                needle in qid.casefold() or needle in texts.get(int(qpk), "").casefold()
                for qid, qpk in zip(scores.qids, scores.query_ids.tolist(), strict=True)
            ],
            dtype=bool,
        )
    index = np.flatnonzero(keep)
    ordered = _order(scores, query.sort, query.direction, index)
    paging = paginate(ordered.tolist(), query.page, per_page)
    reason = undefined_reason(scores.options.ideal)
    rows = []
    for i in paging.items:
        row = scores.row(i)
        rows.append(QueryRow(row, str(bands[i]), reason if row.ndcg is None else None))
    defined = scores.ndcg[~np.isnan(scores.ndcg)]
    counts = {name: int(np.count_nonzero(bands == name)) for name in (*BANDS, "undefined")}
    counts["missing"] = scores.num_missing
    return QueryTable(
        scores=scores,
        query=query,
        rows=rows,
        paging=paging,
        defined=defined.tolist(),
        band_counts=counts,
    )
