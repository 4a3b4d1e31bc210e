"""Running a gullibility probe: choose pairs people graded 0, ask the judge about each one's
variants (variants.py), store the answers in the probe's own table, batch by batch.

The pairs: the test set's pairs whose human grade (the consensus scoring uses: a person's
judgments or an imported qrel, adjudications included) is 0, a seeded random N of them; when
fewer than N, the lowest-graded others fill up, lowest grade first. Answers are never labels
of real pairs: they go to judge_probe_answer only.

With a budget (`max_cost`) the probe asks whole pairs (all their variants) while the predicted
dollars stay within it, and stops cleanly before the first pair that would pass it: its report
covers the variants it asked and says it stopped; it is not shown as the judge's last probe (a
probe of fewer pairs than asked for is not the one the page compares with κ).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import parse_answer_grade
from ndcg_labeler.models import Chunk, Judge, Probe, ProbeAnswer, Query, TestSet, utcnow
from ndcg_labeler.services import ServiceError, judges, live, outbound, read_whole
from ndcg_labeler.services.probes.report import probe_report
from ndcg_labeler.services.probes.variants import variants

DEFAULT_PAIRS = 50
MAX_PAIRS = 1000  # nine questions a pair: 9,000 requests is already a long probe
SEED = 20261126
BATCH = 10  # pairs per batch (90 questions), each batch committed
PER_PAIR = len(variants("", "", 0))  # questions a pair


def probe_pairs(test_set: TestSet, n: int) -> tuple[list[tuple[int, int]], int]:
    """((query id, chunk id) of the N pairs to probe, how many of them people graded 0)."""
    human = live.scoring_qrels(test_set)
    tiers: dict[float, list[tuple[str, str]]] = {}
    for qid, docs in human.items():
        for docid, grade in docs.items():
            tiers.setdefault(max(float(grade), 0.0), []).append((qid, docid))
    rng = random.Random(SEED)
    picked: list[tuple[str, str]] = []
    zero = 0
    for grade in sorted(tiers):
        tier = sorted(tiers[grade])
        rng.shuffle(tier)  # a uniform pick within a grade, the same every time
        taken = tier[: n - len(picked)]
        picked += taken
        zero += len(taken) if grade == 0 else 0
        if len(picked) >= n:
            break
    query_ids = dict(
        db.session.execute(
            sa.select(Query.qid, Query.id).where(Query.test_set_id == test_set.id)
        ).all()
    )
    docids = {docid for _, docid in picked}
    chunk_ids = dict(
        db.session.execute(
            sa.select(Chunk.docid, Chunk.id).where(
                Chunk.test_set_id == test_set.id, Chunk.docid.in_(docids)
            )
        ).all()
    )
    pairs = [
        (query_ids[qid], chunk_ids[docid])
        for qid, docid in picked
        if qid in query_ids and docid in chunk_ids
    ]
    return pairs, zero


def read_pairs(typed: int | str | None) -> int:
    """The number of pairs to probe: a number, or text as typed in the form or on the command
    line (None or empty: DEFAULT_PAIRS); else a ServiceError naming the range and the value."""
    if typed is None or (isinstance(typed, str) and not typed.strip()):
        return DEFAULT_PAIRS
    return read_whole(typed, "the pairs to probe", 1, MAX_PAIRS)


def check_probe(judge: Judge, n: int, max_cost: float | None = None) -> None:
    """A ServiceError when the judge cannot be probed on N pairs within `max_cost`."""
    read_pairs(n)
    if judge.ensemble:
        raise ServiceError(
            f"{judge.name} is an ensemble, with no endpoint of its own: probe its members"
        )
    if max_cost is not None:
        judges.Asker(judge, max_cost=max_cost)  # refuses a budget without prices, or of 0


def run_probe(
    test_set: TestSet,
    judge: Judge,
    n: int = DEFAULT_PAIRS,
    progress: Callable[[int, int, dict[str, int]], None] | None = None,
    own: Sequence[str] = (),
    max_cost: float | None = None,
) -> dict[str, Any]:
    """Probe the judge on N pairs; the probe's report (probe_report), once every question was
    asked or the budget stopped it ("stopped_at_budget", "not_asked" pairs, "max_cost"). A
    cut-off probe keeps the answers it got but is not reported as the last one."""
    check_probe(judge, n, max_cost)
    pairs, zero = probe_pairs(test_set, n)
    if not pairs:
        raise ServiceError(
            "no pair of this test set has a human grade yet: grade some pairs (or import "
            "qrels) before probing"
        )
    started = time.monotonic()
    warnings = outbound.unset_secrets([judge.api_key_env or ""])  # said before the first question
    stopped = False
    with judges.Asker(judge, own, max_cost) as asker:
        probe = Probe(
            test_set_id=test_set.id,
            judge_id=judge.id,
            prompt_sha256=asker.sha,
            model=judge.model,
            pairs=len(pairs),
            zero_pairs=zero,
            threshold=test_set.relevance_threshold,
        )
        db.session.add(probe)
        db.session.commit()
        tokens = {"prompt_tokens": 0, "completion_tokens": 0}
        questions = len(pairs) * PER_PAIR
        asked = 0
        for begin in range(0, len(pairs), BATCH):
            batch = pairs[begin : begin + BATCH]
            questions_of, prompts = pair_questions(test_set, asker, batch)
            whole = asker.fit(prompts) // PER_PAIR  # whole pairs only: every variant or none
            if whole < len(batch):
                stopped = True
                batch = batch[:whole]
                cut = whole * PER_PAIR
                questions_of, prompts = questions_of[:cut], prompts[:cut]
            if not batch:
                break

            def came(n: int, before: int = begin * PER_PAIR) -> None:
                if progress is not None:  # per answer: a slow batch still beats and cancels
                    progress(before + n, questions, tokens)

            rows = _answer_rows(test_set, questions_of, asker.ask_all(prompts, came))
            asked += len(batch)
            for row in rows:
                tokens["prompt_tokens"] += row["prompt_tokens"]
                tokens["completion_tokens"] += row["completion_tokens"]
                row["probe_id"] = probe.id
            db.session.execute(sa.insert(ProbeAnswer), rows)
            probe.prompt_tokens = tokens["prompt_tokens"]
            probe.completion_tokens = tokens["completion_tokens"]
            db.session.commit()
            if progress is not None:
                progress((begin + len(batch)) * PER_PAIR, questions, tokens)
            if stopped:
                break
        if stopped:
            # What the stored probe holds: the pairs asked (people's zeros come first).
            probe.pairs, probe.zero_pairs = asked, min(zero, asked)
        else:
            probe.finished_at = utcnow()
        db.session.commit()
    report = probe_report(probe, judge)
    report["seconds"] = round(time.monotonic() - started, 3)
    report["max_cost"] = max_cost
    report["stopped_at_budget"] = stopped
    report["not_asked"] = len(pairs) - asked
    report["warnings"] = warnings
    return report


def pair_questions(
    test_set: TestSet, asker: Any, batch: list[tuple[int, int]]
) -> tuple[list[tuple[int, int, Any]], list[Any]]:
    """Every variant of the batch's pairs: (query id, chunk id, variant) and its prompt."""
    queries = {
        q.id: q
        for q in db.session.scalars(sa.select(Query).where(Query.id.in_({q for q, _ in batch})))
    }
    chunks = {
        c.id: c
        for c in db.session.scalars(sa.select(Chunk).where(Chunk.id.in_({c for _, c in batch})))
    }
    asked, prompts = [], []
    for query_id, chunk_id in batch:
        base = asker.variables(test_set, queries[query_id], chunks[chunk_id])
        for variant in variants(base["query"], base["passage"], test_set.scale_max):
            asked.append((query_id, chunk_id, variant))
            prompts.append(asker.render({**base, "passage": variant.passage}))
    return asked, prompts


def _answer_rows(
    test_set: TestSet, asked: list[tuple[int, int, Any]], answers: list[Any]
) -> list[dict[str, Any]]:
    """One answer row per question (without its probe id)."""
    rows = []
    for (query_id, chunk_id, variant), answer in zip(asked, answers, strict=True):
        grade = None if answer.text is None else parse_answer_grade(answer.text, test_set.scale_max)
        status = "failed" if answer.text is None else "labeled" if grade is not None else "unparsed"
        rows.append(
            {
                "query_id": query_id,
                "chunk_id": chunk_id,
                "variant": variant.variant,
                "form": variant.form,
                "status": status,
                "grade": grade,
                "raw_answer": answer.text or "",
                "error": answer.error,
                "latency_ms": answer.latency_ms,
                "prompt_tokens": answer.prompt_tokens,
                "completion_tokens": answer.completion_tokens,
            }
        )
    return rows
