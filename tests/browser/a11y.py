"""The accessibility walk: a bounded crawler over the app's pages, axe-core and the reflow check.

The walk starts at `/`, follows every same-origin `<a href>` it meets and visits each Flask
endpoint once (the route pattern, not the URL: a second query of the same drill-down adds
nothing), so it reaches every page a person can reach by clicking, as that person. On every
page it runs the vendored axe-core (serious and critical impacts only) and checks that the page
itself does not scroll sideways at a phone's width (390 CSS px) and at 1280 px zoomed to 200%
(a 640 CSS px viewport, which is what a browser lays out at that zoom).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

from flask import Flask
from werkzeug.exceptions import HTTPException

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core-4.14.1" / "axe.min.js"
MAX_PAGES = 120
BLOCKING = ("serious", "critical")
# (name, CSS viewport): a phone, and 1280x900 at 200% zoom.
NARROW = (("390 px", 390, 844), ("200% zoom", 640, 450))
DESKTOP = {"width": 1280, "height": 900}

# Pages that are not pages: downloads, JSON, htmx fragments and polling endpoints.
_NOT_PAGES = ("static", "main.favicon", "api_docs.openapi")
_NOT_PAGE_NAMES = ("_csv", "_json", "fragment", "live", "status", "upcoming")
_NOT_PAGE_SUFFIXES = (".csv", ".json", ".txt", ".tsv", ".jsonl", ".ico", ".md", ".xml")

_AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => ({id: v.id, impact: v.impact, count: v.nodes.length,
                targets: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
}"""

# What axe rates "minor" but issue 33 names: headers with no text, ids used twice.
_MARKUP = """() => {
  const empty = [...document.querySelectorAll('th')].filter(
    th => !th.textContent.trim() && !th.getAttribute('aria-label')).length;
  const counts = {};
  for (const el of document.querySelectorAll('[id]')) counts[el.id] = (counts[el.id] || 0) + 1;
  const twice = Object.keys(counts).filter(id => counts[id] > 1);
  return {empty, twice};
}"""

_WIDEST = """() => {
  const root = document.documentElement;
  let widest = null;
  for (const el of document.body.querySelectorAll('*')) {
    // What a scroll box clips does not widen the page; only what sticks out of one does.
    if (el.parentElement.closest('.table-scroll, pre')) continue;
    const right = el.getBoundingClientRect().right;
    if (right > innerWidth + 1 && (!widest || right > widest.right)) {
      widest = {right: Math.round(right), tag: el.tagName.toLowerCase(),
                cls: el.className && el.className.baseVal === undefined ? el.className : ''};
    }
  }
  return {scroll: root.scrollWidth, inner: innerWidth, widest};
}"""


@dataclass
class Finding:
    """One page's problems: axe violations, then the rest (sideways scrolling, empty headers,
    duplicate ids) as sentences."""

    url: str
    endpoint: str
    violations: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class Walk:
    """What a walk saw: every page visited (by endpoint) and what was wrong on each."""

    pages: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def report(self) -> str:
        """A table of pages × problems, for the assertion message."""
        lines = ["endpoint | url | problem", "--- | --- | ---"]
        for f in self.findings:
            for v in f.violations:
                where = "; ".join(v["targets"])
                lines.append(
                    f"{f.endpoint} | {f.url} | axe {v['impact']} {v['id']} ×{v['count']}: {where}"
                )
            lines += [f"{f.endpoint} | {f.url} | {o}" for o in f.problems]
        return "\n".join(lines + self.errors)


def endpoint_of(app: Flask, url: str) -> str | None:
    """The Flask endpoint a same-app URL routes to (None when it routes nowhere)."""
    parts = urlsplit(url)
    try:
        endpoint, _ = app.url_map.bind("localhost").match(parts.path, method="GET")
    except HTTPException:
        return None
    return str(endpoint)


def is_page(endpoint: str, url: str) -> bool:
    """Whether a URL renders a page a person reads (not a download, JSON or a fragment)."""
    if endpoint in _NOT_PAGES or endpoint.startswith(("api.", "exports.")):
        return False
    name = endpoint.split(".", 1)[1]
    return not (
        name.endswith(_NOT_PAGE_NAMES)
        or (name.startswith("export_") and not name.endswith("_page"))
        or urlsplit(url).path.endswith(_NOT_PAGE_SUFFIXES)
    )


def links(page: Any, base: str) -> list[str]:
    """The same-origin links on the page, without fragments."""
    # An SVG link's href is an SVGAnimatedString: resolve its value like an HTML link's.
    script = (
        "els => els.map(e => typeof e.href === 'string' ? e.href"
        " : new URL(e.href.baseVal, document.baseURI).href)"
    )
    hrefs = page.eval_on_selector_all("a[href]", script)
    return [urldefrag(h)[0] for h in hrefs if h.startswith(base + "/")]


def check_page(page: Any, url: str, endpoint: str) -> Finding:
    """Run axe at 1280 px, then measure the page's width at 390 px and at 200% zoom."""
    finding = Finding(url, endpoint)
    finding.violations = page.evaluate(_AXE_RUN)
    markup = page.evaluate(_MARKUP)
    if markup["empty"]:
        finding.problems.append(f"{markup['empty']} table header(s) without text")
    if markup["twice"]:
        finding.problems.append(f"ids used more than once: {markup['twice']}")
    for name, width, height in NARROW:
        page.set_viewport_size({"width": width, "height": height})
        measured = page.evaluate(_WIDEST)
        if measured["scroll"] > measured["inner"]:
            finding.problems.append(
                f"{name}: page {measured['scroll']} px wide in a {measured['inner']} px window"
                f" (widest: {measured['widest']})"
            )
    page.set_viewport_size(DESKTOP)
    return finding


def walk(page: Any, base: str, app: Flask, start: str = "/") -> Walk:
    """Visit every page reachable by links from `start`, once per endpoint, checking each."""
    page.context.add_init_script(path=str(AXE))
    seen: Walk = Walk()
    queue = [base + start]
    visited: set[str] = set()
    while queue and len(seen.pages) < MAX_PAGES:
        url = queue.pop(0)
        endpoint = endpoint_of(app, url)
        known = endpoint in seen.pages or url in visited
        if endpoint is None or not is_page(endpoint, url) or known:
            continue
        visited.add(url)
        response = page.goto(url)
        status = response.status if response is not None else 0
        if status >= 400:
            seen.errors.append(f"{endpoint} | {url} | HTTP {status}")
            continue
        page.wait_for_load_state("networkidle")
        landed = endpoint_of(app, page.url) or endpoint
        seen.pages[landed] = page.url
        finding = check_page(page, page.url, landed)
        if finding.violations or finding.problems:
            seen.findings.append(finding)
        queue += [u for u in links(page, base) if u not in visited]
    return seen
