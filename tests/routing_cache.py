"""Werkzeug compiles two URL builder functions per route for every app: ~0.7 ms a route, so
creating the test app (one per test, 100+ routes) spent ~0.1 s in `compile()`, about 120 s of
the suite's wall time. The builders depend only on the rule's parsed parts, its defaults and
its converters, so tests share one compiled builder per distinct rule. Applied by
tests/factory.py; the app itself never loads this."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from werkzeug.routing.rules import Rule

_BUILDERS: dict[tuple[Any, ...], Callable[..., tuple[str, str]]] = {}
_compile_builder = Rule._compile_builder


def _cached_compile_builder(self: Rule, append_unknown: bool = True) -> Any:
    """Rule._compile_builder, once per distinct (rule, parts, defaults, converters) key."""
    defaults = self.defaults or {}
    # The builder calls the rule's own converters at build time; only a default that fills a
    # placeholder is converted (to a constant) while compiling.
    key = (
        self.rule,
        append_unknown,
        tuple(self._trace),
        tuple(sorted((name, repr(value)) for name, value in defaults.items())),
        tuple(
            sorted(
                (name, type(conv).__qualname__, conv.to_url(defaults[name]))
                for name, conv in self._converters.items()
                if name in defaults
            )
        ),
    )
    builder = _BUILDERS.get(key)
    if builder is None:
        builder = _BUILDERS[key] = _compile_builder(self, append_unknown)
    return builder


def install() -> None:
    """Share compiled URL builders between the apps this test process creates."""
    Rule._compile_builder = _cached_compile_builder  # type: ignore[method-assign]
