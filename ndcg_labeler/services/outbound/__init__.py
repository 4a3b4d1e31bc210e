"""Requests the server makes on an admin's behalf: where they may go and which secrets they carry.

Endpoints and judges (and any later webhook) make every request through `outbound_client`,
and read every secret through `secret`/`fill_secrets`, so one policy covers them all.
"""

from .client import failure, outbound_client, status_line
from .policy import OutboundRefused, own_names
from .secrets import check_secret_name, check_secret_references, fill_secrets, secret, unset_secrets

__all__ = [
    "OutboundRefused",
    "check_secret_name",
    "check_secret_references",
    "failure",
    "fill_secrets",
    "outbound_client",
    "own_names",
    "secret",
    "status_line",
    "unset_secrets",
]
