//! The command-line contract: the exact `run` and `bench` forms other tools rely on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tensorprep::TensorMut;
use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};

fn tensorprep<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tensorprep"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A fresh directory under cargo's per-target temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A float32 `.npy` file's shape and values.
fn read_npy(path: &Path) -> (String, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8(bytes[10..10 + header_len].to_vec()).unwrap();
    assert!(header.contains("'descr': '<f4'"), "{header}");
    let values = bytes[10 + header_len..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    (header, values)
}

/// The tensor the library's own plan computes for `name`, with the decoder
/// the CLI picks by default (libjpeg-turbo when built in).
fn library_tensor(name: &str) -> Vec<f32> {
    library_tensor_with(
        name,
        tensorprep::jpeg::Backend::available().next_back().unwrap(),
    )
}

/// [`library_tensor`] with the decoder `backend`.
fn library_tensor_with(name: &str, backend: tensorprep::jpeg::Backend) -> Vec<f32> {
    let plan = Pipeline::imagenet_eval()
        .with_decoder(backend)
        .compile(InputDesc::Encoded)
        .unwrap();
    let mut out = vec![0f32; 3 * 224 * 224];
    let bytes = std::fs::read(fixture(name)).unwrap();
    plan.run(
        &mut PlanState::new(),
        Input::Encoded(&bytes),
        TensorMut::F32(&mut out),
    )
    .unwrap();
    out
}

#[test]
fn run_with_one_input_writes_that_npy_file() {
    let dir = scratch("run_one");
    let out = dir.join("cat.npy");
    let o = tensorprep(&[
        "run",
        "--preset",
        "imagenet-eval",
        &fixture("sample.jpg"),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (header, values) = read_npy(&out);
    assert!(header.contains("'shape': (3, 224, 224)"), "{header}");
    assert!(values == library_tensor("sample.jpg"));
}

#[test]
fn run_with_several_inputs_fills_a_directory_and_survives_a_bad_file() {
    let dir = scratch("run_many");
    let bad = dir.join("broken.jpg");
    let sample = std::fs::read(fixture("sample.jpg")).unwrap();
    std::fs::write(&bad, &sample[..sample.len() / 3]).unwrap();
    let out = dir.join("tensors");
    let args = |fail_fast: bool| {
        let mut a = vec![
            "run".to_owned(),
            "--preset".to_owned(),
            "imagenet-eval".to_owned(),
            fixture("sample.jpg"),
            bad.to_string_lossy().into_owned(),
            fixture("sklearn_china.jpg"),
            "--out".to_owned(),
            out.to_string_lossy().into_owned(),
        ];
        if fail_fast {
            a.push("--fail-fast".to_owned());
        }
        a
    };
    let o = tensorprep(&args(false));
    let stderr = String::from_utf8_lossy(&o.stderr);
    // One bad file: named in the error, the exit status says so, the others are written.
    assert!(!o.status.success());
    assert!(
        stderr.contains("broken.jpg") && stderr.contains("JPEG"),
        "{stderr}"
    );
    assert!(read_npy(&out.join("sample.npy")).1 == library_tensor("sample.jpg"));
    assert!(read_npy(&out.join("sklearn_china.npy")).1 == library_tensor("sklearn_china.jpg"));
    assert!(!out.join("broken.npy").exists());
    // --fail-fast stops there.
    std::fs::remove_dir_all(&out).unwrap();
    let o = tensorprep(&args(true));
    assert!(!o.status.success());
    assert!(out.join("sample.npy").exists() && !out.join("sklearn_china.npy").exists());
}

#[test]
fn bench_prints_images_per_second_last() {
    let dir = scratch("bench");
    for name in ["sample.jpg", "sklearn_china.jpg", "sample_gray.jpg"] {
        std::fs::copy(fixture(name), dir.join(name)).unwrap();
    }
    std::fs::write(dir.join("notes.txt"), "not an image").unwrap();
    let o = tensorprep(&[
        "bench",
        "--preset",
        "imagenet-eval",
        dir.to_str().unwrap(),
        "--threads",
        "2",
        "--repeat",
        "2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let last = stdout.lines().last().unwrap();
    let rate: f64 = last
        .strip_prefix("images/s: ")
        .unwrap_or_else(|| panic!("last line: {last}"))
        .parse()
        .unwrap();
    assert!(rate > 0.0);
    assert!(
        stdout.contains("files: 3 images") && stdout.contains("1 non-image files skipped"),
        "{stdout}"
    );
}

#[test]
fn unavailable_decoder_and_unknown_preset_explain_themselves() {
    let out = scratch("decoder").join("out.npy");
    let o = tensorprep(&[
        "run",
        "--preset",
        "imagenet-eval",
        &fixture("sample.jpg"),
        "--out",
        out.to_str().unwrap(),
        "--decoder",
        "libjpeg-turbo",
    ]);
    if tensorprep::jpeg::Backend::LibjpegTurbo.is_available() {
        // This test binary's tensorprep has the backend; the CLI's build may not
        // (features unify per build), so only check the message when it fails.
        if !o.status.success() {
            assert!(String::from_utf8_lossy(&o.stderr).contains("--features libjpeg-turbo"));
        }
    } else {
        assert!(!o.status.success());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("--features libjpeg-turbo"), "{stderr}");
    }
    let o = tensorprep(&["bench", "--preset", "no-such", "."]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("imagenet-eval"));
}

fn run_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    let o = tensorprep(args);
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
fn convert_inspect_verify_embed_extract_round_trip() {
    let dir = scratch("graphs");
    let tpp = dir.join("yolo.tpp");
    let onnx_in = fixture("graph/ultralytics_yolov8n_320.onnx");
    run_ok(&[
        "convert",
        "--from",
        "ultralytics",
        &onnx_in,
        "-o",
        tpp.to_str().unwrap(),
    ]);
    let o = run_ok(&["inspect", tpp.to_str().unwrap(), "--size", "451x300"]);
    let text = String::from_utf8_lossy(&o.stdout);
    // The letterbox of a 451x300 photo into 320x320: 320x213, then the canvas.
    assert!(
        text.contains("-> 320x213") && text.contains("-> 320x320"),
        "{text}"
    );
    assert!(
        text.contains("output: `images` 3x320x320 F32 Chw"),
        "{text}"
    );
    let o = run_ok(&["verify", tpp.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("pattern: exact"));

    let with = dir.join("with_graph.onnx");
    run_ok(&[
        "embed",
        tpp.to_str().unwrap(),
        &onnx_in,
        "-o",
        with.to_str().unwrap(),
    ]);
    let original = std::fs::read(&onnx_in).unwrap();
    let embedded = std::fs::read(&with).unwrap();
    // The model's bytes are untouched; one metadata entry follows them.
    assert!(embedded.starts_with(&original) && embedded.len() > original.len());
    let back = dir.join("back.tpp");
    run_ok(&[
        "extract",
        with.to_str().unwrap(),
        "-o",
        back.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&tpp).unwrap());
    // Embedding again replaces the entry instead of adding a second one.
    run_ok(&["embed", tpp.to_str().unwrap(), with.to_str().unwrap()]);
    assert_eq!(std::fs::read(&with).unwrap(), embedded);

    // `--graph` accepts the model itself (embedded graph) and the sidecar.
    let out_a = dir.join("a.npy");
    let out_b = dir.join("b.npy");
    run_ok(&[
        "run",
        "--graph",
        with.to_str().unwrap(),
        &fixture("sample.jpg"),
        "--out",
        out_a.to_str().unwrap(),
        "--decoder",
        "zune-jpeg",
    ]);
    run_ok(&[
        "run",
        "--graph",
        tpp.to_str().unwrap(),
        &fixture("sample.jpg"),
        "--out",
        out_b.to_str().unwrap(),
        "--decoder",
        "zune-jpeg",
    ]);
    assert_eq!(read_npy(&out_a), read_npy(&out_b));
    let (header, values) = read_npy(&out_a);
    assert!(header.contains("(3, 320, 320)"), "{header}");
    // The canvas is 114 / 255 where the photo does not reach.
    assert_eq!(values[0], 114.0 / 255.0);
}

#[test]
fn a_graph_runs_like_the_preset_it_describes() {
    let dir = scratch("graph_vs_preset");
    let tpp = dir.join("r50.tpp");
    run_ok(&[
        "convert",
        "--from",
        "torchvision:ResNet50_Weights.IMAGENET1K_V1",
        "-o",
        tpp.to_str().unwrap(),
    ]);
    let a = dir.join("graph.npy");
    let b = dir.join("preset.npy");
    let photo = fixture("sklearn_china.jpg");
    run_ok(&[
        "run",
        "--graph",
        tpp.to_str().unwrap(),
        &photo,
        "--out",
        a.to_str().unwrap(),
        "--decoder",
        "zune-jpeg",
    ]);
    run_ok(&[
        "run",
        "--preset",
        "imagenet-eval",
        &photo,
        "--out",
        b.to_str().unwrap(),
        "--decoder",
        "zune-jpeg",
    ]);
    assert_eq!(read_npy(&a), read_npy(&b));
    assert_eq!(
        read_npy(&b).1,
        library_tensor_with("sklearn_china.jpg", tensorprep::jpeg::Backend::Zune)
    );
    let o = run_ok(&[
        "bench",
        "--graph",
        tpp.to_str().unwrap(),
        &fixture(""),
        "--repeat",
        "1",
        "--decoder",
        "zune-jpeg",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.lines().last().unwrap().starts_with("images/s: "),
        "{stdout}"
    );
    assert!(stdout.contains("pipeline: graph"), "{stdout}");
}

#[test]
fn verify_fails_when_the_device_computes_differently() {
    use tensorprep::graph::Graph;
    let dir = scratch("tampered");
    let tpp = dir.join("clip.tpp");
    run_ok(&[
        "convert",
        "--from",
        "hf",
        &fixture("graph/hf_clip_preprocessor_config.json"),
        "-o",
        tpp.to_str().unwrap(),
    ]);
    // The same file with one mean changed and the self-test kept: what a
    // device with a different normalization would compute.
    let mut graph = Graph::load(&tpp).unwrap();
    let ops: Vec<_> = graph
        .pipeline
        .ops()
        .iter()
        .map(|op| match op {
            tensorprep::pipeline::Op::Normalize(n) => {
                let mut n = *n;
                n.mean[1] += 1e-3;
                tensorprep::pipeline::Op::Normalize(n)
            }
            op => *op,
        })
        .collect();
    graph.pipeline = Pipeline::from_ops(&ops).unwrap();
    let bad = dir.join("bad.tpp");
    graph.save(&bad).unwrap();
    let o = tensorprep(&["verify", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAILED"));
}

#[test]
fn bad_graph_sources_explain_themselves() {
    let dir = scratch("bad_sources");
    let junk = dir.join("junk.tpp");
    std::fs::write(&junk, b"not a graph").unwrap();
    for (args, needle) in [
        (
            vec!["inspect", junk.to_str().unwrap()],
            "not a tensorprep graph",
        ),
        (
            vec!["convert", "--from", "torchvision:resnet51", "-o", "x.tpp"],
            "resnet51",
        ),
        (
            vec!["convert", "--from", "caffe", "-o", "x.tpp"],
            "--from caffe: graph import: unknown source `caffe`",
        ),
        (
            vec!["convert", "--from", "hf", "-o", "x.tpp"],
            "--from hf: hf import: needs its configuration or model file",
        ),
        (
            vec![
                "extract",
                &fixture("graph/ultralytics_yolov8n_320.onnx"),
                "-o",
                "x.tpp",
            ],
            "no `tensorprep.graph`",
        ),
        (
            vec![
                "run",
                "--graph",
                &fixture("sample.jpg"),
                &fixture("sample.jpg"),
                "--out",
                "x.npy",
            ],
            "no graph for",
        ),
    ] {
        let o = tensorprep(&args);
        assert!(!o.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn run_reads_png_webp_and_directories_by_content() {
    let dir = scratch("run_formats");
    let photos = dir.join("photos");
    std::fs::create_dir_all(photos.join("sub")).unwrap();
    // Names that lie about the format: the bytes decide.
    std::fs::copy(fixture("formats/rgb8.png"), photos.join("a.jpg")).unwrap();
    std::fs::copy(
        fixture("formats/sample_lossy.webp"),
        photos.join("sub/b.dat"),
    )
    .unwrap();
    std::fs::copy(fixture("sample.jpg"), photos.join("c")).unwrap();
    std::fs::write(photos.join("notes.txt"), "not an image").unwrap();
    let out = dir.join("tensors");
    let o = run_ok(&[
        "run",
        "--preset",
        "imagenet-eval",
        photos.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let stderr = stderr_of(&o);
    assert!(stderr.contains("wrote 3 tensor(s)"), "{stderr}");
    assert!(stderr.contains("1 non-image files left out"), "{stderr}");
    assert!(read_npy(&out.join("a.npy")).1 == library_tensor("formats/rgb8.png"));
    assert!(read_npy(&out.join("sub/b.npy")).1 == library_tensor("formats/sample_lossy.webp"));
    assert!(read_npy(&out.join("c.npy")).1 == library_tensor("sample.jpg"));
    // One batch file, in path order (a.jpg, c, sub/b.dat).
    let batch = dir.join("batch.npy");
    run_ok(&[
        "run",
        "--preset",
        "imagenet-eval",
        photos.to_str().unwrap(),
        "--batch-npy",
        batch.to_str().unwrap(),
    ]);
    let (header, values) = read_npy(&batch);
    assert!(header.contains("'shape': (3, 3, 224, 224)"), "{header}");
    assert!(values[..3 * 224 * 224] == library_tensor("formats/rgb8.png")[..]);
    let n = 3 * 224 * 224;
    assert!(values[n..2 * n] == library_tensor("sample.jpg")[..]);
    assert!(values[2 * n..] == library_tensor("formats/sample_lossy.webp")[..]);
    // `-o -`: the .npy on standard output.
    let o = run_ok(&[
        "run",
        "--preset",
        "imagenet-eval",
        &fixture("formats/rgba_lossless.webp"),
        "-o",
        "-",
    ]);
    assert!(o.stdout.starts_with(b"\x93NUMPY"));
    let piped = dir.join("piped.npy");
    std::fs::write(&piped, &o.stdout).unwrap();
    assert!(read_npy(&piped).1 == library_tensor("formats/rgba_lossless.webp"));
}

#[test]
fn nothing_is_created_when_every_input_fails() {
    let dir = scratch("run_all_fail");
    let gif = dir.join("x.gif");
    std::fs::write(&gif, b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap();
    let cut = dir.join("cut.png");
    let png = std::fs::read(fixture("formats/rgb8.png")).unwrap();
    std::fs::write(&cut, &png[..png.len() / 2]).unwrap();
    for out in ["single.npy", "many", "batch.npy"] {
        let target = dir.join(out);
        let mut args = vec![
            "run".to_owned(),
            "--preset".to_owned(),
            "imagenet-eval".to_owned(),
            gif.to_string_lossy().into_owned(),
        ];
        if out != "single.npy" {
            args.push(cut.to_string_lossy().into_owned());
        }
        args.push(
            if out == "batch.npy" {
                "--batch-npy"
            } else {
                "-o"
            }
            .to_owned(),
        );
        args.push(target.to_string_lossy().into_owned());
        let o = tensorprep(&args);
        assert!(!o.status.success());
        let stderr = stderr_of(&o);
        assert!(
            stderr.contains("GIF is not supported; this build reads JPEG, PNG, WebP"),
            "{stderr}"
        );
        assert!(stderr.contains("wrote nothing"), "{stderr}");
        assert!(!target.exists(), "{out} was created");
        assert!(!dir.join("batch.npy.tensorprep-tmp").exists());
    }
}

#[test]
fn max_pixels_and_lenient_decoding() {
    let dir = scratch("run_limits");
    let out = dir.join("out.npy");
    let o = tensorprep(&[
        "run",
        "--preset",
        "imagenet-eval",
        &fixture("sample.jpg"),
        "-o",
        out.to_str().unwrap(),
        "--max-pixels",
        "1000",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr_of(&o).contains("more than the limit of 1000"),
        "{}",
        stderr_of(&o)
    );
    // A truncated JPEG fails strictly; with --lenient it is decoded and reported.
    let cut = dir.join("cut.jpg");
    let jpeg = std::fs::read(fixture("sample.jpg")).unwrap();
    std::fs::write(&cut, &jpeg[..jpeg.len() * 2 / 3]).unwrap();
    let args = |lenient: bool| {
        let mut a = vec![
            "run".to_owned(),
            "--preset".to_owned(),
            "imagenet-eval".to_owned(),
            cut.to_string_lossy().into_owned(),
            "-o".to_owned(),
            out.to_string_lossy().into_owned(),
        ];
        if lenient {
            a.push("--lenient".to_owned());
        }
        a
    };
    let o = tensorprep(&args(false));
    assert!(!o.status.success());
    assert!(
        stderr_of(&o).contains("ends before the image does"),
        "{}",
        stderr_of(&o)
    );
    let o = run_ok(&args(true));
    let stderr = stderr_of(&o);
    assert!(
        stderr.contains("decoded leniently") && stderr.contains("cut.jpg"),
        "{stderr}"
    );
    assert_eq!(read_npy(&out).1.len(), 3 * 224 * 224);
}

#[test]
fn presets_version_and_decoder_flags_say_what_they_do() {
    // Every name `presets --torchvision` lists is accepted by --preset.
    let listed = run_ok(&["presets", "--torchvision"]);
    let names = String::from_utf8_lossy(&listed.stdout).into_owned();
    let dir = scratch("presets");
    let out = dir.join("t.npy");
    for name in names.lines().step_by(23) {
        run_ok(&[
            "run",
            "--preset",
            name,
            &fixture("sample.jpg"),
            "-o",
            out.to_str().unwrap(),
        ]);
    }
    let v = run_ok(&["--version"]);
    let v = String::from_utf8_lossy(&v.stdout).into_owned();
    assert!(
        v.contains("formats: JPEG, PNG, WebP") && v.contains("zune-jpeg"),
        "{v}"
    );
    assert!(
        v.contains("libjpeg-turbo"),
        "names libjpeg-turbo, as built in or as the feature to add: {v}"
    );
    // --fast-decode names the flag (or the build) that provides its decoder.
    let o = tensorprep(&[
        "run",
        "--preset",
        "imagenet-eval",
        "--decoder",
        "zune-jpeg",
        "--fast-decode",
        &fixture("sample.jpg"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let stderr = stderr_of(&o);
    assert!(
        stderr.contains("--decoder libjpeg-turbo") || stderr.contains("--features libjpeg-turbo"),
        "{stderr}"
    );
    // So does --draft-decode, which cannot be combined with --fast-decode.
    let draft = |extra: &[&str]| {
        let mut args = vec!["run", "--preset", "imagenet-eval", "--decoder", "zune-jpeg"];
        args.extend_from_slice(extra);
        let photo = fixture("sample.jpg");
        args.extend_from_slice(&[photo.as_str(), "-o", out.to_str().unwrap()]);
        stderr_of(&tensorprep(&args))
    };
    let stderr = draft(&["--draft-decode"]);
    assert!(
        stderr.contains("--draft-decode needs the libjpeg-turbo decoder"),
        "{stderr}"
    );
    let stderr = draft(&["--draft-decode", "--fast-decode"]);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
    let o = tensorprep(&[
        "bench",
        "--preset",
        "imagenet-eval",
        ".",
        "--threads",
        "100000",
    ]);
    assert!(!o.status.success());
    assert!(stderr_of(&o).contains("0 means one per core"));
}

#[test]
fn a_graph_that_does_not_fit_the_model_is_refused() {
    let dir = scratch("fit");
    let model = dir.join("yolo.onnx");
    std::fs::copy(fixture("graph/ultralytics_yolov8n_320.onnx"), &model).unwrap();
    let original = std::fs::read(&model).unwrap();
    let vit = dir.join("vit.tpp");
    let yolo = dir.join("yolo.tpp");
    run_ok(&[
        "convert",
        "--from",
        "preset:imagenet-eval",
        "-o",
        vit.to_str().unwrap(),
    ]);
    run_ok(&[
        "convert",
        "--from",
        "ultralytics",
        model.to_str().unwrap(),
        "-o",
        yolo.to_str().unwrap(),
    ]);
    // A ViT graph into a 320x320 YOLO model: refused, naming both shapes.
    let o = tensorprep(&["embed", vit.to_str().unwrap(), model.to_str().unwrap()]);
    assert!(!o.status.success());
    let stderr = stderr_of(&o);
    assert!(
        stderr.contains("float32 [3, 224, 224] (CHW)")
            && stderr.contains("`images` float32 [1, 3, 320, 320]")
            && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&model).unwrap(),
        original,
        "the model is untouched"
    );
    // The right graph goes in; embedding again says it replaced one.
    run_ok(&["embed", yolo.to_str().unwrap(), model.to_str().unwrap()]);
    let o = run_ok(&["embed", yolo.to_str().unwrap(), model.to_str().unwrap()]);
    assert!(
        stderr_of(&o).contains("replaced the graph embedded"),
        "{}",
        stderr_of(&o)
    );
    let with_graph = std::fs::read(&model).unwrap();
    // --force overrides, and run --graph checks the model it runs for.
    let forced = dir.join("forced.onnx");
    let o = run_ok(&[
        "embed",
        "--force",
        vit.to_str().unwrap(),
        model.to_str().unwrap(),
        "-o",
        forced.to_str().unwrap(),
    ]);
    assert!(stderr_of(&o).contains("warning (--force)"));
    let out = dir.join("x.npy");
    let run = |force: bool| {
        let mut a = vec![
            "run".to_owned(),
            "--graph".to_owned(),
            forced.to_string_lossy().into_owned(),
            fixture("sample.jpg"),
            "-o".to_owned(),
            out.to_string_lossy().into_owned(),
        ];
        if force {
            a.push("--force".to_owned());
        }
        tensorprep(&a)
    };
    let o = run(false);
    assert!(
        !o.status.success() && stderr_of(&o).contains("sizes differ"),
        "{}",
        stderr_of(&o)
    );
    assert!(run(true).status.success());
    // Extracting onto the model itself is refused; the model is untouched.
    let o = tensorprep(&[
        "extract",
        model.to_str().unwrap(),
        "-o",
        model.to_str().unwrap(),
    ]);
    assert!(!o.status.success() && stderr_of(&o).contains("the model itself"));
    assert_eq!(std::fs::read(&model).unwrap(), with_graph);
    // A leftover file with the old temporary name is neither used nor deleted.
    let leftover = dir.join("yolo.onnx.tensorprep-tmp");
    std::fs::write(&leftover, b"not ours").unwrap();
    run_ok(&["embed", yolo.to_str().unwrap(), model.to_str().unwrap()]);
    assert_eq!(std::fs::read(&leftover).unwrap(), b"not ours");
}

#[test]
fn outputs_are_named_after_the_whole_file_name_and_collisions_say_which() {
    let dir = scratch("names");
    for name in ["photo.v1.jpg", "photo.v2.jpg"] {
        std::fs::copy(fixture("sample.jpg"), dir.join(name)).unwrap();
    }
    std::fs::copy(fixture("formats/rgb8.png"), dir.join("photo.v1.png")).unwrap();
    let out = dir.join("out");
    let arg = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let o = tensorprep(&[
        "run".to_owned(),
        "--preset".to_owned(),
        "imagenet-eval".to_owned(),
        arg("photo.v1.jpg"),
        arg("photo.v2.jpg"),
        arg("photo.v1.png"),
        "-o".to_owned(),
        out.to_string_lossy().into_owned(),
    ]);
    assert!(out.join("photo.v1.npy").exists() && out.join("photo.v2.npy").exists());
    // photo.v1.png would write photo.v1.npy again: refused, naming the first input.
    assert!(!o.status.success());
    let stderr = stderr_of(&o);
    assert!(
        stderr.contains("photo.v1.png: its output")
            && stderr.contains("already written from")
            && stderr.contains("photo.v1.jpg"),
        "{stderr}"
    );
    // No temporary file is left beside the outputs.
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.ends_with(".npy") && !n.starts_with('.')),
        "{names:?}"
    );
}

#[test]
fn devices_and_fifos_are_refused_not_read_forever() {
    let dir = scratch("special");
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let out = dir.join("x.npy");
    for input in [Path::new("/dev/zero"), fifo.as_path()] {
        // Without the check the first reads forever and the second blocks.
        let o = tensorprep(&[
            "run",
            "--preset",
            "imagenet-eval",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(!o.status.success());
        assert!(
            stderr_of(&o).contains("not a regular file"),
            "{}",
            stderr_of(&o)
        );
        let o = tensorprep(&["inspect", input.to_str().unwrap()]);
        assert!(!o.status.success());
    }
    let o = tensorprep(&[
        "convert",
        "--from",
        "hf",
        "/dev/zero",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        stderr_of(&o).contains("not a regular file"),
        "{}",
        stderr_of(&o)
    );
    assert!(!out.exists());
}

/// Runs the CLI with its address space limited to `limit_mb` MiB (`ulimit
/// -v` in a shell: the limit applies to the child only).
fn tensorprep_within(limit_mb: u64, args: &[&str]) -> Output {
    let mut script = format!("ulimit -v {} && exec \"$0\"", limit_mb * 1024);
    for i in 1..=args.len() {
        script.push_str(&format!(" \"${i}\""));
    }
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_tensorprep"))
        .args(args)
        .output()
        .expect("sh runs")
}

/// `embed` streams the model: a 768 MiB model (its weights a sparse hole)
/// takes a graph within a 256 MiB address space, where reading it whole
/// (as `embed` did, then holding a second copy: about 3x the model) fails.
/// The result equals the in-memory embedding's bytes, and the model's
/// mode is kept; a read-only model is replaced only with `--force`.
#[test]
fn embed_streams_the_model_and_keeps_its_mode() {
    use std::io::{Seek, SeekFrom, Write};
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("embed-stream");
    let small = std::fs::read(fixture("graph/ultralytics_yolov8n_320.onnx")).unwrap();
    let model = dir.join("big.onnx");
    // The fixture, then a top-level field 20 (ModelProto.functions) of
    // 768 MiB of zeros: a hole in the file, no disk blocks.
    const WEIGHTS: u64 = 768 << 20;
    let mut header = small.clone();
    for mut n in [20 << 3 | 2, WEIGHTS] {
        while n >= 0x80 {
            header.push((n as u8) | 0x80);
            n >>= 7;
        }
        header.push(n as u8);
    }
    let mut f = std::fs::File::create(&model).unwrap();
    f.write_all(&header).unwrap();
    f.seek(SeekFrom::Current(WEIGHTS as i64 - 1)).unwrap();
    f.write_all(&[0]).unwrap();
    drop(f);
    std::fs::set_permissions(&model, std::fs::Permissions::from_mode(0o640)).unwrap();
    let graph = dir.join("yolo.tpp");
    run_ok(&[
        "convert",
        "--from",
        "ultralytics",
        fixture("graph/ultralytics_yolov8n_320.onnx").as_str(),
        "-o",
        graph.to_str().unwrap(),
    ]);
    let o = tensorprep_within(
        256,
        &["embed", graph.to_str().unwrap(), model.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr_of(&o));
    let len = std::fs::metadata(&model).unwrap().len();
    let mode = std::fs::metadata(&model).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the model's mode is kept");
    // The bytes are the in-memory embedding's: the model unchanged, then the entry.
    let g = tensorprep::graph::Graph::load(&graph).unwrap();
    let field_len = len - header.len() as u64 - WEIGHTS;
    let mut with = std::fs::File::open(&model).unwrap();
    let mut head = vec![0; header.len()];
    std::io::Read::read_exact(&mut with, &mut head).unwrap();
    assert_eq!(head, header);
    with.seek(SeekFrom::Start(header.len() as u64 + WEIGHTS))
        .unwrap();
    let mut tail = Vec::new();
    std::io::Read::read_to_end(&mut with, &mut tail).unwrap();
    assert_eq!(tail.len() as u64, field_len);
    let expected = tensorprep::graph::onnx::embed(&small, &g).unwrap();
    assert_eq!(tail, expected[small.len()..], "the same entry as in memory");
    drop(with);
    // A read-only model is refused, then replaced with --force (mode kept).
    std::fs::set_permissions(&model, std::fs::Permissions::from_mode(0o444)).unwrap();
    let o = tensorprep(&["embed", graph.to_str().unwrap(), model.to_str().unwrap()]);
    assert!(
        !o.status.success() && stderr_of(&o).contains("read-only"),
        "{}",
        stderr_of(&o)
    );
    let o = tensorprep_within(
        256,
        &[
            "embed",
            "--force",
            graph.to_str().unwrap(),
            model.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert!(
        stderr_of(&o).contains("replaced the graph embedded")
            && stderr_of(&o).contains("(it was the same)"),
        "{}",
        stderr_of(&o)
    );
    assert_eq!(std::fs::metadata(&model).unwrap().len(), len);
    let mode = std::fs::metadata(&model).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o444);
    std::fs::remove_file(&model).unwrap();
}

/// The graph (decode, resize to 11000x11000, 26 flips, centre crop
/// 224) within a 700 MiB address space: its 363 MB buffers pass every limit,
/// and the system cannot provide them. The run fails with a message naming
/// the allocation, never an abort, and writes nothing.
#[test]
fn allocation_failure_is_an_error_not_an_abort() {
    use tensorprep::graph::Graph;
    use tensorprep::resize::{Filter, Resample};
    let dir = scratch("oom");
    let graph = dir.join("bomb.tpp");
    let bomb = tensorprep_tests::flip_bomb(true, 11000, Resample::Pillow(Filter::Bilinear));
    Graph::new(bomb).unwrap().save(&graph).unwrap();
    let out = dir.join("x.npy");
    let o = tensorprep_within(
        700,
        &[
            "run",
            "--graph",
            graph.to_str().unwrap(),
            &fixture("sample.jpg"),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let stderr = stderr_of(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "an error exit, not a signal: {stderr}"
    );
    assert!(stderr.contains("could not allocate"), "{stderr}");
    assert!(!out.exists());
}

/// The `checksum: ` line of a `train-bench --checksum` run.
fn checksum_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("checksum: ").map(str::to_owned))
        .expect("a checksum line")
}

/// `train-bench` prints one checksum for a folder and the `.rec` and
/// `.tfrecord` packed from it, for any worker count, and ends with the
/// `images/s:` line; `records ls` lists what `records pack` wrote.
#[test]
fn train_bench_checksums_agree_across_data_forms_and_workers() {
    let dir = scratch("train-bench");
    let folder = fixture("records/folder");
    let rec = dir.join("f.rec");
    let tfr = dir.join("f.tfrecord");
    run_ok(&[
        "records",
        "pack",
        folder.as_str(),
        "-o",
        rec.to_str().unwrap(),
    ]);
    run_ok(&[
        "records",
        "pack",
        folder.as_str(),
        "-o",
        tfr.to_str().unwrap(),
    ]);
    assert!(dir.join("f.idx").is_file() && dir.join("f.lst").is_file());
    // Batches of 4, zune-jpeg, seed `seed`, with a checksum, then `extra`.
    let bench = |data: &str, seed: &str, extra: &[&str]| {
        let mut args = vec![
            "train-bench",
            data,
            "--batch",
            "4",
            "--seed",
            seed,
            "--checksum",
            "--decoder",
            "zune-jpeg",
        ];
        args.extend_from_slice(extra);
        run_ok(&args)
    };
    let mut checksums = Vec::new();
    for data in [
        folder.as_str(),
        rec.to_str().unwrap(),
        tfr.to_str().unwrap(),
    ] {
        for workers in ["1", "2"] {
            let o = bench(data, "9", &["--workers", workers]);
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert!(
                stdout.lines().last().unwrap().starts_with("images/s: "),
                "{stdout}"
            );
            let sum = checksum_of(&o);
            assert_eq!(sum.len(), 16, "{stdout}");
            checksums.push(sum);
        }
    }
    assert!(checksums.windows(2).all(|w| w[0] == w[1]), "{checksums:?}");
    // Another seed, another checksum.
    assert_ne!(
        checksum_of(&bench(folder.as_str(), "10", &[])),
        checksums[0]
    );
    let o = run_ok(&["records", "ls", rec.to_str().unwrap()]);
    let listing = String::from_utf8(o.stdout).unwrap();
    assert_eq!(listing.lines().count(), 6);
    assert!(listing.starts_with("0\tid 0\tlabels 0\t"), "{listing}");
    // Autotune prints its choice as flags, and the batches stay the same.
    let o = bench(
        folder.as_str(),
        "9",
        &["--autotune", "--cpu-budget", "2", "--memory-budget", "256"],
    );
    assert!(
        stderr_of(&o).contains("autotune: --workers "),
        "{}",
        stderr_of(&o)
    );
    assert_eq!(checksum_of(&o), checksums[0]);
    // The policy presets: one checksum for 1 and 2 workers, not the plain
    // preset's; an unknown preset is named with the known ones.
    for preset in ["imagenet-autoaugment", "imagenet-augmix"] {
        let sums: Vec<String> = ["1", "2"]
            .iter()
            .map(|w| {
                checksum_of(&bench(
                    folder.as_str(),
                    "9",
                    &["--preset", preset, "--workers", w],
                ))
            })
            .collect();
        assert_eq!(sums[0], sums[1], "{preset}");
        assert_ne!(sums[0], checksums[0], "{preset}");
    }
    let o = tensorprep(&["train-bench", folder.as_str(), "--preset", "nope"]);
    assert!(!o.status.success() && stderr_of(&o).contains("imagenet-randaugment"));
    // Fast mode: the same checksum for any worker count where this build
    // has libjpeg-turbo; elsewhere an error naming what it needs.
    for flag in ["--fast-decode", "--draft-decode"] {
        let fast = |workers: &str| {
            tensorprep(&[
                "train-bench",
                rec.to_str().unwrap(),
                flag,
                "--workers",
                workers,
                "--batch",
                "4",
                "--checksum",
            ])
        };
        let one = fast("1");
        if one.status.success() {
            assert_eq!(
                checksum_of(&one),
                checksum_of(&fast("2")),
                "{flag}, 1 and 2 workers"
            );
        } else {
            assert!(
                stderr_of(&one).contains("libjpeg-turbo"),
                "{}",
                stderr_of(&one)
            );
        }
    }
}

/// What the library refuses, the training commands refuse with its message
/// (they clamped `--workers 100000` to 1024 and `--batch 0` to 1 without a
/// word); a folder without class folders is refused by name by `train-bench`
/// and by `records pack`, which writes nothing (it wrote empty files).
#[test]
fn train_commands_refuse_what_the_library_refuses() {
    let folder = fixture("records/folder");
    for (flag, value, says) in [
        ("--workers", "100000", "1 to 1024 threads"),
        ("--batch", "0", "batch size"),
    ] {
        let o = tensorprep(&["train-bench", folder.as_str(), flag, value]);
        assert!(!o.status.success(), "{flag} {value} accepted");
        assert!(stderr_of(&o).contains(says), "{}", stderr_of(&o));
    }
    let flat = scratch("flat-folder");
    std::fs::copy(fixture("sample.jpg"), flat.join("a.jpg")).unwrap();
    let o = tensorprep(&["train-bench", flat.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr_of(&o).contains("no class folders"),
        "{}",
        stderr_of(&o)
    );
    let out = scratch("flat-out");
    let rec = out.join("f.rec");
    let o = tensorprep(&[
        "records",
        "pack",
        flat.to_str().unwrap(),
        "-o",
        rec.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr_of(&o).contains("no class folders"),
        "{}",
        stderr_of(&o)
    );
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "nothing written"
    );
}

/// `records ls --json` prints JSON a parser accepts: finite numbers only. A
/// record whose label is NaN (JSON has no NaN) is an error naming it.
#[test]
fn records_ls_json_is_json() {
    use tensorprep::train::data::recordio::{RecordIoWriter, pack_image};
    let dir = scratch("ls-json");
    let rec = dir.join("f.rec");
    run_ok(&[
        "records",
        "pack",
        fixture("records/folder").as_str(),
        "-o",
        rec.to_str().unwrap(),
    ]);
    let o = run_ok(&["records", "ls", "--json", rec.to_str().unwrap()]);
    let listing = String::from_utf8(o.stdout).unwrap();
    assert_eq!(listing.lines().count(), 6);
    for line in listing.lines() {
        // A JSON object of numbers, a list of numbers and one string.
        assert!(
            line.starts_with("{\"position\": ") && line.ends_with("\"}"),
            "{line}"
        );
        assert!(!line.contains("NaN") && !line.contains("inf"), "{line}");
    }
    let bad = dir.join("nan.rec");
    let mut w = RecordIoWriter::new(Vec::new());
    let mut record = Vec::new();
    pack_image(&[f32::NAN], 0, b"\xff\xd8 bytes", &mut record);
    w.write_record(&record).unwrap();
    std::fs::write(&bad, w.into_inner()).unwrap();
    let o = tensorprep(&["records", "ls", "--json", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(stderr_of(&o).contains("nan.rec"), "{}", stderr_of(&o));
}

/// `tensorprep presets --torchvision | head` exited 101 with "failed printing
/// to stdout: Broken pipe" whenever `head` had closed first. Every command
/// that prints now ends quietly on a closed pipe (here closed before the
/// command writes, so that the write always fails): killed by SIGPIPE, as
/// `cat` is, or done; never a panic.
#[test]
fn a_closed_pipe_ends_printing_commands_quietly() {
    use std::process::Stdio;
    let dir = scratch("closed_pipe");
    let graph = dir.join("resnet.tpp");
    run_ok(&[
        "convert",
        "--from",
        "torchvision:ResNet50_Weights.IMAGENET1K_V2",
        "-o",
        graph.to_str().unwrap(),
    ]);
    let sample = fixture("sample.jpg");
    let commands: [&[&str]; 4] = [
        &["presets", "--torchvision"],
        &["presets"],
        &["inspect", graph.to_str().unwrap()],
        &["run", "--preset", "imagenet-eval", &sample, "-o", "-"],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tensorprep"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader is gone
        let o = child.wait_with_output().unwrap();
        let stderr = stderr_of(&o);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(o.status.code(), Some(101), "{args:?}: {stderr}");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert!(
                o.status.success() || o.status.signal() == Some(13),
                "{args:?}: {:?} {stderr}",
                o.status
            );
        }
    }
}

/// Whether the CLI binary (not this test's build of the library: features
/// unify per build) has libjpeg-turbo, as its `--version` says.
fn cli_has_libjpeg_turbo() -> bool {
    let v = run_ok(&["--version"]);
    let v = String::from_utf8_lossy(&v.stdout).into_owned();
    let decoders = v.lines().find(|l| l.starts_with("JPEG decoders:")).unwrap();
    decoders.contains("libjpeg-turbo")
}

/// A JPEG that only libjpeg-turbo decodes names the way to get it for this
/// command: the CLI's feature is `libjpeg-turbo` (`--features turbojpeg`,
/// which the library's message used to name, fails here), or the decoder
/// flag when the build has it.
#[test]
fn a_jpeg_the_build_cannot_decode_names_the_cli_s_feature() {
    let out = scratch("arithmetic").join("a.npy");
    let o = tensorprep(&[
        "run",
        "--preset",
        "imagenet-eval",
        "--decoder",
        "zune-jpeg",
        &fixture("sample_arithmetic.jpg"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let stderr = stderr_of(&o);
    assert!(stderr.contains("arithmetic coding"), "{stderr}");
    if cli_has_libjpeg_turbo() {
        assert!(stderr.contains("--decoder libjpeg-turbo"), "{stderr}");
    } else {
        assert!(
            stderr.contains("`cargo build --release -p tensorprep-cli --features libjpeg-turbo`"),
            "{stderr}"
        );
    }
    assert!(!stderr.contains("turbojpeg"), "{stderr}");
}

/// `run DIR -o one.npy` made a directory named `one.npy/`: for several
/// inputs an output name ending in `.npy` is refused, pointing to
/// `--batch-npy`, and nothing is created; a trailing separator still asks
/// for a directory of that name.
#[test]
fn several_inputs_into_one_npy_name_point_to_batch_npy() {
    let dir = scratch("one_npy");
    let folder = fixture("records/folder");
    let one = dir.join("one.npy");
    for inputs in [
        vec![folder.clone()],
        vec![fixture("sample.jpg"), fixture("sklearn_china.jpg")],
    ] {
        let mut args = vec!["run".to_owned(), "--preset".into(), "imagenet-eval".into()];
        args.extend(inputs);
        args.extend(["-o".into(), one.to_str().unwrap().to_owned()]);
        let o = tensorprep(&args);
        assert!(!o.status.success());
        let stderr = stderr_of(&o);
        assert!(
            stderr.contains(&format!("--batch-npy {}", one.display())),
            "{stderr}"
        );
        assert!(!one.exists(), "{stderr}");
    }
    let batch = run_ok(&[
        "run",
        "--preset",
        "imagenet-eval",
        &folder,
        "--batch-npy",
        one.to_str().unwrap(),
    ]);
    assert!(one.is_file(), "{}", stderr_of(&batch));
    let named_dir = format!("{}/", dir.join("tensors.npy").display());
    run_ok(&[
        "run",
        "--preset",
        "imagenet-eval",
        &folder,
        "-o",
        &named_dir,
    ]);
    assert!(dir.join("tensors.npy").is_dir());
}

/// `preview` writes the grid the library draws: a PNG that decodes to the
/// grid's size and pixels, each tile the loader's tensor of that sample (same
/// seed, epoch and order) de-normalised; bad arguments are errors naming them.
#[test]
fn preview_writes_the_loaders_samples_as_a_png_grid() {
    use std::sync::Arc;
    use tensorprep::train::data::Dataset;
    use tensorprep::train::data::folder::FolderDataset;
    use tensorprep::train::{Loader, LoaderConfig, Preview, TrainPipeline};

    let dir = scratch("preview");
    let out = dir.join("grid.png");
    let folder = fixture("records/folder");
    let o = tensorprep(&[
        "preview",
        "--preset",
        "imagenet-trivialaugment",
        &folder,
        "-o",
        out.to_str().unwrap(),
        "--samples",
        "6",
        "--seed",
        "7",
        "--epoch",
        "1",
        "--columns",
        "3",
        "--decoder",
        "zune-jpeg",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&out).unwrap();
    let decoded = tensorprep::decode::decode(&png, &tensorprep::jpeg::DecodeOptions::default())
        .expect("the PNG decodes");

    // The same grid in-process.
    let mut pipeline = TrainPipeline::preset("imagenet-trivialaugment").unwrap();
    pipeline.decode.backend = tensorprep::jpeg::Backend::Zune;
    let data = Arc::new(FolderDataset::open(Path::new(&folder)).unwrap());
    let mut preview = Preview::new(6);
    (preview.seed, preview.epoch, preview.columns) = (7, 1, 3);
    let grid = preview.render(&pipeline, data.as_ref()).unwrap();
    assert_eq!(
        (decoded.width() as usize, decoded.height() as usize),
        (grid.width, grid.height)
    );
    assert_eq!(decoded.as_bytes(), grid.rgb.as_slice());
    assert_eq!(grid.tiles.len(), 6);
    assert!(grid.width >= 3 * 224 && grid.height >= 2 * 224);

    // Each tile is the loader's sample, de-normalised.
    let plan = Arc::new(pipeline.compile().unwrap());
    let mut config = LoaderConfig::new(6, 2, 7);
    config.epochs = Some(2);
    let mut loader = Loader::new(data.clone() as Arc<dyn Dataset>, plan, config).unwrap();
    for batch in &mut loader {
        batch.unwrap();
    }
    let mut loader = loader.next_epoch().unwrap();
    let batch = loader.next().unwrap().unwrap();
    assert_eq!(batch.len(), 6);
    let tensor: &[f32] = match batch.tensor() {
        tensorprep::Tensor::F32(v) => v,
        _ => panic!("a float32 batch"),
    };
    let n = tensorprep::finish::Normalize::IMAGENET;
    let sample = 3 * 224 * 224;
    for (k, [x, y, w, h]) in grid.tiles.iter().copied().enumerate() {
        // De-normalised here, not with the library's function:
        // round((x * std + mean) * 255), clamped, CHW planes to RGB pixels.
        let t = &tensor[k * sample..(k + 1) * sample];
        let rgb: Vec<u8> = (0..w * h)
            .flat_map(|p| {
                (0..3).map(move |c| {
                    let v = ((t[c * w * h + p] * n.std[c] + n.mean[c]) * 255.0).round();
                    v.clamp(0.0, 255.0) as u8
                })
            })
            .collect();
        for row in 0..h {
            let at = ((y + row) * grid.width + x) * 3;
            assert_eq!(
                &grid.rgb[at..at + w * 3],
                &rgb[row * w * 3..(row + 1) * w * 3],
                "tile {k} row {row}"
            );
        }
    }

    // A graph: its pipeline as a validation loader runs it (no random draws).
    let graph = dir.join("eval.tpp");
    let o = tensorprep(&[
        "convert",
        "--from",
        "preset:imagenet-eval",
        "-o",
        graph.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let eval = dir.join("eval.png");
    let o = tensorprep(&[
        "preview",
        "--graph",
        graph.to_str().unwrap(),
        &folder,
        "-o",
        eval.to_str().unwrap(),
        "--samples",
        "2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&eval).unwrap();
    let decoded =
        tensorprep::decode::decode(&png, &tensorprep::jpeg::DecodeOptions::default()).unwrap();
    assert!(decoded.width() >= 2 * 224 && decoded.height() >= 224);

    // A TFLite-style graph (bytes / 1, mean 127.5, std 127.5) on one photo:
    // its tile is the graph's tensor de-normalised, computed here as
    // x * 127.5 + 127.5 (the preview once assumed / 255: a white tile).
    let mut tflite = tensorprep::graph::Graph::load(&graph).unwrap();
    let ops: Vec<_> = tflite
        .pipeline
        .ops()
        .iter()
        .map(|op| match op {
            tensorprep::pipeline::Op::Normalize(n) => {
                tensorprep::pipeline::Op::Normalize(tensorprep::finish::Normalize {
                    mean: [127.5; 3],
                    std: [127.5; 3],
                    divisor: 1.0,
                    ..*n
                })
            }
            op => *op,
        })
        .collect();
    tflite.pipeline = Pipeline::from_ops(&ops).unwrap();
    let tflite_graph = dir.join("tflite.tpp");
    tflite.save(&tflite_graph).unwrap();
    let one = dir.join("one");
    std::fs::create_dir_all(one.join("a")).unwrap();
    let photo = std::fs::read(fixture("sklearn_china.jpg")).unwrap();
    std::fs::write(one.join("a/china.jpg"), &photo).unwrap();
    let tile_png = dir.join("tflite.png");
    let o = tensorprep(&[
        "preview",
        "--graph",
        tflite_graph.to_str().unwrap(),
        one.to_str().unwrap(),
        "-o",
        tile_png.to_str().unwrap(),
        "--samples",
        "1",
        "--decoder",
        "zune-jpeg",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = tensorprep::decode::decode(
        &std::fs::read(&tile_png).unwrap(),
        &tensorprep::jpeg::DecodeOptions::default(),
    )
    .unwrap();
    let mut train = TrainPipeline::from_pipeline(&tflite.pipeline).unwrap();
    train.decode.backend = tensorprep::jpeg::Backend::Zune;
    let plan = train.compile().unwrap();
    let mut t = vec![0f32; 3 * 224 * 224];
    plan.run(
        &mut tensorprep::train::TrainState::new(),
        tensorprep::train::SampleKey::default(),
        &photo,
        TensorMut::F32(&mut t),
    )
    .unwrap();
    let (w, h) = (224, 224);
    let want: Vec<u8> = (0..w * h)
        .flat_map(|p| {
            let t = &t;
            (0..3).map(move |c| (t[c * w * h + p] * 127.5 + 127.5).round().clamp(0.0, 255.0) as u8)
        })
        .collect();
    // The tile's place: the grid's first, one gap in.
    let gap = (got.width() as usize - w) / 2;
    let bytes = got.as_bytes();
    for row in 0..h {
        let at = ((gap + row) * got.width() as usize + gap) * 3;
        assert_eq!(
            &bytes[at..at + w * 3],
            &want[row * w * 3..(row + 1) * w * 3],
            "tflite tile row {row}"
        );
    }
    assert!(want.iter().any(|&v| v < 200), "not a white tile");

    // Bad arguments: named.
    for (args, says) in [
        (vec!["--samples", "0"], "1 to 256 samples, not 0"),
        (vec!["--samples", "999"], "not 999"),
        (vec!["--preset", "nope"], "unknown training preset `nope`"),
    ] {
        let mut all = vec!["preview", &folder, "-o", out.to_str().unwrap()];
        if !args.contains(&"--preset") {
            all.extend(["--preset", "imagenet-train"]);
        }
        all.extend(args);
        let o = tensorprep(&all);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{err}");
    }
    let o = tensorprep(&["preview", &folder, "-o", out.to_str().unwrap()]);
    assert!(!o.status.success(), "no pipeline named");
    let empty = scratch("preview-empty");
    let o = tensorprep(&[
        "preview",
        "--preset",
        "imagenet-train",
        empty.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
}

/// A `.tfrecord` or `.rec` pattern is one dataset over the files it names:
/// a pattern naming the one file packed from the folder gives the folder's
/// checksum, and one naming nothing is refused by name.
#[test]
fn train_bench_takes_a_record_file_pattern() {
    let dir = scratch("train-bench-pattern");
    let folder = fixture("records/folder");
    for out in ["f.rec", "f.tfrecord"] {
        let path = dir.join(out);
        run_ok(&[
            "records",
            "pack",
            folder.as_str(),
            "-o",
            path.to_str().unwrap(),
        ]);
    }
    // The checksum does not depend on the worker count.
    let sum = |data: &str| bench(data, 1);
    let expected = sum(folder.as_str());
    let d = dir.to_str().unwrap();
    assert_eq!(sum(&format!("{d}/f*.tfrecord")), expected);
    assert_eq!(sum(&format!("{d}/{{f}}.rec")), expected);
    let o = tensorprep(&["train-bench", &format!("{d}/none-*.tfrecord")]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no file matches"));
}

/// `train-bench`'s checksum of `data` with `workers` workers: batches of 4,
/// seed 9, zune-jpeg.
fn bench(data: &str, workers: usize) -> String {
    checksum_of(&run_ok(&[
        "train-bench",
        data,
        "--batch",
        "4",
        "--seed",
        "9",
        "--checksum",
        "--decoder",
        "zune-jpeg",
        "--workers",
        &workers.to_string(),
    ]))
}

/// A MindRecord written by MindSpore from `records/folder` (one file, the
/// folder's order) gives the folder's `train-bench` checksum; a 2-file set
/// is read from either file; `records ls` lists it.
#[test]
fn train_bench_and_records_ls_read_mindrecord_sets() {
    let folder = fixture("records/folder");
    let one = fixture("mindrecord/folder/folder.mindrecord");
    let want = bench(folder.as_str(), 1);
    assert_eq!(bench(one.as_str(), 1), want);
    assert_eq!(bench(one.as_str(), 2), want);
    let listing = |file: &str| String::from_utf8(run_ok(&["records", "ls", file]).stdout).unwrap();
    let ls = listing(&one);
    assert_eq!(ls.lines().count(), 6, "{ls}");
    assert!(ls.starts_with("0\tid 0\tlabels 0\t"), "{ls}");
    let set = [
        fixture("mindrecord/imagenet/imagenet.mindrecord0"),
        fixture("mindrecord/imagenet/imagenet.mindrecord1"),
    ];
    assert_eq!(listing(&set[0]), listing(&set[1]));
    assert_eq!(listing(&set[1]).lines().count(), 6);
    // A broken member is an error naming it, not an empty listing.
    let dir = scratch("mindrecord-ls");
    let bad = dir.join("bad.mindrecord");
    std::fs::write(&bad, [1, 0, 0, 0, 0, 0, 0, 0, b'{']).unwrap();
    let o = tensorprep(&["records", "ls", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr_of(&o).contains("bad.mindrecord"),
        "{}",
        stderr_of(&o)
    );
}

/// The names of a directory's entries, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// `records pack DIR -o X.mindrecord [--shards N]` writes MindSpore's file
/// names and nothing else, the same files the library's writer writes
/// (which `tests/mindrecord_write.rs` compares with MindSpore's own), holding
/// every image's bytes; existing files are refused, naming `--force`, and
/// left as they were; `--shards` is for `.mindrecord` only, 1 to 1000.
#[test]
fn records_pack_writes_mindrecord_sets() {
    use tensorprep::train::data::folder::FolderDataset;
    use tensorprep::train::data::mindrecord::write::{WriteOptions, pack_folder};
    let folder = fixture("records/folder");
    let dir = scratch("pack-mindrecord");
    let pack = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "records",
            "pack",
            folder.as_str(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        tensorprep(&args)
    };
    let one = dir.join("one.mindrecord");
    let three = dir.join("three.mindrecord");
    for (out, extra) in [(&one, &[][..]), (&three, &["--shards", "3"][..])] {
        let o = pack(out, extra);
        assert!(o.status.success(), "{}", stderr_of(&o));
    }
    assert_eq!(
        entries(&dir),
        [
            "one.mindrecord",
            "one.mindrecord.db",
            "three.mindrecord0",
            "three.mindrecord0.db",
            "three.mindrecord1",
            "three.mindrecord1.db",
            "three.mindrecord2",
            "three.mindrecord2.db",
        ]
    );
    // The library's writer, on the same folder, writes the same bytes.
    let library = scratch("pack-mindrecord-library");
    let root = Path::new(&folder);
    let images = FolderDataset::open(root).unwrap();
    for (name, shards) in [("one.mindrecord", 1), ("three.mindrecord", 3)] {
        let options = WriteOptions::default().shards(shards);
        let written = pack_folder(root, &images, &library.join(name), &options).unwrap();
        for file in written.files {
            let ours = std::fs::read(dir.join(file.file_name().unwrap())).unwrap();
            assert!(ours == std::fs::read(&file).unwrap(), "{}", file.display());
        }
    }
    // Every image's bytes are in the one file, and in one of the three.
    let data = |names: &[&str]| -> Vec<Vec<u8>> {
        names
            .iter()
            .map(|n| std::fs::read(dir.join(n)).unwrap())
            .collect()
    };
    let (single, shards) = (
        data(&["one.mindrecord"]),
        data(&[
            "three.mindrecord0",
            "three.mindrecord1",
            "three.mindrecord2",
        ]),
    );
    for (path, _) in images.files() {
        let image = std::fs::read(path).unwrap();
        let holds = |file: &Vec<u8>| file.windows(image.len()).any(|w| w == image);
        assert!(holds(&single[0]), "{}", path.display());
        assert_eq!(
            shards.iter().filter(|f| holds(f)).count(),
            1,
            "{}",
            path.display()
        );
    }
    // Existing files: refused, naming --force, and left as they were.
    let before = std::fs::read(dir.join("three.mindrecord1")).unwrap();
    let o = pack(&three, &["--shards", "3"]);
    assert!(!o.status.success());
    assert!(
        stderr_of(&o).contains("three.mindrecord0") && stderr_of(&o).contains("--force"),
        "{}",
        stderr_of(&o)
    );
    assert_eq!(
        std::fs::read(dir.join("three.mindrecord1")).unwrap(),
        before
    );
    let o = pack(&three, &["--shards", "3", "--force"]);
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert_eq!(
        std::fs::read(dir.join("three.mindrecord1")).unwrap(),
        before
    );
    assert_eq!(
        entries(&dir).len(),
        8,
        "no temporary left: {:?}",
        entries(&dir)
    );
    // --shards: .mindrecord only, 1 to 1000.
    let o = pack(&dir.join("x.rec"), &["--shards", "2"]);
    assert!(!o.status.success());
    assert!(stderr_of(&o).contains(".mindrecord"), "{}", stderr_of(&o));
    for bad in ["0", "1001"] {
        let o = pack(&dir.join("x.mindrecord"), &["--shards", bad]);
        assert!(!o.status.success(), "--shards {bad} accepted");
    }
    assert_eq!(entries(&dir).len(), 8, "nothing more written");
}

/// What the issue asks of `records pack -o X.mindrecord`: `train-bench` on
/// the set (1 and 3 data files) gives the folder's checksum.
#[test]
fn train_bench_on_a_packed_mindrecord_gives_the_folders_checksum() {
    let folder = fixture("records/folder");
    let dir = scratch("train-bench-mindrecord");
    let expected = bench(folder.as_str(), 1);
    for (name, shards) in [("one.mindrecord", "1"), ("three.mindrecord", "3")] {
        let out = dir.join(name);
        run_ok(&[
            "records",
            "pack",
            folder.as_str(),
            "-o",
            out.to_str().unwrap(),
            "--shards",
            shards,
        ]);
        let first = if shards == "1" {
            out
        } else {
            dir.join(format!("{name}0"))
        };
        assert_eq!(bench(first.to_str().unwrap(), 2), expected, "{name}");
        let listing = run_ok(&["records", "ls", first.to_str().unwrap()]);
        assert_eq!(String::from_utf8_lossy(&listing.stdout).lines().count(), 6);
    }
}

/// A folder laid out as CIFAR's binary version or torchvision's MNIST
/// is read as that dataset's training split by `train-bench` and `records
/// ls` (pixel samples, any worker count the same batches); a folder holding
/// several such layouts is an error naming them.
#[test]
fn train_bench_and_records_ls_read_cifar_and_mnist_folders() {
    let cifar10 = fixture("cifar/cifar-10-batches-bin");
    let kmnist = fixture("mnist/KMNIST");
    // The training records the files hold: CIFAR-10's five batch files of
    // 1 + 3072 bytes per record; the idx image file's count (bytes 4..8).
    let cifar_records: u64 = (1..=5)
        .map(|k| {
            std::fs::metadata(format!("{cifar10}/data_batch_{k}.bin"))
                .unwrap()
                .len()
                / 3073
        })
        .sum();
    let idx = std::fs::read(format!("{kmnist}/raw/train-images-idx3-ubyte")).unwrap();
    let mnist_records = u32::from_be_bytes(idx[4..8].try_into().unwrap()) as u64;
    for (data, records, bytes) in [
        (&cifar10, cifar_records, 3072),
        (&kmnist, mnist_records, 784),
    ] {
        assert_eq!(bench(data, 1), bench(data, 2), "{data}");
        let ls = String::from_utf8(run_ok(&["records", "ls", data]).stdout).unwrap();
        assert_eq!(ls.lines().count() as u64, records, "{data}: {ls}");
        assert!(
            ls.lines()
                .all(|l| l.contains(&format!("\t{bytes} bytes\t"))),
            "{data}: {ls}"
        );
    }
    for (data, names) in [
        (fixture("cifar"), "cifar-10-batches-bin, cifar-100-binary"),
        (fixture("mnist"), "MNIST, FashionMNIST, KMNIST"),
    ] {
        let o = tensorprep(&["train-bench", &data]);
        assert!(!o.status.success());
        assert!(stderr_of(&o).contains(names), "{}", stderr_of(&o));
    }
}

/// `train-bench` and `records ls` over `http://` (the tests' web server on
/// 127.0.0.1 serving the fixtures): the checksums and listing of the same
/// files on disk, for RecordIO, TFRecord, MindRecord and WebDataset shards;
/// each epoch's remote requests printed; a missing object an error naming
/// its URL.
#[cfg(feature = "remote")]
#[test]
fn train_bench_and_records_ls_read_urls() {
    let server = tensorprep_tests::http::Server::start(Path::new(&fixture("")));
    for file in [
        "records/folder.rec",
        "records/folder.tfrecord",
        "mindrecord/folder/folder.mindrecord",
        "records/shard-{0..1}.tar",
    ] {
        let url = server.url(file);
        assert_eq!(bench(&url, 2), bench(&fixture(file), 2), "{file}");
    }
    let listing = |file: &str| String::from_utf8(run_ok(&["records", "ls", file]).stdout).unwrap();
    let ls = listing(&server.url("records/folder.rec"));
    assert_eq!(ls, listing(&fixture("records/folder.rec")));
    assert!(!ls.is_empty());
    let o = run_ok(&[
        "train-bench",
        &server.url("records/folder.tfrecord"),
        "--batch",
        "2",
        "--epochs",
        "2",
    ]);
    let stderr = stderr_of(&o);
    assert_eq!(
        stderr.matches(" remote requests (").count(),
        2,
        "each epoch's requests: {stderr}"
    );
    let missing = server.url("records/missing.rec");
    let o = tensorprep(&["train-bench", &missing]);
    assert!(!o.status.success());
    assert!(stderr_of(&o).contains(&missing), "{}", stderr_of(&o));
}
