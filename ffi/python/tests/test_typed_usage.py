"""The typed usage file mypy checks in CI (typecheck/usage.py), run: what
the stubs accept, the module accepts, and the values have the types the
stubs give."""

import importlib.util
import os

import numpy as np

from conftest import fixture


def test_the_typed_usage_file_runs(tp, tmp_path):
    path = os.path.join(os.path.dirname(__file__), "..", "typecheck", "usage.py")
    spec = importlib.util.spec_from_file_location("usage", path)
    usage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(usage)
    x = usage.inference(fixture("sample.jpg"))
    assert isinstance(x, np.ndarray) and x.shape == (3, 224, 224)
    state = usage.training(fixture("records", "folder"))
    assert set(state) >= {"seed", "epoch", "batches"} and all(isinstance(v, int) for v in state.values())
    out = tmp_path / "grid.png"
    width, height = usage.preview(fixture("records", "folder"), str(out))
    assert width >= 4 * 224 and height >= 224 and out.stat().st_size > 0  # one row of four
    image = np.zeros((20, 30, 3), dtype=np.uint8)
    flipped, moved = usage.functional_ops(image)
    assert flipped.shape[2] == 3 and moved["format"] == "CXCYWH" and moved["boxes"].shape == (1, 4)
    tv = importlib.util.find_spec("torchvision") is not None
    coco = fixture("coco", "sample")
    assert usage.coco_targets(os.path.join(coco, "images"), os.path.join(coco, "instances.json"), tv) > 0
