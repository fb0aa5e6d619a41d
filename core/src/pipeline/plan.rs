//! Compiling a pipeline into stages with known shapes, and running them.

use alloc::vec::Vec;

use super::mapping::{Affine, Geometry};
use super::op::{CenterCrop, Decode, DecodeScaling, Op, Pad, PadTo, Resize};
use super::{InputDesc, Pipeline};
use crate::color::{RowConverter, YuvRange};
use crate::decode::{ImageDecoder, ImageFormat, ImageInfo};
use crate::finish::{ChannelOrder, FinishSpec, Finisher, Normalize};
use crate::geometry::{Transform, fill_border, transform};
use crate::image::tight_len;
use crate::jpeg::{Backend, DecodeOptions, Orientation, Scale};
use crate::resize::{ResizePlan, ResizeState, SourceBox, Spares};
use crate::rows::RowReader;
use crate::{
    DType, Error, ImageView, ImageViewMut, Layout, Limits, PixelFormat, Rect, Result, TensorMut,
};

/// One input to a plan.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// Raw pixels of the format and size the plan was compiled for.
    Pixels(ImageView<'a>),
    /// An encoded file's bytes (JPEG, PNG, WebP).
    Encoded(&'a [u8]),
}

/// A geometric op with its parameters checked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Convert { to: PixelFormat, range: YuvRange },
    Resize(Resize),
    Crop(Crop),
    Pad(Pad),
    Transform(Transform),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Crop {
    Center(CenterCrop),
    Rect(Rect),
}

impl Crop {
    fn rect(&self, width: u32, height: u32) -> Result<Rect> {
        let rect = match self {
            Crop::Center(c) => c.rect(width, height),
            Crop::Rect(r) => r.fits_in(width, height).then_some(*r),
        };
        rect.filter(|r| r.width > 0 && r.height > 0)
            .ok_or(Error::RectOutOfBounds {
                rect: match self {
                    Crop::Center(c) => Rect::new(0, 0, c.width, c.height),
                    Crop::Rect(r) => *r,
                },
                width,
                height,
            })
    }
}

/// Where a stage reads: the plan's input or an earlier stage's output, a
/// region of it, and the packed format the rows are converted to on reading.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Read {
    /// `None` for the input, `Some(i)` for buffer `i`.
    buffer: Option<usize>,
    region: Rect,
    format: PixelFormat,
    range: YuvRange,
}

// Stages live in a vector reused from image to image; a boxed plan would be
// one more allocation per resolved size.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
enum Work {
    Resize(ResizePlan),
    Pad {
        rect: Rect,
        fill: [u8; 4],
    },
    /// Moves the stored pixels; a pending conversion stays pending.
    Transform(Transform),
    /// Converts (4:2:0 to packed) while moving: each source row is converted
    /// on reading and scattered to its place.
    ConvertTransform(Transform),
}

/// One materializing step: reads, works, writes buffer `out`.
#[derive(Clone, Debug, PartialEq)]
struct Stage {
    read: Read,
    work: Work,
    out: usize,
}

/// Shape of an intermediate buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shape {
    format: PixelFormat,
    width: u32,
    height: u32,
}

/// How one encoded image of a given size is decoded.
#[derive(Clone, Copy, Debug, PartialEq)]
struct DecodePlan {
    options: DecodeOptions,
    /// The part of the decoded image produced (all of it without region decoding).
    region: Rect,
}

/// A plan resolved for one input size.
#[derive(Clone, Debug, PartialEq)]
struct Resolved {
    /// Size and format of the input as the first stage sees it (decoded, at
    /// reduced size in fast mode).
    input: Shape,
    decode: Option<DecodePlan>,
    stages: Vec<Stage>,
    /// The image each stage writes. Stage `i` writes buffer `i` and reads
    /// buffer `i - 1` (or the input): only two are alive at a time, so buffer
    /// `i` is stored in slot `i % 2`.
    buffers: Vec<Shape>,
    /// Bytes of the two slots (the largest image each holds).
    slots: [u64; 2],
    finish: Read,
    geometry: Geometry,
}

impl Resolved {
    /// Nothing resolved yet (no allocation).
    fn empty() -> Resolved {
        let shape = Shape {
            format: PixelFormat::Rgb8,
            width: 0,
            height: 0,
        };
        Resolved {
            input: shape,
            decode: None,
            stages: Vec::new(),
            buffers: Vec::new(),
            slots: [0; 2],
            finish: Read {
                buffer: None,
                region: Rect::new(0, 0, 0, 0),
                format: PixelFormat::Rgb8,
                range: YuvRange::Full,
            },
            geometry: Geometry {
                input: (0, 0),
                output: (0, 0),
                to_output: Affine::IDENTITY,
            },
        }
    }
}

/// A compiled pipeline: every op checked, shapes known (for pixel inputs), the
/// finish tables built. Immutable and `Send + Sync`; each thread runs it with
/// its own [`PlanState`].
#[derive(Clone, Debug)]
pub struct Plan {
    input: InputDesc,
    decode: Option<Decode>,
    steps: Vec<Step>,
    finisher: Finisher,
    limits: Limits,
    /// Resolved at compile time for pixel inputs.
    fixed: Option<Resolved>,
}

/// The scratch of one thread running a [`Plan`]: decoder, intermediate
/// buffers and resampler rows, grown on the first run and reused after.
#[derive(Debug, Default)]
pub struct PlanState {
    /// For encoded inputs: the plans resolved for the last few image sizes (most
    /// recent last), and what each was resolved from (a state may serve several
    /// plans in turn). A few, so that portrait and landscape photos taking
    /// turns do not rebuild tables every time.
    resolved: Vec<(ResolveKey, Vec<Step>, Resolved)>,
    decoder: Option<ImageDecoder>,
    /// Tables of evicted resolved plans, refilled by the next ones.
    spares: Spares,
    decoded: Vec<u8>,
    buffers: Vec<Vec<u8>>,
    resize: ResizeState,
    line: Vec<u8>,
}

/// How many resolved image sizes a [`PlanState`] keeps.
const RESOLVED_SIZES: usize = 4;

/// What an encoded image's resolved plan depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ResolveKey {
    format: ImageFormat,
    width: u32,
    height: u32,
    exif_orientation: u16,
    mcu_width: u32,
    decode: Decode,
    limits: Limits,
}

impl PlanState {
    /// Empty scratch.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Pipeline {
    /// Compiles the pipeline for `input` with the default [`Limits`].
    pub fn compile(&self, input: InputDesc) -> Result<Plan> {
        self.compile_with_limits(input, &Limits::DEFAULT)
    }

    /// Compiles the pipeline for `input`; `limits` caps image sizes and every
    /// buffer the plan and its runs allocate.
    pub fn compile_with_limits(&self, input: InputDesc, limits: &Limits) -> Result<Plan> {
        Plan::new(self, input, limits)
    }
}

/// An error about the pipeline's ops (the message names the op and the problem).
fn op_error(name: &'static str) -> Error {
    Error::InvalidParameter { name }
}

impl Plan {
    fn new(pipeline: &Pipeline, input: InputDesc, limits: &Limits) -> Result<Plan> {
        let ops = pipeline.ops();
        let mut decode = None;
        let mut steps = Vec::new();
        let mut normalize = None;
        let mut layout = None;
        let mut cast = None;
        // The packed or YUV format the pixels have at each point.
        let mut format = match input {
            InputDesc::Pixels { format, .. } => format,
            InputDesc::Encoded => PixelFormat::Rgb8,
        };
        for (i, op) in ops.iter().enumerate() {
            if !op.is_finish() && (normalize.is_some() || layout.is_some() || cast.is_some()) {
                return Err(op_error(
                    "pipeline: Normalize, Layout and Cast must come after every pixel op",
                ));
            }
            match *op {
                Op::Decode(d) => {
                    if i != 0 {
                        return Err(op_error("pipeline: Decode must be the first op"));
                    }
                    check_decode(&d, ops.get(1..).unwrap_or_default())?;
                    if input == InputDesc::Encoded {
                        format = d.format;
                        decode = Some(d);
                    }
                }
                Op::ConvertColor { to, range } => {
                    crate::image::packed_bpp("ConvertColor target", to)?;
                    RowConverter::new(format, to, range)?;
                    format = to;
                    steps.push(Step::Convert { to, range });
                }
                Op::Resize(r) => {
                    packed("Resize", format)?;
                    steps.push(Step::Resize(r));
                }
                Op::CenterCrop(c) => {
                    if c.width == 0 || c.height == 0 {
                        return Err(op_error("CenterCrop: width and height must be positive"));
                    }
                    steps.push(Step::Crop(Crop::Center(c)));
                }
                Op::Crop(r) => {
                    if r.width == 0 || r.height == 0 {
                        return Err(op_error("Crop: width and height must be positive"));
                    }
                    steps.push(Step::Crop(Crop::Rect(r)));
                }
                Op::Pad(p) => {
                    packed("Pad", format)?;
                    steps.push(Step::Pad(p));
                }
                Op::Flip(f) => steps.push(Step::Transform(Transform::from_flip(f))),
                Op::Rotate(r) => steps.push(Step::Transform(Transform::from_rotation(r))),
                Op::Normalize(n) => {
                    if normalize.replace(n).is_some() || cast.is_some() {
                        return Err(op_error(
                            "pipeline: one Normalize, before Cast (quantization follows normalization)",
                        ));
                    }
                }
                Op::Layout { layout: l, order } => {
                    if layout.replace((l, order)).is_some() {
                        return Err(op_error("pipeline: more than one Layout op"));
                    }
                }
                Op::Cast {
                    dtype,
                    quantization,
                } => {
                    if cast.replace((dtype, quantization)).is_some() {
                        return Err(op_error("pipeline: more than one Cast op"));
                    }
                }
            }
        }
        if input == InputDesc::Encoded && decode.is_none() {
            return Err(op_error(
                "pipeline: an encoded (file) input needs a Decode op first",
            ));
        }
        packed("the finish pass (Normalize/Layout/Cast)", format)?;
        let (layout, order) = layout.ok_or(op_error(
            "pipeline: a Layout op (CHW or HWC, channel order) is required",
        ))?;
        let (dtype, quantization) = cast.ok_or(op_error(
            "pipeline: a Cast op (output element type) is required",
        ))?;
        if order == ChannelOrder::Gray && format != PixelFormat::Gray8 {
            return Err(op_error(
                "Layout: one gray channel needs Gray8 pixels (add ConvertColor to Gray8)",
            ));
        }
        let finisher = Finisher::new(&FinishSpec {
            normalize: normalize.unwrap_or(Normalize::RAW),
            order,
            layout,
            dtype,
            quantization,
        })?;
        let mut plan = Plan {
            input,
            decode,
            steps,
            finisher,
            limits: *limits,
            fixed: None,
        };
        // A fixed output must fit the limits before anything is allocated
        // for it (the caller's tensor included).
        if let Some((w, h)) = plan.checked_fixed_output_size()? {
            limits.check_pixels(u64::from(w), u64::from(h))?;
            let [a, b, c] = plan.finisher.output_shape(w, h);
            let bytes = (a as u64)
                .saturating_mul(b as u64)
                .saturating_mul(c as u64)
                .saturating_mul(plan.dtype().size() as u64);
            limits.check_alloc(bytes)?;
        }
        if let InputDesc::Pixels {
            format,
            width,
            height,
        } = input
        {
            limits.check_pixels(u64::from(width), u64::from(height))?;
            let shape = Shape {
                format,
                width,
                height,
            };
            let mut r = Resolved::empty();
            plan.resolve(shape, None, &mut r, &mut Spares::default())?;
            plan.fixed = Some(r);
        }
        Ok(plan)
    }

    /// What the plan was compiled for.
    pub fn input(&self) -> InputDesc {
        self.input
    }

    /// The output tensor's shape (`[C, H, W]` or `[H, W, C]`) when it does not
    /// depend on the input size: always for pixel inputs, and for JPEG inputs
    /// when the pipeline ends in a fixed size (a crop or a canvas).
    pub fn output_shape(&self) -> Option<[usize; 3]> {
        let (w, h) = match &self.fixed {
            Some(r) => r.geometry.output,
            None => self.fixed_output_size()?,
        };
        Some(self.finisher.output_shape(w, h))
    }

    /// Elements of the output tensor, when [`Plan::output_shape`] is known.
    pub fn output_len(&self) -> Option<usize> {
        self.output_shape().map(|s| s.iter().product())
    }

    /// The output element type.
    pub fn dtype(&self) -> DType {
        self.finisher.spec().dtype
    }

    /// The finish step's layout and channel order.
    pub fn layout(&self) -> (Layout, ChannelOrder) {
        (self.finisher.spec().layout, self.finisher.spec().order)
    }

    /// For pixel inputs, what the plan does to the geometry (scale factors,
    /// padding offsets, the map back to the input).
    pub fn geometry(&self) -> Option<Geometry> {
        self.fixed.as_ref().map(|r| r.geometry)
    }

    /// The output size of a pipeline whose last size-setting op fixes it
    /// whatever the input: a crop with its own size, a canvas, an exact resize.
    fn fixed_output_size(&self) -> Option<(u32, u32)> {
        self.checked_fixed_output_size().ok().flatten()
    }

    /// [`Plan::fixed_output_size`], with every sum checked: borders that add
    /// past the largest image side are an error, not a wrapped size.
    fn checked_fixed_output_size(&self) -> Result<Option<(u32, u32)>> {
        let grow = |side: u32, a: u32, b: u32, other: u32| {
            let sum = u64::from(side) + u64::from(a) + u64::from(b);
            crate::image::check_dimensions(sum, u64::from(other.max(1)))?;
            Ok::<u32, Error>(sum as u32)
        };
        let mut size = None;
        for step in &self.steps {
            size = match step {
                Step::Crop(Crop::Center(c)) => Some((c.width, c.height)),
                Step::Crop(Crop::Rect(r)) => Some((r.width, r.height)),
                Step::Resize(Resize {
                    size: crate::size::SizeRule::Exact { width, height },
                    ..
                }) => Some((*width, *height)),
                Step::Resize(_) => None,
                Step::Pad(Pad {
                    to: PadTo::Canvas { width, height, .. },
                    ..
                }) => Some((*width, *height)),
                Step::Pad(Pad {
                    to:
                        PadTo::Borders {
                            left,
                            top,
                            right,
                            bottom,
                        },
                    ..
                }) => match size {
                    Some((w, h)) => Some((grow(w, *left, *right, h)?, grow(h, *top, *bottom, w)?)),
                    None => None,
                },
                Step::Transform(t) => size.map(|(w, h)| t.output_size(w, h)),
                Step::Convert { .. } => size,
            };
        }
        Ok(size)
    }

    /// Builds the stages for a decoded input of `shape` (the size after any
    /// EXIF orientation; for fast decoding, the reduced size, with `full` the
    /// size the image has at full scale).
    ///
    /// Builds into `into`, refilling its vectors and the tables of its resize
    /// plans (through `spares`) instead of allocating new ones.
    fn resolve(
        &self,
        shape: Shape,
        encoded: Option<ImageInfo>,
        into: &mut Resolved,
        spares: &mut Spares,
    ) -> Result<()> {
        let limits = &self.limits;
        let mut buffers = core::mem::take(&mut into.buffers);
        buffers.clear();
        let mut stages = core::mem::take(&mut into.stages);
        for stage in stages.drain(..) {
            if let Work::Resize(p) = stage.work {
                p.recycle(spares);
            }
        }
        let mut decode = None;
        let mut input = shape;
        let mut map = Affine::IDENTITY;
        // Fast decoding: the first resize's target, from the full-size image.
        if let (Some(d), Some(info)) = (self.decode, encoded) {
            let mut scale = Scale::Full;
            // DCT scaling is JPEG's: other formats always decode at full size.
            if d.scaling == DecodeScaling::Fast
                && info.format == ImageFormat::Jpeg
                && let Some(Step::Resize(r)) = self.first_geometric_step()
            {
                let target = r.size.output_size(shape.width, shape.height)?;
                scale = Scale::for_target((info.stored_width, info.stored_height), target);
            }
            let options = decode_options(&d, scale, limits);
            let (w, h) = if scale == Scale::Full {
                (shape.width, shape.height)
            } else {
                // The scaled size, oriented like the full one.
                let (sw, sh) = (
                    scale.apply(info.stored_width),
                    scale.apply(info.stored_height),
                );
                if (info.width, info.height) == (info.stored_width, info.stored_height) {
                    (sw, sh)
                } else {
                    (sh, sw)
                }
            };
            map = Affine::scale_translate(
                f64::from(w) / f64::from(shape.width),
                f64::from(h) / f64::from(shape.height),
                0.0,
                0.0,
            );
            input = Shape {
                width: w,
                height: h,
                ..shape
            };
            decode = Some(DecodePlan {
                options,
                region: Rect::new(0, 0, w, h),
            });
        }
        let mut read = Read {
            buffer: None,
            region: Rect::new(0, 0, input.width, input.height),
            format: input.format,
            range: YuvRange::Full,
        };
        // The format the pixels are stored in where `read` points.
        let mut stored = input.format;
        // The size rules see the full-size image even when decoding is reduced.
        let mut logical = Some((shape.width, shape.height)).filter(|_| input != shape);
        let mut i = 0;
        while i < self.steps.len() {
            let step = self.steps[i];
            i += 1;
            let (w, h) = (read.region.width, read.region.height);
            let mut emit = |work: Work, out: Shape, read: Read| -> Result<Read> {
                limits.check_pixels(u64::from(out.width), u64::from(out.height))?;
                let bytes = tight_len(out.format, out.width, out.height).unwrap_or(u64::MAX);
                limits.check_alloc(bytes)?;
                buffers.push(out);
                stages.push(Stage {
                    read,
                    work,
                    out: buffers.len() - 1,
                });
                Ok(Read {
                    buffer: Some(buffers.len() - 1),
                    region: Rect::new(0, 0, out.width, out.height),
                    format: out.format,
                    range: read.range,
                })
            };
            match step {
                Step::Convert { to, range } => {
                    read.format = to;
                    read.range = range;
                }
                Step::Crop(c) => {
                    let r = c.rect(w, h)?;
                    read.region = offset(read.region, r);
                    map = map.then(&Affine::scale_translate(
                        1.0,
                        1.0,
                        -f64::from(r.x),
                        -f64::from(r.y),
                    ));
                }
                Step::Resize(r) => {
                    let rule_size = logical.take().unwrap_or((w, h));
                    let full = r.size.output_size(rule_size.0, rule_size.1)?;
                    // Crops right after the resize become the window it computes.
                    let mut window = Rect::new(0, 0, full.0, full.1);
                    while let Some(Step::Crop(c)) = self.steps.get(i) {
                        let r = c.rect(window.width, window.height)?;
                        window = offset(window, r);
                        i += 1;
                    }
                    let plan = ResizePlan::windowed_reusing(
                        (w, h),
                        SourceBox::full(w, h),
                        full,
                        window,
                        r.resample,
                        limits,
                        spares,
                    )?;
                    map = map.then(&Affine::scale_translate(
                        f64::from(full.0) / f64::from(w),
                        f64::from(full.1) / f64::from(h),
                        -f64::from(window.x),
                        -f64::from(window.y),
                    ));
                    let reads = Read {
                        region: offset(read.region, plan.input_region()),
                        ..read
                    };
                    let out = Shape {
                        format: read.format,
                        width: window.width,
                        height: window.height,
                    };
                    read = emit(Work::Resize(plan), out, reads)?;
                    stored = read.format;
                }
                Step::Pad(p) => {
                    let (cw, ch, rect) = pad_rect(&p, w, h)?;
                    map = map.then(&Affine::scale_translate(
                        1.0,
                        1.0,
                        f64::from(rect.x),
                        f64::from(rect.y),
                    ));
                    let fill = fill_bytes(read.format, p.fill);
                    let out = Shape {
                        format: read.format,
                        width: cw,
                        height: ch,
                    };
                    read = emit(Work::Pad { rect, fill }, out, read)?;
                    stored = read.format;
                }
                Step::Transform(t) => {
                    map = map.then(&transform_map(t, w, h));
                    let (tw, th) = t.output_size(w, h);
                    if stored.is_yuv420() && read.format != stored {
                        // 4:2:0 regions may start on odd pixels: convert while moving.
                        let out = Shape {
                            format: read.format,
                            width: tw,
                            height: th,
                        };
                        read = emit(Work::ConvertTransform(t), out, read)?;
                        stored = read.format;
                        continue;
                    }
                    // Flips and turns commute with per-pixel colour conversion:
                    // move the stored pixels, convert when they are next read.
                    let out = Shape {
                        format: stored,
                        width: tw,
                        height: th,
                    };
                    let pending = (read.format, read.range);
                    let mut next = emit(
                        Work::Transform(t),
                        out,
                        Read {
                            format: stored,
                            ..read
                        },
                    )?;
                    (next.format, next.range) = pending;
                    read = next;
                }
            }
        }
        let output = (read.region.width, read.region.height);
        // Region decoding: only the part of the JPEG the first reader reaches.
        let jpeg = encoded.and_then(|i| i.jpeg);
        if let (Some(dp), Some(info), Some(d)) = (&mut decode, jpeg, self.decode) {
            // What the first pass reads of the decoded image (stages read the
            // input before any buffer; with none, the finish pass reads it).
            let first = stages.first().map_or(read, |s| s.read);
            let upright = info.exif_orientation == 1 || d.orientation == Orientation::Ignore;
            if d.region_of_interest && d.backend == Backend::LibjpegTurbo && upright {
                let region = info
                    .region_covering(first.region, dp.options.scale)
                    .unwrap_or(dp.region);
                dp.region = region;
                let shift = |read: &mut Read| {
                    if read.buffer.is_none() {
                        read.region.x -= region.x;
                        read.region.y -= region.y;
                    }
                };
                if let Some(s) = stages.first_mut() {
                    shift(&mut s.read);
                }
                shift(&mut read);
            }
        }
        // The whole budget: the decoded image and both slots, refused now
        // (naming the total) rather than buffer by buffer while running.
        let mut slots = [0u64; 2];
        for (i, b) in buffers.iter().enumerate() {
            let len = tight_len(b.format, b.width, b.height).unwrap_or(u64::MAX);
            slots[i % 2] = slots[i % 2].max(len);
        }
        let decoded = decode.map_or(0, |d| {
            tight_len(d.options.format, d.region.width, d.region.height).unwrap_or(u64::MAX)
        });
        let total = decoded.saturating_add(slots[0]).saturating_add(slots[1]);
        if total > limits.max_alloc_bytes {
            return Err(Error::PlanTooLarge {
                bytes: total,
                limit: limits.max_alloc_bytes,
            });
        }
        *into = Resolved {
            input,
            decode,
            stages,
            buffers,
            slots,
            finish: read,
            geometry: Geometry {
                input: (shape.width, shape.height),
                output,
                to_output: map,
            },
        };
        Ok(())
    }

    /// Reads an encoded image's header and returns the plan resolved for
    /// its format and size, from the state's cache or built and cached now.
    fn resolve_encoded<'s>(
        &self,
        resolved: &'s mut Vec<(ResolveKey, Vec<Step>, Resolved)>,
        decoder: &mut Option<ImageDecoder>,
        spares: &mut Spares,
        bytes: &[u8],
    ) -> Result<&'s Resolved> {
        let d = self
            .decode
            .ok_or(op_error("plan: compiled without a Decode op"))?;
        // Full-scale options for the header; the resolved plan's (scale) to decode.
        let dec = decoder.get_or_insert_with(ImageDecoder::default);
        dec.set_options(decode_options(&d, Scale::Full, &self.limits));
        let info = dec.read_info(bytes)?;
        let key = ResolveKey {
            format: info.format,
            width: info.width,
            height: info.height,
            exif_orientation: info.exif_orientation,
            mcu_width: info.jpeg.map_or(0, |j| j.mcu_width),
            decode: d,
            limits: self.limits,
        };
        let found = resolved
            .iter()
            .position(|(k, steps, _)| *k == key && *steps == self.steps);
        match found {
            // Most recent last: a hit moves to the end (no allocation).
            Some(i) => resolved[i..].rotate_left(1),
            None => {
                // The oldest entry's vectors and tables are refilled for the
                // new size: a folder of photos of every size builds no garbage.
                let (mut steps, mut r) = if resolved.len() >= RESOLVED_SIZES {
                    let (_, steps, r) = resolved.remove(0);
                    (steps, r)
                } else {
                    (Vec::new(), Resolved::empty())
                };
                steps.clear();
                steps.extend_from_slice(&self.steps);
                let shape = Shape {
                    format: d.format,
                    width: info.width,
                    height: info.height,
                };
                self.resolve(shape, Some(info), &mut r, spares)?;
                resolved.push((key, steps, r));
            }
        }
        let (_, _, r) = resolved.last().expect("just resolved");
        Ok(r)
    }

    /// The output tensor's shape for one input: [`Plan::output_shape`] when
    /// it is fixed, otherwise read from the JPEG's header (the plan resolved
    /// for its size is kept in `state`, so the run that follows reuses it).
    ///
    /// ```
    /// use tensorprep::finish::{ChannelOrder, Normalize};
    /// use tensorprep::pipeline::{Input, InputDesc, Op, Pipeline, PlanState};
    /// use tensorprep::{DType, Layout, Quantization, TensorMut};
    ///
    /// // Decode and normalize at the photo's own size: the shape depends on the file.
    /// let decode = Pipeline::imagenet_eval().ops()[0];
    /// let finish = Op::finish(Normalize::UNIT, Layout::Chw, ChannelOrder::Rgb, DType::F32, Quantization::IDENTITY);
    /// let plan = Pipeline::from_ops(&[decode])?.then(finish[0])?.then(finish[1])?.then(finish[2])?
    ///     .compile(InputDesc::Encoded)?;
    /// assert_eq!(plan.output_shape(), None);
    /// let jpeg = std::fs::read("../tests/fixtures/sample.jpg").unwrap();
    /// let mut state = PlanState::new();
    /// let shape = plan.output_shape_for(&mut state, Input::Encoded(&jpeg))?;
    /// let mut tensor = vec![0f32; shape.iter().product()];
    /// let geometry = plan.run(&mut state, Input::Encoded(&jpeg), TensorMut::F32(&mut tensor))?;
    /// assert_eq!(shape, [3, geometry.input.1 as usize, geometry.input.0 as usize]);
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn output_shape_for(&self, state: &mut PlanState, input: Input<'_>) -> Result<[usize; 3]> {
        let bytes = match (input, &self.fixed) {
            (Input::Encoded(bytes), None) => bytes,
            (Input::Pixels(_), Some(_)) => {
                return self.output_shape().ok_or(op_error("plan: no output shape"));
            }
            (Input::Pixels(_), None) => {
                return Err(op_error("plan: compiled for encoded files, given pixels"));
            }
            (Input::Encoded(_), Some(_)) => {
                return Err(op_error(
                    "plan: compiled for pixel input, given encoded bytes",
                ));
            }
        };
        // The header is read (and the plan for its size resolved) even when
        // the shape is fixed: bytes that are no image are an error here too.
        let r = self.resolve_encoded(
            &mut state.resolved,
            &mut state.decoder,
            &mut state.spares,
            bytes,
        )?;
        let (w, h) = r.geometry.output;
        Ok(self.finisher.output_shape(w, h))
    }

    /// The first step that is not a colour conversion.
    fn first_geometric_step(&self) -> Option<&Step> {
        self.steps
            .iter()
            .find(|s| !matches!(s, Step::Convert { .. }))
    }

    /// Runs the plan on one input, writing the tensor into `out`, which must
    /// hold exactly the output's elements of the plan's dtype. Returns what
    /// the run did to the geometry.
    ///
    /// After the first run for an input size, makes no heap allocation (JPEG
    /// inputs: none beyond the decoder's own; libjpeg-turbo's are C `malloc`s,
    /// `zune-jpeg` makes about 20 per image).
    pub fn run(
        &self,
        state: &mut PlanState,
        input: Input<'_>,
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        let PlanState {
            resolved,
            decoder,
            spares,
            decoded,
            buffers,
            resize,
            line,
        } = state;
        let (r, source): (&Resolved, ImageView<'_>) = match (input, &self.fixed) {
            (Input::Pixels(view), Some(r)) => {
                let want = (r.input.format, r.input.width, r.input.height);
                let found = (view.format(), view.width(), view.height());
                if want.0 != found.0 {
                    return Err(Error::FormatMismatch {
                        expected: want.0,
                        found: found.0,
                    });
                }
                if (want.1, want.2) != (found.1, found.2) {
                    return Err(Error::SizeMismatch {
                        expected: (want.1, want.2),
                        found: (found.1, found.2),
                    });
                }
                (r, view)
            }
            (Input::Encoded(bytes), None) => {
                let r = self.resolve_encoded(resolved, decoder, spares, bytes)?;
                let dec = decoder.get_or_insert_with(ImageDecoder::default);
                let dp = r.decode.expect("plans for encoded input decode");
                dec.set_options(dp.options);
                let f = dp.options.format;
                let len = tight_len(f, dp.region.width, dp.region.height).unwrap_or(u64::MAX);
                let buf = crate::buffer::grow(decoded, self.limits.check_alloc(len)?)?;
                let mut view = ImageViewMut::new(f, dp.region.width, dp.region.height, buf)?;
                if dp.region == Rect::new(0, 0, r.input.width, r.input.height) {
                    dec.decode_into(bytes, &mut view)?;
                } else {
                    dec.jpeg_mut()
                        .decode_region_into(bytes, dp.region, &mut view)?;
                }
                let view = ImageView::new(f, dp.region.width, dp.region.height, decoded)?;
                (r, view)
            }
            (Input::Pixels(_), None) => {
                return Err(op_error("plan: compiled for encoded files, given pixels"));
            }
            (Input::Encoded(_), Some(_)) => {
                return Err(op_error(
                    "plan: compiled for pixel input, given encoded bytes",
                ));
            }
        };
        // The two slots intermediate images alternate in, grown once.
        if buffers.len() < 2 {
            buffers.resize_with(2, Vec::new);
        }
        for (buf, &len) in buffers.iter_mut().zip(&r.slots) {
            crate::buffer::grow(buf, self.limits.check_alloc(len)?)?;
        }
        for stage in &r.stages {
            // Stage i writes slot i % 2 and reads the other (or the input).
            let (lo, hi) = buffers.split_at_mut(1);
            let (other, mine) = if stage.out % 2 == 0 {
                (&hi[0], &mut lo[0])
            } else {
                (&lo[0], &mut hi[0])
            };
            let src = match stage.read.buffer {
                None => source,
                Some(b) => view_of(other, r.buffers[b])?,
            };
            let s = r.buffers[stage.out];
            let mut dst = ImageViewMut::new(s.format, s.width, s.height, mine)?;
            let read = stage.read;
            match &stage.work {
                Work::Resize(plan) => {
                    let reader = RowReader::new(&src, read.region, read.format, read.range)?;
                    plan.run_reader(resize, &reader, &mut dst)?;
                }
                Work::Pad { rect, fill } => {
                    let bpp = s.format.bytes_per_pixel().unwrap_or(1);
                    fill_border(&mut dst, *rect, &fill[..bpp])?;
                    let reader = RowReader::new(&src, read.region, read.format, read.range)?;
                    let x0 = rect.x as usize * bpp;
                    for y in 0..rect.height as usize {
                        let row = reader.rows(y, 1, false, line).row(0);
                        dst.plane_row_mut(0, rect.y as usize + y)[x0..x0 + row.len()]
                            .copy_from_slice(row);
                    }
                }
                Work::Transform(t) => transform(&src.crop(read.region)?, &mut dst, *t)?,
                Work::ConvertTransform(t) => {
                    let reader = RowReader::new(&src, read.region, read.format, read.range)?;
                    transform_rows(&reader, line, *t, &mut dst);
                }
            }
        }
        let read = r.finish;
        let src = match read.buffer {
            None => source,
            Some(b) => view_of(&buffers[b % 2], r.buffers[b])?,
        };
        let reader = RowReader::new(&src, read.region, read.format, read.range)?;
        let size = reader.size();
        self.finisher
            .run_rows(&mut reader.source(line), read.format, size, out)?;
        Ok(r.geometry)
    }
}

/// [`transform`] reading through `reader` (one converted row at a time) and
/// scattering each row's pixels to their places in `dst`.
fn transform_rows(
    reader: &RowReader<'_>,
    line: &mut Vec<u8>,
    t: Transform,
    dst: &mut ImageViewMut<'_>,
) {
    let bpp = reader.bpp();
    let (w, h) = reader.size();
    let (w, h) = (w as usize, h as usize);
    for sy in 0..h {
        let row = reader.rows(sy, 1, false, line).row(0);
        for (sx, px) in row.chunks_exact(bpp).enumerate() {
            let (fx, fy) = (
                if t.flip_x { w - 1 - sx } else { sx },
                if t.flip_y { h - 1 - sy } else { sy },
            );
            // `transform` writes dst(x, y) = src(x', y'), transposed or not.
            let (dx, dy) = if t.transpose { (fy, fx) } else { (fx, fy) };
            dst.plane_row_mut(0, dy)[dx * bpp..dx * bpp + bpp].copy_from_slice(px);
        }
    }
}

fn view_of(buf: &[u8], s: Shape) -> Result<ImageView<'_>> {
    ImageView::new(s.format, s.width, s.height, buf)
}

/// `inner` (relative to `outer`'s origin) in `outer`'s coordinates.
fn offset(outer: Rect, inner: Rect) -> Rect {
    Rect::new(
        outer.x + inner.x,
        outer.y + inner.y,
        inner.width,
        inner.height,
    )
}

fn packed(op: &'static str, format: PixelFormat) -> Result<()> {
    if format.bytes_per_pixel().is_some() {
        Ok(())
    } else {
        Err(Error::UnsupportedFormat { op, format })
    }
}

fn check_decode(d: &Decode, rest: &[Op]) -> Result<()> {
    crate::image::packed_bpp("Decode output", d.format)?;
    if !d.backend.is_available() {
        return Err(op_error(
            "Decode: the libjpeg-turbo backend needs the `turbojpeg` feature",
        ));
    }
    if d.scaling == DecodeScaling::Fast {
        if d.backend != Backend::LibjpegTurbo {
            return Err(op_error(
                "Decode: fast (DCT-scaled) decoding needs the libjpeg-turbo backend",
            ));
        }
        let next = rest
            .iter()
            .find(|op| !matches!(op, Op::ConvertColor { .. }));
        if !matches!(next, Some(Op::Resize(_))) {
            return Err(op_error(
                "Decode: fast decoding needs a Resize right after it (it decodes at the resize's scale)",
            ));
        }
    }
    Ok(())
}

fn decode_options(d: &Decode, scale: Scale, limits: &Limits) -> DecodeOptions {
    DecodeOptions {
        format: d.format,
        orientation: d.orientation,
        strict: d.strict,
        limits: *limits,
        backend: d.backend,
        scale,
    }
}

/// Canvas size and where the image goes.
fn pad_rect(p: &Pad, w: u32, h: u32) -> Result<(u32, u32, Rect)> {
    match p.to {
        PadTo::Borders {
            left,
            top,
            right,
            bottom,
        } => {
            let cw = u64::from(w) + u64::from(left) + u64::from(right);
            let ch = u64::from(h) + u64::from(top) + u64::from(bottom);
            crate::image::check_dimensions(cw, ch)?;
            Ok((cw as u32, ch as u32, Rect::new(left, top, w, h)))
        }
        PadTo::Canvas {
            width,
            height,
            placement,
        } => Ok((width, height, placement.rect(w, h, width, height)?)),
    }
}

/// The fill colour as the bytes of one `format` pixel.
fn fill_bytes(format: PixelFormat, [r, g, b]: [u8; 3]) -> [u8; 4] {
    let mut px = [255u8; 4];
    match format.rgb_offsets() {
        Some([ro, go, bo]) if format.bytes_per_pixel() != Some(1) => {
            px[ro] = r;
            px[go] = g;
            px[bo] = b;
        }
        _ => px[0] = crate::color::luma601(r, g, b),
    }
    px
}

/// A flip or quarter turn of a `w` x `h` image as a map of continuous coordinates.
fn transform_map(t: Transform, w: u32, h: u32) -> Affine {
    let (w, h) = (f64::from(w), f64::from(h));
    // Output x comes from input x (or y when transposed), mirrored when flipped.
    let (fx, tx) = if t.flip_x { (-1.0, w) } else { (1.0, 0.0) };
    let (fy, ty) = if t.flip_y { (-1.0, h) } else { (1.0, 0.0) };
    if t.transpose {
        // dst(x, y) = src(y', x') with x' from flip_x, y' from flip_y.
        Affine {
            m: [0.0, fy, ty, fx, 0.0, tx],
        }
    } else {
        Affine {
            m: [fx, 0.0, tx, 0.0, fy, ty],
        }
    }
}

// The compiled plan is shared between threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Plan>();
    assert_send_sync::<PlanState>();
};
