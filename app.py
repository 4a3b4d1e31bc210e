"""Entry point: `flask --app app ...` and `gunicorn app:app`.

Loaded by the `flask` command line (inside its click context), the app is built light (see
`ndcg_labeler.LabelerApp`): a command imports what it needs when it runs, and `flask --help`
loads neither the database layer nor the views. A WSGI server gets the whole app at import,
so a worker's first request pays for nothing more.
"""

import click

from ndcg_labeler import create_app, runtime

runtime.apply()  # before create_app: its imports load numpy and pyarrow, which read the knobs
app = create_app(defer=click.get_current_context(silent=True) is not None)
