"""Build small test sets straight through the models (independent of the import code)."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Pair, Query, TestSet, TestSetMember

LABELS_3 = [
    {"name": "Irrelevant", "definition": "Does not help."},
    {"name": "Related", "definition": "On topic, no answer."},
    {"name": "Relevant", "definition": "Partly answers."},
    {"name": "Perfect", "definition": "Fully answers."},
]


@dataclass
class Built:
    """Ids of what was created: the test set, queries by qid, chunks by docid, pairs in order."""

    test_set_id: int
    queries: dict[str, int] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    pairs: list[int] = field(default_factory=list)


def build(
    app: Flask,
    name: str = "ts",
    *,
    pool: dict[str, list[str]] | None = None,
    target: int = 1,
    members: tuple[int, ...] = (),
    texts: dict[str, str | None] | None = None,
    priorities: dict[tuple[str, str], int] | None = None,
    aggregation: str = "median",
) -> Built:
    """A 0–3 test set whose pool maps qid -> docids (pairs created in that order)."""
    pool = pool if pool is not None else {"q1": ["d1", "d2"], "q2": ["d3"]}
    texts = texts or {}
    priorities = priorities or {}
    with app.app_context():
        ts = TestSet(
            name=name,
            scale_max=3,
            grade_labels=[dict(x) for x in LABELS_3],
            judgments_per_pair=target,
            aggregation=aggregation,
        )
        db.session.add(ts)
        db.session.flush()
        built = Built(ts.id)
        for user_id in members:
            db.session.add(TestSetMember(test_set_id=ts.id, user_id=user_id))
        for qid, docids in pool.items():
            query = Query(test_set_id=ts.id, qid=qid, text=f"text of {qid}")
            db.session.add(query)
            db.session.flush()
            built.queries[qid] = query.id
            for docid in docids:
                if docid not in built.chunks:
                    chunk = Chunk(
                        test_set_id=ts.id,
                        docid=docid,
                        title=f"title {docid}",
                        text=texts.get(docid, f"body of {docid}"),
                    )
                    db.session.add(chunk)
                    db.session.flush()
                    built.chunks[docid] = chunk.id
                pair = Pair(
                    test_set_id=ts.id,
                    query_id=query.id,
                    chunk_id=built.chunks[docid],
                    priority=priorities.get((qid, docid), 0),
                )
                db.session.add(pair)
                db.session.flush()
                built.pairs.append(pair.id)
        db.session.commit()
    return built
