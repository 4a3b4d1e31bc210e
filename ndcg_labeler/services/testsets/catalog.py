"""Test sets: creation with default grade names, settings, annotators and summary counts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Assignment, Chunk, Pair, Query, TestSet, TestSetMember, User
from ndcg_labeler.models.testsets import LEVELS
from ndcg_labeler.scoring import DEFAULT_POLICY, POLICIES
from ndcg_labeler.services import ServiceError, audit, resolve_ref
from ndcg_labeler.services._db import bump_versions
from ndcg_labeler.services.tallies import pool_counts

SCALES = (3, 4)
MAX_NAME = 200
MAX_GRADE_NAME = 40
MAX_DEFINITION = 300
# The pool's counters tell pairs apart up to this many answers (LEVELS), so no target is higher.
MAX_JUDGMENTS_PER_PAIR = LEVELS - 1

# Sensible defaults, editable per test set; each definition fits on a grade button.
DEFAULT_GRADES: dict[int, list[dict[str, str]]] = {
    3: [
        {"name": "Irrelevant", "definition": "Does not help answer the query."},
        {"name": "Related", "definition": "On the topic, but does not answer the query."},
        {"name": "Relevant", "definition": "Answers part of the query, or answers it vaguely."},
        {"name": "Perfect", "definition": "Answers the query fully on its own."},
    ],
    4: [
        {"name": "Irrelevant", "definition": "Does not help answer the query."},
        {"name": "Related", "definition": "On the topic, but does not answer the query."},
        {"name": "Somewhat relevant", "definition": "Gives a small part of the answer."},
        {"name": "Relevant", "definition": "Answers most of the query."},
        {"name": "Perfect", "definition": "Answers the query fully on its own."},
    ],
}


def aggregation_policies() -> list[str]:
    """The names of the aggregation policies scoring offers, in its order."""
    return list(POLICIES)


def default_grade_labels(scale_max: int) -> list[dict[str, str]]:
    """A fresh copy of the default grade names and definitions for a 0–3 or 0–4 scale."""
    if scale_max not in SCALES:
        raise ServiceError(f"scale must be 3 (grades 0–3) or 4 (grades 0–4), not {scale_max}")
    return [dict(label) for label in DEFAULT_GRADES[scale_max]]


def get_by_name(name: str) -> TestSet | None:
    """The test set with exactly this name."""
    return db.session.scalar(sa.select(TestSet).where(TestSet.name == name))


def get_by_ref(ref: str, visible: Callable[[TestSet], bool] | None = None) -> TestSet | None:
    """The test set named by `ref` (services.resolve_ref: `id:N`, `name:X`, or a plain name or
    id; a ServiceError when a plain reference is one test set's name and another's id).
    `visible`: the test sets the asker may see; the others are neither found nor clash."""

    def shown(found: TestSet | None) -> TestSet | None:
        return found if found is None or visible is None or visible(found) else None

    return resolve_ref(
        "test set",
        ref,
        lambda ident: shown(db.session.get(TestSet, ident)),
        lambda name: shown(get_by_name(name)),
    )


def all_test_sets() -> list[TestSet]:
    """Every test set, by name (for admins and the CLI)."""
    return list(db.session.scalars(sa.select(TestSet).order_by(TestSet.name)))


def require_by_name(name: str) -> TestSet:
    """The test set with this name, or a ServiceError naming it (for the CLI)."""
    test_set = get_by_name(name)
    if test_set is None:
        raise ServiceError(f"unknown test set '{name}'")
    return test_set


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ServiceError("the test set name must not be empty", field="name")
    if len(name) > MAX_NAME:
        raise ServiceError(
            f"the test set name must have at most {MAX_NAME} characters", field="name"
        )
    return name


def create_test_set(
    name: str, scale_max: int = 3, *, is_demo: bool = False, actor: User | None = None
) -> TestSet:
    """Create an empty test set with the default grade names for its scale, audited as
    "testset.create" by `actor` (None: the command line) in the same transaction."""
    name = _clean_name(name)
    labels = default_grade_labels(scale_max)
    if get_by_name(name) is not None:
        raise ServiceError(f"a test set named '{name}' already exists")
    test_set = TestSet(
        name=name,
        scale_max=scale_max,
        grade_labels=labels,
        guidelines="",
        aggregation=DEFAULT_POLICY,
        relevance_threshold=1,
        judgments_per_pair=1,
        disagreement_threshold=2,
        is_demo=is_demo,
    )
    db.session.add(test_set)
    db.session.flush()  # its id, for the event
    details: dict[str, object] = {"name": name, "scale_max": scale_max}
    if is_demo:
        details["demo"] = True
    audit.record(actor, "testset.create", "test_set", test_set.id, **details)
    db.session.commit()
    return test_set


def _clean_labels(labels: Sequence[dict[str, str]], scale_max: int) -> list[dict[str, str]]:
    if len(labels) != scale_max + 1:
        raise ServiceError(f"give a name for each grade 0–{scale_max}", field="grade_labels")
    cleaned = []
    for grade, label in enumerate(labels):
        name = " ".join((label.get("name") or "").split())
        definition = " ".join((label.get("definition") or "").split())
        if not name:
            raise ServiceError(f"grade {grade} needs a name", field=f"grade_labels.{grade}.name")
        if len(name) > MAX_GRADE_NAME:
            raise ServiceError(
                f"the name of grade {grade} is longer than {MAX_GRADE_NAME}",
                field=f"grade_labels.{grade}.name",
            )
        if len(definition) > MAX_DEFINITION:
            raise ServiceError(
                f"the definition of grade {grade} is longer than {MAX_DEFINITION} characters",
                field=f"grade_labels.{grade}.definition",
            )
        cleaned.append({"name": name, "definition": definition})
    return cleaned


@dataclass(frozen=True)
class Settings:
    """The editable settings of a test set (the scale is fixed once created)."""

    name: str
    grade_labels: list[dict[str, str]]
    guidelines: str
    aggregation: str
    relevance_threshold: int
    judgments_per_pair: int
    disagreement_threshold: int
    show_machine_suggestions: bool = False
    series_separator: str = ""


def settings_of(test_set: TestSet) -> Settings:
    """The current settings, e.g. to prefill the settings form."""
    return Settings(
        name=test_set.name,
        grade_labels=[dict(label) for label in test_set.grade_labels],
        guidelines=test_set.guidelines,
        aggregation=test_set.aggregation,
        relevance_threshold=test_set.relevance_threshold,
        judgments_per_pair=test_set.judgments_per_pair,
        disagreement_threshold=test_set.disagreement_threshold,
        show_machine_suggestions=test_set.show_machine_suggestions,
        series_separator=test_set.series_separator,
    )


def update_settings(test_set: TestSet, settings: Settings, actor: User | None = None) -> TestSet:
    """Validate and save new settings; scoring-relevant changes bump labels_version.

    The changed fields (old and new) go to the audit trail as done by `actor`."""
    top = test_set.scale_max
    name = _clean_name(settings.name)
    other = get_by_name(name)
    if other is not None and other.id != test_set.id:
        raise ServiceError(f"a test set named '{name}' already exists", field="name")
    labels = _clean_labels(settings.grade_labels, top)
    policies = aggregation_policies()
    if settings.aggregation not in policies:
        raise ServiceError(f"aggregation must be one of {', '.join(policies)}", field="aggregation")
    if not 1 <= settings.relevance_threshold <= top:
        raise ServiceError(
            f"the relevance threshold must be a grade from 1 to {top}", field="relevance_threshold"
        )
    if not 1 <= settings.judgments_per_pair <= MAX_JUDGMENTS_PER_PAIR:
        raise ServiceError(
            f"judgments per pair must be between 1 and {MAX_JUDGMENTS_PER_PAIR}",
            field="judgments_per_pair",
        )
    if not 1 <= settings.disagreement_threshold <= top:
        raise ServiceError(
            f"the disagreement threshold must be from 1 to {top} grades",
            field="disagreement_threshold",
        )
    separator = settings.series_separator or ""
    if len(separator) > 8 or any(c.isspace() for c in separator):
        raise ServiceError(
            "the series separator must be 1–8 characters without spaces, or empty",
            field="series_separator",
        )
    # Aggregation and threshold change the grades scoring uses: live pages must recompute.
    if (settings.aggregation, settings.relevance_threshold) != (
        test_set.aggregation,
        test_set.relevance_threshold,
    ):
        bump_versions(test_set.id, labels=True)
    before = settings_of(test_set)
    test_set.name = name
    test_set.grade_labels = labels
    test_set.guidelines = settings.guidelines.replace("\r\n", "\n")
    test_set.aggregation = settings.aggregation
    test_set.relevance_threshold = settings.relevance_threshold
    test_set.judgments_per_pair = settings.judgments_per_pair
    test_set.disagreement_threshold = settings.disagreement_threshold
    test_set.show_machine_suggestions = settings.show_machine_suggestions
    test_set.series_separator = separator
    changes = {
        key: {"old": old, "new": new}
        for key, old, new in (
            (key, getattr(before, key), getattr(settings_of(test_set), key))
            for key in before.__dataclass_fields__
        )
        if old != new
    }
    if changes:
        audit.record(actor, "testset.settings", "test_set", test_set.id, name=name, changes=changes)
    db.session.commit()
    return test_set


def member_ids(test_set: TestSet) -> set[int]:
    """Ids of the users who may label this test set."""
    stmt = sa.select(TestSetMember.user_id).where(TestSetMember.test_set_id == test_set.id)
    return set(db.session.scalars(stmt))


def members(test_set: TestSet) -> list[User]:
    """The users who may label this test set, by name."""
    stmt = (
        sa.select(User)
        .join(TestSetMember, TestSetMember.user_id == User.id)
        .where(TestSetMember.test_set_id == test_set.id)
        .order_by(User.username)
    )
    return list(db.session.scalars(stmt))


def annotator_candidates() -> list[User]:
    """Active annotators an admin can give a test set to, by name."""
    stmt = (
        sa.select(User)
        .where(User.role == "annotator", User.active.is_(True))
        .order_by(User.username)
    )
    return list(db.session.scalars(stmt))


def _member_event(actor: User | None, action: str, test_set: TestSet, user_id: int) -> None:
    username = db.session.scalar(sa.select(User.username).where(User.id == user_id))
    audit.record(
        actor,
        action,
        "test_set",
        test_set.id,
        test_set=test_set.name,
        user_id=user_id,
        username=username,
    )


def _drop_leases(test_set: TestSet, user_ids: Iterable[int]) -> None:
    """Free the queue's leases that annotators losing this test set hold on its pairs."""
    # They can no longer open the set, so their lease would only keep the pair from the others
    # until it lapses; an admin still sees every test set and keeps theirs.
    annotators = sa.select(User.id).where(User.id.in_(list(user_ids)), User.role != "admin")
    pairs = sa.select(Pair.id).where(Pair.test_set_id == test_set.id)
    db.session.execute(
        sa.delete(Assignment).where(
            Assignment.user_id.in_(annotators), Assignment.pair_id.in_(pairs)
        ),
        execution_options={"synchronize_session": False},
    )


def grant(test_set: TestSet, user: User, actor: User | None = None) -> bool:
    """Let an annotator (or admin) label the test set; False when it already could (audited)."""
    if user.role not in ("admin", "annotator"):
        raise ServiceError(f"'{user.username}' is not a person and cannot label")
    if user.id in member_ids(test_set):
        return False
    db.session.add(TestSetMember(test_set_id=test_set.id, user_id=user.id))
    _member_event(actor, "member.grant", test_set, user.id)
    db.session.commit()
    return True


def revoke(test_set: TestSet, user: User, actor: User | None = None) -> bool:
    """Take the test set away from a user (their judgments stay); False when not a member."""
    member = db.session.get(TestSetMember, {"test_set_id": test_set.id, "user_id": user.id})
    if member is None:
        return False
    db.session.delete(member)
    _member_event(actor, "member.revoke", test_set, user.id)
    _drop_leases(test_set, [user.id])
    db.session.commit()
    return True


def set_members(
    test_set: TestSet,
    user_ids: Iterable[int],
    actor: User | None = None,
    *,
    among: Iterable[int] | None = None,
) -> tuple[int, int]:
    """Make exactly these users members; returns (granted, revoked) counts (each audited).

    With `among` (the people a form offered), members outside it are left as they are.
    """
    wanted = set(user_ids)
    people = set(
        db.session.scalars(
            sa.select(User.id).where(User.id.in_(wanted), User.role.in_(("admin", "annotator")))
        )
    )
    if people != wanted:
        raise ServiceError("only existing people can be given a test set")
    current = member_ids(test_set)
    if among is not None:
        # Nobody could untick them: keep them rather than revoke them unseen.
        wanted |= current - set(among)
    for user_id in sorted(wanted - current):
        db.session.add(TestSetMember(test_set_id=test_set.id, user_id=user_id))
        _member_event(actor, "member.grant", test_set, user_id)
    removed = current - wanted
    for user_id in sorted(removed):
        _member_event(actor, "member.revoke", test_set, user_id)
    if removed:
        db.session.execute(
            sa.delete(TestSetMember).where(
                TestSetMember.test_set_id == test_set.id, TestSetMember.user_id.in_(removed)
            )
        )
        _drop_leases(test_set, removed)
    db.session.commit()
    return len(wanted - current), len(removed)


@dataclass(frozen=True)
class Summary:
    """What a test set holds, counted in the database."""

    queries: int
    chunks: int
    chunks_without_text: int
    pairs: int
    judged_pairs: int
    judgments: int
    annotators: int
    # Pairs outside the pool with a grade (given in place): shown beside judged_pairs.
    graded_outside_pool: int = 0

    @property
    def judged_percent(self) -> float:
        """Share of pool pairs with at least one grade, in percent (0 for an empty pool)."""
        return 100.0 * self.judged_pairs / self.pairs if self.pairs else 0.0


def _count(stmt: sa.Select[tuple[int]]) -> int:
    return int(db.session.scalar(stmt) or 0)


def summary(test_set: TestSet) -> Summary:
    """Counts of queries, chunks (and those without text), pairs, judged pairs, judgments.

    Pairs, judged pairs, graded judgments and graded pairs outside the pool are stored
    counters (services/tallies), O(1) at any size.
    """
    ts = test_set.id
    pool = pool_counts(ts)
    return Summary(
        queries=_count(sa.select(sa.func.count()).where(Query.test_set_id == ts)),
        chunks=_count(sa.select(sa.func.count()).where(Chunk.test_set_id == ts)),
        chunks_without_text=_count(
            sa.select(sa.func.count()).where(Chunk.test_set_id == ts, Chunk.text.is_(None))
        ),
        pairs=pool.pairs,
        judged_pairs=pool.graded_pairs,
        judgments=pool.graded_judgments,
        annotators=_count(sa.select(sa.func.count()).where(TestSetMember.test_set_id == ts)),
        graded_outside_pool=pool.graded_outside,
    )
