"""Blueprints (thin: parse the request, call a service, render) and the global login gate."""

from __future__ import annotations

import importlib

from flask import Flask, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

# Endpoints reachable without a session; the API authenticates with its own bearer tokens.
# The old /testsets/ addresses only redirect: the new address does its own checks.
PUBLIC_ENDPOINTS = frozenset(
    {
        "auth.login",
        "static",
        "main.favicon",
        "main.old_test_sets_address",
        "api_docs.openapi",
        "api_docs.reference",
    }
)

# One module per area, each exposing `bp`.
BLUEPRINT_MODULES = ("auth", "main", "users", "testsets", "runs", "api", "tokens", "labeling")
# The labeling loop's background calls: prefetch, lease on show, save, release.
BLUEPRINT_MODULES += ("label_loop",)
# Dashboards: overview and query tables, drill-down, comparison, pooling, exports.
BLUEPRINT_MODULES += ("dashboard", "drilldown", "compare", "pooling", "exports")
# The API's OpenAPI document and reference page (public: they hold no data).
BLUEPRINT_MODULES += ("api_docs",)
# Team judging: agreement, people, disagreement review and adjudication, policies, exports.
BLUEPRINT_MODULES += ("team",)
# Machine judges: define, run, calibrate.
BLUEPRINT_MODULES += ("judges",)
# Live retriever endpoints: define, try, fetch.
BLUEPRINT_MODULES += ("endpoints",)
# Background jobs: long imports and uploads.
BLUEPRINT_MODULES += ("jobs",)
# The audit trail of admin actions.
BLUEPRINT_MODULES += ("audit",)


def register_blueprints(app: Flask) -> None:
    """Attach every blueprint and require login for everything else."""
    for name in BLUEPRINT_MODULES:
        app.register_blueprint(importlib.import_module(f"ndcg_labeler.views.{name}").bp)
    # Templates link to per-pair grades only for those who may open them (no dead ends).
    from ndcg_labeler.views.access import may_see_grades

    app.add_template_global(may_see_grades)

    @app.before_request
    def require_login() -> Response | None:
        endpoint = request.endpoint or ""
        if endpoint in PUBLIC_ENDPOINTS or endpoint.startswith("api."):
            return None
        if not current_user.is_authenticated:
            return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))
        return None
