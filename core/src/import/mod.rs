//! Importers: the preprocessing configurations users already ship, turned into
//! explicit [`Graph`]s.
//!
//! | Source | Function | Reads |
//! |---|---|---|
//! | Hugging Face | [`hugging_face`], [`hugging_face_with`] | `preprocessor_config.json` (ViT, DeiT, BEiT, CLIP, ConvNeXT, BiT, SigLIP, MobileNetV1/V2, LeViT, PoolFormer, SegFormer, DPT / Depth Anything), torchvision or PIL backend |
//! | timm | [`timm`] | `pretrained_cfg` (or a hub `config.json` holding one) |
//! | torchvision | [`torchvision`] | a weights name (`ResNet50_Weights.IMAGENET1K_V2`) from a built-in table |
//! | Ultralytics | [`ultralytics`] | an exported ONNX model's metadata (`imgsz`, `stride`, `task`) |
//! | TFLite | [`tflite`] | a `.tflite` model's metadata (image size, normalization) and input tensor |
//! | MindSpore | [`mindir`] | a MindIR model's `preprocessor` (ModelProto field 9) |
//!
//! Each importer reproduces its library's *eval* preprocessing, every implicit
//! default made explicit: sizes and their rounding, the resampler, crop offset
//! rounding, the value domain of mean and std. What a graph cannot express
//! exactly is refused with a message naming the setting, never approximated.
//!
//! ```
//! use tensorprep::import;
//!
//! let graph = import::hugging_face(r#"{
//!     "image_processor_type": "ViTImageProcessor",
//!     "size": {"height": 224, "width": 224},
//!     "resample": 2,
//!     "do_rescale": true, "rescale_factor": 0.00392156862745098,
//!     "do_normalize": true, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]
//! }"#)?;
//! assert_eq!(graph.output.shape, Some([3, 224, 224]));
//! assert_eq!(graph.output.name, "pixel_values");
//! # Ok::<(), tensorprep::graph::GraphError>(())
//! ```

#![forbid(unsafe_code)]

mod flatbuf;
mod hf;
mod json;
mod mindir;
mod tflite;
mod timm;
mod torchvision;
#[rustfmt::skip]
mod torchvision_table;
mod ultralytics;

pub use hf::{HfBackend, hugging_face, hugging_face_with};
pub use mindir::mindir;
pub use tflite::tflite;
pub use timm::timm;
pub use torchvision::{torchvision, torchvision_names};
pub use ultralytics::ultralytics;

use std::string::String;

use crate::finish::{ChannelOrder, Normalize};
use crate::graph::{Graph, GraphError, Provenance};
use crate::jpeg::{Backend, Orientation};
use crate::pipeline::{CenterCrop, CropRounding, Decode, Op, Pipeline, Resize};
use crate::resize::{Filter, Resample};
use crate::size::{Rounding, SizeRule};
use crate::{DType, Layout, Quantization};

/// The most bytes a JSON configuration may have.
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// The largest model file [`convert`] reads whole (TFLite, MindIR).
pub const MAX_MODEL_BYTES: u64 = 4 << 30;

/// The sources [`convert`] takes, as its `from` argument spells them.
pub const SOURCES: [&str; 7] = [
    "hf",
    "timm",
    "torchvision:WEIGHTS",
    "ultralytics",
    "tflite",
    "mindir",
    "preset:NAME",
];

/// A graph from any importer, chosen by name: `hf`, `timm`, `ultralytics`,
/// `tflite` and `mindir` read `source` (a `preprocessor_config.json`, a timm
/// `config.json` or `pretrained_cfg`, an exported `.onnx`, a `.tflite`, a
/// `.mindir`); `torchvision:WEIGHTS` and `preset:NAME` need none. `hf` takes
/// transformers' default backend as current PyTorch runs it; `hf:pil`,
/// `hf:torchvision` and `hf:torchvision-float32` name one ([`HfBackend`];
/// `hf:torchvision-avx2` is `hf:torchvision`). Files are
/// read with a cap ([`MAX_CONFIG_BYTES`] for JSON, [`MAX_MODEL_BYTES`] for
/// models) checked before reading; ONNX models are read field by field,
/// their weights skipped.
///
/// ```
/// use tensorprep::import;
///
/// let graph = import::convert("torchvision:ResNet50_Weights.IMAGENET1K_V2", None)?;
/// assert_eq!(graph.output.shape, Some([3, 224, 224]));
/// assert!(import::convert("hf", None).is_err()); // needs its configuration file
/// # Ok::<(), tensorprep::graph::GraphError>(())
/// ```
pub fn convert(from: &str, source: Option<&std::path::Path>) -> Result<Graph, GraphError> {
    let (kind, name) = from.split_once(':').unwrap_or((from, ""));
    let known = SOURCES.map(|s| s.split_once(':').map_or(s, |(k, _)| k));
    let Some(format) = known.into_iter().find(|k| *k == kind) else {
        return Err(GraphError::Import {
            format: "graph",
            message: alloc::format!("unknown source `{kind}` (known: {})", SOURCES.join(", ")),
        });
    };
    let source = || {
        source.ok_or_else(|| GraphError::Import {
            format,
            message: "needs its configuration or model file; none was given".into(),
        })
    };
    let model = |path: &std::path::Path| read_file(path, MAX_MODEL_BYTES, format);
    match kind {
        "hf" => {
            let backend = match name {
                "" => HfBackend::default(),
                name => HfBackend::from_name(name).ok_or_else(|| GraphError::Import {
                    format,
                    message: alloc::format!(
                        "unknown backend `{name}` (hf:torchvision, the default, \
                         hf:torchvision-float32 or hf:pil)"
                    ),
                })?,
            };
            hugging_face_with(&read_config(source()?, format)?, backend)
        }
        "timm" => timm(&read_config(source()?, format)?),
        "torchvision" => torchvision(name),
        "ultralytics" => {
            crate::graph::onnx_file_metadata_props(source()?).and_then(|m| ultralytics(&m))
        }
        "tflite" => tflite(&model(source()?)?),
        "mindir" => mindir(&model(source()?)?),
        _ => Graph::preset(name),
    }
}

/// A JSON configuration file for the importer `format`, read whole (at most
/// [`MAX_CONFIG_BYTES`], checked before reading) as UTF-8 text.
///
/// ```
/// let path = "../tests/fixtures/graph/hf_vit_preprocessor_config.json";
/// let text = tensorprep::import::read_config(path.as_ref(), "hf")?;
/// assert!(tensorprep::import::hugging_face(&text).is_ok());
/// # Ok::<(), tensorprep::graph::GraphError>(())
/// ```
pub fn read_config(path: &std::path::Path, format: &'static str) -> Result<String, GraphError> {
    String::from_utf8(read_file(path, MAX_CONFIG_BYTES as u64, format)?).map_err(|_| {
        GraphError::Import {
            format,
            message: alloc::format!("{}: not UTF-8 text", path.display()),
        }
    })
}

/// `path` read whole, at most `limit` bytes.
fn read_file(
    path: &std::path::Path,
    limit: u64,
    format: &'static str,
) -> Result<std::vec::Vec<u8>, GraphError> {
    crate::files::read_capped(path, limit).map_err(|e| match e {
        crate::files::ReadError::Io(error) => GraphError::Io {
            path: alloc::format!("{}", path.display()),
            error,
        },
        other => GraphError::Import {
            format,
            message: alloc::format!("{}: {other}", path.display()),
        },
    })
}

/// Decoding as the libraries do: libjpeg-turbo (the decoder in Pillow's and
/// OpenCV's wheels), RGB.
fn decoder(orientation: Orientation) -> Decode {
    Decode {
        orientation,
        ..Decode::exact(Backend::LibjpegTurbo)
    }
}

/// [`decoder`] as an op.
fn decode(orientation: Orientation) -> Op {
    Op::Decode(decoder(orientation))
}

/// The ops after the geometry: normalize, CHW or HWC RGB, the element type.
fn finish(
    normalize: Normalize,
    layout: Layout,
    dtype: DType,
    quantization: Quantization,
) -> [Op; 3] {
    Op::finish(normalize, layout, ChannelOrder::Rgb, dtype, quantization)
}

/// A graph of `ops` producing the model input `name`, made from `source`.
fn graph(ops: &[Op], name: &str, source: String) -> Result<Graph, GraphError> {
    let mut graph = Graph::new(Pipeline::from_ops(ops)?)?;
    graph.output.name = name.into();
    graph.provenance = Provenance::tensorprep(source);
    Ok(graph)
}

/// torchvision's `Resize(size)` with an int size: the shorter side becomes
/// `size`, the other `int(size * long / short)`.
fn shorter_side(size: u32) -> SizeRule {
    SizeRule::ShorterSide {
        size,
        max_size: None,
        rounding: Rounding::Truncate,
    }
}

/// A Pillow resize, then torchvision's `CenterCrop` (offsets rounded half to
/// even): the eval geometry of torchvision, timm and Ultralytics' classifiers.
fn resize_then_center_crop(size: SizeRule, filter: Filter, width: u32, height: u32) -> [Op; 2] {
    [
        Op::Resize(Resize {
            size,
            resample: Resample::Pillow(filter),
        }),
        Op::CenterCrop(CenterCrop {
            width,
            height,
            rounding: CropRounding::HalfEven,
        }),
    ]
}

/// A Pillow filter by its `Image.Resampling` number.
fn pillow_filter(n: i64) -> Option<Filter> {
    Some(match n {
        0 => Filter::Nearest,
        1 => Filter::Lanczos3,
        2 => Filter::Bilinear,
        3 => Filter::Bicubic,
        4 => Filter::Box,
        5 => Filter::Hamming,
        _ => return None,
    })
}

/// `[v; 3]` from one or three values.
fn three(v: &[f32]) -> Option<[f32; 3]> {
    match *v {
        [x] => Some([x; 3]),
        [a, b, c] => Some([a, b, c]),
        _ => None,
    }
}

/// Reads a small text configuration, refusing oversized input.
fn check_size(format: &'static str, bytes: usize) -> Result<(), GraphError> {
    if bytes > MAX_CONFIG_BYTES {
        return Err(GraphError::import(
            format,
            std::format!("{bytes} bytes is more than the {MAX_CONFIG_BYTES}-byte limit"),
        ));
    }
    Ok(())
}

/// The ImageNet statistics in 0-1 units.
const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];
