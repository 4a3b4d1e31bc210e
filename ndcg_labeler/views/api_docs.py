"""The API's documentation: the OpenAPI 3.1 document and a readable reference page (public)."""

from __future__ import annotations

import re

from flask import Blueprint, jsonify, render_template, request
from markupsafe import Markup, escape
from werkzeug.wrappers import Response

from ndcg_labeler.views.openapi_spec import openapi_document

bp = Blueprint("api_docs", __name__, url_prefix="/api")

_CODE = re.compile(r"`([^`]+)`")


@bp.app_template_filter("inline_code")
def inline_code(text: str | None) -> Markup:
    """The OpenAPI texts' Markdown `code` spans as <code>, everything else escaped."""
    # Escape first, then mark up: the spans' contents stay escaped text.
    return Markup(_CODE.sub(r"<code>\1</code>", str(escape(text or ""))))


@bp.get("/openapi.json")
def openapi() -> Response:
    """The OpenAPI 3.1 document of every /api route."""
    return jsonify(openapi_document(request.host_url))


@bp.get("/docs")
def reference() -> str:
    """The same document as a page a person can read."""
    return render_template("api/reference.html", spec=openapi_document(request.host_url))
