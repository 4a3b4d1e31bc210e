"""CSRF protection is on outside tests: a form post without a token is refused."""

from __future__ import annotations

from pathlib import Path

from ndcg_labeler.factory import create_app


def test_post_without_token_is_rejected(tmp_path: Path, sqlite_template: Path) -> None:
    import shutil

    db_path = tmp_path / "csrf.sqlite3"
    shutil.copy(sqlite_template, db_path)
    app = create_app(
        {
            "TESTING": True,
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{db_path}",
            "INSTANCE_PATH": str(tmp_path),
        }
    )
    client = app.test_client()
    response = client.post("/login", data={"username": "admin", "password": "whatever-pw"})
    assert response.status_code == 400
    assert b"CSRF" in response.data
