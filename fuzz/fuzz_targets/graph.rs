//! Arbitrary bytes through every loader of untrusted model-side files: graph
//! files (with and without a valid checksum), graphs embedded in ONNX
//! models, and the TFLite and MindIR importers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::PixelFormat;
use tensorprep::graph::{Graph, MAGIC, onnx};
use tensorprep::import;
use tensorprep::pipeline::InputDesc;

fuzz_target!(|data: &[u8]| {
    // As a graph file, and as a message with the magic and a correct checksum
    // added, so that the fuzzer reaches the validation behind the checksum.
    let mut file = MAGIC.to_vec();
    file.extend_from_slice(data);
    file.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    for bytes in [data, &file[..]] {
        if let Ok(g) = Graph::decode(bytes) {
            let _ = g.compile(InputDesc::Encoded);
            let _ = g.compile(InputDesc::pixels(PixelFormat::Nv21, 32, 24));
            let again = Graph::decode(&g.encode()).expect("a decoded graph re-encodes");
            assert_eq!(again, g);
            let _ = g.verify();
        }
    }
    let _ = onnx::extract(data);
    if let Ok(props) = onnx::metadata_props(data) {
        let _ = import::ultralytics(&props);
    }
    let _ = import::tflite(data);
    let _ = import::mindir(data);
});
