"""`flask testset import SET --ir-datasets NAME`: read from ir_datasets' local cache, never online.

A tiny dataset is registered in-process: its files are Downloads whose cache paths exist (a
downloaded dataset) or do not (one that is not downloaded); the remote source is a URL on a
reserved .invalid domain, which the offline guard refuses before any request is made.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, TestSet
from ndcg_labeler.services import interop

ir_datasets = pytest.importorskip("ir_datasets")
from ir_datasets.datasets.base import Dataset  # noqa: E402
from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries  # noqa: E402
from ir_datasets.util import Download, RequestsDownload  # noqa: E402

URL = "https://files.example.invalid/"


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """Names of a downloaded tiny dataset, of one not downloaded and of one graded 0–4."""
    home = tmp_path_factory.mktemp("irds")
    (home / "queries.tsv").write_text("1\tred dress\n2\tblue shoes\n")
    (home / "docs.tsv").write_text("d1\ta red dress\nd2\ta blue shoe\nd3\ta hat\n")
    # -1 (judged non-relevant in some collections) must become 0; 2 stays 2.
    (home / "qrels").write_text("1 0 d1 2\n1 0 d3 -1\n2 0 d2 1\n")
    (home / "qrels4").write_text("1 0 d1 4\n")

    def file(name: str, where: Path) -> Download:
        return Download([RequestsDownload(URL + name)], cache_path=str(where / name))

    downloaded, missing = "ndcg-test/tiny", "ndcg-test/missing"
    if downloaded not in ir_datasets.registry:
        defs = {0: "not", 1: "some", 2: "very"}
        ir_datasets.registry.register(
            downloaded,
            Dataset(
                TsvQueries(file("queries.tsv", home)),
                TsvDocs(file("docs.tsv", home)),
                TrecQrels(file("qrels", home), defs),
            ),
        )
        nowhere = home / "absent"
        ir_datasets.registry.register(missing, Dataset(TsvQueries(file("queries.tsv", nowhere))))
        four = TrecQrels(file("qrels4", home), {4: "perfect"})
        ir_datasets.registry.register(
            "ndcg-test/four", Dataset(TsvQueries(file("queries.tsv", home)), four)
        )
    return downloaded, missing, "ndcg-test/four"


def test_imports_queries_docs_and_qrels(
    app: Flask, runner: FlaskCliRunner, datasets: tuple[str, str, str]
) -> None:
    runner.invoke(args=["testset", "create", "A"])
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", datasets[0]])
    assert result.exit_code == 0, result.output + result.stderr
    assert "queries: 2 created" in result.stdout and "chunks: 3 created" in result.stdout
    assert "judgments of source 'ir_datasets:ndcg-test/tiny': 3 created" in result.stdout
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "A"))
        rows = set(interop.judgment_rows(test_set))
        texts = dict(db.session.execute(sa.select(Query.qid, Query.text)).all())
        chunk = db.session.scalar(sa.select(Chunk.text).where(Chunk.docid == "d2"))
    assert texts == {"1": "red dress", "2": "blue shoes"}
    assert chunk == "a blue shoe"
    assert rows == {("red dress", "d1", 2), ("red dress", "d3", 0), ("blue shoes", "d2", 1)}


def test_refuses_grades_above_the_scale_and_changes_nothing(
    app: Flask, runner: FlaskCliRunner, datasets: tuple[str, str, str]
) -> None:
    runner.invoke(args=["testset", "create", "A"])
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", datasets[2]])
    assert result.exit_code == 1
    assert "has grade 4 (query 1, doc d1), above this test set's scale 0–3" in result.stderr
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Query)) == 0


def test_not_downloaded_and_unknown_names_are_clear(
    app: Flask, runner: FlaskCliRunner, datasets: tuple[str, str, str]
) -> None:
    runner.invoke(args=["testset", "create", "A"])
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", datasets[1]])
    assert result.exit_code == 1
    assert "dataset 'ndcg-test/missing' is not downloaded" in result.stderr
    assert "IR_DATASETS_HOME" in result.stderr
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", "no/such-set"])
    assert result.exit_code == 1 and "ir_datasets has no dataset named 'no/such-set'" in (
        result.stderr
    )


def test_not_installed_says_how_to_install(
    app: Flask, runner: FlaskCliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # import ir_datasets now fails
    runner.invoke(args=["testset", "create", "A"])
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", "x"])
    assert result.exit_code == 1
    assert "pip install 'ndcg-labeler[ir_datasets]'" in result.stderr
