"""Requests the server makes on an admin's behalf, and where they may go.

Endpoints and judges (and any later webhook) make every request through `outbound_client`,
so one policy covers them all.
"""

from .client import failure, outbound_client, status_line
from .policy import OutboundRefused

__all__ = [
    "OutboundRefused",
    "failure",
    "outbound_client",
    "status_line",
]
