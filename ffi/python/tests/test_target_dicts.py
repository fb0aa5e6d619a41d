"""Key points and semantic masks through Python target dicts, both ways (a
FromPython dataset's dict in, ``ds[i]`` and a batch's ``targets`` out), and
the targets as torchvision's ``tv_tensors`` (those tests need torchvision;
the ImportError when it is missing is tested everywhere)."""

import sys

import numpy as np
import pytest

from conftest import fixture

MAX = (3, 400, 500)
H, W = 300, 451  # tests/fixtures/sample.jpg


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def photo():
    with open(fixture("sample.jpg"), "rb") as f:
        return f.read()


def posed(n=2, k=3):
    """n people of k key points (left eye, right eye, nose), a semantic mask."""
    rng = np.random.default_rng(n * 10 + k)
    xy = rng.uniform([0, 0], [W - 1, H - 1], size=(n, k, 2)).astype(np.float32)
    visibility = rng.integers(0, 3, size=(n, k, 1)).astype(np.float32)
    semantic = np.zeros((H, W), dtype=np.uint8)
    semantic[40:120, 10:200] = 3
    semantic[200:, 300:] = 7
    boxes = np.concatenate([xy.min(axis=1), xy.max(axis=1) + 1], axis=1)
    return {
        "boxes": boxes,
        "format": "XYXY",
        "canvas_size": (H, W),
        "labels": np.arange(1, n + 1),
        "keypoints": np.concatenate([xy, visibility], axis=2),
        "flip_index": np.array([1, 0, 2][:k] if k == 3 else list(range(k))),
        "semantic": semantic,
    }


class Dicts:
    def __init__(self, targets):
        self.targets = targets

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return photo(), self.targets[i]


def test_keypoints_and_semantic_masks_read_back_unchanged(train):
    t = posed()
    _, got = train.FromPython(Dicts([t]))[0]
    assert got["keypoints"].dtype == np.float32 and got["keypoints"].shape == (2, 3, 3)
    assert np.array_equal(got["keypoints"], t["keypoints"])
    assert got["flip_index"].tolist() == [1, 0, 2]
    assert got["semantic"].dtype == np.uint8 and np.array_equal(got["semantic"], t["semantic"])
    assert got["canvas_size"] == (H, W)
    # Without visibility: (N, K, 2) in, (N, K, 2) out; visibility given apart.
    plain = dict(t, keypoints=t["keypoints"][..., :2])
    del plain["flip_index"]
    _, got = train.FromPython(Dicts([plain]))[0]
    assert got["keypoints"].shape == (2, 3, 2) and "flip_index" not in got
    apart = dict(plain, visibility=t["keypoints"][..., 2].astype(np.uint8))
    _, got = train.FromPython(Dicts([apart]))[0]
    assert np.array_equal(got["keypoints"], t["keypoints"])


def test_a_flip_moves_keypoints_swaps_their_sides_and_flips_the_semantic_mask(train):
    t = posed()
    data = train.FromPython(Dicts([t, t]))
    pipeline = train.Pipeline([train.RandomHorizontalFlip(1.0), train.ToTensor()])
    loader = train.Loader(data, pipeline, 2, 1, seed=0, shuffle=False, output="numpy", max_shape=MAX, shard=None)
    got = loader.next_batch()["targets"][0]
    points = t["keypoints"]
    # Key points flip about W - 1 (torchvision's keypoint kernel), then each
    # takes its mirror's place with its visibility.
    want = points.copy()
    want[..., 0] = (W - 1) - want[..., 0]
    want = want[:, [1, 0, 2], :]
    assert np.array_equal(got["keypoints"], want)
    assert np.array_equal(got["semantic"], t["semantic"][:, ::-1])
    assert got["flip_index"].tolist() == [1, 0, 2]


@pytest.mark.parametrize(
    "change, why",
    [
        ({"keypoints": np.zeros((2, 3, 4), np.float32)}, r"keypoints has shape \(2, 3, 4\)"),
        ({"keypoints": np.full((2, 3, 3), 0.5, np.float32)}, "visibility 0.5"),
        ({"keypoints": np.full((2, 3, 3), np.nan, np.float32)}, "not finite"),
        ({"flip_index": [0, 0, 2]}, "flip_index"),
        ({"flip_index": [0, 1, 5]}, "flip_index"),
        ({"flip_index": [1, 0]}, r"flip_index has shape \(2,\)"),
        ({"visibility": np.zeros((2, 3), np.uint8)}, "visibility given twice"),
        ({"keypoints": np.zeros((3, 3, 3), np.float32)}, "one entry per instance"),
        ({"semantic": np.zeros((H, W - 1), np.uint8)}, "semantic mask is 300x450"),
        ({"semantic": np.zeros((1, H, W), np.uint8)}, r"semantic has shape \(1, 300, 451\)"),
    ],
)
def test_bad_keypoints_and_semantic_masks_are_data_errors(tp, train, change, why):
    t = dict(posed(), **change)
    with pytest.raises(tp.DataError, match=why):
        train.FromPython(Dicts([t]))[0]


def test_flip_index_needs_keypoints(tp, train):
    t = posed()
    del t["keypoints"]
    with pytest.raises(tp.DataError, match="flip_index without keypoints"):
        train.FromPython(Dicts([t]))[0]


def test_tv_tensors_without_torchvision_is_an_import_error(train, monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)
    with pytest.raises(ImportError, match="torchvision"):
        train.to_tv_tensors(posed())
    data = train.FromPython(Dicts([posed()]))
    with pytest.raises(ImportError, match="targets='tv_tensors' needs torch and torchvision"):
        train.Loader(data, train.Pipeline([train.ToTensor()]), 1, 1, output="numpy", targets="tv_tensors", shard=None)
    with pytest.raises(ValueError, match="targets must be"):
        train.Loader(data, train.Pipeline([train.ToTensor()]), 1, 1, output="numpy", targets="torch", shard=None)


@pytest.fixture(scope="module")
def tv():
    pytest.importorskip("torch", reason="tv_tensors need torch")
    return pytest.importorskip("torchvision.tv_tensors", reason="tv_tensors need torchvision")


def test_targets_as_tv_tensors(train, tv):
    import torch

    t = posed()
    out = train.to_tv_tensors(train.FromPython(Dicts([t]))[0][1])
    assert isinstance(out["boxes"], tv.BoundingBoxes)
    assert out["boxes"].format == tv.BoundingBoxFormat.XYXY and tuple(out["boxes"].canvas_size) == (H, W)
    assert "format" not in out and "canvas_size" not in out
    assert torch.equal(out["boxes"].as_subclass(torch.Tensor), torch.from_numpy(t["boxes"]))
    assert isinstance(out["semantic"], tv.Mask) and out["semantic"].dtype == torch.uint8
    assert out["labels"].dtype == torch.int64
    if hasattr(tv, "KeyPoints"):
        assert isinstance(out["keypoints"], tv.KeyPoints) and out["keypoints"].shape == (2, 3, 2)
        assert out["visibility"].tolist() == t["keypoints"][..., 2].astype(int).tolist()
    # torchvision's v2 transforms take it, and it reads back as it was.
    import torchvision.transforms.v2 as T

    flipped = T.RandomHorizontalFlip(1.0)(out)
    _, back = train.FromPython(Dicts([flipped]))[0]
    assert back["format"] == "XYXY" and back["canvas_size"] == (H, W)
    want = t["boxes"].copy()
    want[:, [0, 2]] = W - t["boxes"][:, [2, 0]]
    assert np.array_equal(back["boxes"], want)
    assert np.array_equal(back["semantic"], t["semantic"][:, ::-1])


def test_a_loader_gives_tv_tensors(train, tv):
    data = train.COCO(fixture("coco", "sample", "images"), fixture("coco", "sample", "instances.json"), masks=True)
    pipeline = train.Pipeline([train.ConvertBoundingBoxFormat("XYXY"), train.ToTensor()])
    loader = train.Loader(data, pipeline, 2, 1, seed=0, shuffle=False, targets="tv_tensors", max_shape=(3, 151, 227),
                          shard=None)
    b = loader.next_batch()
    for t in b["targets"]:
        assert isinstance(t["boxes"], tv.BoundingBoxes) and t["boxes"].format == tv.BoundingBoxFormat.XYXY
        assert isinstance(t["masks"], tv.Mask) and t["masks"].shape[0] == t["boxes"].shape[0]


def test_an_iterable_dataset_s_keypoints_and_semantic_masks(train):
    t = posed(n=3, k=2)
    data = train.FromIterable(lambda: iter([(photo(), t)] * 2), length=2)
    pipeline = train.Pipeline([train.RandomVerticalFlip(1.0), train.ToTensor()])
    # A stream is not read ahead: label_width=0 says its samples have no class labels.
    loader = train.Loader(data, pipeline, 2, 1, seed=0, shuffle=False, output="numpy", max_shape=MAX, shard=None,
                          label_width=0)
    for got in loader.next_batch()["targets"]:
        want = t["keypoints"].copy()
        want[..., 1] = (H - 1) - want[..., 1]
        # A vertical flip is a mirror too: points take their mirror's place
        # (flip_index [0, 1] here: each its own).
        assert np.array_equal(got["keypoints"], want)
        assert np.array_equal(got["semantic"], t["semantic"][::-1])


@pytest.mark.parametrize("fill", [None, 255])
def test_a_pad_fills_the_semantic_mask_with_its_mask_fill(train, fill):
    t = posed()
    if fill is not None:
        t["mask_fill"] = fill
    pipeline = train.Pipeline([train.RandomCrop((H + 20, W + 20), padding=10), train.ToTensor()])
    loader = train.Loader(train.FromPython(Dicts([t])), pipeline, 1, 1, seed=0, output="numpy",
                          max_shape=(3, H + 20, W + 20), shard=None)
    got = loader.next_batch()["targets"][0]
    mask = got["semantic"]
    assert mask.shape == (H + 20, W + 20)
    assert np.array_equal(mask[10:-10, 10:-10], t["semantic"])
    border = np.ones(mask.shape, bool)
    border[10:-10, 10:-10] = False
    assert (mask[border] == (fill or 0)).all()
    assert got.get("mask_fill") == fill


def test_a_bad_mask_fill_is_a_data_error(tp, train):
    with pytest.raises(tp.DataError, match="mask_fill"):
        train.FromPython(Dicts([dict(posed(), mask_fill=300)]))[0]
