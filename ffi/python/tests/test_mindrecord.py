"""MindRecord from Python: ``train.MindRecord`` over sets MindSpore wrote
(tests/fixtures/mindrecord, with MindDataset's rows in expected.json)."""

import hashlib
import inspect
import json

import numpy as np
import pytest

from conftest import fixture


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def expected(name):
    with open(fixture("mindrecord", name, "expected.json")) as f:
        return json.load(f)["rows"]


def same_bytes(data, want):
    """Bytes equal MindDataset's dump: hex, or length and SHA-256 when long
    (a pixel sample's array compared by its bytes, row by row)."""
    if isinstance(data, np.ndarray):
        data = data.tobytes()
    if isinstance(want, dict):
        return len(data) == want["len"] and hashlib.sha256(data).hexdigest() == want["sha256"]
    return data.hex() == want


def test_the_default_signature_is_the_issues(train):
    s = inspect.signature(train.MindRecord)
    assert s.parameters["image"].default == "data" and s.parameters["label"].default == "label"


def test_a_two_file_set_reads_as_minddataset_from_either_file(train):
    rows = expected("imagenet")
    for name in ("imagenet.mindrecord0", "imagenet.mindrecord1"):
        d = train.MindRecord(fixture("mindrecord", "imagenet", name))
        assert len(d) == len(rows)
        for i, row in enumerate(rows):
            data, labels = d[i]
            assert same_bytes(data, row["data"]["value"])
            assert labels == row["label"]["value"]


def test_a_mindrecord_of_a_folder_gives_the_folders_batches(train):
    folder = train.ImageFolder(fixture("records", "folder"))
    packed = train.MindRecord(fixture("mindrecord", "folder", "folder.mindrecord"))
    for workers in (1, 2):
        a = [(np.array(x), np.array(y)) for x, y in train.Loader(folder, "imagenet-train", 4, workers, seed=5, output="numpy")]
        b = [(np.array(x), np.array(y)) for x, y in train.Loader(packed, "imagenet-train", 4, workers, seed=5, output="numpy")]
        assert len(a) == len(b) == 2
        assert all(np.array_equal(x, p) and np.array_equal(y, q) for (x, y), (p, q) in zip(a, b))
    assert packed.fingerprint != train.MindRecord(fixture("mindrecord", "imagenet", "imagenet.mindrecord0")).fingerprint


def test_columns_labels_and_shapes_are_chosen_by_name(tp, train):
    rows = expected("pixels")
    path = fixture("mindrecord", "pixels", "pixels.mindrecord")
    d = train.MindRecord(path, image="gray", label=["label", "score"], shape=["height", "width"])
    for i, row in enumerate(rows):
        data, labels = d[i]
        assert same_bytes(data, row["gray"]["value"])
        assert labels == [row["label"]["value"][0], row["score"]["value"][0]]
    # No labels; a missing column, a string label, a shape that is no shape.
    assert train.MindRecord(path, image="image", label=None)[0][1] == []
    for kwargs in (dict(image="nope"), dict(image="image", label="nope"), dict(image="gray", shape=["score"])):
        with pytest.raises(tp.DataError, match="pixels.mindrecord"):
            train.MindRecord(path, **kwargs)


def test_a_broken_file_is_a_data_error_naming_it(tp, train, tmp_path):
    bad = tmp_path / "bad.mindrecord"
    bad.write_bytes((1 << 40).to_bytes(8, "little") + b"{}")
    with pytest.raises(tp.DataError, match="bad.mindrecord"):
        train.MindRecord(bad)


def test_every_column_of_every_row_equals_minddatasets(tp, train):
    rows = expected("columns")
    d = train.MindRecord(fixture("mindrecord", "columns", "columns.mindrecord1"))
    assert len(d) == len(rows)
    for i, row in enumerate(rows):
        got = d.columns(i)
        assert sorted(got) == sorted(row), i
        for name, want in row.items():
            value, where = got[name], f"row {i} {name}"
            if want["dtype"].startswith("|S"):
                assert isinstance(value, bytes) and same_bytes(value, want["value"]), where
            elif want["dtype"].startswith("<U"):
                assert value == want["value"], where
            elif want["shape"] == []:
                assert not isinstance(value, np.ndarray) and value == want["value"][0], where
            else:
                expect = np.array(want["value"], dtype=want["dtype"]).reshape(want["shape"])
                assert value.dtype == expect.dtype and np.array_equal(value, expect), where
    # A negative index counts from the end.
    assert d.columns(-1)["file_name"] == rows[-1]["file_name"]["value"]
    with pytest.raises(IndexError):
        d.columns(len(d))
    with pytest.raises(TypeError, match="no columns"):
        train.ImageFolder(fixture("records", "folder")).columns(0)
