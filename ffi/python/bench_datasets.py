"""A Python map-style dataset (``train.FromPython``) and an iterable one
(``train.FromIterable``, a generator over the same files through the default
shuffle buffer) against ``train.ImageFolder`` on the same photos.

    python ffi/python/bench_datasets.py                          # 64 photos, 2 workers
    python ffi/python/bench_datasets.py --photos 256 --repeat 5

The photos (``--source``, by default the shared test photographs; a file
whose name starts with ``truncated`` is left out) are copied ``--photos``
times round into two class folders under ``--dir``. The Python dataset
lists the same files and reads each one's bytes in ``__getitem__``, as a
user's own ``Dataset`` would. Both go through the same loader
(``imagenet-train``, ``--workers`` decode threads, one read thread, batch
``--batch``, numpy output); each figure is the median of ``--repeat`` timed
epochs (a new loader each, its start included, closed after it) after a
warm-up pass, the two interleaved epoch by epoch.

The GIL's cost: the time of one ``__getitem__`` call in plain Python, the
time of one read through ``FromPython`` (taking the GIL, the call, the copy
into the sample), and that read's share of the loader's time per sample,
which is the fraction of the epoch the read thread holds the GIL.
``--busy MS`` makes the consumer hold the GIL for MS ms of pure Python per
batch (a training step that does not release it): the read thread then
waits for the GIL (up to ``sys.getswitchinterval()`` per call).
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

from tensorprep import _native, train

SOURCE = "/work/shared/images"


class Files:
    """A folder's images as ImageFolder lists them (sorted classes, sorted files), read in ``__getitem__``."""

    def __init__(self, root):
        classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.items = [
            (os.path.join(root, c, f), label)
            for label, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c)))
        ]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        with open(path, "rb") as f:
            return f.read(), label


def make_folder(directory, source, count):
    """`count` photos of `source` (round robin) in two class folders."""
    photos = sorted(
        f for f in os.listdir(source) if f.lower().endswith((".jpg", ".jpeg")) and not f.startswith("truncated")
    )
    if not photos:
        raise SystemExit(f"no JPEG photos in {source}")
    for k in range(count):
        cls = os.path.join(directory, f"class{k % 2}")
        os.makedirs(cls, exist_ok=True)
        shutil.copyfile(os.path.join(source, photos[k % len(photos)]), os.path.join(cls, f"{k:05d}.jpg"))


def busy(seconds):
    """A training step that holds the GIL: pure Python for `seconds`."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def mean_seconds(f, items, rounds=5):
    t = time.perf_counter()
    for _ in range(rounds):
        for i in items:
            f(i)
    return (time.perf_counter() - t) / (rounds * len(items))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--photos", type=int, default=64)
    p.add_argument("--source", default=SOURCE)
    p.add_argument("--dir", default=None, help="where the folder is made (a temporary one by default)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--busy", type=float, default=0.0, help="ms of pure Python (holding the GIL) per batch")
    a = p.parse_args()
    tmp = None if a.dir else tempfile.TemporaryDirectory(prefix="tp-bench-datasets-")
    root = a.dir or tmp.name
    make_folder(root, a.source, a.photos)

    files = Files(root)
    folder, python = train.ImageFolder(root), train.FromPython(files)
    assert len(folder) == len(python) == a.photos
    datasets = {"ImageFolder": folder, "FromPython": python}
    # The same files as a stream (a generator), through the shuffle buffer.
    datasets["FromIterable"] = train.FromIterable(lambda: (files[i] for i in range(len(files))), length=a.photos)
    kw = dict(batch_size=a.batch, workers=a.workers, seed=0, output="numpy")
    times = {name: [] for name in datasets}
    for rep in range(a.repeat + 1):  # the first pass warms the page cache
        for name, data in datasets.items():
            # A loader per epoch, closed after it: a loader left open would
            # make its next epoch's batches while the other one is timed.
            t = time.perf_counter()
            with train.Loader(data, "imagenet-train", **kw) as loader:
                n = 0
                for _, labels in loader:
                    n += len(labels)
                    busy(a.busy / 1e3)
            assert n == a.photos
            if rep:
                times[name].append(time.perf_counter() - t)
    rate = {name: a.photos / statistics.median(t) for name, t in times.items()}

    print(f"{a.photos} photos from {a.source}, imagenet-train, {a.workers} workers, batch {a.batch}, "
          f"median of {a.repeat} epochs, {a.busy:g} ms of Python per batch (switch interval "
          f"{sys.getswitchinterval() * 1e3:g} ms)")
    for name, r in rate.items():
        print(f"  {name:12s} {r:8.1f} images/s")
    print(f"  FromPython / ImageFolder: {rate['FromPython'] / rate['ImageFolder']:.3f}x")
    print(f"  FromIterable / FromPython: {rate['FromIterable'] / rate['FromPython']:.3f}x")

    # The GIL's cost per sample.
    items = range(len(files))
    call = mean_seconds(files.__getitem__, items)
    read = mean_seconds(lambda i: _native.sample_content(python, i), items)
    per_sample = 1 / rate["FromPython"]
    print(f"  __getitem__ in Python:          {call * 1e6:8.1f} us per call")
    print(f"  a read through FromPython:      {read * 1e6:8.1f} us per sample (GIL taken, call, copy)")
    print(f"  the loader's time per sample:   {per_sample * 1e6:8.1f} us "
          f"({per_sample * a.batch * 1e3:.1f} ms per batch of {a.batch})")
    print(f"  GIL held by the read thread:    {read / per_sample:8.1%} of the epoch")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
