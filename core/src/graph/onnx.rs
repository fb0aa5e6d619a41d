//! Graphs inside ONNX models: the `metadata_props` entry `tensorprep.graph`.
//!
//! The model is never decoded as a whole. Its top-level protobuf fields are
//! scanned, the one metadata entry is removed or appended, and every other
//! byte is copied unchanged, so the model loads exactly as before.
//!
//! ```
//! use tensorprep::graph::{onnx, Graph};
//! use tensorprep::pipeline::Pipeline;
//!
//! // A minimal ModelProto: ir_version = 8 (field 1), an empty graph (field 7).
//! let model = [0x08, 0x08, 0x3a, 0x00];
//! let graph = Graph::new(Pipeline::imagenet_eval())?;
//! let with = onnx::embed(&model, &graph)?;
//! assert!(with.starts_with(&model));
//! assert_eq!(onnx::extract(&with)?, Some(graph));
//! assert_eq!(onnx::remove(&with)?, model);
//! # Ok::<(), tensorprep::graph::GraphError>(())
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::wire::{self, Value};
use super::{Graph, GraphError, MAX_GRAPH_BYTES};

/// The `metadata_props` key a graph is stored under.
pub const METADATA_KEY: &str = "tensorprep.graph";

/// `ModelProto.ir_version`.
const IR_VERSION: u32 = 1;
/// `ModelProto.metadata_props` (repeated `StringStringEntryProto`).
pub(crate) const METADATA_PROPS: u32 = 14;

/// One `StringStringEntryProto` (key 1, value 2) as raw bytes.
pub(crate) fn entry(bytes: &[u8]) -> Result<(&[u8], &[u8]), GraphError> {
    let (mut key, mut value) = (&[][..], &[][..]);
    for field in wire::fields(bytes) {
        let field = field?;
        match (field.number, field.value) {
            (1, Value::Bytes(b)) => key = b,
            (2, Value::Bytes(b)) => value = b,
            _ => {}
        }
    }
    Ok((key, value))
}

/// A model's metadata entries (key, value) and the spans of the ones keyed
/// [`METADATA_KEY`].
struct Scan<'a> {
    entries: Vec<(&'a [u8], &'a [u8])>,
    ours: Vec<core::ops::Range<usize>>,
}

fn scan(model: &[u8]) -> Result<Scan<'_>, GraphError> {
    let mut entries = Vec::new();
    let mut ours = Vec::new();
    let mut has_ir_version = false;
    for field in wire::fields(model) {
        let field = field.map_err(|e| not_onnx(&e))?;
        match (field.number, field.value) {
            (IR_VERSION, Value::Varint(_)) => has_ir_version = true,
            (METADATA_PROPS, Value::Bytes(b)) => {
                let (k, v) = entry(b).map_err(|e| not_onnx(&e))?;
                if k == METADATA_KEY.as_bytes() {
                    ours.push(field.span());
                }
                entries.push((k, v));
            }
            _ => {}
        }
    }
    if !has_ir_version {
        return Err(GraphError::import(
            "onnx",
            "not an ONNX model (no ir_version field)",
        ));
    }
    Ok(Scan { entries, ours })
}

fn not_onnx(e: &GraphError) -> GraphError {
    GraphError::import("onnx", alloc::format!("not a valid ONNX model: {e}"))
}

/// The model's `metadata_props`, in order (keys and values as UTF-8, lossily).
pub fn metadata_props(model: &[u8]) -> Result<Vec<(String, String)>, GraphError> {
    let entries = scan(model)?.entries;
    Ok(entries
        .into_iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect())
}

/// The graph embedded in `model`, if there is one.
pub fn extract(model: &[u8]) -> Result<Option<Graph>, GraphError> {
    let entries = scan(model)?.entries;
    let mut found = entries
        .iter()
        .filter(|(k, _)| *k == METADATA_KEY.as_bytes());
    let Some((_, value)) = found.next() else {
        return Ok(None);
    };
    if found.next().is_some() {
        return Err(GraphError::invalid(
            None,
            alloc::format!("the model has more than one `{METADATA_KEY}` entry"),
        ));
    }
    decode_value(value).map(Some)
}

/// Decodes a metadata value: base64 of a graph file.
pub(crate) fn decode_value(value: &[u8]) -> Result<Graph, GraphError> {
    let limit = MAX_GRAPH_BYTES.div_ceil(3) * 4;
    if value.len() > limit {
        return Err(GraphError::TooLarge {
            bytes: value.len() as u64,
            limit: limit as u64,
        });
    }
    let bytes = STANDARD.decode(value).map_err(|e| {
        GraphError::Malformed(alloc::format!(
            "the `{METADATA_KEY}` entry is not base64: {e}"
        ))
    })?;
    Graph::decode(&bytes)
}

/// `model` without any embedded graph; every other byte unchanged.
pub fn remove(model: &[u8]) -> Result<Vec<u8>, GraphError> {
    let ours = scan(model)?.ours;
    let mut out = Vec::with_capacity(model.len());
    let mut at = 0;
    for span in ours {
        out.extend_from_slice(&model[at..span.start]);
        at = span.end;
    }
    out.extend_from_slice(&model[at..]);
    Ok(out)
}

/// `model` with `graph` embedded (replacing a graph embedded before): the
/// model's bytes, without the old entry, then one new `metadata_props` entry.
pub fn embed(model: &[u8], graph: &Graph) -> Result<Vec<u8>, GraphError> {
    let mut out = remove(model)?;
    out.extend_from_slice(&metadata_field(graph));
    Ok(out)
}

/// The top-level `metadata_props` field that holds `graph`: what embedding
/// appends to a model.
pub(crate) fn metadata_field(graph: &Graph) -> Vec<u8> {
    let value = STANDARD.encode(graph.encode());
    let mut entry = Vec::with_capacity(value.len() + METADATA_KEY.len() + 8);
    wire::put_bytes(&mut entry, 1, METADATA_KEY.as_bytes());
    wire::put_bytes(&mut entry, 2, value.as_bytes());
    let mut field = Vec::with_capacity(entry.len() + 8);
    wire::put_bytes(&mut field, METADATA_PROPS, &entry);
    field
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    fn model_with_props(props: &[(&str, &str)]) -> Vec<u8> {
        let mut m = alloc::vec![0x08, 0x07];
        wire::put_bytes(&mut m, 2, b"producer");
        for (k, v) in props {
            let mut e = Vec::new();
            wire::put_bytes(&mut e, 1, k.as_bytes());
            wire::put_bytes(&mut e, 2, v.as_bytes());
            wire::put_bytes(&mut m, METADATA_PROPS, &e);
        }
        wire::put_bytes(&mut m, 7, b"\x0a\x00");
        m
    }

    #[test]
    fn embedding_twice_replaces_and_keeps_other_entries() {
        let model = model_with_props(&[("imgsz", "[640, 640]"), ("stride", "32")]);
        let a = Graph::new(Pipeline::imagenet_eval()).unwrap();
        let b = Graph::new(Pipeline::yolo_letterbox(320, 320)).unwrap();
        let once = embed(&model, &a).unwrap();
        let twice = embed(&once, &b).unwrap();
        assert_eq!(extract(&twice).unwrap(), Some(b));
        let keys: Vec<String> = metadata_props(&twice)
            .unwrap()
            .into_iter()
            .map(|p| p.0)
            .collect();
        assert_eq!(keys, ["imgsz", "stride", METADATA_KEY]);
        assert_eq!(remove(&twice).unwrap(), model);
        assert_eq!(extract(&model).unwrap(), None);
    }

    #[test]
    fn non_models_and_bad_entries_are_refused() {
        assert!(
            embed(
                b"\xff\xd8\xff\xe0 a jpeg",
                &Graph::new(Pipeline::imagenet_eval()).unwrap()
            )
            .is_err()
        );
        assert!(metadata_props(b"").is_err());
        let model = model_with_props(&[(METADATA_KEY, "not base64 !")]);
        assert!(extract(&model).is_err());
        let model = model_with_props(&[(METADATA_KEY, "AAAA")]);
        assert!(matches!(extract(&model), Err(GraphError::NotAGraph)));
    }
}
