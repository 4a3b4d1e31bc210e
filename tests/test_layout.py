"""The house rules of the code layout (docs/architecture/where-things-are.md), checked on every run.

Each rule failed at least once before it was written down: a flat services/ folder of 34 files,
private helpers called across modules, pure packages that imported Flask.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ndcg_labeler"
SERVICES = PACKAGE / "services"
MAX_LINES = 500
# A front door wider than this is two concepts: split the package (aim for 20 or fewer).
MAX_DOOR = 25
# Where service packages are called from the outside: one way to import them.
CALLERS = ("views", "cli", "forms")
# What the pure packages may never import (no web framework, no database, nothing above them).
IMPURE = ("flask", "flask_sqlalchemy", "flask_login", "flask_wtf", "sqlalchemy", "werkzeug")
ABOVE_PURE = ("ndcg_labeler.services", "ndcg_labeler.views", "ndcg_labeler.cli")
PURE = ("ndcg_labeler.scoring", "ndcg_labeler.formats")


def _modules() -> Iterator[Path]:
    yield from sorted(PACKAGE.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[tuple[str, list[str], int]]:
    """(absolute module, imported names, line) of every import in the file."""
    here = _module_name(path)
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = here.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join([*base, module] if module else base)
            yield module, [alias.name for alias in node.names], node.lineno


def test_services_are_area_packages() -> None:
    loose = sorted(
        p.name
        for p in SERVICES.glob("*.py")
        if p.name not in ("__init__.py", "_db.py", "_progress.py", "_figures_cache.py")
    )
    assert loose == [], f"services/ holds only area packages and its shared helpers: {loose}"
    for package in (p for p in SERVICES.iterdir() if p.is_dir() and p.name != "__pycache__"):
        init = package / "__init__.py"
        assert init.exists(), f"{package.name} is not a package"
        assert "__all__" in init.read_text(), f"services/{package.name}/__init__.py lacks __all__"


@pytest.mark.parametrize("path", list(_modules()), ids=lambda p: str(p.relative_to(ROOT)))
def test_files_stay_small(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_LINES})"


def test_no_module_imports_another_modules_private_names() -> None:
    found = []
    for path in _modules():
        for module, names, line in _imports(path):
            if not module.startswith("ndcg_labeler"):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {private} from {module}")
    assert found == []


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def test_no_module_reaches_into_another_modules_private_attributes() -> None:
    """`grades._combine(...)` through a module alias is as private as importing `_combine`."""
    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ndcg_labeler"):
                for alias in node.names:
                    if _is_module(f"{node.module}.{alias.name}"):
                        aliases.add(alias.asname or alias.name)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(
                    f"{path.relative_to(ROOT)}:{node.lineno} uses {node.value.id}.{node.attr}"
                )
    assert found == []


def _area(module: str) -> str | None:
    """'ndcg_labeler.services.live.engine' -> 'live'; None outside the area packages."""
    parts = module.split(".")
    if (
        len(parts) >= 3
        and parts[:2] == ["ndcg_labeler", "services"]
        and not parts[2].startswith("_")
    ):
        return parts[2]
    return None


def test_callers_import_area_packages_not_their_modules() -> None:
    found = []
    for path in _modules():
        mine = _area(_module_name(path))
        for module, _names, line in _imports(path):
            area = _area(module)
            if area is not None and area != mine and module.count(".") > 2:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert found == [], "import the package (from ndcg_labeler.services import X) instead"


def _areas() -> list[Path]:
    return sorted(p for p in SERVICES.iterdir() if (p / "__init__.py").exists())


# Strict: the day these doors are narrowed, the mark fails and must go.
@pytest.mark.parametrize(
    "package",
    _areas(),
    ids=lambda p: p.name,
)
def test_front_doors_stay_narrow(package: Path) -> None:
    """`__all__` lists only what other packages use; more than MAX_DOOR names is two packages."""
    tree = ast.parse((package / "__init__.py").read_text())
    names = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    )
    assert len(names) <= MAX_DOOR, f"services/{package.name} exports {len(names)} names"


def test_views_and_cli_import_service_packages_one_way() -> None:
    """`from ndcg_labeler.services import testsets`, then `testsets.create_test_set(...)`."""
    areas = {p.name for p in _areas()}
    found = []
    for caller in CALLERS:
        for path in sorted((PACKAGE / caller).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.ImportFrom) and _area(node.module or "") is not None:
                    found.append(f"{where} imports from {node.module}")
                elif isinstance(node, ast.ImportFrom) and node.module == "ndcg_labeler.services":
                    renamed = [a.name for a in node.names if a.name in areas and a.asname]
                    if renamed:
                        found.append(f"{where} renames {renamed}")
                elif isinstance(node, ast.Import):
                    found += [f"{where} imports {a.name}" for a in node.names if _area(a.name)]
    assert found == []


def test_model_helpers_come_through_the_models_door() -> None:
    """`utcnow` and the other shared column helpers are imported from `ndcg_labeler.models`."""
    found = []
    everywhere = [
        *_modules(),
        *sorted((ROOT / "tests").rglob("*.py")),
        *(ROOT / "bench").rglob("*.py"),
    ]
    for path in everywhere:
        if _module_name(path).startswith("ndcg_labeler.models"):
            continue
        for module, _names, line in _imports(path):
            if module == "ndcg_labeler.models._common":
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert found == [], "import the helpers from ndcg_labeler.models"


@pytest.mark.parametrize("package", ["scoring", "formats"])
def test_pure_packages_import_no_framework(package: str) -> None:
    found = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for module, _names, line in _imports(path):
            if module.split(".")[0] in IMPURE or module.startswith(ABOVE_PURE):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert found == []


def test_pure_packages_are_imported_as_packages() -> None:
    """`from ndcg_labeler.scoring import X` with X in its `__all__`, never a module inside scoring
    or formats: the front door lets their modules be re-cut without touching the callers."""
    doors = {package: set(importlib.import_module(package).__all__) for package in PURE}
    found = []
    outside = [ROOT / "migrations", ROOT / "bench"]
    for path in [*_modules(), *(p for folder in outside for p in sorted(folder.rglob("*.py")))]:
        here = _module_name(path)
        for module, names, line in _imports(path):
            for package, door in doors.items():
                if here == package or here.startswith(f"{package}."):
                    continue
                if module.startswith(f"{package}."):
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
                elif module == package and not door.issuperset(names):
                    behind = sorted(set(names) - door)
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {behind} from {module}")
    assert found == [], "import the package (from ndcg_labeler.scoring import X) instead"


def test_arrows_point_one_way() -> None:
    """views/cli -> services -> (models, scoring, formats); nothing imports views or cli."""
    found = []
    for path in _modules():
        here = _module_name(path)
        for module, _names, line in _imports(path):
            for upper in ("ndcg_labeler.views", "ndcg_labeler.cli"):
                if (
                    module.startswith(upper)
                    and not here.startswith(upper)
                    and here != "ndcg_labeler.factory"
                ):
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
            lower = here.startswith(("ndcg_labeler.models", "ndcg_labeler.scoring"))
            if lower and module.startswith("ndcg_labeler.services"):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert found == []
