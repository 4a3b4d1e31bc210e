"""Which addresses the server may connect to on an admin's behalf (NDCG_OUTBOUND_ALLOW/DENY)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

from flask import current_app, has_request_context, request

from ndcg_labeler.services import ServiceError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Refused whatever the settings say: NDCG_OUTBOUND_ALLOW narrows, it never widens these.
ALWAYS_REFUSED: dict[str, str] = {
    "169.254.0.0/16": "a link-local or cloud metadata address",
    "fd00:ec2::254/128": "a cloud metadata address",
    "fe80::/10": "a link-local address",
    "0.0.0.0/8": "an address of 'this network'",
    "::/128": "the unspecified address",
}
_REFUSED = [(ipaddress.ip_network(net), why) for net, why in ALWAYS_REFUSED.items()]
_LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))


class OutboundRefused(ServiceError):
    """The outbound policy refused a connection before it was made."""


@dataclass(frozen=True)
class Rules:
    """Host names, networks and '*' from one comma-separated setting."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = ()
    everything: bool = False

    @classmethod
    def parse(cls, text: str, setting: str) -> Rules:
        """The rules of a setting's value; a ServiceError names the setting for a bad entry."""
        hosts, networks, everything = set(), [], False
        for entry in (e.strip() for e in (text or "").split(",")):
            if not entry:
                continue
            if entry == "*":
                everything = True
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                if "/" in entry or ":" in entry:
                    message = f"{setting}: '{entry}' is neither a host nor a CIDR"
                    raise ServiceError(message) from None
                hosts.add(entry.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks), everything)

    def match(self, host: str, address: Address) -> bool:
        """Whether the host name, or the address connected to, is listed."""
        return (
            self.everything
            or host.lower().rstrip(".") in self.hosts
            or any(address in network for network in self.networks)
        )


@dataclass(frozen=True)
class Policy:
    """What may be reached: built in once per request or job, then shared by worker threads."""

    allow: Rules | None = None  # None: everything not refused
    deny: Rules = field(default_factory=Rules)
    # (address, port) pairs the app itself answers on; a loopback one stands for all loopback.
    own: frozenset[tuple[Address, int]] = frozenset()

    def refusal(self, host: str, address: Address, port: int) -> str:
        """Why connecting to `address`:`port` (for `host`) is refused, or '' when it is not."""
        address = _plain(address)
        for network, why in _REFUSED:
            if address in network:
                return f"{address} is {why}"
        if self.deny.match(host, address):
            return f"{host} ({address}) is listed in NDCG_OUTBOUND_DENY"
        if any(_same_server(address, port, mine, its_port) for mine, its_port in self.own):
            return f"{host}:{port} is this application's own address"
        if self.allow is not None and not self.allow.match(host, address):
            return f"{host} ({address}) is not listed in NDCG_OUTBOUND_ALLOW"
        return ""

    def choose(self, host: str, port: int, addresses: list[Address]) -> list[Address]:
        """The resolved addresses that may be connected to, in order; OutboundRefused if none."""
        allowed = [a for a in addresses if not self.refusal(host, a, port)]
        if not allowed:
            why = self.refusal(host, addresses[0], port) if addresses else f"{host} has no address"
            raise OutboundRefused(f"refused by the outbound policy: {why}")
        return allowed


def resolve(host: str, port: int) -> list[Address]:
    """Every address the host name resolves to (an IP literal is itself), in resolver order."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return []
    out: list[Address] = []
    for *_, sockaddr in found:
        address = _plain(ipaddress.ip_address(str(sockaddr[0]).split("%")[0]))
        if address not in out:
            out.append(address)
    return out


def own_names() -> list[str]:
    """The app's own 'host:port' names: the request's Host and the address the WSGI server is
    bound to when there is a request, plus SERVER_NAME when set (ports 80 and 443 without one).

    A background job has no request: the job records these when it is queued (see jobs)."""
    names: list[str] = []
    if has_request_context():
        default = 443 if request.scheme == "https" else 80
        names.append(_name(*_host_port(request.host, default)))
        bound = request.environ.get("SERVER_NAME"), request.environ.get("SERVER_PORT")
        if bound[0] and str(bound[1] or "").isdigit():
            names.append(_name(str(bound[0]), int(bound[1])))
    if current_app.config.get("SERVER_NAME"):
        host, port = _host_port(current_app.config["SERVER_NAME"], 0)
        names.extend([_name(host, port)] if port else [_name(host, 80), _name(host, 443)])
    return names


def current_policy(also_own: Iterable[str] = ()) -> Policy:
    """The policy from the app's settings; the app's own names are `own_names()` and `also_own`."""
    config = current_app.config
    allow_text = config.get("NDCG_OUTBOUND_ALLOW") or ""
    allow = Rules.parse(allow_text, "NDCG_OUTBOUND_ALLOW") if allow_text.strip() else None
    deny = Rules.parse(config.get("NDCG_OUTBOUND_DENY") or "", "NDCG_OUTBOUND_DENY")
    names = [_host_port(name, 80) for name in {*own_names(), *also_own}]
    own = {(address, port) for host, port in names for address in _own_addresses(host, port)}
    return Policy(allow, deny, frozenset(own))


def _own_addresses(host: str, port: int) -> list[Address]:
    """The addresses a name of the app stands for; a wildcard bind means this machine's."""
    addresses = resolve(host, port)
    if any(a.is_unspecified for a in addresses):
        addresses += [ipaddress.ip_address("127.0.0.1"), *resolve(socket.gethostname(), port)]
    return addresses


def _name(host: str, port: int) -> str:
    """'host:port', with an IPv6 address in brackets."""
    host = host.strip("[]")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _host_port(text: str, default: int) -> tuple[str, int]:
    """'host:port', '[v6]:port' or 'host' -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or (host.count(":") and not host.endswith("]")):
        return text.strip("[]"), default
    return host.strip("[]"), int(port)


def _same_server(address: Address, port: int, mine: Address, my_port: int) -> bool:
    if port != my_port:
        return False
    if address == mine:
        return True
    # A server bound to loopback answers on every loopback address (127.0.0.2 reaches 127.0.0.1).
    return any(address in net for net in _LOOPBACK) and any(mine in net for net in _LOOPBACK)


def _plain(address: Address) -> Address:
    """An IPv4-mapped IPv6 address as the IPv4 address it reaches."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
