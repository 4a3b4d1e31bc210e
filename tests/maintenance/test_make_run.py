"""`make run`'s server and job worker both stop on a SIGTERM to make (no lingering dev server).

The test runs `make dev-server` (what `make run` starts after setup and migration) through an
outer make, as `make run` does, on a free port with a temporary instance folder, sends SIGTERM
to the outer make only, and checks that the port is free again and that no process of the
session remains.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.paths import REPO

MAKE = shutil.which("make")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _session(sid: int) -> list[str]:
    """Processes whose session id is `sid`, as 'pid command' (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue  # gone meanwhile
        # Fields after the command's closing parenthesis: state ppid pgrp session ...
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(f"{entry.name} {cmdline}")
    return found


@pytest.mark.skipif(MAKE is None or not Path("/proc").exists(), reason="needs make and /proc")
def test_sigterm_to_make_stops_the_server_and_the_worker(tmp_path: Path) -> None:
    port = _free_port()
    bin_dir = Path(sys.executable).parent
    wrapper = tmp_path / "Makefile"
    # As `make run` does: an outer make whose recipe runs $(MAKE) dev-server.
    wrapper.write_text(
        f"run:\n\t@$(MAKE) --no-print-directory -C {REPO} dev-server BIN={bin_dir} PORT={port}\n"
    )
    env = {
        **os.environ,
        "NDCG_INSTANCE_PATH": str(tmp_path / "instance"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'instance' / 'ndcg.sqlite3'}",
        "NDCG_SECRET_KEY": "make-run-test",
    }
    env.pop("MAKEFLAGS", None)
    outer = subprocess.Popen(
        [MAKE, "-f", str(wrapper), "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own session: every child is found by the session id
    )
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            assert outer.poll() is None, "make ended before the server listened"
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.2)
        assert any("jobs worker" in p for p in _session(outer.pid)), _session(outer.pid)
        outer.send_signal(signal.SIGTERM)  # make only, as `kill <make's pid>` does
        outer.wait(timeout=30)
        deadline = time.monotonic() + 15
        while (_session(outer.pid) or _listening(port)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _listening(port), "the dev server still listens"
        assert _session(outer.pid) == [], "processes of `make run` remain"
    finally:
        if outer.poll() is None:
            outer.kill()
        for line in _session(outer.pid):
            os.kill(int(line.split()[0]), signal.SIGKILL)  # only this test's own session
