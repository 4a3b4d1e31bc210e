"""Job inputs in an S3-compatible object store, when NDCG_JOB_STORE_URL names one.

`s3://bucket/prefix` (AWS S3, or MinIO, Ceph, R2 … with NDCG_S3_ENDPOINT_URL): a server
uploads each file of a job as the object `<prefix><token>/<field>/<filename>` (multipart,
streamed: memory stays bounded whatever the size), a worker downloads it into a temporary
file of its own while the job runs, and the objects are deleted when the job ends. Unlike the
database spool, the objects exist before the job row is committed: a server that dies in
between leaves objects no job names, which the worker's sweep deletes after a grace period.

Credentials come from boto3's usual chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a
profile, an instance role), never from the app's settings. The store is the operator's own
infrastructure, like the database: it is not a request made on a user's behalf, so it does
not go through the outbound policy.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from flask import current_app

from ndcg_labeler.services import ServiceError

PREFIX = "s3:"
"""Job.upload_path of files spooled into the object store: "s3:<token>"."""

_EXTENSION = "ndcg_job_store"
# The keys this module writes (token/field/filename, a token of 24 hex digits): the sweep
# deletes nothing else, even when the prefix is shared with other data.
_OWN_KEY = re.compile(r"([0-9a-f]{24})/[a-z_]+/[^/]+")


@dataclass(frozen=True)
class Store:
    """The configured bucket, key prefix and client (a boto3 S3 client)."""

    url: str
    bucket: str
    prefix: str
    client: Any

    def key(self, token: str, field: str = "", filename: str = "") -> str:
        """The object key of a spooled file (or the prefix of a token's or field's files)."""
        parts = [token, field, filename] if filename else [token, field] if field else [token]
        return self.prefix + "/".join(parts) + ("" if filename else "/")


def configured() -> bool:
    """Whether job inputs go to an object store (NDCG_JOB_STORE_URL is set)."""
    return bool(current_app.config.get("NDCG_JOB_STORE_URL"))


def parse_url(url: str) -> tuple[str, str]:
    """(bucket, key prefix ending in "/" or empty) of an `s3://bucket/prefix` address."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise ServiceError(
            f"NDCG_JOB_STORE_URL must look like s3://bucket or s3://bucket/prefix, not '{url}'"
        )
    prefix = parts.path.strip("/")
    return parts.netloc, prefix + "/" if prefix else ""


def store() -> Store:
    """The app's object store, its client made once per app (boto3 clients are thread-safe)."""
    found = current_app.extensions.get(_EXTENSION)
    url = current_app.config["NDCG_JOB_STORE_URL"]
    if found is not None and found.url == url:
        return found
    bucket, prefix = parse_url(url)
    # Imported here: only deployments with an object store need boto3 (`pip install .[s3]`).
    try:
        import boto3
    except ImportError as error:
        raise ServiceError(
            "NDCG_JOB_STORE_URL is set but boto3 is not installed: pip install 'ndcg-labeler[s3]'"
        ) from error
    client = boto3.client(
        "s3",
        endpoint_url=current_app.config.get("NDCG_S3_ENDPOINT_URL") or None,
        region_name=current_app.config.get("NDCG_S3_REGION") or None,
    )
    found = Store(url, bucket, prefix, client)
    current_app.extensions[_EXTENSION] = found
    return found


@contextmanager
def _failures(doing: str) -> Iterator[None]:
    """botocore's errors (unreachable store, missing bucket, refused credentials) as a
    ServiceError that says what was being done and where."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as error:
        where = current_app.config["NDCG_JOB_STORE_URL"]
        raise ServiceError(f"could not {doing} the object store {where}: {error}") from error


def put(token: str, files: dict[str, tuple[str, BinaryIO]]) -> None:
    """Upload each (filename, stream) under the token, one field after another."""
    found = store()
    with _failures("store an upload in"):
        for field, (name, stream) in files.items():
            found.client.upload_fileobj(stream, found.bucket, found.key(token, field, name))


def _keys(found: Store, prefix: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The objects (Key, LastModified, …) whose keys start with `prefix`."""
    objects: list[dict[str, Any]] = []
    paginator = found.client.get_paginator("list_objects_v2")
    config = {"MaxItems": limit} if limit else {}
    for page in paginator.paginate(Bucket=found.bucket, Prefix=prefix, PaginationConfig=config):
        objects.extend(page.get("Contents", []))
    return objects


@contextmanager
def fetched(token: str, field: str) -> Iterator[tuple[str, str] | None]:
    """(path, filename) of a local copy of the object spooled for `field` while the block
    runs, or None when there is none; the copy is deleted afterwards."""
    found = store()
    with _failures("read a job's file from"):
        objects = _keys(found, found.key(token, field), limit=1)
    if not objects:
        yield None
        return
    key = objects[0]["Key"]
    name = key.rsplit("/", 1)[1] or "upload"
    with tempfile.TemporaryDirectory(prefix="ndcg-job-") as folder:
        path = os.path.join(folder, name)
        with _failures("read a job's file from"):
            found.client.download_file(found.bucket, key, path)
        yield path, name


def _delete(found: Store, keys: list[str]) -> None:
    """Delete the objects, a thousand (S3's limit for one request) at a time."""
    for start in range(0, len(keys), 1000):
        batch = [{"Key": key} for key in keys[start : start + 1000]]
        found.client.delete_objects(Bucket=found.bucket, Delete={"Objects": batch, "Quiet": True})


def remove(token: str) -> None:
    """Delete every object of the token."""
    found = store()
    with _failures("delete a job's files from"):
        _delete(found, [item["Key"] for item in _keys(found, found.key(token))])


def exists(token: str) -> bool:
    """Whether any object of the token is still stored."""
    found = store()
    with _failures("look for a job's files in"):
        return bool(_keys(found, found.key(token), limit=1))


def sweep(keep: set[str], grace: float) -> list[str]:
    """Delete the objects of tokens not in `keep` whose newest object is older than `grace`
    seconds; returns the tokens removed."""
    found = store()
    limit = datetime.now(UTC) - timedelta(seconds=grace)
    by_token: dict[str, list[dict[str, Any]]] = {}
    with _failures("sweep"):
        for item in _keys(found, found.prefix):
            own = _OWN_KEY.fullmatch(item["Key"][len(found.prefix) :])
            if own:
                by_token.setdefault(own.group(1), []).append(item)
        stale = [
            token
            for token, items in by_token.items()
            if token not in keep and max(item["LastModified"] for item in items) < limit
        ]
        _delete(found, [item["Key"] for token in stale for item in by_token[token]])
    return sorted(stale)
