//! Between the validated [`Graph`] and its protobuf messages.
//!
//! Every enum goes through one table of (our value, protobuf value, feature
//! name) rows, so the mapping, its inverse and the feature list cannot drift
//! apart. Reading refuses the UNSPECIFIED zero value and unknown values by
//! name.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::proto as pb;
use super::selftest::{self, SelfTest};
use super::{Graph, MAX_FEATURES, READER_VERSION, SCHEMA_VERSION};
use super::{GraphError, InputSpec, OutputSpec, Provenance};
use crate::color::YuvRange;
use crate::finish::{ChannelOrder, Normalize};
use crate::geometry::{Flip, Placement, Rotation};
use crate::jpeg::{Backend, Orientation};
use crate::pipeline::{
    CenterCrop, CropRounding, Decode, DecodeScaling, Op, Pad, PadTo, Pipeline, Resize,
};
use crate::resize::{Filter, Resample};
use crate::size::{Rounding, SizeRule};
use crate::{DType, Layout, PixelFormat, Quantization, Rect};

/// Where a value sits, for error messages: the op (index and name), if any.
type At = Option<(usize, &'static str)>;

pub(super) const PIXEL_FORMATS: [(PixelFormat, pb::PixelFormat); 8] = [
    (PixelFormat::Gray8, pb::PixelFormat::Gray8),
    (PixelFormat::Rgb8, pb::PixelFormat::Rgb8),
    (PixelFormat::Bgr8, pb::PixelFormat::Bgr8),
    (PixelFormat::Rgba8, pb::PixelFormat::Rgba8),
    (PixelFormat::Bgra8, pb::PixelFormat::Bgra8),
    (PixelFormat::Nv12, pb::PixelFormat::Nv12),
    (PixelFormat::Nv21, pb::PixelFormat::Nv21),
    (PixelFormat::I420, pb::PixelFormat::I420),
];
const YUV_RANGES: [(YuvRange, pb::YuvRange); 2] = [
    (YuvRange::Full, pb::YuvRange::Full),
    (YuvRange::Limited, pb::YuvRange::Limited),
];
const DECODERS: [(Backend, pb::Decoder); 2] = [
    (Backend::Zune, pb::Decoder::ZuneJpeg),
    (Backend::LibjpegTurbo, pb::Decoder::LibjpegTurbo),
];
const ORIENTATIONS: [(Orientation, pb::Orientation); 2] = [
    (Orientation::Ignore, pb::Orientation::Ignore),
    (Orientation::Apply, pb::Orientation::Apply),
];
const SCALINGS: [(DecodeScaling, pb::DecodeScaling, &str); 2] = [
    (
        DecodeScaling::Exact,
        pb::DecodeScaling::Exact,
        "decode.exact",
    ),
    (DecodeScaling::Fast, pb::DecodeScaling::Fast, "decode.fast"),
];
const ROUNDINGS: [(Rounding, pb::Rounding, &str); 3] = [
    (
        Rounding::Truncate,
        pb::Rounding::Truncate,
        "rounding.truncate",
    ),
    (
        Rounding::HalfEven,
        pb::Rounding::HalfEven,
        "rounding.half_even",
    ),
    (
        Rounding::FloorF32,
        pb::Rounding::FloorF32,
        "rounding.floor_f32",
    ),
];
const RESAMPLES: [(Resample, (pb::ResampleFamily, pb::Filter), &str); 8] = {
    use pb::Filter as F;
    use pb::ResampleFamily::{Opencv as OpenCv, Pillow};
    [
        (
            Resample::Pillow(Filter::Nearest),
            (Pillow, F::Nearest),
            "resample.pillow.nearest",
        ),
        (
            Resample::Pillow(Filter::Box),
            (Pillow, F::Box),
            "resample.pillow.box",
        ),
        (
            Resample::Pillow(Filter::Bilinear),
            (Pillow, F::Bilinear),
            "resample.pillow.bilinear",
        ),
        (
            Resample::Pillow(Filter::Hamming),
            (Pillow, F::Hamming),
            "resample.pillow.hamming",
        ),
        (
            Resample::Pillow(Filter::Bicubic),
            (Pillow, F::Bicubic),
            "resample.pillow.bicubic",
        ),
        (
            Resample::Pillow(Filter::Lanczos3),
            (Pillow, F::Lanczos),
            "resample.pillow.lanczos",
        ),
        (
            Resample::OpenCvLinear,
            (OpenCv, F::Bilinear),
            "resample.opencv.linear",
        ),
        (
            Resample::OpenCvArea,
            (OpenCv, F::Area),
            "resample.opencv.area",
        ),
    ]
};
const CROP_ROUNDINGS: [(CropRounding, pb::CropRounding, &str); 2] = [
    (
        CropRounding::HalfEven,
        pb::CropRounding::HalfEven,
        "crop_rounding.half_even",
    ),
    (
        CropRounding::Floor,
        pb::CropRounding::Floor,
        "crop_rounding.floor",
    ),
];
const PLACEMENTS: [(Placement, pb::Placement); 2] = [
    (Placement::Center, pb::Placement::Center),
    (Placement::TopLeft, pb::Placement::TopLeft),
];
const FLIPS: [(Flip, pb::FlipAxis); 3] = [
    (Flip::Horizontal, pb::FlipAxis::Horizontal),
    (Flip::Vertical, pb::FlipAxis::Vertical),
    (Flip::Both, pb::FlipAxis::Both),
];
const ROTATIONS: [(Rotation, pb::Rotation); 3] = [
    (Rotation::Cw90, pb::Rotation::Cw90),
    (Rotation::Cw180, pb::Rotation::Cw180),
    (Rotation::Cw270, pb::Rotation::Cw270),
];
const LAYOUTS: [(Layout, pb::TensorLayout); 2] = [
    (Layout::Chw, pb::TensorLayout::Chw),
    (Layout::Hwc, pb::TensorLayout::Hwc),
];
const ORDERS: [(ChannelOrder, pb::ChannelOrder); 3] = [
    (ChannelOrder::Rgb, pb::ChannelOrder::Rgb),
    (ChannelOrder::Bgr, pb::ChannelOrder::Bgr),
    (ChannelOrder::Gray, pb::ChannelOrder::Gray),
];
const DTYPES: [(DType, pb::ElementType, &str); 4] = [
    (DType::F32, pb::ElementType::F32, "dtype.f32"),
    (DType::F16, pb::ElementType::F16, "dtype.f16"),
    (DType::U8, pb::ElementType::U8, "dtype.u8"),
    (DType::I8, pb::ElementType::I8, "dtype.i8"),
];
const SIZE_RULES: [&str; 4] = [
    "size.exact",
    "size.shorter_side",
    "size.longer_side",
    "size.fit",
];
/// The op features, in `Op` declaration order.
const OPS: [&str; 11] = [
    "op.decode",
    "op.convert_color",
    "op.resize",
    "op.center_crop",
    "op.crop",
    "op.pad",
    "op.flip",
    "op.rotate",
    "op.normalize",
    "op.layout",
    "op.cast",
];

/// A row's table entry: our value to the protobuf one.
trait Row<A, B> {
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

fn to_pb<A: PartialEq, B, R: Row<A, B>>(table: &[R], value: A) -> B {
    match table.iter().find(|r| r.ours() == value) {
        Some(r) => r.theirs(),
        // Every table lists every value of a `Copy` enum this crate defines;
        // the unit tests round-trip each one.
        None => unreachable!("a conversion table misses a value"),
    }
}

/// Reads enum field `what` (an `i32` on the wire) through `table`.
fn from_pb<A, B, R>(table: &[R], raw: i32, what: &str, at: At) -> Result<A, GraphError>
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

fn feature<A: PartialEq + Copy, B>(table: &[(A, B, &'static str)], value: A) -> &'static str {
    table
        .iter()
        .find(|r| r.0 == value)
        .map(|r| r.2)
        .unwrap_or("")
}

/// Every feature this reader implements.
pub(super) fn known_features() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = OPS.to_vec();
    all.extend(SIZE_RULES);
    all.extend(["pad.borders", "pad.canvas"]);
    all.extend(SCALINGS.iter().map(|r| r.2));
    all.extend(ROUNDINGS.iter().map(|r| r.2));
    all.extend(RESAMPLES.iter().map(|r| r.2));
    all.extend(CROP_ROUNDINGS.iter().map(|r| r.2));
    all.extend(DTYPES.iter().map(|r| r.2));
    all.sort_unstable();
    all
}

/// The features `pipeline` uses, sorted and without repeats.
pub(super) fn features(pipeline: &Pipeline) -> Vec<&'static str> {
    let mut out = Vec::new();
    for op in pipeline.ops() {
        out.push(op_feature(op));
        match op {
            Op::Decode(d) => out.push(feature(&SCALINGS, d.scaling)),
            Op::Resize(r) => {
                out.push(feature(&RESAMPLES, r.resample));
                let (rule, rounding) = match r.size {
                    SizeRule::Exact { .. } => (0, None),
                    SizeRule::ShorterSide { rounding, .. } => (1, Some(rounding)),
                    SizeRule::LongerSide { rounding, .. } => (2, Some(rounding)),
                    SizeRule::Fit { .. } => (3, Some(Rounding::HalfEven)),
                };
                out.push(SIZE_RULES[rule]);
                out.extend(rounding.map(|r| feature(&ROUNDINGS, r)));
            }
            Op::CenterCrop(c) => out.push(feature(&CROP_ROUNDINGS, c.rounding)),
            Op::Pad(p) => out.push(match p.to {
                PadTo::Borders { .. } => "pad.borders",
                PadTo::Canvas { .. } => "pad.canvas",
            }),
            Op::Cast { dtype, .. } => out.push(feature(&DTYPES, *dtype)),
            _ => {}
        }
    }
    out.retain(|f| !f.is_empty());
    out.sort_unstable();
    out.dedup();
    out
}

fn op_feature(op: &Op) -> &'static str {
    let i = match op {
        Op::Decode(_) => 0,
        Op::ConvertColor { .. } => 1,
        Op::Resize(_) => 2,
        Op::CenterCrop(_) => 3,
        Op::Crop(_) => 4,
        Op::Pad(_) => 5,
        Op::Flip(_) => 6,
        Op::Rotate(_) => 7,
        Op::Normalize(_) => 8,
        Op::Layout { .. } => 9,
        Op::Cast { .. } => 10,
    };
    OPS[i]
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
        ops: g.pipeline.ops().iter().map(op_to_pb).collect(),
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
        pipeline.push(op_from_pb(i, op)?)?;
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

fn op_to_pb(op: &Op) -> pb::Op {
    use pb::op::Kind;
    let kind = match *op {
        Op::Decode(d) => Kind::Decode(pb::Decode {
            decoder: to_pb(&DECODERS, d.backend) as i32,
            format: to_pb(&PIXEL_FORMATS, d.format) as i32,
            orientation: to_pb(&ORIENTATIONS, d.orientation) as i32,
            lenient: !d.strict,
            scaling: to_pb(&SCALINGS, d.scaling) as i32,
            full_decode: !d.region_of_interest,
        }),
        Op::ConvertColor { to, range } => Kind::ConvertColor(pb::ConvertColor {
            to: to_pb(&PIXEL_FORMATS, to) as i32,
            yuv_range: to_pb(&YUV_RANGES, range) as i32,
        }),
        Op::Resize(r) => {
            let (family, filter) = to_pb(&RESAMPLES, r.resample);
            Kind::Resize(pb::Resize {
                size: Some(size_to_pb(r.size)),
                family: family as i32,
                filter: filter as i32,
            })
        }
        Op::CenterCrop(c) => Kind::CenterCrop(pb::CenterCrop {
            width: c.width,
            height: c.height,
            rounding: to_pb(&CROP_ROUNDINGS, c.rounding) as i32,
        }),
        Op::Crop(r) => Kind::Crop(pb::Crop {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        }),
        Op::Pad(p) => Kind::Pad(pb::Pad {
            to: Some(match p.to {
                PadTo::Borders {
                    left,
                    top,
                    right,
                    bottom,
                } => pb::pad::To::Borders(pb::PadBorders {
                    left,
                    top,
                    right,
                    bottom,
                }),
                PadTo::Canvas {
                    width,
                    height,
                    placement,
                } => pb::pad::To::Canvas(pb::PadCanvas {
                    width,
                    height,
                    placement: to_pb(&PLACEMENTS, placement) as i32,
                }),
            }),
            fill: p.fill.iter().map(|&v| u32::from(v)).collect(),
        }),
        Op::Flip(f) => Kind::Flip(pb::Flip {
            axis: to_pb(&FLIPS, f) as i32,
        }),
        Op::Rotate(r) => Kind::Rotate(pb::Rotate {
            rotation: to_pb(&ROTATIONS, r) as i32,
        }),
        Op::Normalize(n) => {
            let (domain, divisor) = if n.divisor == 255.0 {
                (pb::ValueDomain::Unit, 0.0)
            } else if n.divisor == 1.0 {
                (pb::ValueDomain::Byte, 0.0)
            } else {
                (pb::ValueDomain::Custom, n.divisor)
            };
            Kind::Normalize(pb::Normalize {
                mean: n.mean.to_vec(),
                std: n.std.to_vec(),
                domain: domain as i32,
                divisor,
            })
        }
        Op::Layout { layout, order } => Kind::Layout(pb::Layout {
            layout: to_pb(&LAYOUTS, layout) as i32,
            order: to_pb(&ORDERS, order) as i32,
        }),
        Op::Cast {
            dtype,
            quantization,
        } => Kind::Cast(pb::Cast {
            dtype: to_pb(&DTYPES, dtype) as i32,
            scale: quantization.scale,
            zero_point: quantization.zero_point,
        }),
    };
    pb::Op {
        name: op.name().to_string(),
        kind: Some(kind),
    }
}

fn size_to_pb(rule: SizeRule) -> pb::resize::Size {
    use pb::resize::Size;
    match rule {
        SizeRule::Exact { width, height } => Size::Exact(pb::SizeExact { width, height }),
        SizeRule::ShorterSide {
            size,
            max_size,
            rounding,
        } => Size::ShorterSide(pb::SizeShorterSide {
            size,
            max_size: max_size.unwrap_or(0),
            rounding: to_pb(&ROUNDINGS, rounding) as i32,
        }),
        SizeRule::LongerSide { size, rounding } => Size::LongerSide(pb::SizeLongerSide {
            size,
            rounding: to_pb(&ROUNDINGS, rounding) as i32,
        }),
        SizeRule::Fit {
            width,
            height,
            upscale,
        } => Size::Fit(pb::SizeFit {
            width,
            height,
            upscale,
            rounding: pb::Rounding::HalfEven as i32,
        }),
    }
}

fn op_from_pb(index: usize, op: &pb::Op) -> Result<Op, GraphError> {
    use pb::op::Kind;
    let Some(kind) = &op.kind else {
        return Err(GraphError::UnknownOp {
            index,
            name: op.name.chars().take(64).collect(),
        });
    };
    let name = match kind {
        Kind::Decode(_) => "Decode",
        Kind::ConvertColor(_) => "ConvertColor",
        Kind::Resize(_) => "Resize",
        Kind::CenterCrop(_) => "CenterCrop",
        Kind::Crop(_) => "Crop",
        Kind::Pad(_) => "Pad",
        Kind::Flip(_) => "Flip",
        Kind::Rotate(_) => "Rotate",
        Kind::Normalize(_) => "Normalize",
        Kind::Layout(_) => "Layout",
        Kind::Cast(_) => "Cast",
    };
    let at = Some((index, name));
    let bad = |message: &str| GraphError::invalid(at, message.into());
    Ok(match kind {
        Kind::Decode(d) => Op::Decode(Decode {
            backend: from_pb(&DECODERS, d.decoder, "decoder", at)?,
            format: from_pb(&PIXEL_FORMATS, d.format, "format", at)?,
            orientation: from_pb(&ORIENTATIONS, d.orientation, "orientation", at)?,
            strict: !d.lenient,
            scaling: from_pb(&SCALINGS, d.scaling, "scaling", at)?,
            region_of_interest: !d.full_decode,
        }),
        Kind::ConvertColor(c) => Op::ConvertColor {
            to: from_pb(&PIXEL_FORMATS, c.to, "to", at)?,
            range: from_pb(&YUV_RANGES, c.yuv_range, "yuv_range", at)?,
        },
        Kind::Resize(r) => {
            let pair = (
                pb::ResampleFamily::try_from(r.family).unwrap_or(pb::ResampleFamily::Unspecified),
                pb::Filter::try_from(r.filter).unwrap_or(pb::Filter::Unspecified),
            );
            if pair.0 == pb::ResampleFamily::Unspecified || pair.1 == pb::Filter::Unspecified {
                return Err(bad("family and filter must both be given"));
            }
            let resample = RESAMPLES
                .iter()
                .find(|row| row.1 == pair)
                .map(|row| row.0)
                .ok_or_else(|| {
                    bad("this filter is not available for this family (OpenCV: BILINEAR or AREA)")
                })?;
            let size = r
                .size
                .as_ref()
                .ok_or_else(|| bad("the size rule is missing"))?;
            Op::Resize(Resize {
                size: size_from_pb(size, at)?,
                resample,
            })
        }
        Kind::CenterCrop(c) => Op::CenterCrop(CenterCrop {
            width: c.width,
            height: c.height,
            rounding: from_pb(&CROP_ROUNDINGS, c.rounding, "rounding", at)?,
        }),
        Kind::Crop(c) => Op::Crop(Rect::new(c.x, c.y, c.width, c.height)),
        Kind::Pad(p) => {
            let to = match p
                .to
                .as_ref()
                .ok_or_else(|| bad("borders or canvas must be given"))?
            {
                pb::pad::To::Borders(b) => PadTo::Borders {
                    left: b.left,
                    top: b.top,
                    right: b.right,
                    bottom: b.bottom,
                },
                pb::pad::To::Canvas(c) => PadTo::Canvas {
                    width: c.width,
                    height: c.height,
                    placement: from_pb(&PLACEMENTS, c.placement, "placement", at)?,
                },
            };
            let fill = match p.fill[..] {
                [r, g, b] if r < 256 && g < 256 && b < 256 => [r as u8, g as u8, b as u8],
                _ => return Err(bad("fill must be three values in 0-255 (R, G, B)")),
            };
            Op::Pad(Pad { to, fill })
        }
        Kind::Flip(f) => Op::Flip(from_pb(&FLIPS, f.axis, "axis", at)?),
        Kind::Rotate(r) => Op::Rotate(from_pb(&ROTATIONS, r.rotation, "rotation", at)?),
        Kind::Normalize(n) => {
            let three = |v: &[f32], what: &str| match *v {
                [x] => Ok([x; 3]),
                [a, b, c] => Ok([a, b, c]),
                _ => Err(bad(&format!(
                    "{what} must have 1 or 3 values, not {}",
                    v.len()
                ))),
            };
            let divisor = match pb::ValueDomain::try_from(n.domain) {
                Ok(pb::ValueDomain::Unit) => 255.0,
                Ok(pb::ValueDomain::Byte) => 1.0,
                Ok(pb::ValueDomain::Custom) => n.divisor,
                _ => return Err(bad("the value domain (0-1, 0-255 or custom) must be given")),
            };
            let normalize = Normalize {
                mean: three(&n.mean, "mean")?,
                std: three(&n.std, "std")?,
                divisor,
            };
            let valid = divisor.is_finite()
                && divisor > 0.0
                && normalize.mean.iter().all(|m| m.is_finite())
                && normalize.std.iter().all(|s| s.is_finite() && *s != 0.0);
            if !valid {
                return Err(bad(
                    "mean must be finite, std finite and non-zero, divisor finite and positive",
                ));
            }
            Op::Normalize(normalize)
        }
        Kind::Layout(l) => Op::Layout {
            layout: from_pb(&LAYOUTS, l.layout, "layout", at)?,
            order: from_pb(&ORDERS, l.order, "order", at)?,
        },
        Kind::Cast(c) => {
            if !(c.scale.is_finite() && c.scale > 0.0) {
                return Err(bad("scale must be finite and positive (1 for none)"));
            }
            Op::Cast {
                dtype: from_pb(&DTYPES, c.dtype, "dtype", at)?,
                quantization: Quantization {
                    scale: c.scale,
                    zero_point: c.zero_point,
                },
            }
        }
    })
}

fn size_from_pb(size: &pb::resize::Size, at: At) -> Result<SizeRule, GraphError> {
    use pb::resize::Size;
    let rounding = |raw| from_pb(&ROUNDINGS, raw, "rounding", at);
    Ok(match size {
        Size::Exact(e) => SizeRule::Exact {
            width: e.width,
            height: e.height,
        },
        Size::ShorterSide(s) => SizeRule::ShorterSide {
            size: s.size,
            max_size: (s.max_size != 0).then_some(s.max_size),
            rounding: rounding(s.rounding)?,
        },
        Size::LongerSide(s) => SizeRule::LongerSide {
            size: s.size,
            rounding: rounding(s.rounding)?,
        },
        Size::Fit(f) => {
            if rounding(f.rounding)? != Rounding::HalfEven {
                return Err(GraphError::invalid(
                    at,
                    "a fit resize rounds half to even in this schema version".into(),
                ));
            }
            SizeRule::Fit {
                width: f.width,
                height: f.height,
                upscale: f.upscale,
            }
        }
    })
}

/// Every value of every table, for the round-trip tests.
#[cfg(test)]
pub(super) fn sample_ops() -> Vec<Op> {
    let mut ops = Vec::new();
    for &(backend, _) in &DECODERS {
        for &(scaling, ..) in &SCALINGS {
            for &(orientation, _) in &ORIENTATIONS {
                ops.push(Op::Decode(Decode {
                    backend,
                    format: PixelFormat::Bgr8,
                    orientation,
                    strict: scaling == DecodeScaling::Exact,
                    scaling,
                    region_of_interest: orientation == Orientation::Apply,
                }));
            }
        }
    }
    for &(to, _) in &PIXEL_FORMATS[..5] {
        for &(range, _) in &YUV_RANGES {
            ops.push(Op::ConvertColor { to, range });
        }
    }
    for (i, &(resample, ..)) in RESAMPLES.iter().enumerate() {
        let rounding = ROUNDINGS[i % 3].0;
        for size in [
            SizeRule::Exact {
                width: 7,
                height: 9,
            },
            SizeRule::ShorterSide {
                size: 11,
                max_size: (i % 2 == 0).then_some(20),
                rounding,
            },
            SizeRule::LongerSide { size: 13, rounding },
            SizeRule::Fit {
                width: 5,
                height: 6,
                upscale: i % 2 == 1,
            },
        ] {
            ops.push(Op::Resize(Resize { size, resample }));
        }
    }
    for &(rounding, ..) in &CROP_ROUNDINGS {
        ops.push(Op::CenterCrop(CenterCrop {
            width: 3,
            height: 4,
            rounding,
        }));
    }
    ops.push(Op::Crop(Rect::new(1, 2, 3, 4)));
    ops.push(Op::Pad(Pad {
        to: PadTo::Borders {
            left: 1,
            top: 2,
            right: 3,
            bottom: 4,
        },
        fill: [1, 2, 255],
    }));
    for &(placement, _) in &PLACEMENTS {
        ops.push(Op::Pad(Pad {
            to: PadTo::Canvas {
                width: 30,
                height: 40,
                placement,
            },
            fill: [114; 3],
        }));
    }
    ops.extend(FLIPS.iter().map(|r| Op::Flip(r.0)));
    ops.extend(ROTATIONS.iter().map(|r| Op::Rotate(r.0)));
    for divisor in [255.0, 1.0, 127.5] {
        ops.push(Op::Normalize(Normalize {
            mean: [0.5, -1.0, 3.0],
            std: [0.25, 2.0, 1e-3],
            divisor,
        }));
    }
    for &(layout, _) in &LAYOUTS {
        for &(order, _) in &ORDERS {
            ops.push(Op::Layout { layout, order });
        }
    }
    for &(dtype, ..) in &DTYPES {
        ops.push(Op::Cast {
            dtype,
            quantization: Quantization {
                scale: 0.5,
                zero_point: -3,
            },
        });
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn every_op_value_round_trips_through_protobuf() {
        for (i, op) in sample_ops().iter().enumerate() {
            let pb = op_to_pb(op);
            assert_eq!(pb.name, op.name());
            assert_eq!(op_from_pb(i, &pb).unwrap(), *op, "{op:?}");
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
        let mut pb = op_to_pb(&Op::Flip(Flip::Horizontal));
        pb.kind = Some(pb::op::Kind::Flip(pb::Flip { axis: 0 }));
        let e = op_from_pb(3, &pb).unwrap_err().to_string();
        assert!(
            e.contains("op 3 (Flip)") && e.contains("axis is missing"),
            "{e}"
        );
        pb.kind = Some(pb::op::Kind::Flip(pb::Flip { axis: 99 }));
        let e = op_from_pb(3, &pb).unwrap_err().to_string();
        assert!(e.contains("value 99"), "{e}");
        let unknown = pb::Op {
            name: "Sharpen".into(),
            kind: None,
        };
        let e = op_from_pb(5, &unknown).unwrap_err().to_string();
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
        assert!(op_from_pb(0, &resize).is_err());
        let pad = pb::Op {
            name: "Pad".into(),
            kind: Some(pb::op::Kind::Pad(pb::Pad {
                to: Some(pb::pad::To::Borders(pb::PadBorders::default())),
                fill: vec![1, 2, 256],
            })),
        };
        assert!(op_from_pb(0, &pad).is_err());
    }
}
