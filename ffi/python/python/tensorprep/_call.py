"""Transforms as callables (``augment(image, target)``): the Python half.

The image is converted from PIL (and back, for an augmentation, whose
output is pixels); the target dict comes back with the keys and kinds it
was given as (numpy, torch tensors or ``tv_tensors``). The draw is keyed by
``seed``: the same seed gives the same draw on any machine; ``None`` takes
one from Python's ``random`` module (so ``random.seed`` makes runs repeat).
"""

import random
from typing import Any, Optional

from ._native import _transform
from .functional import Target, _as_array, _as_image, _restore


def call(transform: Any, image: Any, target: Optional[Target], seed: Optional[int]) -> Any:
    if seed is None:
        seed = random.getrandbits(64)
    array, mode = _as_array(image)
    if mode is not None and mode != "RGB":
        raise TypeError(f"a transform takes an RGB image; given a PIL image in mode {mode} (convert('RGB') it)")
    out, moved = _transform(transform, array, target, seed)
    # An augmentation gives pixels (H, W, 3): back to PIL for a PIL image.
    if mode is not None and out.ndim == 3 and out.shape[2] == 3 and str(out.dtype) == "uint8":
        out = _as_image(out, mode)
    if target is None or moved is None:
        return out
    return out, _restore(target, moved)
