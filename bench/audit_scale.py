"""A year of a team: the audit trail, the review pair page and the annotators page at scale.

`python -m bench.audit_scale [--url URL] [--events 500000] [--judgments 200000]
[--people 2000] [--old REV]` builds, in a temporary directory (SQLite there, or the database
`--url` names, which is WIPED: every table dropped), with bulk inserts:

- `--events` audit events spread over the year before now, mostly sign-ins (81% password, 4%
  SSO, 6% refused, 6% sign-outs; the rest job cancels, imports, test sets, grants), by
  `--people` annotators plus "cli" and "(anonymous)";
- `--people` active annotators (the annotators page);
- a test set with `--judgments` graded judgments by 3 annotators, 30% of its pairs disputed
  (grades 0, 1, 2 against a threshold of 2; at 200,000 judgments, 20,000 disputed pairs).

Then, over HTTP to `gunicorn -w 1` (bench/serving.py: cold is the first GET in a freshly started
server, warm the median of 5 in a server that has served every page): /audit (first page,
filtered by a common and by a rare action, by one person, by a month, a deep page), the
review page of a disputed pair in the middle of the queue (its Skip link is the next pair),
the annotators page (first and a middle page); the CSV and JSON downloads (the time to the last
byte, and the worker's peak RSS before and after: flat when streamed); `flask audit export`
and `--json` as processes (wall time and peak RSS, median of 3).

`--old REV` measures the code of git revision REV too, side by side (its own tree unpacked
with `git archive`, migrated with its own migrations, the same data). The machine's load is
printed: on a shared machine wall times move with it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from bench.dashboard_pages import PASSWORD
from bench.run_bench import MB, ROOT, machine
from bench.serving import ADMIN, Server, serving, time_pages

START = time.perf_counter()
RATERS = 3
# (action, share of the events): mostly sign-ins, as a year of a team of annotators.
MIX = (
    ("login.password", 0.81),
    ("login.sso", 0.04),
    ("login.failed", 0.06),
    ("logout", 0.06),
    ("job.cancel", 0.01),
    ("import.queries", 0.005),
    ("import.corpus", 0.005),
    ("testset.create", 0.005),
    ("member.grant", 0.005),
)
RARE = "job.cancel"


def log(text: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    print(f"[{time.perf_counter() - START:6.0f} s] {text}", file=sys.stderr, flush=True)


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


# --- the data ---------------------------------------------------------------------------------


def wipe(url: str) -> None:
    """Drop every table of the PostgreSQL database (the bench's own, named by --url)."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        conn.execute(sa.text("CREATE SCHEMA public"))
    engine.dispose()


def migrate(code: Path, env: dict[str, str]) -> None:
    """`flask db upgrade` with the code in `code` (its own migrations)."""
    subprocess.run(
        [sys.executable, "-m", "flask", "--app", "app", "db", "upgrade"],
        cwd=code,
        env={**env, "PYTHONPATH": str(code)},
        check=True,
        capture_output=True,
    )


def audit_rows(events: int, people: list[tuple[int, str]], now: datetime) -> Iterator[tuple]:
    """`events` audit rows, oldest first over the year before `now`, in audit_event's column
    order after id (created_at, actor_id, actor_name, action, target_type, target_id,
    details)."""
    import random

    rng = random.Random(2026)
    actions = [name for name, _ in MIX]
    weights = [share for _, share in MIX]
    step = timedelta(days=365) / events
    start = now - timedelta(days=365)
    for i in range(events):
        action = rng.choices(actions, weights)[0]
        when = start + step * i
        uid, name = people[rng.randrange(len(people))]
        address = f"10.0.{rng.randrange(256)}.{rng.randrange(256)}"
        if action == "login.failed":
            row = (None, "(anonymous)", "user", None, {"username": name, "address": address})
        elif action in ("login.password", "login.sso"):
            row = (uid, name, "user", uid, {"username": name, "address": address})
        elif action == "logout":
            row = (uid, name, "user", uid, {"username": name})
        elif action == "job.cancel":
            row = (None, "cli", "job", i, {"kind": "judge", "test_set": "bench"})
        elif action.startswith("import."):
            row = (None, "cli", "test_set", 1, {"file": "f.tsv", "rows": 1000})
        else:
            row = (None, "cli", "test_set", 1, {"name": f"set {i}"})
        yield (when, row[0], row[1], action, row[2], row[3], json.dumps(row[4]))


def build(url: str, tmp: Path, events: int, judgments: int, people: int) -> dict[str, object]:
    """Fill the migrated database; the ids and names the pages need."""
    from bench.labeling_scale import JUDGMENT_COLUMNS, _app, _pool
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import AuditEvent, Judgment, Pair, TestSet, User, utcnow
    from ndcg_labeler.services import tallies
    from ndcg_labeler.services._db import insert_many

    app = _app(url, tmp)
    with app.app_context():
        admin = User(username=ADMIN, role="admin", active=True)
        admin.set_password(PASSWORD)
        db.session.add(admin)
        db.session.commit()
        now = utcnow()
        insert_many(
            User.__table__,
            ("username", "role", "active", "shortcuts_enabled", "created_at", "session_token"),
            [(f"p{i:05d}", "annotator", True, True, now, f"t{i}") for i in range(people)],
        )
        db.session.commit()
        found = db.session.execute(
            db.select(User.id, User.username).where(User.username.like("p%")).order_by(User.id)
        ).all()
        names = [(uid, name) for uid, name in found]
        log(f"{len(names):,} people")
        # details as JSON text through the driver: the column is JSON on both databases.
        columns = (
            "created_at", "actor_id", "actor_name", "action", "target_type", "target_id",
            "details",
        )  # fmt: skip
        batch: list[tuple] = []
        for row in audit_rows(events, names, now):
            batch.append(row)
            if len(batch) == 50_000:
                insert_many(AuditEvent.__table__, columns, batch)
                batch = []
        insert_many(AuditEvent.__table__, columns, batch)
        db.session.commit()
        log(f"{events:,} audit events")
        raters = [uid for uid, _ in names[:RATERS]]
        pairs = judgments // RATERS
        ts = _pool("review", pairs, raters, 0.0)
        keys = db.session.execute(
            db.select(Pair.query_id, Pair.chunk_id).where(Pair.test_set_id == ts)
        ).all()
        rows = []
        for n, (q, c) in enumerate(keys):
            disputed = n % 10 < 3
            for r, uid in enumerate(raters):
                grade = r if disputed else 1
                rows.append((ts, q, c, uid, "graded", grade, "", 1000, now, now))
        insert_many(Judgment.__table__, JUDGMENT_COLUMNS, rows)
        tallies.recount_pool(ts)
        db.session.commit()
        log(f"{len(rows):,} judgments, {sum(1 for n in range(len(keys)) if n % 10 < 3):,} disputed")
        middle = sorted(keys)[len(keys) // 2 // 10 * 10]  # n % 10 == 0: disputed
        if db.engine.dialect.name == "postgresql":
            with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(db.text("VACUUM ANALYZE"))  # as autovacuum leaves a year-old table
        db.session.get_one(TestSet, ts)
        db.engine.dispose()
    return {"ts": ts, "pair": middle, "actor": names[len(names) // 3][1], "people": people}


# --- the measurements -------------------------------------------------------------------------


def pages(info: dict[str, object], events: int) -> list[tuple[str, str]]:
    """(name, url) of every page timed."""
    ts, (q, c) = info["ts"], info["pair"]  # type: ignore[misc]
    last = max(1, events // 50)
    return [
        ("/audit first page", "/audit/"),
        ("/audit ?action=login.password", "/audit/?action=login.password"),
        (f"/audit ?action={RARE}", f"/audit/?action={RARE}"),
        ("/audit ?user=(one person)", f"/audit/?user={info['actor']}"),
        ("/audit ?since= ?until= (a month)", "/audit/?since=2026-06-01&until=2026-06-30"),
        (f"/audit deep page ({last * 9 // 10:,} of {last:,})", f"/audit/?page={last * 9 // 10}"),
        ("review pair page (with Skip)", f"/test-sets/{ts}/review/{q}/{c}"),
        ("annotators page 1", f"/test-sets/{ts}/annotators"),
        ("annotators page 20", f"/test-sets/{ts}/annotators?page=20"),
    ]


def _hwm(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def downloads(server: Server) -> dict[str, tuple[float, int, int, int]]:
    """{name: (ms to the last byte, bytes, worker peak RSS before, after)} of the exports, the
    body read in 64 KB pieces and dropped (as a browser saving it to disk)."""
    from bench.workers import _children

    worker = _children(server.process.pid)[0]
    found = {}
    for name, url in (("CSV download", "/audit/audit.csv"), ("JSON download", "/audit/audit.json")):
        before = _hwm(worker)
        t0 = time.perf_counter()
        size = 0
        with server.session.get(server.base + url, stream=True, timeout=900) as response:
            assert response.status_code == 200, (url, response.status_code)
            for piece in response.iter_content(65536):
                size += len(piece)
        found[name] = ((time.perf_counter() - t0) * 1000, size, before, _hwm(worker))
    return found


def cli_export(code: Path, env: dict[str, str], as_json: bool) -> tuple[float, float, int]:
    """`flask audit export [--json]` > a file, as its own process: median wall s of 3, the
    largest peak RSS, and the bytes written."""
    args = [sys.executable, "-m", "flask", "--app", "app", "audit", "export"]
    args += ["--json"] if as_json else []
    walls, peaks, size = [], [], 0
    for _ in range(3):
        with tempfile.TemporaryFile() as out:
            t0 = time.perf_counter()
            child = subprocess.Popen(args, cwd=code, env={**env, "PYTHONPATH": str(code)},
                                     stdout=out, stderr=subprocess.PIPE)  # fmt: skip
            _, status, usage = os.wait4(child.pid, 0)
            walls.append(time.perf_counter() - t0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(child.stderr.read().decode() if child.stderr else "failed")
            peaks.append(usage.ru_maxrss * 1024)
            size = out.seek(0, 2)
    return statistics.median(walls), max(peaks), size


def measure(code: Path, url: str, tmp: Path, args: argparse.Namespace) -> dict[str, str]:
    """Build the data with `code`'s schema and time everything with `code`: {row: figure}."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        DATABASE_URL=url,
        NDCG_INSTANCE_PATH=str(tmp / "instance"),
        NDCG_DEMO="0",
        NDCG_SECRET_KEY="bench-audit",
        NDCG_SECURE_COOKIES="0",
        PYTHONPATH=str(code),
    )
    if url.startswith("postgresql"):
        wipe(url)
    migrate(code, env)
    info = build(url, tmp, args.events, args.judgments, args.people)
    shown = pages(info, args.events)
    log(f"built; timing {len(shown)} pages with {code}")
    figures, _, worker = time_pages(env, tmp / "server.log", shown, cwd=code)
    out = {}
    for name, _url in shown:
        cold, warm, _ = figures[name]
        out[name] = f"{_ms(cold)} / {_ms(warm)}"
    out["peak RSS of the worker after the pages"] = f"{worker / MB:.0f} MB"
    with serving(env, tmp / "server.log", cwd=code) as server:
        server.get("/audit/")
        for name, (ms, size, before, after) in downloads(server).items():
            out[name] = (
                f"{_ms(ms)} for {size / MB:.0f} MB; worker peak RSS {before / MB:.0f} → "
                f"{after / MB:.0f} MB"
            )
    for as_json in (False, True):
        wall, peak, size = cli_export(code, env, as_json)
        name = "`flask audit export" + (" --json`" if as_json else "`")
        out[name] = f"{wall:.2f} s for {size / MB:.0f} MB; peak RSS {peak / MB:.0f} MB"
    return out


@contextlib.contextmanager
def old_tree(rev: str) -> Iterator[Path]:
    """The code of git revision `rev`, unpacked in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="bench-old-") as name:
        archive = subprocess.run(
            ["git", "archive", rev], cwd=ROOT, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", name], input=archive, check=True)
        yield Path(name)


def main() -> None:
    """Parse the arguments, build, measure each side, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="a PostgreSQL database to WIPE and use")
    parser.add_argument("--events", type=int, default=500_000)
    parser.add_argument("--judgments", type=int, default=200_000)
    parser.add_argument("--people", type=int, default=2000)
    parser.add_argument("--old", default=None, help="also measure this git revision's code")
    args = parser.parse_args()
    sides: dict[str, dict[str, str]] = {}
    with contextlib.ExitStack() as stack:
        codes = [("this tree", ROOT)]
        if args.old:
            codes.insert(0, (args.old, stack.enter_context(old_tree(args.old))))
        for label, code in codes:
            with tempfile.TemporaryDirectory(prefix="bench-audit-") as name:
                tmp = Path(name)
                url = args.url or f"sqlite:///{tmp / 'audit.sqlite3'}"
                sides[label] = measure(code, url, tmp, args)
    labels = list(sides)
    rows = list(sides[labels[-1]])
    print("| what (cold / warm) | " + " | ".join(labels) + " |")
    print("| --- |" + " --- |" * len(labels))
    for row in rows:
        print(f"| {row} | " + " | ".join(sides[label].get(row, "—") for label in labels) + " |")
    database = (args.url or "sqlite").split("://")[0].split("+")[0]
    print(
        f"\n`python -m bench.audit_scale` on {database}: {args.events:,} audit events, "
        f"{args.judgments:,} judgments, {args.people:,} people; {machine()}; "
        f"{time.perf_counter() - START:.0f} s in all; load average at the end "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
