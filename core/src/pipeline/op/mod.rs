//! The ops a pipeline is made of, each with every parameter explicit.
//!
//! One module per op holds everything about it: its parameters, what
//! compiling a plan checks, the output size it fixes, how it resolves into
//! stages for one input size, how those stages run, and how it is
//! described. The plan compiler and the describers reach them through
//! [`Op`] alone (and, compiled, through `Step` and `Work`).

mod convert;
mod crop;
mod decode;
mod finish;
mod orient;
mod pad;
mod resize;

use core::fmt;

pub use crop::{CenterCrop, CropRounding};
pub use decode::{Decode, DecodeScaling};
pub use pad::{Pad, PadTo};
pub use resize::Resize;

use crate::color::YuvRange;
use crate::finish::{ChannelOrder, Normalize};
use crate::geometry::{Flip, Rotation};
use crate::{DType, Layout, PixelFormat, Quantization, Rect};

/// One step of a [`Pipeline`](super::Pipeline).
///
/// Pixel ops (decode, colour, geometry) come first, then the finish ops
/// ([`Op::Normalize`], [`Op::Layout`], [`Op::Cast`]), which the compiled plan
/// runs as one pass writing the tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// Decode an encoded (JPEG) input. Pixel inputs skip it, so one pipeline
    /// serves both files and camera frames.
    Decode(Decode),
    /// Convert to a packed colour format. Runs inside the next op that reads
    /// the pixels, one row at a time, never as a pass of its own.
    ConvertColor {
        /// Packed target format: Gray8, Rgb8, Bgr8, Rgba8 or Bgra8.
        to: PixelFormat,
        /// Range of YUV sources (ignored for others).
        range: YuvRange,
    },
    /// Resize to a size given by a rule, with a given resampler.
    Resize(Resize),
    /// A centred crop of the given size.
    CenterCrop(CenterCrop),
    /// A crop at a fixed rectangle.
    Crop(Rect),
    /// Pad with a constant colour: fixed borders, or out to a canvas size
    /// (the second half of a letterbox).
    Pad(Pad),
    /// Mirror.
    Flip(Flip),
    /// Rotate by a multiple of 90 degrees clockwise.
    Rotate(Rotation),
    /// Per-channel `(v / divisor - mean) / std`.
    Normalize(Normalize),
    /// Output layout and channel order.
    Layout {
        /// CHW (planar) or HWC (interleaved).
        layout: Layout,
        /// RGB, BGR or one gray channel.
        order: ChannelOrder,
    },
    /// Output element type and, for integer types, the quantization.
    Cast {
        /// Element type.
        dtype: DType,
        /// Scale and zero point for [`DType::U8`] / [`DType::I8`];
        /// [`Quantization::IDENTITY`] stores the values as they are, clamped.
        quantization: Quantization,
    },
}

impl Op {
    /// The three finish ops: normalize, then lay out and cast.
    ///
    /// ```
    /// use tensorprep::finish::{ChannelOrder, Normalize};
    /// use tensorprep::pipeline::Op;
    /// use tensorprep::{DType, Layout, Quantization};
    ///
    /// // ToTensor + Normalize(ImageNet), CHW float32: the end of torchvision's eval transform.
    /// let ops = Op::finish(Normalize::IMAGENET, Layout::Chw, ChannelOrder::Rgb, DType::F32, Quantization::IDENTITY);
    /// assert_eq!(ops[0], Op::Normalize(Normalize::IMAGENET));
    /// ```
    pub const fn finish(
        normalize: Normalize,
        layout: Layout,
        order: ChannelOrder,
        dtype: DType,
        quantization: Quantization,
    ) -> [Op; 3] {
        [
            Op::Normalize(normalize),
            Op::Layout { layout, order },
            Op::Cast {
                dtype,
                quantization,
            },
        ]
    }

    /// The finish that leaves the image's own pixels: uint8 RGB, HWC, as
    /// they are (`(H, W, 3)`, what a PIL image holds).
    ///
    /// ```
    /// use tensorprep::finish::{ChannelOrder, Normalize};
    /// use tensorprep::pipeline::Op;
    /// use tensorprep::{DType, Layout, Quantization};
    ///
    /// let raw = Op::finish(Normalize::RAW, Layout::Hwc, ChannelOrder::Rgb, DType::U8, Quantization::IDENTITY);
    /// assert_eq!(Op::RGB_U8_HWC, raw);
    /// ```
    pub const RGB_U8_HWC: [Op; 3] = Op::finish(
        Normalize::RAW,
        Layout::Hwc,
        ChannelOrder::Rgb,
        DType::U8,
        Quantization::IDENTITY,
    );

    /// A short name for messages.
    pub fn name(&self) -> &'static str {
        self.names().0
    }

    /// The op's name, and the feature a graph file using it lists; each
    /// module holds its own.
    fn names(&self) -> (&'static str, &'static str) {
        match self {
            Op::Decode(_) => decode::NAMES,
            Op::ConvertColor { .. } => convert::NAMES,
            Op::Resize(_) => resize::NAMES,
            Op::CenterCrop(_) => crop::CENTER_CROP_NAMES,
            Op::Crop(_) => crop::CROP_NAMES,
            Op::Pad(_) => pad::NAMES,
            Op::Flip(_) => orient::FLIP_NAMES,
            Op::Rotate(_) => orient::ROTATE_NAMES,
            Op::Normalize(_) => finish::NORMALIZE_NAMES,
            Op::Layout { .. } => finish::LAYOUT_NAMES,
            Op::Cast { .. } => finish::CAST_NAMES,
        }
    }

    /// Whether this op belongs to the finish pass.
    pub(crate) fn is_finish(&self) -> bool {
        matches!(self, Op::Normalize(_) | Op::Layout { .. } | Op::Cast { .. })
    }
}

/// One line naming the op and every parameter (what `tensorprep inspect` prints).
///
/// ```
/// use tensorprep::pipeline::Pipeline;
///
/// let eval = Pipeline::imagenet_eval();
/// assert_eq!(eval.ops()[2].to_string(), "CenterCrop 224x224 (offsets HalfEven)");
/// ```
impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Decode(d) => d.fmt(f),
            Op::ConvertColor { to, range } => convert::describe(f, *to, *range),
            Op::Resize(r) => r.fmt(f),
            Op::CenterCrop(c) => c.fmt(f),
            Op::Crop(r) => crop::describe_rect(f, r),
            Op::Pad(p) => p.fmt(f),
            Op::Flip(axis) => orient::describe_flip(f, *axis),
            Op::Rotate(r) => orient::describe_rotate(f, *r),
            Op::Normalize(n) => finish::describe_normalize(f, n),
            Op::Layout { layout, order } => finish::describe_layout(f, *layout, *order),
            Op::Cast {
                dtype,
                quantization,
            } => finish::describe_cast(f, *dtype, quantization),
        }
    }
}

#[cfg(feature = "alloc")]
pub(super) use compiled::StepList;
pub(super) use compiled::{Compiled, Compiling, Step, Work};
pub(super) use crop::Crop as CropStep;

mod compiled {
    use super::convert::Convert;
    use super::crop::Crop;
    use super::finish::FinishParts;
    use super::orient::{self, OrientWork};
    use super::pad::PadWork;
    use super::{Decode, Op, Pad, Resize};
    use crate::arena::{Scratch, Storage};
    use crate::finish::FinishSpec;
    use crate::geometry::Transform;
    use crate::pipeline::InputDesc;
    use crate::pipeline::resolve::{Read, Resolver};
    #[cfg(feature = "alloc")]
    use crate::resize::Spares;
    use crate::resize::{ResizePlanIn, ResizeStateIn};
    use crate::rows::RowReader;
    #[cfg(feature = "alloc")]
    use crate::targets::{Canvas, Geometry, Padding};
    use crate::{Error, ImageView, ImageViewMut, PixelFormat, Result};

    /// The checked pixel ops of a plan, at most [`crate::pipeline::MAX_OPS`].
    pub(in crate::pipeline) type StepList = heapless::Vec<Step, { crate::pipeline::MAX_OPS }>;

    /// What compiling a pipeline has gathered up to the op at `index`.
    pub(in crate::pipeline) struct Compiling<'a> {
        /// Position of the op being compiled.
        pub(in crate::pipeline) index: usize,
        /// The ops after it.
        pub(in crate::pipeline) rest: &'a [Op],
        /// Whether the plan is for encoded files (else for pixels).
        pub(in crate::pipeline) encoded: bool,
        /// The packed or YUV format the pixels have at this point.
        pub(in crate::pipeline) format: PixelFormat,
        pub(in crate::pipeline) decode: Option<Decode>,
        pub(in crate::pipeline) steps: StepList,
        pub(in crate::pipeline) finish: FinishParts,
    }

    impl Compiling<'_> {
        /// Nothing compiled yet, for `input`.
        pub(in crate::pipeline) fn new(input: InputDesc) -> Compiling<'static> {
            Compiling {
                index: 0,
                rest: &[],
                encoded: input == InputDesc::Encoded,
                format: match input {
                    InputDesc::Pixels { format, .. } => format,
                    InputDesc::Encoded => PixelFormat::Rgb8,
                },
                decode: None,
                steps: StepList::new(),
                finish: FinishParts::default(),
            }
        }

        /// Records a checked pixel op.
        pub(in crate::pipeline) fn push(&mut self, step: Step) -> Result<()> {
            self.steps
                .push(step)
                .map_err(|_| op_error("pipeline", "too many ops (the limit is MAX_OPS)"))
        }
    }

    /// A pipeline's ops checked for one kind of input: the pixel steps, the
    /// decode (encoded inputs) and the finish pass.
    #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
    pub(in crate::pipeline) struct Compiled {
        pub(in crate::pipeline) decode: Option<Decode>,
        pub(in crate::pipeline) steps: StepList,
        /// The finish pass, checked (its tables are built by `Finisher::new`
        /// where the plan keeps them).
        pub(in crate::pipeline) finish: FinishSpec,
        /// The pixel format the finish pass reads.
        pub(in crate::pipeline) format: PixelFormat,
    }

    impl Compiled {
        /// Checks `ops` in order for `input`.
        pub(in crate::pipeline) fn new(ops: &[Op], input: InputDesc) -> Result<Compiled> {
            let mut cx = Compiling::new(input);
            for (i, op) in ops.iter().enumerate() {
                cx.index = i;
                cx.rest = ops.get(i + 1..).unwrap_or_default();
                op.compile(&mut cx)?;
            }
            if input == InputDesc::Encoded && cx.decode.is_none() {
                return Err(op_error(
                    "pipeline",
                    "an encoded (file) input needs a Decode op first",
                ));
            }
            let finish = cx.finish.spec(cx.format)?;
            Ok(Compiled {
                decode: cx.decode,
                steps: cx.steps,
                finish,
                format: cx.format,
            })
        }
    }

    impl Op {
        /// The size of the image this op makes of a `width` x `height` one
        /// (finish ops, decoding and colour conversion keep it). An error
        /// when the op does not apply (a crop larger than the image).
        #[cfg_attr(not(feature = "train"), allow(dead_code))]
        pub(crate) fn output_size(&self, (w, h): (u32, u32)) -> Result<(u32, u32)> {
            let size = |r: crate::Rect| (r.width, r.height);
            Ok(match self {
                Op::Resize(r) => r.size.output_size(w, h)?,
                Op::CenterCrop(c) => size(Crop::Center(*c).rect(w, h)?),
                Op::Crop(r) => size(Crop::Rect(*r).rect(w, h)?),
                Op::Pad(p) => {
                    let (cw, ch, _) = p.layout(w, h)?;
                    (cw, ch)
                }
                Op::Flip(f) => Transform::from_flip(*f).output_size(w, h),
                Op::Rotate(r) => Transform::from_rotation(*r).output_size(w, h),
                Op::Decode(_)
                | Op::ConvertColor { .. }
                | Op::Normalize(_)
                | Op::Layout { .. }
                | Op::Cast { .. } => (w, h),
            })
        }

        /// What this op does to targets on a `width` x `height` image (the
        /// crop, pad or resize it makes there, or its flip or quarter
        /// turn); `None` for the ops that leave them (decoding, colour, the
        /// finish ops). An error when the op does not apply.
        #[cfg(feature = "alloc")]
        #[cfg_attr(not(feature = "train"), allow(dead_code))]
        pub(crate) fn geometry(&self, (w, h): (u32, u32)) -> Result<Option<Geometry>> {
            let crop = |r: crate::Rect| Geometry::Crop {
                top: i64::from(r.y),
                left: i64::from(r.x),
                height: r.height,
                width: r.width,
            };
            Ok(Some(match self {
                Op::Resize(r) => {
                    let (w, h) = r.size.output_size(w, h)?;
                    Geometry::Resize(Canvas::new(h, w)?)
                }
                Op::CenterCrop(c) => crop(Crop::Center(*c).rect(w, h)?),
                Op::Crop(r) => crop(Crop::Rect(*r).rect(w, h)?),
                Op::Pad(p) => {
                    let (cw, ch, r) = p.layout(w, h)?;
                    Geometry::Pad(Padding {
                        left: i64::from(r.x),
                        top: i64::from(r.y),
                        right: i64::from(cw) - i64::from(r.x) - i64::from(w),
                        bottom: i64::from(ch) - i64::from(r.y) - i64::from(h),
                    })
                }
                Op::Flip(f) => Geometry::Flip(*f),
                Op::Rotate(r) => Geometry::quarter_turn(*r),
                Op::Decode(_)
                | Op::ConvertColor { .. }
                | Op::Normalize(_)
                | Op::Layout { .. }
                | Op::Cast { .. } => return Ok(None),
            }))
        }

        /// The output size after this op when it is fixed whatever the
        /// input, given the fixed size before it (if any).
        #[cfg_attr(not(feature = "train"), allow(dead_code))]
        pub(crate) fn fixed_size(&self, before: Option<(u32, u32)>) -> Result<Option<(u32, u32)>> {
            Ok(match self {
                Op::Resize(r) => r.fixed_size(),
                Op::CenterCrop(c) => Some(Crop::Center(*c).size()),
                Op::Crop(r) => Some(Crop::Rect(*r).size()),
                Op::Pad(p) => p.fixed_size(before)?,
                Op::Flip(_) | Op::Rotate(_) => {
                    before.map(|(w, h)| self.output_size((w, h))).transpose()?
                }
                Op::Decode(_)
                | Op::ConvertColor { .. }
                | Op::Normalize(_)
                | Op::Layout { .. }
                | Op::Cast { .. } => before,
            })
        }

        /// Checks the op where it stands and records what the plan needs of it.
        pub(in crate::pipeline) fn compile(&self, cx: &mut Compiling<'_>) -> Result<()> {
            if !self.is_finish() && cx.finish.started() {
                return Err(op_error(
                    "pipeline",
                    "Normalize, Layout and Cast must come after every pixel op",
                ));
            }
            match *self {
                Op::Decode(d) => d.compile(cx),
                Op::ConvertColor { to, range } => Convert::compile(to, range, cx),
                Op::Resize(r) => r.compile(cx),
                Op::CenterCrop(c) => Crop::Center(c).compile(cx),
                Op::Crop(r) => Crop::Rect(r).compile(cx),
                Op::Pad(p) => p.compile(cx),
                Op::Flip(f) => orient::compile(Transform::from_flip(f), cx),
                Op::Rotate(r) => orient::compile(Transform::from_rotation(r), cx),
                Op::Normalize(n) => cx.finish.normalize(n),
                Op::Layout { layout, order } => cx.finish.layout(layout, order),
                Op::Cast {
                    dtype,
                    quantization,
                } => cx.finish.cast(dtype, quantization),
            }
        }
    }

    /// A pixel op, checked: what resolving a plan for an input size walks.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(in crate::pipeline) enum Step {
        Convert(Convert),
        Resize(Resize),
        Crop(Crop),
        Pad(Pad),
        Orient(Transform),
    }

    impl Step {
        /// The output size after this step when it is fixed whatever the
        /// input, given the fixed size before it (if any).
        #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
        pub(in crate::pipeline) fn fixed_size(
            &self,
            before: Option<(u32, u32)>,
        ) -> Result<Option<(u32, u32)>> {
            Ok(match self {
                Step::Convert(_) => before,
                Step::Resize(r) => r.fixed_size(),
                Step::Crop(c) => Some(c.size()),
                Step::Pad(p) => p.fixed_size(before)?,
                Step::Orient(t) => before.map(|(w, h)| t.output_size(w, h)),
            })
        }

        /// Adds the step to the plan being resolved.
        pub(in crate::pipeline) fn resolve<S: Storage>(
            &self,
            r: &mut Resolver<'_, S>,
        ) -> Result<()> {
            match self {
                Step::Convert(c) => {
                    c.resolve(r);
                    Ok(())
                }
                Step::Resize(s) => s.resolve(r),
                Step::Crop(c) => c.resolve(r),
                Step::Pad(p) => p.resolve(r),
                Step::Orient(t) => orient::resolve(*t, r),
            }
        }
    }

    /// One materializing pass of a resolved plan.
    // Stages live in a vector reused from image to image; a boxed plan would
    // be one more allocation per resolved size.
    #[allow(clippy::large_enum_variant)]
    #[derive(Clone, Debug, PartialEq)]
    pub(in crate::pipeline) enum Work<S: Storage> {
        Resize(ResizePlanIn<S>),
        Pad(PadWork),
        Orient(OrientWork),
    }

    impl<S: Storage> Work<S> {
        /// Whether the pass reads its input a converted row at a time (through
        /// the line scratch), rather than resampling it or moving it as stored.
        pub(in crate::pipeline) fn reads_lines(&self) -> bool {
            matches!(
                self,
                Work::Pad(_) | Work::Orient(OrientWork::ConvertMove(_))
            )
        }

        /// Runs the pass: reads `read` of `src`, writes `dst`.
        pub(in crate::pipeline) fn run(
            &self,
            src: &ImageView<'_>,
            read: Read,
            dst: &mut ImageViewMut<'_>,
            resize: &mut ResizeStateIn<S>,
            line: &mut impl Scratch,
        ) -> Result<()> {
            match self {
                Work::Resize(plan) => {
                    let reader = RowReader::new(src, read.region, read.format, read.range)?;
                    plan.run_reader(resize, &reader, dst)
                }
                Work::Pad(p) => p.run(src, read, dst, line),
                Work::Orient(o) => o.run(src, read, dst, line),
            }
        }
    }

    #[cfg(feature = "alloc")]
    impl Work<crate::arena::Heap> {
        /// Gives the pass's tables up for the next plans to refill.
        pub(in crate::pipeline) fn recycle(self, spares: &mut Spares) {
            if let Work::Resize(p) = self {
                p.recycle(spares);
            }
        }
    }

    /// An error about the pipeline's ops: `name` the op (or "pipeline",
    /// "plan"), `reason` the problem.
    pub(in crate::pipeline) fn op_error(name: &'static str, reason: &'static str) -> Error {
        Error::InvalidParameter { name, reason }
    }

    /// `op` needs packed pixels at this point.
    pub(in crate::pipeline) fn packed(op: &'static str, format: PixelFormat) -> Result<()> {
        if format.bytes_per_pixel().is_some() {
            Ok(())
        } else {
            Err(Error::UnsupportedFormat { op, format })
        }
    }
}

pub(in crate::pipeline) use compiled::{op_error, packed};

/// Ops in graph files: each op's message and features come from its module.
#[cfg(feature = "graph")]
pub(crate) mod message {
    use alloc::string::ToString;
    use alloc::vec::Vec;

    use super::{CenterCrop, Decode, Op, Pad, Resize};
    use super::{convert, crop, decode, finish, orient, pad, resize};
    use crate::graph::GraphError;
    use crate::graph::proto as pb;

    impl Op {
        /// The op as a graph-file message.
        pub(crate) fn to_message(self) -> pb::Op {
            use pb::op::Kind;
            let kind = match self {
                Op::Decode(d) => Kind::Decode(d.to_message()),
                Op::ConvertColor { to, range } => {
                    Kind::ConvertColor(convert::message::to_message(to, range))
                }
                Op::Resize(r) => Kind::Resize(r.to_message()),
                Op::CenterCrop(c) => Kind::CenterCrop(c.to_message()),
                Op::Crop(r) => Kind::Crop(crop::message::rect_to_message(&r)),
                Op::Pad(p) => Kind::Pad(p.to_message()),
                Op::Flip(f) => Kind::Flip(orient::message::flip_to_message(f)),
                Op::Rotate(r) => Kind::Rotate(orient::message::rotate_to_message(r)),
                Op::Normalize(n) => Kind::Normalize(finish::message::normalize_to_message(&n)),
                Op::Layout { layout, order } => {
                    Kind::Layout(finish::message::layout_to_message(layout, order))
                }
                Op::Cast {
                    dtype,
                    quantization,
                } => Kind::Cast(finish::message::cast_to_message(dtype, &quantization)),
            };
            pb::Op {
                name: self.name().to_string(),
                kind: Some(kind),
            }
        }

        /// Op `index` of a graph file; an unknown op is refused by its name.
        pub(crate) fn from_message(index: usize, op: &pb::Op) -> Result<Op, GraphError> {
            use pb::op::Kind;
            let Some(kind) = &op.kind else {
                return Err(GraphError::UnknownOp {
                    index,
                    name: op.name.chars().take(64).collect(),
                });
            };
            let at = |names: (&'static str, &'static str)| Some((index, names.0));
            Ok(match kind {
                Kind::Decode(d) => Op::Decode(Decode::from_message(d, at(decode::NAMES))?),
                Kind::ConvertColor(c) => {
                    let (to, range) = convert::message::from_message(c, at(convert::NAMES))?;
                    Op::ConvertColor { to, range }
                }
                Kind::Resize(r) => Op::Resize(Resize::from_message(r, at(resize::NAMES))?),
                Kind::CenterCrop(c) => {
                    Op::CenterCrop(CenterCrop::from_message(c, at(crop::CENTER_CROP_NAMES))?)
                }
                Kind::Crop(c) => Op::Crop(crop::message::rect_from_message(c)),
                Kind::Pad(p) => Op::Pad(Pad::from_message(p, at(pad::NAMES))?),
                Kind::Flip(f) => Op::Flip(orient::message::flip_from_message(
                    f,
                    at(orient::FLIP_NAMES),
                )?),
                Kind::Rotate(r) => Op::Rotate(orient::message::rotate_from_message(
                    r,
                    at(orient::ROTATE_NAMES),
                )?),
                Kind::Normalize(n) => Op::Normalize(finish::message::normalize_from_message(
                    n,
                    at(finish::NORMALIZE_NAMES),
                )?),
                Kind::Layout(l) => {
                    let (layout, order) =
                        finish::message::layout_from_message(l, at(finish::LAYOUT_NAMES))?;
                    Op::Layout { layout, order }
                }
                Kind::Cast(c) => {
                    let (dtype, quantization) =
                        finish::message::cast_from_message(c, at(finish::CAST_NAMES))?;
                    Op::Cast {
                        dtype,
                        quantization,
                    }
                }
            })
        }

        /// The features a reader needs for this op.
        pub(crate) fn features(&self, out: &mut Vec<&'static str>) {
            out.push(self.names().1);
            match self {
                Op::Decode(d) => d.features(out),
                Op::Resize(r) => r.features(out),
                Op::CenterCrop(c) => c.features(out),
                Op::Pad(p) => p.features(out),
                Op::Cast { dtype, .. } => finish::message::cast_features(*dtype, out),
                Op::Normalize(n) => finish::message::normalize_features(n, out),
                _ => {}
            }
        }
    }

    /// Every value of every table, for the round-trip tests.
    #[cfg(test)]
    pub(crate) fn sample_ops() -> Vec<Op> {
        use super::{CropRounding, DecodeScaling, PadTo};
        use crate::finish::Normalize;
        use crate::graph::convert::{DTYPES, LAYOUTS, ORDERS, PIXEL_FORMATS, YUV_RANGES};
        use crate::jpeg::Orientation;
        use crate::size::SizeRule;
        use crate::{PixelFormat, Quantization, Rect};
        use decode::message::{DECODERS, ORIENTATIONS, SCALINGS};
        use orient::message::{FLIPS, ROTATIONS};
        use pad::message::PLACEMENTS;
        use resize::message::{RESAMPLES, ROUNDINGS};
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
                SizeRule::Multiple {
                    width: 30,
                    height: 20,
                    multiple: 1 + i as u32 % 3,
                    keep_aspect_ratio: i % 2 == 0,
                },
                SizeRule::KeepRatio {
                    width: 30,
                    height: 20,
                    longest: i % 2 == 0,
                },
                SizeRule::Detr {
                    shortest: 20,
                    longest: (i % 2 == 0).then_some(33),
                    yolos: i % 3 == 0,
                },
            ] {
                ops.push(Op::Resize(Resize { size, resample }));
            }
        }
        for rounding in [CropRounding::HalfEven, CropRounding::Floor] {
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
            ops.push(Op::Pad(Pad {
                to: PadTo::AtLeast {
                    width: 30,
                    height: 40,
                    placement,
                },
                fill: [124, 116, 104],
            }));
        }
        ops.extend(FLIPS.iter().map(|r| Op::Flip(r.0)));
        ops.extend(ROTATIONS.iter().map(|r| Op::Rotate(r.0)));
        for divisor in [255.0, 1.0, 127.5] {
            ops.push(Op::Normalize(Normalize {
                mean: [0.5, -1.0, 3.0],
                std: [0.25, 2.0, 1e-3],
                divisor,
                std_reciprocal: divisor == 1.0,
                second_std: if divisor == 127.5 {
                    [0.47, 0.48, 0.49]
                } else {
                    [1.0; 3]
                },
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

    /// Every feature an op can need.
    pub(crate) fn known_features() -> Vec<&'static str> {
        let ops = [
            decode::NAMES,
            convert::NAMES,
            resize::NAMES,
            crop::CENTER_CROP_NAMES,
            crop::CROP_NAMES,
            pad::NAMES,
            orient::FLIP_NAMES,
            orient::ROTATE_NAMES,
            finish::NORMALIZE_NAMES,
            finish::LAYOUT_NAMES,
            finish::CAST_NAMES,
        ];
        let mut all: Vec<&'static str> = ops.iter().map(|n| n.1).collect();
        all.extend(decode::message::known_features());
        all.extend(resize::message::known_features());
        all.extend(crop::message::known_features());
        all.extend(pad::message::known_features());
        all.extend(finish::message::known_features());
        all
    }
}
