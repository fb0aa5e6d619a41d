//! Graph files, ONNX, TFLite and MindIR models are untrusted input: truncated,
//! mutated and crafted files give typed errors, never panics, and sizes are
//! capped before anything is allocated for them.

use prost::Message;
use tensorprep::graph::{self, Graph, GraphError, onnx, proto};
use tensorprep::import;
use tensorprep::pipeline::{InputDesc, Pipeline};
use tensorprep_tests::{Rng, crc32, read};

fn sample_graph() -> Graph {
    let mut g = Graph::new(Pipeline::yolo_letterbox(64, 48)).unwrap();
    g.output.name = "images".into();
    g.add_self_test("pattern").unwrap();
    g
}

/// `bytes` with one to four bytes flipped, overwritten or inserted.
fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    let mut m = bytes.to_vec();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(m.len());
        match rng.below(3) {
            0 => m[i] ^= 1 << rng.below(8),
            1 => m[i] = rng.next_u64() as u8,
            _ => m.insert(i, rng.next_u64() as u8),
        }
    }
    m
}

/// Whatever decodes must also compile, re-encode and verify without panicking.
fn exercise(bytes: &[u8]) {
    if let Ok(g) = Graph::decode(bytes) {
        let _ = g.compile(InputDesc::Encoded);
        let _ = g.compile(InputDesc::pixels(tensorprep::PixelFormat::Nv21, 64, 48));
        let again = Graph::decode(&g.encode()).expect("a decoded graph re-encodes");
        assert_eq!(again, g);
        let _ = g.verify();
    }
}

#[test]
fn every_truncation_of_a_graph_file_is_an_error() {
    let bytes = sample_graph().encode();
    for cut in 0..bytes.len() {
        assert!(Graph::decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    assert!(Graph::decode(&bytes).is_ok());
}

#[test]
fn the_file_is_magic_message_and_its_crc32() {
    let bytes = sample_graph().encode();
    let body = &bytes[8..bytes.len() - 4];
    assert_eq!(bytes, with_checksum(body));
    assert_eq!(
        proto::Graph::decode(body).unwrap(),
        sample_graph().to_proto()
    );
}

/// Mutations of the message with its checksum recomputed: what reaches the
/// decoder when the corruption happened before the file was written.
#[test]
fn mutated_messages_never_panic() {
    let bytes = sample_graph().encode();
    let body = bytes[8..bytes.len() - 4].to_vec();
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let (mut ok, mut err) = (0, 0);
    for _ in 0..3000 {
        let file = with_checksum(&mutate(&mut rng, &body));
        match Graph::decode(&file) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
        exercise(&file);
    }
    println!("3000 re-checksummed mutations: {ok} still valid, {err} refused");
    assert!(
        err > 1000,
        "most mutations are caught by validation ({err})"
    );
}

#[test]
fn mutated_graph_files_never_panic() {
    let bytes = sample_graph().encode();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut ok, mut err) = (0, 0);
    for _ in 0..3000 {
        let m = mutate(&mut rng, &bytes);
        if m == bytes {
            continue; // a byte overwritten with its own value: no mutation
        }
        match Graph::decode(&m) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
        exercise(&m);
    }
    println!("3000 mutations: {ok} still valid, {err} refused");
    // The checksum catches every mutation.
    assert_eq!(ok, 0);
}

/// A graph file holding `message` after `edit`, with a correct checksum.
fn file(mut message: proto::Graph, edit: impl FnOnce(&mut proto::Graph)) -> Vec<u8> {
    edit(&mut message);
    with_checksum(&message.encode_to_vec())
}

fn with_checksum(body: &[u8]) -> Vec<u8> {
    let mut out = graph::MAGIC.to_vec();
    out.extend_from_slice(body);
    out.extend_from_slice(&crc32(body).to_le_bytes());
    out
}

fn refused(bytes: &[u8]) -> String {
    Graph::decode(bytes).unwrap_err().to_string()
}

#[test]
fn crafted_files_are_refused_by_name() {
    let base = sample_graph().to_proto();
    // Too many ops, counted before they are decoded.
    let many = file(base.clone(), |g| {
        let op = g.ops[1].clone();
        g.ops.extend(std::iter::repeat_n(op, 40));
    });
    assert!(refused(&many).contains("ops (at most 32)"));
    // Too many self-tests and samples.
    let tests = file(base.clone(), |g| {
        let t = g.self_tests[0].clone();
        g.self_tests.extend(std::iter::repeat_n(t, 20));
    });
    assert!(refused(&tests).contains("self-tests"));
    let samples = file(base.clone(), |g| {
        g.self_tests[0].sample_index = vec![0; 5000];
        g.self_tests[0].sample_value = vec![0.0; 5000];
    });
    assert!(refused(&samples).contains("samples"));
    let nan = file(base.clone(), |g| g.self_tests[0].sample_value[3] = f32::NAN);
    assert!(refused(&nan).contains("finite"));
    // A newer reader, a missing feature, an unknown op.
    let newer = file(base.clone(), |g| g.min_reader_version = 2);
    assert!(refused(&newer).contains("reader version 2"));
    let feature = file(base.clone(), |g| {
        g.required_features.push("op.sharpen".into())
    });
    assert!(refused(&feature).contains("op.sharpen"));
    let unknown = file(base.clone(), |g| {
        g.ops.insert(
            2,
            proto::Op {
                name: "Sharpen".into(),
                kind: None,
            },
        )
    });
    assert!(refused(&unknown).contains("op 2 `Sharpen`"));
    // A missing parameter names itself.
    let unspecified = file(base.clone(), |g| {
        if let Some(proto::op::Kind::Resize(r)) = &mut g.ops[1].kind {
            r.family = 0;
        }
    });
    assert!(refused(&unspecified).contains("op 1 (Resize)"));
    // Output declared unlike what the ops produce.
    let lying = file(base.clone(), |g| {
        g.output.as_mut().unwrap().shape = vec![3, 640, 640];
    });
    assert!(refused(&lying).contains("declared"));
    // A self-test image larger than the limits, before its pixels are used.
    let huge = file(base.clone(), |g| {
        if let Some(proto::self_test::Input::Pixels(p)) = &mut g.self_tests[0].input {
            p.width = 1 << 20;
            p.height = 1 << 20;
        }
    });
    assert!(refused(&huge).contains("self-test"));
    let short = file(base.clone(), |g| {
        if let Some(proto::self_test::Input::Pixels(p)) = &mut g.self_tests[0].input {
            p.pixels.truncate(10);
        }
    });
    assert!(refused(&short).contains("self-test"));
    // An oversized file, refused before decoding.
    let mut big = graph::MAGIC.to_vec();
    big.resize(graph::MAX_GRAPH_BYTES + 1, 0);
    assert!(matches!(
        Graph::decode(&big),
        Err(GraphError::TooLarge { .. })
    ));
    // A length prefix far past the end.
    let lie = with_checksum(&[0x32, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(matches!(Graph::decode(&lie), Err(GraphError::Malformed(_))));
    // A wrong checksum.
    let mut flipped = sample_graph().encode();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(refused(&flipped).contains("checksum"));
    assert!(matches!(
        Graph::decode(b"{\"ops\": []}"),
        Err(GraphError::NotAGraph)
    ));
}

#[test]
fn mutated_models_never_panic_the_importers_or_the_embedder() {
    let graph = sample_graph();
    let models = [
        ("onnx", read("graph/ultralytics_yolov8n_320.onnx")),
        ("tflite", read("graph/tflite_reshape_32x24.tflite")),
        ("mindir", read("graph/mindspore_resnet_eval.mindir")),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (kind, model) in &models {
        let with = onnx::embed(&models[0].1, &graph).unwrap();
        let run = |bytes: &[u8]| match *kind {
            "onnx" => {
                let _ = onnx::metadata_props(bytes).map(|m| import::ultralytics(&m));
                let _ = onnx::extract(bytes);
                let _ = onnx::embed(bytes, &graph);
            }
            "tflite" => {
                let _ = import::tflite(bytes);
            }
            _ => {
                let _ = import::mindir(bytes);
            }
        };
        for cut in (0..model.len()).step_by(7) {
            run(&model[..cut]);
        }
        for _ in 0..1500 {
            let mut m = if *kind == "onnx" {
                with.clone()
            } else {
                model.clone()
            };
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(m.len());
                m[i] = rng.next_u64() as u8;
            }
            run(&m);
        }
    }
}

#[test]
fn sidecar_and_embedded_graphs_are_found_and_must_agree() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("for_model");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("yolo.onnx");
    let plain = read("graph/ultralytics_yolov8n_320.onnx");
    std::fs::write(&model, &plain).unwrap();
    assert!(
        Graph::for_model(&model)
            .unwrap_err()
            .to_string()
            .contains("no graph")
    );

    let a = sample_graph();
    a.save(graph::sidecar_path(&model)).unwrap();
    assert_eq!(Graph::for_model(&model).unwrap(), a);
    assert_eq!(Graph::for_model(graph::sidecar_path(&model)).unwrap(), a);
    // The same graph embedded too: fine. A different one: refused.
    std::fs::write(&model, onnx::embed(&plain, &a).unwrap()).unwrap();
    assert_eq!(Graph::for_model(&model).unwrap(), a);
    let b = Graph::new(Pipeline::imagenet_eval()).unwrap();
    std::fs::write(&model, onnx::embed(&plain, &b).unwrap()).unwrap();
    assert!(
        Graph::for_model(&model)
            .unwrap_err()
            .to_string()
            .contains("differ")
    );
    std::fs::remove_file(graph::sidecar_path(&model)).unwrap();
    assert_eq!(Graph::for_model(&model).unwrap(), b);
    assert_eq!(graph::embedded_in_onnx_file(&model).unwrap(), Some(b));
    let props = graph::onnx_file_metadata_props(&model).unwrap();
    assert!(
        props.iter().any(|(k, v)| k == "imgsz" && v == "[320, 320]"),
        "{props:?}"
    );
}

/// A model with a field numbered 0 is no protobuf: every reader refuses it
/// (the streaming ones accepted it where embedding refused it).
#[test]
fn every_model_reader_refuses_field_zero() {
    use tensorprep::graph::{embedded_in_onnx_file, onnx, onnx_file_inputs, onnx_inputs};
    // ir_version = 8, then field 0 (length-delimited, empty).
    let model = [0x08, 0x08, 0x02, 0x00];
    let path = std::env::temp_dir().join(format!("field0-{}.onnx", std::process::id()));
    std::fs::write(&path, model).unwrap();
    assert!(onnx::extract(&model).is_err());
    assert!(onnx_inputs(&model).is_err());
    assert!(
        onnx::embed(
            &model,
            &Graph::new(tensorprep::pipeline::Pipeline::imagenet_eval()).unwrap()
        )
        .is_err()
    );
    assert!(embedded_in_onnx_file(&path).is_err());
    assert!(onnx_file_inputs(&path).is_err());
    std::fs::remove_file(&path).unwrap();
}

/// The streaming embedder (`OnnxEmbedding`, used by `tensorprep embed`)
/// writes the in-memory embedder's bytes, and refuses what it refuses, on
/// the fixture and on mutations of it (with and without a graph inside).
#[test]
fn streaming_and_in_memory_embedding_agree() {
    let graph = sample_graph();
    let model = read("graph/ultralytics_yolov8n_320.onnx");
    let with = onnx::embed(&model, &Graph::new(Pipeline::imagenet_eval()).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("tp-stream-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.onnx");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut agreed_ok, mut agreed_err) = (0, 0);
    for i in 0..400 {
        let mut m = if i % 2 == 0 {
            model.clone()
        } else {
            with.clone()
        };
        for _ in 0..i.min(1) + rng.below(3) {
            let at = rng.below(m.len());
            m[at] = rng.next_u64() as u8;
        }
        std::fs::write(&path, &m).unwrap();
        let streamed = graph::OnnxEmbedding::new(&path, &graph).map(|e| {
            let mut out = Vec::new();
            let n = e.write_to(&mut out).unwrap();
            assert_eq!(n, e.output_len());
            out
        });
        match (streamed, onnx::embed(&m, &graph)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "mutation {i}");
                agreed_ok += 1;
            }
            (Err(_), Err(_)) => agreed_err += 1,
            (a, b) => panic!(
                "mutation {i}: streamed {:?}, in memory {:?}",
                a.err(),
                b.err()
            ),
        }
    }
    assert!(
        agreed_ok > 100 && agreed_err > 20,
        "{agreed_ok} {agreed_err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Found by the `onnx` fuzz target: field 1 as a fixed64 is no ir_version;
/// the streaming scanner took it for one (a model without a graph), the
/// in-memory one refused. Both refuse now.
#[test]
fn every_onnx_reader_agrees_on_fixed64_field_1_and_overlong_varints() {
    let data = [0x09, 0x90, 0x08, 0x08, 0x4f, 0x6f, 0x4f, 0x6f, 0x90];
    let path = std::env::temp_dir().join(format!("tp-fixed64-{}.onnx", std::process::id()));
    std::fs::write(&path, data).unwrap();
    assert!(onnx::extract(&data).is_err());
    assert!(graph::embedded_in_onnx_file(&path).is_err());
    assert!(graph::onnx_file_metadata_props(&path).is_err());
    assert!(graph::OnnxEmbedding::new(&path, &sample_graph()).is_err());
    // And on a varint of ten bytes whose last overflows 64 bits (prost's rule).
    let data = [
        0xf8, 0x90, 0x7a, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x90, 0x08,
    ];
    std::fs::write(&path, data).unwrap();
    assert!(graph::onnx_inputs(&data).is_err());
    assert!(graph::onnx_file_inputs(&path).is_err());
    // A key read across the end of a nested message: the streaming reader
    // subtracted past zero (a panic in debug builds).
    let data = read("graph/fuzz/onnx_field_past_nested_end.bin");
    std::fs::write(&path, &data).unwrap();
    assert_eq!(
        graph::onnx_inputs(&data).is_ok(),
        graph::onnx_file_inputs(&path).is_ok()
    );
    std::fs::remove_file(&path).unwrap();
}
