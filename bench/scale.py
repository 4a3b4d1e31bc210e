"""Scale benchmark: labeling, dashboards, team pages, the CLI and server memory (issue 10, item 7).

`python -m bench.scale [--quick] [--url URL]` builds every size itself in a temporary directory
(SQLite there, or the EMPTY database `--url` names, e.g. PostgreSQL) and prints one table:

a. labeling: the GET's service work (next_pair + progress) and the grade save, p50/p95 over 200
   requests of 20 annotators, at pools of 10k, 100k and 1M pairs (bench.labeling_scale);
b. dashboard pages (overview, a run's query table, one query's drill-down, compare, its
   statistics fragment and its JSON download) over HTTP at 1k and 7k queries with 1, 3 and 6
   runs of depth 1,000 (run 1 is bench.run_bench's generated run, the others
   bench.dashboard_pages.derived_run of it with other seeds), uploaded through the upload
   service;
c. agreement, people and the disagreement review queue (and the agreement JSON and people CSV
   downloads) at 10k, 60k and 200k graded judgments
   (bench.labeling_scale.team_set: 5 raters per pair, every pair disputed);
d. `flask run list` and `flask run score` with 5 runs, each its own process (the median of
   three processes each);
e. the peak RSS (VmHWM) of the server's worker after it served every page of a size.

Pages are served by `gunicorn -w 1` on a free port and asked with requests after logging in.
Cold is the first GET of the page in a freshly started server (one server per page; for the
team pages and the comparison's statistics, with their stored figures deleted first, so the
page computes them; above 50k
judgments it answers 202 "computing" and computes them in the background, as the comparison's
statistics fragment does at any size above 2,000 queries: cold is then the time until the page
shows them, asked again every 0.1 s, with the 202's own time in brackets);
warm is the median of 5 GETs in a server that has already served every page of that size.
`--quick`: pools 10k/100k, 700 queries, 10k/60k judgments. Targets are checked at the largest
size measured (the issue's sizes unless --quick). The machine's load is printed: on a shared
machine the wall times move with it.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.cli import FLASK
from bench.dashboard_pages import PASSWORD, derived_run
from bench.labeling_scale import _app, labeling, make_users, team_set
from bench.run_bench import MB, ROOT, SEED, _timed, data_paths, generate, machine, median_timed
from bench.serving import ADMIN, Pages, time_pages

START = time.perf_counter()


def log(text: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    print(f"[{time.perf_counter() - START:6.0f} s] {text}", file=sys.stderr, flush=True)


@dataclass
class Row:
    """One line of the table."""

    what: str
    size: str
    first: str
    second: str
    target: str = ""
    verdict: str = ""
    master: int = 0  # memory rows: the gunicorn master's peak RSS (bytes)
    url: str = ""  # page rows: the page, profiled cold when a target is missed
    before: Callable[[], None] | None = None  # what a cold request needs first


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


def _verdict(cold_ok: bool | None, warm_ok: bool | None = None) -> str:
    missed = [name for name, ok in (("cold", cold_ok), ("warm", warm_ok)) if ok is False]
    if not missed:
        return "met"
    both = cold_ok is not None and warm_ok is not None
    return "MISSED (" + ", ".join(missed) + ")" if both else "MISSED"


def _k(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:g}M"
    return f"{count / 1000:g}k" if count >= 1000 else str(count)


# --- b and d: dashboards and the CLI ----------------------------------------------------------


def _test_set_with_qrels(queries: int) -> tuple[int, dict[str, Path]]:
    """A test set `dash-N` with bench.run_bench's N queries and their qrels as judgments."""
    from ndcg_labeler.services import testsets
    from ndcg_labeler.services.imports import ImportFile, import_files

    paths = data_paths(queries, 1000, 40)
    generate(paths, queries, 1000, 40)
    test_set = testsets.create_test_set(f"dash-{queries}", 3)
    import_files(
        test_set,
        queries=ImportFile.from_path(paths["queries"]),
        qrels=ImportFile.from_path(paths["qrels"]),
    )
    return test_set.id, paths


def _upload(ts: int, paths: dict[str, Path], n: int, tmp: Path) -> int:
    """Run n of the test set through the upload service: the generated run, or a derived one."""
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import TestSet, User
    from ndcg_labeler.services import runs as run_service

    source = paths["run"]
    if n > 1:
        source = tmp / f"derived-{n}.trec"
        derived_run(paths["run"], source, depth=1000, seed=SEED + n, tag=f"run{n}")
    admin = db.session.scalar(db.select(User).where(User.username == ADMIN))
    run = run_service.upload_run(db.session.get_one(TestSet, ts), source, None, f"run{n}", admin)
    if n > 1:
        source.unlink()
    db.session.remove()
    return run.id


def _dashboard_urls(ts: int, runs: list[int]) -> Pages:
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import Query

    query = db.session.scalar(
        db.select(Query.id).where(Query.test_set_id == ts).order_by(Query.sort_key).limit(1)
    )
    base = f"/test-sets/{ts}/dashboard"
    pages = [
        ("overview", f"{base}/"),
        ("query table (run 1)", f"{base}/runs/{runs[0]}"),
        ("drill-down (one query)", f"{base}/runs/{runs[0]}/queries/{query}/"),
    ]
    if len(runs) >= 2:
        chosen = "&".join(f"run={r}" for r in runs)
        pages.append(("compare (all runs)", f"{base}/compare/?{chosen}"))
        pages.append(("compare statistics fragment", f"{base}/compare/_stats?{chosen}"))
        # The download computes the same statistics (202 until stored, like the fragment).
        pages.append(("compare JSON download", f"{base}/export/compare.json?{chosen}"))
    return pages


def _forget_stored(ts: int, kind: str | None = None) -> None:
    """Delete the test set's stored figures (of one kind), so that each cold request computes
    its own."""
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import FiguresCache

    stored = db.delete(FiguresCache).where(FiguresCache.test_set_id == ts)
    db.session.execute(stored if kind is None else stored.where(FiguresCache.kind == kind))
    db.session.commit()
    db.session.remove()


def cli_side(name: str) -> dict[str, float]:
    """`run list` and `run score`, each its own process, median of three (as bench.cli times them).

    Run from a small helper process (`--cli-side`): a child's ru_maxrss starts from its
    parent's peak (the memory it had when it was forked and exec'd), and this benchmark's own
    process grows to hundreds of MB while it uploads runs.
    """
    env = dict(os.environ)
    _timed([*FLASK, "run", "--help"], env)  # writes the bytecode caches; not counted
    listed, listed_rss, _ = median_timed([*FLASK, "run", "list", name], env)
    scored, scored_rss, _ = median_timed([*FLASK, "run", "score", name, "run1", "--json"], env)
    return {"list": listed, "list_rss": listed_rss, "score": scored, "score_rss": scored_rss}


def cli_rows(name: str, size: str, env: dict[str, str]) -> list[Row]:
    """d: the CLI's rows, measured by a helper process (see cli_side)."""
    helper = [sys.executable, "-m", "bench.scale", "--cli-side", name]
    found = json.loads(subprocess.run(helper, env=env, cwd=ROOT, check=True,
                                      capture_output=True, text=True).stdout)  # fmt: skip
    listed, listed_rss = found["list"], found["list_rss"]
    scored, scored_rss = found["score"], found["score_rss"]
    return [
        Row("`flask run list` (process, median of 3)", size, f"{listed:.2f} s", "", "<= 1 s",
            _verdict(listed <= 1.0)),
        Row("  its peak RSS", size, f"{listed_rss / MB:.0f} MB", "", "<= 300 MB",
            _verdict(listed_rss <= 300 * MB)),
        Row("`flask run score` (process, median of 3)", size, f"{scored:.2f} s", "", "<= 1 s",
            _verdict(scored <= 1.0)),
        Row("  its peak RSS", size, f"{scored_rss / MB:.0f} MB", "", "<= 600 MB",
            _verdict(scored_rss <= 600 * MB)),
    ]  # fmt: skip


def dashboards(
    sizes: list[int], counts: list[int], env: dict[str, str], tmp: Path
) -> tuple[list[Row], list[Row], list[Row]]:
    """b (page rows), d (CLI rows, at 5 runs of the largest size) and e (memory rows)."""
    from ndcg_labeler.extensions import db

    rows: list[Row] = []
    cli: list[Row] = []
    memory: list[Row] = []
    for queries in sizes:
        ts, paths = _test_set_with_qrels(queries)
        db.session.remove()
        log(f"test set dash-{queries}: {queries:,} queries with qrels")
        runs: list[int] = []
        for count in counts:
            while len(runs) < count:
                runs.append(_upload(ts, paths, len(runs) + 1, tmp))
                log(f"dash-{queries}: run{len(runs)} uploaded")
                if len(runs) == 5 and queries == sizes[-1]:
                    cli = cli_rows(f"dash-{queries}", f"{_k(queries)} q x 5 runs", env)
            pages = _dashboard_urls(ts, runs)
            db.session.remove()
            forget = functools.partial(_forget_stored, ts, "compare_stats")
            found, master, worker = time_pages(env, tmp / "server.log", pages, forget)
            size = f"{_k(queries)} q x {count} run{'s' if count > 1 else ''}"
            log(f"{size}: pages timed")
            target = queries == sizes[-1] and count == counts[-1]
            for name, url in pages:
                cold, warm, computing = found[name]
                if computing is None:
                    shown, goal, answered = _ms(cold), "cold <= 1 s, warm <= 300 ms", cold
                else:  # 202 at once, the figures computed in the background
                    shown = f"{_ms(cold)} (202 at {_ms(computing)})"
                    goal, answered = "answer <= 1 s, warm <= 300 ms", computing
                rows.append(
                    Row(name, size, shown, _ms(warm), goal if target else "",
                        _verdict(answered <= 1000, warm <= 300) if target else "", url=url)
                )  # fmt: skip
            memory.append(Row("peak RSS, server worker (dashboards)", size,
                              f"{worker / MB:.0f} MB", "", "<= 400 MB",
                              _verdict(worker <= 400 * MB), master))  # fmt: skip
    return rows, cli, memory


# --- a and c: labeling and team pages ---------------------------------------------------------


def labeling_rows(sizes: list[int], users: list[int]) -> list[Row]:
    """a: p50/p95 of the labeling GET's and the grade save's service work."""
    rows = []
    for found in labeling(sizes, users):
        size = f"{_k(int(found['size']))} pairs"
        target = found["size"] == sizes[-1]
        log(f"labeling at {size}: built in {found['build_s']:.0f} s")
        for what, key in (("labeling GET (next pair + progress)", "get"), ("grade POST", "post")):
            p95 = found[f"{key}_p95"]
            rows.append(
                Row(what, size, _ms(found[f"{key}_p50"]), _ms(p95),
                    "p95 <= 50 ms" if target else "", _verdict(None, p95 <= 50) if target else "")
            )  # fmt: skip
    return rows


def team_rows(
    counts: list[int], users: list[int], env: dict[str, str], tmp: Path
) -> tuple[list[Row], list[Row]]:
    """c: agreement, people and review, cold and warm; and e's memory rows."""
    from ndcg_labeler.extensions import db

    rows, memory = [], []
    for count in counts:
        ts = team_set(count, users)
        db.session.remove()
        log(f"team set with {count:,} judgments built")

        pages = [
            ("agreement page", f"/test-sets/{ts}/agreement"),
            ("people page", f"/test-sets/{ts}/people"),
            ("review queue (disagreements)", f"/test-sets/{ts}/review"),
            ("agreement JSON download", f"/test-sets/{ts}/agreement.json"),
            ("people CSV download", f"/test-sets/{ts}/people.csv"),
        ]
        forget = functools.partial(_forget_stored, ts)
        found, master, worker = time_pages(env, tmp / "server.log", pages, forget)
        size = f"{_k(count)} judgments"
        target = count == counts[-1]
        for name, url in pages:
            cold, warm, computing = found[name]
            shown = _ms(cold) if computing is None else f"{_ms(cold)} (202 at {_ms(computing)})"
            rows.append(
                Row(name, size, shown, _ms(warm), "warm <= 300 ms" if target else "",
                    _verdict(None, warm <= 300) if target else "", url=url, before=forget)
            )  # fmt: skip
        memory.append(Row("peak RSS, server worker (team pages)", size, f"{worker / MB:.0f} MB",
                          "", "<= 400 MB", _verdict(worker <= 400 * MB), master))  # fmt: skip
    return rows, memory


# --- where the time goes ----------------------------------------------------------------------


def profile_side(url: str) -> str:
    """cProfile of one cold GET of `url` in this fresh process (app created as gunicorn does,
    logged in through the test client first): the top functions by cumulative time."""
    import cProfile
    import io
    import pstats

    from app import app

    app.config["WTF_CSRF_ENABLED"] = False
    client = app.test_client()
    client.post("/login", data={"username": ADMIN, "password": PASSWORD})
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    response = profile.runcall(client.get, url)
    elapsed = time.perf_counter() - t0
    assert response.status_code in (200, 202), (url, response.status_code)
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(r"ndcg_labeler|numpy|scipy|sklearn|sqlalchemy", 14)
    lines = [line for line in out.getvalue().splitlines() if re.match(r"\s*[\d/]+\s+\d", line)]
    head = f"{url}: {elapsed * 1000:.0f} ms under cProfile; cumulative s, function"
    lines = [re.sub(r"\S*/site-packages/|" + re.escape(f"{ROOT}/"), "", line) for line in lines]
    return "\n".join(
        [head, *(f"  {line.split()[3]:>8}  {line.split(None, 5)[5]}" for line in lines)]
    )


def profiles(rows: list[Row], env: dict[str, str]) -> list[str]:
    """A cold profile of each page whose target was missed (each in a fresh process)."""
    out = []
    for row in rows:
        if row.url and row.verdict.startswith("MISSED"):
            if row.before is not None:
                row.before()
            helper = [sys.executable, "-m", "bench.scale", "--profile-side", row.url]
            done = subprocess.run(helper, env=env, cwd=ROOT, capture_output=True, text=True)
            text = done.stdout.strip() or done.stderr.strip()[-1500:]
            out.append(f"{row.what}, {row.size}: {text}")
    return out


# --- the whole ---------------------------------------------------------------------------------


def _server_env(url: str, tmp: Path) -> dict[str, str]:
    """The servers' and commands' environment (bytecode caches allowed, as bench.cli has it)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {
        **env,
        "DATABASE_URL": url,
        "NDCG_INSTANCE_PATH": str(tmp / "instance"),
        "NDCG_DEMO": "0",
        "NDCG_SECRET_KEY": "bench-scale",
        "NDCG_SECURE_COOKIES": "0",
    }


def print_table(rows: list[Row]) -> None:
    """The table as Markdown (pasted as is into bench/README.md)."""
    head = ("what", "size", "p50/first (cold)", "p95/warm", "target", "met/MISSED")
    cells = [head] + [(r.what, r.size, r.first, r.second, r.target, r.verdict) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    for n, cell in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def main() -> None:
    """Parse the arguments, build and measure every size, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a few minutes)")
    parser.add_argument("--url", default=None, help="an EMPTY database (default: SQLite in tmp)")
    parser.add_argument("--no-profile", action="store_true", help="no cProfile of misses")
    parser.add_argument("--cli-side", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--profile-side", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cli_side is not None:
        print(json.dumps(cli_side(args.cli_side)))
        return
    if args.profile_side is not None:
        print(profile_side(args.profile_side))
        return
    pools = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    queries = [700] if args.quick else [1000, 7000]
    judgments = [10_000, 60_000] if args.quick else [10_000, 60_000, 200_000]
    counts = [1, 3, 6]
    from flask_migrate import upgrade

    from ndcg_labeler.extensions import db, ensure_migrate
    from ndcg_labeler.models import User

    with tempfile.TemporaryDirectory(prefix="ndcg-scale-") as name:
        tmp = Path(name)
        url = args.url or f"sqlite:///{tmp / 'scale.sqlite3'}"
        app = _app(url, tmp)
        ensure_migrate(app)
        env = _server_env(url, tmp)
        with app.app_context():
            upgrade()
            shown = db.engine.url.render_as_string(hide_password=True)
            admin = User(username=ADMIN, role="admin", active=True)
            admin.set_password(PASSWORD)
            db.session.add(admin)
            db.session.commit()
            users = make_users()
            a = labeling_rows(pools, users)
            b, d, e1 = dashboards(queries, counts, env, tmp)
            c, e2 = team_rows(judgments, users, env, tmp)
            found = [] if args.no_profile else profiles(b + c, env)
            db.engine.dispose()
    master = max(row.master for row in e1 + e2)
    e3 = [Row("peak RSS, gunicorn master (largest)", "any", f"{master / MB:.0f} MB", "")]
    print_table(a + b + c + d + e1 + e2 + e3)
    mode = " --quick" if args.quick else ""
    print(
        f"\n`python -m bench.scale{mode}` on {shown.split('://')[0]}, {machine()}; "
        f"{time.perf_counter() - START:.0f} s in all; load average at the end "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    if found:
        print("\nWhere the time goes (cold, one request each, cProfile):", *found, sep="\n\n")


if __name__ == "__main__":
    main()
