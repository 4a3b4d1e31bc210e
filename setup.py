"""Packaging: a wheel carries the top-level templates/, static/ and migrations/ inside the package.

They stay at the top of the repository (where a maintainer looks for them); building the wheel
copies them into `ndcg_labeler/_bundled/`, where ndcg_labeler.paths finds them when the package
runs outside a checkout. Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

BUNDLED = ("templates", "static", "migrations")


class BuildWithAppFiles(build_py):
    """build_py, then the app's folders into the built package (editable installs use the tree)."""

    def run(self) -> None:
        """Build the Python packages, then copy the three folders beside them."""
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "ndcg_labeler" / "_bundled"
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for name in BUNDLED:
            shutil.copytree(name, target / name, dirs_exist_ok=True, ignore=ignore)


setup(cmdclass={"build_py": BuildWithAppFiles})
