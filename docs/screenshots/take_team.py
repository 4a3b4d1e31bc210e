"""Screenshots of the team pages (agreement, review, a pair, people, policies) on the demo set.

`python docs/screenshots/take_team.py`: a throw-away instance with the demo test set, its two
runs and three annotators who grade every pair with some deliberate disagreement.
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import threading
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402
from flask_migrate import upgrade  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from ndcg_labeler.extensions import (  # noqa: E402
    db,
    ensure_migrate,
)
from ndcg_labeler.factory import create_app  # noqa: E402
from ndcg_labeler.models import Chunk, Judgment, Pair, Query, TestSetMember, User  # noqa: E402
from ndcg_labeler.models._common import utcnow  # noqa: E402
from ndcg_labeler.services import labeling, testsets  # noqa: E402
from ndcg_labeler.services.testsets import load_demo_runs  # noqa: E402

OUT = Path(__file__).resolve().parent
PASSWORD = "screenshot-pw-1"
NOTES = {
    "sam": "Mentions the policy but not the number of days asked for.",
    "li": "Outdated version of the handbook?",
}


def build(instance: Path) -> tuple[object, int, tuple[int, int]]:
    """The app with the demo, its runs and three annotators' overlapping grades."""
    app = create_app(
        {
            "SECRET_KEY": "screenshots",
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{instance / 'db.sqlite3'}",
            "NDCG_DEMO": False,
            "INSTANCE_PATH": str(instance),
        }
    )
    ensure_migrate(app)
    rng = random.Random(7)
    with app.app_context():
        upgrade()
        admin = User(username="admin", role="admin", active=True)
        admin.set_password(PASSWORD)
        db.session.add(admin)
        test_set, _ = testsets.load_demo()
        load_demo_runs(test_set)
        test_set.judgments_per_pair = 3
        people = []
        for name in ("maria", "li", "sam"):
            user = User(username=name, role="annotator", active=True)
            user.set_password(PASSWORD)
            db.session.add(user)
            db.session.flush()
            db.session.add(TestSetMember(test_set_id=test_set.id, user_id=user.id))
            people.append(user)
        db.session.commit()
        pairs = db.session.execute(
            sa.select(Pair, Query, Chunk)
            .join(Query, Query.id == Pair.query_id)
            .join(Chunk, Chunk.id == Pair.chunk_id)
            .where(Pair.test_set_id == test_set.id)
            .order_by(Pair.id)
        ).all()
        for i, (_, query, chunk) in enumerate(pairs):
            truth = rng.choice([0, 0, 1, 2, 3])
            for user in people:
                late = i > len(pairs) // 2  # sam settles in: fewer wild grades later on
                drift = {"maria": 0, "li": rng.choice([0, 0, 0, 1]), "sam": 0}[user.username]
                if user.username == "sam" and rng.random() < (0.15 if late else 0.45):
                    drift = rng.choice([-2, 2])
                status = "graded"
                if user.username == "li" and i % 9 == 4:
                    status = "cant_tell"
                grade = min(3, max(0, truth + drift)) if status == "graded" else None
                note = NOTES.get(user.username, "") if drift or status != "graded" else ""
                labeling.save_judgment(
                    test_set,
                    query,
                    chunk,
                    user,
                    status=status,
                    grade=grade,
                    note=note,
                    active_ms=rng.randint(4000, 25000),
                )
        start = utcnow() - timedelta(days=21)
        for n, judgment in enumerate(db.session.scalars(sa.select(Judgment).order_by(Judgment.id))):
            judgment.updated_at = start + timedelta(hours=n * 3)
        db.session.commit()
        first = db.session.execute(
            sa.text(
                "SELECT query_id, chunk_id FROM judgment WHERE status = 'graded' GROUP BY "
                "query_id, chunk_id ORDER BY MAX(grade) - MIN(grade) DESC LIMIT 1"
            )
        ).one()
        return app, test_set.id, (first[0], first[1])


def main() -> None:
    """Serve, log in, and save one PNG per team page."""
    instance = Path(tempfile.mkdtemp(prefix="ndcg-team-shots-"))
    try:
        app, ts, (q, c) = build(instance)
        server = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_port}"
        pages = {
            "team-agreement": f"/test-sets/{ts}/agreement",
            "team-review": f"/test-sets/{ts}/review",
            "team-review-pair": f"/test-sets/{ts}/review/{q}/{c}",
            "team-people": f"/test-sets/{ts}/people",
            "team-policies": f"/test-sets/{ts}/policies",
        }
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium",
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(base + "/login")
            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit], input[type=submit]")
            page.wait_for_load_state("networkidle")
            for name, path in pages.items():
                page.goto(base + path)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
            browser.close()
        server.shutdown()
    finally:
        shutil.rmtree(instance, ignore_errors=True)


if __name__ == "__main__":
    main()
