"""Test sets: creation, settings, members, summary, listings, imports and the demo."""

from .catalog import (
    MAX_DEFINITION,
    MAX_GRADE_NAME,
    MAX_NAME,
    Settings,
    aggregation_policies,
    all_test_sets,
    annotator_candidates,
    create_test_set,
    get_by_ref,
    grant,
    member_ids,
    members,
    require_by_name,
    revoke,
    set_members,
    settings_of,
    summary,
    update_settings,
)
from .demo import demo_test_set, load_demo
from .demo_runs import load_demo_runs
from .imports import ImportFile, import_files
from .listing import CHUNK_STATES, QUERY_STATES, chunks_page, queries_page
from .tally import (
    annotator_counts,
    count_judgment_change,
    lock_pool_counts,
    pool_counts,
    recount_pool,
)

__all__ = [
    "CHUNK_STATES",
    "MAX_DEFINITION",
    "MAX_GRADE_NAME",
    "MAX_NAME",
    "QUERY_STATES",
    "ImportFile",
    "Settings",
    "aggregation_policies",
    "all_test_sets",
    "annotator_candidates",
    "annotator_counts",
    "chunks_page",
    "count_judgment_change",
    "create_test_set",
    "demo_test_set",
    "get_by_ref",
    "grant",
    "import_files",
    "load_demo",
    "load_demo_runs",
    "lock_pool_counts",
    "member_ids",
    "members",
    "pool_counts",
    "queries_page",
    "recount_pool",
    "require_by_name",
    "revoke",
    "set_members",
    "settings_of",
    "summary",
    "update_settings",
]
