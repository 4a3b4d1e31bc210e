"""Benchmark: are the decision figures honest? A seeded simulation shaped like TREC DL (#29).

`python -m bench.decisions` (also run by `make bench`; `--trials N`, `--seed S`). Pure numpy, no
database; every number goes through the app's own pure functions: NDCG@10 by
`scoring.evaluate` (trec_eval's, ideal from every judged grade), PPI++ by `scoring.ppi_mean`,
the gate's rule by `scoring.paired_t_test` and `scoring.noninferiority_p` (as
services/gate decides: fail when mean d < −max_drop and p < alpha; otherwise pass when the
non-inferiority p < alpha), and labels until robust by `scoring.order_for_compare` and
`scoring.labels_to_robust`.

The world. A universe of UNIVERSE queries, each with 100–200 judged pairs whose true grades are
0–3 (DL 2019's passage shares, roughly: 56%, 20%, 14%, 10%). Queries differ as DL's do: a
query's own shares are drawn from a Dirichlet around those (CONCENTRATION; a few queries have
no relevant pair at all, NDCG undefined). A run ranks a query's pairs by grade × strength +
N(0, 1) noise and keeps its top 10. Run A has strength STRENGTH: mean NDCG@10 ≈ 0.64 with a
per-query sd ≈ 0.24, between DL 2019 passage's BM25 (≈ 0.50) and its best runs (≈ 0.76).
The candidate B of the PPI and gate trials is weaker (STRENGTH_WEAKER × STRENGTH). For the
gate it is then made equal to A on just enough queries that the universe's mean NDCG@10 of
B − A over the defined queries is −MAX_DROP (to ~1e-5): the true drop equals max_drop. The
"equal" B has A's strength and its own noise, and each trial swaps A and B on a random half of
its queries, so the true difference is exactly 0. A gate trial draws 40–200 queries from the
universe with replacement: the universe's mean is the true value (the gate asks about queries
like these).

Machine labels go through an ordinal confusion matrix: a pair keeps its true grade with
probability 1 − ε and otherwise moves to a neighbouring grade (judges mostly confuse adjacent
grades), ε solved so that Cohen's κ between machine and human is κ in expectation (the measured
κ is printed); the machine grades every pool pair. PPI: a trial's 40–200 queries are its test
set, and the estimand is, as the product states it, the mean over all of them of NDCG@10 of
B − A under human labels, an undefined NDCG counting 0 (under machine labels too). 20% of them
are audited (at least scoring.MIN_AUDITED, below which the product withholds the interval), the
machine's NDCG is known for all. The human-only interval is the classical t interval of the
same audited queries about the same estimand (PPI with λ = 0: mean ± t_{n−1} · s · √((1 −
n/M)/n)), so the width ratio compares like with like.

Labels until robust: in each trial 50–200 queries of a world where B is stronger than A;
each judged pair was judged before with probability PRIOR_JUDGED (other systems' pools), the
rest of both top 10s is unjudged. Labeling reveals true grades one at a time, in item 4's order
(weight), in a random order, or as depth-10 pooling hands them out (query after query, by best
rank: the labeling queue's order), until the flip test passes; all three label the same pairs,
and every comparison is robust once they are all labeled.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ndcg_labeler import scoring

SHARES = np.array([0.56, 0.20, 0.14, 0.10])  # grades 0-3
UNIVERSE = 20_000
K = 10
MAX_DROP = 0.01
ALPHA = 0.05
KAPPAS = (0.4, 0.6, 0.8)
AUDITED = 0.2
QUERIES = (40, 200)
PRIOR_JUDGED = 0.6
CONCENTRATION = 3.0  # of the Dirichlet a query's grade shares come from (smaller: more varied)
STRENGTH = 0.5
STRENGTH_WEAKER = 0.95
STRENGTH_STRONGER = 1.15


@dataclass
class World:
    """Per universe query: its pool's true grades (a padded row) and each run's top 10."""

    grades: np.ndarray  # (queries, 200): grades 0-3, NaN beyond the pool's size
    sizes: np.ndarray  # pool size per query
    tops: dict[str, np.ndarray]  # run -> (queries, 10) column indices into `grades`

    def flat(self, grades: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every judged grade, concatenated, and the offsets of each query's (CSR)."""
        rows = self.grades if grades is None else grades
        valid = ~np.isnan(self.grades)
        return rows[valid], np.concatenate([[0], np.cumsum(self.sizes)])


def make_world(rng: np.random.Generator, n: int, strengths: dict[str, float]) -> World:
    """n queries of 100-200 graded pairs, and each run's top 10 of them (by score)."""
    sizes = rng.integers(100, 201, n)
    shares = rng.dirichlet(CONCENTRATION * SHARES, n)  # each query's own grade shares
    below = np.cumsum(shares, axis=1)[:, None, :3]  # P(grade ≤ 0, 1, 2) per query
    grades = (rng.random((n, 200, 1)) > below).sum(axis=2).astype(np.float64)
    grades[np.arange(200)[None, :] >= sizes[:, None]] = np.nan
    tops = {}
    for name, strength in strengths.items():
        score = np.nan_to_num(grades, nan=0.0) * strength + rng.standard_normal(grades.shape)
        score[np.isnan(grades)] = -np.inf  # beyond the pool: never retrieved
        tops[name] = np.argsort(-score, axis=1, kind="stable")[:, :K]
    return World(grades, sizes, tops)


def machine_grades(rng: np.random.Generator, grades: np.ndarray, kappa: float) -> np.ndarray:
    """Machine grades through an ordinal confusion matrix: a grade is kept with probability
    1 − ε and otherwise moved to a neighbouring grade (either side, reflected at 0 and 3), as
    judges mostly confuse adjacent grades; ε is solved so that Cohen's κ = kappa."""
    eps = _eps_for_kappa(kappa)
    moved = rng.random(grades.shape) < eps
    step = np.where(rng.random(grades.shape) < 0.5, -1.0, 1.0)
    target = grades + step
    target = np.where(target < 0, 1.0, np.where(target > 3, 2.0, target))  # reflect
    return np.where(moved & ~np.isnan(grades), target, grades)


def _confusion(eps: float) -> np.ndarray:
    """P(machine grade | true grade) of machine_grades."""
    m = np.eye(4) * (1 - eps)
    for g in range(4):
        for step in (-1, 1):
            t = g + step
            t = 1 if t < 0 else (2 if t > 3 else t)
            m[g, t] += eps / 2
    return m


def _eps_for_kappa(kappa: float) -> float:
    """ε of the confusion matrix whose expected Cohen's κ (at SHARES) is kappa (bisection)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        eps = (low + high) / 2
        m = _confusion(eps)
        observed = float(SHARES @ np.diag(m))
        expected = float(SHARES @ (SHARES @ m))
        if (observed - expected) / (1 - expected) > kappa:
            low = eps
        else:
            high = eps
    return (low + high) / 2


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's κ of two labelings of the same items (grades 0-3)."""
    observed = float(np.mean(a == b))
    pa, pb = np.bincount(a, minlength=4) / a.size, np.bincount(b, minlength=4) / b.size
    expected = float(pa @ pb)
    return (observed - expected) / (1.0 - expected)


def ndcg10(world: World, run: str, grades: np.ndarray | None = None) -> np.ndarray:
    """Per-query NDCG@10 by scoring.evaluate_flat (ideal from every judged grade)."""
    rows = world.grades if grades is None else grades
    top = world.tops[run]
    ranked = np.take_along_axis(rows, top, axis=1).ravel()
    judged, offsets = world.flat(rows)
    ranked_offsets = np.arange(0, ranked.size + 1, K)
    return scoring.evaluate_flat(ranked, ranked_offsets, judged, offsets, cutoffs=(K,)).ndcg_cut[K]


def drop_exactly(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, drop: float) -> np.ndarray:
    """b with just enough queries set to a's value that mean(b − a) = −drop (b is worse)."""
    b = b.copy()
    need = -drop * a.size  # the sum of b − a to reach
    total = float((b - a).sum())
    if total > need:
        raise ValueError("the weaker run does not drop by max_drop: lower its strength")
    for i in rng.permutation(a.size).tolist():
        d = float(b[i] - a[i])
        if d >= 0:
            continue
        if total - d <= need:  # equal here, and the sum stays at or below the target
            total -= d
            b[i] = a[i]
        else:  # the last query moves part of the way: the sum lands on the target
            b[i] = a[i] + (need - (total - d))
            break
    return b


def ppi_trials(rng, human: tuple, machine: dict, trials: int) -> dict[float, tuple]:
    """Per κ: the PPI interval's coverage of the test set's mean B − A, its mean width over the
    human-only interval's, and the human-only interval's own coverage (same audited queries)."""
    y = human[1] - human[0]
    out = {}
    for kappa, (ma, mb) in machine.items():
        yhat = mb - ma
        covered, classical_covered, ratios = 0, 0, []
        for _ in range(trials):
            idx = rng.choice(y.size, int(rng.integers(QUERIES[0], QUERIES[1] + 1)))
            audited = rng.random(idx.size) < AUDITED
            while audited.sum() < scoring.MIN_AUDITED:
                # The product gives no interval below MIN_AUDITED ("audit more queries"): a
                # team audits more, so the trial audits more of its queries, at random.
                audited[rng.integers(idx.size)] = True
            lab, unl = idx[audited], idx[~audited]
            truth = float(y[idx].mean())  # the estimand: the mean over the trial's test set
            found = scoring.ppi_mean(y[lab], yhat[lab], yhat[unl], ALPHA)
            covered += found.ci_low <= truth <= found.ci_high
            n, fraction = lab.size, lab.size / idx.size
            t = stats.t.ppf(1 - ALPHA / 2, n - 1)
            half = t * float(np.sqrt((1 - fraction) * y[lab].var(ddof=1) / n))
            classical_covered += abs(float(y[lab].mean()) - truth) <= half
            ratios.append((found.ci_high - found.ci_low) / (2 * half))
        out[kappa] = (covered / trials, float(np.mean(ratios)), classical_covered / trials)
    return out


def gate_outcome(x: np.ndarray, y: np.ndarray) -> str:
    """The gate's rule for one measure (services/gate: Holm with one measure changes nothing)."""
    d = y - x
    p = scoring.paired_t_test(x, y)
    p = 0.0 if p is None else p
    if d.mean() < -MAX_DROP and p < ALPHA:
        return "fail"
    p_ni = scoring.noninferiority_p(d, MAX_DROP)
    return "pass" if p_ni is not None and p_ni < ALPHA else "inconclusive"


def gate_trials(rng, a: np.ndarray, b_drop: np.ndarray, b_equal: np.ndarray, trials: int):
    """(false-pass rate at a true drop of max_drop, false-fail rate with equal runs)."""
    passes = fails = 0
    for _ in range(trials):
        idx = rng.choice(a.size, int(rng.integers(QUERIES[0], QUERIES[1] + 1)))
        passes += gate_outcome(a[idx], b_drop[idx]) == "pass"
        idx = rng.choice(a.size, int(rng.integers(QUERIES[0], QUERIES[1] + 1)))
        x, y = a[idx].copy(), b_equal[idx].copy()
        swap = rng.random(idx.size) < 0.5  # exchangeable runs: the true difference is 0
        x[swap], y[swap] = y[swap], x[swap]
        fails += gate_outcome(x, y) == "fail"
    return passes / trials, fails / trials


def _flip_inputs(world: World, picks: np.ndarray, judged: np.ndarray):
    """The trial's queries as the flip test and item 4's order take them (only the two top 10s
    and the judged grades are needed: nothing else is in either list)."""
    flips, tops_a, tops_b, seen, truth = [], {}, {}, {}, {}
    for n, u in enumerate(picks.tolist()):
        qid, g, known = f"q{n:03d}", world.grades[u], judged[n]
        lists = {}
        for name in ("A", "B"):
            top = world.tops[name][u].tolist()
            lists[name] = ([f"d{i}" for i in top], [float(g[i]) if known[i] else None for i in top])
            truth.update({(qid, f"d{i}"): float(g[i]) for i in top if not known[i]})
        (docs_a, grades_a), (docs_b, grades_b) = lists["A"], lists["B"]
        ideal = g[known & ~np.isnan(g)]
        flips.append(scoring.FlipQuery(qid, docs_a, grades_a, docs_b, grades_b, ideal.tolist()))
        tops_a[qid], tops_b[qid] = docs_a, docs_b
        seen[qid] = {
            d for d, v in zip(docs_a + docs_b, grades_a + grades_b, strict=True) if v is not None
        }
    return flips, tops_a, tops_b, seen, truth


def labels_trials(rng, world: World, trials: int) -> dict[str, list[int]]:
    """Labels until robust per trial, in item 4's order, a random order and depth-10 pooling."""
    found: dict[str, list[int]] = {"item 4": [], "random": [], "depth-10 pool": []}
    for _ in range(trials):
        picks = rng.choice(len(world.grades), int(rng.integers(QUERIES[0], QUERIES[1] + 1)))
        judged = rng.random((picks.size, world.grades.shape[1])) < PRIOR_JUDGED
        flips, tops_a, tops_b, seen, truth = _flip_inputs(world, picks, judged)
        order = scoring.order_for_compare(tops_a, tops_b, seen, K, 3.0)
        weighted = [(p.qid, p.docid) for p in order]
        shuffled = [weighted[i] for i in rng.permutation(len(weighted))]
        best = {(p.qid, p.docid): min(r for r in (p.rank_a, p.rank_b) if r) for p in order}
        pooled = sorted(weighted, key=lambda pair: (pair[0], best[pair], pair[1]))
        for name, labels in (("item 4", weighted), ("random", shuffled), ("depth-10 pool", pooled)):
            result = scoring.labels_to_robust(flips, labels, K, 3.0, revealed=truth)
            assert result.labels_remaining is not None  # all labeled: today = top grade
            found[name].append(result.labels_remaining)
            if result.robust:  # robust before any label, whatever the order: 0 for all three
                found["random"].append(0)
                found["depth-10 pool"].append(0)
                break
    return found


def _row(name: str, value: str, target: str, ok: bool | None) -> str:
    verdict = "—" if ok is None else ("PASS" if ok else "MISS")
    return f"| {name} | {value} | {target} | {verdict} |"


@dataclass
class Figures:
    """What the trials measured."""

    queries: int
    shape: tuple[float, float]  # run A's mean NDCG@10 over defined queries, its per-query sd
    true_delta: float
    kappas: dict[float, float]  # asked -> measured Cohen's κ
    ppi: dict[float, tuple[float, float, float]]  # κ -> (coverage, width ratio, human-only's)
    false_pass: float
    false_fail: float
    labels: dict[str, list[int]]


def measure(rng: np.random.Generator, trials: int) -> Figures:
    """Build the worlds and run every trial."""
    strengths = {"A": STRENGTH, "B": STRENGTH * STRENGTH_WEAKER, "E": STRENGTH}
    world = make_world(rng, UNIVERSE, strengths)
    a, b, e = (ndcg10(world, n) for n in ("A", "B", "E"))
    shape = (float(np.nanmean(a)), float(np.nanstd(a)))
    # PPI: every query, an undefined NDCG (no relevant grade) counting 0, as the estimand says.
    human = (np.nan_to_num(a), np.nan_to_num(b))
    machine, measured = {}, {}
    valid = ~np.isnan(world.grades)
    for kappa in KAPPAS:
        labels = machine_grades(rng, world.grades, kappa)
        machine[kappa] = tuple(np.nan_to_num(ndcg10(world, n, labels)) for n in ("A", "B"))
        measured[kappa] = cohen_kappa(
            world.grades[valid].astype(np.int64), labels[valid].astype(np.int64)
        )
    ppi = ppi_trials(rng, human, machine, trials)
    # The gate compares the queries defined in both runs, as services/gate does.
    keep = ~(np.isnan(a) | np.isnan(b) | np.isnan(e))
    a, e, weaker = a[keep], e[keep], b[keep]
    b = drop_exactly(rng, a, weaker, MAX_DROP)
    false_pass, false_fail = gate_trials(rng, a, b, e, trials)
    labels_world = make_world(rng, 2_000, {"A": STRENGTH, "B": STRENGTH * STRENGTH_STRONGER})
    needed = labels_trials(rng, labels_world, trials)
    return Figures(
        int(keep.sum()), shape, float((b - a).mean()), measured, ppi, false_pass, false_fail, needed
    )


def report(found: Figures, trials: int) -> list[str]:
    """The table: each figure, its target, PASS or MISS."""
    lines = ["| figure | measured | target | |", "| --- | --- | --- | --- |"]
    for kappa, (cover, ratio, human) in found.ppi.items():
        tag = f"κ {kappa} (measured {found.kappas[kappa]:.2f}), {AUDITED:.0%} audited"
        ok = 0.93 <= cover <= 0.97
        lines.append(_row(f"PPI interval coverage, {tag}", f"{100 * cover:.1f}%", "93–97%", ok))
        lines.append(
            _row(f"(human-only interval coverage, {tag})", f"{100 * human:.1f}%", "", None)
        )
        target = "≤ 0.7×" if kappa == 0.6 else "(≤ 0.7× at κ 0.6)"
        ok_width = ratio <= 0.7 if kappa == 0.6 else None
        lines.append(_row(f"PPI width / human-only, {tag}", f"{ratio:.2f}×", target, ok_width))
    limit = ALPHA + 0.01
    lines += [
        _row(
            f"gate false-pass rate, true drop = max_drop = {MAX_DROP}",
            f"{100 * found.false_pass:.1f}%",
            f"≤ alpha + 0.01 = {100 * limit:.0f}%",
            found.false_pass <= limit,
        ),
        _row(
            "gate false-fail rate, equal runs",
            f"{100 * found.false_fail:.1f}%",
            f"≤ alpha = {100 * ALPHA:.0f}%",
            found.false_fail <= ALPHA,
        ),
    ]
    means = {name: float(np.mean(v)) for name, v in found.labels.items()}
    for name, mean in means.items():
        lines.append(_row(f"labels until robust, {name} order (mean)", f"{mean:.1f}", "", None))
    ratio = means["item 4"] / means["random"] if means["random"] else float("nan")
    lines.append(
        _row("labels until robust, item 4 / random", f"{ratio:.2f}×", "≤ 0.5×", ratio <= 0.5)
    )
    fragile = np.array(found.labels["item 4"]) > 0  # not robust before any label: any order
    robust_now = 1.0 - float(np.mean(fragile))
    among = ", ".join(
        f"{name} {np.mean(np.array(v)[fragile]):.1f}" for name, v in found.labels.items()
    )
    pool_ratio = means["depth-10 pool"] / means["random"] if means["random"] else float("nan")
    mc = 100 * 1.96 * np.sqrt(0.95 * 0.05 / trials)
    return [
        *lines,
        "",
        f"Universe: {UNIVERSE} queries, {found.queries} defined in every run (the gate's); run A's"
        f" NDCG@10 {found.shape[0]:.3f} (per-query sd {found.shape[1]:.3f}); the gate's true"
        f" mean NDCG@10 of B − A {found.true_delta:+.5f}; trials of {QUERIES[0]}–{QUERIES[1]}"
        f" queries; Monte Carlo ±{mc:.1f} points on a 95% rate.",
        f"Comparisons robust before any label: {100 * robust_now:.1f}%; depth-10 pool / random:"
        f" {pool_ratio:.2f}×; mean labels over the others: {among}.",
    ]


def main() -> None:
    """Run the trials and print the table."""
    parser = argparse.ArgumentParser(description="Are the decision figures honest? (issue 29)")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()
    started = time.perf_counter()
    found = measure(np.random.default_rng(args.seed), args.trials)
    elapsed = time.perf_counter() - started
    print(f"Decisions bench (bench/decisions.py): {args.trials} trials per line, seed {args.seed}.")
    print()
    print("\n".join(report(found, args.trials)))
    print(f"Took {elapsed:.0f} s.")


if __name__ == "__main__":
    main()
