"""The prompt renderer's child process: Jinja's sandbox with limits on range(), repetition,
formatting, output size, time and memory; one JSON line in, one out (run as a script)."""

# Run as `python -I sandbox.py`, so it imports only the standard library and Jinja: a fresh
# process starts in about 0.2 s, and nothing of the app's state is within reach.
from __future__ import annotations

import json
import math
import re
import resource
import signal
import string
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, UndefinedError
from jinja2.filters import do_center, do_format, do_indent
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment, SecurityError

TIME_LIMIT = 2.0  # seconds to compile or render one prompt
MAX_OUTPUT = 200_000  # bytes of one prompt (UTF-8)
MAX_RANGE = 10_000  # items every range() of one prompt may produce together
MEMORY_LIMIT = 256 * 2**20  # address space of the child (Python and Jinja take about 30 MB)
MAX_POWER_BITS = 100_000  # the largest integer `**` may make (about 30,000 digits)

OVER = "the prompt template is over a limit: "
_PRINTF_WIDTH = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


class LimitError(Exception):
    """A template asked for more than one of the limits allows (the message says what)."""


class Deadline(BaseException):
    """The time limit passed; a BaseException so that no `except Exception` in Jinja eats it."""


def _refuse_size(size: int, what: str) -> None:
    if size > MAX_OUTPUT:
        raise LimitError(f"{what} would make more than {MAX_OUTPUT // 1000} kB")


def _check_repeat(sequence: Any, times: Any) -> None:
    if isinstance(sequence, str | bytes | list | tuple) and isinstance(times, int):
        _refuse_size(len(sequence) * times, "repeating a sequence")


def _check_power(base: Any, exponent: Any) -> None:
    numbers = isinstance(base, int) and isinstance(exponent, int)
    if (
        numbers
        and exponent > 0
        and abs(base) > 1
        and exponent * math.log2(abs(base)) > MAX_POWER_BITS
    ):
        raise LimitError(f"{base} ** {exponent} is too large a number")


def _check_format_string(text: str) -> None:
    """Refuse field widths and precisions over the size limit before Python pads anything."""
    for _, _, spec, _ in string.Formatter().parse(text):
        if spec and "{" in spec:
            raise LimitError("format() specifications may not be computed ({...} inside {...})")
        for number in re.findall(r"\d+", spec or ""):
            _refuse_size(int(number), f"the format specification '{spec}'")


def _check_printf(text: str) -> None:
    for match in _PRINTF_WIDTH.finditer(text):
        for number in match.groups():
            if number == "*":
                raise LimitError("'%' formatting may not take its width from an argument")
            if number:
                _refuse_size(int(number), f"the '%' format '{match.group(0)}'")


class LimitedSandbox(SandboxedEnvironment):
    """Jinja's sandbox, plus a range() budget per prompt and size checks on everything that can
    build a large string from a short expression (`*`, `**`, `%`, str.format, a few filters)."""

    # Also keeps Jinja's constant folding from evaluating `"a" * 10**9` while compiling.
    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self) -> None:
        # Strict: a misspelt {{ passge }} rendered as "" and every prompt went without the
        # passage; now the sample render at save time names it.
        super().__init__(autoescape=False, keep_trailing_newline=True, undefined=StrictUndefined)
        self.range_left = MAX_RANGE
        self.globals["range"] = self.limited_range
        self.filters["format"] = self.limited_format
        self.filters["center"] = self.limited_center
        self.filters["indent"] = self.limited_indent

    def limited_range(self, *args: int) -> range:
        """range(), counted against the prompt's budget of MAX_RANGE items."""
        items = range(*args)
        try:
            size = len(items)
        except OverflowError:
            size = MAX_RANGE + 1
        if size > self.range_left:
            raise LimitError(f"range() may produce at most {MAX_RANGE:,} items in one prompt")
        self.range_left -= size
        return items

    def limited_format(self, value: str, *args: Any, **kwargs: Any) -> str:
        """The `format` filter ('%' formatting), with widths checked first."""
        _check_printf(str(value))
        return do_format(value, *args, **kwargs)

    def limited_center(self, value: str, width: int = 80) -> str:
        """The `center` filter, refusing widths over the size limit."""
        _refuse_size(int(width), "center()")
        return do_center(value, width)

    def limited_indent(self, value: str, width: int | str = 4, *args: Any, **kw: Any) -> str:
        """The `indent` filter, refusing indentation that alone goes over the size limit."""
        _refuse_size(len(width) if isinstance(width, str) else int(width), "indent()")
        return do_indent(value, width, *args, **kw)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """`*` on sequences, `**` and `%` on strings, each refused when the result is too big."""
        if operator == "*":
            _check_repeat(left, right)
            _check_repeat(right, left)
        elif operator == "**":
            _check_power(left, right)
        elif operator == "%" and isinstance(left, str):
            _check_printf(left)
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """str.format and str.format_map, with widths checked first and the result measured."""
        sandboxed = super().wrap_str_format(value)
        if sandboxed is None:
            return None
        text = value.__self__

        def limited(*args: Any, **kwargs: Any) -> str:
            _check_format_string(text)
            result = sandboxed(*args, **kwargs)
            _refuse_size(len(result), "format()")
            return result

        return limited


def _on_alarm(signum: int, frame: Any) -> None:
    raise Deadline


def _timed(work: Callable[[], Any]) -> Any:
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        return work()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _stream(env: LimitedSandbox, template: Template, variables: dict[str, Any]) -> str:
    """Render chunk by chunk, stopping as soon as the prompt passes MAX_OUTPUT."""
    env.range_left = MAX_RANGE
    parts, size = [], 0
    for part in template.generate(**variables):
        size += len(part.encode("utf-8"))
        if size > MAX_OUTPUT:
            raise LimitError(f"the prompt would be longer than {MAX_OUTPUT // 1000} kB")
        parts.append(part)
    return "".join(parts)


def _failure(exc: BaseException, doing: str, names: Iterable[str] = ()) -> str:
    if isinstance(exc, UndefinedError):
        known = ", ".join(sorted(names))
        return f"the prompt template uses an undefined name: {exc} (the variables: {known})"
    if isinstance(exc, Deadline):
        return f"{OVER}it takes longer than {TIME_LIMIT:g} s to {doing}"
    if isinstance(exc, MemoryError):
        return f"{OVER}it needs more than {MEMORY_LIMIT // 2**20} MB of memory"
    if isinstance(exc, LimitError):
        return f"{OVER}{exc}"
    if isinstance(exc, SecurityError):
        return f"the prompt template is not allowed: {exc}"
    if doing == "compile" and isinstance(exc, TemplateError):
        return f"the prompt template does not compile: {exc}"
    return f"the prompt template fails when rendered: {type(exc).__name__}: {exc}"


def serve(lines: Iterator[str], reply: Callable[[dict[str, Any]], None]) -> None:
    """The first line is the template: answer {"ready"} or {"error"}; then each line's variables
    are answered with {"prompt"} or {"error"}."""
    env = LimitedSandbox()
    try:
        template = _timed(lambda: env.from_string(json.loads(next(lines))["template"]))
    except (Exception, Deadline) as exc:
        reply({"error": _failure(exc, "compile")})
        return
    reply({"ready": True})
    for line in lines:
        variables = json.loads(line)
        try:
            reply({"prompt": _timed(partial(_stream, env, template, variables))})
        except (Exception, Deadline) as exc:
            reply({"error": _failure(exc, "render", variables)})


def main() -> None:
    """Limit this process's memory, then serve stdin to stdout."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    signal.signal(signal.SIGALRM, _on_alarm)
    out = sys.stdout

    def reply(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    serve(iter(sys.stdin.readline, ""), reply)


if __name__ == "__main__":
    main()
