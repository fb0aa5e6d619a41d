"""tensorprep from Python against the usual Python paths, on the same files, as ratios.

    python ffi/python/bench.py                     # 1,000 photos, 2 workers
    python ffi/python/bench.py --images 200 --repeat 1   # a quick run
    python ffi/python/bench.py --photos DIR        # inference only, on your JPEGs

- Training: ``tensorprep.train.Loader`` (kept across epochs) (torchvision's ImageNet training
  transform, the ``imagenet-train`` preset) against PyTorch's ``DataLoader``
  over ``torchvision.datasets.ImageFolder`` with the same transform in PIL
  (``RandomResizedCrop(224)``, ``RandomHorizontalFlip``, ``ToTensor``,
  ``Normalize``), both with ``--workers`` workers (persistent), batch ``--batch``.
- Inference: the ``imagenet-eval`` plan (one call per image, and
  ``plan.batch`` over the workers) against Pillow + numpy and against
  torchvision's tensor path (``decode_jpeg`` + ``v2`` transforms on uint8
  tensors), on the files' bytes in memory.
- Reduced-size decoding: the same plan with ``fast="draft"`` against Pillow's
  ``draft("RGB", (256, 256))`` before the same transform (both decode at
  the DCT scale that keeps the 256 target), and ``fast=True`` against
  ``draft("RGB", (512, 512))`` (both keep twice the target).

The photos are made once from the repository's bundled ones (random crops
with their long side resized to ``--side``, JPEG quality 90, two classes) in
``--dir``. Each figure is the median of ``--repeat`` timed passes after a
warm-up pass (the loaders' epochs back to back, the inference contestants
interleaved pass by pass). torch and torchvision
are optional: without them their rows say so.
"""

import argparse
import importlib.util
import os
import random
import statistics
import sys
import tempfile
import time

import numpy as np
from PIL import Image

import tensorprep
from tensorprep import train

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.path.join(HERE, "..", "..", "tests", "fixtures")
SOURCES = ["sample.jpg", "sklearn_china.jpg", "exif_orient6_grace_hopper.jpg", "lxqt_butterfly_kenneth_wimer.jpg"]
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def make_photos(directory, count, side, seed=0):
    """`count` JPEGs of long side `side` in two class folders (kept if present)."""
    marker = os.path.join(directory, f".made-{count}-{side}")
    if os.path.exists(marker):
        return
    rng = random.Random(seed)
    sources = [Image.open(os.path.join(PHOTOS, s)).convert("RGB") for s in SOURCES]
    for k in range(count):
        img = sources[k % len(sources)]
        w, h = img.size
        cw, ch = rng.randint(w // 2, w), rng.randint(h // 2, h)
        x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
        crop = img.crop((x, y, x + cw, y + ch))
        scale = side / max(cw, ch)
        crop = crop.resize((max(1, round(cw * scale)), max(1, round(ch * scale))), Image.BILINEAR)
        folder = os.path.join(directory, f"class{k % 2}")
        os.makedirs(folder, exist_ok=True)
        crop.save(os.path.join(folder, f"{k:05d}.jpg"), quality=90)
    open(marker, "w").close()


def timed(passes, contestants, interleave=True):
    """Contestant name -> median seconds of `passes` passes after a warm-up
    pass; interleaved pass by pass, or each contestant's passes back to back."""
    times = {name: [] for name in contestants}
    order = [(p, name) for p in range(passes + 1) for name in contestants]
    if not interleave:
        order.sort(key=lambda pn: list(contestants).index(pn[1]))
    for p, name in order:
        t = time.perf_counter()
        contestants[name]()
        if p > 0:
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(v) for name, v in times.items()}


def pillow_eval(data, draft=None):
    """torchvision's eval transform written with Pillow + numpy (the tests'
    reference), after ``img.draft("RGB", (draft, draft))`` if ``draft``."""
    import io

    img = Image.open(io.BytesIO(data))
    if draft:
        img.draft("RGB", (draft, draft))
    img = img.convert("RGB")
    w, h = img.size
    size = (256, int(256 * h / w)) if w <= h else (int(256 * w / h), 256)
    img = img.resize(size, Image.BILINEAR)
    w, h = img.size
    left, top = int(round((w - 224) / 2.0)), int(round((h - 224) / 2.0))
    x = np.asarray(img.crop((left, top, left + 224, top + 224)), dtype=np.uint8).astype(np.float32) / np.float32(255)
    return np.ascontiguousarray(((x - MEAN) / STD).transpose(2, 0, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--side", type=int, default=500, help="long side of the made photos")
    ap.add_argument("--dir", default=None, help="where the photos are made (default: a temp dir)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--photos", default=None,
                    help="time the inference rows on the JPEGs in this folder (recursively); no training rows")
    args = ap.parse_args()

    if args.photos:
        directory = args.photos
    else:
        directory = args.dir or os.path.join(tempfile.gettempdir(), f"tensorprep-bench-{args.images}-{args.side}")
        make_photos(directory, args.images, args.side)
    have_torch = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("torchvision") is not None
    print(f"tensorprep {tensorprep.__version__} (decoders: {', '.join(tensorprep.decoders)}), python {sys.version.split()[0]}, "
          f"numpy {np.__version__}, Pillow {Image.__version__}", end="")
    if have_torch:
        import torch
        import torchvision

        torch.set_num_threads(1)
        print(f", torch {torch.__version__}, torchvision {torchvision.__version__}")
    else:
        print(" (torch/torchvision not installed: their rows are skipped)")
    files = sorted(os.path.join(root, f) for root, _, fs in os.walk(directory) for f in fs
                   if f.lower().endswith((".jpg", ".jpeg")))
    if args.photos:
        print(f"{len(files)} JPEGs in {directory}; {args.workers} workers, batch {args.batch}; "
              f"median of {args.repeat} passes after a warm-up\n")
    else:
        print(f"{args.images} photos of long side {args.side} in {directory}; {args.workers} workers, batch {args.batch}; "
              f"median of {args.repeat} passes after a warm-up\n")
        train_rows(args, directory, have_torch)
    inference_rows(args, files, have_torch)


def train_rows(args, directory, have_torch):
    """The training loader against PyTorch's DataLoader, epochs back to back."""

    n = args.images
    data = train.ImageFolder(directory)
    loader = None

    def tensorprep_epoch():
        # One loader kept across epochs, as in training (its threads run on
        # into the next epoch: so the contestants' epochs run back to back,
        # not interleaved, lest it work ahead while the other one runs).
        nonlocal loader
        if loader is None:
            loader = train.Loader(data, "imagenet-train", args.batch, args.workers, args.seed, shard=None, output="numpy")
        count = 0
        for images, labels in loader:
            count += len(labels)
        assert count == n

    contestants = {"tensorprep Loader": tensorprep_epoch}
    if have_torch:
        import torch
        from torchvision import datasets, transforms

        tf = transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(MEAN.tolist(), STD.tolist()),
        ])
        dl = torch.utils.data.DataLoader(
            datasets.ImageFolder(directory, tf), batch_size=args.batch, shuffle=True,
            num_workers=args.workers, persistent_workers=args.workers > 0,
        )

        def torch_epoch():
            count = 0
            for images, labels in dl:
                count += len(labels)
            assert count == n

        contestants["torch DataLoader"] = torch_epoch
    t = timed(args.repeat, contestants, interleave=False)
    loader.close()
    print("training (RandomResizedCrop(224) + flip + normalize, float32 NCHW batches; epochs back to back):")
    for name, s in t.items():
        print(f"  {name:<34} {n / s:9.1f} images/s")
    if have_torch:
        print(f"  ratio tensorprep / torch DataLoader: {t['torch DataLoader'] / t['tensorprep Loader']:.2f}x")


def inference_rows(args, files, have_torch):
    """The imagenet-eval plan against Pillow + numpy and torchvision's tensor
    path, interleaved pass by pass; then its reduced-size decodes against
    Pillow's draft()."""
    graph = tensorprep.Graph.preset("imagenet-eval")
    plan = graph.compile("jpeg")
    blobs = []
    for f in files:
        data = open(f, "rb").read()
        try:  # a file either side refuses (truncated, say) is left out of every row
            plan(data)
            pillow_eval(data)
        except Exception as e:  # noqa: BLE001 - reported, then skipped
            print(f"skipped {f}: {e}")
            continue
        blobs.append(data)
    n = len(blobs)
    # Both tensorprep contestants write into arrays made once (`out=`).
    out = np.empty((3, 224, 224), dtype=np.float32)
    outs = np.empty((args.batch, 3, 224, 224), dtype=np.float32)

    def tp_one():
        for b in blobs:
            plan(b, out=out)

    def tp_batch():
        for i in range(0, len(blobs), args.batch):
            chunk = blobs[i:i + args.batch]
            plan.batch(chunk, threads=args.workers, out=outs[:len(chunk)])

    def pil_numpy():
        for b in blobs:
            pillow_eval(b)

    contestants = {"tensorprep plan, 1 thread": tp_one, f"tensorprep plan.batch, {args.workers} threads": tp_batch,
                   "Pillow + numpy": pil_numpy}
    if have_torch:
        import torch
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.transforms import v2

        tv = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True),
                         v2.Normalize(MEAN.tolist(), STD.tolist())])
        tensors = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]

        def torchvision_tensor():
            for x in tensors:
                tv(decode_jpeg(x, mode=ImageReadMode.RGB))

        contestants["torchvision decode_jpeg + v2"] = torchvision_tensor
    t = timed(args.repeat, contestants)
    print("\ninference (imagenet-eval: Resize(256) + CenterCrop(224) + normalize, bytes in memory):")
    for name, s in t.items():
        print(f"  {name:<34} {n / s:9.1f} images/s")
    one = t["tensorprep plan, 1 thread"]
    print(f"  ratio tensorprep plan / Pillow + numpy: {t['Pillow + numpy'] / one:.2f}x (one thread each)")
    if have_torch:
        print(f"  ratio tensorprep plan / torchvision tensor path: {t['torchvision decode_jpeg + v2'] / one:.2f}x (one thread each)")
    print(f"  ratio plan.batch ({args.workers} threads) / plan: {one / t[f'tensorprep plan.batch, {args.workers} threads']:.2f}x")

    if "libjpeg-turbo" not in tensorprep.decoders:
        print("\nreduced-size decoding: skipped (this build has no libjpeg-turbo)")
        return
    draft = graph.compile("jpeg", fast="draft")
    fast = graph.compile("jpeg", fast=True)
    contestants = {
        'tensorprep plan, fast="draft"': lambda: [draft(b, out=out) for b in blobs],
        'Pillow draft((256, 256)) + numpy': lambda: [pillow_eval(b, 256) for b in blobs],
        "tensorprep plan, fast=True": lambda: [fast(b, out=out) for b in blobs],
        "Pillow draft((512, 512)) + numpy": lambda: [pillow_eval(b, 512) for b in blobs],
    }
    t = timed(args.repeat, contestants)
    print("\nreduced-size decoding (the same transform, one thread each):")
    for name, s in t.items():
        print(f"  {name:<34} {n / s:9.1f} images/s")
    names = list(contestants)
    print(f"  ratio fast=\"draft\" / Pillow draft((256, 256)): {t[names[1]] / t[names[0]]:.2f}x")
    print(f"  ratio fast=True / Pillow draft((512, 512)): {t[names[3]] / t[names[2]]:.2f}x")


if __name__ == "__main__":
    main()
