"""Checks that a model with an embedded graph is the original model plus one
metadata entry, and that onnxruntime loads and runs it exactly as before.

    python3 tests/onnx_embed_check.py ORIGINAL.onnx EMBEDDED.onnx

Run by .ci/run after `tensorprep embed`; needs onnx and onnxruntime (pip).
"""
import base64
import sys

import numpy as np
import onnx
import onnxruntime as ort

KEY = "tensorprep.graph"
MAGIC = b"\x89TPP\r\n\x1a\n"


def main(original_path, embedded_path):
    original = onnx.load(original_path)
    embedded = onnx.load(embedded_path)
    onnx.checker.check_model(embedded)

    entries = [p for p in embedded.metadata_props if p.key == KEY]
    assert len(entries) == 1, f"{len(entries)} `{KEY}` entries"
    graph_file = base64.b64decode(entries[0].value, validate=True)
    assert graph_file.startswith(MAGIC), "the entry is not a graph file"

    # Without that one entry, the model is the original, field for field.
    stripped = onnx.ModelProto()
    stripped.CopyFrom(embedded)
    del stripped.metadata_props[:]
    stripped.metadata_props.extend(p for p in embedded.metadata_props if p.key != KEY)
    assert stripped == original, "the model changed beyond the metadata entry"
    assert stripped.SerializeToString() == original.SerializeToString()

    a = ort.InferenceSession(original_path, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(embedded_path, providers=["CPUExecutionProvider"])
    meta = b.get_modelmeta().custom_metadata_map
    assert meta.get(KEY) == entries[0].value, "onnxruntime does not see the entry"
    assert {k: v for k, v in meta.items() if k != KEY} == a.get_modelmeta().custom_metadata_map
    rng = np.random.default_rng(0)
    feeds = {}
    for i in a.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.random(shape, dtype=np.float32)
    for x, y in zip(a.run(None, feeds), b.run(None, feeds)):
        assert np.array_equal(x, y), "outputs differ"
    print(f"ok: {embedded_path} = {original_path} + one `{KEY}` entry "
          f"({len(graph_file)}-byte graph); onnxruntime {ort.__version__} loads and runs it unchanged")


if __name__ == "__main__":
    main(*sys.argv[1:3])
