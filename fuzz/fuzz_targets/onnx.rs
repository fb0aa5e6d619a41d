//! The ONNX readers must agree on every input: the in-memory scanners
//! (`onnx::extract`, `onnx::metadata_props`, `onnx_inputs`, `onnx::embed`)
//! and the streaming ones that `inspect`, `run --graph` and `embed` use on
//! files (`embedded_in_onnx_file`, `onnx_file_metadata_props`,
//! `onnx_file_inputs`, `OnnxEmbedding`): both succeed with the same result,
//! or both refuse. An embedded graph is then extracted unchanged.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tensorprep::graph::{self, Graph, OnnxEmbedding, onnx};
use tensorprep::pipeline::Pipeline;

fn same<T: PartialEq + std::fmt::Debug, E: std::fmt::Debug, F: std::fmt::Debug>(
    what: &str,
    a: Result<T, E>,
    b: Result<T, F>,
) -> Option<T> {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "{what}: the readers differ");
            Some(a)
        }
        (Err(_), Err(_)) => None,
        (a, b) => panic!("{what}: in memory {a:?}, streamed {b:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    let graph = GRAPH.get_or_init(|| Graph::new(Pipeline::imagenet_eval()).unwrap());
    let path = std::env::temp_dir().join(format!("tp-fuzz-onnx-{}.onnx", std::process::id()));
    std::fs::write(&path, data).unwrap();
    same(
        "extract",
        onnx::extract(data),
        graph::embedded_in_onnx_file(&path),
    );
    same(
        "metadata",
        onnx::metadata_props(data),
        graph::onnx_file_metadata_props(&path),
    );
    same(
        "inputs",
        graph::onnx_inputs(data),
        graph::onnx_file_inputs(&path),
    );
    let streamed = OnnxEmbedding::new(&path, graph).map(|e| {
        let mut out = Vec::new();
        let n = e.write_to(&mut out).expect("the file is still there");
        assert_eq!(n, e.output_len());
        out
    });
    if let Some(with) = same("embed", onnx::embed(data, graph), streamed) {
        assert_eq!(onnx::extract(&with).unwrap(), Some(graph.clone()));
    }
});
