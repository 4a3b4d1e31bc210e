"""Fake servers on 127.0.0.1: a search service whose ranking can change, a webhook receiver."""

from __future__ import annotations

import json
import threading
from typing import Any

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from tests.series.helpers import GOOD, QIDS, ranked


class _Server:
    def __init__(self) -> None:
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeSearch(_Server):
    """Answers `?q=topic qN` with a list of hits whose relevant chunk is at `ranks[N-1]`."""

    def __init__(self) -> None:
        self.ranks = list(GOOD)
        self.asked = 0
        super().__init__()

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        query = Request(environ).args.get("q", "")
        self.asked += 1
        qid = query.removeprefix("topic ")
        hits = []
        if qid in QIDS:
            docs = ranked(qid, self.ranks[QIDS.index(qid)])
            hits = [{"id": d, "score": float(10 - n)} for n, d in enumerate(docs)]
        body = json.dumps(hits)
        return Response(body, content_type="application/json")(environ, start_response)


class Webhook(_Server):
    """Records every JSON body posted to it; answers `status`."""

    def __init__(self, status: int = 200) -> None:
        self.received: list[dict[str, Any]] = []
        self.status = status
        super().__init__()

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        self.received.append(json.loads(Request(environ).get_data() or b"null"))
        return Response("ok", status=self.status)(environ, start_response)
