"""The labeling loop's pace in a real browser (a script, not a test; issue 11, point 9).

`python -m bench.labeling_pace [--grades 100]` builds a SQLite test set of enough pairs, serves
the app on 127.0.0.1 (werkzeug, threaded, as the browser tests do), logs in with Debian's
Chromium through Playwright and grades with the keyboard: for each grade, the time from the
keypress to the next pair's page being shown (its chunk panel present). It prints the median,
p95 and max, then stops the server for 5 seconds, presses one more grade while it is down,
starts it again, and prints how many of the grades made are stored (lost = made - stored).

Targets (issue 11): median ≤ 30 ms, p95 ≤ 60 ms, 0 lost across the outage. The current loop is a
plain form POST and redirect per grade; a grade pressed while the server is down is lost.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

PASSWORD = "pace-admin-pw-1"


def _serve(app, port: int = 0):  # type: ignore[no-untyped-def]
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", port, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _build(app, pairs: int) -> int:  # type: ignore[no-untyped-def]
    from flask_migrate import upgrade

    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import Chunk, Pair, Query
    from ndcg_labeler.services import accounts, testsets

    with app.app_context():
        upgrade()
        accounts.ensure_first_admin(PASSWORD)
        test_set = testsets.create_test_set("Pace", 3)
        for i in range(pairs // 10):
            query = Query(test_set_id=test_set.id, qid=f"q{i}", text=f"refund policy {i}")
            db.session.add(query)
            db.session.flush()
            for j in range(10):
                chunk = Chunk(
                    test_set_id=test_set.id, docid=f"d{i}-{j}", text=f"Refunds text {i} {j}. " * 20
                )
                db.session.add(chunk)
                db.session.flush()
                db.session.add(
                    Pair(test_set_id=test_set.id, query_id=query.id, chunk_id=chunk.id, priority=j)
                )
        db.session.flush()
        testsets.recount_pool(test_set.id)
        db.session.commit()
        return test_set.id


def _stored(app) -> int:  # type: ignore[no-untyped-def]
    import sqlalchemy as sa

    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import Judgment

    with app.app_context():
        db.session.remove()
        return int(db.session.scalar(sa.select(sa.func.count()).select_from(Judgment)) or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grades", type=int, default=100)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from ndcg_labeler import create_app
    from ndcg_labeler.extensions import ensure_migrate
    from tests.browser.live import log_in

    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(
            {
                "SQLALCHEMY_DATABASE_URI": f"sqlite:///{Path(tmp) / 'pace.sqlite3'}",
                "INSTANCE_PATH": tmp,
                "NDCG_DEMO": False,
                "NDCG_SECURE_COOKIES": False,
            }
        )
        ensure_migrate(app)
        test_set_id = _build(app, args.grades + 50)
        server = _serve(app)
        port = server.server_port
        base = f"http://127.0.0.1:{port}"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page()
            log_in(page, base, password=PASSWORD)
            page.goto(f"{base}/test-sets/{test_set_id}/label")
            page.wait_for_selector(".chunk-panel")
            times = []
            for n in range(args.grades):
                shown = page.locator(".chunk-panel .panel-kicker code").inner_text()
                started = time.perf_counter()
                page.keyboard.press(str(n % 4))
                page.wait_for_function(
                    "d => document.querySelector('.chunk-panel .panel-kicker code')"
                    " && document.querySelector('.chunk-panel .panel-kicker code').textContent"
                    " !== d",
                    arg=shown,
                )
                times.append((time.perf_counter() - started) * 1000)
            made = args.grades
            server.shutdown()
            server.server_close()
            down_at = time.perf_counter()
            page.keyboard.press("2")  # a grade while the server is down
            made += 1
            time.sleep(max(0.0, 5.0 - (time.perf_counter() - down_at)))
            server = _serve(app, port)
            time.sleep(3.0)  # time for anything the page retries
            stored = _stored(app)
            server.shutdown()
            browser.close()
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    print(f"keypress to next pair over {len(times)} grades (SQLite, local server):")
    print(
        f"  median {statistics.median(times):.1f} ms   p95 {p95:.1f} ms   max {max(times):.1f} ms"
    )
    print("  targets: median <= 30 ms, p95 <= 60 ms")
    print(f"server stopped 5 s: grades made {made}, stored {stored}, lost {made - stored}")


if __name__ == "__main__":
    main()
