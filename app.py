"""Entry point: `flask --app app ...` and `gunicorn app:app` (ndcg_labeler.entry builds it)."""

from ndcg_labeler.entry import make_app

app = make_app()
