"""Single sign-on with OpenID Connect: the authorization code flow with PKCE, and who signs in.

The views call `begin` (where to send the browser, and what to keep in the session) and
`finish` (the person the provider's answer stands for). Every request to the provider goes
through the outbound policy.
"""

from .flow import Pending, SSOError, begin, enabled, finish

__all__ = ["Pending", "SSOError", "begin", "enabled", "finish"]
