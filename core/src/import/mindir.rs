//! MindSpore MindIR models: the dataset preprocessing saved in
//! `ModelProto.preprocessor` (field 9) by `mindspore.export(..., dataset=...)`.

use std::format;
use std::string::String;
use std::vec::Vec;

use serde_json::Value;

use super::json::{self, Object};
use super::{decode, graph};
use crate::finish::{ChannelOrder, Normalize};
use crate::graph::wire::{self, Value as Wire};
use crate::graph::{Graph, GraphError};
use crate::jpeg::Orientation;
use crate::pipeline::{CenterCrop, CropRounding, Op, Resize};
use crate::resize::Resample;
use crate::size::{Rounding, SizeRule};
use crate::{DType, Layout, Quantization};

const FORMAT: &str = "mindir";

// mind_ir.proto field numbers.
const MODEL_PREPROCESSOR: u32 = 9;
const PREPROCESSOR_OP: u32 = 1;
const OP_INPUT_COLUMNS: u32 = 1;
const OP_TYPE: u32 = 4;
const OP_OPERATIONS: u32 = 5;

fn bad(message: impl Into<String>) -> GraphError {
    GraphError::import(FORMAT, message)
}

/// One map op of the saved dataset pipeline: its input columns and its
/// operations (JSON text).
struct MapOp<'a> {
    op_type: &'a [u8],
    input_columns: &'a [u8],
    operations: &'a [u8],
}

fn map_ops(model: &[u8]) -> Result<Vec<MapOp<'_>>, GraphError> {
    let mut preprocessor = None;
    for field in wire::fields(model) {
        let field = field.map_err(|e| bad(format!("not a MindIR model: {e}")))?;
        if let (MODEL_PREPROCESSOR, Wire::Bytes(b)) = (field.number, field.value) {
            preprocessor = Some(b);
        }
    }
    let preprocessor = preprocessor.ok_or_else(|| {
        bad("the model has no preprocessor (export it with `mindspore.export(..., dataset=...)`)")
    })?;
    let mut ops = Vec::new();
    for field in wire::fields(preprocessor) {
        let field = field?;
        let (PREPROCESSOR_OP, Wire::Bytes(op)) = (field.number, field.value) else {
            continue;
        };
        let mut m = MapOp {
            op_type: b"",
            input_columns: b"",
            operations: b"",
        };
        for f in wire::fields(op) {
            let f = f?;
            match (f.number, f.value) {
                (OP_TYPE, Wire::Bytes(b)) => m.op_type = b,
                (OP_INPUT_COLUMNS, Wire::Bytes(b)) => m.input_columns = b,
                (OP_OPERATIONS, Wire::Bytes(b)) => m.operations = b,
                _ => {}
            }
        }
        ops.push(m);
    }
    Ok(ops)
}

fn text(bytes: &[u8]) -> Result<&str, GraphError> {
    std::str::from_utf8(bytes).map_err(|_| bad("a preprocessor field is not UTF-8"))
}

/// Builds the ops from MindSpore's vision operations, in order.
struct Builder {
    ops: Vec<Op>,
    decoded: bool,
    divisor: Option<f32>,
    normalize: Option<Normalize>,
    layout: Layout,
    float: bool,
}

impl Builder {
    /// One `{"tensor_op_name": ..., "tensor_op_params": {...}}` entry (older
    /// MindSpore writes the parameters next to the name).
    fn add(&mut self, entry: &Value) -> Result<(), GraphError> {
        let outer = Object::new(FORMAT, entry)?;
        let name = outer
            .str("tensor_op_name")?
            .ok_or_else(|| bad("an operation has no tensor_op_name"))?;
        let empty = Value::Object(serde_json::Map::new());
        let params = match outer.map.get("tensor_op_params") {
            Some(Value::Null) => Object::new(FORMAT, &empty)?,
            Some(p) => Object::new(FORMAT, p)?,
            None => outer,
        };
        if !matches!(name, "Decode") && !self.decoded {
            return Err(bad(format!("`{name}` comes before Decode")));
        }
        if self.layout == Layout::Chw && !matches!(name, "Normalize" | "Rescale" | "TypeCast") {
            return Err(bad(format!("`{name}` after HWC2CHW is not supported")));
        }
        let sizes = |key: &str| -> Result<Vec<u32>, GraphError> {
            params
                .sizes(key)?
                .filter(|v| !v.is_empty() && v.len() <= 2 && v.iter().all(|&s| s > 0))
                .ok_or_else(|| bad(format!("{name}: `{key}` must be one or two positive sizes")))
        };
        match name {
            "Decode" => {
                if params.bool("rgb")? == Some(false) {
                    return Err(bad("Decode with rgb=false (BGR) is not supported"));
                }
                self.ops.push(decode(Orientation::Ignore));
                self.decoded = true;
            }
            "Resize" => {
                let size = match sizes("size")?[..] {
                    // The shorter side, the other side in float32 floored.
                    [s] => SizeRule::ShorterSide {
                        size: s,
                        max_size: None,
                        rounding: Rounding::FloorF32,
                    },
                    [height, width] => SizeRule::Exact { width, height },
                    _ => unreachable!("sizes() returns one or two"),
                };
                // mindspore.dataset.vision.Inter: LINEAR 0, NEAREST 1, BICUBIC 2, AREA 3, PILCUBIC 4.
                let resample = match params.int("interpolation")?.unwrap_or(0) {
                    0 => Resample::OpenCvLinear,
                    3 => Resample::OpenCvArea,
                    n => {
                        return Err(bad(format!(
                            "Resize interpolation {n} is not supported (LINEAR or AREA)"
                        )));
                    }
                };
                self.ops.push(Op::Resize(Resize { size, resample }));
            }
            "CenterCrop" => {
                let (height, width) = match sizes("size")?[..] {
                    [s] => (s, s),
                    [h, w] => (h, w),
                    _ => unreachable!("sizes() returns one or two"),
                };
                self.ops.push(Op::CenterCrop(CenterCrop {
                    width,
                    height,
                    rounding: CropRounding::Floor,
                }));
            }
            "Rescale" => {
                let scale = params
                    .f64("rescale")?
                    .ok_or_else(|| bad("Rescale needs `rescale`"))?;
                if params.f64("shift")?.unwrap_or(0.0) != 0.0
                    || scale.is_nan()
                    || scale <= 0.0
                    || self.normalize.is_some()
                {
                    return Err(bad(
                        "only Rescale(r, 0) with r > 0, before Normalize, is supported",
                    ));
                }
                self.divisor = Some((1.0 / scale) as f32);
                self.float = true;
            }
            "Normalize" => {
                let stat = |key: &str| -> Result<[f32; 3], GraphError> {
                    params
                        .floats(key)?
                        .as_deref()
                        .and_then(super::three)
                        .ok_or_else(|| bad(format!("Normalize needs 1 or 3 `{key}` values")))
                };
                self.normalize = Some(Normalize {
                    mean: stat("mean")?,
                    std: stat("std")?,
                    divisor: self.divisor.unwrap_or(1.0),
                    std_reciprocal: false,
                    second_std: [1.0; 3],
                });
                self.float = true;
            }
            // `Name()` of the C++ op; older exports used the Python class name.
            "HwcToChw" | "HWC2CHW" => self.layout = Layout::Chw,
            "ToTensor" => {
                if self.normalize.is_some() || self.divisor.is_some() {
                    return Err(bad("ToTensor after Normalize or Rescale is not supported"));
                }
                self.divisor = Some(255.0);
                self.layout = Layout::Chw;
                self.float = true;
            }
            "TypeCast" => {
                let to = params.str("data_type")?.unwrap_or("");
                if to != "float32" {
                    return Err(bad(format!("TypeCast to `{to}` is not supported")));
                }
                self.float = true;
            }
            other => return Err(bad(format!("operation `{other}` is not supported"))),
        }
        Ok(())
    }
}

/// The preprocessing saved in a MindIR model (`ModelProto.preprocessor`):
/// the map operations on the image column, in order.
///
/// Supported operations (`mindspore.dataset.vision`): `Decode`, `Resize`
/// (one size: the shorter side, the other side `floor(long / short * size)`
/// in float32 as MindSpore computes it; two sizes: height and width; LINEAR
/// or AREA interpolation, MindSpore's OpenCV kernels), `CenterCrop` (offsets
/// floored), `Rescale(r, 0)`, `Normalize` (mean and std in the units of the
/// values at that point: 0-255 unless rescaled), `HWC2CHW` (`HwcToChw`), `ToTensor` and
/// `TypeCast(float32)`. Anything else is refused by name.
pub fn mindir(model: &[u8]) -> Result<Graph, GraphError> {
    let map_ops = map_ops(model)?;
    let mut b = Builder {
        ops: Vec::new(),
        decoded: false,
        divisor: None,
        normalize: None,
        layout: Layout::Hwc,
        float: false,
    };
    for m in &map_ops {
        let op_type = text(m.op_type)?;
        if !op_type.trim_matches('"').eq_ignore_ascii_case("map") {
            continue;
        }
        let columns: Value = serde_json::from_str(text(m.input_columns)?).unwrap_or(Value::Null);
        let on_image = match &columns {
            Value::Array(c) => c.iter().any(|c| c.as_str() == Some("image")),
            Value::String(c) => c == "image",
            _ => true,
        };
        if !on_image {
            continue;
        }
        let operations = json::parse_any(FORMAT, text(m.operations)?)?;
        let list = operations
            .as_array()
            .ok_or_else(|| bad("`operations` is not a JSON list"))?;
        for entry in list {
            b.add(entry)?;
        }
    }
    if !b.decoded {
        return Err(bad("the preprocessor has no Decode on the image column"));
    }
    let normalize = b.normalize.unwrap_or(Normalize {
        mean: [0.0; 3],
        std: [1.0; 3],
        divisor: b.divisor.unwrap_or(1.0),
        std_reciprocal: false,
        second_std: [1.0; 3],
    });
    let dtype = if b.float { DType::F32 } else { DType::U8 };
    b.ops.extend([
        Op::Normalize(normalize),
        Op::Layout {
            layout: b.layout,
            order: ChannelOrder::Rgb,
        },
        Op::Cast {
            dtype,
            quantization: Quantization::IDENTITY,
        },
    ]);
    graph(
        &b.ops,
        "",
        format!("mindir preprocessor ({} map ops)", map_ops.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::wire::put_bytes;
    use std::string::ToString;

    fn model(operations: &str) -> Vec<u8> {
        let mut op = Vec::new();
        put_bytes(&mut op, OP_INPUT_COLUMNS, br#"["image"]"#);
        put_bytes(&mut op, OP_TYPE, br#""Map""#);
        put_bytes(&mut op, OP_OPERATIONS, operations.as_bytes());
        let mut pre = Vec::new();
        put_bytes(&mut pre, PREPROCESSOR_OP, &op);
        let mut m = Vec::new();
        put_bytes(&mut m, 1, b"0.1.1");
        put_bytes(&mut m, MODEL_PREPROCESSOR, &pre);
        m
    }

    #[test]
    fn the_imagenet_pipeline_of_the_model_zoo() {
        let g = mindir(&model(
            r#"[{"tensor_op_name": "Decode", "tensor_op_params": {"rgb": true}},
                {"tensor_op_name": "Resize", "tensor_op_params": {"size": [256], "interpolation": 0}},
                {"tensor_op_name": "CenterCrop", "tensor_op_params": {"size": [224]}},
                {"tensor_op_name": "Normalize", "tensor_op_params": {"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375], "is_hwc": true}},
                {"tensor_op_name": "HwcToChw", "tensor_op_params": null}]"#,
        ))
        .unwrap();
        assert_eq!(g.output.shape, Some([3, 224, 224]));
        assert_eq!(g.output.dtype, DType::F32);
        assert!(g.pipeline.ops().iter().any(|op| matches!(
            op,
            Op::Resize(Resize {
                size: SizeRule::ShorterSide {
                    rounding: Rounding::FloorF32,
                    ..
                },
                ..
            })
        )));
        // Older MindSpore: parameters beside the name.
        let flat = mindir(&model(
            r#"[{"tensor_op_name": "Decode", "rgb": true}, {"tensor_op_name": "Resize", "size": [32, 48], "interpolation": 0}]"#,
        ))
        .unwrap();
        assert_eq!(flat.output.shape, Some([32, 48, 3]));
        assert_eq!(flat.output.dtype, DType::U8);
    }

    #[test]
    fn unsupported_operations_are_named() {
        for (ops, needle) in [
            (
                r#"[{"tensor_op_name": "Decode"}, {"tensor_op_name": "RandomCrop", "tensor_op_params": {}}]"#,
                "RandomCrop",
            ),
            (
                r#"[{"tensor_op_name": "Resize", "tensor_op_params": {"size": [2]}}]"#,
                "before Decode",
            ),
            (
                r#"[{"tensor_op_name": "Decode"}, {"tensor_op_name": "Resize", "tensor_op_params": {"size": [2], "interpolation": 2}}]"#,
                "interpolation 2",
            ),
            ("not json", "JSON"),
        ] {
            let e = mindir(&model(ops)).unwrap_err().to_string();
            assert!(e.contains(needle), "{ops}: {e}");
        }
        assert!(
            mindir(b"\x08\x01")
                .unwrap_err()
                .to_string()
                .contains("no preprocessor")
        );
    }
}
