"""Shared fixtures: an app on a migrated database (SQLite always, PostgreSQL when
TEST_DATABASE_URL is set), a client, a CLI runner, an app context and logged-in users.

Fixtures only: the helpers they use live in tests/factory.py, which tests import directly."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from flask_migrate import upgrade

from ndcg_labeler.extensions import db
from tests.factory import AuthActions, make_app, make_user

BACKENDS = ["sqlite"] + (["postgresql"] if os.environ.get("TEST_DATABASE_URL") else [])


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite file migrated to head, copied for every test (fast and isolated)."""
    base = tmp_path_factory.mktemp("template")
    path = base / "template.sqlite3"
    app = make_app(base, f"sqlite:///{path}")
    with app.app_context():
        upgrade()
        db.engine.dispose()
    return path


@pytest.fixture(scope="session")
def postgres_url(worker_id: str) -> str:
    """An empty PostgreSQL database for this test process (one per xdist worker)."""
    url = sa.engine.make_url(os.environ["TEST_DATABASE_URL"])
    if worker_id != "master":
        # Parallel workers each get a database of their own, created next to the given one.
        name = f"{url.database}_{worker_id}"
        admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        url = url.set(database=name)
    # Commits need not wait for the WAL to reach the disk: the tests kill app processes, never
    # the database server, so nothing they check depends on it, and every commit is faster.
    url = url.update_query_dict({"options": "-c synchronous_commit=off"})
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        conn.execute(sa.text("CREATE SCHEMA public"))
    engine.dispose()
    return url.render_as_string(hide_password=False)


@pytest.fixture(params=BACKENDS)
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Flask]:
    """The app on a fresh, migrated database."""
    if request.param == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        path = tmp_path / "test.sqlite3"
        shutil.copy(template, path)
        flask_app = make_app(tmp_path, f"sqlite:///{path}")
        yield flask_app
        with flask_app.app_context():
            db.engine.dispose()
        return
    url = request.getfixturevalue("postgres_url")
    flask_app = make_app(tmp_path, url)
    with flask_app.app_context():
        if not sa.inspect(db.engine).has_table("alembic_version"):
            upgrade()
    yield flask_app
    with flask_app.app_context():
        db.session.remove()
        with db.engine.begin() as conn:
            for statement in _emptying_statements(conn):
                conn.execute(statement)
        db.engine.dispose()


_EMPTYING: list[sa.TextClause] = []


def _emptying_statements(conn: sa.Connection) -> list[sa.TextClause]:
    """Statements that empty every table and restart every id sequence, made once per process.

    DELETE, children first, then setval: a test leaves a few rows, and TRUNCATE ... RESTART
    IDENTITY of every table (new files for each, ~0.3 s idle, 0.7 s loaded) cost more than
    most tests themselves; this takes ~0.01 s."""
    if not _EMPTYING:
        _EMPTYING.extend(
            sa.text(f'DELETE FROM "{table.name}"') for table in reversed(db.metadata.sorted_tables)
        )
        sequences = conn.scalars(
            sa.text(
                "SELECT sequence_name FROM information_schema.sequences "
                "WHERE sequence_schema = current_schema()"
            )
        ).all()
        if sequences:
            restart = ", ".join(f"setval('\"{name}\"', 1, false)" for name in sequences)
            _EMPTYING.append(sa.text(f"SELECT {restart}"))
    return _EMPTYING


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """A test client for the app."""
    return app.test_client()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    """A runner for the app's `flask ...` commands."""
    return app.test_cli_runner()


@pytest.fixture
def ctx(app: Flask) -> Iterator[Flask]:
    """An app context whose session is cleaned up afterwards."""
    with app.app_context():
        yield app
        db.session.remove()


@pytest.fixture
def admin_id(app: Flask) -> int:
    """An admin account named `admin`."""
    return make_user(app, "admin", "admin")


@pytest.fixture
def annotator_id(app: Flask) -> int:
    """An annotator account named `ann`."""
    return make_user(app, "ann", "annotator")


@pytest.fixture
def auth(client: FlaskClient) -> AuthActions:
    """Login helper bound to the client."""
    return AuthActions(client)


@pytest.fixture
def as_admin(client: FlaskClient, admin_id: int, auth: AuthActions) -> FlaskClient:
    """A client logged in as an admin."""
    assert auth.login("admin").status_code == 302
    return client


@pytest.fixture
def as_annotator(client: FlaskClient, annotator_id: int, auth: AuthActions) -> FlaskClient:
    """A client logged in as an annotator."""
    assert auth.login("ann").status_code == 302
    return client


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI (NDCG_REQUIRE_ALL_TESTS=1): a skip, no PostgreSQL or no browser test fails the run."""
    if os.environ.get("NDCG_REQUIRE_ALL_TESTS") != "1" or exitstatus != 0:
        return
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller sees every worker's results
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    problems = []
    if skipped:
        problems.append(f"{skipped} test(s) were skipped")
    if "postgresql" not in BACKENDS:
        problems.append("TEST_DATABASE_URL is not set, so PostgreSQL was not tested")
    passed = reporter.stats.get("passed", []) if reporter else []
    if not any("browser" in getattr(report, "keywords", {}) for report in passed):
        problems.append("no browser test ran")
    if problems:
        if reporter:
            reporter.write_line("CI requires every test to run: " + "; ".join(problems), red=True)
        session.exitstatus = 1


def _user_properties(
    terminalreporter: pytest.TerminalReporter, key: str, *, unique: bool = True
) -> list[str]:
    """The values the tests' calls attached under `key` (xdist carries them back)."""
    values = [
        value
        for reports in terminalreporter.stats.values()
        for report in reports
        for name, value in getattr(report, "user_properties", ())
        if name == key and getattr(report, "when", "call") == "call"
    ]
    return sorted(set(values)) if unique else values


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the security tests' totals (the authorization matrix line) in every run's output.

    Tests attach them as `security-summary` user properties, which xdist carries back from its
    workers, so the line appears with or without -s and -n.
    """
    lines = _user_properties(terminalreporter, "security-summary", unique=False)
    hostile = _user_properties(terminalreporter, "hostile-case")
    if hostile:
        rows = [case.split("|") for case in hostile]
        refused = [r for r in rows if r[2] == "refused"]
        kinds = {r[1] for r in rows}
        paths = {r[0] for r in rows}
        lines.append(
            f"hostile files: {len(rows)} cases ({len(kinds)} kinds over {len(paths)} upload and "
            f"import paths): {len(refused)} refused naming the file, "
            f"{sum(r[3] == '1' for r in refused)} of them with 0 rows written; "
            f"{len(rows) - len(refused)} valid files in unusual dress accepted"
        )
    low = _user_properties(terminalreporter, "low-finding")
    if low:
        lines.append(f"low findings held: {'; '.join(low)}")
    if lines:
        terminalreporter.section("security")
        for line in sorted(set(lines)):
            terminalreporter.write_line(line)
