"""Typed SQLAlchemy 2 models; the schema itself is created only by Alembic migrations."""

from ndcg_labeler.models.audit import AuditEvent
from ndcg_labeler.models.judgments import Adjudication, Assignment, Judgment, JudgmentEvent
from ndcg_labeler.models.runs import Run, RunQuery
from ndcg_labeler.models.testsets import Chunk, Pair, Query, TestSet, TestSetMember
from ndcg_labeler.models.users import User

__all__ = [
    "Adjudication",
    "Assignment",
    "AuditEvent",
    "Chunk",
    "Judgment",
    "JudgmentEvent",
    "Pair",
    "Query",
    "Run",
    "RunQuery",
    "TestSet",
    "TestSetMember",
    "User",
]
