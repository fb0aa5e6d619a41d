//! Resize plans, their scratch state, and the eager resizer.

#[cfg(feature = "resize-torch")]
use super::coeffs::Quantize;
#[cfg(feature = "resize-libyuv")]
use super::libyuv::LibyuvPlan;
use super::opencv;
#[cfg(feature = "resize-torch")]
use super::pillow::NearestIndex;
use super::pillow::{self, Arithmetic, PillowShape};
#[cfg(feature = "resize-torch")]
use super::torch_float::{self, TorchFloatPlan, TorchFloatShape};
use super::{Filter, Resample, SourceBox, kernels::Simd};
use crate::arena::{Arena, Borrowed, Counting, Footprint, Scratch, Storage, Tables};
#[cfg(feature = "alloc")]
use crate::arena::{Heap, Pools};
use crate::color::YuvRange;
#[cfg(feature = "alloc")]
use crate::geometry::{Placement, fill_border};
use crate::image::packed_bpp;
use crate::rows::RowReader;
#[cfg(feature = "alloc")]
use crate::size::SizeRule;
use crate::{Error, ImageView, ImageViewMut, Limits, PixelFormat, Rect, Result};

#[derive(Clone, Debug, PartialEq)]
enum Method<S: Storage> {
    Pillow(pillow::PillowPlan<S>),
    OpenCv(opencv::OpenCvPlan<S>),
    #[cfg(feature = "resize-torch")]
    TorchFloat(TorchFloatPlan<S>),
    #[cfg(feature = "resize-libyuv")]
    Libyuv(LibyuvPlan),
}

/// The tables of resize plans no longer needed, refilled by the next plans
/// built ([`ResizePlan::windowed_reusing`]): pools of spare `Vec`s by element type.
#[cfg(feature = "alloc")]
pub(crate) type Spares = Pools;

#[cfg(feature = "alloc")]
impl ResizePlan {
    /// Gives the plan's tables up for the next plan to refill.
    pub(crate) fn recycle(self, spares: &mut Spares) {
        match self.method {
            Method::Pillow(p) => p.into_pools(spares),
            Method::OpenCv(o) => o.into_pools(spares),
            #[cfg(feature = "resize-torch")]
            Method::TorchFloat(t) => t.into_pools(spares),
            #[cfg(feature = "resize-libyuv")]
            Method::Libyuv(_) => {}
        }
    }
}

/// Everything a resize of one source size to one destination size needs that
/// does not depend on the pixels: the coefficient tables, computed once, kept
/// in `S` (see [`ResizePlan`] for the heap and [`ArenaResizePlan`] for
/// caller memory).
///
/// Immutable and `Send + Sync`: share one plan between threads, give each
/// thread its own [`ResizeStateIn`].
///
/// A plan can compute just a window of its result ([`ResizePlan::windowed`]):
/// resizing then cropping costs only the cropped pixels and reads only the
/// source region they need ([`ResizePlanIn::input_region`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ResizePlanIn<S: Storage> {
    src: (u32, u32),
    full: (u32, u32),
    window: Rect,
    region: Rect,
    source_box: SourceBox,
    resample: Resample,
    simd: Simd,
    method: Method<S>,
}

/// A resize plan whose tables are on the heap.
#[cfg(feature = "alloc")]
pub type ResizePlan = ResizePlanIn<Heap>;

/// A resize plan whose tables live in caller memory (an [`Arena`]): for
/// builds without an allocator.
pub type ArenaResizePlan<'a> = ResizePlanIn<Borrowed<'a>>;

/// A source box that must act as a crop (for methods with no fractional box):
/// its origin and size, or an error naming `resample`'s library.
pub(super) fn integral_box(b: SourceBox, resample: Resample) -> Result<((u32, u32), (u32, u32))> {
    let integral = [b.x0, b.y0, b.x1, b.y1]
        .iter()
        .all(|v| *v == libm::truncf(*v));
    if !integral || b.x1 == b.x0 || b.y1 == b.y0 {
        return Err(Error::InvalidParameter {
            name: "resize",
            reason: match resample {
                Resample::Torch(_) | Resample::TorchFloat(_) => {
                    "PyTorch's resize takes only a non-empty integral source box"
                }
                Resample::LibyuvBilinear => "libyuv takes only a non-empty integral source box",
                _ => "OpenCV methods take only a non-empty integral source box",
            },
        });
    }
    Ok((
        (b.x0 as u32, b.y0 as u32),
        ((b.x1 - b.x0) as u32, (b.y1 - b.y0) as u32),
    ))
}

/// PyTorch's filters: BILINEAR and BICUBIC, and on `uint8` NEAREST too.
pub(super) fn check_torch_filter(resample: Resample) -> Result<()> {
    let supported = match resample {
        Resample::Torch(f) => matches!(f, Filter::Bilinear | Filter::Bicubic | Filter::Nearest),
        Resample::TorchFloat(f) => matches!(f, Filter::Bilinear | Filter::Bicubic),
        _ => true,
    };
    if supported {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "resize",
            reason: "PyTorch's resize has only BILINEAR and BICUBIC (and NEAREST on uint8)",
        })
    }
}

/// The checks every plan makes of its sizes, before any table is computed.
pub(super) fn check_sizes(
    src: (u32, u32),
    source_box: SourceBox,
    full: (u32, u32),
    window: Rect,
    limits: &Limits,
) -> Result<()> {
    crate::image::check_dimensions(u64::from(src.0), u64::from(src.1))?;
    crate::image::check_dimensions(u64::from(full.0), u64::from(full.1))?;
    crate::image::check_dimensions(u64::from(window.width), u64::from(window.height))?;
    window.check(full.0, full.1)?;
    limits.check_pixels(u64::from(window.width), u64::from(window.height))?;
    source_box.check(src.0, src.1)
}

#[cfg(feature = "alloc")]
impl ResizePlan {
    /// A plan resizing whole `src` (width, height) images to `dst` (width, height).
    pub fn new(src: (u32, u32), dst: (u32, u32), resample: Resample) -> Result<ResizePlan> {
        Self::with_source_box(
            src,
            SourceBox::full(src.0, src.1),
            dst,
            resample,
            &Limits::DEFAULT,
        )
    }

    /// A plan resizing the region `source_box` of `src`-sized images to `dst`,
    /// with tables capped by `limits`.
    ///
    /// OpenCV methods take no fractional box (`cv2.resize` has none): for them
    /// the box must be integral, and it acts as a crop.
    pub fn with_source_box(
        src: (u32, u32),
        source_box: SourceBox,
        dst: (u32, u32),
        resample: Resample,
        limits: &Limits,
    ) -> Result<ResizePlan> {
        let window = Rect::new(0, 0, dst.0, dst.1);
        Self::windowed(src, source_box, dst, window, resample, limits)
    }

    /// A plan writing only the pixels inside `window` of the `full`-sized result:
    /// the same bytes as resizing to `full` and cropping `window`, without
    /// computing the rest.
    ///
    /// ```
    /// use tensorprep::resize::{Filter, Resample, ResizePlan, SourceBox};
    /// use tensorprep::{Limits, Rect};
    ///
    /// // torchvision Resize(256) + CenterCrop(224) on a 640x480 photo:
    /// // 341x256, of which the centre 224x224 is computed.
    /// let plan = ResizePlan::windowed(
    ///     (640, 480),
    ///     SourceBox::full(640, 480),
    ///     (341, 256),
    ///     Rect::new(58, 16, 224, 224),
    ///     Resample::Pillow(Filter::Bilinear),
    ///     &Limits::DEFAULT,
    /// )?;
    /// assert_eq!(plan.dst_size(), (224, 224));
    /// // Only the source rows and columns those pixels reach are read.
    /// assert!(plan.input_region().height < 480 && plan.input_region().width < 640);
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn windowed(
        src: (u32, u32),
        source_box: SourceBox,
        full: (u32, u32),
        window: Rect,
        resample: Resample,
        limits: &Limits,
    ) -> Result<ResizePlan> {
        Self::windowed_reusing(
            src,
            source_box,
            full,
            window,
            resample,
            limits,
            &mut Spares::default(),
        )
    }

    /// [`ResizePlan::windowed`] refilling the tables of plans no longer needed
    /// (given up with [`ResizePlan::recycle`]) instead of allocating: a plan
    /// state serving photos of many sizes builds no garbage.
    pub(crate) fn windowed_reusing(
        src: (u32, u32),
        source_box: SourceBox,
        full: (u32, u32),
        window: Rect,
        resample: Resample,
        limits: &Limits,
        spares: &mut Spares,
    ) -> Result<ResizePlan> {
        ResizePlanIn::tables_in(spares, src, source_box, full, window, resample, limits)
    }
}

/// The scratch a run of a plan needs: the Pillow resampler's rows (bytes),
/// OpenCV's (a converted line, two rows of 32-bit sums, a row of float sums)
/// and PyTorch's float32 intermediate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResizeScratch {
    pub(crate) between: usize,
    pub(crate) premultiplied: usize,
    pub(crate) block: usize,
    pub(super) opencv: opencv::StateSizes,
    pub(super) floats: usize,
}

impl ResizeScratch {
    /// Each buffer as large as in either.
    pub(crate) fn max(self, o: ResizeScratch) -> ResizeScratch {
        ResizeScratch {
            between: self.between.max(o.between),
            premultiplied: self.premultiplied.max(o.premultiplied),
            block: self.block.max(o.block),
            opencv: opencv::StateSizes {
                line: self.opencv.line.max(o.opencv.line),
                rows: self.opencv.rows.max(o.opencv.rows),
                sums: self.opencv.sums.max(o.opencv.sums),
                bytes: self.opencv.bytes.max(o.opencv.bytes),
            },
            floats: self.floats.max(o.floats),
        }
    }

    /// Adds the buffers to an arena footprint, as [`ArenaResizeState::in_arena`] takes them.
    pub(crate) fn count(&self, f: &mut Footprint) -> Result<()> {
        for bytes in [
            self.between,
            self.premultiplied,
            self.block,
            self.opencv.line,
        ] {
            f.add::<u8>(bytes)?;
        }
        for _ in 0..2 {
            f.add::<i32>(self.opencv.rows)?;
        }
        f.add::<f32>(self.opencv.sums)?;
        f.add::<f32>(self.floats)?;
        Ok(())
    }
}

impl<S: Storage> ResizePlanIn<S> {
    /// A plan (no state) with its tables from `tables`: pooled heap tables,
    /// caller memory, or a count of the bytes they take.
    pub(crate) fn tables_in(
        tables: &mut impl Tables<S>,
        src: (u32, u32),
        source_box: SourceBox,
        full: (u32, u32),
        window: Rect,
        resample: Resample,
        limits: &Limits,
    ) -> Result<ResizePlanIn<S>> {
        resample.check_built()?;
        check_sizes(src, source_box, full, window, limits)?;
        let out = (window.width, window.height);
        let (method, region) = match resample {
            Resample::Pillow(filter) | Resample::FastImageResize(filter) => {
                let arithmetic = match resample {
                    Resample::Pillow(_) => Arithmetic::PILLOW,
                    _ => Arithmetic::FIR,
                };
                let shape =
                    PillowShape::new(src, source_box, full, window, filter, arithmetic, limits)?;
                let region = shape.region();
                // The scratch a run will grow to, refused now rather than when running.
                limits.check_alloc(shape.passes().scratch_bytes(region, out))?;
                (Method::Pillow(shape.build(tables)?), region)
            }
            // The other libraries take no fractional box: an integral one is
            // a crop, and the plan is made for the cropped size.
            _ => {
                check_torch_filter(resample)?;
                let (origin, boxed) = integral_box(source_box, resample)?;
                let (method, r) = match resample {
                    #[cfg(feature = "resize-torch")]
                    Resample::Torch(_) | Resample::TorchNearestExact => {
                        let (filter, nearest) = match resample {
                            Resample::Torch(filter) => (filter, NearestIndex::Torch),
                            _ => (Filter::Nearest, NearestIndex::TorchExact),
                        };
                        let shape = PillowShape::new(
                            boxed,
                            SourceBox::full(boxed.0, boxed.1),
                            full,
                            window,
                            filter,
                            Arithmetic {
                                quantize: Quantize::TorchInt16,
                                nearest,
                            },
                            limits,
                        )?;
                        let r = shape.region();
                        limits.check_alloc(shape.passes().scratch_bytes(r, out))?;
                        (Method::Pillow(shape.build(tables)?), r)
                    }
                    #[cfg(feature = "resize-torch")]
                    Resample::TorchFloat(filter) => {
                        let shape = TorchFloatShape::new(boxed, full, window, filter, limits)?;
                        let r = shape.region();
                        // The float32 intermediate, a block of rows as floats and as bytes.
                        let block = (torch_float::BLOCK_ROWS as u64) * u64::from(r.width) * 4;
                        limits.check_alloc(shape.floats(window.width, 4) * 4 + block * 5)?;
                        (Method::TorchFloat(shape.build(tables)?), r)
                    }
                    #[cfg(feature = "resize-libyuv")]
                    Resample::LibyuvBilinear => {
                        let plan = LibyuvPlan::new(boxed, full, window)?;
                        // Two rows of the source or the window, read two rows at a time.
                        limits.check_alloc(plan.scratch(4) as u64 * 2)?;
                        (Method::Libyuv(plan), plan.region())
                    }
                    _ => {
                        let mode = if resample == Resample::OpenCvLinear {
                            opencv::Mode::Linear
                        } else {
                            opencv::Mode::Area
                        };
                        // Tables hold a few words per output and per source pixel of one row.
                        let words = u64::from(boxed.0)
                            + u64::from(boxed.1)
                            + u64::from(full.0)
                            + u64::from(full.1);
                        limits.check_alloc(words * 24 + u64::from(boxed.0) * 4 * 8)?;
                        let (plan, r) = opencv::OpenCvPlan::new(mode, boxed, full, window, tables)?;
                        (Method::OpenCv(plan), r)
                    }
                };
                let region = Rect::new(origin.0 + r.x, origin.1 + r.y, r.width, r.height);
                (method, region)
            }
        };
        Ok(ResizePlanIn {
            src,
            full,
            window,
            region,
            source_box,
            resample,
            simd: Simd::detect(),
            method,
        })
    }

    /// The scratch a run reading `read` (the plan's input region, placed in
    /// a `from` image) as `to` needs.
    pub(crate) fn scratch_for(
        &self,
        read: Rect,
        from: PixelFormat,
        to: PixelFormat,
    ) -> Result<ResizeScratch> {
        let bpp = packed_bpp("resize destination", to)?;
        let alpha = alpha(to, self.resample);
        // Fails only for a destination that is not a packed format, checked above.
        let rows = |n, pre| RowReader::rows_scratch_for(from, read, to, n, pre).unwrap_or(0);
        Ok(match &self.method {
            Method::Pillow(p) => {
                let region = Rect::new(0, 0, read.width, read.height);
                let sizes = p
                    .passes()
                    .scratch(region, self.dst_size(), bpp as u64, |n| {
                        rows(n, alpha) as u64
                    });
                let size = |bytes: u64| {
                    usize::try_from(bytes).map_err(|_| Error::AllocationTooLarge {
                        bytes,
                        limit: usize::MAX as u64,
                    })
                };
                ResizeScratch {
                    between: size(sizes[0])?,
                    premultiplied: size(sizes[1])?,
                    block: size(sizes[2])?,
                    opencv: Default::default(),
                    floats: 0,
                }
            }
            #[cfg(feature = "resize-libyuv")]
            Method::Libyuv(p) => ResizeScratch {
                premultiplied: rows(p.rows_at_once(bpp), false),
                between: p.scratch(bpp),
                ..Default::default()
            },
            #[cfg(feature = "resize-torch")]
            Method::TorchFloat(_) => ResizeScratch {
                premultiplied: rows(torch_float::BLOCK_ROWS, false),
                floats: (read.height as usize * self.dst_size().0 as usize
                    + torch_float::BLOCK_ROWS * read.width as usize)
                    * bpp,
                block: torch_float::BLOCK_ROWS * read.width as usize * bpp,
                ..Default::default()
            },
            Method::OpenCv(p) => {
                let opencv = p.state_sizes(
                    rows(1, false),
                    |n| rows(n, false),
                    |n| RowReader::gather_scratch_for(bpp, n),
                    bpp,
                    read.width,
                    self.dst_size().0,
                );
                ResizeScratch {
                    block: opencv.bytes,
                    opencv,
                    ..Default::default()
                }
            }
        })
    }
}

impl<'a> ArenaResizePlan<'a> {
    /// The bytes of caller memory [`ArenaResizePlan::new_in`] takes for the
    /// same arguments (alignment slack included): the plan's tables and the
    /// scratch of one state.
    pub fn bytes_needed(
        src_format: PixelFormat,
        src: (u32, u32),
        dst_format: PixelFormat,
        dst: (u32, u32),
        resample: Resample,
    ) -> Result<usize> {
        let window = Rect::new(0, 0, dst.0, dst.1);
        let full = SourceBox::full(src.0, src.1);
        Self::windowed_bytes_needed(src_format, src, full, dst, window, dst_format, resample)
    }

    /// [`ArenaResizePlan::bytes_needed`] of [`ArenaResizePlan::windowed_in`].
    pub fn windowed_bytes_needed(
        src_format: PixelFormat,
        src: (u32, u32),
        source_box: SourceBox,
        full: (u32, u32),
        window: Rect,
        dst_format: PixelFormat,
        resample: Resample,
    ) -> Result<usize> {
        let mut count = Footprint::default();
        let plan = ResizePlanIn::<Counting>::tables_in(
            &mut count,
            src,
            source_box,
            full,
            window,
            resample,
            &Limits::DEFAULT,
        )?;
        plan.scratch_for(plan.input_region(), src_format, dst_format)?
            .count(&mut count)?;
        Ok(count.total())
    }

    /// A plan resizing whole `src`-sized images of `src_format` to `dst`
    /// images of `dst_format` (converting on the way, as
    /// [`ResizePlanIn::run_converting`]), its tables and its state's scratch
    /// taken from `arena`.
    pub fn new_in(
        arena: &mut Arena<'a>,
        src_format: PixelFormat,
        src: (u32, u32),
        dst_format: PixelFormat,
        dst: (u32, u32),
        resample: Resample,
    ) -> Result<(ArenaResizePlan<'a>, ArenaResizeState<'a>)> {
        let window = Rect::new(0, 0, dst.0, dst.1);
        let full = SourceBox::full(src.0, src.1);
        Self::windowed_in(
            arena, src_format, src, full, dst, window, dst_format, resample,
        )
    }

    /// [`ResizePlan::windowed`] in caller memory: outputs `window` of the
    /// `full`-sized resize of `source_box`.
    #[allow(clippy::too_many_arguments)]
    pub fn windowed_in(
        arena: &mut Arena<'a>,
        src_format: PixelFormat,
        src: (u32, u32),
        source_box: SourceBox,
        full: (u32, u32),
        window: Rect,
        dst_format: PixelFormat,
        resample: Resample,
    ) -> Result<(ArenaResizePlan<'a>, ArenaResizeState<'a>)> {
        let plan = Self::tables_in(
            arena,
            src,
            source_box,
            full,
            window,
            resample,
            &Limits::DEFAULT,
        )?;
        let sizes = plan.scratch_for(plan.input_region(), src_format, dst_format)?;
        let state = ArenaResizeState::in_arena(arena, sizes)?;
        Ok((plan, state))
    }
}

impl<'a> ArenaResizeState<'a> {
    /// The buffers of `sizes`, from `arena`.
    pub(crate) fn in_arena(arena: &mut Arena<'a>, sizes: ResizeScratch) -> Result<Self> {
        Ok(ResizeStateIn {
            between: arena.scratch(sizes.between)?,
            premultiplied: arena.scratch(sizes.premultiplied)?,
            block: arena.scratch(sizes.block)?,
            opencv: opencv::OpenCvState {
                line: arena.scratch(sizes.opencv.line)?,
                rows: [
                    arena.scratch(sizes.opencv.rows)?,
                    arena.scratch(sizes.opencv.rows)?,
                ],
                row_y: [usize::MAX; 2],
                sum: arena.scratch(sizes.opencv.sums)?,
            },
            floats: arena.scratch(sizes.floats)?,
        })
    }
}

/// Resizes `src` into `dst` (converting its format, as
/// [`ResizePlanIn::run_converting`]) with the tables and scratch in `memory`,
/// allocating nothing: [`ArenaResizePlan::bytes_needed`] says how much
/// memory that takes.
///
/// ```
/// use tensorprep::color::YuvRange;
/// use tensorprep::resize::{ArenaResizePlan, Filter, Resample, resize_in};
/// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
///
/// // A 64x48 RGB565 camera frame to a 16x12 RGB image.
/// let frame = [0xffu8; 64 * 48 * 2];
/// let src = ImageView::new(PixelFormat::Rgb565Le, 64, 48, &frame)?;
/// let mut rgb = [0u8; 16 * 12 * 3];
/// let mut dst = ImageViewMut::new(PixelFormat::Rgb8, 16, 12, &mut rgb)?;
/// let method = Resample::Pillow(Filter::Bilinear);
/// let mut memory = [0u8; 16384]; // ArenaResizePlan::bytes_needed tells the least
/// resize_in(&mut memory, &src, YuvRange::Full, &mut dst, method)?;
/// assert_eq!(&rgb[..3], &[248, 252, 248]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn resize_in(
    memory: &mut [u8],
    src: &ImageView<'_>,
    range: YuvRange,
    dst: &mut ImageViewMut<'_>,
    resample: Resample,
) -> Result<()> {
    let mut arena = Arena::new(memory);
    let (plan, mut state) = ArenaResizePlan::new_in(
        &mut arena,
        src.format(),
        (src.width(), src.height()),
        dst.format(),
        (dst.width(), dst.height()),
        resample,
    )?;
    plan.run_converting(&mut state, src, range, dst)
}

/// Whether a resize into `format` with `resample` works on premultiplied
/// alpha (Pillow's `RGBa`; not for `NEAREST`, which Pillow applies to the raw values).
fn alpha(format: PixelFormat, resample: Resample) -> bool {
    format.alpha_offset().is_some()
        && matches!(resample,
            Resample::Pillow(f) | Resample::FastImageResize(f) if f != Filter::Nearest)
}

impl<S: Storage> ResizePlanIn<S> {
    /// The same plan running its inner loops on `simd` instead of the detected
    /// best path (to compare paths; results are identical by design).
    pub fn with_simd(mut self, simd: Simd) -> Result<Self> {
        self.simd = simd.check()?;
        Ok(self)
    }

    /// The instruction set the inner loops use.
    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// Source size (width, height) the plan accepts.
    pub fn src_size(&self) -> (u32, u32) {
        self.src
    }

    /// Destination size (width, height) the plan writes: its window's size.
    pub fn dst_size(&self) -> (u32, u32) {
        (self.window.width, self.window.height)
    }

    /// Size of the whole resized image the window is cut from.
    pub fn full_size(&self) -> (u32, u32) {
        self.full
    }

    /// The part of the full result the plan writes.
    pub fn window(&self) -> Rect {
        self.window
    }

    /// The source pixels the plan reads (the filter's reach around the box,
    /// for the window's pixels only). A caller that only has this region in
    /// memory can run the plan on it with [`ResizePlanIn::run_region`].
    pub fn input_region(&self) -> Rect {
        self.region
    }

    /// The method reproduced.
    pub fn resample(&self) -> Resample {
        self.resample
    }

    /// The source region read.
    pub fn source_box(&self) -> SourceBox {
        self.source_box
    }

    /// Resizes `src` into `dst` (same packed format: Gray8, RGB, BGR, RGBA, BGRA).
    ///
    /// Sizes must be the plan's. RGBA/BGRA are resampled premultiplied, as Pillow does
    /// (except with `NEAREST`, which Pillow applies to the raw values).
    pub fn run(
        &self,
        state: &mut ResizeStateIn<S>,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
    ) -> Result<()> {
        packed_bpp(
            "resize (convert YUV to RGB first, or use run_converting)",
            src.format(),
        )?;
        if src.format() != dst.format() {
            return Err(Error::FormatMismatch {
                expected: src.format(),
                found: dst.format(),
            });
        }
        self.run_converting(state, src, YuvRange::Full, dst)
    }

    /// Converts `src` (any format, YUV and RGB565 included) to `dst`'s packed
    /// format and resizes it, in one pass: each source row is converted when the
    /// resampler first reads it, and only the rows the plan reads are converted.
    /// The bytes equal [`crate::color::convert_color`] followed by [`ResizePlanIn::run`].
    ///
    /// ```
    /// use tensorprep::color::YuvRange;
    /// use tensorprep::resize::{Filter, Resample, ResizePlan, ResizeState};
    /// use tensorprep::{ImageView, ImageViewMut, PixelFormat};
    ///
    /// let nv21 = vec![128u8; 64 * 48 * 3 / 2]; // a gray camera frame
    /// let src = ImageView::new(PixelFormat::Nv21, 64, 48, &nv21)?;
    /// let plan = ResizePlan::new((64, 48), (16, 12), Resample::Pillow(Filter::Bilinear))?;
    /// let mut rgb = vec![0u8; 16 * 12 * 3];
    /// let mut dst = ImageViewMut::new(PixelFormat::Rgb8, 16, 12, &mut rgb)?;
    /// plan.run_converting(&mut ResizeState::new(), &src, YuvRange::Full, &mut dst)?;
    /// assert!(rgb.iter().all(|&v| v == 128));
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn run_converting(
        &self,
        state: &mut ResizeStateIn<S>,
        src: &ImageView<'_>,
        range: YuvRange,
        dst: &mut ImageViewMut<'_>,
    ) -> Result<()> {
        let found = (src.width(), src.height());
        if found != self.src {
            return Err(Error::SizeMismatch {
                expected: self.src,
                found,
            });
        }
        let reader = RowReader::new(src, self.region, dst.format(), range)?;
        self.run_reader(state, &reader, dst)
    }

    /// [`ResizePlanIn::run_converting`] on only the plan's
    /// [`input_region`](ResizePlanIn::input_region) of the source, `region` being
    /// exactly that region (as a decoder asked for just that part produces).
    pub fn run_region(
        &self,
        state: &mut ResizeStateIn<S>,
        region: &ImageView<'_>,
        range: YuvRange,
        dst: &mut ImageViewMut<'_>,
    ) -> Result<()> {
        let r = self.region;
        let found = (region.width(), region.height());
        if found != (r.width, r.height) {
            return Err(Error::SizeMismatch {
                expected: (r.width, r.height),
                found,
            });
        }
        let whole = Rect::new(0, 0, r.width, r.height);
        let reader = RowReader::new(region, whole, dst.format(), range)?;
        self.run_reader(state, &reader, dst)
    }

    /// Makes room, fallibly, for all the scratch a run through `reader`
    /// writes: the kernels then never allocate (and in steady state nothing
    /// is allocated at all). Caller memory too small for this reader (another
    /// source format than the plan was built for) is an error here.
    fn reserve(
        &self,
        state: &mut ResizeStateIn<S>,
        reader: &RowReader<'_>,
        alpha: bool,
    ) -> Result<()> {
        match &self.method {
            Method::Pillow(p) => {
                let region = Rect::new(0, 0, reader.size().0, reader.size().1);
                let sizes =
                    p.passes()
                        .scratch(region, self.dst_size(), reader.bpp() as u64, |rows| {
                            reader.rows_scratch(rows, alpha) as u64
                        });
                let ResizeStateIn {
                    between,
                    premultiplied,
                    block,
                    ..
                } = state;
                for (buf, bytes) in [between, premultiplied, block].into_iter().zip(sizes) {
                    let len = usize::try_from(bytes).map_err(|_| Error::OutOfMemory { bytes })?;
                    buf.reserve(len)?;
                }
                Ok(())
            }
            Method::OpenCv(p) => p.reserve(
                &mut state.opencv,
                &mut state.block,
                reader,
                self.dst_size().0,
            ),
            #[cfg(feature = "resize-libyuv")]
            Method::Libyuv(p) => {
                state.between.reserve(p.scratch(reader.bpp()))?;
                state
                    .premultiplied
                    .reserve(reader.rows_scratch(p.rows_at_once(reader.bpp()), false))
            }
            #[cfg(feature = "resize-torch")]
            Method::TorchFloat(p) => {
                let (floats, bytes) = p.scratch(reader, self.dst_size().0);
                state.floats.reserve(floats)?;
                state.block.reserve(bytes)?;
                state
                    .premultiplied
                    .reserve(reader.rows_scratch(torch_float::BLOCK_ROWS, false))
            }
        }
    }

    pub(crate) fn run_reader(
        &self,
        state: &mut ResizeStateIn<S>,
        reader: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
    ) -> Result<()> {
        let expected = self.dst_size();
        let found = (dst.width(), dst.height());
        if expected != found {
            return Err(Error::SizeMismatch { expected, found });
        }
        if reader.format() != dst.format() {
            return Err(Error::FormatMismatch {
                expected: reader.format(),
                found: dst.format(),
            });
        }
        let alpha = alpha(dst.format(), self.resample);
        self.reserve(state, reader, alpha)?;
        #[cfg(debug_assertions)]
        let reserved = state.capacities();
        match &self.method {
            Method::Pillow(p) => p.run(self.simd, state, reader, dst, alpha),
            Method::OpenCv(p) => p.run(
                self.simd.float_path(),
                &mut state.opencv,
                &mut state.block,
                reader,
                dst,
            ),
            #[cfg(feature = "resize-torch")]
            Method::TorchFloat(p) => p.run(
                self.simd.float_path(),
                &mut state.floats,
                &mut state.block,
                &mut state.premultiplied,
                reader,
                dst,
            ),
            #[cfg(feature = "resize-libyuv")]
            Method::Libyuv(p) => p.run(&mut state.premultiplied, &mut state.between, reader, dst),
        }
        // Every test run checks that the reserve was enough.
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            state.capacities(),
            reserved,
            "{:?}: the run grew scratch past its reserve",
            self.resample
        );
        Ok(())
    }
}

/// Scratch rows of a resize, reused between runs (one per thread), kept in
/// `S`: [`ResizeState`] on the heap, [`ArenaResizeState`] in caller memory.
#[derive(Debug)]
pub struct ResizeStateIn<S: Storage> {
    /// Output of the first pass.
    pub(super) between: S::Scratch<u8>,
    /// Source rows converted or premultiplied before the first pass reads them.
    pub(super) premultiplied: S::Scratch<u8>,
    /// Interleaved rows of the eight-row horizontal kernel.
    pub(super) block: S::Scratch<u8>,
    pub(super) opencv: opencv::OpenCvState<S>,
    /// PyTorch's float32 intermediate.
    #[cfg_attr(not(feature = "resize-torch"), allow(dead_code))]
    pub(super) floats: S::Scratch<f32>,
}

/// A resize state on the heap: empty until the first run grows it.
#[cfg(feature = "alloc")]
pub type ResizeState = ResizeStateIn<Heap>;

/// A resize state in caller memory, made with its plan by [`ArenaResizePlan::new_in`].
pub type ArenaResizeState<'a> = ResizeStateIn<Borrowed<'a>>;

#[cfg(feature = "alloc")]
impl Default for ResizeState {
    fn default() -> Self {
        ResizeStateIn {
            between: Default::default(),
            premultiplied: Default::default(),
            block: Default::default(),
            opencv: opencv::OpenCvState {
                line: Default::default(),
                rows: Default::default(),
                row_y: [usize::MAX; 2],
                sum: Default::default(),
            },
            floats: Default::default(),
        }
    }
}

#[cfg(feature = "alloc")]
impl Clone for ResizeState {
    fn clone(&self) -> Self {
        ResizeStateIn {
            between: self.between.clone(),
            premultiplied: self.premultiplied.clone(),
            block: self.block.clone(),
            opencv: opencv::OpenCvState {
                line: self.opencv.line.clone(),
                rows: self.opencv.rows.clone(),
                row_y: self.opencv.row_y,
                sum: self.opencv.sum.clone(),
            },
            floats: self.floats.clone(),
        }
    }
}

#[cfg(feature = "alloc")]
impl ResizeState {
    /// Empty scratch; it grows on the first run and is reused afterwards.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<S: Storage> ResizeStateIn<S> {
    /// The capacity of every scratch buffer.
    #[cfg(debug_assertions)]
    fn capacities(&self) -> [usize; 8] {
        let [line, r0, r1, sum] = self.opencv.capacities();
        [
            self.floats.capacity(),
            self.between.capacity(),
            self.premultiplied.capacity(),
            self.block.capacity(),
            line,
            r0,
            r1,
            sum,
        ]
    }
}

#[cfg(feature = "alloc")]
/// A plan and its state for eager use: the plan is rebuilt only when the sizes,
/// box or method change, so repeated calls on same-sized images do not allocate.
#[derive(Clone, Debug, Default)]
pub struct Resizer {
    plan: Option<ResizePlan>,
    state: ResizeState,
}

#[cfg(feature = "alloc")]
impl Resizer {
    /// A resizer with empty scratch buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Resizes `src` to the size of `dst` (same packed format: Gray8, RGB, BGR, RGBA, BGRA).
    ///
    /// RGBA/BGRA are resized with premultiplied alpha, as Pillow does.
    pub fn resize(
        &mut self,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        resample: Resample,
    ) -> Result<()> {
        let full = SourceBox::full(src.width(), src.height());
        self.resize_box(src, full, dst, resample)
    }

    /// Resizes the region `source_box` of `src` to the size of `dst` (Pillow's `box=`).
    pub fn resize_box(
        &mut self,
        src: &ImageView<'_>,
        source_box: SourceBox,
        dst: &mut ImageViewMut<'_>,
        resample: Resample,
    ) -> Result<()> {
        let (s, d) = ((src.width(), src.height()), (dst.width(), dst.height()));
        let plan = match self.plan.take() {
            Some(p)
                if p.src == s
                    && p.full == d
                    && p.window == Rect::new(0, 0, d.0, d.1)
                    && p.resample == resample
                    && p.source_box == source_box =>
            {
                p
            }
            // A different job: the old tables are dropped before the new ones are built.
            _ => ResizePlan::with_source_box(s, source_box, d, resample, &Limits::DEFAULT)?,
        };
        self.plan.insert(plan).run(&mut self.state, src, dst)
    }

    /// Resizes `src` to fit inside `dst` keeping its aspect ratio ([`SizeRule::Fit`]),
    /// places it at `placement` and fills the rest with `fill` (Ultralytics uses 114).
    ///
    /// Returns where the resized image lies in `dst`; map model coordinates back with
    /// `x_src = (x - rect.x) * src_w / rect.width`.
    pub fn letterbox(
        &mut self,
        src: &ImageView<'_>,
        dst: &mut ImageViewMut<'_>,
        resample: Resample,
        placement: Placement,
        fill: &[u8],
    ) -> Result<Rect> {
        let (w, h) = SizeRule::Fit {
            width: dst.width(),
            height: dst.height(),
            upscale: true,
        }
        .output_size(src.width(), src.height())?;
        let rect = placement.rect(w, h, dst.width(), dst.height())?;
        fill_border(dst, rect, fill)?;
        self.resize(src, &mut dst.sub_view_mut(rect)?, resample)?;
        Ok(rect)
    }
}

#[cfg(feature = "alloc")]
/// One-shot [`Resizer::resize`] (allocates scratch; keep a [`Resizer`] for repeated calls).
pub fn resize(src: &ImageView<'_>, dst: &mut ImageViewMut<'_>, resample: Resample) -> Result<()> {
    Resizer::new().resize(src, dst, resample)
}

#[cfg(feature = "alloc")]
/// Allocating form: a new `width` x `height` image.
pub fn resize_owned(
    src: &ImageView<'_>,
    width: u32,
    height: u32,
    resample: Resample,
) -> Result<crate::Image> {
    let mut img = crate::Image::new(src.format(), width, height)?;
    resize(src, &mut img.view_mut(), resample)?;
    Ok(img)
}

#[cfg(feature = "alloc")]
/// Allocating form with the size given by a [`SizeRule`].
pub fn resize_by_rule(
    src: &ImageView<'_>,
    rule: SizeRule,
    resample: Resample,
) -> Result<crate::Image> {
    let (w, h) = rule.output_size(src.width(), src.height())?;
    resize_owned(src, w, h, resample)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PixelFormat;

    /// A method this build leaves out is refused, naming its Cargo feature,
    /// when its plan is made; every method built makes one.
    #[test]
    #[cfg(feature = "std")]
    fn a_method_left_out_of_the_build_is_not_built() {
        for r in Resample::ALL {
            let got = ResizePlan::new((64, 48), (16, 12), r);
            match r.feature() {
                Some(feature) if !r.is_built() => {
                    let e = got.unwrap_err();
                    assert!(
                        matches!(e, Error::NotBuilt { feature: f, .. } if f == feature),
                        "{r:?}: {e:?}"
                    );
                    assert!(std::format!("{e}").contains(feature), "{e}");
                }
                _ => assert!(got.is_ok(), "{r:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn constant_images_stay_constant_for_every_filter() {
        // Opaque alpha, so premultiplication (as Pillow does for RGBA) is exact.
        let opaque: [u8; 13 * 9 * 4] = core::array::from_fn(|i| if i % 4 == 3 { 255 } else { 77 });
        let px = [77u8; 13 * 9 * 4];
        for format in [PixelFormat::Gray8, PixelFormat::Rgb8, PixelFormat::Bgra8] {
            let bpp = format.bytes_per_pixel().unwrap();
            let data = if bpp == 4 {
                &opaque[..]
            } else {
                &px[..13 * 9 * bpp]
            };
            let src = ImageView::new(format, 13, 9, data).unwrap();
            // libyuv's column blend weighs a pair by 127/128 in all: it turns
            // a flat 77 into 76 (checked against libyuv itself).
            for r in Resample::ALL
                .into_iter()
                .filter(|&r| r != Resample::LibyuvBilinear)
            {
                for (w, h) in [(5, 4), (26, 18), (13, 9), (1, 1)] {
                    let out = resize_owned(&src, w, h, r).unwrap();
                    let ok = out.as_bytes().chunks(bpp).all(|p| {
                        p.iter()
                            .enumerate()
                            .all(|(i, &v)| v == if i == 3 { 255 } else { 77 })
                    });
                    assert!(ok, "{format:?} {r:?} {w}x{h}");
                }
            }
        }
    }

    #[test]
    fn writes_into_a_strided_sub_view_only() {
        let src_px: [u8; 8 * 8] = core::array::from_fn(|i| i as u8);
        let src = ImageView::new(PixelFormat::Gray8, 8, 8, &src_px).unwrap();
        let mut canvas = [200u8; 10 * 10];
        let mut dst = ImageViewMut::new(PixelFormat::Gray8, 10, 10, &mut canvas).unwrap();
        let rect = Resizer::new()
            .letterbox(
                &src.crop(Rect::new(0, 0, 8, 4)).unwrap(),
                &mut dst,
                Resample::default(),
                Placement::Center,
                &[114],
            )
            .unwrap();
        // 8x4 fits 10x10 at scale 1.25 as 10x5, centred at top (10 - 5) / 2 = 2.
        assert_eq!(rect, Rect::new(0, 2, 10, 5));
        assert!(canvas[..20].iter().all(|&v| v == 114));
        assert!(canvas[70..].iter().all(|&v| v == 114));
        // The source crop holds values 0..32, so every pixel inside was written.
        assert!(canvas[20..70].iter().all(|&v| v < 32));
    }

    #[test]
    fn yuv_and_mismatched_formats_are_errors() {
        let px = [0u8; 6];
        let yuv = ImageView::new(PixelFormat::Nv12, 2, 2, &px).unwrap();
        let mut out = [0u8; 6];
        let mut dst = ImageViewMut::new(PixelFormat::Nv12, 2, 2, &mut out).unwrap();
        assert!(resize(&yuv, &mut dst, Resample::default()).is_err());
        let g = ImageView::new(PixelFormat::Gray8, 2, 2, &px[..4]).unwrap();
        let mut out = [0u8; 12];
        let mut dst = ImageViewMut::new(PixelFormat::Rgb8, 2, 2, &mut out).unwrap();
        assert!(matches!(
            resize(&g, &mut dst, Resample::default()),
            Err(Error::FormatMismatch { .. })
        ));
    }

    fn crop_copy(img: &crate::Image, r: Rect) -> alloc::vec::Vec<u8> {
        let v = img.view();
        let c = v.crop(r).unwrap();
        c.plane_rows(0).flatten().copied().collect()
    }

    #[test]
    fn a_window_equals_resize_then_crop_for_every_method() {
        let cases = [
            ((37, 29), (17, 11), SourceBox::full(37, 29)),
            // libyuv's plane routines: 3/4, 3/8, doubled, doubled across.
            ((48, 40), (36, 30), SourceBox::full(48, 40)),
            ((64, 48), (24, 18), SourceBox::full(64, 48)),
            ((20, 15), (40, 30), SourceBox::full(20, 15)),
            ((20, 15), (39, 15), SourceBox::full(20, 15)),
            ((37, 29), (90, 70), SourceBox::full(37, 29)),
            ((40, 30), (20, 15), SourceBox::full(40, 30)),
            ((37, 29), (37, 13), SourceBox::full(37, 29)),
            (
                (37, 29),
                (20, 20),
                SourceBox {
                    x0: 3.0,
                    y0: 2.0,
                    x1: 33.0,
                    y1: 27.0,
                },
            ),
            (
                (37, 29),
                (20, 20),
                SourceBox {
                    x0: 3.5,
                    y0: 2.25,
                    x1: 31.0,
                    y1: 27.0,
                },
            ),
            (
                (37, 29),
                (30, 25),
                SourceBox {
                    x0: 4.0,
                    y0: 2.0,
                    x1: 34.0,
                    y1: 27.0,
                },
            ),
            ((3, 400), (2, 50), SourceBox::full(3, 400)),
        ];
        let mut seed = 7;
        for format in [PixelFormat::Gray8, PixelFormat::Rgb8, PixelFormat::Rgba8] {
            let bpp = format.bytes_per_pixel().unwrap();
            for &(src, full, bx) in &cases {
                seed += 1;
                let px = crate::testing::noise(src.0 as usize * src.1 as usize * bpp, seed);
                let view = ImageView::new(format, src.0, src.1, &px).unwrap();
                for r in Resample::ALL {
                    let Ok(whole) = ResizePlan::with_source_box(src, bx, full, r, &Limits::DEFAULT)
                    else {
                        continue; // OpenCV methods refuse fractional boxes
                    };
                    let mut all = crate::Image::new(format, full.0, full.1).unwrap();
                    whole
                        .run(&mut ResizeState::new(), &view, &mut all.view_mut())
                        .unwrap();
                    let windows = [
                        Rect::new(0, 0, full.0, full.1),
                        Rect::new(1, 2, full.0 - 1, full.1 - 2),
                        Rect::new(full.0 / 2, full.1 / 3, full.0 / 2, 1),
                        Rect::new(full.0 - 1, 0, 1, full.1),
                    ];
                    for w in windows {
                        let plan =
                            ResizePlan::windowed(src, bx, full, w, r, &Limits::DEFAULT).unwrap();
                        let reg = plan.input_region();
                        assert!(reg.fits_in(src.0, src.1), "{r:?} {w:?} {reg:?}");
                        let mut out = crate::Image::new(format, w.width, w.height).unwrap();
                        let mut state = ResizeState::new();
                        plan.run(&mut state, &view, &mut out.view_mut()).unwrap();
                        assert!(
                            out.as_bytes() == crop_copy(&all, w),
                            "{format:?} {r:?} {src:?}->{full:?} box {bx:?} window {w:?}"
                        );
                        // The region alone gives the same bytes.
                        let region = view.crop(reg).unwrap();
                        let mut again = crate::Image::new(format, w.width, w.height).unwrap();
                        plan.run_region(&mut state, &region, YuvRange::Full, &mut again.view_mut())
                            .unwrap();
                        assert!(again == out, "{format:?} {r:?} region run");
                    }
                }
            }
        }
    }

    /// Arena plans (tables and scratch in caller memory) give the heap plans'
    /// bytes, in exactly the memory `bytes_needed` reports, at any alignment.
    #[test]
    fn arena_plans_equal_heap_plans_in_the_bytes_they_report() {
        use crate::arena::{Arena, SLACK};
        let methods = Resample::ALL;
        let sizes = [
            ((64u32, 48u32), (20u32, 15u32)),
            ((37, 29), (90, 70)),
            ((40, 30), (40, 30)),
            ((37, 29), (37, 13)),
            ((3, 400), (2, 50)),
            ((320, 240), (96, 96)),
            // libyuv's plane routines reading 2 and 3 rows at once.
            ((64, 48), (48, 36)),
            ((64, 48), (24, 18)),
        ];
        let sources = [
            (PixelFormat::Rgb8, PixelFormat::Rgb8),
            (PixelFormat::Gray8, PixelFormat::Gray8),
            (PixelFormat::Rgba8, PixelFormat::Rgba8),
            (PixelFormat::Rgb565Be, PixelFormat::Rgb8),
            (PixelFormat::Yuyv, PixelFormat::Gray8),
            (PixelFormat::Nv21, PixelFormat::Bgr8),
        ];
        let mut cases = 0;
        for (i, &(src, full)) in sizes.iter().enumerate() {
            for (j, &(from, to)) in sources.iter().enumerate() {
                let (w, h) = src;
                let len = crate::image::tight_len(from, w, h).unwrap() as usize;
                let px = crate::testing::noise(len, (i * 8 + j) as u32 + 1);
                let view = ImageView::new(from, w, h, &px).unwrap();
                for (k, &r) in methods.iter().enumerate() {
                    let crop_only = !matches!(r, Resample::Pillow(_));
                    let boxes = [
                        SourceBox::full(w, h),
                        SourceBox {
                            x0: 1.5,
                            y0: 0.25,
                            x1: w as f32 - 1.0,
                            y1: h as f32 - 0.5,
                        },
                    ];
                    // OpenCV and PyTorch take integral boxes only: a crop.
                    let bx = if crop_only {
                        SourceBox {
                            x0: 1.0,
                            y0: 1.0,
                            x1: w as f32 - 1.0,
                            y1: h as f32,
                        }
                    } else {
                        boxes[(i + k) % 2]
                    };
                    let windows = [
                        Rect::new(0, 0, full.0, full.1),
                        Rect::new(1, full.1 / 3, full.0 - 1, full.1 - full.1 / 3),
                    ];
                    let win = windows[(j + k) % 2];
                    let heap =
                        ResizePlan::windowed((w, h), bx, full, win, r, &Limits::DEFAULT).unwrap();
                    let mut want = crate::Image::new(to, win.width, win.height).unwrap();
                    heap.run_converting(
                        &mut ResizeState::new(),
                        &view,
                        YuvRange::Limited,
                        &mut want.view_mut(),
                    )
                    .unwrap();
                    let needed =
                        ArenaResizePlan::windowed_bytes_needed(from, (w, h), bx, full, win, to, r)
                            .unwrap();
                    let mut memory = alloc::vec![0u8; needed + 8];
                    for offset in [0, 3] {
                        let mut arena = Arena::new(&mut memory[offset..offset + needed]);
                        let (plan, mut state) = ArenaResizePlan::windowed_in(
                            &mut arena,
                            from,
                            (w, h),
                            bx,
                            full,
                            win,
                            to,
                            r,
                        )
                        .unwrap();
                        assert!(arena.used() <= needed);
                        let mut got = crate::Image::new(to, win.width, win.height).unwrap();
                        plan.run_converting(
                            &mut state,
                            &view,
                            YuvRange::Limited,
                            &mut got.view_mut(),
                        )
                        .unwrap();
                        assert!(
                            got == want,
                            "{from:?}->{to:?} {r:?} {src:?}->{full:?} {bx:?} {win:?}"
                        );
                        // Another source format than the one planned for needs
                        // other scratch: refused if it does not fit, never a panic.
                        let rgb = crate::Image::new(PixelFormat::Rgba8, w, h).unwrap();
                        let _ = plan.run_converting(
                            &mut state,
                            &rgb.view(),
                            YuvRange::Full,
                            &mut got.view_mut(),
                        );
                    }
                    // One aligned byte less than the tables and scratch: refused
                    // (a plain copy of the same format needs nothing).
                    cases += 1;
                    if needed == SLACK {
                        continue;
                    }
                    let mut arena = Arena::new(&mut memory[..needed - SLACK - 1]);
                    let short = ArenaResizePlan::windowed_in(
                        &mut arena,
                        from,
                        (w, h),
                        bx,
                        full,
                        win,
                        to,
                        r,
                    );
                    assert!(matches!(short, Err(Error::ArenaTooSmall { .. })));
                }
            }
        }
        assert_eq!(cases, sizes.len() * sources.len() * methods.len());
    }

    #[test]
    fn converting_while_resizing_equals_converting_first() {
        for (w, h) in [(64u32, 48u32), (37, 29), (16, 200), (256, 6)] {
            let len = crate::image::tight_len(PixelFormat::Nv21, w, h).unwrap() as usize;
            let frame = crate::testing::noise(len, w + h);
            for from in [PixelFormat::Nv21, PixelFormat::Nv12, PixelFormat::I420] {
                let src = ImageView::new(from, w, h, &frame).unwrap();
                for to in [PixelFormat::Rgb8, PixelFormat::Bgra8, PixelFormat::Gray8] {
                    let rgb =
                        crate::color::convert_color_owned(&src, to, YuvRange::Limited).unwrap();
                    for r in Resample::ALL {
                        // Narrow enough that OpenCV linear converts only the columns it
                        // reads (256 -> 8 even where whole rows convert with AVX2).
                        let full = if w == 256 {
                            (8, 3)
                        } else {
                            (w / 5 + 1, h / 2 + 1)
                        };
                        let win = Rect::new(1, 1, full.0 - 1, full.1 - 1);
                        let plan = ResizePlan::windowed(
                            (w, h),
                            SourceBox::full(w, h),
                            full,
                            win,
                            r,
                            &Limits::DEFAULT,
                        )
                        .unwrap();
                        let mut want = crate::Image::new(to, win.width, win.height).unwrap();
                        plan.run(&mut ResizeState::new(), &rgb.view(), &mut want.view_mut())
                            .unwrap();
                        let mut got = crate::Image::new(to, win.width, win.height).unwrap();
                        plan.run_converting(
                            &mut ResizeState::new(),
                            &src,
                            YuvRange::Limited,
                            &mut got.view_mut(),
                        )
                        .unwrap();
                        assert!(got == want, "{from:?}->{to:?} {w}x{h} {r:?}");
                    }
                }
            }
        }
    }
}
