"""0026 links each existing scheduled check to the endpoint that bore its name when it ran,
following the renames the audit trail recorded; both ways keep every check."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from flask import Flask
from flask_migrate import downgrade, upgrade

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, RetrieverEndpoint
from ndcg_labeler.services import endpoints
from tests.factory import build_test_set

URL = "http://127.0.0.1:9/?q={query}"
CHECKS = sa.table(
    "series_check",
    sa.column("id", sa.Integer),
    sa.column("test_set_id", sa.Integer),
    sa.column("series", sa.String),
    sa.column("endpoint", sa.String),
    sa.column("outcome", sa.String),
    sa.column("summary", sa.Text),
    sa.column("alert", sa.String),
    sa.column("alert_error", sa.Text),
    sa.column("created_at", sa.DateTime(timezone=True)),
)


def day(n: int) -> datetime:
    return datetime(2026, 1, n, 12, 0, tzinfo=UTC)


def test_existing_checks_find_their_endpoint_through_its_renames(app: Flask) -> None:
    """Endpoint A is made as "old" on the 2nd and renamed "new" on the 5th; endpoint B takes
    the name "old" on the 10th; test set "other" has an endpoint "new" of its own. By hand:
    "old" on the 3rd is A, "new" on the 7th is A, "old" on the 12th is B, "old" on the 1st
    (before A existed) and "gone" are nobody's."""
    with app.app_context():
        test_set = build_test_set("kept", {"q1": "x"})
        other = build_test_set("other", {"q1": "x"})
        a = endpoints.add_endpoint(test_set, "old", URL, preset_name="list")
        endpoints.edit_endpoint(test_set, a, name="new")
        b = endpoints.add_endpoint(test_set, "old", URL, preset_name="list")
        elsewhere = endpoints.add_endpoint(other, "new", URL, preset_name="list")
        ids = (test_set.id, other.id, a.id, b.id, elsewhere.id)
        table = RetrieverEndpoint.__table__
        for endpoint_id, when in ((ids[2], day(2)), (ids[3], day(10)), (ids[4], day(2))):
            db.session.execute(
                table.update().where(table.c.id == endpoint_id).values(created_at=when)
            )
        db.session.execute(
            sa.update(AuditEvent)
            .where(AuditEvent.action == "endpoint.edit")
            .values(created_at=day(5))
        )
        db.session.commit()  # migrations wait for every open transaction on PostgreSQL
        downgrade(revision="0025_archive")
        rows = [
            (ids[0], "old", day(3)),
            (ids[0], "new", day(7)),
            (ids[0], "old", day(12)),
            (ids[0], "old", day(1)),
            (ids[0], "gone", day(7)),
            (ids[1], "new", day(7)),
        ]
        db.session.execute(
            CHECKS.insert(),
            [
                {"test_set_id": ts, "series": "s", "endpoint": name, "outcome": "pass",
                 "summary": "", "alert": "", "alert_error": "", "created_at": when}
                for ts, name, when in rows
            ],
        )  # fmt: skip
        db.session.commit()
        upgrade()
        found = (
            db.session.execute(sa.text("SELECT endpoint_id FROM series_check ORDER BY id"))
            .scalars()
            .all()
        )
        assert found == [ids[2], ids[2], ids[3], None, None, ids[4]]
        db.session.commit()
        downgrade(revision="0025_archive")
        count = db.session.execute(sa.text("SELECT count(*) FROM series_check")).scalar_one()
        assert count == len(rows)
        db.session.commit()
        upgrade()
