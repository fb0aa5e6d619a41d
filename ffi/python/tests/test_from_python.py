"""train.FromPython: the user's own map-style Python datasets (and PyTorch
datasets of PIL images through from_torch_dataset) read by the loader's
threads: the folder's batches, errors naming the sample, no deadlock."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from conftest import fixture, until, within

FOLDER = fixture("records", "folder")
@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


class Files:
    """A folder's images as torchvision's ImageFolder lists them, read in __getitem__."""

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


class Raising(Files):
    """Files whose sample `bad` raises."""

    def __init__(self, root, bad):
        super().__init__(root)
        self.bad = bad

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"no sample {i} today")
        return super().__getitem__(i)


class Returning:
    """One sample: whatever it is given."""

    def __init__(self, item):
        self.item = item

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return self.item


def collect(loader):
    return [(np.array(x, copy=True), np.array(y, copy=True)) for x, y in loader]


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, p) and np.array_equal(y, q) for (x, y), (p, q) in zip(a, b))


def test_a_python_dataset_of_a_folders_files_gives_the_folders_batches(train):
    folder = train.ImageFolder(FOLDER)
    data = train.FromPython(Files(FOLDER))
    assert len(data) == len(folder) == 6
    for i in range(6):
        assert data[i] == folder[i]
    for workers in (1, 2):
        kw = dict(batch_size=4, seed=5, output="numpy", num_workers=workers)
        ours = train.Loader(data, "imagenet-trivialaugment", **kw)
        theirs = train.Loader(folder, "imagenet-trivialaugment", **kw)
        a, b = collect(ours) + collect(ours), collect(theirs) + collect(theirs)  # two epochs
        assert len(a) == 4 and same(a, b)
        assert np.array_equal(ours.last_indices, theirs.last_indices)
    # Reading on two threads at once calls the object from both.
    two = collect(train.Loader(data, "imagenet-train", 4, 2, seed=5, output="numpy", read_workers=2))
    assert same(two, collect(train.Loader(folder, "imagenet-train", 4, 1, seed=5, output="numpy")))


def test_an_exception_in_getitem_names_the_sample_and_is_the_cause(tp, train):
    data = train.FromPython(Raising(FOLDER, bad=3))
    loader = train.Loader(data, "imagenet-train", 2, 2, seed=0, shuffle=False, output="numpy")
    with pytest.raises(tp.DataError) as caught:
        collect(loader)
    message = str(caught.value)
    assert "sample 3" in message and "test_from_python.Raising[3]" in message
    assert "ValueError: no sample 3 today" in message
    assert "test_from_python.py:" in message and "in __getitem__" in message
    cause = caught.value.__cause__
    assert isinstance(cause, ValueError) and str(cause) == "no sample 3 today"
    assert cause.__traceback__ is not None
    # The same through indexing the dataset.
    with pytest.raises(tp.DataError, match="Raising\\[3\\]: __getitem__ raised ValueError") as caught:
        data[3]
    assert isinstance(caught.value.__cause__, ValueError)
    # Skipped instead: that batch is one short.
    skip = train.Loader(data, "imagenet-train", 2, 2, seed=0, shuffle=False, skip_errors=True, output="numpy")
    assert [len(y) for _, y in collect(skip)] == [2, 1, 2]


def test_what_is_not_a_sample_is_an_error_naming_it(tp, train):
    jpeg = Files(FOLDER)[0][0]
    bad = [
        ([jpeg], "a list of 1 where \\(image, label\\)"),
        ((jpeg, 1, 2), "a tuple of 3 where \\(image, label\\)"),
        ((jpeg, "cat"), "a bad label"),
        ((jpeg, float("nan")), "not a finite number"),
        ((jpeg, 2**24 + 1), "not exact in float32"),
        (("a string", 0), "an image of type str"),
        ((np.zeros((4, 4, 3), np.float32), 0), "dtype float32 \\(uint8 only\\)"),
        ((np.zeros((4, 4, 2), np.uint8), 0), "C is 1 \\(gray\\), 3 \\(RGB\\) or 4"),
        ((np.zeros((2, 4, 4, 3), np.uint8), 0), "shape \\[2, 4, 4, 3\\]"),
        ((np.zeros((0, 4, 3), np.uint8), 0), "empty image array"),
    ]
    for item, expected in bad:
        data = train.FromPython(Returning(item))
        with pytest.raises(tp.DataError, match="Returning\\[0\\]: __getitem__ returned .*" + expected):
            data[0]
    loader = train.Loader(train.FromPython(Returning((jpeg, "cat"))), "imagenet-train", 1, 1, output="numpy")
    with pytest.raises(tp.DataError, match="sample 0: .*a bad label"):
        collect(loader)


def test_labels_follow_the_samples_rules(train):
    jpeg = Files(FOLDER)[0][0]
    for label, expected in [
        (3, [3.0]),
        (np.int64(7), [7.0]),
        (np.float32(0.5), [0.5]),
        ([1, 0.25], [1.0, 0.25]),
        (np.array([2, 3], np.uint8), [2.0, 3.0]),
    ]:
        assert train.FromPython(Returning((jpeg, label)))[0] == (jpeg, expected)
        assert train.Samples([(jpeg, label)])[0] == (jpeg, expected)


def test_encoded_buffers_and_uint8_arrays_of_any_strides(tp, train):
    jpeg = Files(FOLDER)[0][0]
    for image in (jpeg, bytearray(jpeg), memoryview(jpeg)):
        data = train.FromPython(Returning((image, 1)))
        assert data[0] == (jpeg, [1.0])
        assert tp._native.sample_content(data, 0) == ("encoded", None)
    rgb = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    cases = [
        (rgb, (7, 5, "Rgb8")),
        (rgb[:, ::-1], (7, 5, "Rgb8")),  # strided columns
        (rgb[::2, 1:5, ::-1], (4, 3, "Rgb8")),  # a crop, channels reversed
        (np.ascontiguousarray(rgb.transpose(1, 0, 2)).transpose(1, 0, 2), (7, 5, "Rgb8")),  # strided rows
        (np.asfortranarray(rgb), (7, 5, "Rgb8")),  # Fortran order (scipy.io.loadmat's)
        (np.asfortranarray(rgb[:, :, 0]), (7, 5, "Gray8")),
        (rgb[:, :, 0], (7, 5, "Gray8")),
        (rgb[:, :, :1], (7, 5, "Gray8")),
        (np.dstack([rgb, rgb[:, :, :1]]), (7, 5, "Rgba8")),
    ]
    for image, content in cases:
        data = train.FromPython(Returning((image, 0)))
        assert tp._native.sample_content(data, 0) == ("pixels", content)
        # The pixels as an HxW (gray) or HxWxC array, packed row by row as
        # numpy's C order lists them.
        got, labels = data[0]
        channels = image.shape[2] if image.ndim == 3 and image.shape[2] > 1 else None
        assert got.shape == image.shape[:2] + ((channels,) if channels else ())
        assert (got.tobytes(), labels) == (image.tobytes(order="C"), [0.0])


def test_arrays_decoded_from_a_folder_give_the_folders_batches(train):
    from PIL import Image

    class Arrays(Files):
        def __getitem__(self, i):
            path, label = self.items[i]
            with Image.open(path) as im:
                return np.asarray(im.convert("RGB")), label

    # PNGs only: their decode is exact whichever decoder reads them.
    folder = train.ImageFolder(FOLDER)
    pngs = [i for i, (p, _) in enumerate(Files(FOLDER).items) if p.endswith(".png")]
    for workers in (1, 2):
        kw = dict(seed=1, output="numpy", num_workers=workers, shuffle=False)
        a = collect(train.Loader(train.FromPython(Arrays(FOLDER)), "imagenet-train", 1, **kw))
        b = collect(train.Loader(folder, "imagenet-train", 1, **kw))
        assert all(same([a[i]], [b[i]]) for i in pngs)


def test_len_is_read_once_and_its_exception_raised_at_once(train):
    class BadLen:
        def __len__(self):
            raise RuntimeError("no length")

        def __getitem__(self, i):
            raise AssertionError("never read")

    with pytest.raises(RuntimeError, match="no length"):
        train.FromPython(BadLen())
    with pytest.raises(TypeError):
        train.FromPython(object())

    class Shrinking(Files):
        calls = 0

        def __len__(self):
            Shrinking.calls += 1
            return super().__len__() if Shrinking.calls == 1 else 1

    files = Shrinking(FOLDER)
    data = train.FromPython(files)
    del files.items[4:]
    assert len(data) == 6 and Shrinking.calls == 1
    with pytest.raises(IndexError):
        data[6]
    with pytest.raises(Exception, match="Shrinking\\[5\\]: __getitem__ raised IndexError"):
        data[5]


def test_the_fingerprint_is_the_types_name_and_the_length(train):
    a, b = train.FromPython(Files(FOLDER)), train.FromPython(Files(FOLDER))
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != train.FromPython(Raising(FOLDER, bad=0)).fingerprint
    assert a.fingerprint != train.FromPython(Files(FOLDER)).take(5).fingerprint
    assert repr(a) == "FromPython(test_from_python.Files) (6 samples)"
    # A state saved on one resumes on the other, not on another dataset.
    one = train.Loader(a, "imagenet-train", 2, 1, seed=3, output="numpy")
    next(iter(one))
    state = one.state_dict()
    rest = collect(one)
    two = train.Loader(b, "imagenet-train", 2, 2, seed=3, output="numpy")
    two.load_state_dict(state)
    assert same(collect(two), rest)
    other = train.Loader(train.ImageFolder(FOLDER), "imagenet-train", 2, 1, seed=3, output="numpy")
    with pytest.raises(Exception, match="(?i)fingerprint|dataset"):
        other.load_state_dict(state)


class Gate(Files):
    """Files whose __getitem__ waits (in Python, holding the GIL between
    bytecodes) until released."""

    def __init__(self, root):
        super().__init__(root)
        self.entered = threading.Event()
        self.release = threading.Event()

    def __getitem__(self, i):
        self.entered.set()
        self.release.wait(30)
        return super().__getitem__(i)


def test_close_from_another_thread_while_a_read_is_inside_python(train):
    gate = Gate(FOLDER)
    loader = train.Loader(train.FromPython(gate), "imagenet-train", 2, 1, seed=0, output="numpy")
    got = []
    consumer = threading.Thread(target=lambda: got.extend(collect(loader)))
    consumer.start()
    assert gate.entered.wait(10)
    # The consumer waits without the GIL, the read thread is in Python:
    # close() stops both and joins the threads (the read finishes its call).
    closer = threading.Thread(target=loader.close)
    closer.start()
    gate.release.set()
    closer.join(20)
    consumer.join(20)
    assert not closer.is_alive() and not consumer.is_alive()
    with pytest.raises(Exception, match="closed"):
        collect(loader)


def run(code, timeout=60, interrupt_after=None):
    """`code` in a new interpreter (a deadlock there fails this test by its
    timeout instead of hanging the suite): (returncode, stdout + stderr)."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )
    try:
        if interrupt_after is not None:
            line = p.stdout.readline()
            assert line.strip() == interrupt_after, line
            p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        pytest.fail(f"the interpreter hung (deadlock?):\n{out}")
    return p.returncode, out


PRELUDE = f"""
    import threading, time
    from tensorprep import train
    from test_from_python import Files, Gate
    FOLDER = {FOLDER!r}
"""


def test_dropping_a_loader_while_a_read_is_inside_python():
    code, out = run(
        PRELUDE
        + """
    gate = Gate(FOLDER)
    loader = train.Loader(train.FromPython(gate), "imagenet-train", 2, 1, seed=0, output="numpy")
    assert gate.entered.wait(10)
    threading.Timer(0.5, gate.release.set).start()
    del loader  # joins the threads; the read thread needs the GIL to finish
    print("dropped")
    """
    )
    assert code == 0 and "dropped" in out, out


def test_a_loader_alive_at_exit_while_reads_are_in_python():
    code, out = run(
        PRELUDE
        + """
    class Slow(Files):
        def __getitem__(self, i):
            time.sleep(0.05)
            return super().__getitem__(i)

    loader = train.Loader(train.FromPython(Slow(FOLDER)), "imagenet-train", 2, 1, seed=0, output="numpy",
                          epochs=None)
    it = iter(loader)
    next(it)
    print("exiting")
    """
    )
    assert code == 0 and "exiting" in out, out


def test_keyboard_interrupt_while_waiting_for_a_batch():
    code, out = run(
        PRELUDE
        + """
    class Slow(Files):
        def __getitem__(self, i):
            time.sleep(0.2)
            return super().__getitem__(i)

    loader = train.Loader(train.FromPython(Slow(FOLDER)), "imagenet-train", 2, 1, seed=0, output="numpy")
    next(iter(loader))
    try:
        print("waiting", flush=True)  # then Ctrl-C while it waits for the next batch
        while True:
            for batch in loader:
                pass
    except KeyboardInterrupt:
        print("interrupted")
        raise
    """,
        interrupt_after="waiting",
    )
    assert code != 0 and "interrupted" in out and "KeyboardInterrupt" in out, out


def test_a_torch_style_dataset_of_pil_images_through_the_adapter(tp, train):
    from PIL import Image

    class PilFolder(Files):
        """What torchvision.datasets.ImageFolder returns without transforms."""

        def __init__(self, root, transform=None):
            super().__init__(root)
            self.transform = transform

        def __getitem__(self, i):
            path, label = self.items[i]
            image = Image.open(path)
            if self.transform is not None:
                image = self.transform(image)
            return image, label

    folder = train.ImageFolder(FOLDER)
    files = train.FromPython(train.from_torch_dataset(PilFolder(FOLDER), files=True))
    for i in range(6):
        assert files[i] == folder[i]
    kw = dict(batch_size=3, seed=2, output="numpy")
    assert same(collect(train.Loader(files, "imagenet-train", **kw)), collect(train.Loader(folder, "imagenet-train", **kw)))
    # Without the adapter, a PIL image is refused, naming it.
    with pytest.raises(tp.DataError, match="an image of type PIL.*FromPython\\(from_torch_dataset\\(dataset\\)\\)"):
        train.FromPython(PilFolder(FOLDER))[0]
    # Transformed (or without files=True): uint8 arrays of the image's pixels.
    gray = train.FromPython(train.from_torch_dataset(PilFolder(FOLDER, transform=lambda im: im.convert("L"))))
    path = Files(FOLDER).items[1][0]
    with Image.open(path) as im:
        expected = np.asarray(im.convert("L"))
    assert tp._native.sample_content(gray, 1) == ("pixels", (expected.shape[1], expected.shape[0], "Gray8"))
    got, labels = gray[1]
    assert np.array_equal(got, expected) and labels == [0.0]
    rgb = train.FromPython(train.from_torch_dataset(PilFolder(FOLDER)))
    assert tp._native.sample_content(rgb, 1)[1][2] == "Rgb8"
    # An image changed in place keeps its filename: with files=True its size
    # against its file's tells, and it is refused rather than read as the file.
    shrunk = train.FromPython(
        train.from_torch_dataset(PilFolder(FOLDER, transform=lambda im: (im.thumbnail((16, 16)), im)[1]), files=True)
    )
    with pytest.raises(tp.DataError, match="changed in place") as caught:
        shrunk[0]
    assert isinstance(caught.value.__cause__, ValueError)
    # A tensor (ToTensor left in the dataset's transform) is refused, naming the fix.
    tensors = train.FromPython(train.from_torch_dataset(PilFolder(FOLDER, transform=lambda im: [[0.0]])))
    with pytest.raises(tp.DataError, match="leave ToTensor/Normalize out") as caught:
        tensors[0]
    assert isinstance(caught.value.__cause__, TypeError)


class Reentering(Files):
    """Files whose __getitem__ calls `call` on its own loader (`self.loader`)."""

    def __init__(self, root, call):
        super().__init__(root)
        self.call = call
        self.loader = None
        self.made = threading.Event()

    def hold(self, loader):
        """Keep `loader` and let the read threads' calls on it go ahead."""
        self.loader = loader
        self.made.set()

    def __getitem__(self, i):
        # On the loader's read threads (not while the loader is being made,
        # on the main thread), once `self.loader` holds it: the read threads
        # start at once and may read every sample before that.
        if threading.current_thread() is not threading.main_thread():
            assert self.made.wait(30)
            self.call(self.loader)
        return super().__getitem__(i)


@pytest.mark.parametrize("call", ["next", "len", "state_dict"])
def test_a_dataset_calling_its_loader_is_the_loaders_error_not_a_deadlock(tp, train, call):

    calls = {"next": next, "len": len, "state_dict": lambda l: l.state_dict()}
    data = Reentering(FOLDER, calls[call])
    loader = train.Loader(train.FromPython(data), "imagenet-train", 2, 2, seed=0, output="numpy", shuffle=False)
    data.hold(loader)
    with pytest.raises(tp.DataError) as caught:
        # The first epoch's first samples may be read before `data` holds it.
        within(30, lambda: [collect(loader) for _ in range(2)])
    message = str(caught.value)
    assert "Reentering[" in message and "__getitem__ raised RuntimeError" in message, message
    cause = caught.value.__cause__
    assert isinstance(cause, RuntimeError), cause
    assert "a FromPython dataset's __getitem__ called a Loader" in str(cause), cause
    loader.close()


def test_a_dataset_holding_its_loader_is_a_cycle_gc_frees(train):
    import gc
    import weakref

    def threads():
        return len(os.listdir("/proc/self/task"))

    gc.collect()
    before = threads()
    data = Reentering(FOLDER, lambda loader: None)  # keeps `loader`, calls nothing
    # Through a `take` too: the dataset made of it keeps it for the collector.
    # One epoch: no read of the next one inside __getitem__ (a frame holding `data`) at the collection.
    data.hold(train.Loader(train.FromPython(data).take(4), "imagenet-train", 2, 2, seed=0, output="numpy", epochs=1))
    assert len(collect(data.loader)) == 2 and threads() > before
    alive = weakref.ref(data.loader)
    del data
    gc.collect()
    assert alive() is None, "the cycle dataset -> loader -> dataset was freed"
    # Not more than before (a thread of an earlier test may end meanwhile).
    # A collection run on one of the loader's own threads drops it there:
    # that thread is let go, not joined, and ends once its call returns.
    assert until(lambda: threads() <= before), "and the loader's threads ended"
