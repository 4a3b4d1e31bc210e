"""Front doors that import a module when one of its names is first used (PEP 562).

A package's `__init__.py` writes its imports once, inside `if TYPE_CHECKING:` (so type
checkers and editors see every name), and ends with `__getattr__ = lazy.front_door(__name__,
__file__)`: the names load their module on first use. A command process then pays only for the
modules it uses: `flask run list` reads stored list lines and needs neither numpy nor the
scoring package, which the eager front doors pulled in (see docs/architecture/decisions.md,
"Start-up of a command").

lazy_loader (scientific-python) does the same from a `.pyi` stub, but drops `as` renames
(`from .bm25 import Settings as Bm25Settings`) and needs a second file per package.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from typing import Any


def deferred_imports(init_file: str) -> dict[str, tuple[str, str]]:
    """Exported name -> (module, attribute) of the relative imports under `if TYPE_CHECKING:`."""
    with open(init_file, encoding="utf-8") as source:
        tree = ast.parse(source.read(), init_file)
    where: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.level == 1 and statement.module:
                for alias in statement.names:
                    where[alias.asname or alias.name] = (statement.module, alias.name)
    return where


def front_door(package: str, init_file: str) -> Callable[[str], Any]:
    """The package's module `__getattr__`: import a name's module when it is first asked for,
    then keep the name in the package so that later uses cost nothing."""
    where = deferred_imports(init_file)

    def __getattr__(name: str) -> Any:
        found = where.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = found
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
