"""A run's list line, stored: the default options' NDCG@10 figures in the run's row.

Lists of runs (runs page, `flask run list`, the API) show for each run its mean NDCG@10, the
interval, the queries it covers and the sensitivity means. Reading them from the run's stored
per-query scores costs a few MB per run (numpy arrays for every measure and cutoff); these few
numbers, kept in `run.summary` with the labels version, settings and queries they were computed
for, cost a few hundred bytes. They are used only while exactly current; otherwise the run is
scored as before, and the scoring writes them anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ndcg_labeler.models import Run
from ndcg_labeler.scoring import TInterval
from ndcg_labeler.services.live.options import ScoreOptions
from ndcg_labeler.services.live.state import TestSetState, test_set_state
from ndcg_labeler.services.live.store import settings_key

if TYPE_CHECKING:  # results imports this module (MeanFigures)
    from ndcg_labeler.services.live.results import RunScores

# The figures' layout: bump it when they change, so that older rows are recomputed.
SUMMARY_FORMAT = 1


class MeanFigures:
    """What RunScores (results.py) and a stored list line (ListedScores) say alike about a mean:
    its interval's keys and which queries it and trec_eval's `all` cover."""

    interval: TInterval
    mean_ndcg: float | None
    queries_in_mean: int
    num_undefined: int
    num_missing: int
    mean_trec_all: float | None
    queries_trec_all: int

    @property
    def means_differ(self) -> bool:
        """Whether trec_eval's `all` differs from our mean (in value or in queries covered),
        so that pages show both figures with their names."""
        ours = (self.queries_in_mean, self.mean_ndcg)
        return (self.queries_trec_all, self.mean_trec_all) != ours

    def interval_json(self) -> dict[str, Any]:
        """The interval's JSON keys, beside `mean_ndcg` wherever a mean is sent."""
        return self.interval.to_json()

    def means_json(self) -> dict[str, Any]:
        """The keys beside `mean_ndcg` that say which queries each mean covers."""
        return {
            "queries_in_mean": self.queries_in_mean,
            "queries_undefined": self.num_undefined,
            "queries_missing": self.num_missing,
            "mean_trec_all": self.mean_trec_all,
            "queries_trec_all": self.queries_trec_all,
        }


@dataclass(frozen=True)
class ListedScores(MeanFigures):
    """A run's figures at the default options, with RunScores' names for what lists show."""

    k: int
    mean_ndcg: float | None
    mean_if_unjudged_top: float | None
    mean_condensed: float | None
    top_grade: int
    interval: TInterval
    queries_in_mean: int
    num_queries: int
    num_undefined: int
    num_missing: int
    mean_trec_all: float | None
    queries_trec_all: int
    mean_judged_at_k: float | None
    # Mean NDCG@k at each of K_CHOICES (as text keys: JSON's), for the overview's chart.
    means_at: dict[str, float | None] = field(default_factory=dict)

    @property
    def options(self) -> ListedScores:
        """What templates read as `result.options.top_grade`."""
        return self

    def sensitivity_json(self) -> dict[str, Any]:
        """As RunScores.sensitivity_json."""
        return {
            "mean_if_unjudged_top": self.mean_if_unjudged_top,
            "mean_condensed": self.mean_condensed,
            "top_grade": self.top_grade,
        }

    @classmethod
    def of(cls, result: RunScores, means_at: dict[str, float | None] | None = None) -> ListedScores:
        """The list line of a full result (and its means at other cutoffs, when given)."""
        return cls(
            k=result.k,
            mean_ndcg=result.mean_ndcg,
            mean_if_unjudged_top=result.mean_if_unjudged_top,
            mean_condensed=result.mean_condensed,
            top_grade=result.options.top_grade,
            interval=result.interval,
            queries_in_mean=result.queries_in_mean,
            num_queries=result.num_queries,
            num_undefined=result.num_undefined,
            num_missing=result.num_missing,
            mean_trec_all=result.mean_trec_all,
            queries_trec_all=result.queries_trec_all,
            mean_judged_at_k=result.mean_judged_at_k,
            means_at=means_at or {},
        )

    def to_json(self) -> dict[str, Any]:
        """The figures as stored (JSON keeps every float exactly)."""
        out = asdict(self)
        out["interval"] = asdict(self.interval)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ListedScores:
        """Rebuild from `to_json`."""
        return cls(**{**data, "interval": TInterval(**data["interval"])})


def summary_key(state: TestSetState) -> dict[str, Any]:
    """What stored figures must have been computed for to be current."""
    resolved = ScoreOptions().resolve(state.aggregation, state.threshold, state.scale_max)
    return {
        "format": SUMMARY_FORMAT,
        "settings": settings_key(resolved),
        "labels_version": state.labels_version,
        "queries_key": state.queries_key,
    }


def is_current(found: dict[str, Any] | None, state: TestSetState, settings: str) -> bool:
    """Whether a run's stored list line was computed for the test set's current labels,
    queries and the default setting (`settings`, its key)."""
    return bool(found) and (
        found.get("format") == SUMMARY_FORMAT
        and found.get("settings") == settings
        and found.get("labels_version") == state.labels_version
        and found.get("queries_key") == state.queries_key
    )


def stored_summary(
    state: TestSetState, result: RunScores, means_at: dict[str, float | None]
) -> dict[str, Any]:
    """What `run.summary` holds after scoring `result` (NDCG@10, default options)."""
    return {**summary_key(state), "figures": ListedScores.of(result, means_at).to_json()}


def listed_scores(runs: Sequence[Run]) -> dict[int, ListedScores]:
    """Each run's list line at the default options: stored when current, else scored (which
    stores it). One read of each test set's state; nothing per run while current."""
    keys: dict[int, tuple[TestSetState, str]] = {}
    out = {}
    for run in runs:
        if run.test_set_id not in keys:
            state = test_set_state(run.test_set_id)
            keys[run.test_set_id] = (state, summary_key(state)["settings"])
        if is_current(run.summary, *keys[run.test_set_id]):
            out[run.id] = ListedScores.from_json(run.summary["figures"])  # type: ignore[index]
        else:
            # Here, not at the top: the engine imports this module, and a list whose lines are
            # all current (`flask run list` in a new process) loads neither it nor numpy.
            from ndcg_labeler.services.live.engine import score_run

            out[run.id] = ListedScores.of(score_run(run))
    return out
