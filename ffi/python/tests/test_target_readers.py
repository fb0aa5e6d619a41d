"""Detection targets read from TFRecord (the TF Object Detection API's keys,
fixtures written by the independent `tfrecord` package) and WebDataset (a
`.json` member per sample), as the loader's batches give them."""

import io
import json
import tarfile

import numpy as np
import pytest

from conftest import fixture


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def targets_of(train, data, n):
    pipeline = train.Pipeline([train.ToTensor()])
    loader = train.Loader(data, pipeline, n, 1, seed=0, shuffle=False, output="numpy",
                          max_shape=(3, 200, 240), shard=None)  # the photos: 227 x 151
    return loader.next_batch()["targets"]


def test_tfrecord_object_detection_targets(train):
    with open(fixture("tf_detection", "expected.json")) as f:
        expected = json.load(f)["od"]
    data = train.TFRecord(fixture("tf_detection", "od.tfrecord"), targets="object_detection")
    targets = targets_of(train, data, len(expected))
    for t, e in zip(targets, expected):
        assert t["format"] == "XYXY"
        assert tuple(t["canvas_size"]) == (e["height"], e["width"])
        want = np.array(e["boxes"], dtype=np.float32).reshape(-1, 4)
        assert t["boxes"].dtype == np.float32
        assert np.array_equal(t["boxes"], want)
        assert t["labels"].tolist() == e["labels"]
    # The same through a list of files.
    listed = train.TFRecord([fixture("tf_detection", "od.tfrecord")], targets="object_detection")
    assert len(listed) == len(expected)


def test_tfrecord_target_options_are_checked(train):
    path = fixture("tf_detection", "od.tfrecord")
    with pytest.raises(ValueError, match="object_detection"):
        train.TFRecord(path, targets="segmentation")
    with pytest.raises(ValueError, match="masks=True"):
        train.TFRecord(path, masks=True)


def shard(path, members):
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_webdataset_json_targets(tmp_path, train):
    with open(fixture("sample_gray.jpg"), "rb") as f:
        jpeg = f.read()  # 227 x 151
    a = {"boxes": [[1, 2, 30, 40], [10, 10, 5, 5]], "format": "XYWH", "labels": [3, 4]}
    b = {"annotations": [{"bbox": [5, 6, 7, 8], "category_id": 18}]}
    path = str(tmp_path / "s.tar")
    shard(path, [("a.jpg", jpeg), ("a.json", json.dumps(a).encode()),
                 ("b.jpg", jpeg), ("b.json", json.dumps(b).encode())])
    data = train.WebDataset(path, target_key="json")
    ta, tb = targets_of(train, data, 2)
    assert ta["format"] == tb["format"] == "XYWH"
    assert ta["boxes"].tolist() == a["boxes"] and ta["labels"].tolist() == [3, 4]
    assert tb["boxes"].tolist() == [[5, 6, 7, 8]] and tb["labels"].tolist() == [18]
    assert tuple(ta["canvas_size"]) == (151, 227)
    # A sample's bad target is an error naming the sample.
    shard(path, [("a.jpg", jpeg), ("a.json", b'{"boxes": [[1, 2, 3, 4]], "labels": [1]}')])
    with pytest.raises(Exception, match="sample `a`.*format"):
        targets_of(train, train.WebDataset(path, target_key="json"), 1)
