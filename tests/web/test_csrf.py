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
    # Refused, in words, on the login form itself (no bare "400 · CSRF token missing").
    page = response.get_data(as_text=True)
    assert "Your session ended (its cookie is gone or no longer valid). Sign in again." in page
    assert 'value="admin"' in page and "whatever-pw" not in page
