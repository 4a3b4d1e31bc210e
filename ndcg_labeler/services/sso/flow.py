"""The authorization code flow with PKCE (RFC 7636) and the checks on the ID token it returns.

`begin` makes a fresh state, nonce and code verifier, which the view keeps in the signed
session cookie, and the provider's authorization URL. `finish` checks the state, trades the
code (and the verifier) for tokens at the token endpoint, and accepts the ID token only when
its signature verifies with one of the provider's keys and its issuer, audience, expiry and
nonce are the ones expected (OpenID Connect Core 1.0 §3.1.3.7).
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass
from typing import Any

from flask import current_app

from ndcg_labeler.models import User
from ndcg_labeler.services import ServiceError, outbound

from .people import person_for
from .provider import TIMEOUT, Provider, provider, signing_keys

# Clocks of the provider and this server may differ a little.
LEEWAY_SECONDS = 60


class SSOError(ServiceError):
    """A sign-in through the identity provider that cannot be accepted, and why."""


@dataclass(frozen=True)
class Pending:
    """What the browser's session keeps between `begin` and `finish`."""

    state: str
    nonce: str
    verifier: str
    next: str

    def as_dict(self) -> dict[str, str]:
        """For the session cookie."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Pending | None:
        """From the session cookie; None when there is nothing (or nothing usable) there."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(**{key: str(data[key]) for key in ("state", "nonce", "verifier", "next")})
        except KeyError:
            return None


def enabled() -> bool:
    """True when an issuer and a client id are configured."""
    config = current_app.config
    return bool(config.get("NDCG_OIDC_ISSUER") and config.get("NDCG_OIDC_CLIENT_ID"))


def begin(redirect_uri: str, next_url: str) -> tuple[str, Pending]:
    """The provider's authorization URL to send the browser to, and what to keep meanwhile."""
    # Authlib and joserfc (with cryptography) cost ~0.2 s to import: only when someone signs in.
    from authlib.common.security import generate_token
    from authlib.common.urls import add_params_to_uri
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    found = _provider()
    pending = Pending(
        state=secrets.token_urlsafe(24),
        nonce=secrets.token_urlsafe(24),
        verifier=generate_token(64),  # 43-128 characters (RFC 7636 §4.1)
        next=next_url,
    )
    url = add_params_to_uri(
        found.authorization_endpoint,
        [
            ("response_type", "code"),
            ("client_id", current_app.config["NDCG_OIDC_CLIENT_ID"]),
            ("redirect_uri", redirect_uri),
            ("scope", current_app.config["NDCG_OIDC_SCOPES"]),
            ("state", pending.state),
            ("nonce", pending.nonce),
            ("code_challenge", create_s256_code_challenge(pending.verifier)),
            ("code_challenge_method", "S256"),
        ],
    )
    return url, pending


def finish(args: dict[str, str], pending: Pending | None, redirect_uri: str) -> User:
    """The person the provider's answer (`args`: the callback's query) signs in."""
    if pending is None:
        raise SSOError("this sign-in was not started here, or it was already used; start again")
    if not secrets.compare_digest(args.get("state", ""), pending.state):
        raise SSOError("the sign-in answer does not belong to this browser's request (state)")
    if args.get("error"):
        described = args.get("error_description") or args["error"]
        raise SSOError(f"the identity provider refused the sign-in: {described[:200]}")
    code = args.get("code")
    if not code:
        raise SSOError("the identity provider's answer carries no authorization code")
    found = _provider()
    id_token = _trade_code(found, code, pending.verifier, redirect_uri)
    claims = _checked_claims(found, id_token, pending.nonce)
    return person_for(claims)


def _provider() -> Provider:
    """The configured issuer's endpoints (a ServiceError names what is wrong with them)."""
    if not enabled():
        raise SSOError("single sign-on is not configured (NDCG_OIDC_ISSUER, NDCG_OIDC_CLIENT_ID)")
    return provider(current_app.config["NDCG_OIDC_ISSUER"])


def _trade_code(found: Provider, code: str, verifier: str, redirect_uri: str) -> str:
    """POST the code and the PKCE verifier to the token endpoint; the ID token it returns."""
    import httpx

    config = current_app.config
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "client_id": config["NDCG_OIDC_CLIENT_ID"],
    }
    secret = config.get("NDCG_OIDC_CLIENT_SECRET")
    auth = (config["NDCG_OIDC_CLIENT_ID"], secret) if secret else None
    try:
        with outbound.outbound_client() as client:
            response = client.post(found.token_endpoint, data=form, auth=auth, timeout=TIMEOUT)
    except (httpx.HTTPError, outbound.OutboundRefused) as exc:
        failure = outbound.failure(exc, found.token_endpoint, TIMEOUT)
        raise SSOError(
            f"could not reach the identity provider's token endpoint: {failure}"
        ) from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code != 200 or not isinstance(answer, dict):
        # An OAuth error code (RFC 6749 §5.2) is short and meant to be shown; a body is not.
        error = answer.get("error") if isinstance(answer, dict) else None
        reason = f" ({str(error)[:80]})" if error else ""
        raise SSOError(
            f"the identity provider's token endpoint answered "
            f"{outbound.status_line(response)}{reason}"
        )
    id_token = answer.get("id_token")
    if not isinstance(id_token, str):
        raise SSOError("the identity provider returned no ID token (is 'openid' in the scopes?)")
    return id_token


def _checked_claims(found: Provider, id_token: str, nonce: str) -> dict[str, Any]:
    """The ID token's claims, once its signature, issuer, audience, expiry and nonce hold."""
    from joserfc import jwt
    from joserfc.errors import ExpiredTokenError, JoseError

    config = current_app.config
    try:
        try:
            token = jwt.decode(id_token, signing_keys(found), algorithms=list(found.algorithms))
        except JoseError:
            # A key rotated since the keys were read: read them once more, then decide.
            keys = signing_keys(found, refresh=True)
            token = jwt.decode(id_token, keys, algorithms=list(found.algorithms))
        registry = jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "value": found.issuer},
            aud={"essential": True, "value": config["NDCG_OIDC_CLIENT_ID"]},
            sub={"essential": True},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        registry.validate(token.claims)
    except ExpiredTokenError:
        raise SSOError("the identity provider's ID token has expired; sign in again") from None
    except JoseError as exc:
        raise SSOError(f"the identity provider's ID token is refused: {_why(exc)}") from None
    return dict(token.claims)


def _why(exc: Exception) -> str:
    """A short reason from joserfc's error ('invalid_claim: Invalid claim: aud' and so on)."""
    detail = getattr(exc, "description", None) or exc.error
    return f"{detail}" if detail else type(exc).__name__
