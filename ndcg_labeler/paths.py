"""Where the app's files are: a checkout's top-level folders, or the copies bundled in a wheel.

In a checkout (and an editable install) `templates/`, `static/` and `migrations/` sit beside
the package, and the instance folder is `instance/` there. A wheel (`pip install .`) carries
copies of the three folders inside the package (`_bundled/`, see setup.py) and keeps its
instance folder in the user's data directory, since site-packages is no place for a database.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CHECKOUT = PACKAGE.parent
BUNDLED = PACKAGE / "_bundled"


def in_checkout() -> bool:
    """True when the package runs from its source tree (app.py and pyproject.toml beside it)."""
    return (CHECKOUT / "app.py").is_file() and (CHECKOUT / "pyproject.toml").is_file()


def data_folder(name: str) -> Path:
    """`templates`, `static` or `migrations`: the checkout's, else the wheel's bundled copy."""
    return CHECKOUT / name if in_checkout() else BUNDLED / name


def default_instance() -> Path:
    """`instance/` in a checkout; else `$XDG_DATA_HOME/ndcg-labeler` (~/.local/share/...)."""
    if in_checkout():
        return CHECKOUT / "instance"
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "ndcg-labeler"
