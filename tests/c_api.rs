//! The C API from C and C++: builds `libtensorprep` (the `ffi/` crate),
//! compiles the C and C++ examples and `c/api_misuse.c` with
//! `-Wall -Wextra -Werror -pedantic`, and runs them: plainly, under
//! AddressSanitizer + UndefinedBehaviorSanitizer, and under valgrind.
//!
//! Needs a C and a C++ compiler (`cc`, `c++`, or `$CC`, `$CXX`) with the
//! sanitizer runtimes (gcc's libasan and libubsan), and valgrind for the
//! valgrind test (skipped with a note when absent, unless
//! `TP_REQUIRE_VALGRIND=1`, as `.ci/run` sets).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use tensorprep::graph::Graph;
use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
use tensorprep::{TensorMut, import};
use tensorprep_tests::{fixture, read};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scratch() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c_api")
}

/// Builds the C library once, with every feature the C programs call
/// (`full`: importers, every resampler and format); returns the directory
/// holding `libtensorprep.so`.
fn library() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Command::new(env!("CARGO"))
            .args([
                "build",
                "-p",
                "tensorprep-ffi",
                "--features",
                "full",
                "--message-format=json",
            ])
            .current_dir(root())
            .output()
            .expect("run cargo");
        assert!(
            out.status.success(),
            "building tensorprep-ffi failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The artifact line of the cdylib names the file.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let so = stdout
            .split('"')
            .find(|s| s.ends_with("/libtensorprep.so"))
            .expect("cargo reports libtensorprep.so");
        PathBuf::from(so).parent().unwrap().to_path_buf()
    })
}

/// Compiles C (`.c`) or C++ (`.cpp`) sources against the library.
fn compile(sources: &[&str], name: &str, sanitize: bool) -> PathBuf {
    let lib = library();
    let cpp = sources[0].ends_with(".cpp");
    let compiler = if cpp {
        std::env::var("CXX").unwrap_or_else(|_| "c++".into())
    } else {
        std::env::var("CC").unwrap_or_else(|_| "cc".into())
    };
    std::fs::create_dir_all(scratch()).unwrap();
    let exe = scratch().join(name);
    let mut cmd = Command::new(&compiler);
    cmd.arg(if cpp { "-std=c++17" } else { "-std=c99" })
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg("-I")
        .arg(root().join("include"));
    if sanitize {
        cmd.args([
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer",
        ]);
    }
    for s in sources {
        cmd.arg(root().join(s));
    }
    cmd.arg("-L")
        .arg(lib)
        .args(["-ltensorprep", "-lm"])
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&exe);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
    assert!(
        out.status.success(),
        "{compiler} {sources:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run(exe: &Path, args: &[&Path], wrapper: &[&str]) -> Output {
    let mut cmd = match wrapper.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let out = cmd
        .args(args)
        .current_dir(root())
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()));
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The value after `key` on the line starting with it.
fn field<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no `{key}` line in:\n{text}"))
        .trim()
}

/// The checksum the examples print: FNV-style over the f32 bits.
fn checksum(tensor: &[f32]) -> String {
    let h = tensor.iter().fold(0u64, |h, v| {
        (h ^ u64::from(v.to_bits())).wrapping_mul(0x100_0000_01b3)
    });
    format!("{h:016x}")
}

/// The tensor the Rust API makes for a JPEG with `graph`.
fn rust_tensor(graph: &Graph, jpeg: &[u8]) -> Vec<f32> {
    let plan = graph.compile(InputDesc::Encoded).unwrap();
    let mut state = PlanState::new();
    let shape = plan
        .output_shape_for(&mut state, Input::Encoded(jpeg))
        .unwrap();
    let mut t = vec![0f32; shape.iter().product()];
    plan.run(&mut state, Input::Encoded(jpeg), TensorMut::F32(&mut t))
        .unwrap();
    t
}

/// A graph file with a self-test, and an HF graph file, written for the C programs.
fn graph_files() -> (PathBuf, PathBuf) {
    static FILES: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    FILES
        .get_or_init(|| {
            std::fs::create_dir_all(scratch()).unwrap();
            let mut eval = Graph::new(Pipeline::imagenet_eval()).unwrap();
            eval.add_self_test("pattern").unwrap();
            let eval_path = scratch().join("imagenet_eval.tpp");
            eval.save(&eval_path).unwrap();
            let config = String::from_utf8(read("graph/hf_clip_preprocessor_config.json")).unwrap();
            // The C library is built without libjpeg-turbo: decode with zune-jpeg.
            let clip = import::hugging_face(&config)
                .unwrap()
                .with_decoder(tensorprep::jpeg::Backend::Zune);
            let clip_path = scratch().join("clip.tpp");
            clip.save(&clip_path).unwrap();
            (eval_path, clip_path)
        })
        .clone()
}

fn misuse_args() -> Vec<PathBuf> {
    let (eval, _) = graph_files();
    vec![
        fixture("sample.jpg"),
        eval,
        fixture("graph/hf_vit_preprocessor_config.json"),
        fixture("graph/timm_resnet50_a1_config.json"),
        fixture("frame_128x96.nv21"),
        // Not ONNX and no sidecar: a model without a graph.
        fixture("graph/tflite_reshape_32x24.tflite"),
    ]
}

fn refs(paths: &[PathBuf]) -> Vec<&Path> {
    paths.iter().map(PathBuf::as_path).collect()
}

#[test]
fn the_c_example_makes_the_rust_api_tensor() {
    let exe = compile(&["examples/c/preprocess.c"], "preprocess", false);
    let jpeg = read("sample.jpg");
    let (_, clip) = graph_files();
    for (graph_arg, graph) in [
        (None, Graph::new(Pipeline::imagenet_eval()).unwrap()),
        (Some(clip.clone()), Graph::load(&clip).unwrap()),
    ] {
        let photo = fixture("sample.jpg");
        let mut args = vec![photo.as_path()];
        args.extend(graph_arg.as_deref());
        let text = stdout(&run(&exe, &args, &[]));
        let expected = rust_tensor(&graph, &jpeg);
        assert_eq!(field(&text, "checksum"), checksum(&expected), "{text}");
        let first: Vec<f32> = field(&text, "first")
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        for (c, r) in first.iter().zip(&expected) {
            assert!((c - r).abs() < 1e-6, "{first:?} vs {:?}", &expected[..5]);
        }
    }
}

#[test]
fn the_cpp_example_letterboxes_batches_and_maps_boxes_back() {
    let exe = compile(&["examples/cpp/detect.cpp"], "detect", false);
    let text = stdout(&run(
        &exe,
        &refs(&[
            fixture("sample.jpg"),
            fixture("sklearn_china.jpg"),
            PathBuf::from("--frame"),
            fixture("frame_128x96.nv21"),
            PathBuf::from("128"),
            PathBuf::from("96"),
        ]),
        &[],
    ));
    // 451x300 scaled by 640/451 is 640x426, centred: 107 rows of padding above.
    assert!(
        text.contains("-> [3, 640, 640], scale 1.419069, padding 0.0, 107.0"),
        "{text}"
    );
    // The padded picture's corners map back to the photo's.
    assert_eq!(
        field(&text, "box 0 in the photo:"),
        "0.00 0.00 451.00 300.00"
    );
    assert!(text.contains("batch of 2: first image 451x300, same tensor as the single run: yes"));
    assert!(
        text.contains("frame 128x96 NV21 -> 150528 floats"),
        "{text}"
    );
    assert!(text.contains("expected error: TP_RESULT_UNKNOWN_PRESET: no preset `no-such-preset`"));
}

#[test]
fn every_function_refuses_bad_arguments_with_its_code() {
    let exe = compile(&["tests/c/api_misuse.c"], "api_misuse", false);
    let text = stdout(&run(&exe, &refs(&misuse_args()), &[]));
    assert!(text.trim_end().ends_with(", 0 failed"), "{text}");
    let checks: usize = text.split_whitespace().next().unwrap().parse().unwrap();
    assert!(checks > 200, "{text}");
}

#[test]
fn address_and_undefined_behaviour_sanitizers_find_nothing() {
    let misuse = compile(&["tests/c/api_misuse.c"], "api_misuse_asan", true);
    let text = stdout(&run(&misuse, &refs(&misuse_args()), &[]));
    assert!(text.trim_end().ends_with(", 0 failed"), "{text}");
    let c = compile(&["examples/c/preprocess.c"], "preprocess_asan", true);
    run(&c, &[&fixture("sample.jpg")], &[]);
    let cpp = compile(&["examples/cpp/detect.cpp"], "detect_asan", true);
    run(&cpp, &[&fixture("sample.jpg")], &[]);
}

#[test]
fn valgrind_finds_no_errors_or_leaks() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("TP_REQUIRE_VALGRIND").is_none(),
            "TP_REQUIRE_VALGRIND is set but valgrind is not installed"
        );
        eprintln!("SKIPPED: valgrind is not installed (apt-get install valgrind)");
        return;
    }
    let valgrind = [
        "valgrind",
        "--quiet",
        "--leak-check=full",
        "--show-leak-kinds=definite,indirect,possible",
        "--errors-for-leak-kinds=definite,indirect,possible",
        "--error-exitcode=99",
    ];
    let misuse = compile(&["tests/c/api_misuse.c"], "api_misuse_valgrind", false);
    let text = stdout(&run(&misuse, &refs(&misuse_args()), &valgrind));
    assert!(text.trim_end().ends_with(", 0 failed"), "{text}");
    let c = compile(&["examples/c/preprocess.c"], "preprocess_valgrind", false);
    run(&c, &[&fixture("sample.jpg")], &valgrind);
}

/// The functions `include/tensorprep.h` declares.
fn declared_functions() -> Vec<String> {
    let header = std::fs::read_to_string(root().join("include/tensorprep.h")).unwrap();
    let mut names: Vec<String> = header
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#') && !l.starts_with('/'))
        .filter_map(|l| {
            let name = l.split('(').next()?.rsplit([' ', '*']).next()?;
            (l.contains('(') && name.starts_with("tp_")).then(|| name.to_owned())
        })
        .collect();
    names.sort();
    names
}

#[test]
fn the_misuse_test_calls_every_declared_function() {
    let functions = declared_functions();
    assert!(functions.len() >= 30, "{functions:?}");
    let test = std::fs::read_to_string(root().join("tests/c/api_misuse.c")).unwrap();
    let missing: Vec<&String> = functions
        .iter()
        .filter(|f| !test.contains(&format!("{f}(")))
        .collect();
    assert!(missing.is_empty(), "api_misuse.c never calls {missing:?}");
}

#[test]
fn the_library_exports_exactly_what_the_header_declares() {
    let so = library().join("libtensorprep.so");
    let Ok(out) = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
    else {
        panic!("`nm` (binutils) is needed to list the library's symbols");
    };
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let symbols: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    let mut exported: Vec<String> = symbols
        .iter()
        .filter(|s| s.starts_with("tp_"))
        .map(|s| (*s).to_owned())
        .collect();
    exported.sort();
    assert_eq!(exported, declared_functions());
    // A cdylib exports only the C functions: no Rust symbol of ours leaks out.
    let stray = symbols
        .iter()
        .filter(|s| !s.starts_with("tp_") && s.contains("tensorprep"))
        .count();
    assert_eq!(stray, 0, "Rust symbols exported from libtensorprep.so");
}

/// `tp_plan_run_jpeg` on a plan whose 363 MB buffers pass every limit, in a
/// process limited to 700 MiB of address space (`ulimit -v`): the system
/// cannot provide them, and the call returns `TP_RESULT_OUT_OF_MEMORY` with
/// a message; the process goes on and the same state runs a small plan.
#[test]
fn allocation_failure_is_a_result_code_not_an_abort() {
    use tensorprep::resize::{Filter, Resample};
    let exe = compile(&["tests/c/out_of_memory.c"], "out_of_memory", false);
    let bomb = Graph::new(tensorprep_tests::flip_bomb(
        true,
        11000,
        Resample::Pillow(Filter::Bilinear),
    ))
    .unwrap()
    .with_decoder(tensorprep::jpeg::Backend::Zune);
    let path = scratch().join("bomb.tpp");
    bomb.save(&path).unwrap();
    let out = run(
        &exe,
        &[&fixture("sample.jpg"), &path],
        &["sh", "-c", "ulimit -v 716800 && exec \"$0\" \"$@\""],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.code() == Some(0),
        "{:?}: {text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("TP_RESULT_OUT_OF_MEMORY: the system could not allocate"),
        "{text}"
    );
}
