"""torchvision v2's detection transforms from Python: the constructors
(torchvision's arguments and defaults, checked when made, pickled as their
call) and from_torchvision's conversion of the detection reference recipes
(stand-ins without torchvision; the real transforms when it is installed)."""

import importlib.util
import pickle

import pytest


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


DETECTION = [
    "RandomIoUCrop",
    "RandomZoomOut",
    "ScaleJitter",
    "RandomShortestSize",
    "FixedSizeCrop",
    "RandomPhotometricDistort",
    "ClampBoundingBoxes",
    "SanitizeBoundingBoxes",
    "ConvertBoundingBoxFormat",
]


def test_the_detection_constructors_take_torchvision_s_arguments(tp, train):
    assert set(DETECTION) <= set(tp._native.AUGMENTATIONS) <= set(train.__all__)
    made = [
        train.RandomIoUCrop(),
        train.RandomIoUCrop(0.5, 1.0, 0.5, 2.0, [0.3, 0.5], 20, max_rounds=10),
        train.RandomZoomOut(fill=(123, 117, 104), side_range=(1.0, 2.0), p=0.5),
        train.ScaleJitter((1024, 512), scale_range=(0.5, 1.5), interpolation="bicubic", antialias=True),
        train.RandomShortestSize([480, 512], max_size=1333),
        train.RandomShortestSize(480),
        train.FixedSizeCrop((512, 256), fill=0),
        train.RandomPhotometricDistort(p=1.0),
        train.ClampBoundingBoxes(),
        train.SanitizeBoundingBoxes(min_size=2.0, min_area=4.0),
        train.ConvertBoundingBoxFormat("cxcywh"),
    ]
    for a in made:
        assert isinstance(a, train.Augment)
        # Each pickles as the call that made it.
        assert repr(pickle.loads(pickle.dumps(a))) == repr(a)
    assert "CXCYWH" in repr(made[-1])
    # target_size is (height, width), as torchvision's: the width shows 512.
    assert "512" in repr(made[3])
    # Every step runs in one pipeline (the box-only ones after ToTensor too).
    train.Pipeline([*made[:8], train.ToTensor(), *made[8:]])


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t.RandomIoUCrop(min_scale=0.0),
        lambda t: t.RandomIoUCrop(max_scale=1.5),
        lambda t: t.RandomIoUCrop(trials=0),
        lambda t: t.RandomZoomOut(side_range=(0.5, 2.0)),
        lambda t: t.RandomZoomOut(p=2.0),
        lambda t: t.ScaleJitter((0, 10)),
        lambda t: t.RandomShortestSize([]),
        lambda t: t.FixedSizeCrop(0),
        lambda t: t.FixedSizeCrop(10, padding_mode="reflect"),
        lambda t: t.RandomPhotometricDistort(hue=(-0.7, 0.0)),
        lambda t: t.SanitizeBoundingBoxes(min_size=0.5),
        lambda t: t.ConvertBoundingBoxFormat("XYZ"),
    ],
)
def test_bad_parameters_are_refused_when_made(train, make):
    with pytest.raises(ValueError):
        make(train)


class Stand:
    """A stand-in of a torchvision transform: its class name and attributes."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def stand(name, **attributes):
    return type(name, (Stand,), {})(**attributes)


class Image:
    """Stands for tv_tensors.Image as a key of v2's per-type fill."""


def test_from_torchvision_converts_the_v2_detection_recipe(train):
    """torchvision's detection reference (ssd, use_v2) by the attributes its
    transforms keep: RandomIoUCrop's options, RandomZoomOut's per-type fill,
    PILToTensor + ToDtype(float, scale=True), the box-only steps after it."""
    ssd = stand(
        "Compose",
        transforms=[
            stand("RandomPhotometricDistort", brightness=(0.875, 1.125), contrast=(0.5, 1.5),
                  saturation=(0.5, 1.5), hue=(-0.05, 0.05), p=1.0),
            stand("RandomZoomOut", fill={Image: (123, 117, 104), "others": 0}, side_range=(1.0, 4.0), p=0.5),
            stand("RandomIoUCrop", min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                  options=[0.0, 0.5, 1.0], trials=40),
            stand("RandomHorizontalFlip", p=0.5),
            stand("PILToTensor"),
            stand("ToDtype", dtype={Image: "torch.float32", "others": None}, scale=True),
            stand("ConvertBoundingBoxFormat", format="XYXY"),
            stand("SanitizeBoundingBoxes", min_size=1, min_area=1, labels_getter="default"),
            stand("ToPureTensor"),
        ],
    )
    want = train.Pipeline([
        train.RandomPhotometricDistort(p=1.0),
        train.RandomZoomOut(fill=(123, 117, 104)),
        train.RandomIoUCrop(sampler_options=[0.0, 0.5, 1.0]),
        train.RandomHorizontalFlip(),
        train.ToTensor(),
        train.ConvertBoundingBoxFormat("XYXY"),
        train.SanitizeBoundingBoxes(),
    ])
    assert train.from_torchvision(ssd) == want
    assert train.from_torchvision(ssd) != train.Pipeline([train.RandomIoUCrop(), train.ToTensor()])
    # The reference's own fill: defaultdict(lambda: mean, {Mask: 0}); the
    # image takes the default (the mean), not a black canvas.
    from collections import defaultdict

    class Mask:
        pass

    reference = stand("RandomZoomOut", fill=defaultdict(lambda: (123.0, 117.0, 104.0), {Mask: 0}),
                      side_range=(1.0, 4.0), p=0.5)
    assert train.from_torchvision([reference, stand("ToTensor")]) == train.Pipeline(
        [train.RandomZoomOut(fill=(123, 117, 104)), train.ToTensor()])
    # The references' FixedSizeCrop keeps its size as crop_height, crop_width.
    lsj = [stand("ScaleJitter", target_size=(64, 48), scale_range=(0.1, 2.0), interpolation="bilinear", antialias=True),
           stand("FixedSizeCrop", crop_height=64, crop_width=48, fill=0, padding_mode="constant"),
           stand("ToImage"), stand("ToDtype", dtype="torch.float32", scale=True)]
    assert train.from_torchvision(lsj) == train.Pipeline(
        [train.ScaleJitter((64, 48)), train.FixedSizeCrop((64, 48)), train.ToTensor()])
    with pytest.raises(ValueError, match="labels_getter"):
        train.from_torchvision([stand("SanitizeBoundingBoxes", min_size=1, min_area=1, labels_getter=None),
                                stand("ToTensor")])
    with pytest.raises(ValueError, match="scale=True"):
        train.from_torchvision([stand("ToImage"), stand("ToDtype", dtype="torch.float32", scale=False)])


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None, reason="torchvision is not installed")
def test_torchvision_v2_detection_transforms_convert(train):
    import torch
    from torchvision import tv_tensors
    from torchvision.transforms import v2 as T

    tv = T.Compose([
        T.RandomPhotometricDistort(p=1),
        T.RandomZoomOut(fill={tv_tensors.Image: (123, 117, 104), "others": 0}),
        T.RandomIoUCrop(),
        T.RandomHorizontalFlip(p=0.5),
        T.RandomShortestSize([480, 512], max_size=1333),
        T.PILToTensor(),
        T.ToDtype(torch.float, scale=True),
        T.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
        T.ClampBoundingBoxes(),
        T.SanitizeBoundingBoxes(),
        T.ToPureTensor(),
    ])
    want = train.Pipeline([
        train.RandomPhotometricDistort(p=1.0),
        train.RandomZoomOut(fill=(123, 117, 104)),
        train.RandomIoUCrop(),
        train.RandomHorizontalFlip(),
        train.RandomShortestSize([480, 512], max_size=1333),
        train.ToTensor(),
        train.ConvertBoundingBoxFormat("XYXY"),
        train.ClampBoundingBoxes(),
        train.SanitizeBoundingBoxes(),
    ])
    assert train.from_torchvision(tv) == want
    lsj = T.Compose([T.ScaleJitter((1024, 1024), antialias=True), T.PILToTensor(), T.ToDtype(torch.float, scale=True)])
    assert train.from_torchvision(lsj) == train.Pipeline([train.ScaleJitter((1024, 1024)), train.ToTensor()])
