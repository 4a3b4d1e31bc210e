"""The gate's verdict for CI: JUnit XML (one test case per measure) and a Markdown table."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from .check import GateResult, MeasureCheck


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.2e}"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def _summary(check: MeasureCheck) -> str:
    return (
        f"{check.measure}: baseline {_num(check.baseline)}, candidate {_num(check.candidate)}, "
        f"delta {_signed(check.delta)}, p {_p(check.p_value)}, Holm-adjusted p "
        f"{_p(check.p_adjusted)} over {check.queries} queries"
    )


def junit_xml(result: GateResult) -> str:
    """A JUnit XML report: one test suite, one test case per measure, a failure per regression."""
    failures = sum(1 for m in result.measures if m.regressed)
    suite = ET.Element(
        "testsuite",
        name=f"ndcg-labeler gate: {result.candidate} vs {result.baseline} on {result.testset}",
        tests=str(len(result.measures)),
        failures=str(failures),
        errors="0",
        skipped="0",
    )
    for check in result.measures:
        case = ET.SubElement(
            suite, "testcase", classname=f"gate.{result.testset}", name=check.measure
        )
        if check.regressed:
            failure = ET.SubElement(
                case,
                "failure",
                message=(
                    f"{check.measure} regressed by {_signed(check.delta)} "
                    f"(Holm-adjusted p {_p(check.p_adjusted)} < alpha {result.alpha:g})"
                ),
                type="regression",
            )
            lines = [_summary(check), "worst queries (qid: baseline → candidate):"]
            lines += [
                f"  {c.qid}: {c.baseline:.4f} → {c.candidate:.4f} ({c.delta:+.4f})"
                for c in check.worst
            ]
            failure.text = "\n".join(lines)
        ET.SubElement(case, "system-out").text = _summary(check)
    root = ET.Element("testsuites", name="ndcg-labeler gate")
    root.set("tests", suite.get("tests", "0"))
    root.set("failures", str(failures))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown(result: GateResult) -> str:
    """A short Markdown report for a pull-request comment (worst five queries per regression)."""
    verdict = "✅ passed" if result.passed else "❌ regressed"
    lines = [
        f"### Retrieval gate: {verdict}",
        "",
        f"Candidate **{_cell(result.candidate)}** against baseline **{_cell(result.baseline)}** "
        f"on test set **{_cell(result.testset)}** (max drop {result.max_drop:g}, "
        f"alpha {result.alpha:g}, Holm-adjusted paired t-tests).",
        "",
        "| measure | baseline | candidate | delta | p | p (Holm) | queries | verdict |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in result.measures:
        lines.append(
            f"| {m.measure} | {_num(m.baseline)} | {_num(m.candidate)} | {_signed(m.delta)} "
            f"| {_p(m.p_value)} | {_p(m.p_adjusted)} | {m.queries} "
            f"| {'regressed' if m.regressed else 'ok'} |"
        )
    for m in result.measures:
        if not m.regressed:
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
