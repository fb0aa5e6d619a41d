//! What an ONNX model expects as input, read from its `GraphProto` without
//! decoding (or, from a file, reading) its weights; and whether a graph's
//! output fits it.
//!
//! ```
//! use tensorprep::graph::{Dim, Graph, ModelInput};
//! use tensorprep::pipeline::Pipeline;
//!
//! let graph = Graph::new(Pipeline::imagenet_eval())?; // float32 [3, 224, 224]
//! let vit = ModelInput::tensor("pixel_values", 1, &[Dim::Symbolic("batch".into()), Dim::Fixed(3), Dim::Fixed(224), Dim::Fixed(224)]);
//! assert!(graph.check_fits(&[vit]).is_ok());
//! let yolo = ModelInput::tensor("images", 1, &[Dim::Fixed(1), Dim::Fixed(3), Dim::Fixed(320), Dim::Fixed(320)]);
//! let err = graph.check_fits(&[yolo]).unwrap_err().to_string();
//! assert!(err.contains("[3, 224, 224]") && err.contains("[1, 3, 320, 320]"), "{err}");
//! # Ok::<(), tensorprep::graph::GraphError>(())
//! ```

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::wire::{self, Value};
use super::{Graph, GraphError};
use crate::{DType, Layout};

/// One dimension of a model input's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size.
    Fixed(i64),
    /// A named size set at run time (`batch`, `height`).
    Symbolic(String),
    /// No size given.
    Unknown,
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(v) => write!(f, "{v}"),
            Dim::Symbolic(s) => f.write_str(s),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

/// A model's graph input (weights listed as inputs by old exporters left out).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelInput {
    /// The input's name.
    pub name: String,
    /// ONNX `TensorProto.DataType` (1 float32, 2 uint8, 3 int8, 10 float16; 0 unknown).
    pub elem_type: i32,
    /// The shape; `None` when the model does not say.
    pub shape: Option<Vec<Dim>>,
}

impl ModelInput {
    /// A tensor input with a known shape.
    pub fn tensor(name: &str, elem_type: i32, shape: &[Dim]) -> ModelInput {
        ModelInput {
            name: name.into(),
            elem_type,
            shape: Some(shape.to_vec()),
        }
    }

    fn dtype(&self) -> Option<DType> {
        match self.elem_type {
            1 => Some(DType::F32),
            2 => Some(DType::U8),
            3 => Some(DType::I8),
            10 => Some(DType::F16),
            _ => None,
        }
    }
}

impl fmt::Display for ModelInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` ", self.name)?;
        match self.dtype() {
            Some(d) => write!(f, "{}", dtype_name(d))?,
            None => write!(f, "(element type {})", self.elem_type)?,
        }
        match &self.shape {
            Some(dims) => {
                f.write_str(" [")?;
                for (i, d) in dims.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                f.write_str("]")
            }
            None => f.write_str(" (shape not given)"),
        }
    }
}

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F16 => "float16",
        DType::U8 => "uint8",
        DType::I8 => "int8",
    }
}

/// The `ModelProto.graph` field.
pub(crate) const GRAPH: u32 = 7;
/// `GraphProto.initializer`.
pub(crate) const INITIALIZER: u32 = 5;
/// `GraphProto.input`.
pub(crate) const INPUT: u32 = 11;
/// `TensorProto.name`.
pub(crate) const TENSOR_NAME: u32 = 8;

fn varint_i64(v: u64) -> i64 {
    v as i64
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A `ValueInfoProto` (name 1, type 2 -> `TypeProto.tensor_type` 1 -> elem_type 1,
/// shape 2 -> dim 1 -> dim_value 1 | dim_param 2).
pub(crate) fn parse_value_info(bytes: &[u8]) -> Result<ModelInput, GraphError> {
    let mut input = ModelInput {
        name: String::new(),
        elem_type: 0,
        shape: None,
    };
    for field in wire::fields(bytes) {
        match field? {
            wire::Field {
                number: 1,
                value: Value::Bytes(b),
                ..
            } => input.name = text(b),
            wire::Field {
                number: 2,
                value: Value::Bytes(ty),
                ..
            } => {
                for f in wire::fields(ty) {
                    let f = f?;
                    let (1, Value::Bytes(tensor)) = (f.number, f.value) else {
                        continue;
                    };
                    for f in wire::fields(tensor) {
                        let f = f?;
                        match (f.number, f.value) {
                            (1, Value::Varint(t)) => input.elem_type = t as i32,
                            (2, Value::Bytes(shape)) => {
                                let mut dims = Vec::new();
                                for d in wire::fields(shape) {
                                    let d = d?;
                                    let (1, Value::Bytes(dim)) = (d.number, d.value) else {
                                        continue;
                                    };
                                    let mut value = Dim::Unknown;
                                    for f in wire::fields(dim) {
                                        let f = f?;
                                        match (f.number, f.value) {
                                            (1, Value::Varint(v)) => {
                                                value = Dim::Fixed(varint_i64(v));
                                            }
                                            (2, Value::Bytes(p)) => {
                                                value = Dim::Symbolic(text(p));
                                            }
                                            _ => {}
                                        }
                                    }
                                    dims.push(value);
                                }
                                input.shape = Some(dims);
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(input)
}

/// The inputs of a model given its graph's raw `input` messages and its
/// initializer names (inputs that are initializers are weights).
pub(crate) fn inputs_from(
    raw: &[Vec<u8>],
    initializers: &[String],
) -> Result<Vec<ModelInput>, GraphError> {
    let mut out = Vec::new();
    for bytes in raw {
        let input = parse_value_info(bytes)?;
        if !initializers.contains(&input.name) {
            out.push(input);
        }
    }
    Ok(out)
}

/// The graph inputs of an ONNX model in memory.
pub fn onnx_inputs(model: &[u8]) -> Result<Vec<ModelInput>, GraphError> {
    let mut raw = Vec::new();
    let mut initializers = Vec::new();
    for field in wire::fields(model) {
        let field = field?;
        let (GRAPH, Value::Bytes(graph)) = (field.number, field.value) else {
            continue;
        };
        for f in wire::fields(graph) {
            let f = f?;
            match (f.number, f.value) {
                (INPUT, Value::Bytes(b)) => raw.push(b.to_vec()),
                (INITIALIZER, Value::Bytes(t)) => {
                    for tf in wire::fields(t) {
                        let tf = tf?;
                        if let (TENSOR_NAME, Value::Bytes(n)) = (tf.number, tf.value) {
                            initializers.push(text(n));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    inputs_from(&raw, &initializers)
}

impl Graph {
    /// Checks that the tensor this graph produces fits the model input it is
    /// for: the input named like the graph's output if there is one, else the
    /// model's only input, else its first input of rank 3 or 4. Fixed sizes
    /// must match (a leading batch dimension of any size is allowed),
    /// symbolic ones match anything, and the element type must be the
    /// graph's. A model that declares no inputs fits anything.
    pub fn check_fits(&self, inputs: &[ModelInput]) -> Result<(), GraphError> {
        let named = inputs
            .iter()
            .find(|i| !self.output.name.is_empty() && i.name == self.output.name);
        let target = named.or(if inputs.len() == 1 {
            inputs.first()
        } else {
            inputs
                .iter()
                .find(|i| i.shape.as_ref().is_some_and(|s| matches!(s.len(), 3 | 4)))
        });
        let Some(input) = target else {
            return Ok(());
        };
        let ours = self.describe_output();
        let mismatch = |why: &str| GraphError::DoesNotFit {
            message: alloc::format!(
                "the graph produces {ours}, but the model's input is {input} ({why})"
            ),
        };
        if let Some(d) = input.dtype()
            && d != self.output.dtype
        {
            return Err(mismatch("element types differ"));
        }
        let (Some(dims), Some(shape)) = (&input.shape, self.output.shape) else {
            return Ok(());
        };
        let dims = match dims.len() {
            4 => &dims[1..],
            3 => &dims[..],
            _ => return Err(mismatch("not an image tensor of rank 3 or 4")),
        };
        for (d, &s) in dims.iter().zip(&shape) {
            if let Dim::Fixed(v) = d
                && *v != s as i64
            {
                return Err(mismatch("sizes differ"));
            }
        }
        Ok(())
    }

    /// "float32 [3, 224, 224] (CHW)", or with an image-dependent size.
    fn describe_output(&self) -> String {
        let layout = match self.output.layout {
            Layout::Chw => "CHW",
            Layout::Hwc => "HWC",
        };
        let shape = match self.output.shape {
            Some([a, b, c]) => alloc::format!("[{a}, {b}, {c}]"),
            None => "a size that depends on the image".to_string(),
        };
        alloc::format!("{} {shape} ({layout})", dtype_name(self.output.dtype))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    fn value_info(name: &str, elem: u64, dims: &[Dim]) -> Vec<u8> {
        let mut shape = Vec::new();
        for d in dims {
            let mut dim = Vec::new();
            match d {
                Dim::Fixed(v) => {
                    dim.push(0x08);
                    prost::encoding::encode_varint(*v as u64, &mut dim);
                }
                Dim::Symbolic(s) => wire::put_bytes(&mut dim, 2, s.as_bytes()),
                Dim::Unknown => {}
            }
            wire::put_bytes(&mut shape, 1, &dim);
        }
        let mut tensor = alloc::vec![0x08];
        prost::encoding::encode_varint(elem, &mut tensor);
        wire::put_bytes(&mut tensor, 2, &shape);
        let mut ty = Vec::new();
        wire::put_bytes(&mut ty, 1, &tensor);
        let mut vi = Vec::new();
        wire::put_bytes(&mut vi, 1, name.as_bytes());
        wire::put_bytes(&mut vi, 2, &ty);
        vi
    }

    #[test]
    fn inputs_are_read_and_initializers_left_out() {
        let mut graph = Vec::new();
        let mut weight = Vec::new();
        wire::put_bytes(&mut weight, TENSOR_NAME, b"conv.weight");
        wire::put_bytes(&mut weight, 9, &[0u8; 64]); // raw_data
        wire::put_bytes(&mut graph, INITIALIZER, &weight);
        let dims = [
            Dim::Symbolic("N".into()),
            Dim::Fixed(3),
            Dim::Fixed(640),
            Dim::Unknown,
        ];
        wire::put_bytes(&mut graph, INPUT, &value_info("images", 1, &dims));
        wire::put_bytes(
            &mut graph,
            INPUT,
            &value_info("conv.weight", 1, &[Dim::Fixed(8)]),
        );
        let mut model = alloc::vec![0x08, 0x08];
        wire::put_bytes(&mut model, GRAPH, &graph);
        let inputs = onnx_inputs(&model).unwrap();
        assert_eq!(inputs, [ModelInput::tensor("images", 1, &dims)]);
        assert_eq!(inputs[0].to_string(), "`images` float32 [N, 3, 640, ?]");
        let yolo = Graph::new(Pipeline::yolo_letterbox(640, 640)).unwrap();
        assert!(yolo.check_fits(&inputs).is_ok());
        let vit = Graph::new(Pipeline::imagenet_eval()).unwrap();
        assert!(matches!(
            vit.check_fits(&inputs),
            Err(GraphError::DoesNotFit { .. })
        ));
        // Element types must agree.
        let u8_input = [ModelInput::tensor("x", 2, &dims)];
        assert!(yolo.check_fits(&u8_input).is_err());
        // Truncated protobuf is an error, not a panic.
        for n in 0..model.len() {
            let _ = onnx_inputs(&model[..n]);
        }
    }
}
