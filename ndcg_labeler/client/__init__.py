"""A Python client for the HTTP API, for notebooks and CI: httpx only, pandas when it is there.

    from ndcg_labeler.client import Client
    api = Client("https://ndcg.example.org", token="...")
    api.upload_run("Help desk", {"q1": {"doc-7": 12.5, "doc-3": 9.1}}, name="bm25-v2")
    per_query = api.scores("Help desk", "bm25-v2", measures=["nDCG@10"])

Importing this module needs neither Flask nor SQLAlchemy (nor anything else of the server):
it talks to a running server. Every failure the server reports raises `ClientError` with the
server's own message.

Its modules: `wire` (the token, the HTTP session, timeouts, redirects and every refusal as
`ClientError`), `trec_run` (a run's qids, docids and scores checked and written as TREC), and
the Client's methods by area: `reading` (test sets, their status, runs, grades, scores,
compare, next labels, the gate), `files` (uploads, imports, exports), `jobs` (the server's
background jobs: followed, waited for, cancelled) and `changes` (an admin's: runs archived and
tagged, judges' settings and audit samples).
"""

from __future__ import annotations

from .changes import Changes
from .files import PEER_FORMATS, Files
from .reading import Reading
from .wire import ClientError

__all__ = ["PEER_FORMATS", "Client", "ClientError"]


class Client(Reading, Files, Changes):
    """The API of one ndcg-labeler server, authenticated with a personal token."""
