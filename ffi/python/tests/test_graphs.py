"""Graphs from Python: importers against their libraries (the committed
references, and the libraries themselves when installed), files, embedding,
self-tests."""

import importlib.util
import json
import shutil

import numpy as np
import pytest
from PIL import Image

from conftest import fixture


def references():
    """The importer cases of tests/fixtures/graph/refs.txt: what
    transformers, timm and torchvision computed on real photos."""
    cases = []
    with open(fixture("graph", "refs.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            case, importer, source, photo, png, table, layout, *_ = line.split()
            if importer.startswith("hf") or importer in ("timm", "torchvision"):
                cases.append((case, importer, source, photo, png, table, layout))
    return cases


def reference_tensor(png, table, layout):
    """The library's output: its normalization table applied to the 8-bit
    image its geometry made (both committed; the fixture script checked the
    two give the library's tensor bit for bit)."""
    u8 = np.asarray(Image.open(fixture("graph", png)).convert("RGB"))
    tab = np.fromfile(fixture("graph", table), dtype="<f4").reshape(3, 256)
    out = np.stack([tab[c][u8[:, :, c]] for c in range(3)])
    return out if layout == "chw" else out.transpose(1, 2, 0)


def graph_of(tp, importer, source):
    if importer == "hf":
        # The default variant itself (without `backend` the installed torch picks one).
        return tp.Graph.from_hugging_face(fixture("graph", source), backend="torchvision")
    if importer.startswith("hf:"):
        return tp.Graph.from_hugging_face(fixture("graph", source), backend=importer[3:])
    if importer == "timm":
        return tp.Graph.from_timm(fixture("graph", source))
    return tp.Graph.torchvision(source)


@pytest.mark.parametrize("case", references(), ids=lambda c: c[0])
def test_importers_reproduce_their_library_float_for_float(tp, turbo, case):
    name, importer, source, photo, png, table, layout = case
    plan = graph_of(tp, importer, source).compile("jpeg", decoder=turbo)
    got = plan(fixture(photo))
    want = reference_tensor(png, table, layout)
    assert got.shape == want.shape and np.array_equal(got, want), name


HF_CASES = [
    "hf_vit", "hf_deit", "hf_beit", "hf_clip", "hf_convnext", "hf_clip_modern",
    "hf_mobilenet_v1", "hf_mobilenet_v2", "hf_levit", "hf_poolformer", "hf_segformer",
    "hf_depth_anything",
]


def need(module):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (the committed references above check the importer without it)")


def test_torchvision_weights_transforms_live(tp, turbo):
    need("torchvision")
    import torch  # noqa: F401
    from torchvision.models import ResNet50_Weights, ViT_B_16_Weights

    for weights in [ResNet50_Weights.IMAGENET1K_V2, ViT_B_16_Weights.IMAGENET1K_V1]:
        plan = tp.Graph.torchvision(weights).compile("jpeg", decoder=turbo)
        for photo in ["sample.jpg", "sklearn_china.jpg"]:
            img = Image.open(fixture(photo)).convert("RGB")
            want = weights.transforms()(img).numpy()
            assert np.array_equal(plan(fixture(photo)), want), (weights, photo)


def test_timm_create_transform_live(tp, turbo):
    need("timm")
    from timm.data import create_transform, resolve_data_config

    for cfg_file in ["timm_resnet50_a1_config.json", "timm_vit_augreg_config.json", "timm_convnext_squash_config.json"]:
        with open(fixture("graph", cfg_file)) as f:
            cfg = json.load(f)
        pretrained = cfg.get("pretrained_cfg", cfg)
        transform = create_transform(**resolve_data_config(pretrained_cfg=pretrained))
        plan = tp.Graph.from_timm(pretrained).compile("jpeg", decoder=turbo)
        if cfg_file == "timm_resnet50_a1_config.json":  # a model object: its pretrained_cfg
            import timm

            model = timm.create_model("resnet50.a1_in1k", pretrained=False)
            assert tp.Graph.from_timm(model).ops == tp.Graph.from_timm(model.pretrained_cfg).ops
        for photo in ["sample.jpg", "sklearn_china.jpg"]:
            want = transform(Image.open(fixture(photo)).convert("RGB")).numpy()
            assert np.array_equal(plan(fixture(photo)), want), (cfg_file, photo)


def test_hugging_face_processors_live(tp, turbo):
    need("transformers")
    import transformers

    for name in HF_CASES:
        with open(fixture("graph", f"{name}_preprocessor_config.json")) as f:
            config = json.load(f)
        kind = config.get("image_processor_type") or config["feature_extractor_type"].replace(
            "FeatureExtractor", "ImageProcessor"
        )
        # The PIL backend (transformers 5 names it `...Pil`; before, the plain
        # class was PIL-based): the graphs reproduce Pillow's resampling.
        cls = getattr(transformers, kind + "Pil", None) or getattr(transformers, kind)
        processor = cls.from_dict(config)
        graph = tp.Graph.from_hugging_face(config, backend="pil")
        if name == "hf_clip_modern":  # the processor object itself: its to_dict and backend
            assert tp.Graph.from_hugging_face(processor).ops == graph.ops
        plan = graph.compile("jpeg", decoder=turbo)
        for photo in ["sample.jpg", "sklearn_china.jpg"]:
            img = Image.open(fixture(photo)).convert("RGB")
            want = processor(images=img, return_tensors="np")["pixel_values"][0]
            assert np.array_equal(plan(fixture(photo)), want), (name, photo)


def test_hugging_face_torchvision_backend_live(tp, turbo):
    """transformers' default backend (torchvision, needs torch >= 2.6): its
    processors, as `AutoImageProcessor` loads them, equal the graphs made from
    the same objects. torchvision resizes bilinear uint8 tensors natively or
    through float32 by its version and the CPU; without `backend` the graph
    follows the installed torchvision the same way."""
    need("transformers")
    need("torchvision")
    import platform

    import torch
    import transformers

    # On x86 without AVX2, PyTorch's generic float32 kernels round about 1
    # value in 10,000 differently from its AVX2 and AVX-512 ones, which the
    # float32 variant reproduces (measured with torch 2.15).
    generic = torch.backends.cpu.get_cpu_capability() == "DEFAULT" and platform.machine() in (
        "x86_64", "AMD64")
    for name in HF_CASES:
        with open(fixture("graph", f"{name}_preprocessor_config.json")) as f:
            config = json.load(f)
        kind = config.get("image_processor_type") or config["feature_extractor_type"].replace(
            "FeatureExtractor", "ImageProcessor"
        )
        processor = getattr(transformers, kind).from_dict(config)
        if processor.backend != "torchvision":
            pytest.skip(f"transformers fell back to the {processor.backend} backend (torch too old?)")
        graph = tp.Graph.from_hugging_face(processor)
        plan = graph.compile("jpeg", decoder=turbo)
        for photo in ["sample.jpg", "sklearn_china.jpg"]:
            img = Image.open(fixture(photo)).convert("RGB")
            want = processor(images=img, return_tensors="np")["pixel_values"][0]
            got = plan(fixture(photo))
            if generic:
                assert got.shape == want.shape and (got != want).mean() < 1e-3, (name, photo)
            else:
                assert np.array_equal(got, want), (name, photo)


def fake_torch(monkeypatch, torchvision_version, capability, machine):
    """Installs stand-ins for torch and torchvision (their version and the
    CPU capability torch reports) and for the machine's name."""
    import platform
    import sys
    import types

    torch = types.ModuleType("torch")
    backends = types.ModuleType("torch.backends")
    cpu = types.ModuleType("torch.backends.cpu")
    cpu.get_cpu_capability = lambda: capability
    torch.backends, backends.cpu = backends, cpu
    torchvision = types.ModuleType("torchvision")
    torchvision.__version__ = torchvision_version
    for name, module in [("torch", torch), ("torch.backends", backends),
                         ("torch.backends.cpu", cpu), ("torchvision", torchvision)]:
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(platform, "machine", lambda: machine)


@pytest.mark.parametrize("torchvision_version, capability, machine, variant", [
    ("0.21.0+cu124", "AVX512", "x86_64", "torchvision-float32"),  # torch 2.6
    ("0.23.0", "AVX2", "x86_64", "torchvision"),
    ("0.24.0", "AVX512", "x86_64", "torchvision"),  # torch 2.9
    ("0.26.0", "DEFAULT", "aarch64", "torchvision-float32"),
    ("0.27.0", "DEFAULT", "aarch64", "torchvision"),  # torch 2.12
    ("0.29.2+cu132", "DEFAULT", "x86_64", "torchvision-float32"),  # no AVX2
    (None, None, None, "torchvision"),  # torch is not installed
])
def test_hugging_face_default_follows_the_installed_torchvision(
        tp, monkeypatch, torchvision_version, capability, machine, variant):
    """Without `backend`, a configuration or a processor of the torchvision
    backend gives the variant the installed torchvision runs on this CPU:
    BILINEAR on uint8 (`"torchvision"`, current torch on AVX2, AVX-512 and
    ARM) or through float32; `"torchvision"` when torch is not installed."""
    import sys

    if torchvision_version is None:
        monkeypatch.setitem(sys.modules, "torchvision", None)  # import fails
    else:
        fake_torch(monkeypatch, torchvision_version, capability, machine)
    with open(fixture("graph", "hf_vit_preprocessor_config.json")) as f:
        config = json.load(f)

    class Processor:
        backend = "torchvision"

        def to_dict(self):
            return config

    want = tp.Graph.from_hugging_face(config, backend=variant)
    other = "torchvision" if variant == "torchvision-float32" else "torchvision-float32"
    assert want.ops != tp.Graph.from_hugging_face(config, backend=other).ops
    assert tp.Graph.from_hugging_face(config).ops == want.ops
    assert tp.Graph.from_hugging_face(Processor()).ops == want.ops
    Processor.backend = "pil"
    pil = tp.Graph.from_hugging_face(config, backend="pil")
    assert tp.Graph.from_hugging_face(Processor()).ops == pil.ops
    # The uint8 variant's older name is still taken.
    assert tp.Graph.from_hugging_face(config, backend="torchvision-avx2").ops == (
        tp.Graph.from_hugging_face(config, backend="torchvision").ops)


def test_graph_files_round_trip_and_verify(tp, tmp_path):
    g = tp.Graph.convert("hf", fixture("graph", "hf_vit_preprocessor_config.json"), name="pixel_values")
    assert g.self_tests >= 1 and g.output_name == "pixel_values"
    path = tmp_path / "vit.tpp"
    g.save(path)
    loaded = tp.Graph.load(path)
    assert loaded == g and tp.Graph.load(path.read_bytes()) == g
    reports = loaded.verify()
    assert reports and all(r.passed for r in reports), [str(r) for r in reports]
    assert all(bool(r) for r in reports) and "exact" in str(reports[0])
    # Every truncation is a GraphError, never a crash.
    data = path.read_bytes()
    for n in [0, 4, 8, len(data) // 2, len(data) - 1]:
        with pytest.raises(tp.GraphError):
            tp.Graph.load(data[:n])
    with pytest.raises(FileNotFoundError):
        tp.Graph.load(tmp_path / "missing.tpp")


def test_hugging_face_configs_as_dict_text_file_or_directory(tp, tmp_path):
    path = fixture("graph", "hf_clip_preprocessor_config.json")
    with open(path) as f:
        text = f.read()
    shutil.copy(path, tmp_path / "preprocessor_config.json")
    graphs = [
        tp.Graph.from_hugging_face(path),
        tp.Graph.from_hugging_face(text),
        tp.Graph.from_hugging_face(json.loads(text)),
        tp.Graph.from_hugging_face(tmp_path),
    ]
    assert all(g == graphs[0] for g in graphs)
    with pytest.raises(tp.GraphError):
        tp.Graph.from_hugging_face({"image_processor_type": "ViTImageProcessor", "size": "big"})


def test_embed_into_onnx_and_find_it_again(tp, tmp_path):
    model = tmp_path / "yolo.onnx"
    shutil.copy(fixture("graph", "ultralytics_yolov8n_320.onnx"), model)
    g = tp.Graph.convert("ultralytics", model)
    g.embed(model)
    found = tp.Graph.for_model(model)
    assert found == g and found.output_shape == (3, 320, 320)
    assert all(r.passed for r in found.verify())
    # A graph that does not fit the model's input is refused, naming both.
    with pytest.raises(tp.GraphError, match="320"):
        tp.Graph.preset("imagenet-eval").embed(model, tmp_path / "other.onnx")
    assert not (tmp_path / "other.onnx").exists()
    with pytest.raises(tp.GraphError):
        tp.Graph.for_model(fixture("sample.jpg"))


def test_presets_and_torchvision_names(tp):
    assert "imagenet-eval" in tp.Graph.presets()
    names = tp.Graph.presets(torchvision=True)
    assert "ResNet50_Weights.IMAGENET1K_V2" in names
    assert tp.Graph.preset("ResNet50_Weights.IMAGENET1K_V2") == tp.Graph.torchvision("ResNet50_Weights.IMAGENET1K_V2")
    g = tp.Graph.preset("imagenet-eval-nhwc-u8")
    assert g.dtype == "uint8" and g.output_shape == (224, 224, 3)
    assert g.compile("jpeg")(fixture("sample.jpg")).dtype == np.uint8
