"""tensorprep.functional against torchvision 0.29.2's functional ops (the
reference outputs in tests/fixtures/targets/functional.txt, made by
make_functional_fixtures.py on a PIL photo with boxes and masks), and
transforms called as torchvision's are: ``t(image, target)``."""

import struct

import numpy as np
import PIL.Image
import pytest

from conftest import fixture

from tensorprep import functional as F
from tensorprep import train

PHOTO = "cv_china_rgb_area_0_0_128x85.png"
BOXES = [[10.0, 5.0, 60.0, 40.0], [70.5, 20.25, 127.0, 84.0]]


def fnv(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def bits(boxes):
    return ";".join(",".join(struct.pack(">f", v).hex() for v in row) for row in np.asarray(boxes).tolist())


def photo():
    return PIL.Image.open(fixture(PHOTO)).convert("RGB")


def target(w, h):
    masks = np.zeros((2, h, w), dtype=np.uint8)
    ys, xs = np.mgrid[0:h, 0:w]
    for i, (x1, y1, x2, y2) in enumerate(BOXES):
        inside = (x1 <= xs + 0.5) & (xs + 0.5 < x2) & (y1 <= ys + 0.5) & (ys + 0.5 < y2)
        masks[i][inside] = 1
    return {
        "boxes": np.array(BOXES, dtype=np.float32),
        "format": "XYXY",
        "canvas_size": (h, w),
        "labels": np.array([1, 2], dtype=np.int64),
        "masks": masks,
    }


def cases():
    with open(fixture("targets", "functional.txt")) as fh:
        lines = fh.read().splitlines()
    assert "torchvision 0.29.2" in lines[0]
    for line in lines[1:]:
        fields = dict(t.split("=", 1) for t in line.split())
        yield fields


def parse(value):
    if value == "-":
        return None
    parts = value.split(",")
    try:
        numbers = [float(p) if ("." in p or "e" in p) else int(p) for p in parts]
    except ValueError:
        return value
    return numbers if len(numbers) > 1 else numbers[0]


def arguments(fields):
    """The op's torchvision arguments, as the fixture script passed them."""
    p = {k: parse(v) for k, v in fields.items() if k != "op" and not k.startswith("out_")}
    op = fields["op"]
    if op in ("resize",) and p.get("size") is not None and not isinstance(p["size"], list):
        p["size"] = [p["size"]]
    if op == "rotate":
        p["expand"] = bool(p["expand"])
    if op == "perspective":
        p["startpoints"] = p["endpoints"] = None
    if op == "erase":
        v = p["v"]
        p["v"] = np.array(v if isinstance(v, list) else [v], dtype=np.uint8).reshape(-1, 1, 1)
    return p


def test_every_functional_op_gives_torchvision_s_pixels_boxes_and_masks():
    image = photo()
    w, h = image.size
    seen = set()
    for fields in cases():
        op = fields["op"]
        kwargs = arguments(fields)
        geometric = "out_boxes" in fields
        t = target(w, h)
        out = getattr(F, op)(image, **kwargs, target=t)
        assert isinstance(out, tuple), op
        out_image, moved = out
        assert isinstance(out_image, PIL.Image.Image), op
        assert f"{out_image.size[0]},{out_image.size[1]}" == fields["out_size"], op
        pixels = np.asarray(out_image)
        if "out_file" in fields:
            reference = np.asarray(PIL.Image.open(fixture(fields["out_file"])))
            assert np.abs(pixels.astype(int) - reference.astype(int)).max() <= 1, op
        else:
            assert fnv(pixels.tobytes()) == fields["out_pixels"], f"{op} {kwargs}: pixels"
        assert set(moved) == set(t), op
        if geometric:
            assert bits(moved["boxes"]) == fields["out_boxes"], f"{op} {kwargs}: boxes"
            assert "{},{}".format(*moved["canvas_size"]) == fields["out_boxes_canvas"], op
            assert ",".join(map(str, moved["masks"].shape)) == fields["out_masks_shape"], op
            assert fnv(moved["masks"].tobytes()) == fields["out_masks"], f"{op} {kwargs}: masks"
            assert moved["labels"].tolist() == [1, 2]
        else:
            # Photometric ops leave the target as it is.
            assert moved is t
        seen.add(op)
    assert len(seen) == 23


def test_numpy_in_numpy_out_and_the_image_alone_without_a_target():
    image = np.asarray(photo())
    out = F.center_crop(image, [40, 60])
    assert isinstance(out, np.ndarray) and out.shape == (40, 60, 3)
    gray = F.rgb_to_grayscale(image)
    assert gray.shape == (85, 128)
    assert np.array_equal(gray, np.asarray(photo().convert("L")))
    assert F.invert(F.invert(image)).tobytes() == image.tobytes()
    assert F.resize(image, 50).shape == (50, 75, 3)


def test_boxes_alone_convert_and_clamp():
    t = {"boxes": np.array([[-4, 2, 10, 20]], dtype=np.float32), "format": "XYXY", "canvas_size": (16, 8)}
    clamped = F.clamp_bounding_boxes(t)
    assert clamped["boxes"].tolist() == [[0, 2, 8, 16]]
    converted = F.convert_bounding_box_format(clamped, new_format="CXCYWH")
    assert converted["format"] == "CXCYWH"
    assert converted["boxes"].tolist() == [[4, 9, 8, 14]]


def test_bad_arguments_are_errors_that_name_them():
    image = np.zeros((4, 5, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match="padding_mode"):
        F.pad(image, 2, padding_mode="reflect")
    with pytest.raises(ValueError, match="sigma"):
        F.gaussian_blur(image, [3, 3], [1.0, 2.0])
    with pytest.raises(ValueError, match="fill"):
        F.rotate(image, 10, fill=300)
    with pytest.raises(ValueError, match="max_size"):
        F.resize(image, [4, 4], max_size=10)
    with pytest.raises(Exception, match="shape"):
        F.horizontal_flip(np.zeros((4, 5, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="boxes"):
        F.horizontal_flip(image, target={"boxes": np.zeros((2, 3), dtype=np.float32)})
    with pytest.raises(ValueError, match="takes a target"):
        F._call("convert_bounding_box_format", image, None, new_format="XYXY")
    with pytest.raises(TypeError, match="new_format"):
        F.convert_bounding_box_format({"boxes": np.zeros((0, 4), dtype=np.float32), "canvas_size": (2, 2)})
    with pytest.raises(ValueError, match="has no"):
        F._call("no_such_op", image, None)


def test_transforms_are_callable_with_a_target_and_a_seed():
    image = photo()
    t = target(*image.size)
    crop = train.RandomResizedCrop(64)
    a, ta = crop(image, t, seed=7)
    b, tb = crop(image, t, seed=7)
    assert isinstance(a, PIL.Image.Image) and a.size == (64, 64)
    assert a.tobytes() == b.tobytes()
    assert bits(ta["boxes"]) == bits(tb["boxes"]) and np.array_equal(ta["masks"], tb["masks"])
    assert ta["masks"].shape == (2, 64, 64)
    # A fixed op called as a transform is its functional op.
    flipped, tf = train.RandomHorizontalFlip(p=1.0)(image, t)
    f_image, f_target = F.horizontal_flip(image, target=t)
    assert flipped.tobytes() == f_image.tobytes()
    assert bits(tf["boxes"]) == bits(f_target["boxes"])
    centred, tc = train.CenterCrop(50)(np.asarray(image), t)
    c_image, c_target = F.center_crop(np.asarray(image), 50, target=t)
    assert isinstance(centred, np.ndarray) and centred.tobytes() == c_image.tobytes()
    assert bits(tc["boxes"]) == bits(c_target["boxes"])
    # A pipeline gives its tensor.
    x, tx = train.Pipeline.preset("detection-hflip")(image, t, seed=3)
    assert x.shape == (3, 85, 128) and str(x.dtype) == "float32"
    assert tx["boxes"].shape == (2, 4)


def test_a_transform_that_cannot_move_targets_refuses_them_by_name():
    with pytest.raises(Exception, match="AugMix"):
        train.AugMix()(photo(), target(128, 85))
    # Without a target it runs.
    assert train.AugMix()(photo(), seed=1).size == (128, 85)
    with pytest.raises(TypeError, match="RGB"):
        train.RandomHorizontalFlip()(photo().convert("L"))
    # A target on another canvas than the image's is refused, not moved wrong.
    elsewhere = {"boxes": np.zeros((1, 4), dtype=np.float32), "canvas_size": (5, 5)}
    with pytest.raises(ValueError, match="canvas_size"):
        train.RandomHorizontalFlip()(np.zeros((10, 12, 3), dtype=np.uint8), elsewhere)


def test_tv_tensors_come_back_as_tv_tensors():
    torch = pytest.importorskip("torch")
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    from torchvision.transforms.v2 import functional as TF

    image = photo()
    w, h = image.size
    boxes = tv_tensors.BoundingBoxes(torch.tensor(BOXES), format="XYXY", canvas_size=(h, w))
    masks = tv_tensors.Mask(torch.from_numpy(target(w, h)["masks"]))
    for op, args in [
        ("rotate", (33.0,)),
        ("affine", (10.0, [2.0, -3.0], 0.9, [4.0, 1.0])),
        ("resized_crop", (3, 5, 60, 70, [40, 50])),
        ("pad", ([2, 3, 4, 5],)),
    ]:
        out, moved = getattr(F, op)(image, *args, target={"boxes": boxes, "masks": masks})
        reference = getattr(TF, op)(image, *args)
        assert np.array_equal(np.asarray(out), np.asarray(reference)), op
        tv_boxes = getattr(TF, op)(boxes, *args)
        assert isinstance(moved["boxes"], tv_tensors.BoundingBoxes), op
        assert torch.equal(moved["boxes"], tv_boxes), op
        assert moved["boxes"].canvas_size == tv_boxes.canvas_size, op
        assert isinstance(moved["masks"], tv_tensors.Mask), op
        assert torch.equal(moved["masks"], getattr(TF, op)(masks, *args)), op
