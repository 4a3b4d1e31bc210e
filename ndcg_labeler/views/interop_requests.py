"""What the import page and the API share for peers' files: which one was sent, and downloads."""

from __future__ import annotations

import os

from flask import Response
from werkzeug.datastructures import FileStorage

from ndcg_labeler.models import TestSet
from ndcg_labeler.services import ServiceError, imports, interop

PEER_FIELDS = {"quepid": "quepid", "srw_judgments": "srw-judgments", "srw_queries": "srw-queries"}
"""Form field of each peer file -> its format in interop.PEER_FORMATS."""

ALONE = (
    "import a peer's file (Quepid, SRW judgments, SRW query set) or an ir_datasets dataset "
    "on its own, without other files"
)


def peer_file(storage: FileStorage) -> imports.ImportFile:
    """An uploaded file by its base name (browsers send one; some clients add a path)."""
    name = os.path.basename((storage.filename or "").replace("\\", "/")) or "upload"
    return imports.ImportFile(storage.stream, name)


def import_peer(
    test_set: TestSet,
    peers: dict[str, FileStorage],
    dataset: str,
    own_given: bool,
    *,
    rating_map: str | None,
    source: str | None,
    actor_id: int,
) -> imports.ImportReport:
    """The one peer file (or ir_datasets name) of a request, imported; more than one refused."""
    if len(peers) + bool(dataset) != 1 or own_given:
        raise ServiceError(ALONE)
    if dataset:
        return interop.import_ir_dataset(test_set, dataset, source=source, actor_id=actor_id)
    field, storage = next(iter(peers.items()))
    return interop.import_peer(
        test_set,
        PEER_FIELDS[field],
        peer_file(storage),
        rating_map=rating_map,
        source=source,
        actor_id=actor_id,
    )


def download(body: str, filename: str, mimetype: str) -> Response:
    """A text attachment (UTF-8)."""
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
