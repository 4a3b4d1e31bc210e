"""The README's dashboard screenshots, taken on the demo set: `python docs/screenshots/take.py`.

Builds a throw-away instance (demo test set, its two runs, a few extra grades so that every
query has some), serves it on a free port and drives Debian's Chromium with Playwright.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from flask_migrate import upgrade  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from ndcg_labeler.extensions import (  # noqa: E402
    db,
    ensure_migrate,
)
from ndcg_labeler.factory import create_app  # noqa: E402
from ndcg_labeler.models import Query, User  # noqa: E402
from ndcg_labeler.services import testsets  # noqa: E402
from ndcg_labeler.services.testsets import load_demo_runs  # noqa: E402
from tests.runs.helpers import grade  # noqa: E402

OUT = Path(__file__).resolve().parent
PASSWORD = "screenshot-pw-1"
# Grades a second annotator gave to the other demo queries (q1 carries the tutorial's labels);
# chunk_63/64 of q3 and chunk_08/91 of q4 stay unjudged, so the drill-down has some to grade.
EXTRA_GRADES = {
    "q2": {"chunk_51": 3, "chunk_52": 2, "chunk_53": 1, "chunk_54": 0},
    "q3": {"chunk_61": 3, "chunk_62": 2, "chunk_33": 0},
    "q4": {"chunk_71": 3, "chunk_73": 2, "chunk_72": 1},
    "q5": {"chunk_81": 3, "chunk_82": 2, "chunk_83": 0, "chunk_33": 0},
}


def build(instance: Path) -> tuple[object, int, list[int], int]:
    """The app over a fresh database with the demo, its runs and the extra grades."""
    app = create_app(
        {
            "SECRET_KEY": "screenshots",
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{instance / 'db.sqlite3'}",
            "NDCG_DEMO": False,
            "INSTANCE_PATH": str(instance),
        }
    )
    ensure_migrate(app)
    with app.app_context():
        upgrade()
        admin = User(username="admin", role="admin", active=True)
        admin.set_password(PASSWORD)
        db.session.add(admin)
        db.session.commit()
        test_set, _ = testsets.load_demo()
        runs = load_demo_runs(test_set)
        for qid, grades in EXTRA_GRADES.items():
            for docid, value in grades.items():
                grade(test_set, qid, docid, value, "maria")
        query_id = db.session.scalar(
            db.select(Query.id).where(Query.test_set_id == test_set.id, Query.qid == "q3")
        )
        return app, test_set.id, [r.id for r in runs], query_id


def main() -> None:
    """Serve, log in, and save one full-page PNG per dashboard page."""
    instance = Path(tempfile.mkdtemp(prefix="ndcg-shots-"))
    try:
        app, ts, runs, q3 = build(instance)
        server = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_port}"
        pages = {
            "dashboard-overview": f"/test-sets/{ts}/dashboard/?k=5",
            "dashboard-run-queries": f"/test-sets/{ts}/dashboard/runs/{runs[0]}?k=5",
            "dashboard-drilldown": f"/test-sets/{ts}/dashboard/runs/{runs[0]}/queries/{q3}/?k=5",
            "dashboard-compare": f"/test-sets/{ts}/dashboard/compare/?k=5",
        }
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium",
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.goto(base + "/login")
            page.fill("#username", "admin")
            page.fill("#password", PASSWORD)
            page.click("button[type=submit], input[type=submit]")
            page.wait_for_url(base + "/")
            for name, url in pages.items():
                page.goto(base + url)
                path = OUT / f"{name}.png"
                page.screenshot(path=str(path), full_page=True)
                print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")
            browser.close()
        server.shutdown()
    finally:
        shutil.rmtree(instance, ignore_errors=True)


if __name__ == "__main__":
    main()
