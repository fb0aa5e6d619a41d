//! Every importer on arbitrary bytes: the first byte picks Hugging Face,
//! timm, TFLite, MindIR or Ultralytics (an ONNX model's metadata). A graph
//! an importer returns must encode and decode to itself, and compiling it
//! for encoded images and for a camera frame may fail but never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::PixelFormat;
use tensorprep::graph::{Graph, onnx};
use tensorprep::import;
use tensorprep::pipeline::InputDesc;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = || std::str::from_utf8(rest).ok();
    let graph = match which % 5 {
        0 => text().map(import::hugging_face),
        1 => text().map(import::timm),
        2 => Some(import::tflite(rest)),
        3 => Some(import::mindir(rest)),
        _ => onnx::metadata_props(rest)
            .ok()
            .map(|m| import::ultralytics(&m)),
    };
    let Some(Ok(graph)) = graph else {
        return;
    };
    let again = Graph::decode(&graph.encode()).expect("an imported graph encodes and decodes");
    assert_eq!(again, graph);
    let _ = graph.compile(InputDesc::Encoded);
    let _ = graph.compile(InputDesc::pixels(PixelFormat::Nv21, 64, 48));
});
