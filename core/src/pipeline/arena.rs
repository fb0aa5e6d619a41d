//! Plans without an allocator: a pipeline compiled for camera frames of one
//! format and size, its resampler tables, intermediate images and scratch
//! rows in caller memory (an [`Arena`]), run with zero allocation.
//!
//! The same compiler, resolver and passes as [`super::Plan`]: the bytes are
//! those of the heap plan. Every pixel op works here, Pillow's and OpenCV's
//! resize methods included; decoding needs `alloc`.

use super::mapping::Geometry;
use super::op::Compiled;
use super::resolve::{Resolved, Shape, resolve};
use super::{InputDesc, Pipeline};
use crate::arena::{Arena, Borrowed, Counting, Footprint};
use crate::finish::{ChannelOrder, FinishSpec, Finisher};
use crate::resize::{ArenaResizeState, ResizeScratch};
use crate::{DType, Error, ImageView, InputKind, Layout, Limits, PixelFormat, Result, TensorMut};

/// A pipeline compiled for raw pixels of one format and size, every table in
/// caller memory. Immutable; runs with an [`ArenaPlanState`] made with it.
///
/// ```
/// use tensorprep::arena::Arena;
/// use tensorprep::finish::{ChannelOrder, Normalize};
/// use tensorprep::pipeline::{ArenaPlan, InputDesc, Op, Pipeline, Resize};
/// use tensorprep::resize::{Filter, Resample};
/// use tensorprep::size::SizeRule;
/// use tensorprep::{DType, ImageView, Layout, PixelFormat, Quantization, TensorMut};
///
/// // A QVGA RGB565 camera frame to a 96x96 int8 NHWC tensor (scale 1/255, zero point -128).
/// let ops = [
///     Op::ConvertColor { to: PixelFormat::Rgb8, range: Default::default() },
///     Op::Resize(Resize {
///         size: SizeRule::Exact { width: 96, height: 96 },
///         resample: Resample::Pillow(Filter::Bilinear),
///     }),
///     Op::Normalize(Normalize::UNIT),
///     Op::Layout { layout: Layout::Hwc, order: ChannelOrder::Rgb },
///     Op::Cast { dtype: DType::I8, quantization: Quantization { scale: 1.0 / 255.0, zero_point: -128 } },
/// ];
/// let pipeline = Pipeline::from_ops(&ops)?;
/// let input = InputDesc::pixels(PixelFormat::Rgb565Le, 320, 240);
/// let needed = ArenaPlan::bytes_needed(&pipeline, input)?;
/// let mut memory = vec![0u8; needed]; // a `static` or stack buffer on a device
/// let mut arena = Arena::new(&mut memory);
/// let (plan, mut state) = ArenaPlan::new_in(&mut arena, &pipeline, input)?;
///
/// let frame = [0u8; 320 * 240 * 2];
/// let mut tensor = [0i8; 96 * 96 * 3];
/// let view = ImageView::new(PixelFormat::Rgb565Le, 320, 240, &frame)?;
/// plan.run(&mut state, view, TensorMut::I8(&mut tensor))?;
/// assert!(tensor.iter().all(|&q| q == -128));
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Debug)]
pub struct ArenaPlan<'a> {
    /// The finish pass's tables, in the arena.
    finisher: &'a Finisher,
    /// The passes, resolved in the arena (not on the stack).
    resolved: &'a Resolved<Borrowed<'a>>,
}

/// The memory a run of an [`ArenaPlan`] writes: the two intermediate images
/// and the scratch rows, in the same arena as the plan.
#[derive(Debug)]
pub struct ArenaPlanState<'a> {
    slots: [&'a mut [u8]; 2],
    resize: ArenaResizeState<'a>,
    line: &'a mut [u8],
}

/// The input shape of a plan in caller memory: raw pixels only.
fn pixels(input: InputDesc) -> Result<Shape> {
    match input {
        InputDesc::Pixels {
            format,
            width,
            height,
        } => Ok(Shape {
            format,
            width,
            height,
        }),
        InputDesc::Encoded => Err(Error::WrongInputKind {
            op: "a plan in caller memory (decoding needs alloc)",
            expected: InputKind::Pixels,
            found: InputKind::Encoded,
        }),
    }
}

/// Compiles `pipeline` for `input` and resolves it into `into`, the resize
/// tables from `tables`; returns the finish pass's description.
fn build<S: crate::arena::Storage>(
    pipeline: &Pipeline,
    input: InputDesc,
    into: &mut Resolved<S>,
    tables: &mut dyn super::resolve::ResizeTables<S>,
) -> Result<FinishSpec> {
    let shape = pixels(input)?;
    let limits = Limits::DEFAULT;
    limits.check_pixels(u64::from(shape.width), u64::from(shape.height))?;
    let compiled = Compiled::new(pipeline.ops(), input)?;
    resolve(None, &compiled.steps, &limits, shape, None, into, tables)?;
    Ok(compiled.finish)
}

impl<'a> ArenaPlan<'a> {
    /// The bytes of caller memory [`ArenaPlan::new_in`] takes for `pipeline`
    /// and `input` (alignment slack included): resampler tables, the two
    /// intermediate images and the scratch rows. Computed on the target:
    /// tables differ between architectures (x86 keeps a SIMD copy).
    pub fn bytes_needed(pipeline: &Pipeline, input: InputDesc) -> Result<usize> {
        let mut count = Footprint::default();
        count.add::<u8>(core::mem::size_of::<Resolved<Borrowed<'static>>>())?;
        count.add::<u8>(core::mem::size_of::<Finisher>())?;
        let mut resolved = Resolved::empty();
        build::<Counting>(pipeline, input, &mut resolved, &mut count)?;
        let (slots, resize, line) = state_sizes(&resolved)?;
        count.add::<u8>(slots[0])?;
        count.add::<u8>(slots[1])?;
        resize.count(&mut count)?;
        count.add::<u8>(line)?;
        Ok(count.total())
    }

    /// Compiles `pipeline` for `input` (raw pixels of one format and size)
    /// with every table, image and row in `arena`; nothing is allocated.
    pub fn new_in(
        arena: &mut Arena<'a>,
        pipeline: &Pipeline,
        input: InputDesc,
    ) -> Result<(ArenaPlan<'a>, ArenaPlanState<'a>)> {
        let resolved = arena.keep(Resolved::empty())?;
        let finish = build::<Borrowed<'a>>(pipeline, input, resolved, arena)?;
        let finisher = &*arena.keep(Finisher::new(&finish)?)?;
        let resolved = &*resolved;
        let (slots, resize, line) = state_sizes(resolved)?;
        let state = ArenaPlanState {
            slots: [arena.scratch(slots[0])?, arena.scratch(slots[1])?],
            resize: ArenaResizeState::in_arena(arena, resize)?,
            line: arena.scratch(line)?,
        };
        Ok((ArenaPlan { finisher, resolved }, state))
    }

    /// Runs the plan on `src` (the format and size it was compiled for) into
    /// `out`, returning where the output lies in the input.
    pub fn run(
        &self,
        state: &mut ArenaPlanState<'a>,
        src: ImageView<'_>,
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        let want = self.resolved.input;
        if src.format() != want.format {
            return Err(Error::FormatMismatch {
                expected: want.format,
                found: src.format(),
            });
        }
        if (src.width(), src.height()) != (want.width, want.height) {
            return Err(Error::SizeMismatch {
                expected: (want.width, want.height),
                found: (src.width(), src.height()),
            });
        }
        let ArenaPlanState {
            slots: [slot0, slot1],
            resize,
            line,
        } = state;
        self.resolved
            .execute(self.finisher, src, [slot0, slot1], resize, line, out)
    }

    /// The output tensor's shape (`[C, H, W]` or `[H, W, C]`).
    pub fn output_shape(&self) -> [usize; 3] {
        let (w, h) = self.resolved.geometry.output;
        self.finisher.output_shape(w, h)
    }

    /// Elements of the output tensor.
    pub fn output_len(&self) -> usize {
        self.output_shape().iter().product()
    }

    /// The output element type.
    pub fn dtype(&self) -> DType {
        self.finisher.spec().dtype
    }

    /// The output layout and channel order.
    pub fn layout(&self) -> (Layout, ChannelOrder) {
        (self.finisher.spec().layout, self.finisher.spec().order)
    }

    /// Where the output lies in the input.
    pub fn geometry(&self) -> Geometry {
        self.resolved.geometry
    }

    /// The pixel format and size the plan takes.
    pub fn input(&self) -> (PixelFormat, u32, u32) {
        let s = self.resolved.input;
        (s.format, s.width, s.height)
    }
}

/// The state's memory: the two slots' bytes, the resamplers' rows and the
/// line, as [`ArenaPlan::new_in`] takes them.
fn state_sizes<S: crate::arena::Storage>(
    r: &Resolved<S>,
) -> Result<([usize; 2], ResizeScratch, usize)> {
    let needs = r.needs()?;
    let slot = |b: u64| {
        usize::try_from(b).map_err(|_| Error::AllocationTooLarge {
            bytes: b,
            limit: usize::MAX as u64,
        })
    };
    Ok((
        [slot(r.slots[0])?, slot(r.slots[1])?],
        needs.resize,
        needs.line,
    ))
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::pipeline::{Op, Resize};
    use crate::resize::{Filter, Resample};
    use crate::size::SizeRule;
    use crate::{Quantization, Rect};

    fn pipeline(resample: Resample, out: u32) -> Pipeline {
        Pipeline::from_ops(&[
            Op::ConvertColor {
                to: PixelFormat::Rgb8,
                range: Default::default(),
            },
            Op::Crop(Rect::new(3, 1, 40, 30)),
            Op::Resize(Resize {
                size: SizeRule::Exact {
                    width: out,
                    height: out,
                },
                resample,
            }),
            Op::Layout {
                layout: Layout::Chw,
                order: ChannelOrder::Rgb,
            },
            Op::Cast {
                dtype: DType::U8,
                quantization: Quantization::IDENTITY,
            },
        ])
        .unwrap()
    }

    #[test]
    fn misuse_is_an_error_never_a_panic() {
        let input = InputDesc::pixels(PixelFormat::Yuyv, 48, 32);
        let p = pipeline(Resample::Pillow(Filter::Bicubic), 12);
        let needed = ArenaPlan::bytes_needed(&p, input).unwrap();
        let mut memory = alloc::vec![0u8; needed];
        // Too little memory: refused, naming the size.
        for short in [0, 1, needed / 2, needed - crate::arena::SLACK - 1] {
            let mut arena = Arena::new(&mut memory[..short]);
            assert!(matches!(
                ArenaPlan::new_in(&mut arena, &p, input),
                Err(Error::ArenaTooSmall { .. })
            ));
        }
        // No decoder in caller memory.
        assert!(ArenaPlan::bytes_needed(&p, InputDesc::Encoded).is_err());
        let mut arena = Arena::new(&mut memory);
        let (plan, mut state) = ArenaPlan::new_in(&mut arena, &p, input).unwrap();
        assert_eq!(plan.output_shape(), [3, 12, 12]);
        assert_eq!(plan.input(), (PixelFormat::Yuyv, 48, 32));
        let frame = [77u8; 48 * 32 * 2];
        let mut out = [0u8; 3 * 12 * 12];
        // Another format or size than compiled for, a tensor of the wrong length.
        let rgb = [0u8; 48 * 32 * 3];
        let wrong = ImageView::new(PixelFormat::Rgb8, 48, 32, &rgb).unwrap();
        assert!(matches!(
            plan.run(&mut state, wrong, TensorMut::U8(&mut out)),
            Err(Error::FormatMismatch { .. })
        ));
        let small = ImageView::new(PixelFormat::Yuyv, 46, 32, &frame).unwrap();
        assert!(matches!(
            plan.run(&mut state, small, TensorMut::U8(&mut out)),
            Err(Error::SizeMismatch { .. })
        ));
        let src = ImageView::new(PixelFormat::Yuyv, 48, 32, &frame).unwrap();
        assert!(
            plan.run(&mut state, src, TensorMut::U8(&mut out[1..]))
                .is_err()
        );
        plan.run(&mut state, src, TensorMut::U8(&mut out)).unwrap();
        // A larger plan run with a smaller plan's state: too little scratch,
        // an error rather than a write past the end.
        let big = pipeline(Resample::Pillow(Filter::Lanczos3), 24);
        let mut memory2 = alloc::vec![0u8; ArenaPlan::bytes_needed(&big, input).unwrap()];
        let mut arena2 = Arena::new(&mut memory2);
        let (big_plan, _) = ArenaPlan::new_in(&mut arena2, &big, input).unwrap();
        let mut big_out = [0u8; 3 * 24 * 24];
        assert!(matches!(
            big_plan.run(&mut state, src, TensorMut::U8(&mut big_out)),
            Err(Error::ArenaTooSmall { .. } | Error::BufferTooSmall { .. })
        ));
    }
}
