"""Configuration defaults and their overrides from the environment (NDCG_* and DATABASE_URL)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

# Failed logins (per account and per address) and failed API tokens (per address) allowed.
DEFAULT_FAILURE_LIMIT = "10 per minute; 50 per hour"
FIGURES_CACHE_INLINE_MAX = 50_000
REMEMBER_DAYS = 30
# Seconds gunicorn lets a request run before it kills the worker (`make serve`, `ndcg-labeler
# serve`); a page that waits on another server (an endpoint's Try) stops well before it.
WEB_TIMEOUT = 120


def _bool(value: str | None, default: bool) -> bool:
    """Read a yes/no environment value; anything but 0/false/no/off is true."""
    if value is None or value == "":
        return default
    return value.strip().lower() not in {"0", "false", "no", "off"}


def _names(value: str | None) -> list[str] | None:
    """A comma-separated list of names, or None when unset or empty."""
    names = [name.strip() for name in (value or "").split(",") if name.strip()]
    return names or None


def _optional_bool(value: str | None) -> bool | None:
    """A yes/no environment value, or None when it is unset (the default decides)."""
    return None if value is None or value.strip() == "" else _bool(value, False)


def normalise_database_url(url: str) -> str:
    """Point plain postgres:// URLs at psycopg 3, the driver we ship."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def load_secret_key(instance_path: str) -> str:
    """Return NDCG_SECRET_KEY, or a key generated once into the instance folder."""
    env_key = os.environ.get("NDCG_SECRET_KEY")
    if env_key:
        return env_key
    path = Path(instance_path) / "secret_key"
    if path.exists():
        return path.read_text().strip()
    key = secrets.token_hex(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Create with 0600 so other local users cannot read the key.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key)
    return key


def web_timeout() -> int:
    """The web workers' request timeout in seconds: NDCG_WEB_TIMEOUT, default 120."""
    return int(os.environ.get("NDCG_WEB_TIMEOUT") or WEB_TIMEOUT)


def figures_cache_inline_max(settings: Mapping[str, Any]) -> int:
    """Graded judgments above which a page shows its stale stored figures while one background
    thread recomputes them (NDCG_FIGURES_CACHE_INLINE_MAX, default 50,000).

    Deprecated: TEAM_CACHE_INLINE_MAX, the name from when only the team pages were stored, is
    still read for one release (as a setting or from the environment) and wins when set; it
    will be dropped in the release after.
    """
    old = settings.get("TEAM_CACHE_INLINE_MAX")
    if old is not None:
        return int(old)
    return int(settings.get("NDCG_FIGURES_CACHE_INLINE_MAX", FIGURES_CACHE_INLINE_MAX))


def from_environment(instance_path: str) -> dict[str, Any]:
    """Build the configuration mapping from defaults and environment variables."""
    default_db = "sqlite:///" + str(Path(instance_path) / "ndcg.sqlite3")
    return {
        "SECRET_KEY": load_secret_key(instance_path),
        "SQLALCHEMY_DATABASE_URI": normalise_database_url(
            os.environ.get("DATABASE_URL", default_db)
        ),
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True},
        "MAX_CONTENT_LENGTH": int(os.environ.get("NDCG_MAX_UPLOAD_MB", "1024")) * 1024 * 1024,
        "NDCG_MAX_DECOMPRESSED_BYTES": int(os.environ.get("NDCG_MAX_DECOMPRESSED_MB", "4096"))
        * 1024
        * 1024,
        "NDCG_DEMO": _bool(os.environ.get("NDCG_DEMO"), True),
        "NDCG_ADMIN_PASSWORD": os.environ.get("NDCG_ADMIN_PASSWORD") or None,
        "NDCG_RUN_DEPTH": int(os.environ.get("NDCG_RUN_DEPTH", "1000")),
        # Background jobs: uploads above the threshold run in the job worker (flask jobs worker).
        "NDCG_JOB_THRESHOLD_MB": float(os.environ.get("NDCG_JOB_THRESHOLD_MB", "2")),
        # Pooling from the browser whose runs could offer more pairs than this is a job.
        "NDCG_POOL_JOB_PAIRS": int(os.environ.get("NDCG_POOL_JOB_PAIRS", "20000")),
        # Fusing runs from the browser with more ranked entries than this (together) is a job.
        "NDCG_FUSE_JOB_ENTRIES": int(os.environ.get("NDCG_FUSE_JOB_ENTRIES", "200000")),
        # A BM25 run from the browser over a corpus of more chunks than this is a job.
        "NDCG_BM25_JOB_CHUNKS": int(os.environ.get("NDCG_BM25_JOB_CHUNKS", "20000")),
        "NDCG_REDIS_URL": os.environ.get("NDCG_REDIS_URL") or os.environ.get("NDCG_JOBS_URL"),
        "NDCG_JOBS_QUEUE": os.environ.get("NDCG_JOBS_QUEUE", "ndcg-labeler"),
        "NDCG_JOBS_SQLITE": os.environ.get("NDCG_JOBS_SQLITE") or None,
        "NDCG_JOB_THREADS": int(os.environ.get("NDCG_JOB_THREADS", "2")),
        "NDCG_JOB_STALE_SECONDS": int(os.environ.get("NDCG_JOB_STALE_SECONDS", "300")),
        # Job inputs in an S3-compatible store (s3://bucket/prefix) instead of the database;
        # the endpoint for stores other than AWS (MinIO, Ceph, R2); credentials: boto3's chain.
        "NDCG_JOB_STORE_URL": os.environ.get("NDCG_JOB_STORE_URL", ""),
        "NDCG_S3_ENDPOINT_URL": os.environ.get("NDCG_S3_ENDPOINT_URL") or None,
        "NDCG_S3_REGION": os.environ.get("NDCG_S3_REGION") or None,
        # Stored figures (team pages, compare statistics): see figures_cache_inline_max.
        "NDCG_FIGURES_CACHE_INLINE_MAX": int(
            os.environ.get("NDCG_FIGURES_CACHE_INLINE_MAX")
            or os.environ.get("TEAM_CACHE_INLINE_MAX")
            or FIGURES_CACHE_INLINE_MAX
        ),
        # What `make serve` and `ndcg-labeler serve` give gunicorn as --timeout.
        "NDCG_WEB_TIMEOUT": web_timeout(),
        # The manual's address, for the pages' links into it (default: where `make docs` serves).
        "NDCG_MANUAL_URL": os.environ.get("NDCG_MANUAL_URL") or None,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        # None: Secure unless the app runs in debug mode (create_app decides; see cookie_security).
        "NDCG_SECURE_COOKIES": _optional_bool(os.environ.get("NDCG_SECURE_COOKIES")),
        # Host names the app answers to (Flask's TRUSTED_HOSTS); unset: any, as behind a proxy
        # that checks the Host itself. ".example.org" also takes its subdomains.
        "TRUSTED_HOSTS": _names(os.environ.get("NDCG_TRUSTED_HOSTS")),
        "NDCG_PROXY_FIX": int(os.environ.get("NDCG_PROXY_FIX", "0") or 0),
        "NDCG_LOGIN_LIMIT": os.environ.get("NDCG_LOGIN_LIMIT") or DEFAULT_FAILURE_LIMIT,
        "NDCG_API_AUTH_LIMIT": os.environ.get("NDCG_API_AUTH_LIMIT") or DEFAULT_FAILURE_LIMIT,
        "NDCG_THROTTLE_PREFIX": os.environ.get("NDCG_THROTTLE_PREFIX") or "ndcg",
        # Requests made on an admin's behalf (endpoints, judges): see services/outbound.
        "NDCG_OUTBOUND_ALLOW": os.environ.get("NDCG_OUTBOUND_ALLOW", ""),
        "NDCG_OUTBOUND_DENY": os.environ.get("NDCG_OUTBOUND_DENY", ""),
        "NDCG_OUTBOUND_MAX_BYTES": int(os.environ.get("NDCG_OUTBOUND_MAX_MB") or "64")
        * 1024
        * 1024,
        # Scheduled evaluations post {"text": ...} here on fail/inconclusive (services/series).
        "NDCG_ALERT_WEBHOOK_URL": os.environ.get("NDCG_ALERT_WEBHOOK_URL", ""),
        # The job worker's scheduler tick (huey periodic task, every minute); 0 switches it off.
        "NDCG_SCHEDULER": _bool(os.environ.get("NDCG_SCHEDULER"), True),
        # None: the default globs (*_API_KEY,*_API_TOKEN); an empty value allows no variable.
        "NDCG_SECRET_ENV": os.environ.get("NDCG_SECRET_ENV"),
        # Single sign-on with OpenID Connect (services/sso): on when an issuer is set.
        "NDCG_OIDC_ISSUER": (os.environ.get("NDCG_OIDC_ISSUER") or "").rstrip("/") or None,
        "NDCG_OIDC_CLIENT_ID": os.environ.get("NDCG_OIDC_CLIENT_ID") or None,
        # Read from the environment only; a public client (PKCE alone) has none.
        "NDCG_OIDC_CLIENT_SECRET": os.environ.get("NDCG_OIDC_CLIENT_SECRET") or None,
        "NDCG_OIDC_NAME": os.environ.get("NDCG_OIDC_NAME") or "single sign-on",
        "NDCG_OIDC_SCOPES": os.environ.get("NDCG_OIDC_SCOPES") or "openid profile email",
        "NDCG_OIDC_ADMIN_CLAIM": os.environ.get("NDCG_OIDC_ADMIN_CLAIM") or "groups",
        # None: nobody becomes an admin through the identity provider.
        "NDCG_OIDC_ADMIN_VALUE": os.environ.get("NDCG_OIDC_ADMIN_VALUE") or None,
        # 0 switches local passwords off: people sign in through the identity provider only.
        "NDCG_LOCAL_LOGIN": _bool(os.environ.get("NDCG_LOCAL_LOGIN"), True),
        "REMEMBER_COOKIE_HTTPONLY": True,
        # "Keep me signed in" lasts this many days (Flask-Login's default would be 365).
        "REMEMBER_COOKIE_DURATION": timedelta(
            days=float(os.environ.get("NDCG_REMEMBER_DAYS") or REMEMBER_DAYS)
        ),
        "REMEMBER_COOKIE_SAMESITE": "Lax",
        "WTF_CSRF_TIME_LIMIT": None,
    }
