"""Plans from Python: parity with Pillow + numpy, every input kind, out=,
batches, geometry and errors."""

import io
import os
import pathlib
import threading
import time

import numpy as np
import pytest
from PIL import Image

from conftest import fixture

PHOTOS = [
    "sample.jpg",
    "sklearn_china.jpg",
    "exif_orient6_grace_hopper.jpg",
    "sample_progressive.jpg",
    "sample_gray.jpg",
    "sample_cmyk.jpg",
    "lxqt_butterfly_kenneth_wimer.jpg",
]
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def pillow_eval(path):
    """torchvision's eval transform written with Pillow and numpy:
    Resize(256) (shorter side, the longer truncated, bilinear), CenterCrop(224)
    (offsets rounded half to even), ToTensor, Normalize; float32 throughout."""
    img = Image.open(path).convert("RGB")
    w, h = img.size
    if w <= h:
        size = (256, int(256 * h / w))
    else:
        size = (int(256 * w / h), 256)
    img = img.resize(size, Image.BILINEAR)
    w, h = img.size
    left, top = int(round((w - 224) / 2.0)), int(round((h - 224) / 2.0))
    img = img.crop((left, top, left + 224, top + 224))
    x = np.asarray(img, dtype=np.uint8).astype(np.float32) / np.float32(255)
    x = (x - MEAN) / STD
    return np.ascontiguousarray(x.transpose(2, 0, 1))


@pytest.fixture(scope="module")
def eval_plan(tp, turbo):
    return tp.Graph.preset("imagenet-eval").compile("jpeg", decoder=turbo)


@pytest.mark.parametrize("name", PHOTOS)
def test_imagenet_eval_equals_pillow_and_numpy_float_for_float(eval_plan, name):
    path = fixture(name)
    got = eval_plan(path)
    want = pillow_eval(path)
    assert got.shape == (3, 224, 224) and got.dtype == np.float32
    assert np.array_equal(got, want), f"{name}: max diff {np.abs(got - want).max()}"


def test_the_contract_compile_jpeg_returns_a_plan_of_3x224x224_float32(tp, turbo):
    plan = tp.Graph.preset("imagenet-eval").compile("jpeg", decoder="libjpeg-turbo")
    assert isinstance(plan, tp.Plan)
    out = plan(fixture("sample.jpg"))
    assert isinstance(out, np.ndarray) and out.shape == (3, 224, 224) and out.dtype == np.float32
    assert out.flags.c_contiguous and out.flags.writeable
    # The committed reference made by Pillow + numpy (tests/fixtures/make_fixtures.py).
    assert np.array_equal(out, np.load(fixture("sample_eval_f32.npy")).reshape(3, 224, 224))


def test_every_input_kind_gives_the_same_tensor(eval_plan):
    path = fixture("sklearn_china.jpg")
    data = pathlib.Path(path).read_bytes()
    want = eval_plan(path)
    for given in [
        pathlib.Path(path),
        data,
        bytearray(data),
        memoryview(data),
        np.frombuffer(data, dtype=np.uint8),
    ]:
        assert np.array_equal(eval_plan(given), want), type(given)


def test_numpy_images_run_through_the_same_graph(tp, eval_plan):
    path = fixture("sample.jpg")
    rgb = np.asarray(Image.open(path).convert("RGB"))
    # Pillow's pixels through the plan's pixel ops: the file's tensor.
    assert np.array_equal(eval_plan(rgb), eval_plan(path))
    # OpenCV's channel order, said so.
    assert np.array_equal(eval_plan(rgb[:, :, ::-1].copy(), format="bgr"), eval_plan(rgb))
    # A view with gaps between rows (a crop) is read through its strides.
    crop = rgb[10:260, 20:400]
    assert not crop.flags.c_contiguous
    assert np.array_equal(eval_plan(crop), eval_plan(np.ascontiguousarray(crop)))
    # A plan compiled for RGB pixels; any size.
    plan = tp.Graph.preset("imagenet-eval").compile("rgb")
    assert plan.input == "rgb"
    assert np.array_equal(plan(rgb), eval_plan(rgb))
    small = rgb[:100, :150].copy()
    assert plan(small).shape == (3, 224, 224)
    # PIL images as they are (RGB, RGBA, L); other modes are refused by name.
    pil = Image.open(path)
    assert np.array_equal(eval_plan(pil.convert("RGB")), eval_plan(path))
    assert np.array_equal(eval_plan(pil.convert("L")), eval_plan(np.asarray(pil.convert("L"))))
    with pytest.raises(tp.InputError, match="mode P"):
        eval_plan(pil.convert("P"))
    # Gray: (H, W) and (H, W, 1).
    gray = np.asarray(Image.open(path).convert("L"))
    assert np.array_equal(eval_plan(gray), eval_plan(gray[:, :, None]))


def test_nv21_frames_as_planes_or_one_buffer_equal_opencvs_conversion(tp):
    # The frame and OpenCV's COLOR_YUV2RGB_NV21 of it (tests/fixtures/make_fixtures.py).
    w, h = 128, 96
    frame = np.fromfile(fixture("frame_128x96.nv21"), dtype=np.uint8)
    y = frame[: w * h].reshape(h, w)
    vu = frame[w * h :].reshape(h // 2, w // 2, 2)
    rgb = np.asarray(Image.open(fixture("cv_frame_nv21_rgb.png")).convert("RGB"))
    graph = tp.Graph.preset("imagenet-eval-nhwc-u8")
    plan = graph.compile("nv21", yuv_range="limited")
    want = graph.compile("rgb")(rgb)
    assert np.array_equal(plan((y, vu)), want)
    assert np.array_equal(plan(frame.reshape(h * 3 // 2, w)), want)
    # NV12 is the same frame with U and V swapped.
    nv12 = graph.compile("nv12", yuv_range="limited")
    assert np.array_equal(nv12((y, vu[:, :, ::-1].copy())), want)


def test_out_writes_into_the_callers_array(eval_plan, tp):
    out = np.empty((3, 224, 224), dtype=np.float32)
    r = eval_plan(fixture("sample.jpg"), out=out)
    assert r is out
    assert np.array_equal(out, eval_plan(fixture("sample.jpg")))
    for bad in [
        np.empty((3, 224, 224), dtype=np.float64),
        np.empty((3, 224, 225), dtype=np.float32),
        np.empty((3, 224, 448), dtype=np.float32)[:, :, ::2],
    ]:
        with pytest.raises(tp.InputError):
            eval_plan(fixture("sample.jpg"), out=bad)
    ro = np.empty((3, 224, 224), dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises(tp.InputError, match="written"):
        eval_plan(fixture("sample.jpg"), out=ro)


def test_batch_equals_one_at_a_time_on_any_thread_count(eval_plan):
    paths = [fixture(p) for p in PHOTOS]
    one = np.stack([eval_plan(p) for p in paths])
    for threads in (1, 2, 5):
        assert np.array_equal(eval_plan.batch(paths, threads=threads), one)
    out = np.zeros_like(one)
    assert eval_plan.batch(paths, out=out) is out and np.array_equal(out, one)
    arr, geometries = eval_plan.batch(paths, return_geometry=True)
    assert len(geometries) == len(paths)
    assert geometries[1].input_size == Image.open(paths[1]).size


def test_a_batch_releases_the_gil(eval_plan):
    data = pathlib.Path(fixture("lxqt_butterfly_kenneth_wimer.jpg")).read_bytes()
    inputs = [data] * 24
    ticks = []
    done = threading.Event()

    def run():
        eval_plan.batch(inputs, threads=1)
        done.set()

    t = threading.Thread(target=run)
    t.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    # The main thread kept running Python while the batch ran (with the GIL
    # held it would have got no tick in between).
    assert len(ticks) > 5


VARYING = """{
    "image_processor_type": "CLIPImageProcessor",
    "do_resize": true, "size": {"shortest_edge": 224}, "resample": 3,
    "do_center_crop": false,
    "do_rescale": true, "rescale_factor": 0.00392156862745098,
    "do_normalize": true, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]
}"""


def test_outputs_whose_size_follows_the_image(tp):
    graph = tp.Graph.from_hugging_face(VARYING)
    assert graph.output_shape is None
    plan = graph.compile("jpeg")
    a = plan(fixture("sample.jpg"))  # 451x300
    b = plan(fixture("sklearn_china.jpg"))  # 640x427
    assert a.shape == (3, 224, 336) and b.shape == (3, 224, 335)
    with pytest.raises(tp.InputError, match="input 1"):
        plan.batch([fixture("sample.jpg"), fixture("sklearn_china.jpg")])
    assert plan.batch([fixture("sample.jpg")] * 2).shape == (2, 3, 224, 336)
    with pytest.raises(tp.InputError, match="no inputs"):
        plan.batch([])


def test_geometry_maps_boxes_back_through_the_letterbox(tp):
    plan = tp.Graph.preset("yolo-letterbox-640").compile("jpeg")
    tensor, g = plan.run(fixture("sklearn_china.jpg"))
    assert g.input_size == (640, 427) and g.output_size == (640, 640)
    sx, sy = g.scale
    ox, oy = g.offset
    assert sx == pytest.approx(1.0) and ox == pytest.approx(0.0) and oy > 0
    assert g.to_source((320.0, oy)) == pytest.approx((320.0, 0.0))
    boxes = np.array([[0, oy, 640, oy + 427], [100, 100, 50, 50]], dtype=np.float32)
    back = g.to_source_boxes(boxes)
    assert back.shape == (2, 4) and back.dtype == np.float64
    assert back[0] == pytest.approx([0, 0, 640, 427])
    pts = g.to_source(np.array([[320.0, oy], [0.0, 0.0]]))
    assert pts.shape == (2, 2) and pts[0] == pytest.approx([320.0, 0.0])
    assert "Geometry(" in repr(g)


def test_errors_are_exceptions_of_their_family(tp, eval_plan, tmp_path):
    data = pathlib.Path(fixture("sample.jpg")).read_bytes()
    with pytest.raises(tp.DecodeError, match="ends before"):
        eval_plan(data[: len(data) // 2])
    with pytest.raises(tp.DecodeError, match="GIF"):
        eval_plan(b"GIF89a" + b"\0" * 64)
    assert issubclass(tp.DecodeError, tp.Error)
    # Tracebacks name the classes as the package exports them.
    for name in ["Error", "DecodeError", "InputError", "LimitError", "GraphError", "DataError", "LoaderError"]:
        cls = getattr(tp, name)
        assert (cls.__module__, cls.__name__) == ("tensorprep", name)
    with pytest.raises(FileNotFoundError, match="nope.jpg"):
        eval_plan(str(tmp_path / "nope.jpg"))
    with pytest.raises(tp.InputError):
        eval_plan(np.zeros((4, 4, 5), dtype=np.uint8))
    with pytest.raises(tp.InputError):
        eval_plan(12)
    with pytest.raises(tp.GraphError, match="no preset"):
        tp.Graph.preset("imagenet")
    with pytest.raises(ValueError, match="decoder"):
        tp.Graph.preset("imagenet-eval").compile("jpeg", decoder="libpng")
    with pytest.raises(ValueError, match="pixel format"):
        tp.Graph.preset("imagenet-eval").compile("yuv444")
    with pytest.raises(tp.LimitError):
        tp.Graph.preset("imagenet-eval").compile("jpeg", max_pixels=1000)(data)
    # A batch names the input that failed.
    with pytest.raises(tp.DecodeError, match="input 1"):
        eval_plan.batch([data, data[:500], data])
    # A lenient plan decodes the truncated file as far as it goes.
    lenient = tp.Graph.preset("imagenet-eval").compile("jpeg", lenient=True)
    assert lenient(data[: len(data) // 2]).shape == (3, 224, 224)


def test_concurrent_calls_from_python_threads_agree(eval_plan):
    paths = [fixture(p) for p in PHOTOS[:4]]
    want = [eval_plan(p) for p in paths]
    results = {}

    def work(k):
        results[k] = [eval_plan(p) for p in paths]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert all(np.array_equal(a, b) for a, b in zip(results[k], want))


def test_help_and_reprs_describe_the_objects(tp):
    graph = tp.Graph.preset("imagenet-eval")
    text = repr(graph)
    assert "Resize" in text and "CenterCrop 224x224" in text and "Normalize" in text
    plan = graph.compile("jpeg")
    assert "Plan(" in repr(plan) and plan.output_shape == (3, 224, 224)
    assert plan.dtype == "float32" and plan.layout == "chw"
    assert "compiled graph" in tp.Plan.__doc__
    assert "decoder" in tp.Graph.compile.__doc__


def test_draft_decoding_is_pillows_draft_path(tp, turbo):
    """fast="draft" decodes at the DCT scale Pillow's draft("RGB", (256, 256))
    picks, then runs the same transform: Pillow's pixels, float for float."""
    import pickle

    graph = tp.Graph.preset("imagenet-eval")
    draft = graph.compile("jpeg", decoder=turbo, fast="draft")
    fast = graph.compile("jpeg", decoder=turbo, fast=True)
    for name in ("lxqt_butterfly_kenneth_wimer.jpg", "exif_orient6_grace_hopper.jpg"):
        img = Image.open(fixture(name))
        full = img.size
        img.draft("RGB", (256, 256))
        assert img.size != full, name  # the photo is reduced (1/4, 1/2)
        img = img.convert("RGB")
        # The size rule sees the full-size image, as in the exact mode.
        w, h = full
        size = (256, int(256 * h / w)) if w <= h else (int(256 * w / h), 256)
        img = img.resize(size, Image.BILINEAR)
        left, top = int(round((size[0] - 224) / 2.0)), int(round((size[1] - 224) / 2.0))
        x = np.asarray(img.crop((left, top, left + 224, top + 224)), dtype=np.uint8).astype(np.float32)
        want = np.ascontiguousarray(((x / np.float32(255) - MEAN) / STD).transpose(2, 0, 1))
        got = draft(fixture(name))
        assert np.array_equal(got, want), f"{name}: max diff {np.abs(got - want).max()}"
        # fast=True keeps twice the target: less reduced, closer to the exact tensor.
        exact = pillow_eval(fixture(name))
        assert np.abs(fast(fixture(name)) - exact).mean() < np.abs(got - exact).mean()
    for plan in (draft, fast):
        again = pickle.loads(pickle.dumps(plan))
        assert repr(again) == repr(plan)
        assert np.array_equal(again(fixture("lxqt_butterfly_kenneth_wimer.jpg")), plan(fixture("lxqt_butterfly_kenneth_wimer.jpg")))
    with pytest.raises(ValueError, match="draft"):
        graph.compile("jpeg", decoder=turbo, fast="quick")
    with pytest.raises(tp.InputError, match="libjpeg-turbo"):
        graph.compile("jpeg", decoder="zune-jpeg", fast="draft")


def test_graphs_and_plans_pickle(tp, eval_plan):
    import pickle

    graph = tp.Graph.convert("hf", fixture("graph", "hf_clip_preprocessor_config.json"))
    assert pickle.loads(pickle.dumps(graph)) == graph
    plan = graph.compile("jpeg", exif=True, lenient=True)
    again = pickle.loads(pickle.dumps(plan))
    assert repr(again) == repr(plan) and again.graph == plan.graph
    assert np.array_equal(again(fixture("sample.jpg")), plan(fixture("sample.jpg")))
    nv21 = pickle.loads(pickle.dumps(tp.Graph.preset("imagenet-eval").compile("nv21", yuv_range="limited")))
    assert nv21.input == "nv21"


def test_float_images_resize_as_pillow_f_mode_and_pytorch(tp):
    """resize_float against Pillow's F images (channel by channel) and, where
    torch is installed, torch.nn.functional.interpolate on float tensors."""
    rng = np.random.default_rng(3)
    depth = (rng.random((47, 61), dtype=np.float32) * 10 - 2).astype(np.float32)
    hdr = (rng.random((31, 41, 3), dtype=np.float32) * 4 - 0.5).astype(np.float32)
    filters = {"nearest": Image.NEAREST, "box": Image.BOX, "bilinear": Image.BILINEAR,
               "hamming": Image.HAMMING, "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS}
    for name, f in filters.items():
        for size, box in [((23, 17), None), ((90, 70), None), ((20, 30), (2.5, 1.25, 35.5, 28.0))]:
            got = tp.resize_float(depth, size, name, box=box)
            want = np.asarray(Image.fromarray(depth, mode="F").resize(size, f, box=box), dtype=np.float32)
            assert got.shape == (size[1], size[0]) and got.dtype == np.float32
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (name, size, box)
    got = tp.resize_float(hdr, (17, 13), "bicubic")
    want = np.stack([np.asarray(Image.fromarray(np.ascontiguousarray(hdr[..., c]), mode="F")
                                .resize((17, 13), Image.BICUBIC)) for c in range(3)], axis=-1)
    assert got.shape == (13, 17, 3) and np.array_equal(got, want)
    out = np.empty((13, 17, 3), np.float32)
    assert tp.resize_float(hdr, (17, 13), "bicubic", out=out) is out and np.array_equal(out, want)
    with pytest.raises(tp.InputError, match="float32"):
        tp.resize_float(depth.astype(np.float64), (10, 10))
    with pytest.raises(tp.InputError, match="shape"):
        tp.resize_float(hdr, (17, 13), out=np.empty((13, 17), np.float32))
    with pytest.raises(tp.InputError, match="PyTorch's resize"):
        tp.resize_float(depth, (10, 10), "torch-float-bilinear", box=(0.5, 0, 10, 10))
    with pytest.raises(tp.InputError, match="float images"):
        tp.resize_float(depth, (10, 10), "cv2-linear")
    try:
        import torch
    except ImportError:
        return
    for mode in ("bilinear", "bicubic"):
        for size in [(23, 17), (90, 70)]:
            got = tp.resize_float(hdr, size, f"torch-float-{mode}")
            x = torch.from_numpy(np.ascontiguousarray(hdr.transpose(2, 0, 1)))[None]
            want = torch.nn.functional.interpolate(x, size=size[::-1], mode=mode, antialias=True,
                                                   align_corners=False)[0].numpy().transpose(1, 2, 0)
            assert np.array_equal(got, want), (mode, size)
