"""Score options: what to compute (k, gain, ideal, condensed lists, policy, threshold).

One parser, `parse_options`, turns what a user typed (a query string, CLI options or API
arguments) into checked ScoreOptions, with one set of error messages everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge
from ndcg_labeler.scoring import DEFAULT_CUTOFFS, GAINS, IDEALS, POLICIES, Options
from ndcg_labeler.services import ServiceError, whole_number

if TYPE_CHECKING:
    from ndcg_labeler.models import Run

# The cutoffs every score page offers (a k typed into a URL or the CLI is added on demand).
K_CHOICES = (1, 3, 5, 10, 20, 100)

# trec_eval's cutoffs plus the small ones dashboards offer; a k outside is added on demand.
STANDARD_CUTOFFS: tuple[int, ...] = tuple(sorted({1, 3, *DEFAULT_CUTOFFS}))
MAX_K = 100_000
# The kinds of label source naming a judge: KIND:JUDGE.
LABEL_KINDS = ("machine", "fill", "ppi")


def layout_tag(gain: str, ideal: str) -> str:
    """The tag the trec_eval layout puts in ndcg names for figures trec_eval does not compute.

    trec_eval's ndcg and ndcg_cut_K take linear gain and the ideal from all judged grades;
    other options' figures are written as ndcg<tag> and ndcg_cut<tag>_K: '' for trec_eval's,
    else '_exp', '_retrieved' or '_exp_retrieved'.
    """
    parts = [
        name for name, on in (("exp", gain == "exp"), ("retrieved", ideal == "retrieved")) if on
    ]
    return "".join(f"_{part}" for part in parts)


@dataclass(frozen=True)
class ScoreOptions:
    """How to score: cutoff, gain, ideal, condensed lists, aggregation policy, threshold.

    policy and threshold None mean the test set's own settings.
    """

    k: int = 10
    gain: str = "linear"
    ideal: str = "judged"
    judged_only: bool = False
    policy: str | None = None
    threshold: int | None = None
    # Whose grades: "human" (people and imported qrels), "machine:JUDGE" (that judge's only),
    # "fill:JUDGE" (human where a pair has a human grade, the judge's elsewhere) or "ppi:JUDGE"
    # (per query the judge's, as machine:JUDGE; services/ppi adds the prediction-powered
    # estimate of the human mean from the judge's audit sample).
    labels: str = "human"

    @property
    def layout_tag(self) -> str:
        """What the trec_eval layout adds to ndcg names for these options' figures."""
        return layout_tag(self.gain, self.ideal)

    def checked(self) -> ScoreOptions:
        """Self, after refusing values a user could have typed wrong."""
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            raise ServiceError(f"k must be a whole number from 1 to {MAX_K}")
        if self.gain not in GAINS:
            raise ServiceError(f"gain must be one of {', '.join(GAINS)}, not '{self.gain}'")
        if self.ideal not in IDEALS:
            raise ServiceError(f"ideal must be one of {', '.join(IDEALS)}, not '{self.ideal}'")
        if self.policy is not None and self.policy not in POLICIES:
            raise ServiceError(f"aggregation must be one of {', '.join(POLICIES)}")
        if self.threshold is not None and (
            isinstance(self.threshold, bool)
            or not isinstance(self.threshold, int)
            or self.threshold < 1
        ):
            raise ServiceError("the relevance threshold must be a whole number of at least 1")
        kind, _, judge = (self.labels or "").partition(":")
        if not (self.labels == "human" or (kind in LABEL_KINDS and judge.strip())):
            raise ServiceError(
                f"labels must be human, machine:JUDGE, fill:JUDGE or ppi:JUDGE, not '{self.labels}'"
            )
        return self

    def judge_known(self) -> ScoreOptions:
        """Self, after looking up the judge its label source names; a ServiceError naming the
        source as given (ppi:JUDGE, not the machine:JUDGE it is scored under) when none."""
        label_judge_id(self.labels)
        return self

    def check_kept(self, run: Run) -> None:
        """A ServiceError when `run` was archived to fewer entries per query than k."""
        check_kept_depth(run, self.k)

    def resolve(self, aggregation: str, threshold: int, top_grade: int = 3) -> Resolved:
        """The checked options with a test set's aggregation policy, threshold and top grade
        (its scale's) filled in."""
        self.checked()
        kind, _, judge = self.labels.partition(":")
        # ppi:JUDGE scores every query with the judge's grades; the store keeps them once,
        # under machine:JUDGE, for both label sources.
        return Resolved(
            self.k,
            self.gain,
            self.ideal,
            self.judged_only,
            self.policy or aggregation,
            self.threshold if self.threshold is not None else threshold,
            f"machine:{judge}" if kind == "ppi" else self.labels,
            judge if kind == "ppi" else None,
            top_grade,
        )


@dataclass(frozen=True)
class Resolved:
    """Options with the test set's defaults filled in: what the numbers were computed with."""

    k: int
    gain: str
    ideal: str
    judged_only: bool
    policy: str
    threshold: int
    labels: str = "human"  # whose grades scored each query (machine:JUDGE under ppi:JUDGE)
    ppi_judge: str | None = None  # asked for ppi:JUDGE
    top_grade: int = 3  # the scale's top grade: what the sensitivity figures give unjudged

    @property
    def layout_tag(self) -> str:
        """What the trec_eval layout adds to ndcg names for these options' figures."""
        return layout_tag(self.gain, self.ideal)

    @property
    def shown_labels(self) -> str:
        """The label source as asked for (ppi:JUDGE stays ppi:JUDGE)."""
        return f"ppi:{self.ppi_judge}" if self.ppi_judge else self.labels

    @property
    def scoring(self) -> Options:
        """The pure scoring module's options."""
        return Options(
            self.gain,  # type: ignore[arg-type]
            self.ideal,  # type: ignore[arg-type]
            self.judged_only,
            self.threshold,
            self.top_grade,
        )

    @property
    def cutoffs(self) -> tuple[int, ...]:
        """Cutoffs evaluated together (standard ones plus k)."""
        if self.k in STANDARD_CUTOFFS:
            return STANDARD_CUTOFFS
        return tuple(sorted((*STANDARD_CUTOFFS, self.k)))

    def describe(self) -> dict[str, Any]:
        """The settings as shown next to every score."""
        return {
            "k": self.k,
            "gain": self.gain,
            "ideal": self.ideal,
            "judged_only": self.judged_only,
            "aggregation": self.policy,
            "threshold": self.threshold,
            "labels": self.shown_labels,
        }


def parse_options(values: Mapping[str, Any]) -> ScoreOptions:
    """Checked ScoreOptions from user input: k, gain, ideal, judged_only, aggregation, labels.

    Values may be text (a query string, a form) or already typed (click options); missing
    ones take the defaults. Raises ServiceError with the message shown to the user.
    """
    k_value = values.get("k")
    if k_value is None or k_value == "":
        k = 10
    elif isinstance(k_value, int) and not isinstance(k_value, bool):
        k = k_value  # typed already (a click option): checked() says what is wrong with it
    else:
        k = whole_number(str(k_value), "k", 1, MAX_K)
    judged_only = values.get("judged_only")
    if isinstance(judged_only, str):
        judged_only = judged_only.strip().lower() in ("1", "on", "true", "yes")
    # The judge is looked up now, while the source is still as typed: scoring reads
    # ppi:JUDGE's grades under machine:JUDGE, and a refusal from there would name a source
    # nobody typed.
    return (
        ScoreOptions(
            k=k,
            gain=values.get("gain") or "linear",
            ideal=values.get("ideal") or "judged",
            judged_only=bool(judged_only),
            policy=values.get("aggregation") or None,
            labels=(values.get("labels") or "human").strip(),
        )
        .checked()
        .judge_known()
    )


def label_judge_id(labels: str) -> int | None:
    """The id of the judge a label source names (None for human); a ServiceError naming the
    judge and the source as given when there is no such judge."""
    if labels == "human":
        return None
    name = labels.partition(":")[2].strip()
    found = db.session.scalar(sa.select(Judge.id).where(Judge.name == name))
    if found is None:
        raise ServiceError(f"unknown judge '{name}' (labels={labels})")
    return int(found)


def option_args(options: ScoreOptions) -> dict[str, Any]:
    """The query-string arguments that reproduce `options` (defaults left out)."""
    out: dict[str, Any] = {}
    if options.k != 10:
        out["k"] = options.k
    if options.gain != "linear":
        out["gain"] = options.gain
    if options.ideal != "judged":
        out["ideal"] = options.ideal
    if options.judged_only:
        out["judged_only"] = 1
    if options.policy:
        out["aggregation"] = options.policy
    if options.labels != "human":
        out["labels"] = options.labels
    return out


def k_choices(k: int, runs: Sequence[Run] = ()) -> list[int]:
    """The offered cutoffs, plus k when it was typed into the URL; none deeper than an
    archived run of `runs` kept (its pages would refuse them)."""
    kept = [run.kept_depth for run in runs if run.kept_depth is not None]
    deepest = min(kept, default=None)
    return sorted({k, *(c for c in K_CHOICES if deepest is None or c <= deepest)})


def policies() -> tuple[str, ...]:
    """Aggregation policies a user may pick."""
    return tuple(POLICIES)


def check_kept_depth(run: Run, k: int) -> None:
    """Refuse a cutoff deeper than an archived run kept, saying what it can still do."""
    if run.kept_depth is not None and k > run.kept_depth:
        raise ServiceError(
            f"run '{run.name}' is archived: it kept its top {run.kept_depth} entries per query, "
            f"so it scores only at cutoffs up to {run.kept_depth}, not at k={k}"
        )
