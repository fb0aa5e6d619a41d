"""The built-in datasets (CIFAR-10/100 in both versions, MNIST, FashionMNIST,
KMNIST) give torchvision 0.29.2's pixels and labels on the fixtures made by
tests/fixtures/make_builtin_fixtures.py, and load through the same plans."""

import shutil
import zlib

import numpy as np
import pytest

from conftest import fixture


def reference(file, dataset, split):
    """torchvision's rows: (label, crc32 of its image array, extra columns)."""
    rows = []
    with open(fixture(file)) as f:
        for line in f:
            fields = line.split()
            if fields[0] == dataset and fields[1] == split:
                assert int(fields[2]) == len(rows)
                rows.append((int(fields[3]), int(fields[4], 16), [int(x) for x in fields[5:]]))
    assert rows, (file, dataset, split)
    return rows


def read_all(data):
    """Every sample's (crc32 of its pixel array, labels); each image is a
    uint8 array, HxW (gray) or HxWx3."""
    out = []
    for i in range(len(data)):
        image, labels = data[i]
        assert isinstance(image, np.ndarray) and image.dtype == np.uint8, type(image)
        assert image.shape in [(32, 32, 3), (28, 28)], image.shape
        out.append((zlib.crc32(image), labels))
    return out


@pytest.fixture
def only(tmp_path):
    """A root holding one of the fixture's folders."""

    def make(name):
        shutil.copytree(fixture("cifar", name), tmp_path / name)
        return tmp_path

    return make


@pytest.mark.parametrize("version", ["cifar-10-batches-bin", "cifar-10-batches-py"])
@pytest.mark.parametrize("train_split", [True, False])
def test_cifar10_is_torchvision_s(tp, only, version, train_split):
    from tensorprep import train

    want = reference("cifar/torchvision.txt", "cifar10", "train" if train_split else "test")
    data = train.CIFAR10(only(version), train=train_split)
    assert read_all(data) == [(crc, [float(label)]) for label, crc, _ in want]


@pytest.mark.parametrize("version", ["cifar-100-binary", "cifar-100-python"])
@pytest.mark.parametrize("train_split", [True, False])
def test_cifar100_is_torchvision_s_and_offers_the_coarse_label(tp, only, version, train_split):
    from tensorprep import train

    want = reference("cifar/torchvision.txt", "cifar100", "train" if train_split else "test")
    root = only(version)
    assert read_all(train.CIFAR100(root, train=train_split)) == [(crc, [float(f)]) for f, crc, _ in want]
    assert read_all(train.CIFAR100(root, train=train_split, label="coarse")) == [
        (crc, [float(c[0])]) for _, crc, c in want
    ]
    assert read_all(train.CIFAR100(root, train=train_split, label="both")) == [
        (crc, [float(c[0]), float(f)]) for f, crc, c in want
    ]
    with pytest.raises(ValueError, match="fine"):
        train.CIFAR100(root, label="superclass")


@pytest.mark.parametrize("name", ["MNIST", "FashionMNIST", "KMNIST"])
@pytest.mark.parametrize("train_split", [True, False])
def test_mnist_family_is_torchvision_s(tp, name, train_split):
    from tensorprep import train

    want = reference("mnist/torchvision.txt", name, "train" if train_split else "test")
    data = getattr(train, name)(fixture("mnist"), train=train_split)
    assert read_all(data) == [(crc, [float(label)]) for label, crc, _ in want]


def test_a_root_without_the_files_is_an_error(tp, tmp_path):
    from tensorprep import train

    with pytest.raises(FileNotFoundError, match="cifar-10-batches"):
        train.CIFAR10(tmp_path)
    with pytest.raises(Exception, match="train-images-idx3-ubyte"):
        train.MNIST(tmp_path)


def test_both_cifar_versions_load_the_same_batches(tp, only, tmp_path):
    from tensorprep import train

    both = only("cifar-10-batches-bin")
    shutil.copytree(fixture("cifar", "cifar-10-batches-py"), tmp_path / "py" / "cifar-10-batches-py")
    out = []
    for data, workers in [(train.CIFAR10(both), 1), (train.CIFAR10(tmp_path / "py"), 3)]:
        loader = train.Loader(data, "imagenet-trivialaugment", 2, workers, seed=5, output="numpy")
        out.append([(np.asarray(x).copy(), np.asarray(y).copy()) for x, y in loader])
    assert len(out[0]) == 3
    for (a, la), (b, lb) in zip(*out):
        assert np.array_equal(a, b) and np.array_equal(la, lb)


def test_mnist_loads_through_an_rgb_pipeline(tp):
    from tensorprep import train

    data = train.MNIST(fixture("mnist"))
    batches = list(train.Loader(data, "imagenet-train", 2, 2, seed=1, output="numpy"))
    images = np.concatenate([np.asarray(x) for x, _ in batches])
    assert images.shape == (4, 3, 224, 224)
    # Gray made RGB: the three channels differ only by Normalize's mean and std.
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    unit = images * std[None, :, None, None] + mean[None, :, None, None]
    assert np.allclose(unit[:, 0], unit[:, 1], atol=1e-5) and np.allclose(unit[:, 1], unit[:, 2], atol=1e-5)


def test_samples_are_arrays_for_pixels_and_bytes_for_files(tp, tmp_path):
    from tensorprep import train

    cifar = train.CIFAR10(fixture("cifar"))
    image, label = cifar[0]
    assert (image.shape, image.dtype) == ((32, 32, 3), np.uint8)
    # A pixel dataset's samples go back in through FromPython unchanged.
    again = train.FromPython(cifar)
    assert len(again) == len(cifar)
    for i in range(len(cifar)):
        a, b = again[i], cifar[i]
        assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    gray, _ = train.MNIST(fixture("mnist"))[0]
    assert (gray.shape, gray.dtype) == ((28, 28), np.uint8)
    jpeg = open(fixture("sample.jpg"), "rb").read()
    encoded, _ = train.Samples([(jpeg, 1)])[0]
    assert isinstance(encoded, bytes) and encoded == jpeg


def pickled_cifar(tmp_path, edit):
    """A copy of the fixture's pickled CIFAR-10 with ``edit`` applied to
    data_batch_1's unpickled dict."""
    import pickle

    shutil.copytree(fixture("cifar", "cifar-10-batches-py"), tmp_path / "cifar-10-batches-py")
    path = tmp_path / "cifar-10-batches-py" / "data_batch_1"
    with open(path, "rb") as f:
        entry = pickle.load(f, encoding="latin1")
    edit(entry)
    with open(path, "wb") as f:
        pickle.dump(entry, f)
    return tmp_path


@pytest.mark.parametrize("bad", [10, 255, -1])
def test_pickled_cifar_labels_outside_the_classes_are_errors(tp, tmp_path, bad):
    from tensorprep import train

    def edit(entry):
        entry["labels"][0] = bad

    with pytest.raises(Exception, match=rf"data_batch_1.*record 0: label {bad} of a dataset of 10 classes"):
        train.CIFAR10(pickled_cifar(tmp_path, edit))


def test_pickled_cifar100_coarse_labels_are_checked(tp, tmp_path):
    from tensorprep import train
    import pickle

    shutil.copytree(fixture("cifar", "cifar-100-python"), tmp_path / "cifar-100-python")
    path = tmp_path / "cifar-100-python" / "train"
    with open(path, "rb") as f:
        entry = pickle.load(f, encoding="latin1")
    entry["coarse_labels"][0] = 20
    with open(path, "wb") as f:
        pickle.dump(entry, f)
    # Checked whichever label is asked for.
    with pytest.raises(Exception, match="record 0: label 20 of a dataset of 20 classes"):
        train.CIFAR100(tmp_path, label="fine")


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.uint16])
def test_pickled_cifar_data_that_is_not_uint8_is_an_error(tp, tmp_path, dtype):
    from tensorprep import train

    def edit(entry):
        entry["data"] = entry["data"].astype(dtype) + 300

    with pytest.raises(ValueError, match="data_batch_1: data of type ndarray .*, not uint8"):
        train.CIFAR10(pickled_cifar(tmp_path, edit))
