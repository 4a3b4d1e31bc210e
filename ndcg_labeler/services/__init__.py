"""Use cases: load from the database, call scoring/formats, write back."""


class ServiceError(ValueError):
    """A use case refused the input; the message is shown to the user as is."""


from ndcg_labeler.services._db import paginate  # noqa: E402  (after ServiceError: no cycle)
from ndcg_labeler.services._progress import Cancelled, Progress, no_progress  # noqa: E402

__all__ = ["Cancelled", "Progress", "ServiceError", "no_progress", "paginate"]
