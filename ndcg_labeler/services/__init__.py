"""Use cases: load from the database, call scoring/formats, write back."""


class ServiceError(ValueError):
    """A use case refused the input; the message is shown to the user as is."""
