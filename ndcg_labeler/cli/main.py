"""`ndcg-labeler`: every `flask --app app` command from any directory, for an installed copy.

`pip install .` puts this on the PATH (pyproject.toml's [project.scripts]). It is Flask's own
command group with the app built by ndcg_labeler.entry, so `ndcg-labeler run upload ...` is
`flask --app app run upload ...`, plus `serve`: what `make serve` does.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any

import click
from flask.cli import FlaskGroup

from ndcg_labeler import config, runtime


def _command(*args: str) -> list[str]:
    """This command line again, as a child process (the same interpreter and environment)."""
    return [sys.executable, "-m", "ndcg_labeler.cli.main", *args]


@click.command("serve")
@click.option("--host", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=5000, show_default=True, help="Port to listen on.")
@click.option("--workers", default=4, show_default=True, help="gunicorn worker processes.")
@click.option(
    "--migrate/--no-migrate",
    default=True,
    show_default=True,
    help="Bring the database to the newest schema and create the first admin first.",
)
def serve(host: str, port: int, workers: int, migrate: bool) -> None:
    """Serve with gunicorn and run the job worker beside it; Ctrl-C or SIGTERM stops both."""
    if migrate:
        subprocess.run(_command("db", "upgrade"), check=True)
        subprocess.run(_command("bootstrap"), check=True)
    children = [subprocess.Popen(_command("jobs", "worker"))]
    gunicorn = [
        sys.executable, "-m", "gunicorn", "--workers", str(workers),
        "--timeout", str(config.web_timeout()),
        "--bind", f"{host}:{port}", "ndcg_labeler.entry:make_app()",
    ]  # fmt: skip
    children.append(subprocess.Popen(gunicorn))

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        children[-1].wait()
    except KeyboardInterrupt:
        pass
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            child.wait(timeout=30)


def main() -> None:
    """The `ndcg-labeler` console script."""
    runtime.apply()
    group = FlaskGroup(
        name="ndcg-labeler",
        help="ndcg-labeler: graded relevance labels and trec_eval-exact NDCG.",
        create_app=_create_app,
    )
    group.add_command(serve)
    group.main(prog_name="ndcg-labeler")


def _create_app() -> Any:
    from ndcg_labeler.entry import make_app

    return make_app()


if __name__ == "__main__":
    main()
