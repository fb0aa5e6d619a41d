"""Training mode: datasets, augmentations and a parallel, ordered, resumable loader.

>>> from tensorprep import train
>>> data = train.ImageFolder("imagenet/train")        # or RecordIO, TFRecord, WebDataset
>>> pipeline = train.Pipeline([train.RandomResizedCrop(224), train.RandomHorizontalFlip()])
>>> loader = train.Loader(data, pipeline, batch_size=64, workers=8, seed=0)
>>> for epoch in range(90):
...     for images, labels in loader:                 # torch tensors when torch is installed
...         ...
...     checkpoint = {"loader": loader.state_dict()}  # exact resume: load_state_dict

Every augmentation is drawn from (seed, epoch, sample index): the same
batches for any number of workers, in any order, and no generator state to
save. The decoding and augmenting run on Rust threads without the GIL.

PyTorch's names work where they mean the same: a pipeline's list may end in
``ToTensor()``, ``Normalize(mean, std)`` and ``RandomErasing`` as a
torchvision ``Compose`` does, and ``Loader`` takes ``DataLoader``'s
``num_workers`` and ``prefetch_factor``. Mixup and CutMix are a batch
transform of the loader: ``Loader(..., mix=train.MixUp(alpha=0.2,
num_classes=1000))`` (torchvision's names) or ``mix=train.Mixup(...)``
(timm's); the labels are then soft targets.
"""

from __future__ import annotations

import atexit
import importlib.util
import inspect
import os
import weakref
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

from ._native import (  # noqa: F401  (re-exported)
    AugMix,
    Augment,
    AutoAugment,
    BatchTensor,
    CenterCrop,
    ClampBoundingBoxes,
    ColorJitter,
    ConvertBoundingBoxFormat,
    Dataset,
    FixedSizeCrop,
    GaussianBlur,
    Mixup,
    Normalize,
    Pipeline,
    RandAugment,
    RandomAdjustSharpness,
    RandomAffine,
    RandomApply,
    RandomAutocontrast,
    RandomCrop,
    RandomEqualize,
    RandomErasing,
    RandomGrayscale,
    RandomHorizontalFlip,
    RandomInvert,
    RandomIoUCrop,
    RandomOrder,
    RandomPerspective,
    RandomPhotometricDistort,
    RandomPosterize,
    RandomResizedCrop,
    RandomRotation,
    RandomShortestSize,
    RandomSolarize,
    RandomVerticalFlip,
    RandomZoomOut,
    Resize,
    RunContext,
    SanitizeBoundingBoxes,
    ScaleJitter,
    ToTensor,
    TrivialAugmentWide,
    _Loader,
    loader_defaults,
    shard_from_env,
)
from ._native import RandomChoice as _RandomChoice
from ._native import AUGMENTATIONS as _AUGMENTATIONS
from . import _native
from ._targets import to_tv_tensors
from ._native import Lambda as _Lambda
from ._native import cifar10 as _cifar10
from ._native import cifar100 as _cifar100
from ._native import mnist as _mnist
from ._native import cifar_pickled as _cifar_pickled
from ._native import from_python as _from_python
from ._native import from_iterable as _from_iterable
from ._native import preview as _preview
from ._native import celeba as _celeba
from ._native import coco as _coco
from ._native import voc as _voc
from ._native import yolo as _yolo
from ._native import recordio_files as _recordio_files
from ._native import tfrecord_files as _tfrecord_files
from ._native import Graph as _Graph
from ._native import mindrecord as _mindrecord
from ._native import remote_stats as _remote_stats
from ._native import set_cache as _set_cache
from ._native import set_read_blocks as _set_read_blocks

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "AugMix",
    "Augment",
    "AutoAugment",
    "BatchTensor",
    "CIFAR10",
    "CIFAR100",
    "COCO",
    "CelebA",
    "CenterCrop",
    "ClampBoundingBoxes",
    "ColorJitter",
    "ConvertBoundingBoxFormat",
    "CutMix",
    "Dataset",
    "FashionMNIST",
    "FixedSizeCrop",
    "GaussianBlur",
    "ImageFolder",
    "KMNIST",
    "Lambda",
    "Loader",
    "MNIST",
    "MindRecord",
    "MixUp",
    "Mixup",
    "Normalize",
    "Pipeline",
    "RandAugment",
    "RandomAdjustSharpness",
    "RandomAffine",
    "RandomApply",
    "RandomAutocontrast",
    "RandomChoice",
    "RandomCrop",
    "RandomEqualize",
    "RandomErasing",
    "RandomGrayscale",
    "RandomHorizontalFlip",
    "RandomInvert",
    "RandomIoUCrop",
    "RandomOrder",
    "RandomPerspective",
    "RandomPhotometricDistort",
    "RandomPosterize",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomShortestSize",
    "RandomSolarize",
    "RandomVerticalFlip",
    "RandomZoomOut",
    "RecordIO",
    "Resize",
    "RunContext",
    "Samples",
    "SanitizeBoundingBoxes",
    "ScaleJitter",
    "TFRecord",
    "ToTensor",
    "TrivialAugmentWide",
    "VOC",
    "WebDataset",
    "YOLO",
    "FromPython",
    "FromIterable",
    "from_torch_dataset",
    "from_torchvision",
    "loader_defaults",
    "preview",
    "remote_stats",
    "set_cache",
    "set_read_blocks",
    "shard_from_env",
    "to_tv_tensors",
]


def ImageFolder(
    root: PathLike,
    *,
    extensions: Union[str, Sequence[str], None] = None,
    is_valid_file: Optional[Callable[[str], bool]] = None,
) -> Dataset:
    """torchvision's ``ImageFolder``: a subdirectory per class (sorted), its images the samples.

    The files taken are those whose name, in lower case, ends with one of
    ``extensions`` (torchvision's ``IMG_EXTENSIONS`` by default: ``.jpg
    .jpeg .png .ppm .bmp .pgm .tif .tiff .webp``), or those whose path
    ``is_valid_file`` accepts; not both, as torchvision. Other files are
    ignored; a class left with no file is an error."""
    if extensions is not None and is_valid_file is not None:
        raise ValueError("Both extensions and is_valid_file cannot be not None at the same time")
    if isinstance(extensions, str):
        extensions = (extensions,)
    return Dataset.image_folder(
        os.fspath(root), None if extensions is None else list(extensions), is_valid_file
    )


def _files(paths: Union[PathLike, Sequence[PathLike]]) -> Tuple[str, Optional[list[str]]]:
    """One plain file's path, or the list of files or patterns ``paths`` names."""
    if isinstance(paths, (str, os.PathLike)):
        path = os.fspath(paths)
        return path, ([path] if any(c in path for c in "*?{") else None)
    files = [os.fspath(p) for p in paths]
    return (files[0] if files else ""), files


def RecordIO(
    path: Union[PathLike, Sequence[PathLike]],
    index: Optional[PathLike] = None,
    *,
    open_files: int = 64,
) -> Dataset:
    """MXNet RecordIO (``.rec``; its ``.idx`` beside it or ``index``), as ``im2rec`` writes it.

    ``path`` may be a list of files or a pattern (``"train-*.rec"``,
    ``"part-{000..099}.rec"``): one dataset over them all, at most
    ``open_files`` open at once."""
    one, files = _files(path)
    if files is None:
        return Dataset.recordio(one, None if index is None else os.fspath(index))
    if index is not None:
        raise ValueError("index names one file's index: give none with a list or a pattern")
    return _recordio_files(files, open_files=open_files)


def TFRecord(
    path: Union[PathLike, Sequence[PathLike]],
    index: Optional[PathLike] = None,
    *,
    image_key: str = "image/encoded",
    label_key: str = "image/class/label",
    open_files: int = 64,
    targets: Optional[str] = None,
    masks: bool = False,
) -> Dataset:
    """TFRecord files of ``tf.train.Example`` (CRC-32C checked); ``index``: DALI's ``tfrecord2idx``.

    ``path`` may be a list of files or a pattern (``"shard-*.tfrecord"``,
    ``"shard-{0000..1023}.tfrecord"``): one dataset over them all, at most
    ``open_files`` open at once. ``targets="object_detection"`` reads each
    sample's detection target from the TF Object Detection API's keys
    (``image/object/bbox/xmin`` ..., ``image/object/class/label``; boxes
    XYXY in pixels) instead of ``label_key``; ``masks=True`` also decodes
    its ``image/object/mask`` PNGs."""
    one, files = _files(path)
    if files is None:
        return Dataset.tfrecord(
            one,
            None if index is None else os.fspath(index),
            image_key=image_key,
            label_key=label_key,
            targets=targets,
            masks=masks,
        )
    if index is not None:
        raise ValueError("index names one file's index: give none with a list or a pattern")
    return _tfrecord_files(
        files, image_key=image_key, label_key=label_key, open_files=open_files, targets=targets, masks=masks
    )


def CelebA(
    root: PathLike,
    split: str = "train",
    target_type: Union[str, Sequence[str]] = "attr",
    *,
    signed: bool = False,
    layout: str = "torchvision",
) -> Dataset:
    """torchvision's ``CelebA`` (``root/celeba/img_align_celeba`` and the text files beside it).

    ``split``: ``train``, ``valid``, ``test`` or ``all``; ``target_type``:
    ``attr`` (0 or 1 as torchvision and MindSpore give them; the files' -1
    or 1 with ``signed=True``), ``identity``, ``bbox``, ``landmarks``, or a
    list of them, concatenated into each sample's labels in the list's
    order. ``layout="mindspore"`` reads MindSpore's ``CelebADataset``
    folder (the text files and the images together)."""
    targets = [target_type] if isinstance(target_type, str) else list(target_type)
    return _celeba(os.fspath(root), split, targets, signed=signed, layout=layout)


def COCO(
    images_dir: PathLike,
    annotation_file: PathLike,
    masks: Union[bool, str] = False,
    *,
    categories: str = "raw",
    crowd: str = "keep",
    keep_empty: bool = True,
    keypoints: bool = False,
) -> Dataset:
    """COCO instances: the images of ``images_dir`` that ``annotation_file``
    (``instances_train2017.json``'s layout) lists, in the file's order.

    ``ds[i]`` is ``(image bytes, target)``, the target a dict: ``boxes``
    float32 ``(N, 4)`` with ``format`` ``"XYWH"`` (COCO's ``bbox``) on
    ``canvas_size`` ``(H, W)`` (the file's image size), ``labels`` int64,
    ``iscrowd``, ``area``, ``image_id``, and with ``masks`` ``masks``
    uint8 ``(N, H, W)``, each object's polygons or RLE decoded as
    pycocotools' ``annToMask`` decodes them.

    - ``masks``: ``False``; ``True`` (or ``"pixels"``): decoded when the
      sample is read and moved as pixels by each op, exactly as torchvision
      moves ``tv_tensors.Mask``; ``"polygons"``: kept as polygons whose
      vertices move through the ops (float64), rasterised as pycocotools
      does once the ops are done, on the final canvas (sharp outlines, no
      ``(N, H, W)`` buffer moved through each op, as Detectron2 does; crowd
      RLEs as the rectangles of their runs). ``ds[i]`` gives them
      rasterised, unmoved.

    - ``categories``: ``"raw"`` (the ``category_id``, as torchvision's
      ``CocoDetection``), ``"contiguous_from_0"`` or ``"contiguous_from_1"``
      (the category's rank among the file's categories sorted by id, from 0
      or 1). ``ds.classes`` names the categories in id order.
    - ``crowd``: ``"keep"`` (``iscrowd`` 1 in the target) or ``"drop"``.
    - ``keep_empty``: keep the images left without objects.
    - ``keypoints``: each object's ``keypoints`` (``person_keypoints_*.json``)
      as ``keypoints`` float32 ``(N, K, 3)`` (x, y, COCO's visibility) with
      ``flip_index`` from the category's key point names (``left_*`` and
      ``right_*`` swap in a horizontal flip), moved by every op.

    A bad annotation file (JSON, a missing field, an unknown image or
    category, a bad box, a polygon of fewer than three points with
    ``masks=True``, ...) is a ``DataError`` naming the file and the record;
    a missing image or an undecodable mask when the sample is read."""
    return _coco(
        os.fspath(images_dir),
        os.fspath(annotation_file),
        masks,
        categories=categories,
        crowd=crowd,
        keep_empty=keep_empty,
        keypoints=keypoints,
    )


def VOC(
    root: PathLike,
    year: str = "2012",
    image_set: str = "train",
    *,
    keep_difficult: bool = True,
    coordinates: str = "as_stored",
    first_label: int = 0,
) -> Dataset:
    """Pascal VOC detection in torchvision's ``VOCDetection`` layout:
    ``root/VOCdevkit/VOC{year}`` (``root`` may also be the ``VOCdevkit``
    folder), the ids of ``ImageSets/Main/{image_set}.txt`` in order.

    ``ds[i]`` is ``(image bytes, target)``: ``boxes`` float32 ``(N, 4)``
    ``"XYXY"`` on ``canvas_size`` (the XML's ``<size>``), ``labels`` int64
    (``first_label`` + the class's place in ``ds.classes``, VOC's 20 in the
    devkit's order), ``difficult``. ``coordinates``: ``"as_stored"`` (the
    file's 1-based pixel indices, as torchvision gives them) or
    ``"zero_based"`` (``xmin - 1, ymin - 1, xmax, ymax``);
    ``keep_difficult=False`` leaves out the difficult objects."""
    return _voc(
        os.fspath(root),
        str(year),
        image_set,
        keep_difficult=keep_difficult,
        coordinates=coordinates,
        first_label=int(first_label),
    )


def YOLO(root: PathLike, split: str = "train", *, classes: Optional[int] = None) -> Dataset:
    """A YOLO split in Ultralytics' layout: the images of
    ``root/images/{split}`` (sorted) with ``root/labels/{split}/{stem}.txt``
    (``class cx cy w h`` normalised; no file: no objects).

    ``ds[i]`` is ``(image bytes, target)``: ``boxes`` float32 ``(N, 4)``
    ``"CXCYWH"`` in pixels of the upright image (EXIF orientation applied,
    as Ultralytics measures it), ``canvas_size``, ``labels``. ``classes``:
    the dataset YAML's ``nc`` (a class id at or past it is a ``DataError``)."""
    return _yolo(os.fspath(root), split, classes=classes)


def MindRecord(
    path: PathLike,
    image: str = "data",
    label: Union[str, Sequence[str], None] = "label",
    *,
    shape: Optional[Sequence[str]] = None,
    bgr: bool = False,
) -> Dataset:
    """A MindRecord set (MindSpore's ``FileWriter``), opened from any one of
    its data files, in ``MindDataset(shuffle=False)``'s order. ``image``: a
    bytes column of encoded files, or pixels: an int array column whose
    schema shape is ``[h, w]`` or ``[h, w, c]``, or bytes/arrays with their
    shape in ``shape`` (one int array column, or height, width[, channels]
    scalar columns); ``bgr``: 3/4-channel pixels are BGR(A). ``label``: the
    numeric label column(s), ``None`` for none."""
    return _mindrecord(os.fspath(path), image, label, shape=None if shape is None else list(shape), bgr=bgr)


def WebDataset(
    pattern: str,
    *,
    image_keys: Optional[Sequence[str]] = None,
    label_key: str = "cls",
    target_key: Optional[str] = None,
) -> Dataset:
    """WebDataset tar shards, brace patterns expanded (``"shards-{000..009}.tar"``).

    ``target_key="json"``: each sample's detection target from its ``.json``
    member, ``{"boxes": [[...]], "format": "XYXY" | "XYWH" | "CXCYWH",
    "labels": [...]}`` (optional ``iscrowd``, ``area``, ``difficult``,
    ``keypoints``) or COCO's ``{"annotations": [{"bbox": [x, y, w, h],
    "category_id": ...}]}``, in pixels of the image as stored."""
    return Dataset.webdataset(pattern, image_keys=image_keys, label_key=label_key, target_key=target_key)


def Samples(items: Iterable[Tuple[bytes, Union[float, Sequence[float]]]]) -> Dataset:
    """Samples in memory: ``(encoded_bytes, label)`` pairs; a label is a
    number or a sequence of numbers, each one float32 holds (NaN, infinities
    and integers past 2**24 that float32 would round are a ``ValueError``)."""
    return Dataset.samples(list(items))


def _unpickled_cifar(folder: str, names: Sequence[str], label_keys: Sequence[str], label: Optional[str], what: str) -> Dataset:
    """CIFAR's Python version (what torchvision downloads): the pickled
    batches in ``folder``, unpickled here and handed to the Rust reader that
    the binary version uses (its ``data`` rows of 3072 planar uint8 bytes and
    its ``label_keys`` lists; the classes are checked there). The files are
    trusted input: unpickling runs what they hold, as torchvision's reader
    does."""
    import pickle

    batches = []
    for name in names:
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            entry = pickle.load(f, encoding="latin1")
        data = entry["data"]
        if not isinstance(data, np.ndarray) or data.dtype != np.uint8:
            raise ValueError(f"{path}: data of type {type(data).__name__} {getattr(data, 'dtype', '')}, not uint8")
        if data.ndim != 2 or data.shape[1] != 3072:
            raise ValueError(f"{path}: data of shape {data.shape}, not (n, 3072)")
        batches.append((path, np.ascontiguousarray(data).tobytes(), [list(entry[k]) for k in label_keys]))
    return _cifar_pickled(batches, label, what)


def CIFAR10(root: PathLike, train: bool = True) -> Dataset:
    """CIFAR-10 under ``root``: ``cifar-10-batches-bin/`` (the binary version,
    read in Rust) or ``cifar-10-batches-py/`` (torchvision's download,
    unpickled here: trusted files only). Samples are 32 x 32 RGB pixels,
    labels 0 to 9, in the files' order (``data_batch_1`` to ``5``, or
    ``test_batch``), as torchvision's ``CIFAR10``."""
    root = os.fspath(root)
    if os.path.isdir(os.path.join(root, "cifar-10-batches-bin")):
        return _cifar10(root, train)
    folder = os.path.join(root, "cifar-10-batches-py")
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{root}: holds neither cifar-10-batches-bin/ nor cifar-10-batches-py/")
    names = [f"data_batch_{i}" for i in range(1, 6)] if train else ["test_batch"]
    return _unpickled_cifar(folder, names, ["labels"], None, f"CIFAR10({root}, train={train})")


def CIFAR100(root: PathLike, train: bool = True, label: str = "fine") -> Dataset:
    """CIFAR-100 under ``root``: ``cifar-100-binary/`` (read in Rust) or
    ``cifar-100-python/`` (torchvision's download, unpickled here: trusted
    files only). ``label``: ``"fine"`` (0 to 99, torchvision's target),
    ``"coarse"`` (0 to 19) or ``"both"`` (coarse then fine, MindSpore's
    ``Cifar100Dataset`` columns)."""
    root = os.fspath(root)
    if os.path.isdir(os.path.join(root, "cifar-100-binary")):
        return _cifar100(root, train, label)
    folder = os.path.join(root, "cifar-100-python")
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{root}: holds neither cifar-100-binary/ nor cifar-100-python/")
    keys = ["coarse_labels", "fine_labels"]
    return _unpickled_cifar(folder, ["train" if train else "test"], keys, label, f"CIFAR100({root}, train={train})")


def MNIST(root: PathLike, train: bool = True) -> Dataset:
    """MNIST under ``root`` as torchvision lays it out: ``MNIST/raw/`` with
    the uncompressed idx files. Samples are 28 x 28 gray pixels (made RGB by
    an RGB pipeline, as Pillow's ``convert("RGB")``), labels 0 to 9."""
    return _mnist(root, "MNIST", train)


def FashionMNIST(root: PathLike, train: bool = True) -> Dataset:
    """Fashion-MNIST under ``root``: ``FashionMNIST/raw/`` (see ``MNIST``)."""
    return _mnist(root, "FashionMNIST", train)


def KMNIST(root: PathLike, train: bool = True) -> Dataset:
    """Kuzushiji-MNIST under ``root``: ``KMNIST/raw/`` (see ``MNIST``)."""
    return _mnist(root, "KMNIST", train)


def FromPython(dataset: Any) -> Dataset:
    """A map-style Python dataset (PyTorch's ``Dataset`` protocol): ``len(dataset)``
    samples, ``dataset[i]`` returning ``(image, label)`` or, for detection,
    ``(image, target)``.

    ``image``: an encoded file (``bytes``, ``bytearray``, ``memoryview``) or a
    uint8 numpy array ``HxW`` or ``HxWxC`` (C 1, 3 or 4: gray, RGB, RGBA; any
    strides), taken as pixels with no encoding round trip. ``label``: as in
    ``Samples`` (a number or a sequence of numbers, numpy's too). A PyTorch
    dataset returning PIL images: ``FromPython(from_torch_dataset(ds))``.

    ``target``: a dict in torchvision v2's layout, moved with the image by
    every geometric step and read back from the batches (``Loader.next_batch``'s
    ``targets``, ``BatchTensor.boxes``): ``boxes`` (array-like (N, 4), float),
    ``format`` (``"XYXY"`` by default, ``"XYWH"``, ``"CXCYWH"``),
    ``canvas_size`` ((H, W); by default the image's: the array's, or the
    encoded file's as its header stores it, before any EXIF rotation),
    ``labels`` ((N,) integers), and optionally ``masks`` (uint8 (N, H, W)),
    ``iscrowd``, ``area``, ``difficult`` ((N,) each) and ``image_id``. Every
    per-instance field has N entries and every box is finite; a target that
    is not so (or has another key) is the ``DataError`` below. Such a sample
    has no class labels (the batch's labels are (batch, 0)).

    ``len(dataset)`` is read once, here (an exception it raises is raised
    here); the dataset must keep that length and its samples (an index past a
    shrunk dataset is ``__getitem__``'s ``IndexError``, reported as below).
    The loader's read threads (``read_workers``) call ``dataset[i]``, each
    holding the GIL only for the call and the copy of what it returns; the
    decoding and augmenting run without it. An exception raised by
    ``dataset[i]`` (or a return value that is not a sample) is the loader's
    ``DataError`` naming the sample (``module.Type[i]``) with the exception's
    type, message and the line that raised it; the exception itself is its
    ``__cause__`` (its traceback printed above it). ``Loader(...,
    skip_errors=True)`` leaves such samples out instead (each batch that lost
    one is that much shorter). A loader's ``state_dict`` records the length
    and the type's name: resuming needs the same dataset, which the loader
    cannot check further.
    """
    return _from_python(dataset)


def FromIterable(
    fn: Callable[[], Iterable[Tuple[Any, Any]]],
    length: Optional[int] = None,
    buffer: Optional[int] = None,
    max_buffer_bytes: Optional[int] = None,
) -> Dataset:
    """An iterable Python dataset (PyTorch's ``IterableDataset``, MindSpore's
    ``GeneratorDataset`` of a generator): ``fn()`` returns an iterator of
    ``(image, label)`` items, as ``FromPython``'s ``dataset[i]`` returns them.

    ``fn`` is called at the start of every epoch and must give the same items
    in the same order each time (a generator function, or ``lambda:
    iter(items)``). ``length``: the samples per epoch (WebDataset's
    ``with_epoch``); ``None`` counts them now by iterating once. An iterator
    that ends early is the loader's ``DataError`` naming the position; a
    longer one is cut to ``length``.

    ``Loader(..., shuffle=True)`` (the default) shuffles through a buffer of
    ``buffer`` samples (``None``: the library's default, 1000; tf.data's
    ``shuffle(buffer_size)``, WebDataset's ``shuffle(n)``): each position draws one of the samples the buffer holds
    (keyed by seed, epoch and position), which the next item replaces. Its
    memory is ``buffer`` samples (``max_buffer_bytes`` caps their bytes: an
    error when passed). ``shuffle=False`` gives the iterator's order;
    ``weights`` do not apply. The read threads take the items one at a
    time, holding the GIL only for the call; with shards, every rank
    iterates over every item (and decodes only its own). Resuming inside an
    epoch calls ``fn`` again and iterates up to the position (no decoding).
    An exception raised by the iterator is the loader's ``DataError`` naming
    the position and the item, with the exception's message and the line
    that raised it; the exception is its ``__cause__``.
    """
    return _from_iterable(fn, length, buffer, max_buffer_bytes)


class _TorchAdapter:
    """A PyTorch-style dataset of PIL images as ``FromPython`` reads it (made by
    ``from_torch_dataset``)."""

    def __init__(self, dataset: Any, files: bool) -> None:
        self.dataset = dataset
        self.files = files

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Tuple[Any, Any]:
        image, label = self.dataset[index]
        return _image_of(image, self.files), label

    def __repr__(self) -> str:
        return f"from_torch_dataset({self.dataset!r}, files={self.files})"


_MODES = {"L": "L", "RGB": "RGB", "RGBA": "RGBA", "1": "L", "P": "RGB", "LA": "RGBA", "I;16": "L"}


def _image_of(image: Any, files: bool) -> Any:
    """A PIL image as its file's bytes (``files`` and an image as opened) or a uint8 array."""
    if isinstance(image, (bytes, bytearray, memoryview, np.ndarray)):
        return image
    if not hasattr(image, "mode") or not hasattr(image, "size"):
        raise TypeError(
            f"from_torch_dataset: the dataset gave a {type(image).__name__}, not a PIL image; "
            "leave ToTensor/Normalize out of the dataset's transform (the loader's Pipeline does them)"
        )
    filename = getattr(image, "filename", "")
    if files and filename and getattr(image, "format", None):
        # As opened from its file: the file's bytes, decoded by the loader.
        # An image resized in place (thumbnail) keeps its filename: its size
        # against the file's header tells.
        with open(filename, "rb") as f:
            data = f.read()
        import io

        from PIL import Image

        with Image.open(io.BytesIO(data)) as header:
            if header.size != tuple(image.size):
                raise ValueError(
                    f"from_torch_dataset(files=True): the image from {filename!r} is "
                    f"{image.size[0]}x{image.size[1]} but its file is "
                    f"{header.size[0]}x{header.size[1]} (changed in place); use files=False"
                )
        return data
    mode = _MODES.get(image.mode, "RGB")
    if image.mode != mode:
        image = image.convert(mode)
    return np.asarray(image, dtype=np.uint8)


def from_torch_dataset(dataset: Any, *, files: bool = False) -> Any:
    """A PyTorch ``Dataset`` returning ``(PIL image, label)`` as one ``FromPython``
    reads: ``train.FromPython(train.from_torch_dataset(ds))``.

    Each image becomes a uint8 array (gray, RGB or RGBA: Pillow's ``convert``
    for other modes); with ``files=True`` an image still as it was opened
    (its ``filename`` and ``format`` set: no transform made it) is handed over
    as its file's bytes instead, for the loader's threads to decode. The
    dataset's own transform runs in ``__getitem__`` under the GIL: move the
    augmentations to the loader's ``Pipeline`` and keep ``ToTensor`` out (a
    tensor is refused, naming this).
    """
    return _TorchAdapter(dataset, files)


def _takes_rng(fn: Any) -> bool:
    """Whether ``fn`` takes the generator: a second positional parameter
    without a default, or one named ``rng`` (``def f(image, strength=0.5)``
    keeps its default), or ``*args``; True when the signature cannot be read."""
    import inspect

    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return True
    if len(positional) < 2:
        return False
    second = positional[1]
    return second.default is second.empty or second.name == "rng"


def Lambda(
    fn: Union[
        Callable[[npt.NDArray[np.uint8], np.random.Generator], npt.NDArray[np.uint8]],
        Callable[[npt.NDArray[np.uint8]], npt.NDArray[np.uint8]],
    ],
    name: Optional[str] = None,
    size: Union[str, Tuple[int, int]] = "same",
) -> Augment:
    """A Python function among the augmentations (MindSpore's ``PyFunc``,
    torchvision's ``Lambda``), run by the loader's decode threads on each
    sample's decoded 8-bit image.

    ``fn(image, rng)`` gets the image as a uint8 numpy array ``HxWxC`` (RGB,
    C 3; a fresh copy it may change) and ``rng``, a
    ``numpy.random.Generator`` seeded from the sample's own key (seed, epoch,
    sample index and the op's place in the list): draw from it, not from
    ``numpy.random`` or ``random``, and the batches are the same for any
    worker count and after a resume. A function of one argument, ``fn(image)``
    (its signature says so), is called without it: making the generator
    costs tens of microseconds. It returns a uint8 array ``HxWxC`` with
    the same C (any strides). ``size``: ``"same"`` (the
    result keeps the input's size) or ``(height, width)``, the size of every
    result; another size is refused, naming the sample. ``name``: what
    describers print, ``Lambda(name)`` (the function's name by default).

    Each call holds the GIL (the call and the copies in and out of numpy);
    the decoding and the other ops run without it, so Python ops cost what
    the GIL lets through (see the README's figure). An exception raised by
    ``fn`` is the loader's ``LoaderError`` naming the sample and the line
    that raised it, the exception its ``__cause__``; a result of the wrong
    kind, shape or size is an ``InputError`` naming the sample. A pipeline
    with a Lambda cannot be saved (graphs, loader states).

    >>> def noise(image, rng):
    ...     return np.clip(image + rng.normal(0, 8, image.shape), 0, 255).astype(np.uint8)
    >>> pipeline = train.Pipeline([train.RandomResizedCrop(224), train.Lambda(noise)])
    """
    if isinstance(size, str) and size != "same":
        raise ValueError(f'Lambda: size is "same" or (height, width), not {size!r}')
    return _Lambda(fn, name, size, rng=_takes_rng(fn))


def _fill(fill: Any) -> Union[int, list[int], None]:
    if fill is None:
        return None
    if isinstance(fill, dict):
        # v2's fill per input type ({tv_tensors.Image: (123, 117, 104),
        # "others": 0}): the image's, else the others'.
        for key, value in fill.items():
            if getattr(key, "__name__", None) == "Image":
                return _fill(value)
        if "others" in fill:
            return _fill(fill["others"])
        # The detection reference's defaultdict(lambda: mean, {Mask: 0}):
        # the image takes the default (``get`` would not make it).
        factory = getattr(fill, "default_factory", None)
        return _fill(factory()) if factory is not None else None
    if isinstance(fill, (int, float)):
        return int(fill)
    return [int(v) for v in fill]


# torchvision's (and timm's) other names for a constructor.
_ALIASES = {"RandomResizedCropAndInterpolation": "RandomResizedCrop"}


# Where a torchvision transform keeps a parameter under another name.
_ATTRIBUTES = {("RandomIoUCrop", "sampler_options"): "options"}


def _attribute(t: Any, transform: str, name: str) -> Tuple[bool, Any]:
    """``(found, value)``: the transform's value for its counterpart's parameter ``name``."""
    if transform == "FixedSizeCrop" and name == "size" and hasattr(t, "crop_height"):
        # The detection references' FixedSizeCrop keeps the size as two attributes.
        return True, (t.crop_height, t.crop_width)
    attribute = _ATTRIBUTES.get((transform, name), name)
    if hasattr(t, attribute):
        return True, getattr(t, attribute)
    return False, None


def _argument(transform: str, name: str, value: Any) -> Any:
    """A torchvision transform's attribute ``name`` as its counterpart's argument."""
    if name == "transforms":
        return [_augment(x) for x in value]
    if name == "fill":
        return _fill(value)
    if name == "policy":
        return getattr(value, "value", value)
    if name == "interpolation" and isinstance(value, (tuple, list)):
        raise ValueError(f"{transform}: a random interpolation is not supported; choose one")
    if name == "size" and isinstance(value, (tuple, list)) and len(value) == 1:
        return value[0]  # Resize([s]): the shorter side, as an int
    if isinstance(value, list):
        return tuple(value)
    return value


def _augment(t: Any) -> Augment:
    """One torchvision transform as an ``Augment``: the constructor of the same
    name (``_native.AUGMENTATIONS``), called with the transform's attributes
    named by the constructor's parameters (a missing one takes its default)."""
    name = type(t).__name__
    if name == "Lambda":
        raise ValueError(
            "torchvision's Lambda takes a PIL image or a tensor, which the loader does not make: "
            "rewrite its function on a uint8 numpy array HxWxC and put train.Lambda(fn) in the pipeline"
        )
    if name == "RandomCrop" and getattr(t, "padding_mode", "constant") != "constant":
        raise ValueError(f"RandomCrop: padding_mode {t.padding_mode!r} is not supported (constant is)")
    if name == "SanitizeBoundingBoxes" and getattr(t, "labels_getter", "default") != "default":
        raise ValueError(
            "SanitizeBoundingBoxes: only the default labels_getter is supported "
            "(every per-instance field of the target is filtered with its box)"
        )
    if name == "ClampBoundingBoxes" and getattr(t, "clamping_mode", "auto") not in ("auto", "hard", "soft"):
        raise ValueError(f"ClampBoundingBoxes: clamping_mode {t.clamping_mode!r} is not supported")
    constructor = _ALIASES.get(name, name)
    if constructor not in _AUGMENTATIONS:
        raise ValueError(
            f"{name} has no tensorprep counterpart "
            "(known: torchvision's geometric, colour, policy and detection transforms)"
        )
    make = getattr(_native, constructor)
    arguments = []
    keywords = {}
    for parameter in inspect.signature(make).parameters.values():
        found, value = _attribute(t, name, parameter.name)
        if found:
            value = _argument(name, parameter.name, value)
        elif parameter.default is parameter.empty:
            raise ValueError(f"{name}: no attribute {parameter.name!r} (its counterpart's parameter)")
        else:
            value = parameter.default
        if parameter.kind is parameter.KEYWORD_ONLY:
            keywords[parameter.name] = value
        else:
            arguments.append(value)
    return make(*arguments, **keywords)  # type: ignore[no-any-return]


def _image_dtype(dtype: Any) -> Any:
    """v2's ``ToDtype`` dtype: one, or per input type (the image's)."""
    if isinstance(dtype, dict):
        for key, value in dtype.items():
            if getattr(key, "__name__", None) == "Image":
                return value
        return dtype.get("others")
    return dtype


def from_torchvision(transform: Any, *, decoder: Optional[str] = None, fast: Union[bool, str] = False) -> Pipeline:
    """A ``Pipeline`` from a torchvision training transform (a ``Compose`` or
    a list): the PIL-image transforms in order (``RandomResizedCrop``,
    ``RandomHorizontalFlip``, ``ColorJitter``, ``TrivialAugmentWide``, ...,
    ``RandomApply``; v2's detection transforms ``RandomIoUCrop``,
    ``RandomZoomOut``, ``ScaleJitter``, ``RandomShortestSize``,
    ``RandomPhotometricDistort`` and the references' ``FixedSizeCrop``),
    then ``ToTensor`` (or ``PILToTensor`` / v2's ``ToImage`` +
    ``ConvertImageDtype`` / ``ToDtype(torch.float32, scale=True)``),
    ``Normalize`` and ``RandomErasing``; the box-only ``ClampBoundingBoxes``,
    ``SanitizeBoundingBoxes`` and ``ConvertBoundingBoxFormat`` anywhere
    (``ToPureTensor`` is left out). A transform without a counterpart (a
    ``Lambda``) is refused by name.

    >>> from torchvision import transforms as T
    >>> pipeline = train.from_torchvision(T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
    ...                                              T.ToTensor(), T.Normalize(mean, std)]))
    """
    # Each transform becomes its counterpart in a pipeline's list; the
    # list's order is then checked where every list's is (Pipeline).
    items: list[Any] = []
    tensor = False
    for t in getattr(transform, "transforms", transform):
        name = type(t).__name__
        if name in ("ToTensor", "MaybeToTensor", "PILToTensor", "ToImage"):
            # PILToTensor's (v2's ToImage's) uint8 becomes ToTensor's 0-1
            # with ConvertImageDtype (v2's ToDtype(float32, scale=True)).
            items.append(ToTensor())
            tensor = True
        elif name == "ConvertImageDtype":
            if "float" not in str(t.dtype):
                raise ValueError(f"ConvertImageDtype({t.dtype}): only float tensors are supported")
        elif name == "ToDtype":
            dtype = _image_dtype(t.dtype)
            if "float" not in str(dtype) or not getattr(t, "scale", False):
                raise ValueError(f"ToDtype({dtype}, scale={getattr(t, 'scale', False)}): only float with scale=True is supported")
        elif name == "ToPureTensor":
            pass  # the loader's outputs are plain tensors and arrays already
        elif name == "Normalize":
            items.append(Normalize([float(v) for v in t.mean], [float(v) for v in t.std]))
        elif name == "RandomErasing":
            items.append(RandomErasing(t.p, tuple(t.scale), tuple(t.ratio), t.value))
        else:
            items.append(_augment(t))
    if not tensor:
        raise ValueError("the transform has no ToTensor: tensorprep pipelines end in a float tensor")
    return Pipeline(items, decoder=decoder, fast=fast)


def MixUp(*, alpha: float = 1.0, num_classes: int) -> Mixup:
    """torchvision v2's ``MixUp(alpha=, num_classes=)`` for ``Loader(mix=...)``:
    every batch mixed with one ``Beta(alpha, alpha)`` draw, one-hot targets
    without smoothing. Sample ``i`` is mixed with sample ``n - 1 - i`` (timm's
    pairing; torchvision pairs ``i`` with ``i - 1``: the same distribution,
    other pairs). ``timm``'s ``Mixup`` has the other options."""
    return Mixup(mixup_alpha=alpha, cutmix_alpha=0.0, label_smoothing=0.0, num_classes=num_classes)


def CutMix(*, alpha: float = 1.0, num_classes: int) -> Mixup:
    """torchvision v2's ``CutMix(alpha=, num_classes=)`` for ``Loader(mix=...)``:
    a box of area ``1 - lambda`` (``lambda`` from ``Beta(alpha, alpha)``, then
    corrected to the box's clipped area) pasted from the partner sample
    ``n - 1 - i``, one-hot targets without smoothing.
    ``RandomChoice([CutMix(...), MixUp(...)])`` switches between the two
    per batch, as in torchvision."""
    return Mixup(mixup_alpha=0.0, cutmix_alpha=alpha, label_smoothing=0.0, num_classes=num_classes)


@overload
def RandomChoice(transforms: Sequence[Mixup], p: Optional[Sequence[float]] = None) -> Mixup: ...
@overload
def RandomChoice(transforms: Sequence[Augment], p: Optional[Sequence[float]] = None) -> Augment: ...
def RandomChoice(transforms: Sequence[Any], p: Optional[Sequence[float]] = None) -> Union[Augment, Mixup]:
    """torchvision's ``RandomChoice(transforms, p)``: one of ``transforms``
    per sample (``p``: their weights, equal by default).

    Given a ``MixUp`` and a ``CutMix`` (torchvision v2's
    ``RandomChoice([cutmix, mixup])``), it is the loader's batch transform
    that picks one of them per batch: timm's ``Mixup`` with both alphas and
    ``switch_prob`` the CutMix weight (one half by default)."""
    items = list(transforms)
    if items and all(isinstance(t, Mixup) for t in items):
        return _mix_choice(items, p)
    return _RandomChoice(items, p)


def _mix_choice(items: Sequence[Mixup], p: Optional[Sequence[float]]) -> Mixup:
    """One ``Mixup`` switching between a mixup-only and a CutMix-only one."""
    cut = [m.cutmix_alpha > 0 or m.cutmix_minmax is not None for m in items]
    mix = [m.mixup_alpha > 0 for m in items]
    if len(items) != 2 or sorted(cut) != [False, True] or any(c and x for c, x in zip(cut, mix)):
        raise ValueError("RandomChoice of batch transforms takes one MixUp and one CutMix")
    m, c = (items[1], items[0]) if cut[0] else (items[0], items[1])
    same = ("num_classes", "label_smoothing", "mode", "prob", "correct_lam")
    for name in same:
        if getattr(m, name) != getattr(c, name):
            raise ValueError(f"RandomChoice: the MixUp and the CutMix differ in {name}")
    weights = [0.5, 0.5] if p is None else [float(v) for v in p]
    if len(weights) != 2 or min(weights) < 0 or sum(weights) <= 0:
        raise ValueError("RandomChoice: p is two non-negative weights, not both 0")
    switch = (weights[0] if cut[0] else weights[1]) / sum(weights)
    return Mixup(
        mixup_alpha=m.mixup_alpha,
        cutmix_alpha=c.cutmix_alpha,
        cutmix_minmax=c.cutmix_minmax,
        prob=m.prob,
        switch_prob=switch,
        mode=m.mode,
        correct_lam=m.correct_lam,
        label_smoothing=m.label_smoothing,
        num_classes=m.num_classes,
    )


def _pipeline(pipeline: Union[Pipeline, str, _Graph]) -> Pipeline:
    """A ``Pipeline`` from a pipeline, a training preset's name or an inference graph."""
    if isinstance(pipeline, str):
        return Pipeline.preset(pipeline)
    if isinstance(pipeline, _Graph):
        return Pipeline.from_graph(pipeline)
    return pipeline


def _torch_wanted(output: str) -> bool:
    if output == "torch":
        if importlib.util.find_spec("torch") is None:
            raise ImportError("output='torch' needs torch installed (output='numpy' gives numpy arrays)")
        return True
    if output == "numpy":
        return False
    if output != "auto":
        raise ValueError(f"output must be 'auto', 'numpy' or 'torch', not {output!r}")
    return importlib.util.find_spec("torch") is not None



def _tv_tensors_wanted(targets: str) -> bool:
    if targets == "numpy":
        return False
    if targets != "tv_tensors":
        raise ValueError(f"targets must be 'numpy' or 'tv_tensors', not {targets!r}")
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("torchvision") is None:
        raise ImportError("targets='tv_tensors' needs torch and torchvision installed (targets='numpy' gives numpy arrays)")
    return True


class _Default(int):
    """A default argument's value (the library's), told apart from the same
    value given: ``Loader`` refuses an argument given under both its names."""


_DEFAULTS = loader_defaults()
_WORKERS = _Default(_DEFAULTS["workers"])
_DEPTH = _Default(_DEFAULTS["depth"])
_READ_WORKERS = _Default(_DEFAULTS["read_workers"])
_FETCH_AHEAD = _Default(_DEFAULTS["fetch_ahead"])
_BLOCK_SAMPLES = _Default(_DEFAULTS["block_samples"])
_BLOCK_WINDOW = _Default(_DEFAULTS["block_window"])
_DECODE_BUDGET = _Default(_DEFAULTS["decode_budget"])
_BUFFER_LIMIT = _Default(_DEFAULTS["buffer_limit"])
_SEED = _Default(_DEFAULTS["seed"])


def _one_of(name: str, value: int, alias: str, alias_value: Optional[int]) -> int:
    """``value``, or ``alias_value`` when given instead; both given is a ``TypeError``."""
    if alias_value is None:
        return int(value)
    if not isinstance(value, _Default):
        raise TypeError(f"Loader got both {name}= and {alias}= (the same setting): give one")
    return int(alias_value)


class Loader:
    """Batches of a training pipeline's tensors from a dataset.

    ``Loader(dataset, pipeline, batch_size, workers, seed, shard="env", ...)``;
    the defaults shown in the signature are the library's
    (``tensorprep::train::LoaderConfig``, also ``loader_defaults()``).

    - ``dataset``: a ``Dataset`` (``ImageFolder``, ``RecordIO``, ``TFRecord``,
      ``WebDataset``, ``Samples``, ``FromPython``, ``COCO``, ``VOC``,
      ``YOLO``, or made of those).
    - ``pipeline``: a ``Pipeline``, a training preset's name
      (``"imagenet-train"``), or an inference ``Graph`` (a validation loader).
    - ``workers`` (or ``DataLoader``'s ``num_workers``): decode + augment
      threads (Rust threads, no processes). The loader always decodes on its
      own threads, so ``num_workers=0`` (PyTorch's "load in the main
      process") means one decode thread; ``workers=0`` is refused.
    - ``seed``: every epoch's order and every draw come from it.
    - ``shard``: ``"env"`` (the default: torchrun's ``RANK`` / ``WORLD_SIZE``,
      or MPI's, or one shard), ``None`` (the whole dataset), or
      ``(rank, world_size)``; PyTorch ``DistributedSampler``'s split
      (padded unless ``drop_last_shard``).
    - ``shuffle`` (default on), or ``weights`` (PyTorch's
      ``WeightedRandomSampler``: ``num_samples``, ``replacement``).
      ``shuffle="blocks"``: the shard-block shuffle, for object storage: the
      dataset's files (or runs of ``block_samples`` samples, for a dataset
      without files) in a random order, ``block_window`` of them at a time
      with their samples shuffled together; every sample once per epoch, the
      same batches for any worker count, exact resume, shards (ranks) taking
      every n-th position as with any order.
    - ``fetch_ahead``: how many samples before reading one the loader tells
      a remote dataset (``s3://``, ``http(s)://``) it comes, so that its
      bytes are fetched meanwhile (0: none).
    - ``drop_last``: leave out a short last batch. ``skip_errors``: leave out
      samples that fail (else the sample's error is raised, naming it, and
      ends the epoch).
    - ``output``: ``"auto"`` (torch tensors when torch is installed, numpy
      arrays otherwise), ``"numpy"`` or ``"torch"``. ``labels``: ``"int64"``
      (class indices, the default) or ``"float32"``; with ``mix`` the labels
      are soft targets (float32, batch x classes) and ``labels`` stays unset.
      A batch's labels are ``(batch,)`` when each sample has one label and
      ``(batch, K)`` when each has K (CelebA's 40 attributes, a box's 4
      numbers, a record's several labels; ``(batch, 0)`` for none): every
      sample of a loader has the same count, ``label_width`` or else its
      dataset's first sample's (1 for a ``FromIterable`` stream, which is not
      read ahead), and a sample with another count is an error naming it. ``"int64"``
      stays the default for any K, as torchvision's ``CelebA`` gives its
      targets as int64 tensors; labels that are not integers (box
      coordinates in float, TFRecord float lists) need ``labels="float32"``.
      ``mix`` needs one label per sample.
    - ``targets``: how ``next_batch()`` gives detection targets: ``"numpy"``
      (dicts of numpy arrays, the default) or ``"tv_tensors"`` (torchvision's
      ``BoundingBoxes``, ``Mask``, ``KeyPoints``: ``to_tv_tensors``; an
      ``ImportError`` here when torch or torchvision is missing).
    - ``mix``: a batch transform, ``MixUp``, ``CutMix`` (torchvision's names)
      or ``Mixup`` (timm's): each batch mixed in place by the loader's
      threads, drawn from (seed, epoch, the batch's place among every
      rank's): the same for any worker count and after a resume. Needs an
      even ``batch_size``, a float32 pipeline with a fixed output size, no
      ``skip_errors`` (a skipped sample leaves its batch odd) and, when the
      epoch's last batch would be odd, ``drop_last=True``: all checked here
      (``ValueError``), not mid-epoch. The soft targets of the batches in
      circulation count against ``buffer_limit``.
    - ``prefetch``: samples read ahead of the decode threads (``None``: 2 x
      workers + 2).
    - ``depth``: batch buffers in circulation (the memory bound; a batch held
      by Python keeps its buffer until it is freed). ``DataLoader``'s
      ``prefetch_factor`` (batches loaded ahead per worker) sets it to
      ``prefetch_factor x workers + 1`` (the batches ahead and the one being
      filled): the same memory as a ``DataLoader``.
    - ``decode_budget``: the most bytes one sample's decode and augmentation
      may take, per worker (an image that would need more, counted from its
      header, is an error naming its file); ``buffer_limit``: the most the
      batch buffers may take together (a ``depth`` and ``batch_size`` past
      it are refused at once). The loader's peak is about ``depth x batch x
      sample bytes + workers x decode_budget`` plus the samples read ahead.
    - ``max_shape`` (C, H, W): for a pipeline whose output size varies
      (detection's ``multiscale``, no final crop or resize), the largest
      sample accepted (a larger one, in any dimension, is an error naming
      it); each batch is padded to its largest image. ``size_divisible``
      (torchvision's ``GeneralizedRCNNTransform(size_divisible=32)``; 1 by
      default): the padded height and width are rounded up to multiples of
      it. Each image sits at the top left of its place, the padding bottom
      and right is 0 (after normalization, as torchvision pads), and the
      batch's ``image_sizes`` give each image's own ``(height, width)``. The
      batch buffers hold ``max_shape`` rounded up, counted in ``buffer_limit``.

    - ``callbacks``: objects with any of ``epoch_begin(ctx)``,
      ``epoch_end(ctx)``, ``step_begin(ctx)``, ``step_end(ctx)`` (or
      MindSpore ``DSCallback``'s ``ds_epoch_begin`` ...), called in list order
      on the thread that iterates, as batches are handed out: per epoch
      ``epoch_begin``, then per batch ``step_begin`` (just before it is
      given), ``step_end`` (when the loop asks for the next one, the step's
      training done), and ``epoch_end`` when the loop finds the epoch over.
      ``ctx`` (a ``RunContext``) has ``epoch``, ``step`` (over the run) and
      ``step_in_epoch``, from 0 (``cur_epoch_num``, ``cur_step_num``,
      ``cur_step_num_in_epoch``: MindSpore's, from 1), and
      ``ctx.set_pipeline(pipeline)``: augment with ``pipeline`` from the next
      epoch on (same output shape, dtype and layout, else ``ValueError``),
      exactly for any worker count; ``state_dict()`` then holds it and
      ``load_state_dict`` re-applies it. An exception in a callback is raised
      by the iteration as ``LoaderError`` (its ``__cause__`` the callback's)
      and ends the epoch. A callback must not call its loader (``LoaderError``).

    An argument given under both names (``workers`` and ``num_workers``,
    ``depth`` and ``prefetch_factor``) is a ``TypeError``.

    Iterating gives ``(images, labels)`` for one epoch; iterating again moves
    to the next epoch (a loop broken out of continues where it stopped). An
    error raised by the iteration (a sample that cannot be read or decoded)
    ends its epoch, as an exception ends a ``for`` over a PyTorch
    ``DataLoader``: the next ``for`` starts the next epoch, which raises
    again if it reaches the same sample (``skip_errors`` leaves such samples
    out). ``state_dict()`` / ``load_state_dict()`` resume exactly, with any
    worker count (a state for another dataset, seed or batch size is refused
    and the loader goes on as it was); ``set_epoch(n)`` restarts at epoch
    ``n``'s beginning. ``close()`` may be called from another thread: an
    iteration in progress then ends (``StopIteration``) once the batch it
    waits for is given up.
    """

    last_indices: Optional[Any]
    """The dataset indices of the last batch iteration gave (numpy uint64)."""

    def __init__(
        self,
        dataset: Dataset,
        pipeline: Union[Pipeline, str, _Graph],
        batch_size: int,
        workers: int = _WORKERS,
        seed: int = _SEED,
        *,
        shard: Union[str, Tuple[int, int], None] = "env",
        drop_last_shard: bool = False,
        shuffle: Union[bool, str] = True,
        weights: Optional[Sequence[float]] = None,
        num_samples: Optional[int] = None,
        replacement: bool = True,
        block_window: int = _BLOCK_WINDOW,
        block_samples: int = _BLOCK_SAMPLES,
        drop_last: bool = False,
        skip_errors: bool = False,
        output: str = "auto",
        targets: str = "numpy",
        labels: Optional[str] = None,
        mix: Optional[Mixup] = None,
        label_width: Optional[int] = None,
        prefetch: Optional[int] = None,
        depth: int = _DEPTH,
        read_workers: int = _READ_WORKERS,
        fetch_ahead: int = _FETCH_AHEAD,
        epochs: Optional[int] = None,
        max_shape: Optional[Tuple[int, int, int]] = None,
        size_divisible: int = 1,
        decode_budget: int = _DECODE_BUDGET,
        buffer_limit: int = _BUFFER_LIMIT,
        num_workers: Optional[int] = None,
        prefetch_factor: Optional[int] = None,
        callbacks: Optional[Sequence[Any]] = None,
    ) -> None:
        if num_workers == 0:
            # DataLoader's "no worker processes": the loader's decode always
            # runs on its own threads, so the least it has is one.
            num_workers = 1
        workers = _one_of("workers", workers, "num_workers", num_workers)
        if prefetch_factor is not None:
            if prefetch_factor < 1:
                raise ValueError(f"prefetch_factor must be at least 1, not {prefetch_factor}")
            depth = _one_of("depth", depth, "prefetch_factor", int(prefetch_factor) * workers + 1)
        pipeline = _pipeline(pipeline)
        if shard == "env":
            shard = shard_from_env()
        shard_arg: Optional[Tuple[int, int, bool]]
        if shard is None:
            shard_arg = None
        elif isinstance(shard, str):
            raise ValueError(f"shard must be 'env', None or (rank, world_size), not {shard!r}")
        else:
            rank, size = shard
            shard_arg = (int(rank), int(size), bool(drop_last_shard))
        blocks: Optional[Tuple[int, int]] = None
        if isinstance(shuffle, str):
            if shuffle != "blocks":
                raise ValueError(f"shuffle must be True, False or 'blocks', not {shuffle!r}")
            blocks = (int(block_samples), int(block_window))
        if mix is not None and labels is not None:
            raise ValueError("with mix= the labels are soft targets (float32): leave labels= unset")
        if labels is None:
            labels = "soft" if mix is not None else "int64"
        elif labels not in ("int64", "float32"):
            raise ValueError(f"labels must be 'int64' or 'float32', not {labels!r}")
        self._torch = _torch_wanted(output)
        self._tv_tensors = _tv_tensors_wanted(targets)
        self._labels = labels
        self.dataset = dataset
        self.pipeline = pipeline
        self.batch_size = batch_size
        self.mix = mix
        self.shard = (0, 1) if shard_arg is None else (shard_arg[0], shard_arg[1])
        self._native = _Loader(
            dataset,
            pipeline,
            batch_size,
            workers,
            int(seed),
            shard=shard_arg,
            shuffle=bool(shuffle),
            weights=None if weights is None else [float(w) for w in weights],
            replacement=replacement,
            num_samples=num_samples,
            drop_last=drop_last,
            skip_errors=skip_errors,
            prefetch=prefetch,
            depth=int(depth),
            read_workers=int(read_workers),
            epochs=epochs,
            max_shape=None if max_shape is None else (max_shape[0], max_shape[1], max_shape[2]),
            decode_budget=int(decode_budget),
            buffer_limit=int(buffer_limit),
            mix=mix,
            label_width=label_width,
            callbacks=None if callbacks is None else list(callbacks),
            size_divisible=int(size_divisible),
            blocks=blocks,
            fetch_ahead=int(fetch_ahead),
        )
        self.last_indices = None
        _LIVE.add(self)

    def _convert(self, tensor: BatchTensor, labels: Any) -> Tuple[Any, Any]:
        # labels: (batch,) float32 for one label per sample, (batch, K) for K.
        if self._labels == "int64":
            as_int = labels.astype("int64")
            if not (as_int == labels).all():
                raise ValueError(
                    "a batch's labels are not integers (class indices, attributes); "
                    "labels='float32' keeps them as they are"
                )
            labels = as_int
        if self._torch:
            import torch

            return torch.from_dlpack(tensor), torch.from_numpy(labels)
        import numpy

        return numpy.from_dlpack(tensor), labels

    def __iter__(self) -> Loader:
        if self._native.exhausted:
            self._native.next_epoch()
        return self

    def __next__(self) -> Tuple[Any, Any]:
        item = self._native.next_batch()
        if item is None:
            raise StopIteration
        tensor, labels, indices, _epoch, _number, _mask = item
        self.last_indices = indices
        return self._convert(tensor, labels)

    def next_batch(self) -> Optional[Dict[str, Any]]:
        """The next batch of this epoch as a dict (``images``, ``labels``,
        ``indices``, ``epoch``, ``number``, ``pixel_mask``, ``image_sizes``,
        ``targets``, ``batch``), or ``None`` at the epoch's end.
        ``image_sizes``: each image's own ``(height, width)`` before padding
        (torchvision's ``ImageList.image_sizes``). ``pixel_mask`` (samples x
        height x width, int64 as transformers gives it) is 1 on each image's
        pixels and 0 on the padding of a batch of varying sizes
        (``max_shape``): DETR-style models take it beside ``pixel_values``.
        ``targets``: each sample's detection target as the pipeline moved it
        (``BatchTensor.targets``: a dict of numpy arrays, or ``None`` for a
        sample without one; with ``targets="tv_tensors"`` torchvision's types,
        see ``to_tv_tensors``); ``batch``: the ``BatchTensor``, whose
        ``boxes(layout, room)`` collates the boxes (padded, flat or ragged)."""
        item = self._native.next_batch(mask=True)
        if item is None:
            return None
        tensor, labels, indices, epoch, number, mask = item
        images, labels = self._convert(tensor, labels)
        pixel_mask: Any = None if mask is None else mask.astype("int64")
        if self._torch and pixel_mask is not None:
            import torch

            pixel_mask = torch.from_numpy(pixel_mask)
        return {
            "images": images,
            "labels": labels,
            "indices": indices,
            "epoch": epoch,
            "number": number,
            "pixel_mask": pixel_mask,
            "image_sizes": tensor.image_sizes,
            "targets": [None if t is None else to_tv_tensors(t) for t in tensor.targets]
            if self._tv_tensors
            else tensor.targets,
            "batch": tensor,
        }

    def __len__(self) -> int:
        return len(self._native)

    @property
    def epoch(self) -> int:
        """The epoch being delivered."""
        return self._native.epoch

    def state_dict(self) -> Dict[str, Any]:
        """Where the loader is (small: a few integers, ``label_width`` the labels
        per sample it runs with); save it with the model. Once a callback
        changed the pipeline, also ``pipelines``: the list of ``(from_epoch,
        Pipeline)`` (the ``Pipeline`` objects themselves: a training pipeline
        has no file form yet) and their ``changes_hash``."""
        return self._native.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue exactly after ``state``: the next batch is the one that followed,
        each epoch augmented by the pipeline it had (``pipelines``), with the
        state's labels per sample. A state of another dataset, seed, global
        batch or label width, or whose pipelines are not the ones its
        ``changes_hash`` records (left out, or replaced), raises
        ``LoaderError``, a pipeline of another output ``ValueError``; the
        loader then goes on where it was."""
        self._native.load_state_dict(dict(state))

    def set_epoch(self, epoch: int) -> None:
        """Restart at the beginning of ``epoch`` (with the pipeline changes and the
        labels per sample it runs with)."""
        self._native.set_epoch(int(epoch))

    def close(self) -> None:
        """Stop and join the worker threads (done too when the loader is freed).
        From another thread, it ends the iteration going on: its ``for`` loop
        stops as at an epoch's end. Iterating a closed loader raises
        ``LoaderError``."""
        self._native.close()

    def __enter__(self) -> Loader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Loader({self.dataset!r}, batch_size={self.batch_size}, shard={self.shard}, "
            f"epoch={self.epoch}, {len(self)} batches per epoch)"
        )


_LIVE: "weakref.WeakSet[Loader]" = weakref.WeakSet()


@atexit.register
def _close_live_loaders() -> None:
    # Before the interpreter finalizes: a read thread calling a Python
    # dataset (FromPython) then could no longer take the GIL to finish.
    for loader in list(_LIVE):
        loader.close()


def preview(
    data: Dataset,
    pipeline: Union[Pipeline, _Graph, None] = None,
    *,
    preset: Optional[str] = None,
    out: Optional[PathLike] = None,
    samples: int = 8,
    seed: int = _SEED,
    epoch: int = 0,
    columns: Optional[int] = None,
) -> npt.NDArray[np.uint8]:
    """A grid of the first ``samples`` samples of ``epoch`` as a ``Loader``
    with this ``seed`` gives them to the model (the same order, draws and
    tensors), de-normalised back to 8-bit RGB, each tile with the ops drawn
    for it written under it: an image (height x width x 3, uint8), also
    written to ``out`` as PNG when given. The CLI's ``tensorprep preview``
    draws the same grid.

    - ``pipeline`` (a ``Pipeline`` or an inference ``Graph``) or ``preset``
      (a training preset's name; ``"imagenet-train"`` when neither is given).
    - ``samples``: 1 to 256; ``columns``: tiles per row (``None``: up to 4).

    The pipeline must end in a fixed size and give float32 tensors. A sample
    that cannot be read or decoded raises its error, naming it.

    >>> grid = train.preview(train.ImageFolder("photos"), preset="imagenet-trivialaugment", out="grid.png")
    """
    if pipeline is not None and preset is not None:
        raise TypeError("preview got both pipeline= and preset=: give one")
    chosen = _pipeline(pipeline if pipeline is not None else (preset or "imagenet-train"))
    image, _tiles = _preview(
        data,
        chosen,
        samples=int(samples),
        columns=0 if columns is None else int(columns),
        seed=int(seed),
        epoch=int(epoch),
        out=None if out is None else os.fspath(out),
    )
    return image


def remote_stats() -> Optional[Dict[str, int]]:
    """The requests this process sent to object storage and web servers
    (``requests``) and the reads that waited for one (``misses``: what the
    read-ahead did not hide); ``None`` when the package was built without
    the Cargo feature ``remote``."""
    stats = _remote_stats()
    if stats is None:
        return None
    requests, misses = stats
    return {"requests": requests, "misses": misses}


def set_read_blocks(block_bytes: int, kept_bytes: int) -> None:
    """The size of the blocks remote objects are read in (4 MiB unless set;
    at least 4 KiB) and the bytes of blocks kept for all of them (64 MiB;
    at least two blocks). With ``shuffle="blocks"``, keep two windows: the
    one read and the next, fetched ahead. ``RuntimeError`` in a build
    without ``remote``."""
    _set_read_blocks(int(block_bytes), int(kept_bytes))


def set_cache(directory: Optional[PathLike], budget: int) -> None:
    """This process's node-local cache of remote objects: each fetched once
    per node into ``directory`` (at most ``budget`` bytes, the least
    recently used entries not in use removed), or ``None`` for none. The
    variables ``TENSORPREP_CACHE_DIR`` and ``TENSORPREP_CACHE_BYTES`` set it
    too. Datasets opened afterwards use it. ``RuntimeError`` in a build
    without ``remote``."""
    _set_cache(None if directory is None else os.fspath(directory), int(budget))
