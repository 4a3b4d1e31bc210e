"""`pip install .`: the declared dependencies, the `ndcg-labeler` command, and a wheel's layout.

A wheel is built by setup.py's build_py, which bundles templates/, static/ and migrations/
into the package. The test runs that step into a temporary folder and then uses the built
package from another directory, as an installed copy runs: migrate, bootstrap, serve.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _pins() -> dict[str, str]:
    """requirements.txt's packages (lower-case names) and their pinned versions."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            pins[requirement.name.lower()] = next(iter(requirement.specifier)).version
    return pins


def test_pyproject_declares_every_pinned_requirement_in_a_range_holding_the_pin() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {Requirement(r).name.lower(): Requirement(r) for r in project["dependencies"]}
    pins = _pins()
    assert sorted(declared) == sorted(pins)
    wrong = {name: str(declared[name].specifier) for name, pin in pins.items()
             if not declared[name].specifier.contains(pin)}  # fmt: skip
    assert wrong == {}, f"ranges that exclude the pinned version: {wrong}"
    assert project["scripts"] == {"ndcg-labeler": "ndcg_labeler.cli.main:main"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package as a wheel holds it (setup.py's build_py into a temporary folder)."""
    lib = tmp_path_factory.mktemp("wheel") / "lib"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    return lib


def test_the_wheel_carries_templates_static_files_and_migrations(built: Path) -> None:
    bundled = built / "ndcg_labeler" / "_bundled"
    for name in ("templates", "static", "migrations"):
        in_tree = {p.relative_to(ROOT / name) for p in (ROOT / name).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts}  # fmt: skip
        in_wheel = {p.relative_to(bundled / name) for p in (bundled / name).rglob("*")
                    if p.is_file()}  # fmt: skip
        assert in_tree and in_tree == in_wheel, name


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_installed_command_migrates_bootstraps_and_serves_from_anywhere(
    built: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NDCG_", "FLASK_"))}
    env.update(
        PYTHONPATH=str(built),  # ahead of the checkout's editable install
        XDG_DATA_HOME=str(tmp_path / "data"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'ndcg.sqlite3'}",
        NDCG_ADMIN_PASSWORD="a-long-Passphrase-9",
        NDCG_DEMO="0",
    )
    command = [sys.executable, "-m", "ndcg_labeler.cli.main"]
    where = subprocess.run(
        [sys.executable, "-c", "import ndcg_labeler.paths as p; print(p.in_checkout())"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert where.stdout.strip() == "False"
    subprocess.run([*command, "db", "upgrade"], cwd=tmp_path, env=env, check=True,
                   capture_output=True)  # fmt: skip
    # The instance folder (the generated secret key) is in the user's data directory.
    assert (tmp_path / "data" / "ndcg-labeler" / "secret_key").is_file()
    subprocess.run([*command, "testset", "create", "Help desk"], cwd=tmp_path, env=env,
                   check=True, capture_output=True)  # fmt: skip
    listed = subprocess.run([*command, "testset", "list"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert "Help desk" in listed.stdout
    port = _free_port()
    server = subprocess.Popen(
        [*command, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        page = _wait_for(f"http://127.0.0.1:{port}/login")
        assert page.status_code == 200 and "Log in" in page.text
        css = httpx.get(f"http://127.0.0.1:{port}/static/css/app.css")
        assert css.status_code == 200
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
    # SIGTERM stopped gunicorn and the job worker: nothing of the session is left.
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-s", str(server.pid)], capture_output=True, text=True)
    assert left.stdout.strip() == ""
    with pytest.raises(httpx.ConnectError):  # nothing listens on the port any more
        httpx.get(f"http://127.0.0.1:{port}/login")


def _wait_for(url: str, seconds: float = 60.0) -> httpx.Response:
    deadline = time.monotonic() + seconds
    while True:
        try:
            return httpx.get(url)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
