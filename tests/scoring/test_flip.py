"""The flip test (scoring.flip_test): hand-computed worlds, the tie, the compared queries, and the
labels-until-robust figure agreeing with it label after label."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ndcg_labeler import scoring
from ndcg_labeler.scoring import TIE_TOLERANCE, FlipQuery, flip_test
from ndcg_labeler.scoring.flip import winner

L3 = math.log2(3)  # log2(rank 2 + 1)

# k = 2: A ranks u1 r, B ranks r u2; r is judged 1, u1 and u2 are not. Linear gain, top grade 3.
FLIP = FlipQuery("q1", ["u1", "r"], [None, 1.0], ["r", "u2"], [1.0, None], [1.0])


def test_two_unjudged_chunks_turn_the_winner_by_hand() -> None:
    found = flip_test([FLIP], 2, 3.0)
    # Today: DCG_A = 1/log2(3), DCG_B = 1, IDCG = 1: B − A = 1 − 1/log2(3) > 0, B wins.
    assert found.delta == pytest.approx(1 - 1 / L3, abs=1e-15)
    # Top-grade world: u1, u2 at 3 join the ideal [3, 3, 1]: IDCG@2 = 3 + 3/log2(3);
    # DCG_A = 3 + 1/log2(3), DCG_B = 1 + 3/log2(3): A wins.
    idcg = 3 + 3 / L3
    assert found.mean_a_if_top == pytest.approx((3 + 1 / L3) / idcg, abs=1e-15)
    assert found.mean_b_if_top == pytest.approx((1 + 3 / L3) / idcg, abs=1e-15)
    assert found.delta_if_top == pytest.approx((2 / L3 - 2) / idcg, abs=1e-15)
    assert (found.winner, found.winner_if_top) == ("B", "A")
    assert not found.robust and found.flips_if_unjudged_top
    assert (found.unjudged_pairs, found.queries) == (2, 1)


def test_a_chunk_unjudged_in_both_lists_counts_once_and_joins_the_ideal_once() -> None:
    # A ranks u r, B ranks r u; r judged 1. Today A = (1/log2 3) / 1, B = 1 / 1: B wins.
    # u at 3 joins the ideal once: [3, 1], IDCG@2 = 3 + 1/log2(3); A = 1, B = (1 + 3/log2 3) /
    # (3 + 1/log2 3) = 0.762: A wins.
    query = FlipQuery("q", ["u", "r"], [None, 1.0], ["r", "u"], [1.0, None], [1.0])
    found = flip_test([query], 2, 3.0)
    assert found.unjudged_pairs == 1
    assert found.mean_a_if_top == pytest.approx(1.0, abs=1e-15)
    assert found.mean_b_if_top == pytest.approx((1 + 3 / L3) / (3 + 1 / L3), abs=1e-15)
    assert found.delta == pytest.approx(1 - 1 / L3, abs=1e-15)
    assert not found.robust


def test_queries_without_judged_gain_are_left_out() -> None:
    # q0: only a grade 0 is judged (NDCG undefined); the mean is FLIP's alone.
    q0 = FlipQuery("q0", ["v"], [None], ["w"], [0.0], [0.0])
    found = flip_test([q0, FLIP], 2, 3.0)
    assert (found.queries, found.unjudged_pairs) == (1, 2)
    assert found.delta == pytest.approx(flip_test([FLIP], 2, 3.0).delta, abs=1e-15)
    empty = flip_test([q0], 2, 3.0)
    assert (empty.robust, empty.queries, empty.delta, empty.winner) == (True, 0, None, "tie")


def test_exp_gain_by_hand() -> None:
    # Gains 2^g − 1: r = 1, top 2^3 − 1 = 7. Top world: IDCG@2 = 7 + 7/log2(3);
    # DCG_A = 7 + 1/log2(3), DCG_B = 1 + 7/log2(3).
    found = flip_test([FLIP], 2, 3.0, "exp")
    idcg = 7 + 7 / L3
    assert found.delta_if_top == pytest.approx((1 + 7 / L3 - 7 - 1 / L3) / idcg, abs=1e-15)


def test_same_lists_tie_in_both_worlds_and_are_robust() -> None:
    query = FlipQuery("q", ["u", "r"], [None, 1.0], ["u", "r"], [None, 1.0], [1.0])
    found = flip_test([query], 2, 3.0)
    assert (found.delta, found.delta_if_top) == (0.0, 0.0)
    assert found.robust and (found.winner, found.winner_if_top) == ("tie", "tie")


def test_winner_within_the_tie_tolerance() -> None:
    assert winner(None) == "tie"
    assert winner(TIE_TOLERANCE) == winner(-TIE_TOLERANCE) == "tie"
    assert winner(2 * TIE_TOLERANCE) == "B" and winner(-2 * TIE_TOLERANCE) == "A"


def test_callers_values_are_taken_as_given() -> None:
    # A caller with condensed lists passes today's values; with ideal=retrieved, the top world's.
    found = flip_test([FLIP], 2, 3.0, today=(np.array([0.5]), np.array([0.4])))
    assert found.winner == "A" and found.robust  # the computed top world: A wins there too
    given = flip_test(
        [FLIP], 2, 3.0, today=(np.array([0.5]), np.array([0.4])), if_top=([0.1], [0.9])
    )
    assert (given.delta_if_top, given.winner_if_top, given.robust) == (
        pytest.approx(0.8),
        "B",
        False,
    )
    with pytest.raises(ValueError, match="one value per compared query"):
        flip_test([FLIP], 2, 3.0, today=(np.array([0.5, 0.1]), np.array([0.4, 0.2])))


def _labeled(queries: list[FlipQuery], labels: dict[tuple[str, str], float]) -> list[FlipQuery]:
    """The queries with the given (qid, docid) grades filled in and added to the judged grades."""
    out = []
    for q in queries:
        mine = {d: g for (qid, d), g in labels.items() if qid == q.qid}
        out.append(
            q._replace(
                grades_a=[mine.get(d, g) for d, g in zip(q.docids_a, q.grades_a, strict=True)],
                grades_b=[mine.get(d, g) for d, g in zip(q.docids_b, q.grades_b, strict=True)],
                judged=[*q.judged, *mine.values()],
            )
        )
    return out


def _scenario(rng: np.random.Generator) -> tuple[list[FlipQuery], dict[tuple[str, str], float]]:
    """3-5 queries of a pool of 8 chunks, two top 3s, half the pool judged; the true grades."""
    queries, truth = [], {}
    for n in range(int(rng.integers(3, 6))):
        qid = f"q{n}"
        grades = rng.choice(4, 8, p=[0.5, 0.2, 0.2, 0.1]).astype(float)
        known = rng.random(8) < 0.5
        tops = [rng.permutation(8)[:3].tolist() for _ in range(2)]
        lists = [
            ([f"d{i}" for i in top], [float(grades[i]) if known[i] else None for i in top])
            for top in tops
        ]
        judged = [float(g) for g, k in zip(grades, known, strict=True) if k]
        queries.append(FlipQuery(qid, *lists[0], *lists[1], judged))
        truth.update({(qid, f"d{i}"): float(grades[i]) for i in range(8) if not known[i]})
    return queries, truth


@pytest.mark.parametrize("gain", ["linear", "exp"])
def test_labels_remaining_is_the_first_prefix_the_flip_test_passes(gain: str) -> None:
    rng = np.random.default_rng(29)
    checked = 0
    for _ in range(40):
        queries, truth = _scenario(rng)
        order = [
            (p.qid, p.docid)
            for p in scoring.order_for_compare(
                {q.qid: list(q.docids_a) for q in queries},
                {q.qid: list(q.docids_b) for q in queries},
                {
                    q.qid: {d for d, g in zip(q.docids_a, q.grades_a, strict=True) if g is not None}
                    | {d for d, g in zip(q.docids_b, q.grades_b, strict=True) if g is not None}
                    for q in queries
                },
                3,
                3.0,
            )
        ]
        found = scoring.labels_to_robust(queries, order, 3, 3.0, gain, revealed=truth)  # type: ignore[arg-type]
        first = None
        for m in range(len(order) + 1):
            labels = {pair: truth[pair] for pair in order[:m]}
            if flip_test(_labeled(queries, labels), 3, 3.0, gain).robust:  # type: ignore[arg-type]
                first = m
                break
        assert found.labels_remaining == first
        checked += first is not None and first > 0
    assert checked >= 5  # enough scenarios that needed labels


def _flat(queries: list[FlipQuery], k: int) -> scoring.FlipArrays:
    """The queries as FlipArrays, built one query at a time (top k cut, None as NaN)."""
    columns: list[list[list[float]]] = [[], [], []]
    unjudged = []
    for q in queries:
        columns[0].append([math.nan if g is None else g for g in q.grades_a[:k]])
        columns[1].append([math.nan if g is None else g for g in q.grades_b[:k]])
        columns[2].append(list(q.judged))
        chunks = {d for d, g in zip(q.docids_a[:k], q.grades_a[:k], strict=True) if g is None}
        chunks |= {d for d, g in zip(q.docids_b[:k], q.grades_b[:k], strict=True) if g is None}
        unjudged.append(len(chunks))
    flat = [np.array([v for row in rows for v in row], dtype=np.float64) for rows in columns]
    offsets = [np.cumsum([0, *(len(row) for row in rows)]) for rows in columns]
    return scoring.FlipArrays(
        flat[0], offsets[0], flat[1], offsets[1], flat[2], offsets[2], np.array(unjudged)
    )


@pytest.mark.parametrize("gain", ["linear", "exp"])
def test_the_flat_flip_test_gives_the_same_figures_bit_for_bit(gain: str) -> None:
    """flip_test_flat (the comparison's) against flip_test: the hand worlds above and random
    ones, queries without judged gain among them, with and without the caller's values."""
    hand = FlipQuery("q", ["u", "r"], [None, 1.0], ["r", "u"], [1.0, None], [1.0])
    none = FlipQuery("q0", ["x"], [None], ["y"], [0.0], [0.0])
    assert scoring.flip_test_flat(_flat([FLIP], 2), 2, 3.0, gain) == flip_test([FLIP], 2, 3.0, gain)
    found = scoring.flip_test_flat(_flat([hand, none, FLIP], 2), 2, 3.0, gain)
    assert found == flip_test([hand, none, FLIP], 2, 3.0, gain) and found.queries == 2
    assert scoring.flip_test_flat(_flat([none], 2), 2, 3.0, gain).queries == 0
    rng = np.random.default_rng(30)
    for _ in range(60):
        queries, _ = _scenario(rng)
        k = int(rng.integers(1, 4))
        expected = flip_test(queries, k, 3.0, gain)
        assert scoring.flip_test_flat(_flat(queries, k), k, 3.0, gain) == expected
        if expected.queries:
            today = tuple(rng.random(expected.queries) for _ in range(2))
            assert scoring.flip_test_flat(
                _flat(queries, k),
                k,
                3.0,
                gain,
                today,  # type: ignore[arg-type]
            ) == flip_test(queries, k, 3.0, gain, today)  # type: ignore[arg-type]


def test_flip_arrays_lays_out_the_queries_flip_test_gets() -> None:
    """scoring.flip_arrays from {query: top list} and {query: {docid: grade}} maps, as the
    comparison and the for-compare pool read them, against the FlipQuery list they describe."""
    rng = np.random.default_rng(31)
    for _ in range(40):
        queries, _ = _scenario(rng)
        k = int(rng.integers(1, 4))
        grades = {q.qid: {} for q in queries}
        for q in queries:
            pairs = [*zip(q.docids_a, q.grades_a, strict=True)]
            for d, g in [*pairs, *zip(q.docids_b, q.grades_b, strict=True)]:
                if g is not None:
                    grades[q.qid][d] = g
        queries = [q._replace(judged=list(grades[q.qid].values())) for q in queries]
        lists_a = {q.qid: list(q.docids_a) for q in queries if q.docids_a}
        lists_b = {q.qid: list(q.docids_b) for q in queries}
        keys = [*(q.qid for q in queries), "absent"]
        flat = scoring.flip_arrays(keys, lists_a, lists_b, grades, k)
        assert flat.unjudged.tolist() == [*_flat(queries, k).unjudged.tolist(), 0]
        for gain in ("linear", "exp"):
            expected = flip_test(queries, k, 3.0, gain)
            assert scoring.flip_test_flat(flat, k, 3.0, gain) == expected
