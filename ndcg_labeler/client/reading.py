"""The client's reading: the test sets a token may see, their checklists, runs, series and
grades, what the runs score, how two compare, what to label next between them, and the release
gate's verdict."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ndcg_labeler.client.wire import ClientError, Connection, named, query_params, ref


class Reading(Connection):
    """Test sets, runs, qrels, scores, comparisons and the gate of one server."""

    def test_sets(self) -> list[dict[str, Any]]:
        """The test sets the token may see: id, name, scale, sizes."""
        return self._get("testsets")["test_sets"]

    def status(self, test_set: str | int) -> dict[str, Any]:
        """The test set's checklist and the next action for the token's owner."""
        return self._get(f"testsets/{ref(test_set)}/status")

    def runs(self, test_set: str | int, **filters: Any) -> list[dict[str, Any]]:
        """The test set's runs, oldest first, each with its mean NDCG@10 and 95% interval.

        `filters`: the list's q, tag, archived and sort; every page is fetched in turn.
        """
        out: list[dict[str, Any]] = []
        page: int | None = 1
        while page is not None:
            found = self._get(f"testsets/{ref(test_set)}/runs", params={**filters, "page": page})
            out.extend(found["runs"])
            page = found.get("next_page")
        return out

    def series(self, test_set: str | int) -> list[dict[str, Any]]:
        """The test set's series by name: {"series", "runs", "latest", "latest_id"} each."""
        return self._get(f"testsets/{ref(test_set)}/series")["series"]

    def series_trend(self, test_set: str | int, name: str, k: int = 10) -> dict[str, Any]:
        """The series' trend (`flask run series SET NAME --json`): each run's mean NDCG@k, its
        interval and its change against the previous run under "points", the "baseline"
        scheduled runs are gated against, and the latest "checks"."""
        return self._get(f"testsets/{ref(test_set)}/series/{ref(name)}", params={"k": k})

    def qrels(self, test_set: str | int, *, as_frame: bool | None = None) -> Any:
        """The grades scoring uses: {qid: {docid: grade}} (pytrec_eval's and ranx's shape), or a
        DataFrame with columns qid, docid, grade when pandas is installed and `as_frame` is not
        False."""
        grades = self._get(f"testsets/{ref(test_set)}/qrels")["qrels"]
        if not _want_frame(as_frame):
            return grades
        import pandas as pd

        rows = [(q, d, g) for q, docs in grades.items() for d, g in docs.items()]
        return pd.DataFrame(rows, columns=["qid", "docid", "grade"])

    def scores(
        self,
        test_set: str | int,
        run: str | int,
        measures: Iterable[str] = ("nDCG@10",),
        labels: str = "human",
        *,
        as_frame: bool | None = None,
        **options: Any,
    ) -> Any:
        """Per-query values of `measures` under `labels` (human, machine:JUDGE, fill:JUDGE,
        ppi:JUDGE). Measures are named the ir_measures way (`nDCG@10`, `P(rel=2)@5`, `AP`,
        `R@100`, `RR@10`, `Rprec`, `bpref`, `infAP`, `Success@10`, `Judged@10`, `NumRel`,
        `NumRet`) or trec_eval's (`ndcg_cut_10`, `P_5`, `map`, ...); the server checks them.

        Returns {qid: {measure: value}}, or a DataFrame indexed by qid with one column per
        measure when pandas is installed and `as_frame` is not False. `options` are the scores
        endpoint's other parameters (gain, ideal, judged_only, aggregation).
        """
        names = list(measures)
        if not names:
            raise ClientError("name at least one measure, e.g. measures=['nDCG@10']")
        # One request for every measure: the server reads the run and its grades once.
        answer = self._get(
            f"testsets/{ref(test_set)}/runs/{ref(run)}/scores",
            params={"labels": labels, **query_params(options), "measure": names},
        )
        values: dict[str, dict[str, float | None]] = {}
        for row in answer["queries"]:
            found = row.get("measures", {})
            values[str(row["qid"])] = {name: found.get(name) for name in names}
        if not _want_frame(as_frame):
            return values
        import pandas as pd

        frame = pd.DataFrame.from_dict(values, orient="index", columns=names)
        frame.index.name = "qid"
        return frame

    def score_summary(
        self,
        test_set: str | int,
        run: str | int,
        k: int = 10,
        labels: str = "human",
        **options: Any,
    ) -> dict[str, Any]:
        """The whole answer of the scores endpoint (mean, n, interval, per query), as JSON."""
        return self._get(
            f"testsets/{ref(test_set)}/runs/{ref(run)}/scores",
            params={"k": k, "labels": labels, **query_params(options)},
        )

    def compare(
        self,
        test_set: str | int,
        a: str | int,
        b: str | int,
        k: int = 10,
        labels: str = "human",
        **options: Any,
    ) -> dict[str, Any]:
        """Run `b` against run `a`: per-query differences, the paired tests and intervals."""
        return self._get(
            f"testsets/{ref(test_set)}/compare",
            params={
                "a": named(a),
                "b": named(b),
                "k": k,
                "labels": labels,
                **query_params(options),
            },
        )

    def next_labels(
        self,
        test_set: str | int,
        a: str | int,
        b: str | int,
        depth: int | None = None,
        labels: str = "human",
        **options: Any,
    ) -> dict[str, Any]:
        """What to label next to tell run `b` from run `a`: the unjudged pairs of their top
        `depth` under "pairs", beside the flip test's figures (`flask pool --for-compare`).
        Without `depth` the server's rule applies: k's top (at most 1000), or 10 without k."""
        params = {"a": named(a), "b": named(b), "labels": labels, **query_params(options)}
        if depth is not None:
            params["depth"] = depth
        return self._get(f"testsets/{ref(test_set)}/next-labels", params=params)

    def gate(
        self,
        test_set: str | int,
        baseline: str | int,
        candidate: str | int,
        measures: Iterable[str] | None = None,
        *,
        max_drop: float | None = None,
        alpha: float | None = None,
        labels: str = "human",
    ) -> dict[str, Any]:
        """The release gate's verdict as JSON ("outcome": pass, fail or inconclusive)."""
        body = _gate_body(baseline, candidate, measures, max_drop, alpha, labels)
        return self._send("post", f"testsets/{ref(test_set)}/gate", json=body)

    def gate_report(
        self,
        test_set: str | int,
        baseline: str | int,
        candidate: str | int,
        measures: Iterable[str] | None = None,
        *,
        fmt: str = "junit",
        max_drop: float | None = None,
        alpha: float | None = None,
        labels: str = "human",
        to: str | os.PathLike[str] | None = None,
    ) -> str:
        """The release gate's verdict as a CI report: fmt "junit" (XML) or "markdown"; the
        text, also written to the path `to`."""
        if fmt not in ("junit", "markdown"):
            raise ClientError(f"fmt must be junit or markdown, not '{fmt}'")
        body = _gate_body(baseline, candidate, measures, max_drop, alpha, labels)
        path = f"testsets/{ref(test_set)}/gate"
        text = self._text(path, {"format": fmt}, "post", json=body)
        if to is not None:
            with open(to, "w", encoding="utf-8", newline="") as out:
                out.write(text)
        return text


def _gate_body(
    baseline: str | int,
    candidate: str | int,
    measures: Iterable[str] | None,
    max_drop: float | None,
    alpha: float | None,
    labels: str,
) -> dict[str, Any]:
    """The gate request's JSON body: only the options given, the server's defaults for others."""
    body: dict[str, Any] = {
        "baseline": named(baseline),
        "candidate": named(candidate),
        "labels": labels,
    }
    if measures is not None:
        body["measure"] = list(measures)
    if max_drop is not None:
        body["max_drop"] = max_drop
    if alpha is not None:
        body["alpha"] = alpha
    return body


def _want_frame(as_frame: bool | None) -> bool:
    """True when a DataFrame is asked for, or (None) when pandas is installed."""
    if as_frame is False:
        return False
    try:
        import pandas  # noqa: F401
    except ImportError:
        if as_frame:
            raise ClientError("as_frame=True needs pandas (pip install pandas)") from None
        return False
    return True
