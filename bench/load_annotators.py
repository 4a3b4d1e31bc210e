"""16 annotators grading at once under gunicorn -w 4 (issue 12, full size; a script).

`python -m bench.load_annotators [--annotators 16] [--grades 200] [--database-url URL]` builds a
test set wanting 3 judgments per pair (a fresh SQLite file in WAL mode unless a database URL
is given: it must be empty), starts gunicorn with 4 workers as `make serve` does, and has each
annotator log in separately and grade through the HTTP forms as fast as it can. Then it
compares what the clients were acknowledged with what is stored and prints: grades acked and
stored, lost, duplicated, pairs over their target, grade POST p50/p95/max, 5xx and
"database is locked" counts. The reduced run is tests/reliability/.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path

from tests.factory import PASSWORD, build, make_app, make_user
from tests.reliability.annotators import run_annotators, start_server, stored_judgments

TARGET = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=16)
    parser.add_argument("--grades", type=int, default=200)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    from flask_migrate import upgrade

    from ndcg_labeler.extensions import db, ensure_migrate

    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'load.sqlite3'}"
        app = make_app(Path(tmp), url)
        ensure_migrate(app)
        with app.app_context():
            upgrade()
        users = [f"ann{i:02d}" for i in range(args.annotators)]
        ids = tuple(make_user(app, name) for name in users)
        queries = args.annotators * args.grades // TARGET // 10 + 20
        pool = {f"q{i}": [f"d{i}-{j}" for j in range(10)] for i in range(queries)}
        built = build(app, "Load", pool=pool, target=TARGET, members=ids)
        with app.app_context():
            db.engine.dispose()
        server, base = start_server(url, Path(tmp))
        try:
            tally = run_annotators(base, users, PASSWORD, built.test_set_id, args.grades)
        finally:
            server.terminate()
            server.wait(timeout=30)
        rows = stored_judgments(app)
    acked = sum(len(v) for v in tally.acknowledged.values())
    per_pair = Counter((q, c) for _, q, c in rows)
    duplicated = len(rows) - len(set(rows))
    print(
        f"{args.annotators} annotators × {args.grades} grades, gunicorn -w 4, {url.split(':')[0]}"
    )
    print(f"  {tally.summary()}")
    print(
        f"  stored {len(rows)}, lost {acked - len(rows)}, duplicated {duplicated}, "
        f"pairs over their target {sum(n > TARGET for n in per_pair.values())}"
    )


if __name__ == "__main__":
    main()
