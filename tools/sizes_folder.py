#!/usr/bin/env python3
"""Makes a folder of JPEG photos of many different sizes, as real folders are:
random crops of the photos in SRC, re-encoded at quality 90 (needs Pillow).

    python3 tools/sizes_folder.py tests/fixtures /tmp/sizes   # 50 photos, 50 sizes
    tensorprep bench --preset imagenet-eval /tmp/sizes --baseline-decode --repeat 15
"""

import glob
import os
import random
import sys

from PIL import Image


def main(src, out, count=50, seed=7):
    random.seed(seed)
    photos = [f for f in sorted(glob.glob(os.path.join(src, "*.jpg")))
              if "truncated" not in f and "cmyk" not in f
              and min(Image.open(f).size) >= 300]
    os.makedirs(out, exist_ok=True)
    sizes = set()
    for i in range(count):
        im = Image.open(photos[i % len(photos)]).convert("RGB")
        w_max, h_max = im.size
        while True:
            w = random.randint(min(224, w_max), w_max)
            h = random.randint(min(224, h_max), h_max)
            if (w, h) not in sizes:
                break
        sizes.add((w, h))
        x, y = random.randint(0, w_max - w), random.randint(0, h_max - h)
        im.crop((x, y, x + w, y + h)).save(os.path.join(out, f"{i:02d}.jpg"), quality=90)
    print(f"{count} photos, {len(sizes)} sizes, in {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
