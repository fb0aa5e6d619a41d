"""Loader callbacks from Python (MindSpore's DSCallback points): their order
and numbers, ctx.set_pipeline from the next epoch on (any worker count,
kept by state_dict), and their failures."""

import numpy as np
import pytest

from conftest import fixture, until


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def data(train):
    # im2rec's six images: 3 batches of 2 per epoch.
    return train.RecordIO(fixture("records", "folder.rec"))


def pipeline(train):
    return train.Pipeline([train.RandomResizedCrop(48), train.RandomHorizontalFlip()])


def flipped(train):
    """Another augmentation, the same output: a vertical flip always."""
    return train.Pipeline([train.RandomResizedCrop(48), train.RandomHorizontalFlip(), train.RandomVerticalFlip(1.0)])


def loader(train, workers, callbacks=None, p=None):
    return train.Loader(data(train), p or pipeline(train), 2, workers, seed=5, output="numpy", callbacks=callbacks)


def collect(loader):
    return [(np.array(x, copy=True), np.array(y, copy=True)) for x, y in loader]


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, p) and np.array_equal(y, q) for (x, y), (p, q) in zip(a, b))


class Log:
    """Every point with its numbers (MindSpore's names: ds_ prefixed)."""

    def __init__(self, log):
        self.log = log

    def ds_epoch_begin(self, ctx):
        self.log.append(("epoch_begin", ctx.epoch, ctx.step, ctx.step_in_epoch))

    def ds_epoch_end(self, ctx):
        self.log.append(("epoch_end", ctx.epoch, ctx.step, ctx.step_in_epoch))

    def ds_step_begin(self, ctx):
        assert (ctx.cur_epoch_num, ctx.cur_step_num, ctx.cur_step_num_in_epoch) == (
            ctx.epoch + 1,
            ctx.step + 1,
            ctx.step_in_epoch + 1,
        )
        self.log.append(("step_begin", ctx.epoch, ctx.step, ctx.step_in_epoch))

    def ds_step_end(self, ctx):
        self.log.append(("step_end", ctx.epoch, ctx.step, ctx.step_in_epoch))


def test_callbacks_fire_in_order_with_their_numbers(train):
    expected = []
    for e in range(2):
        expected.append(("epoch_begin", e, 3 * e, 0))
        for k in range(3):
            expected += [("step_begin", e, 3 * e + k, k), ("batch", e, k), ("step_end", e, 3 * e + k, k)]
        expected.append(("epoch_end", e, 3 * e + 3, 3))
    for workers in (1, 3):
        log = []
        run = loader(train, workers, [Log(log)])
        for _ in range(2):
            for _x, _y in run:
                log.append(("batch", run.epoch, log[-1][3]))
        assert log == expected, workers


class Changer:
    """Sets `new` at epoch 0's end (plain names)."""

    def __init__(self, new):
        self.new = new
        self.refused = None

    def epoch_end(self, ctx):
        if ctx.epoch == 0:
            try:
                ctx.set_pipeline(self.new)
            except ValueError as e:
                self.refused = e


def test_a_pipeline_set_at_an_epoch_s_end_augments_the_next_epochs(train):
    fresh = loader(train, 2, p=flipped(train))
    fresh.set_epoch(1)
    expected = collect(fresh) + collect(fresh)  # epochs 1 and 2, the same keys
    base = loader(train, 2)
    base.set_epoch(1)
    assert not same(collect(base), expected[:3]), "the new pipeline gives other tensors"
    first = collect(loader(train, 2))
    for workers in (1, 3):
        run = loader(train, workers, [Changer(flipped(train))])
        epochs = [collect(run), collect(run), collect(run)]
        assert same(epochs[0], first), workers
        assert same(epochs[1] + epochs[2], expected), workers
        changes = run.state_dict()["pipelines"]
        assert [e for e, _ in changes] == [1] and changes[0][1] == flipped(train)


def test_a_resume_after_the_change_equals_the_uninterrupted_run(tp, train):
    whole = loader(train, 2, [Changer(flipped(train))])
    epochs = [collect(whole), collect(whole), collect(whole)]
    first = loader(train, 1, [Changer(flipped(train))])
    collect(first), collect(first)
    it = iter(first)
    next(it)  # epoch 2's first batch
    state = first.state_dict()
    assert (state["epoch"], state["batches"]) == (2, 1) and len(state["pipelines"]) == 1
    first.close()
    # No callback in the resumed loader: the state alone carries the change.
    second = loader(train, 3)
    second.load_state_dict(state)
    assert same(collect(second), epochs[2][1:])
    # Without the change (or with another) the state is refused: it records
    # its pipelines, and the first pipeline's batches would be wrong data.
    plain = loader(train, 3)
    for changed in ({k: v for k, v in state.items() if k != "pipelines"}, dict(state, pipelines=[(1, pipeline(train))])):
        with pytest.raises(tp.LoaderError, match="pipelines"):
            plain.load_state_dict(changed)
    # The loader goes on where it was (epoch 0's start).
    assert same(collect(plain), epochs[0])


def test_a_pipeline_of_another_output_is_refused(train):
    other = train.Pipeline([train.RandomResizedCrop(64), train.RandomHorizontalFlip()])
    changer = Changer(other)
    run = loader(train, 2, [changer])
    collect(run)
    assert isinstance(changer.refused, ValueError) and "must stay" in str(changer.refused)
    assert "pipelines" not in run.state_dict()
    # Nor in a state.
    state = dict(run.state_dict(), pipelines=[(1, other)])
    with pytest.raises(ValueError, match="must stay"):
        run.load_state_dict(state)


class Raising:
    def step_begin(self, ctx):
        if ctx.step_in_epoch == 1:
            raise KeyError("no such augmentation")


class Reentrant:
    def __init__(self):
        self.loader = None

    def step_begin(self, ctx):
        self.loader.state_dict()


def test_a_callback_s_exception_is_the_loader_s_error(tp, train):
    run = loader(train, 3, [Raising()])
    it = iter(run)
    next(it)
    with pytest.raises(tp.LoaderError, match="step_begin failed") as raised:
        next(it)
    assert isinstance(raised.value.__cause__, KeyError)
    # The epoch is over; the next one runs, and raises at the same step again.
    with pytest.raises(tp.LoaderError, match="epoch 1, step 1"):
        collect(run)
    assert run.epoch == 1
    assert len(collect(loader(train, 3))) == 3
    # A callback calling its own loader is refused, not a deadlock.
    cb = Reentrant()
    run = loader(train, 2, [cb])
    cb.loader = run
    with pytest.raises(tp.LoaderError, match="cannot call its loader"):
        next(iter(run))
    # An object with no callback method is refused at once.
    with pytest.raises(TypeError, match="epoch_begin"):
        loader(train, 2, [object()])


def test_a_callback_holding_its_loader_is_a_cycle_gc_frees(train):
    import gc
    import os
    import weakref

    def threads():
        return len(os.listdir("/proc/self/task"))

    class Holding:
        def epoch_end(self, ctx):
            self.seen = len(self.loader.last_indices)

    gc.collect()
    before = threads()
    callback = Holding()
    callback.loader = loader(train, 2, callbacks=[callback])
    assert threads() > before, "the loader's threads run"
    collect(callback.loader)
    alive = weakref.ref(callback.loader)
    del callback
    gc.collect()
    assert alive() is None, "the cycle callback -> loader -> callback was freed"
    # Not more than before (a thread of an earlier test may end meanwhile).
    # A collection run on one of the loader's own threads drops it there:
    # that thread is let go, not joined, and ends once its call returns.
    assert until(lambda: threads() <= before), "and the loader's threads ended"


def test_a_pickled_state_with_a_change_resumes_exactly(train):
    # Users checkpoint with torch.save(loader.state_dict()): pickle.
    import pickle

    whole = loader(train, 2, [Changer(flipped(train))])
    epochs = [collect(whole), collect(whole), collect(whole)]
    first = loader(train, 1, [Changer(flipped(train))])
    collect(first), collect(first)
    it = iter(first)
    next(it)  # epoch 2's first batch
    state = first.state_dict()
    saved = pickle.dumps(state)
    first.close()
    loaded = pickle.loads(saved)
    assert loaded["changes_hash"] == state["changes_hash"] != 0
    assert loaded["pipelines"] == state["pipelines"]
    # No callback in the resumed loader: the pickled state carries the change.
    second = loader(train, 3)
    second.load_state_dict(loaded)
    # The resumed loader's state pickles again (the loaded pipeline's recipe).
    again = pickle.loads(pickle.dumps(second.state_dict()))
    assert same(collect(second), epochs[2][1:])
    third = loader(train, 2)
    third.load_state_dict(again)
    assert again["changes_hash"] == state["changes_hash"]
    assert same(collect(third), epochs[2][1:])


def _lambda_negative(image):
    return 255 - image


# Each constructor's required arguments (a new constructor with one fails
# here until it is given), and some non-default ones.
ARGUMENTS = {
    "RandomResizedCrop": ((24,), {"scale": (0.3, 0.9), "interpolation": "bicubic"}),
    "RandomCrop": ((24,), {"padding": 3, "fill": (1, 2, 3)}),
    "RandomHorizontalFlip": ((0.7,), {}),
    "Resize": ((30,), {"max_size": 40}),
    "CenterCrop": (((20, 24),), {}),
    "ColorJitter": ((0.4,), {"hue": (-0.1, 0.2)}),
    "GaussianBlur": ((5,), {"sigma": (0.5, 1.5)}),
    "RandomRotation": ((15,), {"expand": True, "fill": 7}),
    "RandomAffine": ((10,), {"translate": (0.1, 0.2), "scale": (0.9, 1.1), "shear": 5}),
    "RandomPerspective": ((0.3,), {"p": 0.9}),
    "RandomPosterize": ((4,), {}),
    "RandomSolarize": ((128,), {}),
    "RandomAdjustSharpness": ((2.0,), {}),
    "AutoAugment": (("cifar10",), {}),
    "RandAugment": ((3, 7), {}),
    "AugMix": ((), {"severity": 2, "all_ops": False}),
    "RandomIoUCrop": ((0.5,), {"sampler_options": [0.0, 0.5], "max_rounds": 7}),
    "RandomZoomOut": ((9,), {"side_range": (1.0, 2.0), "p": 0.8}),
    "ScaleJitter": (((32, 40),), {"scale_range": (0.5, 1.5)}),
    "RandomShortestSize": (([20, 28],), {"max_size": 40}),
    "FixedSizeCrop": (((20, 24),), {"fill": 5}),
    "RandomPhotometricDistort": ((), {"p": 0.9}),
    "SanitizeBoundingBoxes": ((), {"min_size": 2.0}),
    "ConvertBoundingBoxFormat": (("cxcywh",), {}),
}

# The augmentations that need the sample's boxes (a classification dataset has none).
NEEDS_BOXES = {"RandomIoUCrop"}


def _nested(train):
    return [train.ColorJitter(0.3), train.RandomHorizontalFlip(1.0)]


def test_every_augmentation_pickles_as_an_equal_one(tp, train):
    import pickle

    from tensorprep import _native

    def made(name):
        if name in ("RandomApply", "RandomChoice", "RandomOrder"):
            return getattr(train, name)(_nested(train))
        args, kwargs = ARGUMENTS.get(name, ((), {}))
        return getattr(_native, name)(*args, **kwargs)

    def first_batch(augment):
        p = train.Pipeline([augment, train.Resize((24, 24)), train.ToTensor(), train.Normalize([0.5], [0.25])])
        return collect(train.Loader(data(train), p, 6, 1, seed=9, output="numpy"))[0][0]

    augments = [(name, made(name)) for name in _native.AUGMENTATIONS]
    augments.append(("Lambda", train.Lambda(_lambda_negative, size="same")))
    for name, augment in augments:
        back = pickle.loads(pickle.dumps(augment))
        assert repr(back) == repr(augment), name
        if name not in NEEDS_BOXES:
            assert np.array_equal(first_batch(back), first_batch(augment)), name
    # Pipelines of every kind, with the steps after ToTensor.
    pipelines = [
        train.Pipeline(
            [augment for _, augment in augments[:4]] + [train.ToTensor(), train.RandomErasing(0.5, value="random")],
            dtype="float16",
            layout="hwc",
            fast="draft",
            erasing=[train.RandomErasing(0.3, value=(0.1, 0.2, 0.3))],
        ),
        train.Pipeline([train.RandomResizedCrop(16)], mean=(0.1, 0.2, 0.3), std=(0.3, 0.2, 0.1), exif=True),
        train.Pipeline.preset("imagenet-augmix"),
        train.Pipeline.from_graph(tp.Graph.preset("imagenet-eval")),
    ]
    for p in pipelines:
        back = pickle.loads(pickle.dumps(p))
        assert back == p and repr(back) == repr(p)


def test_a_lambda_pickles_only_if_its_function_does(train):
    import pickle

    with pytest.raises((pickle.PicklingError, AttributeError), match="<lambda>"):
        pickle.dumps(train.Pipeline([train.Lambda(lambda image: image)]))


RESUME_ELSEWHERE = """
import pickle, sys
import numpy as np
from tensorprep import train
with open(sys.argv[1], "rb") as f:
    state = pickle.load(f)
p = train.Pipeline([train.RandomResizedCrop(48), train.RandomHorizontalFlip()])
run = train.Loader(train.RecordIO(sys.argv[2]), p, 2, 2, seed=5, output="numpy")
run.load_state_dict(state)
np.savez(sys.argv[3], *[np.array(x) for x, _ in run])
"""


def test_a_pickled_state_with_a_change_resumes_in_another_process(train, tmp_path):
    import pickle
    import subprocess
    import sys

    whole = loader(train, 2, [Changer(flipped(train))])
    epochs = [collect(whole), collect(whole), collect(whole)]
    first = loader(train, 1, [Changer(flipped(train))])
    collect(first), collect(first)
    next(iter(first))  # epoch 2's first batch
    (tmp_path / "state.pkl").write_bytes(pickle.dumps(first.state_dict()))
    first.close()
    out = tmp_path / "batches.npz"
    subprocess.run(
        [sys.executable, "-c", RESUME_ELSEWHERE, str(tmp_path / "state.pkl"), fixture("records", "folder.rec"), str(out)],
        check=True,
        timeout=120,
    )
    with np.load(out) as batches:
        resumed = [batches[f"arr_{k}"] for k in range(len(batches.files))]
    expected = [x for x, _ in epochs[2][1:]]
    assert len(resumed) == len(expected) == 2
    assert all(np.array_equal(a, b) for a, b in zip(resumed, expected))
