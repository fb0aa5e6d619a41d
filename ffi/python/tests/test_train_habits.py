"""PyTorch habits from Python: torchvision's ToTensor/Normalize in a
pipeline's list, DataLoader's argument names, the library's defaults in the
signatures, and Mixup/CutMix as the loader's batch transform (soft targets)."""

import inspect

import numpy as np
import pytest

from conftest import fixture


@pytest.fixture(scope="module")
def train(tp):
    from tensorprep import train

    return train


def folder(train):
    return train.ImageFolder(fixture("records", "folder"))


def batches(loader):
    """Every batch of one epoch, copied (images, labels)."""
    return [(np.array(x, copy=True), np.array(y, copy=True)) for x, y in loader]


IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def test_to_tensor_and_normalize_in_the_list_mean_what_torchvision_means(train):
    crop = train.RandomResizedCrop(64)
    listed = train.Pipeline([crop, train.ToTensor(), train.Normalize(*IMAGENET)])
    assert listed == train.Pipeline([crop], mean=IMAGENET[0], std=IMAGENET[1])
    # ToTensor alone: values 0-1, no normalization.
    assert train.Pipeline([crop, train.ToTensor()]) == train.Pipeline([crop], mean=(0, 0, 0), std=(1, 1, 1))
    # Without ToTensor: ImageNet's by default, as before.
    assert train.Pipeline([crop]) == listed
    # RandomErasing in the list is the pipeline's erasing.
    erase = train.RandomErasing(0.5)
    assert train.Pipeline([crop, train.ToTensor(), train.Normalize(*IMAGENET), erase]) == train.Pipeline(
        [crop], erasing=[erase]
    )
    # One value for every channel, as torchvision broadcasts it.
    assert train.Normalize([0.5], [0.25]).mean == (0.5, 0.5, 0.5)


@pytest.mark.parametrize(
    "steps, message",
    [
        (lambda t: [t.ToTensor(), t.RandomHorizontalFlip()], "after ToTensor"),
        (lambda t: [t.Normalize(*IMAGENET), t.ToTensor()], "Normalize before ToTensor"),
        (lambda t: [t.ToTensor(), t.RandomErasing(), t.Normalize(*IMAGENET)], "RandomErasing before Normalize"),
        (lambda t: [t.RandomErasing(), t.ToTensor()], "RandomErasing before ToTensor"),
        (lambda t: [t.ToTensor(), t.ToTensor()], "ToTensor twice"),
    ],
)
def test_an_order_the_pipeline_cannot_honour_is_refused(train, steps, message):
    with pytest.raises(ValueError, match=message):
        train.Pipeline([train.RandomResizedCrop(64)] + steps(train))


def test_normalize_in_the_list_and_mean_given_is_refused(train):
    with pytest.raises(ValueError, match="beside a Normalize"):
        train.Pipeline([train.ToTensor(), train.Normalize(*IMAGENET)], mean=(0, 0, 0))
    with pytest.raises(ValueError, match="one value or three"):
        train.Normalize([0.5, 0.5], [1, 1])
    with pytest.raises(ValueError, match="non-zero"):
        train.Normalize([0.5], [0.0])
    # The library's check: finite parameters that overflow for some 8-bit value.
    with pytest.raises(ValueError, match="overflows"):
        train.Normalize([-3e38], [1e-30])
    with pytest.raises(TypeError, match="not <class 'str'>"):
        train.Pipeline(["flip"])


def test_signatures_show_the_real_defaults(train):
    p = inspect.signature(train.Pipeline)
    assert p.parameters["mean"].default is None and p.parameters["fast"].default is False
    assert "Ellipsis" not in str(p)
    defaults = train.loader_defaults()
    s = inspect.signature(train.Loader)
    for name in ("workers", "depth", "read_workers", "decode_budget", "buffer_limit", "seed"):
        assert s.parameters[name].default == defaults[name], name
    assert defaults["depth"] > 0 and defaults["workers"] > 0
    # No public callable shows `Ellipsis` for a default it could not render.
    import tensorprep

    for mod in (train, tensorprep):
        for name in mod.__all__:
            obj = getattr(mod, name)
            try:
                sig = str(inspect.signature(obj))
            except (TypeError, ValueError):
                continue  # classes without a constructor, constants
            assert "Ellipsis" not in sig, f"{name}{sig}"
    assert str(inspect.signature(train.RandomResizedCrop)).endswith("interpolation='bilinear')")


# Callables whose signature is written by hand (the defaults pyo3 cannot
# render: tuples, enum names), with the arguments they require.
HAND_WRITTEN = [
    ("RandomResizedCrop", (64,)),
    ("Resize", (64,)),
    ("RandomRotation", (10,)),
    ("RandomAffine", (10,)),
    ("RandomPerspective", ()),
    ("AutoAugment", ()),
    ("RandAugment", ()),
    ("TrivialAugmentWide", ()),
    ("AugMix", ()),
    ("RandomErasing", ()),
    ("Mixup", ()),
]


@pytest.mark.parametrize("name, required", HAND_WRITTEN)
def test_each_signature_default_is_the_one_applied(train, name, required):
    f = getattr(train, name)
    shown = {
        k: p.default
        for k, p in inspect.signature(f).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    assert shown, name
    crop = train.RandomResizedCrop(64)

    def compared(obj):
        # Augments compare inside a pipeline; Mixup compares itself.
        if isinstance(obj, train.Augment):
            return train.Pipeline([crop, obj])
        if isinstance(obj, train.RandomErasing):
            return train.Pipeline([crop], erasing=[obj])
        return obj

    assert compared(f(*required, **shown)) == compared(f(*required)), f"{name}: the shown defaults are not applied"


def stub_defaults(node):
    """The literal defaults of a stub's function (`...` and names left out)."""
    import ast

    a = node.args
    pairs = list(zip(a.args[len(a.args) - len(a.defaults) :], a.defaults)) + [
        (arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None
    ]
    out = {}
    for arg, d in pairs:
        try:
            value = ast.literal_eval(d)
        except ValueError:
            continue
        if value is not Ellipsis:
            out[arg.arg] = value
    return out


def test_the_stubs_show_the_runtime_defaults(tp):
    """_native.pyi repeats every default a third time (after the Rust
    signature and its text_signature): each must be the runtime's."""
    import ast
    import os

    from tensorprep import _native

    path = os.path.join(os.path.dirname(_native.__file__), "_native.pyi")
    with open(path) as f:
        tree = ast.parse(f.read())
    checked = 0
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            inits = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
            if not inits:
                continue
            fn = inits[0]
        elif isinstance(node, ast.FunctionDef):
            fn = node
        else:
            continue
        obj = getattr(_native, node.name, None)
        if obj is None:
            continue
        try:
            runtime = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            continue
        for name, value in stub_defaults(fn).items():
            assert name in runtime, f"{node.name}: the stub's {name} is not a parameter"
            shown = runtime[name].default
            assert shown is not inspect.Parameter.empty, f"{node.name}({name}) has no default at runtime"
            assert shown == value, f"{node.name}({name}): the stub says {value!r}, the runtime {shown!r}"
            checked += 1
    assert checked > 50, checked


def test_the_pipelines_signature_defaults_are_the_ones_applied(train):
    crop = [train.RandomResizedCrop(64)]
    shown = {
        k: p.default
        for k, p in inspect.signature(train.Pipeline).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    assert train.Pipeline(crop, **shown) == train.Pipeline(crop)
    # Comparing pipelines sees a step's parameters (so the checks above can fail).
    assert train.Pipeline(crop + [train.RandomRotation(10)]) != train.Pipeline(
        crop + [train.RandomRotation(10, interpolation="bilinear")]
    )
    assert train.Pipeline(crop, erasing=[train.RandomErasing()]) != train.Pipeline(
        crop, erasing=[train.RandomErasing(scale=(0.02, 0.3))]
    )


def held_until_refused(loader):
    """Batches taken (and held) before the loader refuses for want of a free
    buffer: its effective depth."""
    held = []
    with pytest.raises(tp_error_class(), match=r"every batch buffer \((\d+)\) is held") as refused:
        for batch in loader:
            held.append(batch)
    assert f"({len(held)})" in str(refused.value)
    return len(held)


def test_dataloader_names_are_accepted_and_both_spellings_refused(train):
    pipeline = train.Pipeline([train.RandomResizedCrop(32), train.ToTensor()])
    a = batches(train.Loader(folder(train), pipeline, 2, workers=3, seed=5, output="numpy", shard=None))
    b = batches(train.Loader(folder(train), pipeline, 2, num_workers=3, seed=5, output="numpy", shard=None))
    assert len(a) == 3 and all(np.array_equal(x, p) and np.array_equal(y, q) for (x, y), (p, q) in zip(a, b))
    # The names reach the loader: prefetch_factor x num_workers + 1 buffers,
    # seen as the batches one can hold before the loader refuses the next.
    def depth(**kw):
        return held_until_refused(train.Loader(folder(train), pipeline, 1, seed=5, output="numpy", shard=None, **kw))

    assert depth(num_workers=1, prefetch_factor=1) == 2
    assert depth(num_workers=2, prefetch_factor=1) == 3
    assert depth(num_workers=1, prefetch_factor=3) == 4
    assert depth(depth=2) == 2
    # The signature's default depth is the loader's.
    assert depth() == inspect.signature(train.Loader).parameters["depth"].default
    # num_workers=0 (DataLoader's "no worker processes") is one decode thread.
    assert depth(num_workers=0, prefetch_factor=1) == 2
    zero = batches(train.Loader(folder(train), pipeline, 2, num_workers=0, seed=5, output="numpy", shard=None))
    assert all(np.array_equal(x, p) for (x, _), (p, _) in zip(a, zero))
    with pytest.raises(tp_error_class(), match="thread"):
        train.Loader(folder(train), pipeline, 2, workers=0, shard=None)
    with pytest.raises(TypeError, match="both workers= and num_workers="):
        train.Loader(folder(train), pipeline, 2, workers=3, num_workers=3)
    with pytest.raises(TypeError, match="both depth= and prefetch_factor="):
        train.Loader(folder(train), pipeline, 2, depth=5, prefetch_factor=2)
    with pytest.raises(ValueError, match="prefetch_factor"):
        train.Loader(folder(train), pipeline, 2, prefetch_factor=0)


def mixed_and_plain(train, mix, workers=2, batch=6):
    """One epoch with `mix` and the same epoch unmixed (same seed)."""
    pipeline = train.Pipeline([train.RandomResizedCrop(32), train.ToTensor()])
    kw = dict(seed=3, output="numpy", shard=None, drop_last=True)
    plain = batches(train.Loader(folder(train), pipeline, batch, workers, **kw))
    mixed = batches(train.Loader(folder(train), pipeline, batch, workers, mix=mix, **kw))
    return plain, mixed


def test_mixup_mixes_each_sample_with_sample_n_minus_1_minus_i(train):
    plain, mixed = mixed_and_plain(train, train.MixUp(alpha=0.4, num_classes=2))
    assert len(mixed) == 1
    (x, y), (mx, targets) = plain[0], mixed[0]
    n = len(y)
    assert targets.shape == (n, 2) and targets.dtype == np.float32
    np.testing.assert_allclose(targets.sum(axis=1), 1.0, rtol=1e-6)
    # One lambda for the batch (mode "batch"), in [0, 1], no smoothing.
    lams = [targets[i, int(y[i])] for i in range(n) if y[i] != y[n - 1 - i]]
    assert lams, "the fixture's batch pairs two classes"
    lam = lams[0]
    assert 0.0 <= lam <= 1.0 and np.allclose(lams, lam)
    for i in range(n):
        j = n - 1 - i
        np.testing.assert_allclose(mx[i], lam * x[i] + (1 - lam) * x[j], atol=1e-5)
        expect = np.zeros(2, np.float32)
        expect[int(y[i])] += lam
        expect[int(y[j])] += 1 - lam
        np.testing.assert_allclose(targets[i], expect, atol=1e-6)


def test_cutmix_pastes_a_box_of_the_partner_with_lambda_its_area(train):
    plain, mixed = mixed_and_plain(train, train.CutMix(alpha=1.0, num_classes=2))
    (x, y), (mx, targets) = plain[0], mixed[0]
    n, _, h, w = x.shape
    np.testing.assert_allclose(targets.sum(axis=1), 1.0, rtol=1e-6)
    pasted_pairs = 0
    for i in range(n):
        j = n - 1 - i
        assert np.all((mx[i] == x[i]) | (mx[i] == x[j]))
        from_partner = np.all(mx[i] == x[j], axis=0) & np.any(x[i] != x[j], axis=0)
        rows, cols = np.nonzero(from_partner)
        if not len(rows):
            continue
        # One box: all of it the partner's, the rest the sample's own.
        box = np.zeros_like(from_partner)
        box[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1] = True
        np.testing.assert_array_equal(mx[i][:, box], x[j][:, box])
        np.testing.assert_array_equal(mx[i][:, ~box], x[i][:, ~box])
        if y[i] != y[j]:
            lam = targets[i, int(y[i])]
            # The box's area is 1 - lambda (lambda corrected to the clipped box).
            assert box.sum() == round((1 - lam) * h * w)
            pasted_pairs += 1
    assert pasted_pairs > 0, "no box pasted between samples of two classes"


def test_timm_mixup_switch_gives_the_same_batches_for_any_worker_count_and_resumes(train):
    mix = train.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, switch_prob=0.5, label_smoothing=0.1, num_classes=2)
    pipeline = train.Pipeline([train.RandomResizedCrop(32), train.ToTensor()])
    kw = dict(seed=9, output="numpy", shard=None, mix=mix)
    one = batches(train.Loader(folder(train), pipeline, 2, 1, **kw))
    three = batches(train.Loader(folder(train), pipeline, 2, 3, **kw))
    assert len(one) == 3
    for (a, s), (b, t) in zip(one, three):
        assert np.array_equal(a, b) and np.array_equal(s, t)
        # Smoothing 0.1 over 2 classes: every target at least 0.05.
        assert s.min() >= 0.05 - 1e-6 and np.allclose(s.sum(axis=1), 1.0)
    # Resume after the first batch: the rest is the same.
    loader = train.Loader(folder(train), pipeline, 2, 2, **kw)
    next(iter(loader))
    state = loader.state_dict()
    again = train.Loader(folder(train), pipeline, 2, 1, **kw)
    again.load_state_dict(state)
    rest = batches(again)
    assert len(rest) == 2
    for (a, s), (b, t) in zip(one[1:], rest):
        assert np.array_equal(a, b) and np.array_equal(s, t)


def test_random_choice_of_mixup_and_cutmix_is_timms_switch(train):
    mixup, cutmix = train.MixUp(alpha=0.2, num_classes=2), train.CutMix(alpha=1.0, num_classes=2)
    either = train.RandomChoice([cutmix, mixup])
    assert either == train.Mixup(mixup_alpha=0.2, cutmix_alpha=1.0, switch_prob=0.5, label_smoothing=0.0, num_classes=2)
    assert train.RandomChoice([mixup, cutmix], p=[3, 1]).switch_prob == 0.25
    # Each batch is one or the other: a blend of its pair, or a box pasted
    # from it; over a few epochs both happen.
    pipeline = train.Pipeline([train.RandomResizedCrop(32), train.ToTensor()])
    kw = dict(seed=3, output="numpy", shard=None, drop_last=True)
    plain_loader = train.Loader(folder(train), pipeline, 2, 2, **kw)
    mixed_loader = train.Loader(folder(train), pipeline, 2, 2, mix=either, **kw)
    kinds = {"blended": 0, "pasted": 0}
    for _ in range(6):
        for (x, y), (mx, targets) in zip(batches(plain_loader), batches(mixed_loader)):
            np.testing.assert_allclose(targets.sum(axis=1), 1.0, rtol=1e-6)
            if y[0] == y[1]:
                continue  # lambda is not in the targets
            lam = targets[0, int(y[0])]
            assert not np.array_equal(mx, x) or lam == 1.0, "an unmixed batch with mixed targets"
            if np.array_equal(mx, x):
                continue
            blended = np.allclose(mx[0], lam * x[0] + (1 - lam) * x[1], atol=1e-5)
            pasted = np.all((mx == x) | (mx == x[::-1]))
            assert blended != pasted, "neither (or both) a MixUp and a CutMix of the pair"
            kinds["blended" if blended else "pasted"] += 1
    assert kinds["blended"] > 0 and kinds["pasted"] > 0, kinds
    with pytest.raises(ValueError, match="one MixUp and one CutMix"):
        train.RandomChoice([mixup, mixup])
    with pytest.raises(ValueError, match="differ in num_classes"):
        train.RandomChoice([mixup, train.CutMix(num_classes=3)])
    # Augmentations: torchvision's per-sample choice, as before.
    assert isinstance(train.RandomChoice([train.RandomHorizontalFlip(), train.RandomVerticalFlip()]), train.Augment)


def test_mixing_refuses_what_it_cannot_do(train):
    pipeline = train.Pipeline([train.RandomResizedCrop(32), train.ToTensor()])
    mix = train.MixUp(num_classes=2)
    with pytest.raises(ValueError, match="batch_size must be even"):
        train.Loader(folder(train), pipeline, 3, mix=mix, shard=None)
    with pytest.raises(ValueError, match="labels= unset"):
        train.Loader(folder(train), pipeline, 2, mix=mix, labels="int64", shard=None)
    with pytest.raises(ValueError, match="fixed size"):
        train.Loader(folder(train), train.Pipeline([train.ToTensor()]), 2, mix=mix, shard=None, max_shape=(3, 512, 512))
    # A fixed size makes max_shape unused, not an error.
    assert len(batches(train.Loader(folder(train), pipeline, 2, mix=mix, shard=None, max_shape=(3, 64, 64),
                                    output="numpy"))) == 3
    with pytest.raises(ValueError, match="float32 batches; the pipeline's dtype is float16"):
        train.Loader(folder(train), train.Pipeline([train.RandomResizedCrop(32)], dtype="float16"), 2, mix=mix,
                     shard=None)
    with pytest.raises(ValueError, match="skip_errors=True"):
        train.Loader(folder(train), pipeline, 2, mix=mix, shard=None, skip_errors=True)
    with pytest.raises(ValueError, match="alpha"):
        train.Mixup(mixup_alpha=-1.0, num_classes=2)
    with pytest.raises(ValueError, match="mode"):
        train.Mixup(mode="row", num_classes=2)
    # num_classes is checked, not allocated: past 2^24 is refused at once.
    for classes in (0, 2**24 + 1, 10**10, 2**62, 2**63):
        with pytest.raises(ValueError, match="class"):
            train.Mixup(num_classes=classes)
    assert train.Mixup(num_classes=2**24).num_classes == 2**24
    # The soft targets count against buffer_limit: 3 buffers x 2 samples x
    # 2^24 classes x 4 bytes = 384 MiB, over a 100 MB limit the images alone
    # fit in.
    big = train.MixUp(num_classes=2**24)
    train.Loader(folder(train), pipeline, 2, mix=mix, shard=None, depth=3, buffer_limit=100_000_000)
    with pytest.raises(tp_error(train), match="buffer_limit"):
        train.Loader(folder(train), pipeline, 2, mix=big, shard=None, depth=3, buffer_limit=100_000_000)
    # A label past num_classes fails its batch, naming the cause.
    loader = train.Loader(folder(train), pipeline, 2, mix=train.MixUp(num_classes=1), shard=None)
    with pytest.raises(tp_error(train), match="class index below num_classes"):
        batches(loader)
    # An odd last batch is refused at once unless drop_last.
    with pytest.raises(ValueError, match="last batch would hold 1 samples"):
        train.Loader(folder(train).take(5), pipeline, 2, mix=mix, shard=None, output="numpy")
    loader = train.Loader(folder(train).take(5), pipeline, 2, mix=mix, shard=None, output="numpy", drop_last=True)
    assert len(batches(loader)) == 2
    # An even remainder is fine without drop_last: 6 samples, batches of 4 and 2.
    loader = train.Loader(folder(train), pipeline, 4, mix=mix, shard=None, output="numpy")
    assert [len(y) for _, y in batches(loader)] == [4, 2]


def tp_error(train):
    return tp_error_class()


def tp_error_class():
    import tensorprep

    return tensorprep.Error


def test_preview_shows_the_loaders_samples_de_normalised(train, tmp_path):
    from tensorprep import _native

    pipeline = train.Pipeline([train.RandomResizedCrop(48), train.RandomHorizontalFlip(), train.ToTensor(),
                               train.Normalize(*IMAGENET)])
    out = tmp_path / "grid.png"
    image = train.preview(folder(train), pipeline, out=out, samples=5, seed=4, epoch=2, columns=2)
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    same, tiles = _native.preview(folder(train), pipeline, samples=5, columns=2, seed=4, epoch=2)
    assert np.array_equal(image, same) and len(tiles) == 5
    # Two columns, three rows of 48 x 48 tiles.
    assert image.shape[1] >= 2 * 48 and image.shape[0] >= 3 * 48
    Image = pytest.importorskip("PIL.Image")
    with Image.open(out) as png:
        assert png.mode == "RGB" and png.size == (image.shape[1], image.shape[0])
        assert np.array_equal(np.asarray(png), image)
    # Each tile: the loader's sample (same seed, epoch, order), de-normalised.
    loader = train.Loader(folder(train), pipeline, 5, seed=4, output="numpy", shard=None)
    loader.set_epoch(2)
    x, _ = next(iter(loader))
    mean, std = (np.array(v, np.float32).reshape(3, 1, 1) for v in IMAGENET)
    expect = np.clip(np.round((x * std + mean) * 255), 0, 255).astype(np.uint8).transpose(0, 2, 3, 1)
    for k, (tx, ty, w, h) in enumerate(tiles):
        assert (w, h) == (48, 48)
        np.testing.assert_array_equal(image[ty : ty + h, tx : tx + w], expect[k], err_msg=f"tile {k}")


def test_preview_refuses_bad_arguments(train):
    with pytest.raises(ValueError, match="1 to 256 samples, not 0"):
        train.preview(folder(train), samples=0)
    with pytest.raises(ValueError, match="output size varies"):
        train.preview(folder(train), train.Pipeline([train.ToTensor()]))
    with pytest.raises(TypeError, match="both pipeline= and preset="):
        train.preview(folder(train), train.Pipeline([train.CenterCrop(8)]), preset="imagenet-train")
    with pytest.raises(ValueError, match="no training preset"):
        train.preview(folder(train), preset="nope")
    import tensorprep

    broken = train.Samples([(b"not an image", 0)])
    with pytest.raises(tensorprep.Error, match="sample 0"):
        train.preview(broken, samples=1)
