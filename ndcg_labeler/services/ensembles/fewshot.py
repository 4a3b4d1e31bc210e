"""Few-shot prompts from the test set's own labels, and the prompt version a judge runs under.

A judge with `few_shot` K > 0 puts up to K examples before each prompt: pairs of the same test
set with a final human grade (adjudicated, or every person's grade the same), balanced over the
grades, never of the judged pair's query (so never the pair itself) and never of a query in
an audit sample (those stay an independent check of the judge). A note a person wrote goes
with its example. The examples come from a bank chosen deterministically (by a hash of qid and
docid), and the bank is part of the stored prompt text, so a few-shot judge has its own prompt
version (sha256): calibration shows zero-shot and few-shot answers as separate versions.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Adjudication,
    AuditSample,
    AuditSampleQuery,
    Chunk,
    Judge,
    Judgment,
    PromptVersion,
    Query,
    TestSet,
    User,
)
from ndcg_labeler.services import ServiceError, audit, judges, read_whole
from ndcg_labeler.services._db import insert_if_absent

MAX_FEW_SHOT = 20  # examples in one prompt
PASSAGE_CHARS = 1500  # an example's passage is cut here: examples should not crowd the pair
NOTE_CHARS = 500
# Marks the few-shot part of a stored prompt text (prompt_version.template).
MARK = "\n{#- few-shot examples:"


@dataclass(frozen=True)
class Example:
    """One human-graded pair shown to the judge."""

    query_id: int
    qid: str
    docid: str
    grade: int
    note: str
    query: str
    passage: str


@dataclass
class Shots:
    """A judge's few-shot bank on one test set (empty for a zero-shot judge) and its version."""

    k: int
    bank: list[Example] = field(default_factory=list)
    sha: str = ""

    def examples_for(self, query_id: int) -> list[Example]:
        """Up to k examples for a pair of this query: round-robin over the grades (in
        spread_order), one pair of each grade per round."""
        by_grade: dict[int, list[Example]] = {}
        for ex in self.bank:
            if ex.query_id != query_id:
                by_grade.setdefault(ex.grade, []).append(ex)
        chosen: list[Example] = []
        lists = [by_grade[g] for g in spread_order(sorted(by_grade))]
        for turn in range(self.k):
            for found in lists:
                if len(chosen) < self.k and turn < len(found):
                    chosen.append(found[turn])
        return chosen

    def prefix(self, query_id: int) -> str:
        """The examples block put before the rendered prompt ("" without examples)."""
        examples = self.examples_for(query_id) if self.k else []
        if not examples:
            return ""
        parts = ["Examples graded by people on this test set:"]
        for n, ex in enumerate(examples, start=1):
            text = f"Example {n}\nExample query: {ex.query}\nExample passage: {ex.passage}\n"
            text += f"People's grade: {ex.grade}"
            if ex.note:
                text += f"\nPeople's explanation: {ex.note}"
            parts.append(text)
        parts.append("Now the pair to grade.\n\n")
        return "\n\n".join(parts)


def spread_order(grades: list[int]) -> list[int]:
    """The grades in the order examples are taken: the lowest, the highest, then the middle
    ones from the centre out, so that even K below the number of grades shows both ends of
    the scale (K = 2 on 0–3: a 0 and a 3)."""
    if len(grades) <= 2:
        return grades
    middle = grades[1:-1]
    centre = (len(middle) - 1) / 2
    return [
        grades[0],
        grades[-1],
        *sorted(middle, key=lambda g: (abs(middle.index(g) - centre), g)),
    ]


def _order(qid: str, docid: str) -> str:
    return hashlib.sha256(f"{qid}\0{docid}".encode()).hexdigest()


def audit_query_ids(test_set_id: int) -> set[int]:
    """Queries of any judge's audit sample on the test set."""
    rows = db.session.scalars(
        sa.select(AuditSampleQuery.query_id)
        .join(AuditSample, AuditSample.id == AuditSampleQuery.sample_id)
        .where(AuditSample.test_set_id == test_set_id)
    )
    return set(rows)


def final_grades(test_set_id: int) -> dict[tuple[int, int], tuple[int, str]]:
    """{(query id, chunk id): (grade, note)} of pairs with a final human grade: adjudicated,
    or graded by everyone who answered with the same grade (one grade counts)."""
    grades: dict[tuple[int, int], set[int]] = {}
    notes: dict[tuple[int, int], str] = {}
    rows = db.session.execute(
        sa.select(Judgment.query_id, Judgment.chunk_id, Judgment.grade, Judgment.note)
        .where(Judgment.test_set_id == test_set_id, Judgment.status == "graded")
        .order_by(Judgment.id)
    )
    for q, c, grade, note in rows:
        grades.setdefault((q, c), set()).add(int(grade))
        if note and not notes.get((q, c)):
            notes[(q, c)] = note
    found = {key: (next(iter(g)), notes.get(key, "")) for key, g in grades.items() if len(g) == 1}
    adjudicated = db.session.execute(
        sa.select(
            Adjudication.query_id, Adjudication.chunk_id, Adjudication.grade, Adjudication.note
        ).where(Adjudication.test_set_id == test_set_id)
    )
    for q, c, grade, note in adjudicated:
        found[(q, c)] = (int(grade), note or notes.get((q, c), ""))
    return found


def build_shots(test_set: TestSet, k: int) -> Shots:
    """The bank for k examples: per grade, 2 × ceil(k / grades) pairs in hash order, at most
    ceil(k / grades) of one query, so that leaving out the judged query still leaves enough."""
    if k <= 0:
        return Shots(0)
    excluded = audit_query_ids(test_set.id)
    final = {key: v for key, v in final_grades(test_set.id).items() if key[0] not in excluded}
    if not final:
        return Shots(k)
    queries = {
        q.id: q
        for q in db.session.scalars(sa.select(Query).where(Query.id.in_({q for q, _ in final})))
    }
    docids = {
        int(c): str(d)
        for c, d in db.session.execute(
            sa.select(Chunk.id, Chunk.docid).where(Chunk.id.in_({c for _, c in final}))
        )
    }
    per = math.ceil(k / len({g for g, _ in final.values()}))
    bank_keys: list[tuple[int, int]] = []
    by_grade: dict[int, list[tuple[int, int]]] = {}
    for key in sorted(final, key=lambda key: _order(queries[key[0]].qid, docids[key[1]])):
        by_grade.setdefault(final[key][0], []).append(key)
    for grade in sorted(by_grade):
        taken: list[tuple[int, int]] = []
        for key in by_grade[grade]:
            if sum(1 for t in taken if t[0] == key[0]) < per:
                taken.append(key)
            if len(taken) == 2 * per:
                break
        bank_keys += taken
    chunks = {
        c.id: c
        for c in db.session.scalars(sa.select(Chunk).where(Chunk.id.in_({c for _, c in bank_keys})))
    }
    bank = []
    for q, c in bank_keys:
        chunk = chunks[c]
        passage = "\n\n".join(p for p in (chunk.title or "", chunk.text or "") if p)
        grade, note = final[(q, c)]
        bank.append(
            Example(
                q,
                queries[q].qid,
                chunk.docid,
                grade,
                (note or "")[:NOTE_CHARS],
                queries[q].text,
                passage[:PASSAGE_CHARS],
            )
        )
    return Shots(k, bank)


def version_text(template: str, shots: Shots) -> str:
    """The stored prompt text of a few-shot judge: its template, then the bank (a comment)."""
    bank = [[ex.qid, ex.docid, ex.grade, ex.note, ex.query, ex.passage] for ex in shots.bank]
    payload = json.dumps({"k": shots.k, "bank": bank}, ensure_ascii=False, sort_keys=True)
    return f"{template or judges.DEFAULT_TEMPLATE}{MARK} {payload.replace('#}', '# }')} -#}}\n"


def few_shot_of(stored_text: str) -> int:
    """K of a stored prompt text (0: zero-shot)."""
    if MARK not in stored_text:
        return 0
    payload = stored_text.split(MARK, 1)[1].strip().removesuffix("-#}").strip()
    try:
        return int(json.loads(payload)["k"])
    except (ValueError, KeyError, TypeError):
        return 0


def store_version(text: str) -> str:
    """Store a prompt text by its sha256 (once) and return the sha."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    insert_if_absent(PromptVersion.__table__, [{"sha256": sha, "template": text}], ["sha256"])
    return sha


def judge_shots(test_set: TestSet, judge: Judge) -> Shots:
    """The judge's shots on the test set, with `sha` its current prompt version there."""
    if judge.few_shot <= 0:
        # The zero-shot version: the sha256 of the template alone, as judges.prompts has it.
        return Shots(0, sha=store_version(judge.prompt_template or judges.DEFAULT_TEMPLATE))
    shots = build_shots(test_set, judge.few_shot)
    shots.sha = store_version(version_text(judge.prompt_template, shots))
    return shots


def check_few_shot(typed: int | str) -> int:
    """K as a number (text as typed in the form or on the command line, or an int), or a
    ServiceError naming the range and what was given, in judges.read_settings' words."""
    return read_whole(typed, "few-shot examples", 0, MAX_FEW_SHOT)


def set_few_shot(judge: Judge, k: int | str, actor: User | None = None) -> bool:
    """Change how many examples the judge's prompts carry (a new prompt version); audited.
    False when nothing changed."""
    k = check_few_shot(k)
    if judge.ensemble:
        raise ServiceError("an ensemble has no prompt of its own: set few-shot on its members")
    if judge.few_shot == k:
        return False
    audit.record(actor, "judge.few_shot", "judge", judge.id, old=judge.few_shot, new=k)
    judge.few_shot = k
    db.session.commit()
    return True
