"""How a run is scored: gain, ideal ranking, condensed lists, relevance threshold, top grade."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GainKind = Literal["linear", "exp"]
IdealKind = Literal["judged", "retrieved"]

GAINS: tuple[GainKind, ...] = ("linear", "exp")
IDEALS: tuple[IdealKind, ...] = ("judged", "retrieved")
# The cutoffs every measure is computed at (results.Evaluation's columns).
DEFAULT_CUTOFFS: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclass(frozen=True)
class Options:
    """How grades become gains and which documents form the ideal ranking.

    gain: ``linear`` uses the grade itself, ``exp`` uses 2**grade - 1; grades <= 0 and
    unjudged documents always give 0.
    ideal: ``judged`` builds IDCG from all judged grades of the query (trec_eval);
    ``retrieved`` builds it from the grades of the retrieved list only (tutorial convention).
    judged_only: drop unjudged documents from the ranked list before scoring: the condensed
    list of T. Sakai, "Alternatives to Bpref", SIGIR 2007.
    threshold: minimum grade counted relevant by the binary measures (P, recall, RR, AP,
    num_rel); trec_eval's ``-l``.
    top_grade: the scale's top grade, the grade the sensitivity figures give unjudged
    documents (module `sensitivity`).
    """

    gain: GainKind = "linear"
    ideal: IdealKind = "judged"
    judged_only: bool = False
    threshold: int = 1
    top_grade: int = 3

    def __post_init__(self) -> None:
        """Reject values the evaluator would silently misread."""
        if self.gain not in GAINS:
            raise ValueError(f"gain must be one of {GAINS}, not {self.gain!r}")
        if self.ideal not in IDEALS:
            raise ValueError(f"ideal must be one of {IDEALS}, not {self.ideal!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int):
            raise TypeError(f"threshold must be an int, not {self.threshold!r}")
        if self.threshold < 1:
            # Grades <= 0 never give gain; calling them relevant would make P/AP disagree
            # with NDCG (and trec_eval treats negative grades as unjudged).
            raise ValueError(f"threshold must be >= 1, not {self.threshold}")
        if isinstance(self.top_grade, bool) or not isinstance(self.top_grade, int):
            raise TypeError(f"top_grade must be an int, not {self.top_grade!r}")
        if self.top_grade < 1:
            raise ValueError(f"top_grade must be >= 1, not {self.top_grade}")
