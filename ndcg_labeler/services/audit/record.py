"""Write one audit event into the caller's transaction (the caller commits with its action)."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, User, utcnow

# Every action the trail knows, with what it means (the /audit filter lists them).
ACTIONS = {
    "user.create": "account created",
    "user.role": "role changed",
    "user.active": "account activated or deactivated",
    "user.password_reset": "password set by an admin",
    "user.password_change": "own password changed",
    "user.password_wrong": "own password change refused: the current password was wrong",
    "token.create": "API token created",
    "token.revoke": "API token revoked",
    "member.grant": "test set given to a person",
    "member.revoke": "test set taken from a person",
    "testset.create": "test set created",
    "testset.settings": "test-set settings changed",
    "import.queries": "queries imported into a test set (file, rows, created/updated/unchanged)",
    "import.corpus": "chunks imported into a test set's corpus (file, rows, counts)",
    "import.pool": "pool imported: pairs to judge (file, rows, counts)",
    "import.qrels": "qrels imported: judgments of a source (file, source, rows, counts)",
    "run.upload": "run uploaded",
    "run.delete": "run deleted",
    "series.baseline": "series baseline pinned or unpinned",
    "series.schedule": "endpoint schedule set or removed",
    "endpoint.add": "retriever endpoint added",
    "endpoint.edit": "retriever endpoint changed or renamed",
    "endpoint.delete": "retriever endpoint deleted (runs fetched from it stay)",
    "run.archive": "run archived: entries past its top N per query dropped",
    "run.mark": "run tags or pin changed",
    "judge.create": "machine judge created",
    "judge.archive": "machine judge archived",
    "judge.restore": "machine judge restored from the archive",
    "judge.delete": "machine judge deleted with its machine labels",
    "judge.settings": "machine judge's endpoint, concurrency, timeout or rate limit changed",
    "judge.few_shot": "machine judge's number of few-shot examples changed",
    "machine_conflict.resolve": "machine vs people disagreement resolved",
    "judge.prices": "machine judge's prices per million tokens set",
    "adjudication.set": "final grade set",
    "adjudication.remove": "final grade removed",
    "audit_sample.draw": "judge's audit sample drawn, extended or drawn anew",
    "database.backup": "database backed up",
    "database.restore": "database restored",
    "job.cancel": "job cancelled, or asked to stop",
    "login.password": "signed in with a password",
    "login.sso": "signed in through single sign-on",
    "login.failed": "password login refused (the name tried; never the password)",
    "logout": "signed out",
}
CLI_ACTOR = "cli"


def record(
    actor: User | None,
    action: str,
    target_type: str,
    target_id: int | None,
    **details: Any,
) -> AuditEvent:
    """Add an audit event to the session, not committed: it lands with the action or not at all.

    `actor` None means the command line (shown as "cli"). Unknown actions are refused, so a
    typo cannot hide an event from the /audit filter.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    event = AuditEvent(
        created_at=utcnow(),
        actor_id=actor.id if actor is not None else None,
        actor_name=actor.username if actor is not None else CLI_ACTOR,
        action=action,
        target_type=target_type,
        target_id=target_id,
        details=details,
    )
    db.session.add(event)
    return event
