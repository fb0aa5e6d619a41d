"""Batches of images of different sizes from Python: padded bottom and right
with zeros to the batch's largest height and width rounded up to
``size_divisible``, as torchvision's ``GeneralizedRCNNTransform.batch_images``
pads (the fixture ``tests/fixtures/padded_batch/cases.json`` made with
torchvision 0.29.2), each image's own size in ``image_sizes``."""

import json

import numpy as np
import pytest

from conftest import fixture


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def image(i, h, w):
    """The fixture's image i as uint8 (H, W, 3): 1 + (37 y + 11 x + 101 c + 13 i) % 250."""
    y, x, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(3), indexing="ij")
    return (1 + (37 * y + 11 * x + 101 * c + 13 * i) % 250).astype(np.uint8)


class Sized:
    def __init__(self, sizes):
        self.sizes = sizes

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, i):
        return image(i, *self.sizes[i]), i


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def test_batches_are_padded_as_torchvision_batches_images(train):
    with open(fixture("padded_batch/cases.json")) as f:
        cases = json.load(f)["cases"]
    assert len(cases) == 4
    for case in cases:
        sizes = [tuple(s) for s in case["sizes"]]
        loader = train.Loader(train.FromPython(Sized(sizes)), train.Pipeline([train.ToTensor()]), len(sizes),
                              shuffle=False, shard=None, output="numpy", max_shape=(3, 100, 97),
                              size_divisible=case["size_divisible"])
        b = loader.next_batch()
        images = b["images"]
        assert list(images.shape) == case["shape"]
        assert b["image_sizes"] == sizes == b["batch"].image_sizes
        # ToTensor's 0-1 values back to the bytes: torchvision's batch, byte for byte.
        raw = np.rint(images * 255).astype("<f4")
        assert f"{fnv1a64(raw.tobytes()):016x}" == case["fnv1a64"]
        for k, (h, w) in enumerate(sizes):
            assert np.array_equal(raw[k, :, :h, :w], image(k, h, w).transpose(2, 0, 1))
            assert not raw[k, :, h:, :].any() and not raw[k, :, :, w:].any()
            assert b["pixel_mask"][k].sum() == h * w
        loader.close()


def test_size_divisible_is_checked(train):
    data = train.FromPython(Sized([(10, 10)]))
    with pytest.raises(Exception, match="size_divisible"):
        train.Loader(data, train.Pipeline([train.ToTensor()]), 1, shard=None, max_shape=(3, 10, 10), size_divisible=0)
    # A fixed output size is padded too: 24 x 24 to 32 x 32.
    loader = train.Loader(data, train.Pipeline([train.Resize((24, 24)), train.ToTensor()]), 1, shard=None,
                          output="numpy", size_divisible=32)
    b = loader.next_batch()
    assert b["images"].shape == (1, 3, 32, 32) and b["image_sizes"] == [(24, 24)]
    assert not b["images"][0, :, 24:, :].any() and b["images"][0, :, :24, :24].any()
    loader.close()
