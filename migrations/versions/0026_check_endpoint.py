"""series_check.endpoint_id: the endpoint a scheduled evaluation asked, through its renames

Revision ID: 0026_check_endpoint
Revises: 0025_archive
Create Date: 2026-11-28 10:00:00

A check kept only the endpoint's name as it was then, so after a rename the series page named
an endpoint that no longer exists by that name (or another one that took the name). The new
column follows the endpoint (NULL once it is deleted); the name stays, as what the alert said.

Existing checks are matched to the endpoint of their test set that bore the check's name when
the check was made: the names an endpoint had come from its `endpoint.edit` audit events
(written with every rename since endpoints exist), before its first rename the old name of
that rename. A check no endpoint matches (its endpoint was deleted) keeps NULL.
"""

import sqlalchemy as sa
from alembic import op

revision = "0026_check_endpoint"
down_revision = "0025_archive"
branch_labels = None
depends_on = None

_CHECKS = sa.table(
    "series_check",
    sa.column("id", sa.Integer),
    sa.column("test_set_id", sa.Integer),
    sa.column("endpoint", sa.String),
    sa.column("endpoint_id", sa.Integer),
    sa.column("created_at", sa.DateTime(timezone=True)),
)
_ENDPOINTS = sa.table(
    "retriever_endpoint",
    sa.column("id", sa.Integer),
    sa.column("test_set_id", sa.Integer),
    sa.column("name", sa.String),
    sa.column("created_at", sa.DateTime(timezone=True)),
)
_AUDIT = sa.table(
    "audit_event",
    sa.column("id", sa.Integer),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("action", sa.String),
    sa.column("target_id", sa.Integer),
    sa.column("details", sa.JSON),
)


def _names_over_time(bind) -> dict[int, list[tuple[object, str]]]:
    """Each endpoint's names over time, {endpoint id: [(from when, name), ...]} in time order:
    from its creation, then from each audited rename."""
    renames: dict[int, list[tuple[object, str, str]]] = {}
    rows = bind.execute(
        sa.select(_AUDIT.c.target_id, _AUDIT.c.created_at, _AUDIT.c.details)
        .where(_AUDIT.c.action == "endpoint.edit")
        .order_by(_AUDIT.c.created_at, _AUDIT.c.id)
    )
    for target, at, details in rows:
        name = ((details or {}).get("changes") or {}).get("name")
        if target is not None and isinstance(name, dict):
            renames.setdefault(target, []).append((at, str(name["old"]), str(name["new"])))
    spans: dict[int, list[tuple[object, str]]] = {}
    for endpoint_id, created, current in bind.execute(
        sa.select(_ENDPOINTS.c.id, _ENDPOINTS.c.created_at, _ENDPOINTS.c.name)
    ):
        changes = renames.get(endpoint_id, [])
        first = changes[0][1] if changes else current
        spans[endpoint_id] = [(created, first)] + [(at, new) for at, _, new in changes]
    return spans


def _owner(spans, by_set, test_set_id, name, at):
    """The endpoint of the test set named `name` at time `at`, or None."""
    for endpoint_id in by_set.get(test_set_id, ()):
        bore = None
        for start, label in spans[endpoint_id]:
            if start is not None and at is not None and start > at:
                break
            bore = label
        if bore == name:
            return endpoint_id
    return None


def upgrade():
    # Recreated on SQLite to hold the foreign key; nothing references series_check.
    with op.batch_alter_table("series_check") as batch_op:
        batch_op.add_column(sa.Column("endpoint_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_series_check_endpoint_id_retriever_endpoint"),
            "retriever_endpoint",
            ["endpoint_id"],
            ["id"],
            ondelete="SET NULL",
        )
    bind = op.get_bind()
    spans = _names_over_time(bind)
    by_set: dict[int, list[int]] = {}
    for endpoint_id, test_set_id in bind.execute(
        sa.select(_ENDPOINTS.c.id, _ENDPOINTS.c.test_set_id)
    ):
        by_set.setdefault(test_set_id, []).append(endpoint_id)
    changes = []
    for check_id, test_set_id, name, at in bind.execute(
        sa.select(_CHECKS.c.id, _CHECKS.c.test_set_id, _CHECKS.c.endpoint, _CHECKS.c.created_at)
    ):
        found = _owner(spans, by_set, test_set_id, name, at)
        if found is not None:
            changes.append({"check_id": check_id, "owner": found})
    if changes:
        bind.execute(
            _CHECKS.update()
            .where(_CHECKS.c.id == sa.bindparam("check_id"))
            .values(endpoint_id=sa.bindparam("owner")),
            changes,
        )


def downgrade():
    with op.batch_alter_table("series_check") as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_series_check_endpoint_id_retriever_endpoint"), type_="foreignkey"
        )
        batch_op.drop_column("endpoint_id")
