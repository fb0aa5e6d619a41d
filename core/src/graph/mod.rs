//! Preprocessing graphs saved alongside the model.
//!
//! A [`Graph`] is a [`Pipeline`] plus what an app needs to trust it: an input
//! declaration, an output declaration (the model input's name, shape and
//! element type), where it came from, and optional self-test vectors. It is
//! stored in the protobuf schema `proto/tensorprep.proto` (the generated types
//! are in [`proto`]), either as a sidecar file next to the model
//! (`model.onnx` → `model.tpp`) or inside an ONNX model's `metadata_props`
//! ([`onnx`]). Every parameter is explicit in the file: a missing enum value,
//! an unknown op or a feature this reader lacks is an error naming it, never a
//! silent default.
//!
//! Loading is apart from running: [`Graph::decode`] validates the file and
//! returns the description; [`Graph::compile`] turns it into the same [`Plan`]
//! a hand-built pipeline compiles to.
//!
//! ```
//! use tensorprep::graph::Graph;
//! use tensorprep::pipeline::{InputDesc, Pipeline};
//!
//! let mut graph = Graph::new(Pipeline::imagenet_eval())?;
//! graph.output.name = "input".into();
//! graph.add_self_test("pattern")?;
//! let bytes = graph.encode();
//!
//! // On the device: load, check, compile.
//! let loaded = Graph::decode(&bytes)?;
//! assert_eq!(loaded, graph);
//! assert!(loaded.verify()?.iter().all(|r| r.passed()));
//! let plan = loaded.compile(InputDesc::Encoded)?;
//! assert_eq!(plan.output_shape(), Some([3, 224, 224]));
//! # Ok::<(), tensorprep::graph::GraphError>(())
//! ```

#![forbid(unsafe_code)]

pub(crate) mod convert;
mod error;
#[cfg(feature = "std")]
mod file;
mod model_input;
pub mod onnx;
pub mod proto;
mod selftest;
pub(crate) mod wire;

use alloc::string::String;
use alloc::vec::Vec;

pub use error::GraphError;
#[cfg(feature = "std")]
pub use file::{
    OnnxEmbedding, embedded_in_onnx_file, onnx_file_inputs, onnx_file_metadata_props, sidecar_path,
};
pub use model_input::{Dim, ModelInput, onnx_inputs};
pub use selftest::{MAX_SELF_TEST_PIXELS, SelfTest, SelfTestInput, SelfTestReport, pattern};

use crate::color::YuvRange;
use crate::pipeline::{InputDesc, Op, Pipeline, Plan};
use crate::{DType, Layout, PixelFormat};

/// The 8 bytes a graph file starts with (PNG-style: a non-ASCII byte, the
/// name, and the line-ending bytes that text-mode transfers would change).
pub const MAGIC: [u8; 8] = *b"\x89TPP\r\n\x1a\n";
/// The schema version this crate writes.
pub const SCHEMA_VERSION: u32 = 1;
/// The reader version of this crate: files whose `min_reader_version` is
/// higher are refused.
pub const READER_VERSION: u32 = 1;
/// The largest graph file accepted, checked before anything is allocated.
pub const MAX_GRAPH_BYTES: usize = 4 << 20;
/// The most self-test vectors in one graph.
pub const MAX_SELF_TESTS: usize = 16;
/// The most samples in one self-test vector.
pub const MAX_SAMPLES: usize = 4096;
/// The most required-feature names in one graph.
pub const MAX_FEATURES: usize = 256;

/// A preprocessing graph: a pipeline and its declarations.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// The ops.
    pub pipeline: Pipeline,
    /// What the graph accepts.
    pub input: InputSpec,
    /// The tensor it produces.
    pub output: OutputSpec,
    /// Where it came from.
    pub provenance: Provenance,
    /// Inputs with their expected outputs.
    pub self_tests: Vec<SelfTest>,
}

/// What a graph accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSpec {
    /// JPEG files (the pipeline starts with a Decode op).
    pub accepts_jpeg: bool,
    /// Raw pixel formats. A frame in another format than the pipeline's
    /// pixels is converted first (see [`Graph::compile`]).
    pub pixel_formats: Vec<PixelFormat>,
    /// How YUV frames are read.
    pub yuv_range: YuvRange,
}

/// The tensor a graph produces: the model's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    /// The model input's name (`pixel_values`, `images`, ...); may be empty.
    pub name: String,
    /// `[C, H, W]` or `[H, W, C]` without the batch dimension, when it does not
    /// depend on the image size.
    pub shape: Option<[usize; 3]>,
    /// Element type.
    pub dtype: DType,
    /// CHW or HWC.
    pub layout: Layout,
}

/// Where a graph came from (informational).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    /// The program that wrote it, with its version.
    pub producer: String,
    /// What it was made from (an importer and its source).
    pub source: String,
    /// Free text.
    pub description: String,
}

impl Provenance {
    /// This crate as the producer, with `source`.
    pub fn tensorprep(source: impl Into<String>) -> Provenance {
        Provenance {
            producer: alloc::format!("tensorprep {}", crate::VERSION),
            source: source.into(),
            description: String::new(),
        }
    }
}

impl Graph {
    /// A graph for `pipeline`, its declarations derived from the ops: JPEG input
    /// if it starts with a Decode, every raw pixel format, and the output's
    /// element type, layout and (when fixed) shape. The output name is empty
    /// and there are no self-tests.
    pub fn new(pipeline: Pipeline) -> Result<Graph, GraphError> {
        let output = derive_output(&pipeline)?;
        let accepts_jpeg = matches!(pipeline.ops().first(), Some(Op::Decode(_)));
        Ok(Graph {
            pipeline,
            input: InputSpec {
                accepts_jpeg,
                pixel_formats: PixelFormat::ALL.to_vec(),
                yuv_range: YuvRange::Full,
            },
            output,
            provenance: Provenance::tensorprep(""),
            self_tests: Vec::new(),
        })
    }

    /// A built-in pipeline ([`Pipeline::PRESETS`]) as a graph, its provenance
    /// naming the preset; an unknown name is [`GraphError::NotFound`] listing
    /// the known ones.
    ///
    /// ```
    /// use tensorprep::graph::Graph;
    ///
    /// let graph = Graph::preset("imagenet-eval")?;
    /// assert_eq!(graph.output.shape, Some([3, 224, 224]));
    /// assert!(Graph::preset("imagenet").is_err());
    /// # Ok::<(), tensorprep::graph::GraphError>(())
    /// ```
    pub fn preset(name: &str) -> Result<Graph, GraphError> {
        let pipeline = Pipeline::preset(name).ok_or_else(|| GraphError::NotFound {
            message: alloc::format!(
                "no preset `{name}`: known are {}",
                Pipeline::PRESETS.join(", ")
            ),
        })?;
        let mut graph = Graph::new(pipeline)?;
        graph.provenance = Provenance::tensorprep(alloc::format!("preset {name}"));
        Ok(graph)
    }

    /// The pipeline compiled for `input`.
    ///
    /// For raw pixels in another format than the one the pipeline's pixel ops
    /// expect (the Decode op's output format, RGB for most models), a colour
    /// conversion from the frame's format is put first, using the declared
    /// [`InputSpec::yuv_range`]; it runs fused into the first pass.
    pub fn compile(&self, input: InputDesc) -> Result<Plan, GraphError> {
        self.compile_with_limits(input, &crate::Limits::DEFAULT)
    }

    /// [`Graph::compile`] with caps on image sizes and on every buffer the
    /// plan and its runs allocate.
    pub fn compile_with_limits(
        &self,
        input: InputDesc,
        limits: &crate::Limits,
    ) -> Result<Plan, GraphError> {
        self.check_input(input)?;
        let pipeline = self.pipeline_for(input)?;
        Ok(pipeline.compile_with_limits(input, limits)?)
    }

    /// The pipeline [`Graph::compile`] compiles for `input`: for raw pixels,
    /// without the Decode op (so that no decoder is needed) and, for a frame
    /// in another format than the decoded pixels', with a conversion first.
    pub fn pipeline_for(&self, input: InputDesc) -> Result<Pipeline, GraphError> {
        let InputDesc::Pixels { format, .. } = input else {
            return Ok(self.pipeline.clone());
        };
        let ops = self.pipeline.ops();
        let Some(Op::Decode(d)) = ops.first() else {
            return Ok(self.pipeline.clone());
        };
        let mut p = Pipeline::new();
        if d.format != format {
            p.push(Op::ConvertColor {
                to: d.format,
                range: self.input.yuv_range,
            })?;
        }
        for op in &ops[1..] {
            p.push(*op)?;
        }
        Ok(p)
    }

    fn check_input(&self, input: InputDesc) -> Result<(), GraphError> {
        let ok = match input {
            InputDesc::Encoded => self.input.accepts_jpeg,
            InputDesc::Pixels { format, .. } => self.input.pixel_formats.contains(&format),
        };
        if ok {
            Ok(())
        } else {
            Err(GraphError::invalid(
                None,
                alloc::format!("the graph does not declare {input:?} as an input it accepts"),
            ))
        }
    }

    /// The graph file's bytes: [`MAGIC`], the encoded [`proto::Graph`], and
    /// the CRC-32 of the encoded message (4 bytes, little-endian).
    ///
    /// Protobuf has no end marker: a file cut at a field boundary would still
    /// decode, without its last fields. The checksum makes truncated and
    /// corrupted files errors.
    pub fn encode(&self) -> Vec<u8> {
        let message = self.to_proto();
        let mut out = Vec::with_capacity(MAGIC.len() + prost::Message::encoded_len(&message) + 4);
        out.extend_from_slice(&MAGIC);
        prost::Message::encode_raw(&message, &mut out);
        let crc = crc32fast::hash(&out[MAGIC.len()..]);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads and validates a graph file's bytes.
    ///
    /// The file is untrusted: its size, op count, self-test count and sample
    /// counts are checked before the message is decoded, and every value is
    /// validated (see [`GraphError`] for what can be refused).
    pub fn decode(bytes: &[u8]) -> Result<Graph, GraphError> {
        if bytes.len() > MAX_GRAPH_BYTES {
            return Err(GraphError::TooLarge {
                bytes: bytes.len() as u64,
                limit: MAX_GRAPH_BYTES as u64,
            });
        }
        let rest = bytes.strip_prefix(&MAGIC).ok_or(GraphError::NotAGraph)?;
        let (body, crc) = rest
            .split_last_chunk::<4>()
            .ok_or_else(|| GraphError::Malformed("the file is truncated".into()))?;
        if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
            return Err(GraphError::Malformed(
                "the checksum does not match: the file is truncated or corrupted".into(),
            ));
        }
        check_counts(body)?;
        let message: proto::Graph = prost::Message::decode(body)?;
        Self::from_proto(message)
    }

    /// The protobuf message of this graph.
    pub fn to_proto(&self) -> proto::Graph {
        convert::graph_to_pb(self)
    }

    /// Validates a protobuf message into a graph.
    pub fn from_proto(message: proto::Graph) -> Result<Graph, GraphError> {
        convert::graph_from_pb(message)
    }

    /// The features a reader must implement to run this graph
    /// (`"op.resize"`, `"resample.pillow.bicubic"`, ...), sorted.
    pub fn required_features(&self) -> Vec<&'static str> {
        convert::features(&self.pipeline)
    }

    /// The same graph decoding with `backend` wherever it decodes.
    pub fn with_decoder(self, backend: crate::jpeg::Backend) -> Graph {
        Graph {
            pipeline: self.pipeline.with_decoder(backend),
            ..self
        }
    }
}

/// Counts the repeated fields of an encoded graph before decoding allocates
/// for them.
fn check_counts(body: &[u8]) -> Result<(), GraphError> {
    let too_many = |what: &str, n: usize, max: usize| {
        GraphError::invalid(None, alloc::format!("{n} {what} (at most {max})"))
    };
    let ops = wire::count_fields(body, 6)?;
    if ops > crate::pipeline::MAX_OPS {
        return Err(too_many("ops", ops, crate::pipeline::MAX_OPS));
    }
    let features = wire::count_fields(body, 3)?;
    if features > MAX_FEATURES {
        return Err(too_many("required features", features, MAX_FEATURES));
    }
    let tests = wire::count_fields(body, 8)?;
    if tests > MAX_SELF_TESTS {
        return Err(too_many("self-tests", tests, MAX_SELF_TESTS));
    }
    for field in wire::fields(body) {
        let field = field?;
        if let (8, wire::Value::Bytes(test)) = (field.number, field.value) {
            let samples = wire::count_varints(test, 6)?;
            if samples > MAX_SAMPLES {
                return Err(too_many("self-test samples", samples, MAX_SAMPLES));
            }
        }
    }
    Ok(())
}

/// The pipeline with the always-built decoder, exact decoding: the output
/// shape does not depend on the decoder, and this compiles in every build.
fn shape_probe(pipeline: &Pipeline) -> Pipeline {
    let mut p = pipeline.clone();
    p.map_decode(|d| {
        d.backend = crate::jpeg::Backend::Zune;
        d.scaling = crate::pipeline::DecodeScaling::Exact;
    });
    p
}

/// The output declaration the ops imply: element type and layout from the
/// finish ops, the shape when it is fixed.
fn derive_output(pipeline: &Pipeline) -> Result<OutputSpec, GraphError> {
    let mut dtype = None;
    let mut layout = None;
    for op in pipeline.ops() {
        match op {
            Op::Cast { dtype: d, .. } => dtype = Some(*d),
            Op::Layout { layout: l, .. } => layout = Some(*l),
            _ => {}
        }
    }
    let (Some(dtype), Some(layout)) = (dtype, layout) else {
        return Err(GraphError::invalid(
            None,
            "the pipeline needs a Layout and a Cast op to declare its output".into(),
        ));
    };
    let shape = match pipeline.ops().first() {
        Some(Op::Decode(_)) => shape_probe(pipeline)
            .compile(InputDesc::Encoded)?
            .output_shape(),
        _ => None,
    };
    Ok(OutputSpec {
        name: String::new(),
        shape,
        dtype,
        layout,
    })
}
