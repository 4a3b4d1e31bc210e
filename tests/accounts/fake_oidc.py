"""A small OpenID Connect provider on 127.0.0.1 for the single sign-on tests.

It serves discovery, the JWKS, an authorization endpoint that consents at once (it checks
the client, the redirect URI and that a S256 code challenge came) and a token endpoint that
checks the code, the redirect URI, the client secret and the PKCE verifier against the
challenge before it signs an ID token with its test key. `mischief` makes the next tokens
wrong in one named way, so that each refusal can be tested.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from joserfc import jwt
from joserfc.jwk import RSAKey
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

CLIENT_ID = "ndcg-labeler-test"
CLIENT_SECRET = "client-secret-for-tests"
# The ways a token can be wrong: each is a test of a refusal.
MISCHIEF = ("wrong_issuer", "wrong_audience", "expired", "bad_signature", "wrong_nonce")


@dataclass
class Grant:
    """What the authorization endpoint remembers about one code."""

    challenge: str
    nonce: str
    redirect_uri: str


@dataclass
class FakeProvider:
    """The provider, its key and what it was asked."""

    subject: str = "user-123"
    claims: dict[str, Any] = field(default_factory=dict)
    mischief: str | None = None
    discovery_issuer: str | None = None  # a discovery document naming another issuer
    key: RSAKey = field(
        default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "test-key"})
    )
    grants: dict[str, Grant] = field(default_factory=dict)
    token_requests: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server = make_server("127.0.0.1", 0, self.wsgi, threaded=True)
        self.issuer = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.thread.join(timeout=5)
        self.server.server_close()

    def wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        """Route the provider's four endpoints."""
        request = Request(environ)
        routes = {
            "/.well-known/openid-configuration": self.discovery,
            "/jwks": self.jwks,
            "/authorize": self.authorize,
            "/token": self.token,
        }
        handler = routes.get(request.path)
        response = handler(request) if handler else Response("not found", 404)
        return response(environ, start_response)

    def discovery(self, request: Request) -> Response:
        """OpenID Connect Discovery 1.0."""
        return _json(
            {
                "issuer": self.discovery_issuer or self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "response_types_supported": ["code"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "code_challenge_methods_supported": ["S256"],
            }
        )

    def jwks(self, request: Request) -> Response:
        """The public half of the signing key."""
        return _json({"keys": [self.key.as_dict(private=False)]})

    def authorize(self, request: Request) -> Response:
        """Consent at once and send the browser back with a code."""
        args = request.args
        if (
            args.get("client_id") != CLIENT_ID
            or args.get("response_type") != "code"
            or args.get("code_challenge_method") != "S256"
            or not args.get("code_challenge")
            or "openid" not in args.get("scope", "").split()
        ):
            return Response("bad authorization request", 400)
        code = secrets.token_urlsafe(16)
        grant = Grant(args["code_challenge"], args.get("nonce", ""), args["redirect_uri"])
        self.grants[code] = grant
        query = urlencode({"code": code, "state": args.get("state", "")})
        return Response(status=302, headers={"Location": f"{args['redirect_uri']}?{query}"})

    def token(self, request: Request) -> Response:
        """Trade a code for tokens after checking the client and the PKCE verifier."""
        form = request.form.to_dict()
        self.token_requests.append(form)
        grant = self.grants.pop(form.get("code", ""), None)
        auth = request.authorization
        if auth is None or (auth.username, auth.password) != (CLIENT_ID, CLIENT_SECRET):
            return _json({"error": "invalid_client"}, 401)
        if grant is None or form.get("redirect_uri") != grant.redirect_uri:
            return _json({"error": "invalid_grant"}, 400)
        verifier = form.get("code_verifier", "")
        digest = hashlib.sha256(verifier.encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant.challenge:
            return _json({"error": "invalid_grant", "error_description": "PKCE"}, 400)
        id_token = self.id_token(grant)
        return _json({"access_token": "at", "token_type": "Bearer", "id_token": id_token})

    def id_token(self, grant: Grant) -> str:
        """An ID token for the grant, made wrong in the way `mischief` names."""
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": self.subject,
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "nonce": grant.nonce,
            **self.claims,
        }
        key, header = self.key, {"alg": "RS256", "kid": "test-key"}
        if self.mischief == "wrong_issuer":
            claims["iss"] = "http://127.0.0.1:1/elsewhere"
        elif self.mischief == "wrong_audience":
            claims["aud"] = "another-client"
        elif self.mischief == "expired":
            claims["exp"] = now - 3600
        elif self.mischief == "wrong_nonce":
            claims["nonce"] = "not-the-one-sent"
        elif self.mischief == "bad_signature":
            key = RSAKey.generate_key(2048, parameters={"kid": "test-key"})
        return jwt.encode(header, claims, key)


def _json(data: dict[str, Any], status: int = 200) -> Response:
    import json

    return Response(json.dumps(data), status, content_type="application/json")
