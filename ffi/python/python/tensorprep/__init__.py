"""tensorprep: images to model-ready tensors.

The same plans, graphs and training loader as the Rust library and the C API:
Pillow/torchvision-exact preprocessing compiled once and run on files, bytes,
numpy images and camera frames, with the GIL released.

>>> import tensorprep
>>> plan = tensorprep.Graph.preset("imagenet-eval").compile("jpeg")
>>> x = plan("photo.jpg")                 # numpy float32 (3, 224, 224)
>>> xs = plan.batch(paths, threads=4)     # (N, 3, 224, 224)

Training: ``tensorprep.train`` (datasets, augmentations, the loader).
"""

from types import ModuleType
from typing import Any, Dict

from ._native import (
    DataError,
    DecodeError,
    Error,
    Geometry,
    Graph,
    GraphError,
    InputError,
    LimitError,
    LoaderError,
    Plan,
    SelfTestReport,
    __version__,
    decoders,
    resize_float,
)
from . import _recipes  # noqa: F401  (augmentations remember their calls: they pickle)

__all__ = [
    "DataError",
    "DecodeError",
    "Error",
    "Geometry",
    "Graph",
    "GraphError",
    "InputError",
    "LimitError",
    "LoaderError",
    "Plan",
    "SelfTestReport",
    "__version__",
    "decoders",
    "functional",
    "resize_float",
    "train",
]


def _compiled(graph: Graph, input: str, options: Dict[str, Any]) -> Plan:
    """A plan from its graph and compile options (how plans are unpickled)."""
    return graph.compile(input, **options)


def __getattr__(name: str) -> ModuleType:
    # `tensorprep.train` and `tensorprep.functional` on first use (submodules).
    if name in ("train", "functional"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tensorprep' has no attribute {name!r}")
