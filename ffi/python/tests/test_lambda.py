"""train.Lambda: a Python function on each sample's decoded uint8 image, run
by the loader's decode threads with the sample's own numpy Generator: the
same batches for any worker count and after a resume, errors naming the
sample, and no deadlock with the GIL."""

import numpy as np
import pytest

from conftest import fixture, within

FOLDER = fixture("records", "folder")


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def collect(loader):
    return [(np.array(x, copy=True), np.array(y, copy=True)) for x, y in loader]


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, p) and np.array_equal(y, q) for (x, y), (p, q) in zip(a, b))


def pipeline(train, *ops):
    """A crop, the ops, the flip; uint8 HWC out (the pixels as they are)."""
    return train.Pipeline(
        [train.RandomResizedCrop(48), *ops, train.RandomHorizontalFlip()],
        dtype="uint8",
        layout="hwc",
        mean=(0, 0, 0),
        std=(1 / 255, 1 / 255, 1 / 255),
    )


def loader(train, p, workers=1, **kw):
    kw.setdefault("seed", 7)
    return train.Loader(train.ImageFolder(FOLDER), p, 4, workers, output="numpy", **kw)


def invert(image, rng):
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert isinstance(rng, np.random.Generator)
    return 255 - image


def noise(image, rng):
    return (image.astype(np.int16) + rng.integers(-20, 21, image.shape)).clip(0, 255).astype(np.uint8)


def test_an_inverting_lambda_equals_random_invert(train):
    ours = collect(loader(train, pipeline(train, train.Lambda(invert))))
    theirs = collect(loader(train, pipeline(train, train.RandomInvert(p=1.0))))
    assert len(ours) == 2 and same(ours, theirs)
    assert not same(ours, collect(loader(train, pipeline(train))))
    # A flipped (strided) view is taken as it is: two flips are none, as two
    # inversions are (at the same positions: the flip after them draws the same).
    flips = train.Lambda(lambda image, rng: image[:, ::-1])
    twice = pipeline(train, train.RandomInvert(p=1.0), train.RandomInvert(p=1.0))
    assert same(collect(loader(train, pipeline(train, flips, flips))), collect(loader(train, twice)))


def test_keyed_randomness_is_the_same_for_1_and_3_workers_and_after_a_resume(train):
    p = pipeline(train, train.Lambda(noise))
    one = loader(train, p, 1)
    epochs = [collect(one), collect(one)]
    assert not same(epochs[0], epochs[1]), "the key holds the epoch"
    assert not same(epochs[0], collect(loader(train, pipeline(train))))
    three = loader(train, p, 3)
    assert same(collect(three), epochs[0]) and same(collect(three), epochs[1])
    # Resumed after the second epoch's first batch: the rest of it.
    two = loader(train, p, 2)
    collect(two)
    first = next(iter(two))
    assert np.array_equal(first[0], epochs[1][0][0])
    state = two.state_dict()
    two.close()
    resumed = loader(train, p, 3)
    resumed.load_state_dict(state)
    assert same(collect(resumed), epochs[1][1:])


def test_an_exception_names_the_sample_and_is_the_cause(tp, train):
    def picky(image, rng):
        raise ValueError("not this one")

    l = loader(train, pipeline(train, train.Lambda(picky, name="picky")), 2, shuffle=False)
    with pytest.raises(tp.LoaderError) as caught:
        collect(l)
    message = str(caught.value)
    assert "(sample 0)" in message and "cat0.jpg" in message, message
    assert "Lambda(picky) failed: it raised ValueError: not this one" in message, message
    assert "test_lambda.py:" in message and "in picky" in message, message
    cause = caught.value.__cause__
    assert isinstance(cause, ValueError) and str(cause) == "not this one"


@pytest.mark.parametrize(
    "result, what",
    [
        (lambda image: image[:, :, :2], "shape (48, 48, 2) where HxWx3 was expected"),
        (lambda image: image[:, :, 0], "shape (48, 48) where HxWx3 was expected"),
        (lambda image: image.astype(np.float32), "dtype float32 (uint8 only)"),
        (lambda image: image.tolist(), "a list (a Lambda returns a uint8 numpy array HxWxC)"),
        (lambda image: image[:10], "returned a 48x10 image (shape (10, 48, 3)) where 48x48 was declared"),
    ],
)
def test_a_wrong_result_is_refused_naming_the_sample(tp, train, result, what):
    l = loader(train, pipeline(train, train.Lambda(lambda image, rng: result(image), name="bad")), shuffle=False)
    with pytest.raises(tp.InputError) as caught:
        collect(l)
    message = str(caught.value)
    assert "(sample 0)" in message and "Lambda(bad)" in message and what in message, message


def test_an_oversized_result_is_refused_before_it_is_copied(tp, train):
    import resource

    # A broadcast view costs nothing to make; copied, 6000 x 6000 x 3 is
    # 108 MB (peak memory would grow by about that much).
    side = 6_000
    huge = train.Lambda(lambda image, rng: np.broadcast_to(image[:1, :1], (side, side, 3)), name="huge")
    l = loader(train, pipeline(train, huge), shuffle=False)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    with pytest.raises(tp.InputError) as caught:
        collect(l)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    message = str(caught.value)
    assert "(sample 0)" in message and "Lambda(huge) failed" in message, message
    assert f"a {side}x{side} image (shape ({side}, {side}, 3)) where 48x48 was declared" in message, message
    assert grown < 50 * 1024, f"peak memory grew by {grown} KiB"


def test_a_declared_size_is_the_next_ops_input(tp, train):
    def plain(*ops):
        return train.Pipeline([train.RandomResizedCrop(48), *ops], dtype="uint8", layout="hwc", mean=(0, 0, 0), std=(1 / 255,) * 3)

    half = train.Lambda(lambda image, rng: image[::2, ::2], size=(24, 24))
    p = plain(half, train.RandomHorizontalFlip(p=0.0))
    assert p.output_shape == (24, 24, 3)
    got = collect(loader(train, p))
    full = collect(loader(train, plain()))
    assert same(got, [(x[:, ::2, ::2], y) for x, y in full])
    with pytest.raises(ValueError, match="size"):
        train.Lambda(invert, size=(0, 4))
    with pytest.raises(TypeError, match="function"):
        train.Lambda(3)


def test_a_function_of_one_argument_gets_no_generator(train):
    calls = []

    def one(image):
        calls.append(image.shape)
        return 255 - image

    ours = collect(loader(train, pipeline(train, train.Lambda(one))))
    assert calls and same(ours, collect(loader(train, pipeline(train, train.Lambda(invert)))))
    with_star = train.Lambda(lambda image, *rest: 255 - image if len(rest) == 1 else None)
    assert same(collect(loader(train, pipeline(train, with_star))), ours)
    # A second parameter with a default keeps it (it is not the generator);
    # one named rng gets the generator even with a default.
    seen = []

    def strength(image, amount=255):
        seen.append(amount)
        return amount - image

    assert same(collect(loader(train, pipeline(train, train.Lambda(strength)))), ours)
    assert set(seen) == {255}

    def named(image, rng=None):
        seen.append(type(rng).__name__)
        return 255 - image

    assert same(collect(loader(train, pipeline(train, train.Lambda(named)))), ours)
    assert "Generator" in seen


def test_describers_and_no_saving(train):
    op = train.Lambda(invert)
    assert repr(op) == "Lambda(invert)"
    assert repr(train.Lambda(invert, name="inv")) == "Lambda(inv)"
    assert "\n  Lambda(invert)\n" in repr(pipeline(train, op))
    with pytest.raises(ValueError, match="size"):
        train.Lambda(invert, size="other")


def test_torchvision_lambda_is_refused_with_a_pointer(train):
    class Lambda:
        def __init__(self, f):
            self.lambd = f

    with pytest.raises(ValueError, match="train.Lambda"):
        train.from_torchvision([Lambda(lambda x: x)])


# What user code might call on its own loader; each waited for the consumer,
# which waited for the thread making the call (a deadlock).
REENTRANT = {"next": next, "len": len, "state_dict": lambda l: l.state_dict()}


@pytest.mark.parametrize("call", sorted(REENTRANT))
def test_a_lambda_calling_its_loader_is_the_loaders_error_not_a_deadlock(tp, train, call):

    own = []

    def reenter(image, rng):
        if own:  # not while the loader is being made
            REENTRANT[call](own[0])
        return image

    l = loader(train, pipeline(train, train.Lambda(reenter, name="reenter")), 1, shuffle=False)
    own.append(l)
    with pytest.raises(tp.LoaderError) as caught:
        # The first epoch's first samples may be made before `own` holds it.
        within(30, lambda: [collect(l) for _ in range(2)])
    message = str(caught.value)
    assert "(sample " in message and "Lambda(reenter) failed: it raised RuntimeError" in message, message
    cause = caught.value.__cause__
    assert isinstance(cause, RuntimeError) and "a Lambda called a Loader" in str(cause), cause
    l.close()
