"""Blueprints (thin: parse the request, call a service, render) and the global login gate."""

from __future__ import annotations

import importlib
from typing import Any

from flask import Flask, redirect, request, url_for
from flask_login import current_user

# Endpoints reachable without a session; the API authenticates with its own bearer tokens.
# The old /testsets/ addresses only redirect: the new address does its own checks.
PUBLIC_ENDPOINTS = frozenset(
    {
        "auth.login",
        "auth.sso_start",
        "auth.sso_callback",
        "static",
        "main.favicon",
        "main.old_test_sets_address",
        "api_docs.openapi",
        "api_docs.reference",
        "lost_session.session_state",  # answers signed out too: that is what it tells
    }
)

# One module per area, each exposing `bp`.
BLUEPRINT_MODULES = ("auth", "main", "users", "testsets", "runs", "api", "tokens", "labeling")
# The labeling loop's background calls: prefetch, lease on show, save, release.
BLUEPRINT_MODULES += ("label_loop",)
# Dashboards: overview and query tables, drill-down, comparison, pooling, exports.
BLUEPRINT_MODULES += ("dashboard", "drilldown", "compare", "pooling", "exports")
# The release gate's page and its two reports.
BLUEPRINT_MODULES += ("gate_page",)
# The API's OpenAPI document and reference page (public: they hold no data).
BLUEPRINT_MODULES += ("api_docs",)
# Team judging: agreement, people, disagreement review and adjudication, policies, exports.
BLUEPRINT_MODULES += ("team",)
# Machine judges: define, run, calibrate.
BLUEPRINT_MODULES += ("judges",)
# Ensembles, few-shot settings and the "machine vs people" queue.
BLUEPRINT_MODULES += ("machine_review",)
# Machine judges' gullibility probes and costs.
BLUEPRINT_MODULES += ("judge_probes",)
# Live retriever endpoints: define, try, fetch.
BLUEPRINT_MODULES += ("endpoints",)
# Run series: trends over time, the baseline, scheduled evaluations and their alerts.
BLUEPRINT_MODULES += ("series",)
# Background jobs: long imports and uploads.
BLUEPRINT_MODULES += ("jobs",)
# The audit trail of admin actions.
BLUEPRINT_MODULES += ("audit",)
# Forms and uploads that meet a lost session: the session probe and its landing page.
BLUEPRINT_MODULES += ("lost_session",)


def register_blueprints(app: Flask) -> None:
    """Attach every blueprint and require login for everything else."""
    for name in BLUEPRINT_MODULES:
        app.register_blueprint(importlib.import_module(f"ndcg_labeler.views.{name}").bp)
    # Templates link to per-pair grades only for those who may open them (no dead ends).
    from ndcg_labeler.views.access import may_see_grades

    app.add_template_global(may_see_grades)

    from ndcg_labeler.views import lost_session

    lost_session.register(app)

    @app.before_request
    def require_login() -> Any:
        endpoint = request.endpoint or ""
        if endpoint in PUBLIC_ENDPOINTS or endpoint.startswith("api."):
            return None
        if request.path.startswith("/api/") and request.routing_exception is not None:
            # No API route here (or not for this method): the JSON 404/405 a script can read,
            # not the sign-in page; the API's own routes check the token themselves.
            return None
        if current_user.is_authenticated:
            return None
        if endpoint == "auth.logout":
            return redirect(url_for("auth.login"))  # signed out already: nothing to keep
        labeling_fetch = request.accept_mimetypes.best == "application/json"
        if lost_session.wants_json() or (request.method != "GET" and not labeling_fetch):
            # A form or a script meeting a signed-out session: say so, keep the entries.
            return lost_session.signed_out()
        # A page view (back after sign-in), or the labeling page's fetch, which keeps its
        # unsent answers itself and reads this redirect as "signed out".
        return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))
