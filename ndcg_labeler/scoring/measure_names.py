"""The one parser of measure names: ir_measures' syntax (`nDCG@10`, `P(rel=2)@5`) and trec_eval's.

    ir_measures:  FAMILY[(rel=R)][@K]   e.g. nDCG@10, AP, AP@100, P(rel=2)@5, Success@10
    trec_eval:    ndcg, ndcg_cut_K, P_K, recall_K, map, map_cut_K, recip_rank, Rprec, bpref,
                  infAP, success_K, num_rel, num_ret, num_rel_ret

Both spellings of a measure parse to the same `Measure`; its `canonical` name is the ir_measures
one (S. MacAvaney, C. Macdonald and I. Ounis, "Streamlining evaluation with ir-measures",
ECIR 2022) and `trec_name` trec_eval's (NIST, v10), where it has one. The name the user typed is
kept in `Measure.name`: reports echo it. `rel=R` is trec_eval's `-l R` for that one measure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_CUTOFF = 100_000

# family -> (takes a cutoff: "required" | "optional" | "no", takes rel=R)
_FAMILIES: dict[str, tuple[str, bool]] = {
    "nDCG": ("optional", False),
    "P": ("required", True),
    "R": ("required", True),
    "AP": ("optional", True),
    "RR": ("optional", True),
    "Rprec": ("no", True),
    "bpref": ("no", True),
    "infAP": ("no", True),
    "Success": ("required", True),
    "Judged": ("required", False),
    "NumRel": ("no", True),
    "NumRet": ("no", True),  # NumRet(rel=R) counts the relevant retrieved: NumRelRet
    "NumRelRet": ("no", True),
}
# ir_measures' own aliases, and case-insensitive spellings of the families.
_ALIASES = {
    **{name.lower(): name for name in _FAMILIES},
    "map": "AP",
    "mrr": "RR",
    "recall": "R",
    "precision": "P",
}
# trec_eval names without a cutoff, and the prefixes of those with one (PREFIX_K).
_TREC_PLAIN = {
    "ndcg": "nDCG",
    "map": "AP",
    "recip_rank": "RR",
    "Rprec": "Rprec",
    "bpref": "bpref",
    "infAP": "infAP",
    "num_rel": "NumRel",
    "num_ret": "NumRet",
    "num_rel_ret": "NumRelRet",
}
_TREC_CUT = {
    "ndcg_cut": "nDCG",
    "P": "P",
    "recall": "R",
    "map_cut": "AP",
    "success": "Success",
}
_TREC = re.compile(r"^(ndcg_cut|P|recall|map_cut|success)_([0-9]+)$")
_IR = re.compile(r"^([A-Za-z]+)(?:\(\s*([^)]*?)\s*\))?(?:@([0-9]+))?$")
_PARAM = re.compile(r"^rel\s*=\s*([0-9]+)$")

MEASURE_HELP = (
    "ir_measures names nDCG, nDCG@K, P@K, R@K, AP, AP@K, RR, RR@K, Rprec, bpref, infAP, "
    "Success@K, Judged@K, NumRel, NumRet, NumRelRet, with (rel=R) on all but nDCG and Judged "
    "(e.g. P(rel=2)@5), or trec_eval's ndcg, ndcg_cut_K, P_K, recall_K, map, map_cut_K, "
    f"recip_rank, Rprec, bpref, infAP, success_K, num_rel, num_ret, num_rel_ret "
    f"(K from 1 to {MAX_CUTOFF}, R from 1)"
)


class MeasureNameError(ValueError):
    """A measure name neither ir_measures nor trec_eval would accept; the message says why."""


@dataclass(frozen=True)
class Measure:
    """A parsed measure: its family, cutoff k (None: the whole list) and relevance level.

    rel None means the scoring options' threshold (a test set's "relevant from grade").
    """

    family: str
    cutoff: int | None = None
    rel: int | None = None
    name: str = ""

    @property
    def canonical(self) -> str:
        """The ir_measures spelling, e.g. ``nDCG@10``, ``P(rel=2)@5``, ``AP``."""
        if self.family == "NumRelRet" and self.rel is not None:
            return f"NumRet(rel={self.rel})"  # ir_measures' spelling of a rel-level count
        params = f"(rel={self.rel})" if self.rel is not None else ""
        cut = f"@{self.cutoff}" if self.cutoff is not None else ""
        return f"{self.family}{params}{cut}"

    @property
    def trec_name(self) -> str | None:
        """trec_eval's name at the options' threshold (``ndcg_cut_10``), None without one."""
        if self.rel is not None:
            return None
        if self.cutoff is None:
            plain = {v: k for k, v in _TREC_PLAIN.items()}
            return plain.get(self.family)
        prefix = {v: k for k, v in _TREC_CUT.items()}.get(self.family)
        return None if prefix is None else f"{prefix}_{self.cutoff}"

    @property
    def shown(self) -> str:
        """The name to show: as the user typed it, else the canonical one."""
        return self.name or self.canonical


def _fail(name: str, why: str = "") -> MeasureNameError:
    reason = f" ({why})" if why else ""
    return MeasureNameError(f"unknown measure '{name}'{reason}: use {MEASURE_HELP}")


def _cutoff(name: str, text: str) -> int:
    k = int(text)
    if not 1 <= k <= MAX_CUTOFF:
        raise _fail(name, f"the cutoff must be from 1 to {MAX_CUTOFF}")
    return k


def parse_measure(text: str) -> Measure:
    """The measure a name stands for, in either syntax; MeasureNameError listing the accepted."""
    name = str(text).strip()
    if name in _TREC_PLAIN:
        return Measure(_TREC_PLAIN[name], name=name)
    trec = _TREC.match(name)
    if trec:
        return Measure(_TREC_CUT[trec.group(1)], _cutoff(name, trec.group(2)), name=name)
    found = _IR.match(name)
    if not found:
        raise _fail(name)
    word, params, cut = found.groups()
    family = _ALIASES.get(word.lower())
    if family is None:
        raise _fail(name)
    takes_cut, takes_rel = _FAMILIES[family]
    rel = _rel(name, params, takes_rel)
    if family == "NumRet" and rel is not None:
        family = "NumRelRet"  # ir_measures' NumRet(rel=R) is the relevant retrieved
    if cut is None and takes_cut == "required":
        raise _fail(name, f"{family} needs a cutoff, e.g. {family}@10")
    if cut is not None and takes_cut == "no":
        raise _fail(name, f"{family} takes no cutoff")
    return Measure(family, None if cut is None else _cutoff(name, cut), rel, name)


def _rel(name: str, params: str | None, takes_rel: bool) -> int | None:
    """The rel=R parameter, checked (None when absent)."""
    if params is None or params == "":
        return None
    found = _PARAM.match(params)
    if not found:
        raise _fail(name, "the only parameter is rel=R, a whole number")
    if not takes_rel:
        raise _fail(name, "this measure takes no rel=R")
    rel = int(found.group(1))
    if rel < 1:
        raise _fail(name, "rel must be at least 1")
    return rel


def parse_measures(names: Iterable[str], default: Iterable[str] = ("nDCG@10",)) -> list[Measure]:
    """Every measure named (repeatable, comma- or space-separated), without repeats of a name."""
    chosen: list[Measure] = []
    seen: set[str] = set()
    for raw in list(names) or list(default):
        for name in re.split(r"[,\s]+(?![^()]*\))", str(raw).strip()):
            if not name or name in seen:
                continue
            seen.add(name)
            chosen.append(parse_measure(name))
    if not chosen:
        raise MeasureNameError(f"name at least one measure: {MEASURE_HELP}")
    return chosen
