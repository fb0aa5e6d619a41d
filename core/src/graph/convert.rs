//! Between the validated [`Graph`] and its protobuf messages.
//!
//! Every enum goes through one table of (our value, protobuf value, feature
//! name) rows, so the mapping, its inverse and the feature list cannot drift
//! apart. Reading refuses the UNSPECIFIED zero value and unknown values by
//! name.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::proto as pb;
use super::selftest::{self, SelfTest};
use super::{Graph, MAX_FEATURES, READER_VERSION, SCHEMA_VERSION};
use super::{GraphError, InputSpec, OutputSpec, Provenance};
use crate::color::YuvRange;
use crate::finish::ChannelOrder;
use crate::pipeline::{Op, Pipeline, op_message};
use crate::{DType, Layout, PixelFormat};

/// Where a value sits, for error messages: the op (index and name), if any.
pub(crate) type At = Option<(usize, &'static str)>;

pub(crate) const PIXEL_FORMATS: [(PixelFormat, pb::PixelFormat); 12] = [
    (PixelFormat::Gray8, pb::PixelFormat::Gray8),
    (PixelFormat::Rgb8, pb::PixelFormat::Rgb8),
    (PixelFormat::Bgr8, pb::PixelFormat::Bgr8),
    (PixelFormat::Rgba8, pb::PixelFormat::Rgba8),
    (PixelFormat::Bgra8, pb::PixelFormat::Bgra8),
    (PixelFormat::Nv12, pb::PixelFormat::Nv12),
    (PixelFormat::Nv21, pb::PixelFormat::Nv21),
    (PixelFormat::I420, pb::PixelFormat::I420),
    (PixelFormat::Yuyv, pb::PixelFormat::Yuyv),
    (PixelFormat::Uyvy, pb::PixelFormat::Uyvy),
    (PixelFormat::Rgb565Le, pb::PixelFormat::Rgb565Le),
    (PixelFormat::Rgb565Be, pb::PixelFormat::Rgb565Be),
];
pub(crate) const YUV_RANGES: [(YuvRange, pb::YuvRange); 2] = [
    (YuvRange::Full, pb::YuvRange::Full),
    (YuvRange::Limited, pb::YuvRange::Limited),
];
pub(crate) const LAYOUTS: [(Layout, pb::TensorLayout); 2] = [
    (Layout::Chw, pb::TensorLayout::Chw),
    (Layout::Hwc, pb::TensorLayout::Hwc),
];
pub(crate) const ORDERS: [(ChannelOrder, pb::ChannelOrder); 3] = [
    (ChannelOrder::Rgb, pb::ChannelOrder::Rgb),
    (ChannelOrder::Bgr, pb::ChannelOrder::Bgr),
    (ChannelOrder::Gray, pb::ChannelOrder::Gray),
];
pub(crate) const DTYPES: [(DType, pb::ElementType, &str); 4] = [
    (DType::F32, pb::ElementType::F32, "dtype.f32"),
    (DType::F16, pb::ElementType::F16, "dtype.f16"),
    (DType::U8, pb::ElementType::U8, "dtype.u8"),
    (DType::I8, pb::ElementType::I8, "dtype.i8"),
];

/// A row's table entry: our value to the protobuf one.
pub(crate) trait Row<A, B> {
    fn ours(&self) -> A;
    fn theirs(&self) -> B;
}

impl<A: Copy, B: Copy> Row<A, B> for (A, B) {
    fn ours(&self) -> A {
        self.0
    }
    fn theirs(&self) -> B {
        self.1
    }
}

impl<A: Copy, B: Copy> Row<A, B> for (A, B, &str) {
    fn ours(&self) -> A {
        self.0
    }
    fn theirs(&self) -> B {
        self.1
    }
}

pub(crate) fn to_pb<A: PartialEq, B, R: Row<A, B>>(table: &[R], value: A) -> B {
    match table.iter().find(|r| r.ours() == value) {
        Some(r) => r.theirs(),
        // Every table lists every value of a `Copy` enum this crate defines;
        // the unit tests round-trip each one.
        None => unreachable!("a conversion table misses a value"),
    }
}

/// Reads enum field `what` (an `i32` on the wire) through `table`.
pub(crate) fn from_pb<A, B, R>(table: &[R], raw: i32, what: &str, at: At) -> Result<A, GraphError>
where
    B: PartialEq + TryFrom<i32>,
    R: Row<A, B>,
{
    let known = B::try_from(raw).map_err(|_| {
        GraphError::invalid(
            at,
            format!("{what} has the value {raw}, unknown to this reader"),
        )
    })?;
    table
        .iter()
        .find(|r| r.theirs() == known)
        .map(|r| r.ours())
        .ok_or_else(|| {
            let problem = if raw == 0 {
                format!("{what} is missing (every parameter must be given)")
            } else {
                format!("{what} value {raw} is not supported by this reader")
            };
            GraphError::invalid(at, problem)
        })
}

pub(crate) fn feature<A: PartialEq + Copy, B>(
    table: &[(A, B, &'static str)],
    value: A,
) -> &'static str {
    table
        .iter()
        .find(|r| r.0 == value)
        .map(|r| r.2)
        .unwrap_or("")
}

/// Every feature this reader implements.
pub(super) fn known_features() -> Vec<&'static str> {
    let mut all = op_message::known_features();
    all.sort_unstable();
    all
}

/// The features `pipeline` uses, sorted and without repeats.
pub(super) fn features(pipeline: &Pipeline) -> Vec<&'static str> {
    let mut out = Vec::new();
    for op in pipeline.ops() {
        op.features(&mut out);
    }
    out.retain(|f| !f.is_empty());
    out.sort_unstable();
    out.dedup();
    out
}

fn shape_to_pb(shape: Option<[usize; 3]>) -> Vec<u32> {
    shape
        .map(|s| s.iter().map(|&d| d as u32).collect())
        .unwrap_or_default()
}

pub(super) fn shape_from_pb(shape: &[u32], what: &str) -> Result<Option<[usize; 3]>, GraphError> {
    match shape {
        [] => Ok(None),
        &[a, b, c] if a > 0 && b > 0 && c > 0 => Ok(Some([a as usize, b as usize, c as usize])),
        _ => Err(GraphError::invalid(
            None,
            format!("{what} must have three positive dimensions, not {shape:?}"),
        )),
    }
}

pub(super) fn graph_to_pb(g: &Graph) -> pb::Graph {
    pb::Graph {
        schema_version: SCHEMA_VERSION,
        min_reader_version: 1,
        required_features: g
            .required_features()
            .into_iter()
            .map(String::from)
            .collect(),
        provenance: Some(pb::Provenance {
            producer: g.provenance.producer.clone(),
            source: g.provenance.source.clone(),
            description: g.provenance.description.clone(),
        }),
        input: Some(pb::InputSpec {
            accepts_jpeg: g.input.accepts_jpeg,
            pixel_formats: g
                .input
                .pixel_formats
                .iter()
                .map(|&f| to_pb(&PIXEL_FORMATS, f) as i32)
                .collect(),
            yuv_range: to_pb(&YUV_RANGES, g.input.yuv_range) as i32,
        }),
        ops: g.pipeline.ops().iter().map(|op| op.to_message()).collect(),
        output: Some(pb::OutputSpec {
            name: g.output.name.clone(),
            shape: shape_to_pb(g.output.shape),
            dtype: to_pb(&DTYPES, g.output.dtype) as i32,
            layout: to_pb(&LAYOUTS, g.output.layout) as i32,
        }),
        self_tests: g.self_tests.iter().map(selftest::to_pb).collect(),
    }
}

pub(super) fn graph_from_pb(p: pb::Graph) -> Result<Graph, GraphError> {
    if p.min_reader_version > READER_VERSION {
        return Err(GraphError::NeedsNewerReader {
            min_reader_version: p.min_reader_version,
            reader_version: READER_VERSION,
        });
    }
    if p.required_features.len() > MAX_FEATURES {
        return Err(GraphError::invalid(
            None,
            "too many required features".into(),
        ));
    }
    let known = known_features();
    let missing: Vec<String> = p
        .required_features
        .iter()
        .filter(|f| !known.contains(&f.as_str()))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(GraphError::MissingFeatures(missing));
    }
    let mut pipeline = Pipeline::new();
    for (i, op) in p.ops.iter().enumerate() {
        pipeline.push(Op::from_message(i, op)?)?;
    }
    let input = p
        .input
        .ok_or_else(|| GraphError::invalid(None, "the input declaration is missing".into()))?;
    let input = InputSpec {
        accepts_jpeg: input.accepts_jpeg,
        pixel_formats: input
            .pixel_formats
            .iter()
            .map(|&f| from_pb(&PIXEL_FORMATS, f, "input pixel format", None))
            .collect::<Result<_, _>>()?,
        yuv_range: from_pb(&YUV_RANGES, input.yuv_range, "input yuv_range", None)?,
    };
    if input.accepts_jpeg && !matches!(pipeline.ops().first(), Some(Op::Decode(_))) {
        return Err(GraphError::invalid(
            None,
            "the input accepts JPEG files but the first op is not a Decode".into(),
        ));
    }
    let output = p
        .output
        .ok_or_else(|| GraphError::invalid(None, "the output declaration is missing".into()))?;
    let declared = OutputSpec {
        name: output.name,
        shape: shape_from_pb(&output.shape, "the output shape")?,
        dtype: from_pb(&DTYPES, output.dtype, "output dtype", None)?,
        layout: from_pb(&LAYOUTS, output.layout, "output layout", None)?,
    };
    let derived = super::derive_output(&pipeline)?;
    if (declared.dtype, declared.layout) != (derived.dtype, derived.layout)
        || derived.shape.is_some() && declared.shape.is_some() && declared.shape != derived.shape
    {
        return Err(GraphError::invalid(
            None,
            format!(
                "the output is declared as {:?} {:?} {:?} but the ops produce {:?} {:?} {:?}",
                declared.shape,
                declared.dtype,
                declared.layout,
                derived.shape,
                derived.dtype,
                derived.layout
            ),
        ));
    }
    let provenance = p.provenance.unwrap_or_default();
    let self_tests: Vec<SelfTest> = p
        .self_tests
        .into_iter()
        .map(selftest::from_pb)
        .collect::<Result<_, _>>()?;
    selftest::check_budget(&self_tests)?;
    Ok(Graph {
        pipeline,
        input,
        output: OutputSpec {
            shape: declared.shape.or(derived.shape),
            ..declared
        },
        provenance: Provenance {
            producer: provenance.producer,
            source: provenance.source,
            description: provenance.description,
        },
        self_tests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Flip;
    use alloc::string::ToString;
    use alloc::vec;
    use op_message::sample_ops;

    /// A graph whose resampler this build leaves out is refused as it loads,
    /// naming the Cargo feature; every method built loads.
    #[test]
    fn a_resampler_left_out_of_the_build_is_not_built() {
        use crate::pipeline::Resize;
        use crate::resize::Resample;
        use crate::size::SizeRule;
        for resample in Resample::ALL {
            let size = SizeRule::Exact {
                width: 8,
                height: 8,
            };
            let op = Op::Resize(Resize { size, resample });
            let got = Op::from_message(0, &op.to_message());
            match resample.feature() {
                Some(feature) if !resample.is_built() => assert!(
                    matches!(got, Err(GraphError::Pipeline(crate::Error::NotBuilt { feature: f, .. }))
                        if f == feature),
                    "{resample:?}: {got:?}"
                ),
                _ => assert_eq!(got.unwrap(), op),
            }
        }
    }

    #[test]
    fn every_op_value_round_trips_through_protobuf() {
        for (i, op) in sample_ops().iter().enumerate() {
            let pb = op.to_message();
            assert_eq!(pb.name, op.name());
            assert_eq!(Op::from_message(i, &pb).unwrap(), *op, "{op:?}");
        }
    }

    #[test]
    fn the_feature_list_is_exactly_what_the_ops_can_use() {
        let mut used = Vec::new();
        for op in sample_ops() {
            let p = Pipeline::from_ops(&[op]).unwrap();
            used.extend(features(&p));
        }
        used.sort_unstable();
        used.dedup();
        assert_eq!(used, known_features());
    }

    #[test]
    fn unspecified_and_unknown_values_are_named_errors() {
        let mut pb = Op::Flip(Flip::Horizontal).to_message();
        pb.kind = Some(pb::op::Kind::Flip(pb::Flip { axis: 0 }));
        let e = Op::from_message(3, &pb).unwrap_err().to_string();
        assert!(
            e.contains("op 3 (Flip)") && e.contains("axis is missing"),
            "{e}"
        );
        pb.kind = Some(pb::op::Kind::Flip(pb::Flip { axis: 99 }));
        let e = Op::from_message(3, &pb).unwrap_err().to_string();
        assert!(e.contains("value 99"), "{e}");
        let unknown = pb::Op {
            name: "Sharpen".into(),
            kind: None,
        };
        let e = Op::from_message(5, &unknown).unwrap_err().to_string();
        assert!(e.contains("op 5 `Sharpen`"), "{e}");
    }

    #[test]
    fn opencv_lanczos_and_bad_fills_are_refused() {
        let resize = pb::Op {
            name: "Resize".into(),
            kind: Some(pb::op::Kind::Resize(pb::Resize {
                size: Some(pb::resize::Size::Exact(pb::SizeExact {
                    width: 2,
                    height: 2,
                })),
                family: pb::ResampleFamily::Opencv as i32,
                filter: pb::Filter::Lanczos as i32,
            })),
        };
        assert!(Op::from_message(0, &resize).is_err());
        let pad = pb::Op {
            name: "Pad".into(),
            kind: Some(pb::op::Kind::Pad(pb::Pad {
                to: Some(pb::pad::To::Borders(pb::PadBorders::default())),
                fill: vec![1, 2, 256],
            })),
        };
        assert!(Op::from_message(0, &pad).is_err());
    }
}
