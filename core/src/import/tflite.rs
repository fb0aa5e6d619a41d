//! TFLite models with TFLite Support metadata (`TFLITE_METADATA`).

use std::format;
use std::string::String;
use std::vec::Vec;

use super::flatbuf::{Table, Vector};
use super::{decoder, graph, three};
use crate::finish::{ChannelOrder, Normalize};
use crate::graph::{Graph, GraphError};
use crate::jpeg::Orientation;
use crate::pipeline::{Decode, Op, Resize};
use crate::resize::Resample;
use crate::size::SizeRule;
use crate::{DType, Layout, PixelFormat, Quantization};

const FORMAT: &str = "tflite";

fn bad(message: impl Into<String>) -> GraphError {
    GraphError::import(FORMAT, message)
}

// TFLite schema field indices (`schema.fbs`).
const MODEL_SUBGRAPHS: usize = 2;
const MODEL_BUFFERS: usize = 4;
const MODEL_METADATA: usize = 6;
const SUBGRAPH_TENSORS: usize = 0;
const SUBGRAPH_INPUTS: usize = 1;
const TENSOR_SHAPE: usize = 0;
const TENSOR_TYPE: usize = 1;
const TENSOR_NAME: usize = 3;
const TENSOR_QUANTIZATION: usize = 4;
const QUANT_SCALE: usize = 2;
const QUANT_ZERO_POINT: usize = 3;
const BUFFER_DATA: usize = 0;
const METADATA_NAME: usize = 0;
const METADATA_BUFFER: usize = 1;
// `TensorType` values.
const FLOAT32: u8 = 0;
const FLOAT16: u8 = 1;
const UINT8: u8 = 3;
const INT8: u8 = 9;

// TFLite Support metadata field indices (`metadata_schema.fbs`).
const MODEL_META_SUBGRAPHS: usize = 3;
const SUBGRAPH_META_INPUTS: usize = 2;
const TENSOR_META_CONTENT: usize = 3;
const TENSOR_META_PROCESS_UNITS: usize = 4;
const CONTENT_PROPERTIES_TYPE: usize = 0;
const CONTENT_PROPERTIES: usize = 1;
const IMAGE_COLOR_SPACE: usize = 0;
const PROCESS_UNIT_OPTIONS_TYPE: usize = 0;
const PROCESS_UNIT_OPTIONS: usize = 1;
const NORMALIZATION_MEAN: usize = 0;
const NORMALIZATION_STD: usize = 1;
// Union tags and enum values.
const IMAGE_PROPERTIES: u8 = 2;
const NORMALIZATION_OPTIONS: u8 = 1;
const GRAYSCALE: u8 = 2;

fn floats(v: Option<Vector<'_>>) -> Result<Vec<f32>, GraphError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    (0..v.len()).map(|i| v.u32(i).map(f32::from_bits)).collect()
}

/// The first input tensor: shape, type, name, quantization.
struct InputTensor {
    shape: Vec<i32>,
    kind: u8,
    name: String,
    quantization: Option<(f32, i64)>,
}

fn input_tensor(model: &Table<'_>) -> Result<InputTensor, GraphError> {
    let subgraphs = model
        .vector(MODEL_SUBGRAPHS, 4)?
        .filter(|v| v.len() > 0)
        .ok_or_else(|| bad("the model has no subgraph"))?;
    let subgraph = subgraphs.table(0)?;
    let inputs = subgraph
        .vector(SUBGRAPH_INPUTS, 4)?
        .filter(|v| v.len() > 0)
        .ok_or_else(|| bad("the model has no input"))?;
    let index = inputs.u32(0)? as usize;
    let tensors = subgraph
        .vector(SUBGRAPH_TENSORS, 4)?
        .ok_or_else(|| bad("the subgraph has no tensors"))?;
    let tensor = tensors.table(index)?;
    let shape = tensor
        .vector(TENSOR_SHAPE, 4)?
        .map(|v| (0..v.len()).map(|i| v.u32(i).map(|d| d as i32)).collect())
        .transpose()?
        .unwrap_or_default();
    let quantization = match tensor.table(TENSOR_QUANTIZATION)? {
        Some(q) => {
            let scale = floats(q.vector(QUANT_SCALE, 4)?)?;
            let zero = q.vector(QUANT_ZERO_POINT, 8)?;
            match (scale.first(), zero.filter(|z| z.len() > 0)) {
                (Some(&s), Some(z)) => Some((s, z.i64(0)?)),
                (Some(&s), None) => Some((s, 0)),
                _ => None,
            }
        }
        None => None,
    };
    Ok(InputTensor {
        shape,
        kind: tensor.u8(TENSOR_TYPE, FLOAT32)?,
        name: tensor.string(TENSOR_NAME)?.unwrap_or_default(),
        quantization,
    })
}

/// The `TFLITE_METADATA` buffer's bytes, if the model has one.
fn metadata_buffer<'a>(model: &Table<'a>) -> Result<Option<&'a [u8]>, GraphError> {
    let Some(entries) = model.vector(MODEL_METADATA, 4)? else {
        return Ok(None);
    };
    for i in 0..entries.len() {
        let entry = entries.table(i)?;
        if entry.string(METADATA_NAME)?.as_deref() != Some("TFLITE_METADATA") {
            continue;
        }
        let index = entry.u32(METADATA_BUFFER, 0)? as usize;
        let buffers = model
            .vector(MODEL_BUFFERS, 4)?
            .ok_or_else(|| bad("the model has no buffers"))?;
        if index >= buffers.len() {
            return Err(bad("the metadata buffer index is out of range"));
        }
        let data = buffers
            .table(index)?
            .vector(BUFFER_DATA, 1)?
            .ok_or_else(|| {
                bad("the metadata buffer is empty or stored outside the FlatBuffer (not supported)")
            })?;
        return Ok(Some(data.bytes()));
    }
    Ok(None)
}

/// What the input tensor's metadata says: grayscale, mean and std.
struct InputMetadata {
    gray: bool,
    normalization: Option<(Vec<f32>, Vec<f32>)>,
}

fn input_metadata(buffer: &[u8]) -> Result<InputMetadata, GraphError> {
    let root = Table::root(buffer)?;
    let input = root
        .vector(MODEL_META_SUBGRAPHS, 4)?
        .filter(|v| v.len() > 0)
        .map(|v| v.table(0))
        .transpose()?
        .and_then(|sg| sg.vector(SUBGRAPH_META_INPUTS, 4).transpose())
        .transpose()?
        .filter(|v| v.len() > 0)
        .map(|v| v.table(0))
        .transpose()?
        .ok_or_else(|| bad("the metadata describes no input tensor"))?;
    let mut gray = false;
    if let Some(content) = input.table(TENSOR_META_CONTENT)?
        && content.u8(CONTENT_PROPERTIES_TYPE, 0)? == IMAGE_PROPERTIES
        && let Some(image) = content.table(CONTENT_PROPERTIES)?
    {
        gray = image.u8(IMAGE_COLOR_SPACE, 0)? == GRAYSCALE;
    }
    let mut normalization = None;
    if let Some(units) = input.vector(TENSOR_META_PROCESS_UNITS, 4)? {
        for i in 0..units.len() {
            let unit = units.table(i)?;
            if unit.u8(PROCESS_UNIT_OPTIONS_TYPE, 0)? == NORMALIZATION_OPTIONS
                && let Some(options) = unit.table(PROCESS_UNIT_OPTIONS)?
            {
                normalization = Some((
                    floats(options.vector(NORMALIZATION_MEAN, 4)?)?,
                    floats(options.vector(NORMALIZATION_STD, 4)?)?,
                ));
            }
        }
    }
    Ok(InputMetadata {
        gray,
        normalization,
    })
}

/// The input preprocessing of a `.tflite` image model, from its TFLite
/// Support metadata and its input tensor, as the TFLite Task Library's
/// `ImagePreprocessor` applies it.
///
/// - The image is resized to the input tensor's height and width without
///   keeping the aspect ratio with libyuv's bilinear scaling, as the Task
///   Library does ([`Resample::LibyuvBilinear`], bit for bit): `ARGBScale`
///   for RGB, `ScalePlane` for gray models (as libyuv's Android arm64 build
///   computes it).
/// - Float inputs are normalized `(v - mean) * (1 / std)` (the Task Library
///   multiplies by the reciprocal) with `NormalizationOptions` in 0-255 units
///   (required, as the Task Library requires it).
/// - `uint8` inputs take the pixel bytes as they are.
/// - `int8` inputs are normalized, then quantized with the tensor's scale and
///   zero point.
/// - RGB, or gray when the metadata's colour space is GRAYSCALE or the tensor
///   has one channel; NHWC layout, as TFLite models take it.
pub fn tflite(model: &[u8]) -> Result<Graph, GraphError> {
    if model.get(4..8) != Some(b"TFL3") {
        return Err(bad("not a TFLite model (no TFL3 identifier)"));
    }
    let root = Table::root(model)?;
    let input = input_tensor(&root)?;
    let metadata = metadata_buffer(&root)?
        .map(input_metadata)
        .transpose()?
        .ok_or_else(|| {
            bad("the model has no TFLITE_METADATA (add it with tflite-support's metadata writer)")
        })?;
    let (height, width, channels) = match input.shape[..] {
        [1, h, w, c] if h > 0 && w > 0 && (c == 1 || c == 3) => (h as u32, w as u32, c),
        _ => {
            return Err(bad(format!(
                "the input tensor shape {:?} is not [1, height, width, 1 or 3]",
                input.shape
            )));
        }
    };
    let gray = metadata.gray || channels == 1;
    let normalize = |what: &str| -> Result<Normalize, GraphError> {
        let (mean, std) = metadata.normalization.as_ref().ok_or_else(|| {
            bad(format!(
                "a {what} input needs NormalizationOptions in the metadata"
            ))
        })?;
        Ok(Normalize {
            mean: three(mean).ok_or_else(|| bad("mean needs 1 or 3 values"))?,
            std: three(std).ok_or_else(|| bad("std needs 1 or 3 values"))?,
            divisor: 1.0,
            std_reciprocal: true,
            second_std: [1.0; 3],
        })
    };
    let (dtype, normalize, quantization) = match input.kind {
        FLOAT32 => (DType::F32, normalize("float")?, Quantization::IDENTITY),
        FLOAT16 => (DType::F16, normalize("float16")?, Quantization::IDENTITY),
        UINT8 => (DType::U8, Normalize::RAW, Quantization::IDENTITY),
        INT8 => {
            let (scale, zero_point) = input
                .quantization
                .ok_or_else(|| bad("an int8 input needs quantization parameters"))?;
            let zero_point = i32::try_from(zero_point)
                .map_err(|_| bad("the input zero point is out of range"))?;
            (
                DType::I8,
                normalize("int8")?,
                Quantization { scale, zero_point },
            )
        }
        other => return Err(bad(format!("input tensor type {other} is not supported"))),
    };
    let format = if gray {
        PixelFormat::Gray8
    } else {
        PixelFormat::Rgb8
    };
    let ops = [
        Op::Decode(Decode {
            format,
            ..decoder(Orientation::Ignore)
        }),
        Op::Resize(Resize {
            size: SizeRule::Exact { width, height },
            resample: Resample::LibyuvBilinear,
        }),
        Op::Normalize(normalize),
        Op::Layout {
            layout: Layout::Hwc,
            order: if gray {
                ChannelOrder::Gray
            } else {
                ChannelOrder::Rgb
            },
        },
        Op::Cast {
            dtype,
            quantization,
        },
    ];
    let name = if input.name.is_empty() {
        "input"
    } else {
        &input.name
    };
    graph(&ops, name, format!("tflite metadata, input `{name}`"))
}
