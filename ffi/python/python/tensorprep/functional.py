"""torchvision v2's functional ops with explicit parameters.

Each op has torchvision's name, parameters and order after the image
(``torchvision.transforms.v2.functional``), takes a uint8 image (a numpy
array ``(H, W)`` or ``(H, W, C)``, or a PIL image) and optionally a target
dict, and returns the image (the same kind) or, with ``target=``, the pair
``(image, target)``. Pixels equal torchvision's on a PIL image (the Gaussian
blur within one level); boxes, masks and key points equal torchvision's on
``tv_tensors``. These are the kernels the training loader runs for a drawn
op: use them to check a recipe step by step.

A target is a dict: ``boxes`` ``(N, 4)`` float32 with ``format``
(``"XYXY"``, ``"XYWH"``, ``"CXCYWH"``) and ``canvas_size`` ``(H, W)``, and
optionally ``labels``, ``masks`` ``(N, H, W)`` uint8, ``keypoints`` and the
other per-instance keys of the loader's targets. Boxes given as
``tv_tensors.BoundingBoxes`` carry their format and canvas. The returned
target has the same keys, moved, as the same kinds (numpy, torch tensors or
``tv_tensors``). Masks are filled with 0 where an op brings in new pixels.
Photometric ops leave the target as it is.

>>> import numpy as np
>>> from tensorprep import functional as F
>>> image = np.zeros((6, 8, 3), dtype=np.uint8)
>>> target = {"boxes": np.array([[1, 1, 3, 4]], dtype=np.float32), "format": "XYXY", "canvas_size": (6, 8)}
>>> flipped, moved = F.horizontal_flip(image, target=target)
>>> moved["boxes"].tolist()
[[5.0, 1.0, 7.0, 4.0]]
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._native import _functional

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "adjust_hue",
    "adjust_saturation",
    "adjust_sharpness",
    "affine",
    "autocontrast",
    "center_crop",
    "clamp_bounding_boxes",
    "convert_bounding_box_format",
    "crop",
    "equalize",
    "erase",
    "gaussian_blur",
    "horizontal_flip",
    "invert",
    "pad",
    "perspective",
    "posterize",
    "resize",
    "resized_crop",
    "rgb_to_grayscale",
    "rotate",
    "solarize",
    "vertical_flip",
]

Target = Dict[str, Any]
Fill = Union[int, float, Sequence[Union[int, float]], None]

# PIL's resampling constants, as torchvision accepts them.
_PIL_FILTERS = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}


def _interpolation(mode: Any) -> str:
    """A torchvision ``InterpolationMode``, its value, or a PIL constant, as a name."""
    if isinstance(mode, int) and not isinstance(mode, bool):
        if mode not in _PIL_FILTERS:
            raise ValueError(f"interpolation {mode} is not a PIL filter (0-5)")
        return _PIL_FILTERS[mode]
    value = getattr(mode, "value", mode)
    if not isinstance(value, str):
        raise TypeError(f"interpolation is an InterpolationMode or a name such as 'bilinear'; given {mode!r}")
    return value.lower()


def _fill(fill: Fill) -> Optional[List[int]]:
    """torchvision's ``fill`` (a number or one per band) as 0-255 ints."""
    if fill is None:
        return None
    values = [fill] if isinstance(fill, (int, float)) else list(fill)
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not 0 <= v <= 255:
            raise ValueError(f"fill is a number 0-255 or one per band; given {fill!r}")
        # PIL's fill for a uint8 image: the number as an int, as torchvision passes it.
        out.append(int(v))
    return out


def _pair(value: Any, name: str) -> List[float]:
    if isinstance(value, (int, float)):
        return [float(value), float(value)]
    values = [float(v) for v in value]
    if len(values) == 1:
        return values * 2
    if len(values) != 2:
        raise ValueError(f"{name} is a number or a pair; given {value!r}")
    return values


def _size(size: Any) -> Optional[List[int]]:
    if size is None:
        return None
    if isinstance(size, int):
        return [size]
    return [int(v) for v in size]


def _as_array(image: Any) -> Tuple[Any, Optional[str]]:
    """The image's pixels as a numpy array, with the PIL mode when it was a PIL image."""
    import numpy as np

    if type(image).__module__.startswith("torch"):
        raise TypeError(
            "tensorprep.functional takes a numpy uint8 image (H, W[, C]) or a PIL image; "
            "for a torch tensor (C, H, W) pass image.permute(1, 2, 0).numpy()"
        )
    mode = getattr(image, "mode", None)
    if mode is not None and hasattr(image, "getbands"):
        if mode not in ("RGB", "L", "RGBA"):
            raise TypeError(f"a PIL image in mode {mode}: convert('RGB') (or 'L') it first")
        return np.asarray(image), mode
    return image, None


def _as_image(array: Any, mode: Optional[str]) -> Any:
    if mode is None:
        return array
    import PIL.Image

    return PIL.Image.fromarray(array)


def _restore(given: Target, moved: Target) -> Target:
    """``moved`` with ``given``'s keys; torch tensors and ``tv_tensors`` when ``given`` held them."""
    if any(type(v).__module__.startswith("torch") for v in given.values()):
        from ._targets import to_tv_tensors

        moved = to_tv_tensors(moved)
    return {key: moved[key] for key in given if key in moved}


def _call(op: str, image: Any, target: Optional[Target], **params: Any) -> Any:
    array, mode = _as_array(image) if image is not None else (None, None)
    out, moved = _functional(op, array, params, target)
    result = _as_image(out, mode) if out is not None else None
    if target is None:
        return result
    moved_target = _restore(target, moved) if moved is not None else target
    return (result, moved_target) if image is not None else moved_target


def _photometric(op: str, image: Any, target: Optional[Target], **params: Any) -> Any:
    out = _call(op, image, None, **params)
    return out if target is None else (out, target)


# Geometric ops: they move the target.


def horizontal_flip(inpt: Any, *, target: Optional[Target] = None) -> Any:
    """``F.horizontal_flip``."""
    return _call("horizontal_flip", inpt, target)


def vertical_flip(inpt: Any, *, target: Optional[Target] = None) -> Any:
    """``F.vertical_flip``."""
    return _call("vertical_flip", inpt, target)


def resize(
    inpt: Any,
    size: Optional[Union[int, Sequence[int]]],
    interpolation: Any = "bilinear",
    max_size: Optional[int] = None,
    antialias: Optional[bool] = True,
    *,
    target: Optional[Target] = None,
) -> Any:
    """``F.resize``: ``size`` ``[h, w]``, one int (the shorter side, the longer one truncated, capped by
    ``max_size``) or ``None`` with ``max_size`` (the longer side). PIL images are always antialiased, as
    torchvision resizes them; ``antialias`` is accepted for the signature."""
    return _call("resize", inpt, target, size=_size(size), max_size=max_size, interpolation=_interpolation(interpolation))


def crop(inpt: Any, top: int, left: int, height: int, width: int, *, target: Optional[Target] = None) -> Any:
    """``F.crop``: zeros where the window lies outside the image, as PIL's crop."""
    return _call("crop", inpt, target, top=top, left=left, height=height, width=width)


def center_crop(inpt: Any, output_size: Union[int, Sequence[int]], *, target: Optional[Target] = None) -> Any:
    """``F.center_crop``: a crop larger than the image pads it with zeros first."""
    size = _size(output_size) or []
    return _call("center_crop", inpt, target, output_size=size * 2 if len(size) == 1 else size)


def resized_crop(
    inpt: Any,
    top: int,
    left: int,
    height: int,
    width: int,
    size: Union[int, Sequence[int]],
    interpolation: Any = "bilinear",
    antialias: Optional[bool] = True,
    *,
    target: Optional[Target] = None,
) -> Any:
    """``F.resized_crop``: the crop, then ``resize(size)``."""
    return _call(
        "resized_crop",
        inpt,
        target,
        top=top,
        left=left,
        height=height,
        width=width,
        size=_size(size),
        interpolation=_interpolation(interpolation),
    )


def pad(
    inpt: Any,
    padding: Union[int, Sequence[int]],
    fill: Fill = None,
    padding_mode: str = "constant",
    *,
    target: Optional[Target] = None,
) -> Any:
    """``F.pad`` with a constant (``padding``: one int, ``[lr, tb]`` or ``[l, t, r, b]``; negative crops)."""
    pads = [padding] if isinstance(padding, int) else list(padding)
    return _call("pad", inpt, target, padding=pads, fill=_fill(fill), padding_mode=padding_mode)


def affine(
    inpt: Any,
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: Union[float, Sequence[float]],
    interpolation: Any = "nearest",
    fill: Fill = None,
    center: Optional[Sequence[float]] = None,
    *,
    target: Optional[Target] = None,
) -> Any:
    """``F.affine`` (a shear of one number is ``(s, 0)``, as torchvision reads it)."""
    shear_xy = [float(shear), 0.0] if isinstance(shear, (int, float)) else _pair(shear, "shear")
    return _call(
        "affine",
        inpt,
        target,
        angle=float(angle),
        translate=_pair(translate, "translate"),
        scale=float(scale),
        shear=shear_xy,
        interpolation=_interpolation(interpolation),
        fill=_fill(fill),
        center=None if center is None else _pair(center, "center"),
    )


def rotate(
    inpt: Any,
    angle: float,
    interpolation: Any = "nearest",
    expand: bool = False,
    center: Optional[Sequence[float]] = None,
    fill: Fill = None,
    *,
    target: Optional[Target] = None,
) -> Any:
    """``F.rotate``: counter-clockwise, in degrees."""
    return _call(
        "rotate",
        inpt,
        target,
        angle=float(angle),
        interpolation=_interpolation(interpolation),
        expand=bool(expand),
        center=None if center is None else _pair(center, "center"),
        fill=_fill(fill),
    )


def perspective(
    inpt: Any,
    startpoints: Optional[Sequence[Sequence[int]]],
    endpoints: Optional[Sequence[Sequence[int]]],
    interpolation: Any = "bilinear",
    fill: Fill = None,
    coefficients: Optional[Sequence[float]] = None,
    *,
    target: Optional[Target] = None,
) -> Any:
    """``F.perspective``: from four start and end corners, or the 8 coefficients."""
    return _call(
        "perspective",
        inpt,
        target,
        startpoints=None if startpoints is None else [[float(v) for v in p] for p in startpoints],
        endpoints=None if endpoints is None else [[float(v) for v in p] for p in endpoints],
        coefficients=None if coefficients is None else [float(c) for c in coefficients],
        interpolation=_interpolation(interpolation),
        fill=_fill(fill),
    )


# Ops on boxes alone: they take and return a target.


def convert_bounding_box_format(inpt: Target, old_format: Any = None, new_format: Any = None) -> Target:
    """``F.convert_bounding_box_format`` on a target dict (its ``format`` is the old one)."""
    if new_format is None:
        raise TypeError("convert_bounding_box_format: new_format is required")
    if old_format is not None:
        inpt = {**inpt, "format": getattr(old_format, "name", old_format)}
    moved: Target = _call("convert_bounding_box_format", None, inpt, new_format=str(getattr(new_format, "name", new_format)))
    return moved


def clamp_bounding_boxes(inpt: Target) -> Target:
    """``F.clamp_bounding_boxes`` on a target dict: the boxes into their canvas."""
    moved: Target = _call("clamp_bounding_boxes", None, inpt)
    return moved


# Photometric ops: the target stays as it is.


def adjust_brightness(inpt: Any, brightness_factor: float, *, target: Optional[Target] = None) -> Any:
    """``F.adjust_brightness``."""
    return _photometric("adjust_brightness", inpt, target, brightness_factor=float(brightness_factor))


def adjust_contrast(inpt: Any, contrast_factor: float, *, target: Optional[Target] = None) -> Any:
    """``F.adjust_contrast``."""
    return _photometric("adjust_contrast", inpt, target, contrast_factor=float(contrast_factor))


def adjust_saturation(inpt: Any, saturation_factor: float, *, target: Optional[Target] = None) -> Any:
    """``F.adjust_saturation``."""
    return _photometric("adjust_saturation", inpt, target, saturation_factor=float(saturation_factor))


def adjust_hue(inpt: Any, hue_factor: float, *, target: Optional[Target] = None) -> Any:
    """``F.adjust_hue``, ``hue_factor`` in ``[-0.5, 0.5]``."""
    return _photometric("adjust_hue", inpt, target, hue_factor=float(hue_factor))


def adjust_sharpness(inpt: Any, sharpness_factor: float, *, target: Optional[Target] = None) -> Any:
    """``F.adjust_sharpness``."""
    return _photometric("adjust_sharpness", inpt, target, sharpness_factor=float(sharpness_factor))


def posterize(inpt: Any, bits: int, *, target: Optional[Target] = None) -> Any:
    """``F.posterize``."""
    return _photometric("posterize", inpt, target, bits=bits)


def solarize(inpt: Any, threshold: float, *, target: Optional[Target] = None) -> Any:
    """``F.solarize``."""
    return _photometric("solarize", inpt, target, threshold=float(threshold))


def autocontrast(inpt: Any, *, target: Optional[Target] = None) -> Any:
    """``F.autocontrast``."""
    return _photometric("autocontrast", inpt, target)


def equalize(inpt: Any, *, target: Optional[Target] = None) -> Any:
    """``F.equalize``."""
    return _photometric("equalize", inpt, target)


def invert(inpt: Any, *, target: Optional[Target] = None) -> Any:
    """``F.invert``."""
    return _photometric("invert", inpt, target)


def rgb_to_grayscale(inpt: Any, num_output_channels: int = 1, *, target: Optional[Target] = None) -> Any:
    """``F.rgb_to_grayscale``: PIL's ``convert("L")``, one channel or three."""
    return _photometric("rgb_to_grayscale", inpt, target, num_output_channels=num_output_channels)


def gaussian_blur(
    inpt: Any,
    kernel_size: Union[int, Sequence[int]],
    sigma: Optional[Union[float, Sequence[float]]] = None,
    *,
    target: Optional[Target] = None,
) -> Any:
    """``F.gaussian_blur`` (``kernel_size`` ``[w, h]``; ``sigma`` by default ``k * 0.15 + 0.35`` per side, as
    torchvision); within one level of torchvision's, with one sigma for both directions."""
    kernel = [kernel_size, kernel_size] if isinstance(kernel_size, int) else [int(k) for k in kernel_size]
    if len(kernel) == 1:
        kernel = kernel * 2
    sigmas = [k * 0.15 + 0.35 for k in kernel] if sigma is None else _pair(sigma, "sigma")
    return _photometric("gaussian_blur", inpt, target, kernel_size=kernel, sigma=sigmas)


def erase(
    inpt: Any,
    i: int,
    j: int,
    h: int,
    w: int,
    v: Any,
    inplace: bool = False,
    *,
    target: Optional[Target] = None,
) -> Any:
    """``F.erase``: rows ``i:i+h``, columns ``j:j+w`` set to ``v`` (one value, or one per channel). A new
    image; ``inplace`` is accepted for the signature."""
    values = getattr(v, "tolist", lambda: v)()
    flat = _flatten(values)
    if any(isinstance(x, bool) or not 0 <= x <= 255 for x in flat):
        raise ValueError(f"erase: v is 0-255 (one value or one per channel); given {v!r}")
    return _photometric("erase", inpt, target, i=i, j=j, h=h, w=w, v=[int(x) for x in flat])


def _flatten(values: Any) -> List[float]:
    if isinstance(values, (int, float)):
        return [values]
    out: List[float] = []
    for x in values:
        out.extend(_flatten(x))
    return out
