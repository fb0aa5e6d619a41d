"""Target dicts as torchvision's ``tv_tensors``: the one place the package
turns its numpy target dicts (``ds[i]``, ``BatchTensor.targets``) into the
types torchvision v2's transforms and models take."""

from __future__ import annotations

from typing import Any, Dict, Mapping

import numpy as np

# The keys tv_tensors carry themselves: BoundingBoxes holds its format and
# canvas_size (a stale copy beside it would disagree after a v2 transform).
_CARRIED = ("format", "canvas_size")


def to_tv_tensors(target: Mapping[str, Any]) -> Dict[str, Any]:
    """``target`` (a dict of numpy arrays, as ``ds[i]`` and
    ``BatchTensor.targets`` give) with torchvision's types:
    ``boxes`` a ``tv_tensors.BoundingBoxes(format=, canvas_size=)`` (and no
    ``format`` nor ``canvas_size`` key: the boxes carry them), ``masks`` and
    ``semantic`` ``tv_tensors.Mask``, ``keypoints`` a ``tv_tensors.KeyPoints``
    ``(N, K, 2)`` with ``visibility`` ``(N, K)`` beside it (a plain ``(N, K,
    3)`` tensor where torchvision has no ``KeyPoints``), the other arrays
    torch tensors sharing their memory. The tensorprep datasets and
    ``FromPython`` read such a dict back.

    Raises ``ImportError`` when torch or torchvision is not installed."""
    try:
        import torch
        from torchvision import tv_tensors
    except ImportError as e:
        raise ImportError(
            "tv_tensors targets need torch and torchvision installed "
            "(pip install torchvision); without them targets are dicts of numpy arrays"
        ) from e
    has_boxes = "boxes" in target
    canvas = target.get("canvas_size")
    out: Dict[str, Any] = {}
    for key, value in target.items():
        if key in _CARRIED and has_boxes:
            continue
        if key == "boxes":
            if canvas is None:
                raise ValueError("a target with boxes needs its canvas_size (height, width)")
            out[key] = tv_tensors.BoundingBoxes(
                torch.from_numpy(np.asarray(value)),
                format=str(target.get("format", "XYXY")),
                canvas_size=(int(canvas[0]), int(canvas[1])),
            )
        elif key in ("masks", "semantic"):
            out[key] = tv_tensors.Mask(torch.from_numpy(np.asarray(value)))
        elif key == "keypoints" and hasattr(tv_tensors, "KeyPoints"):
            points = np.asarray(value)
            if canvas is None:
                raise ValueError("a target with keypoints needs its canvas_size (height, width)")
            out[key] = tv_tensors.KeyPoints(
                torch.from_numpy(np.ascontiguousarray(points[..., :2])),
                canvas_size=(int(canvas[0]), int(canvas[1])),
            )
            if points.shape[-1] == 3:
                out["visibility"] = torch.from_numpy(points[..., 2].astype(np.uint8))
        elif isinstance(value, np.ndarray):
            out[key] = torch.from_numpy(value)
        else:
            out[key] = value
    return out
