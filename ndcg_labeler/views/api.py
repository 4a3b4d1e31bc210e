"""JSON API authenticated by personal tokens (`Authorization: Bearer ...`): runs, scores, gate,
judges' audit samples and settings, and what to label next for a comparison.

No session and no CSRF (a bearer token is not sent by browsers on their own); 401 without a
valid token (429 after too many wrong ones from one address), 404 for test sets the token's
owner may not see, 403 for non-admins uploading.
Test sets, runs and judges are addressed by id or by name, or as `id:N` / `name:X`; a plain
reference that is one object's id and another's name is refused (services.resolve_ref).
The OpenAPI document (views/openapi_spec.py) describes every route of the blueprint.

One blueprint, its routes by area: the token check and the lookups every route shares
(api_access.py), test sets (api_testsets.py), imports, exports and their jobs
(api_interop.py), runs (api_runs.py), scores, comparisons, next labels and the gate
(api_scores.py), series and their trends (api_series.py), judges' audit samples (api_audit.py)
and judges' settings (api_judges.py).
"""

from __future__ import annotations

# Imported for their routes: each area module adds its own to the blueprint as it loads.
from ndcg_labeler.views import (  # noqa: F401
    api_audit,
    api_interop,
    api_judges,
    api_runs,
    api_scores,
    api_series,
    api_testsets,
)
from ndcg_labeler.views.api_access import bp

__all__ = ["bp"]
