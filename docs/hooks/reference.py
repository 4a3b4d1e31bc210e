"""MkDocs hook: the reference pages are built from the code, so they cannot drift from it.

The HTTP API page gets the app's own OpenAPI document rendered in place of its marker (the
command-line page needs no hook: its `mkdocs-click` blocks read the click commands).
"""

from __future__ import annotations

from typing import Any

API_PAGE = "reference/http-api.md"
MARKER = "<!-- openapi -->"
METHODS = ("get", "post", "put", "patch", "delete")
REF_PREFIX = "#/components/schemas/"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Put the rendered OpenAPI document where the HTTP API page has its marker."""
    if page.file.src_uri != API_PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{API_PAGE} lacks the marker {MARKER} where the API goes")
    from ndcg_labeler.views.openapi_spec import openapi_document

    return markdown.replace(MARKER, render_openapi(openapi_document("/")))


def render_openapi(spec: dict[str, Any]) -> str:
    """The document's operations, then its schemas, as Markdown."""
    lines = ["## Operations", ""]
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            if method in item:
                lines += _operation(method, path, item[method], shared, spec)
    lines += ["## Schemas", ""]
    for name, schema in spec["components"]["schemas"].items():
        lines += _schema_section(name, schema)
    return "\n".join(lines)


def _operation(
    method: str, path: str, op: dict[str, Any], shared: list[Any], spec: dict[str, Any]
) -> list[str]:
    lines = [f"### {method.upper()} `{path}` {{#{op['operationId']}}}", "", op["summary"], ""]
    if op.get("description"):
        lines += [op["description"], ""]
    if op.get("security", spec.get("security")) == []:
        lines += ["Public: no token needed.", ""]
    params = [*shared, *op.get("parameters", [])]
    if params:
        lines += _parameters(params)
    body = op.get("requestBody")
    if body:
        for media, content in body["content"].items():
            lines += [f"Request body (`{media}`): {_type(content['schema'])}", ""]
            if "properties" in content["schema"]:
                lines += _properties(content["schema"])
    lines += ["| status | meaning | body |", "| --- | --- | --- |"]
    for status, response in op["responses"].items():
        content = response.get("content", {})
        body_text = "; ".join(f"`{m}` {_type(c['schema'])}" for m, c in content.items()) or "—"
        lines.append(f"| {status} | {_cell(response['description'])} | {body_text} |")
    return [*lines, ""]


def _parameters(params: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| parameter | in | type | required | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for p in params:
        required = "yes" if p.get("required") else "no"
        text = _cell(p.get("description", ""))
        lines.append(f"| `{p['name']}` | {p['in']} | {_type(p['schema'])} | {required} | {text} |")
    return [*lines, ""]


def _schema_section(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name} {{#{_anchor(name)}}}", ""]
    if schema.get("description"):
        lines += [schema["description"], ""]
    if "properties" in schema:
        return [*lines, *_properties(schema)]
    return [*lines, _type(schema), ""]


def _properties(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    lines = ["| field | type | required | description |", "| --- | --- | --- | --- |"]
    for name, prop in schema["properties"].items():
        needed = "yes" if name in required else "no"
        text = _cell(prop.get("description", ""))
        lines.append(f"| `{name}` | {_type(prop)} | {needed} | {text} |")
    return [*lines, ""]


def _type(schema: dict[str, Any]) -> str:
    """A schema in a few words, with links to the named schemas it uses."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF_PREFIX)
        return f"[{name}](#{_anchor(name)})"
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array" and "items" in schema:
        kind = f"array of {_type(schema['items'])}"
    if "format" in schema:
        kind += f" ({schema['format']})"
    if "default" in schema:
        kind += f", default `{schema['default']}`"
    return kind


def _anchor(name: str) -> str:
    return "schema-" + name.lower()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
