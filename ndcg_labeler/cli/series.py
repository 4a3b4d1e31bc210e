"""`flask run series SET [NAME]`: a test set's series, or one series' trend over time."""

from __future__ import annotations

import json

import click

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.cli.runs import run_group
from ndcg_labeler.services import ServiceError, live, series, testsets


def _f(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


@run_group.command("series")
@click.argument("testset")
@click.argument("name", required=False)
@click.option("--k", "k", type=int, default=10, show_default=True, help="Cutoff k of NDCG@k.")
@click.option("--pin", default=None, help="Pin this run (id or name) as the series' baseline.")
@click.option("--unpin", is_flag=True, help="Unpin the baseline (the last passing run is used).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@cli_errors
def series_command(
    testset: str, name: str | None, k: int, pin: str | None, unpin: bool, as_json: bool
) -> None:
    """List TESTSET's series, or NAME's trend: per run mean NDCG@k with its 95% t interval,
    judged@k, and the change against the previous run (* = paired t-test p < 0.05)."""
    test_set = testsets.require_by_name(testset)
    if name is None:
        if pin or unpin:
            raise ServiceError("name the series whose baseline to pin")
        found = series.list_series(test_set)
        if as_json:
            listed = [{"series": s.name, "runs": s.runs, "latest": s.latest.name} for s in found]
            click.echo(json.dumps({"series": listed}, ensure_ascii=False))
            return
        for summary in found:
            click.echo(f"{summary.name}\t{summary.runs} runs\tlatest {summary.latest.name}")
        if not found:
            click.echo(f"Test set '{test_set.name}' has no series yet (flask run upload --series).")
        return
    if pin or unpin:
        pinned = series.pin_baseline(test_set, name, None if unpin else pin, None)
        what = f"run '{pinned.name}'" if pinned else "the last passing run (unpinned)"
        click.echo(f"Series '{name}' is now gated against {what}.", err=as_json)
    found_trend = series.trend(test_set, name, live.ScoreOptions(k=k))
    if not found_trend.points and not (pin or unpin):
        raise ServiceError(f"test set '{test_set.name}' has no series named '{name}'")
    if as_json:
        out = found_trend.to_json()
        base, why = series.baseline(test_set, name)
        out["baseline"] = {"run": base.name if base else None, "why": why}
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    click.echo(f"run\tuploaded\tNDCG@{k}\t95% CI\tjudged@{k}\tΔ vs previous\tp")
    for p in found_trend.points:
        ci = f"{_f(p.ci_low)}–{_f(p.ci_high)}" if p.ci_low is not None else "—"
        mark = " *" if p.significant else ""
        uploaded = f"{p.run.uploaded_at:%Y-%m-%d %H:%M}"
        delta = "—" if p.delta is None else f"{p.delta:+.4f}{mark}"
        click.echo(
            f"{p.run.name}\t{uploaded}\t{_f(p.mean)}\t{ci}\t{_f(p.judged, 3)}\t{delta}\t"
            f"{_f(p.p_value, 3)}"
        )
