"""The one parser of measure names: every spelling the issue lists, canonical and trec_eval
forms, and refusals that say what is accepted."""

from __future__ import annotations

import pytest

from ndcg_labeler.scoring import MeasureNameError, parse_measure, parse_measures

# name -> (canonical ir_measures form, trec_eval name or None)
NAMES = {
    "nDCG@10": ("nDCG@10", "ndcg_cut_10"),
    "nDCG": ("nDCG", "ndcg"),
    "P@5": ("P@5", "P_5"),
    "P(rel=2)@5": ("P(rel=2)@5", None),
    "R@100": ("R@100", "recall_100"),
    "AP": ("AP", "map"),
    "AP@100": ("AP@100", "map_cut_100"),
    "RR": ("RR", "recip_rank"),
    "RR@10": ("RR@10", None),
    "Rprec": ("Rprec", "Rprec"),
    "bpref": ("bpref", "bpref"),
    "infAP": ("infAP", "infAP"),
    "Success@10": ("Success@10", "success_10"),
    "Judged@10": ("Judged@10", None),
    "NumRel": ("NumRel", "num_rel"),
    "NumRet": ("NumRet", "num_ret"),
    "NumRet(rel=1)": ("NumRet(rel=1)", None),
    "NumRelRet": ("NumRelRet", "num_rel_ret"),
    "ndcg_cut_10": ("nDCG@10", "ndcg_cut_10"),
    "ndcg": ("nDCG", "ndcg"),
    "P_5": ("P@5", "P_5"),
    "map": ("AP", "map"),
    "map_cut_5": ("AP@5", "map_cut_5"),
    "recall_100": ("R@100", "recall_100"),
    "recip_rank": ("RR", "recip_rank"),
    "success_10": ("Success@10", "success_10"),
    "num_rel_ret": ("NumRelRet", "num_rel_ret"),
    "MAP": ("AP", "map"),
    "MRR": ("RR", "recip_rank"),
    "NDCG@3": ("nDCG@3", "ndcg_cut_3"),
    "P( rel = 3 )@1": ("P(rel=3)@1", None),
    "Bpref(rel=2)": ("bpref(rel=2)", None),
}


@pytest.mark.parametrize("name", list(NAMES))
def test_each_name_parses_to_its_canonical_and_trec_eval_forms(name: str) -> None:
    measure = parse_measure(name)
    assert (measure.canonical, measure.trec_name) == NAMES[name]
    assert measure.shown == name  # reports echo the name as given
    assert parse_measure(measure.canonical).canonical == measure.canonical


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("P", "P needs a cutoff, e.g. P@10"),
        ("Success", "Success needs a cutoff"),
        ("Rprec@5", "Rprec takes no cutoff"),
        ("nDCG(rel=2)@5", "this measure takes no rel=R"),
        ("Judged(rel=2)@5", "this measure takes no rel=R"),
        ("P(rel=0)@5", "rel must be at least 1"),
        ("P(gain=2)@5", "the only parameter is rel=R"),
        ("P@0", "the cutoff must be from 1 to 100000"),
        ("ndcg_cut_100001", "the cutoff must be from 1 to 100000"),
        ("ERR@10", ""),
        ("ndcg_cut", ""),
        ("P_x", ""),
    ],
)
def test_refusals_say_why_and_list_what_is_accepted(name: str, why: str) -> None:
    with pytest.raises(MeasureNameError) as refused:
        parse_measure(name)
    message = str(refused.value)
    assert message.startswith(f"unknown measure '{name}'") and why in message
    for accepted in ("nDCG@K", "P(rel=2)@5", "Judged@K", "ndcg_cut_K", "recip_rank", "success_K"):
        assert accepted in message


def test_lists_split_on_commas_and_spaces_but_not_inside_parameters() -> None:
    found = parse_measures(["P(rel=2)@5, nDCG@10 map", "map", "AP"])
    assert [m.shown for m in found] == ["P(rel=2)@5", "nDCG@10", "map", "AP"]
    assert [m.canonical for m in parse_measures([], default=("ndcg_cut_10",))] == ["nDCG@10"]
    with pytest.raises(MeasureNameError, match="name at least one measure"):
        parse_measures([" , "], default=())
