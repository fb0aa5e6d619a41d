"""The detection datasets from Python (``train.COCO``, ``train.VOC``,
``train.YOLO``): ``ds[i]`` is ``(image bytes, target dict)``, COCO's masks
identical to pycocotools' (tests/fixtures/coco/python, made by
tests/fixtures/make_python_coco_fixtures.py), the readers' options, their
errors naming the file, and a loader over them with a detection recipe."""

import json
import os
import shutil

import numpy as np
import pytest

from conftest import fixture

IMAGES = fixture("coco", "sample", "images")
ANNOTATIONS = fixture("coco", "python", "instances.json")
H, W = 151, 227


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


@pytest.fixture(scope="module")
def instances():
    with open(ANNOTATIONS) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def expected():
    with open(fixture("coco", "python", "expected.json")) as f:
        return json.load(f)


def decode_runs(counts, h, w):
    """COCO's uncompressed RLE (column-major runs, zeros first) as an (h, w) mask."""
    values = np.arange(len(counts)) % 2
    return np.repeat(values, counts).astype(np.uint8).reshape((w, h)).T


def objects_of(instances, image_id):
    return [a for a in instances["annotations"] if a["image_id"] == image_id]


def test_coco_gives_images_and_targets_in_the_file_s_order(train, instances):
    ds = train.COCO(IMAGES, ANNOTATIONS)
    assert len(ds) == 3
    assert ds.classes == ["cat", "eye", "toy"]  # by category id: 5, 12, 90
    for i, im in enumerate(instances["images"]):
        image, t = ds[i]
        with open(os.path.join(IMAGES, im["file_name"]), "rb") as f:
            assert image == f.read()
        objects = objects_of(instances, im["id"])
        n = len(objects)
        assert t["format"] == "XYWH" and t["canvas_size"] == (H, W)
        assert t["boxes"].dtype == np.float32 and t["boxes"].shape == (n, 4)
        assert np.array_equal(t["boxes"], np.array([a["bbox"] for a in objects], np.float32).reshape(n, 4))
        assert t["labels"].dtype == np.int64 and t["labels"].tolist() == [a["category_id"] for a in objects]
        assert t["image_id"] == im["id"]
        assert "masks" not in t
        if n:
            assert t["iscrowd"].tolist() == [a["iscrowd"] for a in objects]
            assert np.array_equal(t["area"], np.array([a["area"] for a in objects], np.float32))
    assert ds[-1][1]["image_id"] == 7 and ds[-1][1]["boxes"].shape == (0, 4)


@pytest.mark.parametrize("masks", [True, "pixels", "polygons"])
def test_coco_masks_are_pycocotools(train, expected, masks):
    # Kept as polygons (the crowd's RLE as its runs' rectangles) and
    # rasterised without an op: the same pixels.
    ds = train.COCO(IMAGES, ANNOTATIONS, masks=masks)
    kinds = 0
    for i, want in enumerate(expected["images"]):
        _, t = ds[i]
        masks = t["masks"]
        assert masks.dtype == np.uint8 and masks.shape == (len(want["masks"]), H, W)
        for got, m in zip(masks, want["masks"]):
            reference = decode_runs(m["counts"], H, W)
            assert reference.sum() == m["sum"] > 0
            assert np.array_equal(got, reference), f"annotation {m['annotation']}"
            kinds += 1
    assert kinds == 6


@pytest.mark.parametrize(
    "categories, labels",
    [("raw", [5, 12, 90]), ("contiguous_from_0", [0, 1, 2]), ("contiguous_from_1", [1, 2, 3])],
)
def test_coco_category_mapping(train, categories, labels):
    ds = train.COCO(IMAGES, ANNOTATIONS, categories=categories)
    # Image 1's objects are a cat (5), an eye (12) and a toy (90).
    assert ds[1][1]["labels"].tolist() == labels


def test_coco_crowds_and_empty_images(train):
    dropped = train.COCO(IMAGES, ANNOTATIONS, crowd="drop")
    assert len(dropped) == 3
    assert [dropped[i][1]["iscrowd"].tolist() for i in range(2)] == [[0, 0], [0, 0]]
    assert dropped[0][1]["labels"].tolist() == [12, 5]
    no_empty = train.COCO(IMAGES, ANNOTATIONS, keep_empty=False)
    assert [no_empty[i][1]["image_id"] for i in range(len(no_empty))] == [3, 1]


@pytest.mark.parametrize("option", [{"categories": "contiguous"}, {"crowd": "ignore"}, {"masks": "outlines"}])
def test_coco_options_are_checked(train, option):
    with pytest.raises(ValueError, match=list(option)[0]):
        train.COCO(IMAGES, ANNOTATIONS, **option)


def test_coco_key_points_move_with_a_flip(train, instances, tmp_path):
    # The person category names two mirrored points and a middle one; each
    # object gets (x, y, v) triples.
    data = json.loads(json.dumps(instances))
    for c in data["categories"]:
        c["keypoints"] = ["left_eye", "nose", "right_eye"]
    for i, a in enumerate(data["annotations"]):
        x, y, w, h = a["bbox"]
        a["keypoints"] = [x + 1, y + 1, 2, x + w / 2, y + 2, 1, x + w - 1, y + 1, 2 * (i % 2)]
    path = tmp_path / "person_keypoints.json"
    path.write_text(json.dumps(data))
    ds = train.COCO(IMAGES, path, keypoints=True)
    _, t = ds[1]
    k = t["keypoints"]
    assert k.dtype == np.float32 and k.shape == (len(t["boxes"]), 3, 3)
    assert t["flip_index"].tolist() == [2, 1, 0]
    first = [a for a in data["annotations"] if a["image_id"] == t["image_id"]][0]
    assert k[0].ravel().tolist() == pytest.approx(first["keypoints"])
    assert "keypoints" not in train.COCO(IMAGES, path)[1][1]
    # Through a flip-only pipeline: x -> W - 1 - x (torchvision v2's key
    # points), left and right swapped with their visibility.
    flip = train.Pipeline([train.RandomHorizontalFlip(1.0), train.ToTensor()])
    loader = train.Loader(ds, flip, 4, 1, seed=0, shuffle=False, max_shape=(3, H, W), output="numpy", shard=None)
    batch = loader.next_batch()
    moved = [m for m in batch["targets"] if m["image_id"] == t["image_id"]][0]["keypoints"]
    want = k[:, [2, 1, 0]].copy()
    want[..., 0] = (W - 1) - want[..., 0]
    assert np.array_equal(moved, want)


def test_coco_errors_name_the_file_and_the_record(tp, train, instances, tmp_path):
    bad = json.loads(json.dumps(instances))
    bad["annotations"][1]["category_id"] = 4
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(tp.DataError, match=r"bad\.json.*annotation 202.*category_id 4"):
        train.COCO(IMAGES, path)

    bad = json.loads(json.dumps(instances))
    bad["annotations"][0]["segmentation"] = [[1.0, 2.0, 3.0, 4.0]]
    path.write_text(json.dumps(bad))
    train.COCO(IMAGES, path)  # polygons are not read without masks
    with pytest.raises(tp.DataError, match="annotation 201.*fewer than three points"):
        train.COCO(IMAGES, path, masks=True)

    bad = json.loads(json.dumps(instances))
    bad["images"][0]["file_name"] = "missing.jpg"
    path.write_text(json.dumps(bad))
    ds = train.COCO(IMAGES, path)
    with pytest.raises(tp.DataError, match="missing.jpg"):
        ds[0]
    assert ds[1][1]["image_id"] == 1

    path.write_text("{")
    with pytest.raises(tp.DataError, match=r"bad\.json.*line 1"):
        train.COCO(IMAGES, path)


MAX = (3, 1000, 1000)


def batches(train, ds, workers, **kw):
    loader = train.Loader(ds, "detection-ssd", 2, workers, seed=5, shuffle=True, output="numpy",
                          max_shape=MAX, shard=None, **kw)
    out = []
    while (b := loader.next_batch()) is not None:
        out.append(b)
    return out


@pytest.mark.parametrize("masks", [False, True, "polygons"])
def test_a_loader_over_coco_with_the_ssd_recipe(train, masks):
    ds = train.COCO(IMAGES, ANNOTATIONS, masks=masks, crowd="drop", categories="contiguous_from_1")
    one, three = batches(train, ds, 1), batches(train, ds, 3)
    assert len(one) == len(three) == 2
    seen = []
    for a, b in zip(one, three):
        assert np.array_equal(a["indices"], b["indices"]) and np.array_equal(a["images"], b["images"])
        for x, y in zip(a["targets"], b["targets"]):
            assert x.keys() == y.keys()
            for k in x:
                assert np.array_equal(x[k], y[k]), k
            h, w = x["canvas_size"]
            assert x["format"] == "XYXY" and (x["labels"] >= 1).all() and (x["labels"] <= 3).all()
            assert ((x["boxes"] >= 0) & (x["boxes"] <= [w, h, w, h])).all()
            if masks:
                assert x["masks"].shape == (len(x["boxes"]), h, w)
            else:
                assert "masks" not in x
            seen.append(x["image_id"])
    assert sorted(seen) == [1, 3, 7]


# Pascal VOC, written into tmp_path in the devkit's layout.

def voc_xml(objects, size=(451, 300)):
    parts = [f"<annotation><filename>x.jpg</filename><size><width>{size[0]}</width>"
             f"<height>{size[1]}</height><depth>3</depth></size>"]
    for name, box, difficult in objects:
        parts.append(f"<object><name>{name}</name><difficult>{difficult}</difficult><bndbox>"
                     f"<xmin>{box[0]}</xmin><ymin>{box[1]}</ymin><xmax>{box[2]}</xmax><ymax>{box[3]}</ymax>"
                     "</bndbox></object>")
    return "".join(parts) + "</annotation>"


VOC_OBJECTS = {
    "000005": [("chair", (263, 211, 324, 339), 0), ("person", (5, 10, 100, 200), 1)],
    "000007": [("car", (141, 50, 300, 171), 0)],
}


def make_voc(root, objects=VOC_OBJECTS, year="2007"):
    base = root / "VOCdevkit" / f"VOC{year}"
    for d in ("ImageSets/Main", "Annotations", "JPEGImages"):
        (base / d).mkdir(parents=True, exist_ok=True)
    (base / "ImageSets" / "Main" / "train.txt").write_text("".join(f"{i}\n" for i in objects))
    for i, objs in objects.items():
        (base / "Annotations" / f"{i}.xml").write_text(voc_xml(objs))
        shutil.copy(fixture("sample.jpg"), base / "JPEGImages" / f"{i}.jpg")
    return base


def test_voc_gives_xyxy_boxes_labels_and_difficult(train, tmp_path):
    base = make_voc(tmp_path)
    ds = train.VOC(tmp_path, year="2007", image_set="train")
    assert len(ds) == 2 and ds.classes[8] == "chair" and ds.classes[14] == "person"
    image, t = ds[0]
    with open(fixture("sample.jpg"), "rb") as f:
        assert image == f.read()
    assert t["format"] == "XYXY" and t["canvas_size"] == (300, 451)
    assert t["boxes"].tolist() == [[263, 211, 324, 339], [5, 10, 100, 200]]
    assert t["labels"].tolist() == [8, 14] and t["difficult"].tolist() == [0, 1]
    # The devkit folder itself as root, and the options.
    ds = train.VOC(base.parent, year="2007", keep_difficult=False, coordinates="zero_based", first_label=1)
    _, t = ds[0]
    assert t["boxes"].tolist() == [[262, 210, 324, 339]] and t["labels"].tolist() == [9]
    with pytest.raises(ValueError, match="coordinates"):
        train.VOC(tmp_path, year="2007", coordinates="one_based")


def test_voc_errors_name_the_file(tp, train, tmp_path):
    make_voc(tmp_path, {"000009": [("unicorn", (1, 2, 3, 4), 0)]})
    with pytest.raises(tp.DataError, match=r"000009\.xml.*unicorn"):
        train.VOC(tmp_path, year="2007")
    with pytest.raises((tp.DataError, FileNotFoundError), match="VOC2012"):
        train.VOC(tmp_path)


# YOLO, in Ultralytics' layout.

def make_yolo(root, labels):
    (root / "images" / "train").mkdir(parents=True)
    (root / "labels" / "train").mkdir(parents=True)
    for stem, text in labels.items():
        shutil.copy(fixture("sample.jpg"), root / "images" / "train" / f"{stem}.jpg")
        if text is not None:
            (root / "labels" / "train" / f"{stem}.txt").write_text(text)


def test_yolo_gives_cxcywh_pixels(train, tmp_path):
    make_yolo(tmp_path, {"a": "0 0.5 0.5 0.25 0.5\n3 0.1 0.2 0.1 0.1\n", "b": None})
    ds = train.YOLO(tmp_path, split="train")
    assert len(ds) == 2
    _, t = ds[0]
    assert t["format"] == "CXCYWH" and t["canvas_size"] == (300, 451)
    f32 = np.float32
    want = [[f32(0.5) * f32(451), f32(0.5) * f32(300), f32(0.25) * f32(451), f32(0.5) * f32(300)],
            [f32(0.1) * f32(451), f32(0.2) * f32(300), f32(0.1) * f32(451), f32(0.1) * f32(300)]]
    assert np.array_equal(t["boxes"], np.array(want, dtype=np.float32))
    assert t["labels"].tolist() == [0, 3]
    _, t = ds[1]
    assert t["boxes"].shape == (0, 4) and t["labels"].shape == (0,)


def test_yolo_errors_name_the_label_file(tp, train, tmp_path):
    make_yolo(tmp_path, {"a": "0 0.5 0.5 0.25 0.5\n5 0.1 0.2 0.1 0.1\n"})
    train.YOLO(tmp_path)
    with pytest.raises(tp.DataError, match=r"a\.txt"):
        train.YOLO(tmp_path, classes=2)


def test_classification_samples_stay_image_and_labels(train):
    ds = train.ImageFolder(fixture("records", "folder"))
    image, labels = ds[0]
    assert isinstance(image, bytes) and labels == [0.0]


def test_coco_s_dicts_load_as_the_reader_does(train):
    """ds[i]'s dict is the whole target: the same samples given back through
    FromPython make the same batches, pixels, boxes and masks alike."""
    ds = train.COCO(IMAGES, ANNOTATIONS, masks=True)

    class Again:
        def __len__(self):
            return len(ds)

        def __getitem__(self, i):
            return ds[i]

    direct, through = batches(train, ds, 2), batches(train, train.FromPython(Again()), 2)
    assert len(direct) == len(through) == 2
    for a, b in zip(direct, through):
        assert np.array_equal(a["indices"], b["indices"]) and np.array_equal(a["images"], b["images"])
        for x, y in zip(a["targets"], b["targets"]):
            assert x.keys() == y.keys()
            for k in x:
                assert np.array_equal(x[k], y[k]), k


def test_yolo_s_upright_targets_read_back_upright(tp, train, tmp_path):
    """YOLO's boxes lie on the upright image (EXIF applied): the dict says so
    (``upright``), and the same dict given back loads as the reader does;
    without the key they would be read as on the stored pixels: refused."""
    (tmp_path / "images" / "train").mkdir(parents=True)
    (tmp_path / "labels" / "train").mkdir(parents=True)
    shutil.copy(fixture("exif_orient6_grace_hopper.jpg"), tmp_path / "images" / "train" / "r.jpg")
    (tmp_path / "labels" / "train" / "r.txt").write_text("0 0.25 0.25 0.2 0.1\n1 0.6 0.7 0.3 0.2\n")
    ds = train.YOLO(tmp_path)
    _, t = ds[0]
    assert t["upright"] is True and t["canvas_size"] == (600, 512)  # stored 600 wide, 512 high

    class Again:
        def __init__(self, drop=()):
            self.drop = drop

        def __len__(self):
            return 1

        def __getitem__(self, i):
            image, t = ds[i]
            return image, {k: v for k, v in t.items() if k not in self.drop}

    pipeline = train.Pipeline([train.ConvertBoundingBoxFormat("XYXY"), train.ToTensor()])

    def boxes(data):
        loader = train.Loader(data, pipeline, 1, 1, seed=0, output="numpy", max_shape=(3, 600, 600), shard=None)
        return loader.next_batch()["targets"][0]["boxes"]

    direct = boxes(ds)
    assert np.array_equal(direct, boxes(train.FromPython(Again())))
    # Without the key the canvas (upright) disagrees with the stored pixels.
    with pytest.raises(tp.InputError, match="Again"):
        boxes(train.FromPython(Again(drop=("upright",))))
