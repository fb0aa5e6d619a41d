"""The GIL's cost of ``train.Lambda``: a pipeline with an identity Lambda against the same pipeline without it.

    python ffi/python/bench_lambda.py                     # the bundled sample folder, 1 and 2 workers
    python ffi/python/bench_lambda.py --epochs 40 --repeat 5 --workers 1 2

The dataset is ``--folder`` (by default the repository's sample folder,
``tests/fixtures/records/folder``: six photos), read ``--epochs`` times per
timed run (one loader, its epochs in turn). The pipeline is ``--preset``'s
(``imagenet-train``: RandomResizedCrop(224) + flip) alone, then with an
identity ``Lambda`` appended: ``lambda image: image`` (no generator) and
``lambda image, rng: image`` (the sample's generator made for each call);
batch ``--batch``, numpy output. Each figure is the median of ``--repeat``
runs, the pipelines interleaved run by run after a warm-up run of each.

Also printed: the loader's extra time per sample with each Lambda, and the
cost of making a generator
(``numpy.random.Generator(numpy.random.PCG64(key))``) in plain Python.
"""

import argparse
import os
import statistics
import time
import timeit

import numpy as np

from tensorprep import train

FOLDER = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "records", "folder")


LAMBDAS = {
    "without": None,
    "Lambda(image)": lambda image: image,
    "Lambda(image, rng)": lambda image, rng: image,
}


def pipeline(preset, function):
    base = train.Pipeline.preset(preset)
    ops = [train.RandomResizedCrop(224), train.RandomHorizontalFlip()]
    if preset != "imagenet-train":
        raise SystemExit("only imagenet-train is rebuilt as a list here")
    if function is not None:
        ops.append(train.Lambda(function, name="identity"))
    p = train.Pipeline(ops)
    assert p.output_shape == base.output_shape
    return p


def run(data, p, workers, batch, epochs):
    """Seconds for `epochs` epochs of one loader."""
    t = time.perf_counter()
    loader = train.Loader(data, p, batch, workers, seed=0, output="numpy", epochs=epochs)
    for _ in range(epochs):
        for _images, _labels in loader:
            pass
    loader.close()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folder", default=FOLDER)
    ap.add_argument("--preset", default="imagenet-train")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    data = train.ImageFolder(a.folder)
    images = len(data) * a.epochs
    pipelines = {name: pipeline(a.preset, f) for name, f in LAMBDAS.items()}
    make = timeit.timeit("G(P(12345678901234567))", globals={"G": np.random.Generator, "P": np.random.PCG64}, number=2000)
    print(f"{len(data)} photos x {a.epochs} epochs, batch {a.batch}, {a.preset}")
    print(f"numpy.random.Generator(PCG64(key)) in plain Python: {make / 2000 * 1e6:.1f} us")
    for workers in a.workers:
        for p in pipelines.values():
            run(data, p, workers, a.batch, 1)
        times = {name: [] for name in pipelines}
        for _ in range(a.repeat):
            for name, p in pipelines.items():
                times[name].append(run(data, p, workers, a.batch, a.epochs))
        without = statistics.median(times["without"])
        line = [f"{workers} worker(s): without {images / without:.1f} images/s"]
        for name in list(pipelines)[1:]:
            with_ = statistics.median(times[name])
            per_sample = (with_ - without) / images
            line.append(
                f"{name} {images / with_:.1f} images/s ({without / with_:.2f}x, "
                f"{per_sample * 1e6:+.0f} us a sample)"
            )
        print("; ".join(line))


if __name__ == "__main__":
    main()
