"""FormatError: location and reason, printable and picklable."""

import pickle

from ndcg_labeler.formats.errors import FormatError


def test_str_with_line():
    err = FormatError("run.txt", 12, "grade 'x' is not an integer")
    assert str(err) == "run.txt:12: grade 'x' is not an integer"
    assert (err.filename, err.line, err.reason) == ("run.txt", 12, "grade 'x' is not an integer")
    assert isinstance(err, ValueError)


def test_str_without_line():
    assert str(FormatError("q.jsonl", None, "file is empty")) == "q.jsonl: file is empty"


def test_pickle_round_trip():
    err = pickle.loads(pickle.dumps(FormatError("a", 3, "bad")))
    assert (err.filename, err.line, err.reason, str(err)) == ("a", 3, "bad", "a:3: bad")
