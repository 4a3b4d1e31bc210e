"""The token pages show example commands with the person's own test set and runs, that work."""

from __future__ import annotations

import html
import io
import re
import shlex
from urllib.parse import urlsplit

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set, grant, make_user, trec

QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "c", 2)]
RANKED = {"q1": ["a", "b"], "q2": ["c", "x"]}


def _examples(page: str) -> list[list[str]]:
    block = re.search(
        r'<pre class="examples" id="api-examples"><code>(.*?)</code></pre>', page, re.S
    )
    assert block is not None
    text = html.unescape(block.group(1)).replace("\\\n", " ")
    return [shlex.split(line) for line in text.splitlines() if line.startswith("curl ")]


def _run_curl(client: FlaskClient, argv: list[str], files: dict[str, bytes]):
    """Do what the curl command asks, through the test client."""
    headers, form, body, url = {}, {}, None, None
    args = iter(argv[1:])
    for arg in args:
        if arg == "-H":
            name, _, value = next(args).partition(": ")
            headers[name] = value
        elif arg == "-F":
            key, _, value = next(args).partition("=")
            form[key] = (io.BytesIO(files[value[1:]]), value[1:]) if value[:1] == "@" else value
        elif arg == "-d":
            body = next(args)
        else:
            url = arg
    assert url is not None
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if form:
        return client.post(path, data=form, headers=headers, content_type="multipart/form-data")
    if body is not None:
        return client.post(path, data=body, headers=headers)
    return client.get(path, headers=headers)


def test_examples_use_my_test_set_and_runs_and_they_work(app: Flask, client, auth) -> None:
    with app.app_context():
        test_set = build_test_set("HR policies", {"q1": "leave", "q2": "pay"}, QRELS)
        for name in ("bm25 v1", "dense"):
            run_service.upload_run(test_set, io.BytesIO(trec(RANKED)), "r.trec", name, None)
    make_user(app, "boss", "admin")
    auth.login("boss")
    page = client.post("/account/api-token/").get_data(as_text=True)
    token = re.search(r'value="(ndcg_[^"]+)"', page).group(1)
    commands = _examples(page)
    assert len(commands) == 4  # runs, scores, upload (admins), gate
    joined = " ".join(" ".join(c) for c in commands)
    assert "http://localhost/api/testsets/HR%20policies/runs/bm25%20v1/scores?k=10" in joined
    assert f"Authorization: Bearer {token}" in joined
    answers = [_run_curl(client, c, {"run.trec": trec({"q1": ["b", "a"]})}) for c in commands]
    assert [a.status_code for a in answers] == [200, 200, 201, 200]
    assert [r["name"] for r in answers[0].get_json()["runs"]] == ["bm25 v1", "dense"]
    assert answers[2].get_json()["name"] == "my-run"
    assert answers[3].get_json()["baseline"] == "bm25 v1"
    # The account page shows the same commands with the token in a shell variable.
    account = client.get("/account").get_data(as_text=True)
    assert token not in account
    assert '-H "Authorization: Bearer $NDCG_TOKEN"' in html.unescape(account)


def test_an_annotator_sees_their_own_test_set_and_no_upload(app: Flask, client, auth) -> None:
    with app.app_context():
        build_test_set("Secret", {"q1": "x"}, [])
        mine = build_test_set("Support FAQ", {"q1": "x"}, [])
        annotator = make_user(app, "ann")
        grant(app, mine.id, annotator)
    auth.login("ann")
    page = client.post("/account/api-token/").get_data(as_text=True)
    commands = _examples(page)
    joined = " ".join(" ".join(c) for c in commands)
    assert "Support%20FAQ" in joined and "Secret" not in joined
    # No upload example for annotators (compared as arguments: a token may contain "-F").
    assert len(commands) == 3 and not any("-F" in command for command in commands)


def test_examples_use_the_set_in_use_not_the_demo(app: Flask, client, auth) -> None:
    """The demo set sorts first by name and has runs; the examples still use the set the
    person works on, and follow the newest upload from one set to another."""
    with app.app_context():
        demo = build_test_set("A demo", {"q1": "leave", "q2": "pay"}, QRELS)
        demo.is_demo = True
        older = build_test_set("Billing", {"q1": "leave", "q2": "pay"}, QRELS)
        newer = build_test_set("Claims", {"q1": "leave", "q2": "pay"}, QRELS)
        for test_set, names in ((demo, ("A", "B")), (older, ("bm25",)), (newer, ("e5",))):
            for name in names:
                run_service.upload_run(test_set, io.BytesIO(trec(RANKED)), "r.trec", name, None)
    make_user(app, "boss", "admin")
    auth.login("boss")
    page = client.post("/account/api-token/").get_data(as_text=True)
    joined = " ".join(" ".join(c) for c in _examples(page))
    assert "/api/testsets/Claims/runs/e5/scores" in joined and "demo" not in joined
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "Billing"))
        run_service.upload_run(test_set, io.BytesIO(trec(RANKED)), "r.trec", "splade", None)
    joined = " ".join(" ".join(c) for c in _examples(client.get("/account").get_data(as_text=True)))
    assert "/api/testsets/Billing/runs/bm25/scores" in joined
    assert '{"baseline": "bm25", "candidate": "splade"}' in joined
