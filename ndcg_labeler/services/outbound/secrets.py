"""Which environment variables an endpoint header or a judge key may send (NDCG_SECRET_ENV)."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable

from flask import current_app

from ndcg_labeler.services import ServiceError

DEFAULT_SECRET_ENV = "*_API_KEY,*_API_TOKEN"
# The app's own settings: never sent, whatever NDCG_SECRET_ENV matches.
_NEVER = ("NDCG_*", "DATABASE_URL")
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_secret_name(name: str) -> None:
    """A ServiceError naming NDCG_SECRET_ENV unless `name` may be sent to an outside service."""
    if not _NAME.match(name or ""):
        raise ServiceError(f"'{name}' is not the NAME of an environment variable (never a key)")
    globs = _globs()
    never = any(fnmatch.fnmatchcase(name, glob) for glob in _NEVER)
    if never or not any(fnmatch.fnmatchcase(name, glob) for glob in globs):
        listed = ",".join(globs) or "nothing"
        raise ServiceError(
            f"the environment variable {name} may not be sent: only names matching "
            f"NDCG_SECRET_ENV ({listed}) may, and never NDCG_* or DATABASE_URL"
        )


def check_secret_references(value: str) -> None:
    """Check every ${NAME} in a header value (ServiceError for the first refused one)."""
    for name in _REFERENCE.findall(value or ""):
        check_secret_name(name)


def secret(name: str, *, required: bool = True) -> str:
    """An allowed variable's value, checked again at use ('' if unset and not `required`)."""
    check_secret_name(name)
    if name not in os.environ:
        if not required:
            return ""
        raise ServiceError(f"the environment variable {name} is not set")
    value = os.environ[name]
    if any(ch in value for ch in "\r\n\0"):
        # Secrets go into headers, which cannot hold them: the request would fail to be sent,
        # reading as 'could not connect'. Said here, by name, never the value.
        raise ServiceError(
            f"the environment variable {name} holds a line break (or NUL), which a header "
            "cannot carry"
        )
    return value


def unset_secrets(names: Iterable[str]) -> list[str]:
    """A warning for each named key variable not set in this process (each name once, empty
    names skipped). Not an error: a local model needs no key, and an allowed variable may be
    left unset on purpose; but a worker started without it sends every request without a key,
    and each fails with 401 with nothing said why."""
    found = dict.fromkeys(name for name in names if name)
    return [
        f"{name} is not set in this process: requests go without a key"
        for name in found
        if not os.environ.get(name)  # set but empty sends no key either
    ]


def fill_secrets(value: str) -> str:
    """A header value with every ${NAME} replaced by that allowed variable's value."""
    check_secret_references(value)
    return _REFERENCE.sub(lambda found: secret(found.group(1)), value)


def _globs() -> list[str]:
    text = current_app.config.get("NDCG_SECRET_ENV")
    text = DEFAULT_SECRET_ENV if text is None else text
    return [glob.strip() for glob in text.split(",") if glob.strip()]
