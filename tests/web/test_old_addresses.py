"""One form of address, /test-sets/...; the old /testsets/... ones redirect (308) so links work."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from tests.factory import build


def test_old_addresses_redirect_with_308_keeping_the_query(app: Flask, as_admin: FlaskClient):
    built = build(app)
    old = f"/testsets/{built.test_set_id}/judges/?page=2&q=a%20b"
    response = as_admin.get(old)
    assert response.status_code == 308
    assert response.headers["Location"] == f"/test-sets/{built.test_set_id}/judges/?page=2&q=a%20b"
    assert as_admin.get(old, follow_redirects=True).status_code == 200
    endpoints = as_admin.get(f"/testsets/{built.test_set_id}/endpoints/", follow_redirects=True)
    assert endpoints.status_code == 200
    assert endpoints.request.path == f"/test-sets/{built.test_set_id}/endpoints/"


def test_a_form_posted_to_an_old_address_is_posted_again(app: Flask, as_admin: FlaskClient):
    built = build(app)
    response = as_admin.post(f"/testsets/{built.test_set_id}/endpoints/", data={"x": "1"})
    # 308 tells the browser to repeat the POST with its body (301/302 would turn it into a GET).
    assert response.status_code == 308
    assert response.headers["Location"] == f"/test-sets/{built.test_set_id}/endpoints/"


def test_pages_link_only_the_one_form(app: Flask, as_admin: FlaskClient) -> None:
    built = build(app)
    for path in ("", "/judges/", "/endpoints/", "/runs", "/dashboard/"):
        page = as_admin.get(f"/test-sets/{built.test_set_id}{path}", follow_redirects=True)
        assert page.status_code == 200, path
        assert 'href="/testsets/' not in page.get_data(as_text=True), path


def test_the_api_keeps_its_address(client: FlaskClient) -> None:
    assert client.get("/api/testsets/1/runs").status_code == 401  # the API's, not a redirect
