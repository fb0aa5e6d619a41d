"""CelebA equal to torchvision 0.29.2's parse (tests/fixtures/celeba), the
ImageFolder file filter as torchvision's, and TFRecord / RecordIO over a list
or a pattern of files."""

import os
import shutil

import pytest

from conftest import fixture

ROOT = fixture("celeba", "root")


def torchvision_parse():
    """(split/targets) -> [(file name, [values])], as the fixture script dumped it."""
    out = {}
    with open(fixture("celeba", "torchvision.txt")) as f:
        for line in f:
            if line.startswith("#"):
                continue
            key, name, *values = line.split()
            out.setdefault(key, []).append((name, [float(v) for v in values]))
    return out


def test_targets_equal_torchvision_for_every_split_and_type(tp):
    parsed = torchvision_parse()
    assert len(parsed) == 20
    for key, expected in parsed.items():
        split, targets = key.split("/")
        target_type = targets.split(",") if "," in targets else targets
        ds = tp.train.CelebA(ROOT, split=split, target_type=target_type)
        assert len(ds) == len(expected), key
        got = [ds[i][1] for i in range(len(ds))]
        assert got == [values for _, values in expected], key


def test_samples_are_the_jpeg_files(tp):
    ds = tp.train.CelebA(ROOT, split="test")
    for i, name in enumerate(["000004.jpg", "000007.jpg"]):
        with open(os.path.join(ROOT, "celeba", "img_align_celeba", name), "rb") as f:
            assert ds[i][0] == f.read()


def test_signed_attributes_and_bad_arguments(tp):
    zero_one = tp.train.CelebA(ROOT, split="all")
    signed = tp.train.CelebA(ROOT, split="all", signed=True)
    for i in range(len(zero_one)):
        assert [(v + 1) / 2 for v in signed[i][1]] == zero_one[i][1]
    with pytest.raises(ValueError, match="split"):
        tp.train.CelebA(ROOT, split="val")
    with pytest.raises(ValueError, match="pose"):
        tp.train.CelebA(ROOT, target_type="pose")


def test_a_malformed_line_names_file_and_line(tp, tmp_path):
    shutil.copytree(ROOT, tmp_path / "root")
    attr = tmp_path / "root" / "celeba" / "list_attr_celeba.txt"
    lines = attr.read_text().splitlines()
    lines[3] = lines[3].replace(" 1", " one", 1)
    attr.write_text("\n".join(lines) + "\n")
    with pytest.raises(Exception, match=r"list_attr_celeba\.txt.*line 4.*`one` is not an integer"):
        tp.train.CelebA(tmp_path / "root", split="all")


def make_folder(root, files):
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    return root


def test_image_folder_filters_as_torchvision(tp, tmp_path):
    root = make_folder(tmp_path, ["cat/a.JPG", "cat/notes.txt", "cat/b.bmp", "dog/c.png", "dog/Thumbs.db"])
    ds = tp.train.ImageFolder(root)
    assert len(ds) == 3 and [ds[i][1] for i in range(3)] == [[0.0], [0.0], [1.0]]
    pngs = tp.train.ImageFolder(root, extensions=(".png", ".bmp"))
    assert [pngs[i][1] for i in range(len(pngs))] == [[0.0], [1.0]]
    seen = []

    def valid(path):
        seen.append(path)
        return not path.endswith(".db")

    every = tp.train.ImageFolder(root, is_valid_file=valid)
    assert len(every) == 4
    assert all(isinstance(p, str) for p in seen) and len(seen) == 5
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        tp.train.ImageFolder(root, extensions=".png", is_valid_file=valid)
    with pytest.raises(Exception, match="class `dog` has no image files"):
        tp.train.ImageFolder(root, extensions=".jpg")

    def broken(path):
        raise KeyError("no")

    with pytest.raises(KeyError):
        tp.train.ImageFolder(root, is_valid_file=broken)


def test_tfrecord_and_recordio_take_lists_and_patterns(tp, tmp_path):
    records = fixture("records")
    for i in range(3):
        shutil.copy(os.path.join(records, "folder.tfrecord"), tmp_path / f"shard-{i}.tfrecord")
    one = tp.train.TFRecord(os.path.join(records, "folder.tfrecord"))
    expected = [one[i] for i in range(len(one))] * 3
    listed = tp.train.TFRecord([tmp_path / f"shard-{i}.tfrecord" for i in range(3)])
    pattern = tp.train.TFRecord(str(tmp_path / "shard-*.tfrecord"), open_files=1)
    braces = tp.train.TFRecord(str(tmp_path / "shard-{0..2}.tfrecord"))
    for ds in (listed, pattern, braces):
        assert [ds[i] for i in range(len(ds))] == expected
    assert pattern.fingerprint != one.fingerprint
    rec = tp.train.RecordIO(os.path.join(records, "{folder,multi}.rec"))
    singles = [tp.train.RecordIO(os.path.join(records, n)) for n in ("folder.rec", "multi.rec")]
    assert len(rec) == sum(len(s) for s in singles)
    assert rec[len(singles[0])] == singles[1][0]
    with pytest.raises(ValueError, match="index"):
        tp.train.TFRecord([os.path.join(records, "folder.tfrecord")], index=os.path.join(records, "folder.tfindex"))
    with pytest.raises(ValueError, match="open_files"):
        tp.train.RecordIO([os.path.join(records, "folder.rec")], open_files=0)
    with pytest.raises(Exception, match="no file matches"):
        tp.train.TFRecord(os.path.join(records, "none-*.tfrecord"))
