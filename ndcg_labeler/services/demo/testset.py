"""The demo test set: the HR example of the NDCG tutorial this product grew from (five HR policy
queries, two retrievers), so a first visit is not empty. Loaded by `flask bootstrap` unless
NDCG_DEMO=0; everything in it is invented."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import testsets
from ndcg_labeler.services.imports import ImportFile, ImportReport, import_files

DEMO_NAME = "Demo: HR policies (example data)"
REFERENCE_SOURCE = "reference example"

# qid -> query text; q1 and its labels are the tutorial's worked example, q2–q5 the other four
# HR queries its "Mean NDCG" table names.
DEMO_QUERIES: dict[str, str] = {
    "q1": "What is the maternity leave policy?",
    "q2": "How do I submit expense reports?",
    "q3": "What is the work from home policy?",
    "q4": "How many sick days do I get?",
    "q5": "What is the dress code?",
}

# docid -> (title, text). chunk_17/42/08/91/33 begin with the tutorial's own excerpts.
DEMO_CHUNKS: dict[str, tuple[str, str]] = {
    "chunk_17": (
        "Leave: maternity",
        "Maternity leave is 26 weeks paid for employees with at least 80 days of service in "
        "the twelve months before the expected delivery date. Up to 8 of the 26 weeks may be "
        "taken before the birth.",
    ),
    "chunk_42": (
        "Leave: paternity",
        "Paternity leave is 2 weeks paid, to be taken within six months of the birth or "
        "adoption of a child.",
    ),
    "chunk_08": (
        "Leave: how to request it",
        "Leave requests must be submitted in the HR portal at least two weeks in advance, "
        "except in emergencies; your manager answers within three working days.",
    ),
    "chunk_91": (
        "Leave: annual balance",
        "Annual leave balance can be checked in the HR portal; up to 5 unused days carry over "
        "into the next calendar year.",
    ),
    "chunk_33": (
        "Office hours",
        "Office timings are 9am to 6pm, Monday to Friday, with a one-hour lunch break.",
    ),
    "chunk_51": (
        "Expenses: submitting a report",
        "Expense reports are submitted in the finance portal within 30 days of the expense, "
        "with a photo of every receipt attached.",
    ),
    "chunk_52": (
        "Expenses: approval",
        "Expenses above 500 EUR need the approval of your department head before they are "
        "reimbursed.",
    ),
    "chunk_53": (
        "Expenses: reimbursement",
        "Approved expenses are reimbursed with the next monthly salary.",
    ),
    "chunk_54": (
        "Company credit cards",
        "Company credit cards are issued to employees who travel more than four times a year.",
    ),
    "chunk_61": (
        "Working from home",
        "Employees may work from home up to two days a week after agreeing the days with "
        "their manager.",
    ),
    "chunk_62": (
        "Working from home: being reachable",
        "When working from home, connect through the company VPN and stay reachable on chat "
        "during the core hours of 10am to 4pm.",
    ),
    "chunk_63": (
        "Home office allowance",
        "The company pays a one-time allowance of 300 EUR towards a desk and a chair for "
        "working from home.",
    ),
    "chunk_64": (
        "Visitors",
        "Visitors to the office sign in at reception and wear a visitor badge at all times.",
    ),
    "chunk_71": (
        "Sick leave",
        "Employees receive 12 paid sick days per calendar year; unused sick days do not carry "
        "over.",
    ),
    "chunk_72": (
        "Sick leave: doctor's certificate",
        "For an absence of more than three consecutive days, send a doctor's certificate to HR.",
    ),
    "chunk_73": (
        "Sick leave: reporting",
        "Report a sickness absence to your manager before 10am on the first day.",
    ),
    "chunk_81": (
        "Dress code",
        "The dress code is business casual from Monday to Thursday; jeans are welcome on Fridays.",
    ),
    "chunk_82": (
        "Dress code: client meetings",
        "Staff meeting clients in person wear business formal attire.",
    ),
    "chunk_83": (
        "Warehouse safety",
        "Safety shoes and a high-visibility vest are required in the warehouse at all times.",
    ),
}

# The pool: every pair below is to be judged. q1's five are the tutorial's labeled chunks.
DEMO_POOL: dict[str, list[str]] = {
    "q1": ["chunk_17", "chunk_42", "chunk_08", "chunk_91", "chunk_33"],
    "q2": ["chunk_51", "chunk_52", "chunk_53", "chunk_54"],
    "q3": ["chunk_61", "chunk_62", "chunk_63", "chunk_33", "chunk_64"],
    "q4": ["chunk_71", "chunk_72", "chunk_73", "chunk_08", "chunk_91"],
    "q5": ["chunk_81", "chunk_82", "chunk_83", "chunk_33"],
}

# The tutorial's human labels for q1 (3 perfect, 1 related, 1 tangential, 0 irrelevant).
REFERENCE_LABELS: dict[str, dict[str, int]] = {
    "q1": {"chunk_17": 3, "chunk_42": 1, "chunk_08": 1, "chunk_91": 0, "chunk_33": 0},
}

# The two retrievers' rankings, best first: q1 exactly as in the tutorial, the rest invented
# so that, as its story goes, A (BM25) stumbles on work from home and dress code.
DEMO_RUNS: dict[str, list[tuple[str, list[str]]]] = {
    "Retriever A (BM25)": [
        ("q1", ["chunk_17", "chunk_91", "chunk_42", "chunk_08", "chunk_33"]),
        ("q2", ["chunk_51", "chunk_53", "chunk_52", "chunk_54"]),
        ("q3", ["chunk_33", "chunk_64", "chunk_61", "chunk_62", "chunk_63"]),
        ("q4", ["chunk_71", "chunk_91", "chunk_72", "chunk_73", "chunk_08"]),
        ("q5", ["chunk_83", "chunk_81", "chunk_82", "chunk_33"]),
    ],
    "Retriever B (Embeddings)": [
        ("q1", ["chunk_42", "chunk_17", "chunk_08", "chunk_91", "chunk_33"]),
        ("q2", ["chunk_51", "chunk_52", "chunk_53", "chunk_54"]),
        ("q3", ["chunk_61", "chunk_62", "chunk_63", "chunk_33", "chunk_64"]),
        ("q4", ["chunk_71", "chunk_73", "chunk_72", "chunk_08", "chunk_91"]),
        ("q5", ["chunk_81", "chunk_82", "chunk_83", "chunk_33"]),
    ],
}

GUIDELINES = """\
**This is a demo.** The queries, chunks and runs are invented HR-handbook examples built from
the worked example of the NDCG tutorial ("What is the maternity leave policy?").

Grade each chunk by how well it answers the query *on its own*:

- **3 Perfect**: answers the query fully.
- **2 Relevant**: answers part of it.
- **1 Related**: on the topic, but does not answer it (e.g. paternity leave for a maternity query).
- **0 Irrelevant**: does not help.

The maternity query already carries the tutorial's labels (source "reference example").
"""


def demo_test_set() -> TestSet | None:
    """The demo test set, if one was loaded."""
    return db.session.scalar(sa.select(TestSet).where(TestSet.is_demo.is_(True)).limit(1))


def _bytes_file(name: str, lines: list[str]) -> ImportFile:
    return ImportFile(io.BytesIO(("\n".join(lines) + "\n").encode()), name)


def demo_files() -> dict[str, ImportFile]:
    """The demo data as in-memory files for the import service (queries, corpus, pool, qrels)."""
    return {
        "queries": _bytes_file(
            "demo/queries.jsonl",
            [json.dumps({"_id": qid, "text": text}) for qid, text in DEMO_QUERIES.items()],
        ),
        "corpus": _bytes_file(
            "demo/corpus.jsonl",
            [
                json.dumps({"_id": docid, "title": title, "text": text})
                for docid, (title, text) in DEMO_CHUNKS.items()
            ],
        ),
        "pool": _bytes_file(
            "demo/pool.csv",
            ["qid,docid"] + [f"{q},{d}" for q, docids in DEMO_POOL.items() for d in docids],
        ),
        "qrels": _bytes_file(
            "demo/reference-labels.qrels",
            [f"{q} 0 {d} {g}" for q, labels in REFERENCE_LABELS.items() for d, g in labels.items()],
        ),
    }


def load_demo() -> tuple[TestSet, ImportReport] | None:
    """Create the demo test set through the ordinary import; None when it already exists."""
    if demo_test_set() is not None or testsets.get_by_name(DEMO_NAME) is not None:
        return None
    test_set = testsets.create_test_set(DEMO_NAME, 3, is_demo=True)
    testsets.update_settings(
        test_set, replace(testsets.settings_of(test_set), guidelines=GUIDELINES)
    )
    try:
        report = import_files(test_set, **demo_files(), source=REFERENCE_SOURCE)
    except Exception:
        # Leave no half-built demo behind: the next bootstrap tries again.
        db.session.delete(test_set)
        db.session.commit()
        raise
    return test_set, report
