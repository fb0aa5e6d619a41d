"""Type stubs of the extension module (tensorprep._native)."""

import os
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str
decoders: list[str]

PathLike = Union[str, "os.PathLike[str]"]
Encoded = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]
Pixels = Union[
    npt.NDArray[np.uint8],
    Tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]],
    Tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8], npt.NDArray[np.uint8]],
]
Input = Union[Encoded, PathLike, Pixels, Any]  # Any: a PIL image (RGB, RGBA, L)
Interpolation = Union[str, Any]  # a name, or torchvision's InterpolationMode

class Error(Exception):
    """The base class of every error tensorprep raises."""

class DecodeError(Error):
    """An encoded image that cannot be decoded (truncated, corrupt, unsupported)."""

class InputError(Error):
    """An input or output that does not fit (shape, size, format, out=)."""

class LimitError(Error):
    """A size over the limits, refused before allocating."""

class GraphError(Error):
    """A graph file, model or importer configuration that cannot be used."""

class DataError(Error):
    """A dataset that cannot be opened or a record that cannot be read."""

class LoaderError(Error):
    """The training loader cannot go on (configuration, resume state, worker panic)."""

class SelfTestReport:
    """One self-test's outcome; ``str(report)`` says what it means."""

    @property
    def passed(self) -> bool: ...
    @property
    def levels(self) -> float: ...
    def __bool__(self) -> bool: ...

class Geometry:
    """How one run mapped the image to the tensor, and the way back."""

    @property
    def input_size(self) -> Tuple[int, int]: ...
    @property
    def output_size(self) -> Tuple[int, int]: ...
    @property
    def scale(self) -> Tuple[float, float]: ...
    @property
    def offset(self) -> Tuple[float, float]: ...
    @property
    def matrix(self) -> list[list[float]]: ...
    @overload
    def to_source(self, points: Tuple[float, float]) -> Tuple[float, float]: ...  # type: ignore[overload-overlap]
    @overload
    def to_source(self, points: npt.ArrayLike) -> npt.NDArray[np.float64]: ...
    def to_source_boxes(self, boxes: npt.ArrayLike) -> npt.NDArray[np.float64]: ...

class Plan:
    """A compiled graph: call it on files, bytes, numpy images or frames."""

    def __call__(self, input: Input, *, out: Optional[np.ndarray] = None, format: Optional[str] = None) -> np.ndarray: ...
    def run(
        self, input: Input, *, out: Optional[np.ndarray] = None, format: Optional[str] = None
    ) -> Tuple[np.ndarray, Geometry]: ...
    def batch(
        self,
        inputs: Iterable[Input],
        *,
        threads: Optional[int] = None,
        out: Optional[np.ndarray] = None,
        format: Optional[str] = None,
        return_geometry: bool = False,
    ) -> Union[np.ndarray, Tuple[np.ndarray, list[Geometry]]]: ...
    @property
    def output_shape(self) -> Optional[Tuple[int, int, int]]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def layout(self) -> str: ...
    @property
    def input(self) -> str: ...
    @property
    def decoder(self) -> Optional[str]: ...
    @property
    def graph(self) -> Graph: ...

class Graph:
    """A preprocessing graph: ops with every parameter explicit, input, output, self-tests."""

    @staticmethod
    def preset(name: str) -> Graph: ...
    @staticmethod
    def presets(torchvision: bool = False) -> list[str]: ...
    @staticmethod
    def load(source: Union[PathLike, bytes]) -> Graph: ...
    @staticmethod
    def for_model(path: PathLike) -> Graph: ...
    @staticmethod
    def from_hugging_face(
        config: Union[Mapping[str, Any], str, PathLike, Any], *, backend: Optional[str] = None
    ) -> Graph: ...
    @staticmethod
    def from_timm(config: Union[Mapping[str, Any], str, PathLike, Any]) -> Graph: ...
    @staticmethod
    def torchvision(weights: Any) -> Graph: ...
    @staticmethod
    def convert(
        from_: str, source: Optional[PathLike] = None, *, name: Optional[str] = None, self_tests: bool = True
    ) -> Graph: ...
    def add_self_tests(self) -> None: ...
    def verify(self) -> list[SelfTestReport]: ...
    def save(self, path: PathLike) -> None: ...
    def to_bytes(self) -> bytes: ...
    def embed(self, model: PathLike, out: Optional[PathLike] = None, *, force: bool = False) -> None: ...
    def compile(
        self,
        input: str = "jpeg",
        *,
        decoder: Optional[str] = None,
        exif: Optional[bool] = None,
        lenient: bool = False,
        fast: Union[bool, str] = False,
        region: bool = True,
        yuv_range: Optional[str] = None,
        max_pixels: Optional[int] = None,
    ) -> Plan: ...
    @property
    def ops(self) -> list[str]: ...
    @property
    def output_shape(self) -> Optional[Tuple[int, int, int]]: ...
    output_name: str
    @property
    def dtype(self) -> str: ...
    @property
    def accepts_jpeg(self) -> bool: ...
    @property
    def provenance(self) -> Tuple[str, str]: ...
    @property
    def self_tests(self) -> int: ...
    @property
    def required_features(self) -> list[str]: ...

def _functional(
    op: str, image: Any, params: Dict[str, Any], target: Optional[Dict[str, Any]] = None
) -> Tuple[Any, Optional[Dict[str, Any]]]: ...
def _transform(transform: Any, image: Any, target: Optional[Dict[str, Any]], seed: int) -> Tuple[Any, Optional[Dict[str, Any]]]: ...
def resize_float(
    image: npt.NDArray[np.float32],
    size: Tuple[int, int],
    method: str = "bilinear",
    *,
    box: Optional[Tuple[float, float, float, float]] = None,
    out: Optional[npt.NDArray[np.float32]] = None,
) -> npt.NDArray[np.float32]: ...

# Training.

class Dataset:
    """Samples (an encoded image and its labels) by index."""

    @staticmethod
    def image_folder(
        root: PathLike, extensions: Optional[Sequence[str]] = None, is_valid_file: Optional[Callable[[str], bool]] = None
    ) -> Dataset: ...
    @staticmethod
    def recordio(path: PathLike, index: Optional[PathLike] = None) -> Dataset: ...
    @staticmethod
    def tfrecord(
        path: PathLike,
        index: Optional[PathLike] = None,
        *,
        image_key: str = ...,
        label_key: str = ...,
        targets: Optional[str] = None,
        masks: bool = False,
    ) -> Dataset: ...
    @staticmethod
    def webdataset(
        pattern: str,
        *,
        image_keys: Optional[Sequence[str]] = None,
        label_key: str = "cls",
        target_key: Optional[str] = None,
    ) -> Dataset: ...
    @staticmethod
    def samples(items: Iterable[Tuple[bytes, Union[float, Sequence[float]]]]) -> Dataset: ...
    def take(self, n: int) -> Dataset: ...
    def skip(self, n: int) -> Dataset: ...
    def cache(self, budget: int) -> Dataset: ...
    def __add__(self, other: Dataset) -> Dataset: ...
    def __len__(self) -> int: ...
    def columns(self, index: int) -> Dict[str, Any]:
        """Every column of sample ``index`` of a MindRecord set, by name (``int``,
        ``float``, ``str``, ``bytes``, or a numpy array); ``TypeError`` for other datasets."""
    def __getitem__(
        self, index: int
    ) -> Tuple[Union[bytes, npt.NDArray[np.uint8]], Union[list[float], Dict[str, Any]]]:
        """``(image, labels)``, or ``(image, target)`` for a detection sample (a
        dict: ``boxes``, ``format``, ``canvas_size``, ``labels``, ...). The image
        is the encoded file's bytes, or a pixel sample's uint8 array (height x
        width gray, height x width x channels otherwise)."""
    @property
    def classes(self) -> Optional[list[str]]: ...
    @property
    def fingerprint(self) -> int: ...

def from_python(dataset: Any) -> Dataset: ...
def from_iterable(
    factory: Callable[[], Iterable[Tuple[Any, Any]]],
    length: Optional[int] = None,
    buffer: Optional[int] = None,
    max_buffer_bytes: Optional[int] = None,
) -> Dataset: ...
def sample_content(dataset: Dataset, index: int) -> Tuple[str, Optional[Tuple[int, int, str]]]: ...
def coco(
    images_dir: PathLike,
    annotation_file: PathLike,
    masks: Union[bool, str] = False,
    *,
    categories: str = "raw",
    crowd: str = "keep",
    keep_empty: bool = True,
    keypoints: bool = False,
) -> Dataset: ...
def voc(
    root: PathLike,
    year: str = "2012",
    image_set: str = "train",
    *,
    keep_difficult: bool = True,
    coordinates: str = "as_stored",
    first_label: int = 0,
) -> Dataset: ...
def yolo(root: PathLike, split: str = "train", *, classes: Optional[int] = None) -> Dataset: ...
def celeba(
    root: PathLike,
    split: str = "train",
    target_types: Optional[Sequence[str]] = None,
    *,
    signed: bool = False,
    layout: str = "torchvision",
) -> Dataset: ...
def tfrecord_files(
    paths: Sequence[str],
    *,
    image_key: str = "image/encoded",
    label_key: str = "image/class/label",
    open_files: int = 64,
    targets: Optional[str] = None,
    masks: bool = False,
) -> Dataset: ...
def recordio_files(paths: Sequence[str], *, open_files: int = 64) -> Dataset: ...
def remote_stats() -> Optional[Tuple[int, int]]: ...
def set_read_blocks(block_bytes: int, kept_bytes: int) -> None: ...
def set_cache(dir: Optional[str], budget: int) -> None: ...
def mindrecord(
    path: PathLike,
    image: str = "data",
    label: Union[str, Sequence[str], None] = "label",
    *,
    shape: Optional[Sequence[str]] = None,
    bgr: bool = False,
) -> Dataset: ...

class Augment:
    """One step of a training pipeline."""

    @overload
    def __call__(self, image: Any, target: None = None, *, seed: Optional[int] = None) -> Any: ...
    @overload
    def __call__(self, image: Any, target: Dict[str, Any], *, seed: Optional[int] = None) -> Tuple[Any, Dict[str, Any]]: ...

AUGMENTATIONS: Tuple[str, ...]
"""The augmentation constructors' names (torchvision's transforms' names)."""

Size = Union[int, Sequence[int]]
Fill = Union[int, Sequence[int], None]

def RandomResizedCrop(
    size: Size, scale: Tuple[float, float] = (0.08, 1.0), ratio: Tuple[float, float] = ..., interpolation: Interpolation = "bilinear"
) -> Augment: ...
def RandomCrop(size: Size, padding: Union[int, Sequence[int], None] = None, pad_if_needed: bool = False, fill: Fill = None) -> Augment: ...
def RandomHorizontalFlip(p: float = 0.5) -> Augment: ...
def RandomVerticalFlip(p: float = 0.5) -> Augment: ...
def Resize(size: Size, interpolation: Interpolation = "bilinear", max_size: Optional[int] = None) -> Augment: ...
def CenterCrop(size: Size) -> Augment: ...
def ColorJitter(
    brightness: Union[float, Tuple[float, float], None] = None,
    contrast: Union[float, Tuple[float, float], None] = None,
    saturation: Union[float, Tuple[float, float], None] = None,
    hue: Union[float, Tuple[float, float], None] = None,
) -> Augment: ...
def GaussianBlur(kernel_size: Size, sigma: Union[float, Tuple[float, float], None] = None) -> Augment: ...
def RandomRotation(
    degrees: Union[float, Tuple[float, float]],
    interpolation: Interpolation = "nearest",
    expand: bool = False,
    center: Optional[Tuple[float, float]] = None,
    fill: Fill = None,
) -> Augment: ...
def RandomAffine(
    degrees: Union[float, Tuple[float, float]],
    translate: Optional[Tuple[float, float]] = None,
    scale: Optional[Tuple[float, float]] = None,
    shear: Union[float, Sequence[float], None] = None,
    interpolation: Interpolation = "nearest",
    fill: Fill = None,
    center: Optional[Tuple[float, float]] = None,
) -> Augment: ...
def RandomPerspective(distortion_scale: float = 0.5, p: float = 0.5, interpolation: Interpolation = "bilinear", fill: Fill = None) -> Augment: ...
def RandomGrayscale(p: float = 0.1) -> Augment: ...
def RandomIoUCrop(
    min_scale: float = 0.3,
    max_scale: float = 1.0,
    min_aspect_ratio: float = 0.5,
    max_aspect_ratio: float = 2.0,
    sampler_options: Optional[Sequence[float]] = None,
    trials: int = 40,
    *,
    max_rounds: int = 100,
) -> Augment: ...
def RandomZoomOut(fill: Fill = 0, side_range: Tuple[float, float] = (1.0, 4.0), p: float = 0.5) -> Augment: ...
def ScaleJitter(
    target_size: Tuple[int, int],
    scale_range: Tuple[float, float] = (0.1, 2.0),
    interpolation: Interpolation = "bilinear",
    antialias: Optional[bool] = True,
) -> Augment: ...
def RandomShortestSize(
    min_size: Union[int, Sequence[int]],
    max_size: Optional[int] = None,
    interpolation: Interpolation = "bilinear",
    antialias: Optional[bool] = True,
) -> Augment: ...
def FixedSizeCrop(size: Size, fill: Fill = 0, padding_mode: str = "constant") -> Augment: ...
def RandomPhotometricDistort(
    brightness: Tuple[float, float] = (0.875, 1.125),
    contrast: Tuple[float, float] = (0.5, 1.5),
    saturation: Tuple[float, float] = (0.5, 1.5),
    hue: Tuple[float, float] = (-0.05, 0.05),
    p: float = 0.5,
) -> Augment: ...
def ClampBoundingBoxes() -> Augment: ...
def SanitizeBoundingBoxes(min_size: float = 1.0, min_area: float = 1.0) -> Augment: ...
def ConvertBoundingBoxFormat(format: Union[str, Any]) -> Augment: ...
def RandomInvert(p: float = 0.5) -> Augment: ...
def RandomPosterize(bits: int, p: float = 0.5) -> Augment: ...
def RandomSolarize(threshold: float, p: float = 0.5) -> Augment: ...
def RandomAdjustSharpness(sharpness_factor: float, p: float = 0.5) -> Augment: ...
def RandomAutocontrast(p: float = 0.5) -> Augment: ...
def RandomEqualize(p: float = 0.5) -> Augment: ...
def AutoAugment(policy: str = "imagenet", interpolation: Interpolation = "nearest", fill: Fill = None) -> Augment: ...
def RandAugment(
    num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31, interpolation: Interpolation = "nearest", fill: Fill = None
) -> Augment: ...
def TrivialAugmentWide(num_magnitude_bins: int = 31, interpolation: Interpolation = "nearest", fill: Fill = None) -> Augment: ...
def AugMix(
    severity: int = 3,
    mixture_width: int = 3,
    chain_depth: int = -1,
    alpha: float = 1.0,
    all_ops: bool = True,
    interpolation: Interpolation = "bilinear",
    fill: Fill = None,
) -> Augment: ...
def RandomApply(transforms: Sequence[Augment], p: float = 0.5) -> Augment: ...
def RandomChoice(transforms: Sequence[Augment], p: Optional[Sequence[float]] = None) -> Augment: ...
def RandomOrder(transforms: Sequence[Augment]) -> Augment: ...
def Lambda(
    function: Callable[..., npt.NDArray[np.uint8]],
    name: Optional[str] = None,
    size: Union[str, Tuple[int, int]] = "same",
    rng: bool = True,
) -> Augment: ...

class RandomErasing:
    def __init__(
        self,
        p: float = 0.5,
        scale: Tuple[float, float] = (0.02, 0.33),
        ratio: Tuple[float, float] = (0.3, 3.3),
        value: Union[float, Sequence[float], str, None] = None,
    ) -> None: ...

class ToTensor:
    """torchvision's ``ToTensor()`` in a pipeline's list (values 0-1 without a ``Normalize``)."""

    def __init__(self) -> None: ...

class Normalize:
    """torchvision's ``Normalize(mean, std)`` in a pipeline's list, after ``ToTensor``."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None: ...
    @property
    def mean(self) -> Tuple[float, float, float]: ...
    @property
    def std(self) -> Tuple[float, float, float]: ...

Step = Union[Augment, ToTensor, Normalize, RandomErasing]

class Pipeline:
    """A training pipeline: decode, augmentations drawn per sample, normalize."""

    def __init__(
        self,
        augments: Sequence[Step],
        *,
        mean: Optional[Tuple[float, float, float]] = None,
        std: Optional[Tuple[float, float, float]] = None,
        dtype: str = "float32",
        layout: str = "chw",
        decoder: Optional[str] = None,
        fast: Union[bool, str] = False,
        exif: bool = False,
        erasing: Optional[Sequence[RandomErasing]] = None,
    ) -> None: ...
    @overload
    def __call__(self, image: Any, target: None = None, *, seed: Optional[int] = None) -> Any: ...
    @overload
    def __call__(self, image: Any, target: Dict[str, Any], *, seed: Optional[int] = None) -> Tuple[Any, Dict[str, Any]]: ...
    @staticmethod
    def preset(name: str, *, decoder: Optional[str] = None) -> Pipeline: ...
    @staticmethod
    def from_graph(graph: Graph, *, decoder: Optional[str] = None) -> Pipeline: ...
    @staticmethod
    def presets() -> list[str]: ...
    @property
    def output_shape(self) -> Optional[Tuple[int, int, int]]: ...

class BatchTensor:
    """A batch's tensor as a DLPack producer (numpy.from_dlpack, torch.from_dlpack)."""

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    @property
    def shape(self) -> list[int]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def targets(self) -> list[Optional[Dict[str, Any]]]: ...
    @property
    def image_sizes(self) -> list[Tuple[int, int]]: ...
    def boxes(self, layout: str = "padded", room: Optional[int] = None) -> Dict[str, npt.NDArray[Any]]: ...

class Mixup:
    """timm's ``Mixup`` as the loader's batch transform (``Loader(mix=...)``).

    Every parameter is checked here (``ValueError``); ``num_classes`` is 1 to
    2**24 (the soft targets take batch x num_classes floats per batch, counted
    against the loader's ``buffer_limit``)."""

    def __init__(
        self,
        mixup_alpha: float = 1.0,
        cutmix_alpha: float = 0.0,
        cutmix_minmax: Optional[Tuple[float, float]] = None,
        prob: float = 1.0,
        switch_prob: float = 0.5,
        mode: str = "batch",
        correct_lam: bool = True,
        label_smoothing: float = 0.1,
        num_classes: int = 1000,
    ) -> None: ...
    @property
    def num_classes(self) -> int: ...
    @property
    def mixup_alpha(self) -> float: ...
    @property
    def cutmix_alpha(self) -> float: ...
    @property
    def cutmix_minmax(self) -> Optional[Tuple[float, float]]: ...
    @property
    def prob(self) -> float: ...
    @property
    def switch_prob(self) -> float: ...
    @property
    def mode(self) -> str: ...
    @property
    def correct_lam(self) -> bool: ...
    @property
    def label_smoothing(self) -> float: ...

def loader_defaults() -> dict[str, int]: ...
def preview(
    dataset: Dataset,
    pipeline: Pipeline,
    *,
    samples: int,
    columns: int,
    seed: int,
    epoch: int,
    out: Optional[str] = None,
) -> Tuple[npt.NDArray[np.uint8], list[Tuple[int, int, int, int]]]: ...

class RunContext:
    """What a loader callback is told: the point, the epoch and steps (from 0), and set_pipeline."""

    @property
    def point(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def step(self) -> int: ...
    @property
    def step_in_epoch(self) -> int: ...
    @property
    def cur_epoch_num(self) -> int: ...
    @property
    def cur_step_num(self) -> int: ...
    @property
    def cur_step_num_in_epoch(self) -> int: ...
    def set_pipeline(self, pipeline: Pipeline) -> None: ...

class _Loader:
    def __init__(
        self,
        dataset: Dataset,
        pipeline: Pipeline,
        batch_size: int,
        workers: Optional[int] = None,
        seed: Optional[int] = None,
        *,
        shard: Optional[Tuple[int, int, bool]] = None,
        shuffle: bool = True,
        weights: Optional[Sequence[float]] = None,
        replacement: bool = True,
        num_samples: Optional[int] = None,
        drop_last: bool = False,
        skip_errors: bool = False,
        prefetch: Optional[int] = None,
        depth: Optional[int] = None,
        read_workers: Optional[int] = None,
        epochs: Optional[int] = None,
        max_shape: Optional[Tuple[int, int, int]] = None,
        decode_budget: Optional[int] = None,
        buffer_limit: Optional[int] = None,
        mix: Optional[Mixup] = None,
        label_width: Optional[int] = None,
        callbacks: Optional[Sequence[Any]] = None,
        size_divisible: int = 1,
        blocks: Optional[Tuple[int, int]] = None,
        fetch_ahead: Optional[int] = None,
    ) -> None: ...
    def next_batch(
        self, mask: bool = False
    ) -> Optional[
        Tuple[BatchTensor, npt.NDArray[np.float32], npt.NDArray[np.uint64], int, int, Optional[npt.NDArray[np.uint8]]]
    ]: ...
    def next_epoch(self) -> None: ...
    @property
    def exhausted(self) -> bool: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...
    def set_epoch(self, epoch: int) -> None: ...
    @property
    def epoch(self) -> int: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...

def shard_from_env(environ: Optional[Mapping[str, str]] = None) -> Tuple[int, int]: ...
def cifar10(root: PathLike, train: bool = True) -> Dataset:
    """CIFAR-10's binary version under ``root`` (``cifar-10-batches-bin/``)."""
def cifar100(root: PathLike, train: bool = True, label: str = "fine") -> Dataset:
    """CIFAR-100's binary version under ``root`` (``cifar-100-binary/``); ``label``: fine, coarse or both."""
def mnist(root: PathLike, variant: str = "MNIST", train: bool = True) -> Dataset:
    """An idx dataset under ``root/<variant>/raw/`` (MNIST, FashionMNIST or KMNIST)."""
def cifar_pickled(
    batches: Sequence[Tuple[PathLike, bytes, Sequence[Sequence[int]]]], label: Optional[str], what: str
) -> Dataset:
    """CIFAR's unpickled batches (path, uint8 planar rows, label lists), checked and converted in Rust."""
