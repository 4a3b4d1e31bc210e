"""The gate's verdict for CI: JUnit XML (one test case per measure) and a Markdown table.

The three outcomes in JUnit: pass is a test case without children, fail a <failure>, and
inconclusive a <skipped> whose message says what would decide it; the exit status of
`flask gate` (3, or what --inconclusive maps it to) is what makes a pipeline stop.
"""

from __future__ import annotations

import json
import re
import shlex
from xml.etree import ElementTree as ET

from ndcg_labeler.services import REF_FORMS, noun

from .check import POWER, POWER_DIFFERENCE, WITHHELD, GateResult, MeasureCheck

_BADGE = {"pass": "✅ passed", "fail": "❌ failed", "inconclusive": "❔ inconclusive"}


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.2e}"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _summary(check: MeasureCheck) -> str:
    return (
        f"{check.measure}: {check.outcome}; baseline {_num(check.baseline)}, candidate "
        f"{_num(check.candidate)}, delta {_signed(check.delta)} over {check.queries} "
        f"{noun(check.queries, 'query', 'queries')}; "
        f"p {_p(check.p_value)}, Holm-adjusted p {_p(check.p_adjusted)}, non-inferiority p "
        f"{_p(check.p_noninferiority)}; {check.note}"
    )


def power_line(check: MeasureCheck) -> str:
    """Queries for power under the t rule; the PPI interval and λ̂ under ppi:JUDGE (the
    reports' line beside each measure's note)."""
    if check.ppi is not None:
        low, high, lam = check.ppi["ci_low"], check.ppi["ci_high"], check.ppi["lambda"]
        if low is None or high is None:
            return f"No PPI++ interval: {check.ppi['reason']}"
        return (
            f"PPI++ 95% t interval of the set's mean d [{low:.4f}, {high:.4f}], λ {_num(lam)}, "
            f"{check.ppi['audit']['status']}"
        )
    return (
        f"Queries for {POWER:.0%} power: {_count(check.sample_size.observed)} at the observed "
        f"delta, {_count(check.sample_size.at_difference)} at {POWER_DIFFERENCE:g}"
    )


def labels_line(result: GateResult) -> str:
    """What the grades were: people's, or a machine judge's (said plainly) with "k of N queries
    audited" as every machine figure says it, and how many of the judge's answers failed when
    some did."""
    parts = [_labels_words(result)]
    if result.audit is not None:
        parts.append(result.audit.text)
        if result.audit.failed_note:
            parts.append(result.audit.failed_note)
    return "; ".join(parts)


def _labels_words(result: GateResult) -> str:
    """The label source in words."""
    kind, _, judge = result.labels.partition(":")
    if kind == "machine":
        return f"labels machine:{judge}: machine labels only, from judge {judge}"
    if kind == "ppi":
        return (
            f"labels ppi:{judge}: PPI++ estimates of the human means over all queries, from "
            f"judge {judge}'s labels on every query corrected by people's grades on its audited "
            "queries (undefined values count 0)"
        )
    if kind == "fill":
        return (
            f"labels fill:{judge}: human grades, and machine labels from judge {judge} "
            "where a pair has no human grade"
        )
    return "labels human: people's grades and imported qrels"


def rule_line(result: GateResult) -> str:
    """The tests behind the outcomes, in the report's first line."""
    if result.labels.startswith("ppi:"):
        return (
            "fail: Holm-adjusted two-sided z-test on the PPI++ estimate of mean d, pass: "
            "one-sided non-inferiority z-test on it"
        )
    return "fail: Holm-adjusted paired t-test, pass: one-sided non-inferiority t-test"


def junit_xml(result: GateResult) -> str:
    """A JUnit XML report: a test case per measure, a failure per fail, a skip per open one."""
    failures = sum(1 for m in result.measures if m.outcome == "fail")
    skipped = sum(1 for m in result.measures if m.outcome == "inconclusive")
    suite = ET.Element(
        "testsuite",
        name=f"ndcg-labeler gate: {result.candidate} vs {result.baseline} on {result.testset}",
        tests=str(len(result.measures)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("outcome", result.outcome),
        ("labels", result.labels),
        ("machine_labels", str(result.machine_labels).lower()),
        ("max_drop", f"{result.max_drop:g}"),
        ("alpha", f"{result.alpha:g}"),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    for check in result.measures:
        case = ET.SubElement(
            suite, "testcase", classname=f"gate.{result.testset}", name=check.measure
        )
        if check.outcome == "fail":
            failure = ET.SubElement(
                case,
                "failure",
                message=(
                    f"{check.measure} failed: regressed by {_signed(check.delta)} "
                    f"(Holm-adjusted p {_p(check.p_adjusted)} < alpha {result.alpha:g})"
                ),
                type="regression",
            )
            lines = [_summary(check), "worst queries (qid: baseline → candidate):"]
            lines += [
                f"  {c.qid}: {c.baseline:.4f} → {c.candidate:.4f} ({c.delta:+.4f})"
                for c in check.worst
            ]
            if result.queries_withheld:
                lines[1:] = [f"worst queries not shown: {WITHHELD}"]
            failure.text = "\n".join(lines)
        elif check.outcome == "inconclusive":
            ET.SubElement(case, "skipped", message=f"{check.measure} inconclusive: {check.note}")
        out = [_summary(check), power_line(check), labels_line(result)]
        ET.SubElement(case, "system-out").text = "\n".join(out)
    root = ET.Element("testsuites", name="ndcg-labeler gate")
    root.set("tests", suite.get("tests", "0"))
    root.set("failures", str(failures))
    root.set("skipped", str(skipped))
    root.append(suite)
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + _XML_FORBIDDEN.sub(_escaped, text) + "\n"


# Characters XML 1.0 forbids even as references (ElementTree writes them as they are, and a CI
# tool then refuses the whole report); a qid from a TREC file may hold one.
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _escaped(found: re.Match[str]) -> str:
    """A forbidden character written as Python would, e.g. \\x01 or \\ud800."""
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown(result: GateResult) -> str:
    """A short Markdown report for a pull-request comment (worst five queries per failure)."""
    lines = [
        f"### Retrieval gate: {_BADGE[result.outcome]}",
        "",
        f"Candidate **{_cell(result.candidate)}** against baseline **{_cell(result.baseline)}** "
        f"on test set **{_cell(result.testset)}** (max drop {result.max_drop:g}, "
        f"alpha {result.alpha:g}; {rule_line(result)}).",
        "",
        f"Grades: {_cell(labels_line(result))}.",
        "",
        "| measure | baseline | candidate | delta | queries | p | p (Holm) | p (non-inf.) "
        "| outcome | queries needed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for m in result.measures:
        lines.append(
            f"| {m.measure} | {_num(m.baseline)} | {_num(m.candidate)} | {_signed(m.delta)} "
            f"| {m.queries} | {_p(m.p_value)} | {_p(m.p_adjusted)} | {_p(m.p_noninferiority)} "
            f"| {m.outcome} | {_count(m.queries_needed)} |"
        )
    lines.append("")
    lines += [f"- {m.measure}: {_cell(m.note)} {_cell(power_line(m))}." for m in result.measures]
    for m in result.measures:
        if m.outcome != "fail":
            continue
        if result.queries_withheld:
            lines += ["", f"Worst queries for {m.measure}: not shown ({WITHHELD})."]
            continue
        lines += [
            "",
            f"Worst queries for {m.measure}:",
            "",
            "| qid | baseline | candidate | delta |",
            "| --- | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {_cell(c.qid)} | {c.baseline:.4f} | {c.candidate:.4f} | {c.delta:+.4f} |"
            for c in m.worst
        ]
    return "\n".join(lines) + "\n"


def _ref(name: str, ident: int) -> str:
    """The name, unless `flask gate` and the API could read it otherwise (services.resolve_ref):
    a name of digits alone could be another's id, today or once one gets that id, and a name
    starting "id:" or "name:" reads as that form. Such a name is given as `name:NAME`, which
    means that name whatever else exists; a name with spaces around it (stripped when read)
    as `id:N`."""
    if name != name.strip() or not name:
        return f"id:{ident}"
    form, colon, _ = name.partition(":")
    if (name.isascii() and name.isdigit()) or (colon and form in REF_FORMS):
        return f"name:{name}"
    return name


def refs(result: GateResult) -> tuple[str, str, str]:
    """How the test set, the baseline and the candidate are named in the printed command and
    API call: by name, in the `name:` form where a plain name could be read as another."""
    if result.ids is None:
        return result.testset, result.baseline, result.candidate
    names = (result.testset, result.baseline, result.candidate)
    found = tuple(_ref(name, ident) for name, ident in zip(names, result.ids, strict=True))
    return found[0], found[1], found[2]


def cli_command(result: GateResult) -> str:
    """The `flask gate` command line that asks for the same verdict (for a CI script)."""
    testset, baseline, candidate = refs(result)
    words = ["flask", "--app", "app", "gate", testset]
    words += ["--baseline", baseline, "--candidate", candidate]
    for check in result.measures:
        words += ["--measure", check.measure]
    words += ["--max-drop", f"{result.max_drop:g}", "--alpha", f"{result.alpha:g}"]
    if result.labels != "human":
        words += ["--labels", result.labels]
    return shlex.join(words)


def api_body(result: GateResult) -> str:
    """The JSON body of `POST /api/testsets/<set>/gate` that asks for the same verdict (the
    set in the path as refs(result) names it)."""
    _, baseline, candidate = refs(result)
    body = {
        "baseline": baseline,
        "candidate": candidate,
        "measure": [check.measure for check in result.measures],
        "max_drop": result.max_drop,
        "alpha": result.alpha,
        "labels": result.labels,
    }
    return json.dumps(body, ensure_ascii=False)
