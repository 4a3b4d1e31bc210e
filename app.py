"""WSGI entry point: `flask --app app ...` and `gunicorn app:app`."""

from ndcg_labeler import create_app

app = create_app()
