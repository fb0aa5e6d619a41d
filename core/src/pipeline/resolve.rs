//! Resolving a compiled plan for one input size: the decode (scale, region),
//! the stages each step emits with their buffers' shapes, the total budget,
//! and the geometry. The steps themselves say what they emit (`op::Step`).

use super::mapping::{Affine, Geometry};
use super::op::{Decode, Step, Work};
use crate::arena::{List, Storage, Tables};
use crate::color::YuvRange;
#[cfg(feature = "alloc")]
use crate::decode::{ImageFormat, ImageInfo};
use crate::image::tight_len;
use crate::jpeg::DecodeOptions;
#[cfg(feature = "alloc")]
use crate::jpeg::{Backend, Orientation, Scale};
use crate::resize::{Resample, ResizePlanIn, SourceBox};
use crate::{Error, Limits, PixelFormat, Rect, Result};

/// What an encoded input's headers say (builds without `alloc` have no
/// decoder, and resolve raw pixels only).
#[cfg(feature = "alloc")]
pub(super) type Encoded = ImageInfo;
#[cfg(not(feature = "alloc"))]
pub(super) type Encoded = core::convert::Infallible;

/// Where resolving gets the tables of the resize plans it builds: the heap
/// (refilling spare tables), caller memory, or nowhere (only counting).
pub(super) trait ResizeTables<S: Storage> {
    /// [`crate::resize::ResizePlan::windowed`], its tables in `S`.
    fn resize_plan(
        &mut self,
        src: (u32, u32),
        source_box: SourceBox,
        full: (u32, u32),
        window: Rect,
        resample: Resample,
        limits: &Limits,
    ) -> Result<ResizePlanIn<S>>;
}

/// Every source of tables: pooled heap `Vec`s, caller memory, or a count.
impl<S: Storage, T: Tables<S>> ResizeTables<S> for T {
    fn resize_plan(
        &mut self,
        src: (u32, u32),
        source_box: SourceBox,
        full: (u32, u32),
        window: Rect,
        resample: Resample,
        limits: &Limits,
    ) -> Result<ResizePlanIn<S>> {
        ResizePlanIn::tables_in(self, src, source_box, full, window, resample, limits)
    }
}

/// Where a stage reads: the plan's input or an earlier stage's output, a
/// region of it, and the packed format the rows are converted to on reading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Read {
    /// `None` for the input, `Some(i)` for buffer `i`.
    pub(super) buffer: Option<usize>,
    pub(super) region: Rect,
    pub(super) format: PixelFormat,
    pub(super) range: YuvRange,
}

/// Shape of an image: the input as the first stage sees it, or a buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Shape {
    pub(super) format: PixelFormat,
    pub(super) width: u32,
    pub(super) height: u32,
}

/// One materializing pass: reads, works, writes buffer `out`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Stage<S: Storage> {
    pub(super) read: Read,
    pub(super) work: Work<S>,
    pub(super) out: usize,
}

/// How one encoded image of a given size is decoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct DecodePlan {
    pub(super) options: DecodeOptions,
    /// The part of the decoded image produced (all of it without region decoding).
    pub(super) region: Rect,
}

/// A plan resolved for one input size.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Resolved<S: Storage> {
    /// Size and format of the input as the first stage sees it (decoded, at
    /// reduced size in fast mode).
    pub(super) input: Shape,
    pub(super) decode: Option<DecodePlan>,
    pub(super) stages: S::List<Stage<S>>,
    /// The image each stage writes. Stage `i` writes buffer `i` and reads
    /// buffer `i - 1` (or the input): only two are alive at a time, so buffer
    /// `i` is stored in slot `i % 2`.
    pub(super) buffers: S::List<Shape>,
    /// Bytes of the two slots (the largest image each holds).
    pub(super) slots: [u64; 2],
    pub(super) finish: Read,
    pub(super) geometry: Geometry,
}

impl<S: Storage> Resolved<S> {
    /// Nothing resolved yet (no allocation).
    pub(super) fn empty() -> Resolved<S> {
        let shape = Shape {
            format: PixelFormat::Rgb8,
            width: 0,
            height: 0,
        };
        Resolved {
            input: shape,
            decode: None,
            stages: Default::default(),
            buffers: Default::default(),
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

#[cfg(feature = "alloc")]
impl Resolved<crate::arena::Heap> {
    /// Gives the resize tables up for the next resolutions to refill.
    pub(super) fn recycle(&mut self, spares: &mut crate::resize::Spares) {
        while let Some(stage) = self.stages.pop() {
            stage.work.recycle(spares);
        }
    }
}

/// What the steps see and change while a plan is resolved.
pub(super) struct Resolver<'a, S: Storage> {
    pub(super) limits: &'a Limits,
    pub(super) tables: &'a mut dyn ResizeTables<S>,
    /// What the next stage (or the finish pass) reads.
    pub(super) read: Read,
    /// The format the pixels are stored in where `read` points.
    pub(super) stored: PixelFormat,
    /// Input coordinates to output coordinates so far.
    pub(super) map: Affine,
    /// The full-size image the first resize's size rule sees, when decoding
    /// is reduced (after the crops before that resize, their size).
    pub(super) logical: Option<(u32, u32)>,
    /// Reduced decoding: the decoded size over the full size, per axis.
    pub(super) reduced: Option<(f64, f64)>,
    /// Reduced decoding: the crops before the first resize, in full-size
    /// coordinates (the resize reads them as a fractional box).
    pub(super) crop: Option<Rect>,
    steps: &'a [Step],
    next: usize,
    /// The plan being built: stages and buffers are pushed straight into it.
    into: &'a mut Resolved<S>,
}

impl<S: Storage> Resolver<'_, S> {
    /// The size of what is read next.
    pub(super) fn size(&self) -> (u32, u32) {
        (self.read.region.width, self.read.region.height)
    }

    /// Takes the next step if it is a crop (a resize computes it as its window).
    pub(super) fn next_crop(&mut self) -> Option<super::op::CropStep> {
        match self.steps.get(self.next) {
            Some(Step::Crop(c)) => {
                self.next += 1;
                Some(*c)
            }
            _ => None,
        }
    }

    /// Adds a stage doing `work` on `read` into a new buffer of shape `out`
    /// (checked against the limits); returns the read of that buffer.
    pub(super) fn emit(&mut self, work: Work<S>, out: Shape, read: Read) -> Result<Read> {
        self.limits
            .check_pixels(u64::from(out.width), u64::from(out.height))?;
        let bytes = tight_len(out.format, out.width, out.height).unwrap_or(u64::MAX);
        self.limits.check_alloc(bytes)?;
        let full = Error::InvalidParameter {
            name: "plan in caller memory",
            reason: "more than arena::MAX_PASSES passes (resize, pad, turn)",
        };
        self.into.buffers.try_push(out).map_err(|_| full)?;
        let stage = Stage {
            read,
            work,
            out: self.into.buffers.len() - 1,
        };
        self.into.stages.try_push(stage).map_err(|_| full)?;
        Ok(Read {
            buffer: Some(self.into.buffers.len() - 1),
            region: Rect::new(0, 0, out.width, out.height),
            format: out.format,
            range: read.range,
        })
    }
}

/// `inner` (relative to `outer`'s origin) in `outer`'s coordinates.
pub(super) fn offset(outer: Rect, inner: Rect) -> Rect {
    Rect::new(
        outer.x + inner.x,
        outer.y + inner.y,
        inner.width,
        inner.height,
    )
}

/// Builds the stages of `steps` for a decoded input of `shape` (the size
/// after any EXIF orientation; for fast decoding, the reduced size, with
/// `encoded` telling the size the image has at full scale).
///
/// Builds into `into`, its resize plans' tables from `tables`. (A heap
/// caller first recycles `into`'s old tables into its spares.)
pub(super) fn resolve<S: Storage>(
    decode: Option<Decode>,
    steps: &[Step],
    limits: &Limits,
    shape: Shape,
    encoded: Option<Encoded>,
    into: &mut Resolved<S>,
    tables: &mut dyn ResizeTables<S>,
) -> Result<()> {
    into.buffers.clear();
    into.stages.clear();
    #[cfg(feature = "alloc")]
    let (mut decode_plan, input, map) = match (decode, encoded) {
        (Some(d), Some(info)) => plan_decode(d, steps, limits, shape, info)?,
        _ => (None, shape, Affine::IDENTITY),
    };
    #[cfg(not(feature = "alloc"))]
    let (decode_plan, input, map) = {
        let _ = (decode, encoded);
        (None::<DecodePlan>, shape, Affine::IDENTITY)
    };
    let read = Read {
        buffer: None,
        region: Rect::new(0, 0, input.width, input.height),
        format: input.format,
        range: YuvRange::Full,
    };
    let mut r = Resolver {
        limits,
        tables,
        read,
        stored: input.format,
        map,
        // The size rules see the full-size image even when decoding is reduced.
        logical: Some((shape.width, shape.height)).filter(|_| input != shape),
        reduced: (input != shape).then(|| {
            (
                f64::from(input.width) / f64::from(shape.width),
                f64::from(input.height) / f64::from(shape.height),
            )
        }),
        crop: None,
        steps,
        next: 0,
        into,
    };
    while let Some(step) = steps.get(r.next) {
        r.next += 1;
        step.resolve(&mut r)?;
    }
    // Region decoding (with a decoder, `alloc`) moves the first reads.
    #[cfg_attr(not(feature = "alloc"), allow(unused_mut))]
    let Resolver {
        mut read,
        map,
        into,
        ..
    } = r;
    let output = (read.region.width, read.region.height);
    // Region decoding: only the part of the JPEG the first reader reaches.
    #[cfg(feature = "alloc")]
    let jpeg = encoded.and_then(|i| i.jpeg);
    #[cfg(feature = "alloc")]
    if let (Some(dp), Some(info), Some(d)) = (&mut decode_plan, jpeg, decode) {
        // What the first pass reads of the decoded image (stages read the
        // input before any buffer; with none, the finish pass reads it).
        let first = into.stages.first().map_or(read, |s| s.read);
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
            if let Some(s) = into.stages.first_mut() {
                shift(&mut s.read);
            }
            shift(&mut read);
        }
    }
    // The whole budget: the decoded image and both slots, refused now
    // (naming the total) rather than buffer by buffer while running.
    let mut slots = [0u64; 2];
    for (i, b) in into.buffers.iter().enumerate() {
        let len = tight_len(b.format, b.width, b.height).unwrap_or(u64::MAX);
        slots[i % 2] = slots[i % 2].max(len);
    }
    let decoded = decode_plan.map_or(0, |d| {
        tight_len(d.options.format, d.region.width, d.region.height).unwrap_or(u64::MAX)
    });
    let total = decoded.saturating_add(slots[0]).saturating_add(slots[1]);
    if total > limits.max_alloc_bytes {
        return Err(Error::PlanTooLarge {
            bytes: total,
            limit: limits.max_alloc_bytes,
        });
    }
    into.input = input;
    into.decode = decode_plan;
    into.slots = slots;
    into.finish = read;
    into.geometry = Geometry {
        input: (shape.width, shape.height),
        output,
        to_output: map,
    };
    Ok(())
}

#[cfg(feature = "alloc")]
/// How an encoded image of `shape` is decoded: at full scale, or (fast
/// mode, JPEG) at the DCT scale the first resize's target allows. Returns
/// the decode, the shape the first stage sees and the map from the
/// full-size image to it.
fn plan_decode(
    d: Decode,
    steps: &[Step],
    limits: &Limits,
    shape: Shape,
    info: ImageInfo,
) -> Result<(Option<DecodePlan>, Shape, Affine)> {
    let mut scale = Scale::Full;
    // DCT scaling is JPEG's: other formats always decode at full size. The
    // scale follows what the first resize reads: after crops (a training
    // crop), the crop, not the whole image.
    let mut geometric = steps.iter().filter(|s| !matches!(s, Step::Convert(_)));
    let mut read = (shape.width, shape.height);
    let mut next = geometric.next();
    while let Some(Step::Crop(c)) = next {
        let rect = c.rect(read.0, read.1)?;
        read = (rect.width, rect.height);
        next = geometric.next();
    }
    if let Some(gap) = d.scaling.reducing_gap()
        && info.format == ImageFormat::Jpeg
        && let Some(Step::Resize(r)) = next
    {
        let target = r.size.output_size(read.0, read.1)?;
        scale = Scale::keeping(read, target, gap);
    }
    let options = d.options(scale, limits);
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
    let map = Affine::scale_translate(
        f64::from(w) / f64::from(shape.width),
        f64::from(h) / f64::from(shape.height),
        0.0,
        0.0,
    );
    let input = Shape {
        width: w,
        height: h,
        ..shape
    };
    let plan = DecodePlan {
        options,
        region: Rect::new(0, 0, w, h),
    };
    Ok((Some(plan), input, map))
}
