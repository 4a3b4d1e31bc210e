"""The identity provider as its discovery document describes it, and its signing keys."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ndcg_labeler.services import ServiceError, outbound

if TYPE_CHECKING:
    from joserfc.jwk import KeySet

TIMEOUT = 10.0
# Discovery documents and keys change rarely; a key the cache lacks triggers one re-read.
CACHE_SECONDS = 300.0
# The signature algorithms an ID token may use: never "none", and never a MAC keyed by
# the client secret (the provider's public keys are what proves who signed).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")


@dataclass(frozen=True)
class Provider:
    """The endpoints of the configured issuer, from its discovery document."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    algorithms: tuple[str, ...]


@dataclass
class _Cached:
    provider: Provider | None = None
    keys: KeySet | None = None
    read_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


_CACHE: dict[str, _Cached] = {}


def provider(issuer: str) -> Provider:
    """The issuer's discovery document, read at most every CACHE_SECONDS."""
    cached = _CACHE.setdefault(issuer, _Cached())
    with cached.lock:
        if cached.provider is None or time.monotonic() - cached.read_at > CACHE_SECONDS:
            cached.provider = _discover(issuer)
            cached.keys = None
            cached.read_at = time.monotonic()
        return cached.provider


def signing_keys(found: Provider, *, refresh: bool = False) -> KeySet:
    """The provider's public keys (re-read when `refresh`: a token named a key not seen yet)."""
    from joserfc.jwk import KeySet

    cached = _CACHE.setdefault(found.issuer, _Cached())
    with cached.lock:
        if cached.keys is None or refresh:
            document = _get_json(found.jwks_uri, "its signing keys")
            try:
                cached.keys = KeySet.import_key_set(document)
            except (ValueError, TypeError, KeyError) as exc:
                raise ServiceError(
                    f"the identity provider's signing keys are unusable: {exc}"
                ) from None
        return cached.keys


def _discover(issuer: str) -> Provider:
    """Read and check `{issuer}/.well-known/openid-configuration` (OpenID Connect Discovery)."""
    document = _get_json(f"{issuer}/.well-known/openid-configuration", "its discovery document")
    if document.get("issuer", "").rstrip("/") != issuer:
        # Discovery 1.0 §4.3: the document must name the issuer it was fetched for.
        raise ServiceError(
            f"the identity provider's discovery document names issuer "
            f"{document.get('issuer')!r}, not {issuer!r} (NDCG_OIDC_ISSUER)"
        )
    missing = [
        name
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri")
        if not isinstance(document.get(name), str)
    ]
    if missing:
        raise ServiceError(f"the identity provider's discovery document lacks {', '.join(missing)}")
    offered = document.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithms = tuple(alg for alg in ALGORITHMS if alg in offered)
    if not algorithms:
        raise ServiceError(
            f"the identity provider signs ID tokens with {', '.join(map(str, offered))}; "
            f"ndcg-labeler accepts {', '.join(ALGORITHMS)}"
        )
    return Provider(
        issuer=issuer,
        authorization_endpoint=document["authorization_endpoint"],
        token_endpoint=document["token_endpoint"],
        jwks_uri=document["jwks_uri"],
        algorithms=algorithms,
    )


def _get_json(url: str, what: str) -> dict[str, Any]:
    """GET a JSON object from the provider under the outbound policy."""
    import httpx

    try:
        with outbound.outbound_client() as client:
            response = client.get(url, timeout=TIMEOUT, headers={"Accept": "application/json"})
    except (httpx.HTTPError, outbound.OutboundRefused) as exc:
        raise ServiceError(
            f"could not read {what} from the identity provider: "
            f"{outbound.failure(exc, url, TIMEOUT)}"
        ) from None
    if response.status_code != 200:
        raise ServiceError(
            f"the identity provider answered {outbound.status_line(response)} for {what}"
        )
    try:
        document = response.json()
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise ServiceError(f"the identity provider's {what} is not a JSON object")
    return document
