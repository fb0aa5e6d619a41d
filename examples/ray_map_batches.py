"""tensorprep inside Ray Data's ``map_batches``: an inference plan and a
training pipeline run by Ray's worker processes, each output byte-equal to the
same call in this process.

The pattern: a callable class, so that each Ray actor compiles its plan once
(in ``__init__``) and runs it on every batch it is given (``__call__``); the
rows carry the encoded images (and, for training, each sample's seed, so that
its draw does not depend on which actor runs it or in what order)::

    ds = ray.data.from_items(rows)            # {"bytes": ..., "seed": ...}
    out = ds.map_batches(Preprocess, batch_size=4, compute=ray.data.ActorPoolStrategy(size=2), batch_format="numpy")

Run against a local head on 127.0.0.1 (the script starts one with
``ray start --head`` and stops it when done, unless ``--address`` names a
running cluster)::

    pip install "ray[data]" Pillow
    python examples/ray_map_batches.py                  # prints the rows checked
    python examples/ray_map_batches.py --address 127.0.0.1:6379

Exits 0 when every row's tensors equal the local plan's and pipeline's, byte
for byte; 1 otherwise.
"""

import argparse
import glob
import io
import os
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def decoded(data):
    """An encoded photo as the uint8 (H, W, 3) array training transforms take."""
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


class Preprocess:
    """One per Ray actor: torchvision's ImageNet evaluation plan (decode,
    resize 256, crop 224, normalise) and its training pipeline (random
    resized crop, flip), made once and run on each batch."""

    def __init__(self):
        import tensorprep
        from tensorprep import train

        self.plan = tensorprep.Graph.preset("imagenet-eval").compile("jpeg")
        self.pipeline = train.Pipeline.preset("imagenet-train")

    def __call__(self, batch):
        evaluated = [self.plan(bytes(b)) for b in batch["bytes"]]
        trained = [self.pipeline(decoded(bytes(b)), seed=int(s)) for b, s in zip(batch["bytes"], batch["seed"])]
        return {"name": batch["name"], "eval": np.stack(evaluated), "train": np.stack(trained)}


def rows():
    """The repository's test photos, each twice with two seeds."""
    photos = sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "*.jpg")))
    out = []
    for k, path in enumerate(photos * 2):
        with open(path, "rb") as f:
            out.append({"name": f"{os.path.basename(path)}#{k}", "bytes": f.read(), "seed": 1000 + k})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", help="a running Ray cluster (default: start a local head)")
    args = parser.parse_args()
    import ray

    started = args.address is None
    address = args.address or "127.0.0.1:6379"
    if started:
        subprocess.run(
            ["ray", "start", "--head", "--node-ip-address=127.0.0.1", "--port=6379", "--num-cpus=2",
             "--include-dashboard=false", "--disable-usage-stats"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        items = rows()
        ds = ray.data.from_items(items)
        pool = ray.data.ActorPoolStrategy(size=2)
        out = ds.map_batches(Preprocess, batch_size=4, compute=pool, batch_format="numpy").take_all()
        ray.shutdown()
    finally:
        if started:
            subprocess.run(["ray", "stop", "--force"], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    local = Preprocess()
    by_name = {r["name"]: r for r in items}
    bad = 0
    for row in out:
        item = by_name[row["name"]]
        want = local({"name": [item["name"]], "bytes": [item["bytes"]], "seed": [item["seed"]]})
        for key in ("eval", "train"):
            got = np.asarray(row[key])
            if got.dtype != want[key][0].dtype or got.tobytes() != want[key][0].tobytes():
                print(f"{row['name']}: {key} differs from the local call", file=sys.stderr)
                bad += 1
    if len(out) != len(items):
        print(f"{len(out)} rows came back for {len(items)}", file=sys.stderr)
        bad += 1
    print(f"ray map_batches: {len(out)} rows, eval and train tensors byte-equal to the local calls: {bad == 0}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
