"""Typed SQLAlchemy 2 models; the schema itself is created only by Alembic migrations."""

from ndcg_labeler.models._common import aware, iso_utc, utcnow
from ndcg_labeler.models.audit import AuditEvent
from ndcg_labeler.models.endpoints import RetrieverEndpoint
from ndcg_labeler.models.jobs import Job, JobFile
from ndcg_labeler.models.judges import (
    AuditSample,
    AuditSampleQuery,
    Judge,
    MachineConflict,
    MachineJudgment,
    PromptVersion,
)
from ndcg_labeler.models.judgments import Adjudication, Assignment, Judgment, JudgmentEvent
from ndcg_labeler.models.probes import Probe, ProbeAnswer
from ndcg_labeler.models.runs import Run, RunQuery, RunScore, RunTag
from ndcg_labeler.models.series import SeriesCheck, SeriesSetting
from ndcg_labeler.models.testsets import (
    AnnotatorTally,
    Chunk,
    CorpusSource,
    FiguresCache,
    Pair,
    PoolTally,
    Query,
    TestSet,
    TestSetMember,
)
from ndcg_labeler.models.users import User

__all__ = [
    "Adjudication",
    "AnnotatorTally",
    "Assignment",
    "AuditEvent",
    "AuditSample",
    "AuditSampleQuery",
    "Chunk",
    "CorpusSource",
    "FiguresCache",
    "Job",
    "JobFile",
    "Judge",
    "Judgment",
    "JudgmentEvent",
    "MachineConflict",
    "MachineJudgment",
    "Pair",
    "PoolTally",
    "Probe",
    "ProbeAnswer",
    "PromptVersion",
    "Query",
    "RetrieverEndpoint",
    "Run",
    "RunQuery",
    "RunScore",
    "RunTag",
    "SeriesCheck",
    "SeriesSetting",
    "TestSet",
    "TestSetMember",
    "User",
    "aware",
    "iso_utc",
    "utcnow",
]
