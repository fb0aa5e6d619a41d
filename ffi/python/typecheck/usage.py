"""A typed use of the public API, checked by ``mypy --strict`` in CI: the
package's hints and the extension's stubs must accept what users write and
give the types they expect back. ``tests/test_typed_usage.py`` runs it too,
so the stubs and the module agree on these calls."""

from typing import Any, Dict, Optional, Tuple

import numpy as np
import numpy.typing as npt

import tensorprep
import tensorprep.functional
from tensorprep import train


def inference(path: str) -> npt.NDArray[Any]:
    plan: tensorprep.Plan = tensorprep.Graph.preset("imagenet-eval").compile("jpeg")
    shape: Optional[Tuple[int, int, int]] = plan.output_shape
    assert shape is not None
    x: np.ndarray = plan(path)
    return x


class Stronger:
    """A loader callback: stronger augmentation from the third epoch on."""

    def epoch_end(self, ctx: train.RunContext) -> None:
        if ctx.cur_epoch_num >= 2:
            ctx.set_pipeline(train.Pipeline.preset("imagenet-trivialaugment"))


def training(root: str) -> Dict[str, int]:
    data: train.Dataset = train.ImageFolder(root)
    pipeline = train.Pipeline(
        [
            train.RandomResizedCrop(224),
            train.RandomHorizontalFlip(),
            train.ToTensor(),
            train.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
            train.RandomErasing(0.25),
        ]
    )
    mix: train.Mixup = train.MixUp(alpha=0.2, num_classes=1000)
    timm: train.Mixup = train.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=1000)
    assert timm.num_classes == mix.num_classes
    either: train.Mixup = train.RandomChoice([train.CutMix(num_classes=1000), mix])
    flip: train.Augment = train.RandomChoice([train.RandomHorizontalFlip(), train.RandomVerticalFlip()])
    assert either.switch_prob == 0.5 and flip is not None
    defaults: Dict[str, int] = train.loader_defaults()
    workers = defaults["workers"]
    callbacks = [Stronger()]
    with train.Loader(
        data, pipeline, 64, num_workers=workers, prefetch_factor=2, mix=mix, callbacks=callbacks
    ) as loader:
        for images, labels in loader:
            del images, labels
        batch = loader.next_batch()
        if batch is not None:
            epoch: int = batch["epoch"]
            del epoch
        n: int = len(loader)
        del n
    stats: Optional[Dict[str, int]] = train.remote_stats()
    del stats
    with train.Loader(data, pipeline, 64, shuffle="blocks", block_window=4, fetch_ahead=512) as blocks:
        return blocks.state_dict()


class Boxes:
    """A map-style detection dataset: an encoded photo and its target dict."""

    def __len__(self) -> int:
        return 1

    def __getitem__(self, i: int) -> Tuple[bytes, Dict[str, Any]]:
        boxes = np.array([[10.0, 20.0, 50.0, 60.0]], dtype=np.float32)
        return b"", {"boxes": boxes, "format": "XYXY", "canvas_size": (100, 100), "labels": [1]}


def detection() -> int:
    pipeline = train.Pipeline(
        [
            train.RandomPhotometricDistort(p=1.0),
            train.RandomZoomOut(fill=(123, 117, 104), side_range=(1.0, 4.0)),
            train.RandomIoUCrop(sampler_options=[0.0, 0.5, 1.0], max_rounds=50),
            train.RandomShortestSize([480, 512], max_size=1333),
            train.ScaleJitter((1024, 1024)),
            train.FixedSizeCrop(1024, fill=0),
            train.RandomHorizontalFlip(),
            train.ToTensor(),
            train.ConvertBoundingBoxFormat("XYXY"),
            train.ClampBoundingBoxes(),
            train.SanitizeBoundingBoxes(min_size=1.0),
        ]
    )
    loader = train.Loader(train.FromPython(Boxes()), pipeline, 1, max_shape=(3, 1024, 1024), size_divisible=32)
    batch = loader.next_batch()
    if batch is None:
        return 0
    sizes: list[Tuple[int, int]] = batch["batch"].image_sizes
    flat: Dict[str, npt.NDArray[Any]] = batch["batch"].boxes("flat")
    padded = batch["batch"].boxes("padded", room=100)
    targets: list[Optional[Dict[str, Any]]] = batch["targets"]
    return len(flat["bboxes"]) + len(padded["counts"]) + len(targets) + len(sizes)


def coco_targets(images: str, annotations: str, tv: bool) -> int:
    coco: train.Dataset = train.COCO(images, annotations, masks=True, categories="contiguous_from_1", crowd="drop")
    outlines: train.Dataset = train.COCO(images, annotations, masks="polygons")
    assert len(outlines) == len(coco)
    image, target = coco[0]
    assert isinstance(image, bytes) and isinstance(target, dict)
    boxes: npt.NDArray[np.float32] = target["boxes"]
    converted: Dict[str, Any] = train.to_tv_tensors(target) if tv else target
    loader = train.Loader(
        coco, "detection-ssd", 2, targets="tv_tensors" if tv else "numpy", max_shape=(3, 700, 1000), shard=None
    )
    batch = loader.next_batch()
    assert batch is not None
    return len(boxes) + len(converted) + len(batch["targets"])


def voc_and_yolo(voc_root: str, yolo_root: str) -> train.Dataset:
    voc: train.Dataset = train.VOC(voc_root, year="2007", image_set="trainval", keep_difficult=False)
    yolo: train.Dataset = train.YOLO(yolo_root, split="val", classes=80)
    return voc + yolo


def preview(root: str, out: str) -> Tuple[int, int]:
    grid: npt.NDArray[np.uint8] = train.preview(train.ImageFolder(root), preset="imagenet-train", out=out, samples=4)
    height, width, _ = grid.shape
    return width, height


def functional_ops(image: npt.NDArray[np.uint8]) -> Tuple[Any, Dict[str, Any]]:
    from tensorprep import functional as F

    target: Dict[str, Any] = {
        "boxes": np.array([[1.0, 2.0, 5.0, 6.0]], dtype=np.float32),
        "format": "XYXY",
        "canvas_size": (image.shape[0], image.shape[1]),
    }
    rotated, moved = F.rotate(image, 30.0, expand=True, target=target)
    resized, moved = F.resize(rotated, [moved["canvas_size"][0], rotated.shape[1]], target=moved)
    brighter = F.adjust_brightness(resized, 1.2)
    moved = F.clamp_bounding_boxes(F.convert_bounding_box_format(moved, new_format="CXCYWH"))
    flipped, moved = train.RandomHorizontalFlip(p=1.0)(brighter, moved, seed=1)
    return flipped, moved
