"""Several labels per sample from Python: ``(batch,)`` labels for one label a
sample, ``(batch, K)`` for K (CelebA's targets as torchvision 0.29.2 parses
them, tests/fixtures/celeba), int64 by default as torchvision's CelebA gives
them, a sample with another count refused by name, mix refused for K != 1,
and the same batches for any worker count and after a resume."""

import numpy as np
import pytest

from conftest import fixture

ROOT = fixture("celeba", "root")


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def pipeline(train):
    return train.Pipeline([train.RandomResizedCrop((16, 12)), train.RandomHorizontalFlip()])


def torchvision_parse():
    """(split/targets) -> [[values]], as the fixture script dumped torchvision's parse."""
    out = {}
    with open(fixture("celeba", "torchvision.txt")) as f:
        for line in f:
            if not line.startswith("#"):
                key, _name, *values = line.split()
                out.setdefault(key, []).append([int(v) for v in values])
    return out


def batches(loader):
    """Every batch of one epoch: (images, labels, indices), copied."""
    out = []
    while (b := loader.next_batch()) is not None:
        out.append((np.array(b["images"], copy=True), np.array(b["labels"], copy=True), b["indices"].copy()))
    return out


def test_celeba_targets_come_as_torchvision_gives_them(train):
    parsed = torchvision_parse()
    for target in ["attr", "identity", "bbox", "landmarks", "identity,bbox,attr"]:
        want = np.array(parsed[f"all/{target}"], dtype=np.int64)
        target_type = target.split(",") if "," in target else target
        data = train.CelebA(ROOT, split="all", target_type=target_type)
        loader = train.Loader(data, pipeline(train), 3, 2, seed=1, shard=None, output="numpy")
        got = batches(loader)
        assert [len(i) for _, _, i in got] == [3, 3, 1]
        for _, labels, indices in got:
            assert labels.dtype == np.int64, target
            # One target a sample: (batch,), as today; several: (batch, K).
            if want.shape[1] == 1:
                assert labels.shape == (len(indices),), target
                assert labels.tolist() == want[indices, 0].tolist(), target
            else:
                assert labels.shape == (len(indices), want.shape[1]), target
                assert labels.tolist() == want[indices].tolist(), target
        assert sorted(i for _, _, b in got for i in b.tolist()) == list(range(7))


def test_float_labels_need_float32_and_every_sample_the_same_count(tp, train):
    photo = train.CelebA(ROOT, split="all")[0][0]
    three = [[i, 0.5 * i, -1.0] for i in range(6)]
    data = train.Samples([(photo, labels) for labels in three])
    with pytest.raises(ValueError, match="float32"):
        next(iter(train.Loader(data, pipeline(train), 4, 1, seed=0, output="numpy")))
    loader = train.Loader(data, pipeline(train), 4, 1, seed=0, shuffle=False, output="numpy", labels="float32")
    _, labels = next(iter(loader))
    assert labels.dtype == np.float32 and labels.shape == (4, 3)
    assert labels.tolist() == three[:4]
    # Sample 2 has two labels among samples of three: refused by name.
    odd = train.Samples([(photo, labels[:2] if i == 2 else labels) for i, labels in enumerate(three)])
    loader = train.Loader(odd, pipeline(train), 4, 1, seed=0, shuffle=False, output="numpy", labels="float32")
    with pytest.raises(tp.DataError, match=r"sample 2\b.*2 labels, not the loader's 3"):
        next(iter(loader))
    # Skipped, its batch holds the others, each with its own labels.
    loader = train.Loader(
        odd, pipeline(train), 4, 1, seed=0, shuffle=False, output="numpy", labels="float32", skip_errors=True
    )
    b = loader.next_batch()
    assert b["indices"].tolist() == [0, 1, 3] and b["labels"].tolist() == [three[i] for i in (0, 1, 3)]
    # No labels at all: (batch, 0).
    bare = train.Samples([(photo, []) for _ in range(4)])
    _, labels = next(iter(train.Loader(bare, pipeline(train), 4, 1, seed=0, output="numpy")))
    assert labels.shape == (4, 0) and labels.dtype == np.int64


def test_mix_needs_one_label_a_sample(train):
    data = train.CelebA(ROOT, split="all", target_type="bbox")
    with pytest.raises(ValueError, match="4 labels"):
        train.Loader(data, "imagenet-train", 2, 1, seed=0, drop_last=True, mix=train.MixUp(num_classes=10))
    one = train.CelebA(ROOT, split="all", target_type="identity")
    train.Loader(one, "imagenet-train", 2, 1, seed=0, drop_last=True, mix=train.MixUp(num_classes=5000)).close()


def test_multilabel_batches_do_not_depend_on_workers_and_resume(train):
    data = train.CelebA(ROOT, split="all", target_type=["identity", "bbox", "attr"])
    runs = []
    for workers in (1, 3):
        loader = train.Loader(data, pipeline(train), 2, workers, seed=4, shard=None, output="numpy")
        epoch0 = batches(loader)
        iter(loader)  # on to the next epoch
        runs.append(epoch0 + batches(loader))
    one, three = runs
    assert len(one) == 8 and all(labels.shape == (len(i), 45) for _, labels, i in one)

    def same(a, b):
        return len(a) == len(b) and all(all(np.array_equal(x, y) for x, y in zip(p, q)) for p, q in zip(a, b))

    assert same(one, three)
    first = train.Loader(data, pipeline(train), 2, 1, seed=4, shard=None, output="numpy")
    head = [first.next_batch() for _ in range(2)]
    state = first.state_dict()
    first.close()
    del head
    resumed = train.Loader(data, pipeline(train), 2, 3, seed=4, shard=None, output="numpy")
    resumed.load_state_dict(state)
    assert same(batches(resumed), one[2:4])
    iter(resumed)  # on to the next epoch
    assert same(batches(resumed), one[4:])


class Widening:
    """Six photos labelled ``[i, i]``; once ``wide`` is set, samples 0 and 1
    have a third label (a probe of the first sample would then find 3)."""

    def __init__(self, photo):
        self.photo, self.wide = photo, False

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return self.photo, [float(i)] * (3 if self.wide and i < 2 else 2)


def test_a_resume_keeps_the_label_width_it_ran_with(train):
    """The state pins the labels per sample: ``set_epoch`` and
    ``load_state_dict`` run with them and never probe again (a resume must
    not change the batches' shape); the samples that no longer fit are the
    ones refused (skipped here)."""
    photo = train.CelebA(ROOT, split="all")[0][0]
    samples = Widening(photo)
    data = train.FromPython(samples)

    def make():
        return train.Loader(
            data, pipeline(train), 2, 1, seed=0, shuffle=False, output="numpy", labels="float32", skip_errors=True
        )

    def rest(loader):
        got = batches(loader)
        return [i for _, _, b in got for i in b.tolist()], {labels.shape[1:] for _, labels, _ in got}

    loader = make()
    assert loader.next_batch()["labels"].shape == (2, 2)
    state = loader.state_dict()
    assert state["label_width"] == 2
    samples.wide = True
    # A fresh loader probes the dataset as it is now: 3 labels.
    fresh = make()
    assert fresh.next_batch()["labels"].shape == (2, 3)
    fresh.close()
    # Resumed, the state's 2: samples 0 and 1 (3 labels now) are skipped.
    resumed = make()
    resumed.load_state_dict(state)
    assert rest(resumed) == ([2, 3, 4, 5], {(2,)})
    loader.set_epoch(1)
    assert rest(loader) == ([2, 3, 4, 5], {(2,)})
    assert loader.state_dict()["label_width"] == 2


class Unreadable:
    def __len__(self):
        return 3

    def __getitem__(self, i):
        raise OSError(f"record {i} is truncated")


def test_skipping_errors_a_dataset_none_of_whose_first_samples_reads_is_refused(tp, train):
    """The labels per sample come from the first sample that reads; when
    none does, skipping errors, the loader is refused (a guess would skip
    every sample for its count), the first sample's exception the cause."""
    data = train.FromPython(Unreadable())
    with pytest.raises(tp.DataError, match="none of the dataset's first 3 samples reads") as raised:
        train.Loader(data, pipeline(train), 2, 1, seed=0, output="numpy", skip_errors=True)
    assert isinstance(raised.value.__cause__, OSError) and "record 0" in str(raised.value.__cause__)
    # Given the width, it runs: two batches of 2 and 1, every sample skipped.
    loader = train.Loader(data, pipeline(train), 2, 1, seed=0, output="numpy", skip_errors=True, label_width=1)
    assert [len(i) for _, _, i in batches(loader)] == [0, 0]
