//! Compiling a pipeline into stages with known shapes, and running them.

use alloc::vec::Vec;

use super::mapping::Geometry;
use super::op::{Compiled, Compiling, Decode, Step, StepList, op_error};
use super::resolve::{Resolved, Shape, resolve};
use super::{InputDesc, Pipeline};
use crate::arena::Heap;
use crate::decode::{ImageDecoder, ImageFormat, ImageInfo};
use crate::finish::{ChannelOrder, Finisher, Normalize};
use crate::image::tight_len;
use crate::jpeg::Scale;
use crate::resize::{ResizeState, Spares};
use crate::{
    DType, Error, ImageView, ImageViewMut, InputKind, Layout, Limits, PixelFormat, Rect, Result,
    TensorMut,
};

/// One input to a plan.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// Raw pixels of the format and size the plan was compiled for.
    Pixels(ImageView<'a>),
    /// An encoded file's bytes (JPEG, PNG, WebP).
    Encoded(&'a [u8]),
}

/// A plan compiled for `expected` input, given `found`.
fn wrong_input(expected: InputKind, found: InputKind) -> Error {
    Error::WrongInputKind {
        op: "this plan",
        expected,
        found,
    }
}

/// A compiled pipeline: every op checked, shapes known (for pixel inputs), the
/// finish tables built. Immutable and `Send + Sync`; each thread runs it with
/// its own [`PlanState`].
#[derive(Clone, Debug)]
pub struct Plan {
    input: InputDesc,
    decode: Option<Decode>,
    steps: StepList,
    finisher: Finisher,
    /// The pixel format the finish pass reads.
    #[cfg_attr(not(feature = "train"), allow(dead_code))]
    finish_format: PixelFormat,
    limits: Limits,
    /// Resolved at compile time for pixel inputs.
    fixed: Option<Resolved<Heap>>,
}

/// The scratch of one thread running a [`Plan`]: decoder, intermediate
/// buffers and resampler rows, grown on the first run and reused after.
#[derive(Debug, Default)]
pub struct PlanState {
    /// For encoded inputs: the plans resolved for the last few image sizes (most
    /// recent last), and what each was resolved from (a state may serve several
    /// plans in turn). A few, so that portrait and landscape photos taking
    /// turns do not rebuild tables every time.
    resolved: Vec<(ResolveKey, StepList, Resolved<Heap>)>,
    decoder: Option<ImageDecoder>,
    /// Tables of evicted resolved plans, refilled by the next ones.
    spares: Spares,
    decoded: Vec<u8>,
    buffers: Vec<Vec<u8>>,
    resize: ResizeState,
    line: Vec<u8>,
    /// The steps of the last drawn op list (training plans), reused.
    #[cfg_attr(not(feature = "train"), allow(dead_code))]
    drawn: StepList,
    /// Training plans: the plan last resolved for an image between drawn
    /// adjustments, with its input shape and steps.
    #[cfg(feature = "train")]
    image_ops: Option<(Shape, StepList, Resolved<Heap>)>,
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

impl Plan {
    fn new(pipeline: &Pipeline, input: InputDesc, limits: &Limits) -> Result<Plan> {
        let Compiled {
            decode,
            steps,
            finish,
            format: finish_format,
        } = Compiled::new(pipeline.ops(), input)?;
        let finisher = Finisher::new(&finish)?;
        let mut plan = Plan {
            input,
            decode,
            steps,
            finisher,
            finish_format,
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
            resolve(
                None,
                &plan.steps,
                limits,
                shape,
                None,
                &mut r,
                &mut Spares::default(),
            )?;
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

    /// The finish step's normalization ([`Normalize::RAW`] when the pipeline
    /// has none).
    pub fn normalization(&self) -> &Normalize {
        &self.finisher.spec().normalize
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
        let mut size = None;
        for step in &self.steps {
            size = step.fixed_size(size)?;
        }
        Ok(size)
    }

    /// Reads an encoded image's header and returns the plan resolved for
    /// its format and size, from the state's cache or built and cached now.
    fn resolve_encoded<'s>(
        &self,
        resolved: &'s mut Vec<(ResolveKey, StepList, Resolved<Heap>)>,
        decoder: &mut Option<ImageDecoder>,
        spares: &mut Spares,
        bytes: &[u8],
    ) -> Result<&'s Resolved<Heap>> {
        let info = self.read_header(decoder, bytes)?;
        self.resolved_for(resolved, spares, &self.steps, info)
    }

    /// An encoded image's header, read by `state`'s decoder (see
    /// [`Plan::read_header`]).
    #[cfg_attr(not(feature = "train"), allow(dead_code))]
    pub(crate) fn header(&self, state: &mut PlanState, bytes: &[u8]) -> Result<ImageInfo> {
        self.read_header(&mut state.decoder, bytes)
    }

    /// The tensor shape the finish pass writes for a `w` x `h` image.
    #[cfg_attr(not(feature = "train"), allow(dead_code))]
    pub(crate) fn finish_shape(&self, w: u32, h: u32) -> [usize; 3] {
        self.finisher.output_shape(w, h)
    }

    /// An encoded image's header, read by the state's decoder with the
    /// plan's decode options at full scale (the size is the one after EXIF
    /// orientation when the plan applies it).
    fn read_header(&self, decoder: &mut Option<ImageDecoder>, bytes: &[u8]) -> Result<ImageInfo> {
        let d = self
            .decode
            .ok_or(op_error("plan", "compiled without a Decode op"))?;
        // Full-scale options for the header; the resolved plan's (scale) to decode.
        let dec = decoder.get_or_insert_with(ImageDecoder::default);
        dec.set_options(d.options(Scale::Full, &self.limits));
        dec.read_info(bytes)
    }

    /// The plan resolved for `steps` on an image whose header is `info`: from
    /// the cache, or built into the oldest entry's vectors and tables (a
    /// folder of photos of every size, or a random crop per sample, builds no
    /// garbage).
    fn resolved_for<'s>(
        &self,
        resolved: &'s mut Vec<(ResolveKey, StepList, Resolved<Heap>)>,
        spares: &mut Spares,
        steps: &[Step],
        info: ImageInfo,
    ) -> Result<&'s Resolved<Heap>> {
        let d = self
            .decode
            .ok_or(op_error("plan", "compiled without a Decode op"))?;
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
            .position(|(k, cached, _)| *k == key && cached == steps);
        match found {
            // Most recent last: a hit moves to the end (no allocation).
            Some(i) => resolved[i..].rotate_left(1),
            None => {
                let mut r = if resolved.len() >= RESOLVED_SIZES {
                    let (_, _, mut r) = resolved.remove(0);
                    r.recycle(spares);
                    r
                } else {
                    Resolved::empty()
                };
                let cached = StepList::from_slice(steps)
                    .map_err(|_| op_error("pipeline", "too many ops (the limit is MAX_OPS)"))?;
                let shape = Shape {
                    format: d.format,
                    width: info.width,
                    height: info.height,
                };
                // A failed resolve drops the entry; the cache refills.
                resolve(
                    self.decode,
                    steps,
                    &self.limits,
                    shape,
                    Some(info),
                    &mut r,
                    spares,
                )?;
                resolved.push((key, cached, r));
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
                return self
                    .output_shape()
                    .ok_or(op_error("plan", "no output shape"));
            }
            (Input::Pixels(_), None) => {
                return Err(wrong_input(InputKind::Encoded, InputKind::Pixels));
            }
            (Input::Encoded(_), Some(_)) => {
                return Err(wrong_input(InputKind::Pixels, InputKind::Encoded));
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
        match (input, &self.fixed) {
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
                self.execute(r, view, state, out)
            }
            (Input::Encoded(bytes), None) => {
                let info = self.read_header(&mut state.decoder, bytes)?;
                self.run_encoded_steps(state, bytes, info, None, out)
            }
            (Input::Pixels(_), None) => Err(wrong_input(InputKind::Encoded, InputKind::Pixels)),
            (Input::Encoded(_), Some(_)) => Err(wrong_input(InputKind::Pixels, InputKind::Encoded)),
        }
    }

    /// The decode's pixel format (plans for encoded input).
    #[cfg(feature = "train")]
    pub(crate) fn decode_format(&self) -> Option<PixelFormat> {
        self.decode.map(|d| d.format)
    }

    /// Whether the decode turns images upright by their EXIF orientation.
    #[cfg(feature = "train")]
    pub(crate) fn applies_orientation(&self) -> bool {
        self.decode
            .is_some_and(|d| d.orientation == crate::jpeg::Orientation::Apply)
    }

    /// The limits the plan was compiled with.
    #[cfg(feature = "train")]
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// The plan decoding in fast (DCT-scaled) mode: for training plans, whose
    /// resize is drawn per sample (compiled exact, then switched, since the
    /// compile-time check wants the resize in the plan).
    #[cfg(feature = "train")]
    pub(crate) fn decode_scaling(mut self, scaling: super::DecodeScaling) -> Plan {
        if let Some(d) = &mut self.decode {
            d.scaling = scaling;
        }
        self
    }

    /// Compiles the drawn `ops` for an input of `input` into the state's
    /// reused step list; they may not decode or finish, and must leave the
    /// pixels in the format the finish pass takes.
    #[cfg_attr(not(feature = "train"), allow(dead_code))]
    fn compile_drawn(
        &self,
        state: &mut PlanState,
        input: InputDesc,
        format: PixelFormat,
        ops: &[super::Op],
    ) -> Result<StepList> {
        let mut cx = Compiling::new(input);
        cx.steps = core::mem::take(&mut state.drawn);
        cx.steps.clear();
        cx.format = format;
        // Past position 0: a Decode among them is refused.
        cx.index = 1;
        let compiled = ops.iter().try_for_each(|op| op.compile(&mut cx));
        let steps = cx.steps;
        let checked = compiled.and_then(|()| {
            if cx.finish.started() {
                return Err(op_error(
                    "training plan",
                    "a drawn op list holds a finish op (Normalize, Layout, Cast)",
                ));
            }
            if cx.format != self.finish_format {
                return Err(op_error(
                    "training plan",
                    "the drawn ops end in another pixel format than the finish pass takes",
                ));
            }
            Ok(())
        });
        match checked {
            Ok(()) => Ok(steps),
            Err(e) => {
                state.drawn = steps;
                Err(e)
            }
        }
    }

    /// Runs the 8-bit image `source` (a training plan's, between drawn
    /// adjustments) through `ops`, then the finish pass. The plan resolved
    /// for its shape is kept in the state: no allocation while the shape and
    /// the ops repeat.
    #[cfg(feature = "train")]
    pub(crate) fn run_image_ops(
        &self,
        state: &mut PlanState,
        source: ImageView<'_>,
        ops: &[super::Op],
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        let shape = Shape {
            format: source.format(),
            width: source.width(),
            height: source.height(),
        };
        let input = InputDesc::pixels(shape.format, shape.width, shape.height);
        let steps = self.compile_drawn(state, input, shape.format, ops)?;
        let mut cache = state.image_ops.take();
        let hit = matches!(&cache, Some((s, cached, _)) if *s == shape && *cached == steps);
        let resolved = if hit {
            Ok(())
        } else {
            let mut r = cache.take().map_or_else(Resolved::empty, |(_, _, mut r)| {
                r.recycle(&mut state.spares);
                r
            });
            let cached = steps.clone();
            let done = resolve(
                None,
                &steps,
                &self.limits,
                shape,
                None,
                &mut r,
                &mut state.spares,
            );
            cache = Some((shape, cached, r));
            done
        };
        let result = resolved.and_then(|()| {
            let (_, _, r) = cache.as_ref().expect("resolved above");
            self.execute(r, source, state, out)
        });
        // A failed resolve is not kept.
        state.image_ops = if result.is_ok() || hit { cache } else { None };
        state.drawn = steps;
        result
    }

    /// Runs encoded `bytes`, whose header [`Plan::read_header`] read as
    /// `info`, through the pixel ops `ops` instead of the plan's own (a
    /// training plan's ops, drawn for this sample), then the plan's finish
    /// pass. The ops are compiled into the state's reused step list: no
    /// allocation in steady state. They may not decode or finish, and must
    /// leave the pixels in the format the plan's finish pass was built for.
    #[cfg_attr(not(feature = "train"), allow(dead_code))]
    pub(crate) fn run_encoded_ops(
        &self,
        state: &mut PlanState,
        bytes: &[u8],
        info: ImageInfo,
        ops: &[super::Op],
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        let d = self
            .decode
            .ok_or(op_error("plan", "compiled without a Decode op"))?;
        let steps = self.compile_drawn(state, InputDesc::Encoded, d.format, ops)?;
        let result = self.run_encoded_steps(state, bytes, info, Some(&steps), out);
        state.drawn = steps;
        result
    }

    /// Runs encoded `bytes`, whose header [`Plan::read_header`] read as
    /// `info`, through `steps` (the plan's own when `None`).
    fn run_encoded_steps(
        &self,
        state: &mut PlanState,
        bytes: &[u8],
        info: ImageInfo,
        steps: Option<&[Step]>,
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        let steps = steps.unwrap_or(&self.steps);
        let mut resolved = core::mem::take(&mut state.resolved);
        let result = self
            .resolved_for(&mut resolved, &mut state.spares, steps, info)
            .and_then(|r| {
                let dec = state.decoder.get_or_insert_with(ImageDecoder::default);
                let dp = r.decode.expect("plans for encoded input decode");
                dec.set_options(dp.options);
                let f = dp.options.format;
                let len = tight_len(f, dp.region.width, dp.region.height).unwrap_or(u64::MAX);
                let buf = crate::buffer::grow(&mut state.decoded, self.limits.check_alloc(len)?)?;
                let mut view = ImageViewMut::new(f, dp.region.width, dp.region.height, buf)?;
                if dp.region == Rect::new(0, 0, r.input.width, r.input.height) {
                    dec.decode_into(bytes, &mut view)?;
                } else {
                    dec.jpeg_mut()
                        .decode_region_into(bytes, dp.region, &mut view)?;
                }
                let decoded = core::mem::take(&mut state.decoded);
                let result = ImageView::new(f, dp.region.width, dp.region.height, &decoded)
                    .and_then(|view| self.execute(r, view, state, out));
                state.decoded = decoded;
                result
            });
        state.resolved = resolved;
        result
    }

    /// Runs the stages of `r` on `source`, then the finish pass into `out`.
    fn execute(
        &self,
        r: &Resolved<Heap>,
        source: ImageView<'_>,
        state: &mut PlanState,
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        let PlanState {
            buffers,
            resize,
            line,
            ..
        } = state;
        // The two slots intermediate images alternate in, grown once.
        if buffers.len() < 2 {
            buffers.resize_with(2, Vec::new);
        }
        let (lo, hi) = buffers.split_at_mut(1);
        let slot0 = crate::buffer::grow(&mut lo[0], self.limits.check_alloc(r.slots[0])?)?;
        let slot1 = crate::buffer::grow(&mut hi[0], self.limits.check_alloc(r.slots[1])?)?;
        r.execute(&self.finisher, source, [slot0, slot1], resize, line, out)
    }
}

// The compiled plan is shared between threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Plan>();
    assert_send_sync::<PlanState>();
};
