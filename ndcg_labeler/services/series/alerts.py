"""Alerts: a Slack-compatible JSON message ({"text": ...}) posted to NDCG_ALERT_WEBHOOK_URL,
through the outbound policy like every request the server makes."""

from __future__ import annotations

from collections.abc import Sequence

from flask import current_app

from ndcg_labeler.services import outbound

TIMEOUT = 10.0


def webhook_url() -> str:
    """The alert webhook's URL from the settings ("" when none is set)."""
    return (current_app.config.get("NDCG_ALERT_WEBHOOK_URL") or "").strip()


def post_alert(text: str, own: Sequence[str] = ()) -> tuple[str, str]:
    """Post the message; (status, error): sent | failed | not-configured, and why it failed.

    The error never echoes the receiver's body (the outbound rule for failures)."""
    import httpx

    url = webhook_url()
    if not url:
        return "not-configured", "NDCG_ALERT_WEBHOOK_URL is not set"
    try:
        with outbound.outbound_client(own) as client:
            response = client.post(url, json={"text": text}, timeout=TIMEOUT)
    except outbound.OutboundRefused as exc:
        return "failed", str(exc)
    except (httpx.TimeoutException, httpx.TransportError) as exc:
        return "failed", outbound.failure(exc, url, TIMEOUT)
    if not 200 <= response.status_code < 300:
        return "failed", outbound.status_line(response)
    return "sent", ""
