"""train.FromIterable: the user's own iterable Python datasets (generator
factories) through the loader's shuffle buffer: the folder's batches in its
order, the same batches for any thread count, exact resume, errors naming the
position, no hang on drop."""

import os
import threading
import time
import weakref

import numpy as np
import pytest

from conftest import fixture, until, within

FOLDER = fixture("records", "folder")


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def folder_items(root):
    """(file bytes, label) as torchvision's ImageFolder lists them."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    items = []
    for label, c in enumerate(classes):
        for f in sorted(os.listdir(os.path.join(root, c))):
            with open(os.path.join(root, c, f), "rb") as fh:
                items.append((fh.read(), label))
    return items


def numbers(n, fail_at=None, calls=None):
    """n small RGB arrays, item k labelled k (a generator function)."""

    def gen():
        if calls is not None:
            calls.append(1)
        for k in range(n):
            if k == fail_at:
                raise KeyError(f"item {k} went missing")
            image = ((np.arange(12 * 16 * 3).reshape(12, 16, 3) * (k % 5 + 1) + 37 * k) % 256).astype(np.uint8)
            yield image, k

    return gen


def collect(loader):
    return [(np.array(x, copy=True), np.array(y, copy=True), np.array(loader.last_indices)) for x, y in loader]


def same(a, b):
    return len(a) == len(b) and all(
        np.array_equal(x, p) and np.array_equal(y, q) and np.array_equal(i, j) for (x, y, i), (p, q, j) in zip(a, b)
    )


def pipeline(train):
    return train.Pipeline([train.RandomResizedCrop((6, 8)), train.RandomHorizontalFlip(), train.ToTensor()])


def test_shuffle_off_gives_the_iterators_order_and_the_folders_batches(train):
    items = folder_items(FOLDER)
    data = train.FromIterable(lambda: iter(items))
    folder = train.ImageFolder(FOLDER)
    assert len(data) == len(folder) == 6  # counted
    for i in range(6):
        assert data[i] == folder[i]
    for workers in (1, 2):
        kw = dict(batch_size=4, seed=5, output="numpy", num_workers=workers, shuffle=False)
        ours = train.Loader(data, "imagenet-trivialaugment", **kw)
        theirs = train.Loader(folder, "imagenet-trivialaugment", **kw)
        a = collect(ours) + collect(ours)  # two epochs
        b = collect(theirs) + collect(theirs)
        assert len(a) == 4 and same(a, b)


def test_the_buffer_shuffles_and_any_thread_count_gives_the_same_batches(train):
    data = train.FromIterable(numbers(30), length=30, buffer=6)

    def run(workers, read_workers):
        loader = train.Loader(
            data, pipeline(train), 4, workers, seed=3, output="numpy", read_workers=read_workers
        )
        return collect(loader) + collect(loader)

    one = run(1, 1)
    labels = np.concatenate([y for _, y, _ in one[:8]])
    assert sorted(labels.tolist()) == list(range(30))
    assert labels.tolist() != list(range(30)), "shuffled by the buffer"
    assert labels.tolist() != np.concatenate([y for _, y, _ in one[8:]]).tolist(), "each epoch anew"
    for w, r in [(3, 1), (1, 3), (3, 3)]:
        assert same(run(w, r), one), (w, r)


def test_resume_is_exact_also_from_two_shards_to_one(train):
    data = train.FromIterable(numbers(30), length=30, buffer=6)

    def loader(batch, **kw):
        return train.Loader(data, pipeline(train), batch, 2, seed=9, output="numpy", **kw)

    whole = collect(loader(4))
    first = loader(4)
    it = iter(first)
    for _ in range(3):
        next(it)
    state = first.state_dict()
    resumed = loader(4)
    resumed.load_state_dict(state)
    assert same(collect(resumed), whole[3:])
    # Two ranks of batch 2 for 3 steps, then one of batch 4.
    ranks = [loader(2, shard=(r, 2)) for r in range(2)]
    steps = [[next(iter_) for _ in range(3)] for iter_ in map(iter, ranks)]
    for s in range(3):
        both = sorted(np.concatenate([steps[0][s][1], steps[1][s][1]]).tolist())
        assert both == sorted(whole[s][1].tolist())
    one = loader(4)
    one.load_state_dict(ranks[0].state_dict())
    assert same(collect(one), whole[3:])


def test_a_short_iterator_or_an_exception_names_the_position(tp, train):
    short = train.FromIterable(numbers(10), length=13, buffer=4)
    with pytest.raises(tp.DataError, match="position 10: the stream ended after 10 samples, the epoch has 13"):
        collect(train.Loader(short, pipeline(train), 4, 2, output="numpy"))
    raising = train.FromIterable(numbers(20, fail_at=7), length=20, buffer=4)
    with pytest.raises(tp.DataError) as caught:
        collect(train.Loader(raising, pipeline(train), 4, 2, output="numpy", shuffle=False))
    message = str(caught.value)
    assert "sample 7" in message and "item 7" in message, message
    assert "the iterator raised KeyError" in message and "went missing" in message, message
    assert "test_from_iterable.py:" in message and "in gen" in message, message
    assert isinstance(caught.value.__cause__, KeyError)
    with pytest.raises(tp.DataError, match="returned a int where \\(image, label\\)"):
        train.FromIterable(lambda: iter([1, 2]))
    with pytest.raises(ValueError, match="function returning an iterator"):
        train.FromIterable([(b"", 0)])
    with pytest.raises(tp.LoaderError, match="weights do not apply"):
        train.Loader(train.FromIterable(numbers(4)), pipeline(train), 2, weights=[1.0] * 4)


def test_fn_is_called_once_per_epoch_and_a_dropped_loader_does_not_hang(train):
    calls = []
    data = train.FromIterable(numbers(40, calls=calls), length=40, buffer=8)
    loader = train.Loader(data, pipeline(train), 4, 2, seed=1, output="numpy", read_workers=3, epochs=2)
    assert len(collect(loader)) == 10 and len(collect(loader)) == 10 and len(calls) == 2

    def slow():
        for item in numbers(10_000)():
            time.sleep(0.001)
            yield item

    loader = train.Loader(train.FromIterable(slow, length=10_000, buffer=8), pipeline(train), 4, 2, output="numpy")
    next(iter(loader))
    alive = weakref.ref(loader)
    done = threading.Event()

    def drop():
        nonlocal loader
        del loader
        done.set()

    threading.Thread(target=drop).start()
    assert done.wait(10), "dropping the loader mid-stream hung"
    assert alive() is None, "the loader was dropped (its threads joined)"


def test_several_labels_per_sample_need_label_width(tp, train):
    def triples():
        for image, k in numbers(8)():
            yield image, [k, 2 * k, 3 * k]

    # A stream is not read ahead to learn its label count: one label is
    # assumed, and a sample with three is an error naming it.
    data = train.FromIterable(triples, length=8, buffer=1)
    with pytest.raises(tp.DataError, match="3 labels, not the loader's 1"):
        collect(train.Loader(data, pipeline(train), 4, 1, output="numpy", shuffle=False))
    got = collect(train.Loader(data, pipeline(train), 4, 2, output="numpy", shuffle=False, label_width=3))
    labels = np.concatenate([y for _, y, _ in got])
    assert labels.shape == (8, 3) and labels.dtype == np.int64
    assert (labels == np.array([[k, 2 * k, 3 * k] for k in range(8)])).all()


@pytest.mark.parametrize("call", ["next", "len", "state_dict"])
def test_an_iterator_calling_its_loader_is_the_loaders_error_not_a_deadlock(tp, train, call):

    import threading

    calls = {"next": next, "len": len, "state_dict": lambda l: l.state_dict()}
    own = []
    made = threading.Event()

    def reentering():
        for k, item in enumerate(numbers(16)()):
            # On the loader's read thread (not while the loader is being
            # made, on this one), once `own` holds the loader: its read
            # threads start at once and may reach item 3 before that.
            if k == 3 and threading.current_thread() is not threading.main_thread():
                assert made.wait(30)
                calls[call](own[0])
            yield item

    data = train.FromIterable(reentering, length=16, buffer=4)
    loader = train.Loader(data, pipeline(train), 4, 2, seed=1, output="numpy", shuffle=False)
    own.append(loader)
    made.set()
    with pytest.raises(tp.DataError) as caught:
        within(30, lambda: [collect(loader) for _ in range(2)])
    message = str(caught.value)
    assert "item 3" in message and "the iterator raised RuntimeError" in message, message
    cause = caught.value.__cause__
    assert isinstance(cause, RuntimeError), cause
    assert "a FromIterable dataset's function or iterator called a Loader" in str(cause), cause
    loader.close()


def test_a_factory_holding_its_loader_is_a_cycle_gc_frees(train):
    import gc
    import os

    def threads():
        return len(os.listdir("/proc/self/task"))

    class Factory:
        loader = None

        def __call__(self):
            return numbers(8)()

    gc.collect()
    before = threads()
    factory = Factory()
    # One epoch: no next one read (a frame holding `factory`) at the collection.
    data = train.FromIterable(factory, length=8)
    factory.loader = train.Loader(data, pipeline(train), 4, 2, output="numpy", epochs=1)
    assert len(collect(factory.loader)) == 2 and threads() > before
    alive = weakref.ref(factory.loader)
    del factory, data
    gc.collect()
    assert alive() is None, "the cycle factory -> loader -> factory was freed"
    # Not more than before (a thread of an earlier test may end meanwhile).
    # A collection run on one of the loader's own threads drops it there:
    # that thread is let go, not joined, and ends once its call returns.
    assert until(lambda: threads() <= before), "and the loader's threads ended"
