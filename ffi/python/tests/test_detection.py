"""Detection targets from Python: given by a FromPython dataset (an
(image, target) pair, the target a dict of arrays), moved with their images
by the loader and read back from its batches (each sample's dict, and the
boxes collated padded, flat or ragged)."""

import numpy as np
import pytest

from conftest import fixture

# The photos (width, height): tests/fixtures/sample.jpg and sklearn_china.jpg.
PHOTOS = [("sample.jpg", (451, 300)), ("sklearn_china.jpg", (640, 427))]


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def photo(i):
    name, _ = PHOTOS[i % len(PHOTOS)]
    with open(fixture(name), "rb") as f:
        return f.read()


def target_of(i, canvas=True):
    """Sample i's target: 1 to 4 XYWH boxes inside its photo, with labels."""
    w, h = PHOTOS[i % len(PHOTOS)][1]
    n = 1 + i % 4
    boxes = [[(37.0 * (i + k)) % (w - 80), (23.0 * (i + 2 * k)) % (h - 60), 20.0 + 13 * k, 15.0 + 7 * i % 40] for k in range(n)]
    t = {
        "boxes": np.array(boxes, dtype=np.float32),
        "format": "XYWH",
        "labels": np.arange(1, n + 1) + i,
        "iscrowd": np.zeros(n, dtype=np.uint8),
        "area": np.array([b[2] * b[3] for b in boxes], dtype=np.float32),
        "image_id": 100 + i,
    }
    if canvas:
        t["canvas_size"] = (h, w)
    return t


class Detection:
    """A map-style dataset of the two photos with boxes (every third sample
    without canvas_size: read from the file's header)."""

    def __init__(self, n, bad=None):
        self.n = n
        self.bad = bad or {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t = target_of(i, canvas=i % 3 != 0)
        t.update(self.bad.get(i, {}))
        return photo(i), t


MAX = (3, 900, 900)


def loader(train, data, pipeline, workers, **kw):
    return train.Loader(data, pipeline, 4, workers, seed=3, shuffle=True, output="numpy",
                        max_shape=MAX, shard=None, **kw)


def batches(l):
    out = []
    while (b := l.next_batch()) is not None:
        out.append(b)
    return out


def check_targets(b):
    """Every box finite and inside its canvas, the fields in step."""
    for t in b["targets"]:
        assert t is not None
        h, w = t["canvas_size"]
        boxes = t["boxes"]
        assert boxes.dtype == np.float32 and boxes.shape[1:] == (4,)
        assert t["format"] == "XYXY"
        assert np.isfinite(boxes).all()
        assert (boxes[:, 0] >= 0).all() and (boxes[:, 1] >= 0).all()
        assert (boxes[:, 2] <= w).all() and (boxes[:, 3] <= h).all()
        assert (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all()
        n = len(boxes)
        assert t["labels"].dtype == np.int64 and t["labels"].shape == (n,)
        assert t["iscrowd"].shape == (n,) and t["area"].shape == (n,)
        assert isinstance(t["image_id"], int)


def same_targets(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            assert np.array_equal(x[k], y[k]), k


@pytest.mark.parametrize("recipe", ["list", "detection-ssdlite"])
def test_boxes_move_with_their_images_the_same_for_any_worker_count(train, recipe):
    data = train.FromPython(Detection(10))
    if recipe == "list":
        pipeline = train.Pipeline([train.ConvertBoundingBoxFormat("XYXY"), train.RandomIoUCrop(),
                                   train.RandomHorizontalFlip(), train.ToTensor(), train.SanitizeBoundingBoxes()])
    else:
        pipeline = train.Pipeline.preset(recipe)
    one, three = batches(loader(train, data, pipeline, 1)), batches(loader(train, data, pipeline, 3))
    assert len(one) == len(three) == 3
    seen = set()
    for a, b in zip(one, three):
        assert np.array_equal(a["indices"], b["indices"])
        assert np.array_equal(a["images"], b["images"])
        assert a["labels"].shape == (len(a["indices"]), 0)
        check_targets(a)
        same_targets(a["targets"], b["targets"])
        for t, i in zip(a["targets"], a["indices"]):
            assert t["image_id"] == 100 + int(i)
            seen.add(int(i))
        # The image's shape is the canvas the boxes lie on.
        for t, m in zip(a["targets"], a["pixel_mask"]):
            rows, cols = np.nonzero(m)
            assert (rows.max() + 1, cols.max() + 1) == tuple(t["canvas_size"])
        for layout in ("padded", "flat", "ragged"):
            x, y = a["batch"].boxes(layout), b["batch"].boxes(layout)
            assert x.keys() == y.keys()
            for k in x:
                assert np.array_equal(x[k], y[k])
    assert seen == set(range(10))


def test_a_batch_collates_its_boxes_in_three_layouts(tp, train):
    data = train.FromPython(Detection(6))
    pipeline = train.Pipeline([train.ConvertBoundingBoxFormat("xyxy"), train.ToTensor()])
    b = loader(train, data, pipeline, 2, drop_last=True).next_batch()
    targets = b["targets"]
    counts = [len(t["boxes"]) for t in targets]
    # Nothing moved: the XYWH boxes given, as XYXY.
    for t, i in zip(targets, b["indices"]):
        given = target_of(int(i))
        xywh = given["boxes"]
        assert np.array_equal(t["boxes"], np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1))
        assert np.array_equal(t["labels"], given["labels"])
        assert t["canvas_size"] == given["canvas_size"]
        assert np.array_equal(t["area"], given["area"])

    padded = b["batch"].boxes()
    room = max(counts)
    assert padded["boxes"].shape == (4, room, 4) and padded["boxes"].dtype == np.float32
    assert padded["labels"].shape == (4, room) and padded["labels"].dtype == np.int64
    assert padded["counts"].tolist() == counts
    for s, t in enumerate(targets):
        n = counts[s]
        assert np.array_equal(padded["boxes"][s, :n], t["boxes"])
        assert (padded["boxes"][s, n:] == 0).all()
        assert np.array_equal(padded["labels"][s, :n], t["labels"])
        assert (padded["labels"][s, n:] == -1).all()
    assert b["batch"].boxes("padded", room=room + 2)["boxes"].shape == (4, room + 2, 4)
    with pytest.raises(tp.DataError, match="boxes"):
        b["batch"].boxes("padded", room=room - 1)

    flat = b["batch"].boxes("flat")
    assert flat["batch_idx"].tolist() == [s for s, n in enumerate(counts) for _ in range(n)]
    assert np.array_equal(flat["cls"], np.concatenate([t["labels"] for t in targets]))
    assert np.array_equal(flat["bboxes"], np.concatenate([t["boxes"] for t in targets]))

    ragged = b["batch"].boxes("ragged")
    assert ragged["offsets"].tolist() == np.concatenate([[0], np.cumsum(counts)]).tolist()
    assert np.array_equal(ragged["boxes"], flat["bboxes"]) and np.array_equal(ragged["labels"], flat["cls"])
    # The arrays own their memory (the vectors handed over, not views of the batch).
    assert ragged["boxes"].flags.writeable and ragged["boxes"].flags.c_contiguous
    with pytest.raises(ValueError, match="layout"):
        b["batch"].boxes("stacked")


def test_too_many_boxes_for_the_room_is_a_data_error(tp, train):
    data = train.FromPython(Detection(4))
    b = loader(train, data, train.Pipeline([train.ToTensor()]), 1).next_batch()
    with pytest.raises(tp.DataError, match=r"sample \d+ has \d+ boxes"):
        b["batch"].boxes("padded", room=0)


def test_a_classification_batch_has_no_targets(train):
    class Labels:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return photo(i), i

    b = loader(train, train.FromPython(Labels()), train.Pipeline([train.Resize((32, 32)), train.ToTensor()]), 1).next_batch()
    assert b["targets"] == [None, None]
    assert b["batch"].boxes("flat")["bboxes"].shape == (0, 4)
    assert b["batch"].boxes()["boxes"].shape == (2, 0, 4)


@pytest.mark.parametrize(
    "bad, why",
    [
        ({"boxes": np.array([[0, 0, np.nan, 4]], dtype=np.float32), "labels": [1]}, "not finite"),
        ({"boxes": np.zeros((2, 3), dtype=np.float32), "labels": [1, 2]}, r"shape \(2, 3\)"),
        ({"labels": [1, 2, 3, 4, 5, 6, 7]}, "one entry per instance"),
        ({"format": "XYZ"}, "format"),
        ({"canvas_size": (0, 10)}, "canvas_size"),
        ({"masks": np.zeros((1, 2, 2), dtype=np.uint8)}, "masks"),
        ({"colour": 1}, "colour"),
        ({"labels": [1.5] * 3}, "int64 does not hold"),
        ({"iscrowd": [0, 300, 0]}, "iscrowd: .*uint8"),
    ],
)
def test_a_bad_target_is_a_data_error_naming_its_sample(tp, train, bad, why):
    data = train.FromPython(Detection(4, bad={2: bad}))
    l = train.Loader(data, train.Pipeline([train.ToTensor()]), 4, 1, seed=0, shuffle=False, output="numpy",
                     max_shape=MAX, shard=None)
    with pytest.raises(tp.DataError, match=r"Detection\[2\]") as e:
        l.next_batch()
    assert e.match(why)


def test_masks_move_with_the_boxes(train):
    class Masked(Detection):
        def __getitem__(self, i):
            image, t = super().__getitem__(i)
            h, w = PHOTOS[i % 2][1][::-1]
            masks = np.zeros((len(t["boxes"]), h, w), dtype=np.uint8)
            for k, (x, y, bw, bh) in enumerate(t["boxes"].astype(int)):
                masks[k, y:y + bh, x:x + bw] = 1
            t["masks"] = masks
            return image, t

    pipeline = train.Pipeline([train.ConvertBoundingBoxFormat("XYXY"), train.RandomHorizontalFlip(1.0), train.ToTensor()])
    b = loader(train, train.FromPython(Masked(4)), pipeline, 2).next_batch()
    for t in b["targets"]:
        h, w = t["canvas_size"]
        assert t["masks"].shape == (len(t["boxes"]), h, w) and t["masks"].dtype == np.uint8
        for m, (x1, y1, x2, y2) in zip(t["masks"], t["boxes"].astype(int)):
            rows, cols = np.nonzero(m)
            assert (cols.min(), cols.max() + 1, rows.min(), rows.max() + 1) == (x1, x2, y1, y2)


def test_a_pixel_array_s_size_is_its_target_s_default_canvas(train):
    class Pixels:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            image = np.zeros((40, 60, 3), dtype=np.uint8)
            return image, {"boxes": [[50.0, 5.0, 70.0, 30.0]], "labels": [3], "masks": np.ones((1, 40, 60), bool)}

    pipeline = train.Pipeline([train.RandomHorizontalFlip(1.0), train.ToTensor(), train.ClampBoundingBoxes()])
    b = loader(train, train.FromPython(Pixels()), pipeline, 1).next_batch()
    for t in b["targets"]:
        assert t["canvas_size"] == (40, 60) and t["format"] == "XYXY"
        # Flipped about the width, then clamped into the canvas.
        assert t["boxes"].tolist() == [[0.0, 5.0, 10.0, 30.0]]
        assert t["masks"].shape == (1, 40, 60) and t["masks"].all()


def test_boxes_that_carry_their_format_and_canvas_are_read_with_them(tp, train):
    """torchvision's tv_tensors.BoundingBoxes keep format and canvas_size as
    attributes: a target giving such boxes without the keys is read with
    them (never as XYXY on the image's size); keys that disagree are a data
    error."""

    class Boxes(np.ndarray):
        pass

    def boxes(fmt, canvas):
        b = np.array([[10.0, 5.0, 20.0, 25.0]], dtype=np.float32).view(Boxes)
        b.format, b.canvas_size = fmt, canvas
        return b

    class Carried:
        def __init__(self, extra):
            self.extra = extra

        def __len__(self):
            return 1

        def __getitem__(self, i):
            image = np.zeros((40, 60, 3), dtype=np.uint8)
            return image, {"boxes": boxes("XYWH", (40, 60)), "labels": [1], **self.extra}

    pipeline = train.Pipeline([train.ToTensor()])
    b = loader(train, train.FromPython(Carried({})), pipeline, 1).next_batch()
    t = b["targets"][0]
    assert t["format"] == "XYWH" and t["canvas_size"] == (40, 60)
    assert t["boxes"].tolist() == [[10.0, 5.0, 20.0, 25.0]]
    for extra, why in [({"format": "XYXY"}, "format"), ({"canvas_size": (41, 60)}, "canvas_size")]:
        with pytest.raises(tp.DataError, match=why):
            loader(train, train.FromPython(Carried(extra)), pipeline, 1).next_batch()
