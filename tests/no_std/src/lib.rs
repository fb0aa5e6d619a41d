//! Calls the core ops from a `#![no_std]` static library.
#![no_std]

use core::panic::PanicInfo;

use tensorprep::color::{YuvRange, convert_color};
use tensorprep::finish::{FinishSpec, Finisher};
use tensorprep::geometry::{Rotation, center_crop, rotate};
use tensorprep::size::SizeRule;
use tensorprep::{ImageView, ImageViewMut, PixelFormat, TensorMut};

/// A pipeline description without an allocator: a fixed-capacity op list.
#[unsafe(no_mangle)]
pub extern "C" fn tp_no_std_pipeline_ops() -> u32 {
    use tensorprep::pipeline::{MAX_OPS, Op, Pipeline};
    let mut p = Pipeline::imagenet_eval();
    let mut pushed = 0;
    while p
        .push(Op::Flip(tensorprep::geometry::Flip::Horizontal))
        .is_ok()
    {
        pushed += 1;
    }
    // The eval preset's six ops, then flips up to the capacity.
    if p.ops().len() == MAX_OPS && pushed == MAX_OPS - 6 {
        p.ops().len() as u32
    } else {
        0
    }
}

#[panic_handler]
fn panic(_: &PanicInfo<'_>) -> ! {
    loop {}
}

/// NV21 frame -> RGB -> rotate -> center crop -> normalized CHW f32, all on the stack.
#[unsafe(no_mangle)]
pub extern "C" fn tp_no_std_check(seed: u8) -> f32 {
    let mut frame = [0u8; 8 * 8 * 3 / 2];
    for (i, v) in frame.iter_mut().enumerate() {
        *v = seed.wrapping_add(i as u8);
    }
    let Ok(src) = ImageView::new(PixelFormat::Nv21, 8, 8, &frame) else {
        return -1.0;
    };
    let mut rgb = [0u8; 8 * 8 * 3];
    let mut rotated = [0u8; 8 * 8 * 3];
    let mut tensor = [0f32; 3 * 4 * 4];
    let result = (|| {
        convert_color(
            &src,
            &mut ImageViewMut::new(PixelFormat::Rgb8, 8, 8, &mut rgb)?,
            YuvRange::Full,
        )?;
        let rgb_view = ImageView::new(PixelFormat::Rgb8, 8, 8, &rgb)?;
        rotate(
            &rgb_view,
            &mut ImageViewMut::new(PixelFormat::Rgb8, 8, 8, &mut rotated)?,
            Rotation::Cw90,
        )?;
        let rotated = ImageView::new(PixelFormat::Rgb8, 8, 8, &rotated)?;
        let (w, h) = SizeRule::ShorterSide {
            size: 4,
            max_size: None,
            rounding: tensorprep::size::Rounding::Truncate,
        }
        .output_size(8, 8)?;
        let crop = center_crop(&rotated, w, h)?;
        Finisher::new(&FinishSpec::imagenet())?.run(&crop, TensorMut::F32(&mut tensor))
    })();
    match result {
        Ok(()) => tensor.iter().sum(),
        Err(_) => -1.0,
    }
}

#[cfg(feature = "alloc")]
mod with_alloc {
    extern crate alloc;

    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::UnsafeCell;
    use core::sync::atomic::{AtomicUsize, Ordering};

    use tensorprep::jpeg::{DecodeOptions, JpegDecoder};
    use tensorprep::resize::{Filter, Resample, resize_owned};

    /// A bump allocator over a static arena: enough for the check, never frees.
    struct Bump {
        arena: UnsafeCell<[u8; 1 << 22]>,
        next: AtomicUsize,
    }

    // SAFETY: `next` is advanced atomically, so no two allocations overlap.
    unsafe impl Sync for Bump {}

    // SAFETY: returns disjoint, aligned ranges of the arena, or null when it is full.
    unsafe impl GlobalAlloc for Bump {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let base = self.arena.get() as usize;
            let mut start = 0;
            let reserved = self
                .next
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    start = (base + n).next_multiple_of(layout.align()) - base;
                    let end = start.checked_add(layout.size())?;
                    (end <= 1 << 22).then_some(end)
                });
            match reserved {
                Ok(_) => (base + start) as *mut u8,
                Err(_) => core::ptr::null_mut(),
            }
        }
        unsafe fn dealloc(&self, _: *mut u8, _: Layout) {}
    }

    #[global_allocator]
    static ALLOC: Bump = Bump {
        arena: UnsafeCell::new([0; 1 << 22]),
        next: AtomicUsize::new(0),
    };

    /// Decodes a JPEG or a PNG (the format found from the bytes) and resizes
    /// it with the alloc-only ops.
    #[unsafe(no_mangle)]
    pub extern "C" fn tp_no_std_alloc_check(data: *const u8, len: usize) -> u32 {
        if data.is_null() {
            return 0;
        }
        // SAFETY: the caller passes a readable buffer of `len` bytes.
        let bytes = unsafe { core::slice::from_raw_parts(data, len) };
        let Ok(img) = tensorprep::decode::ImageDecoder::new(DecodeOptions::default()).decode(bytes)
        else {
            return 0;
        };
        let _ = JpegDecoder::new(DecodeOptions::default());
        let small = resize_owned(&img.view(), 16, 16, Resample::Pillow(Filter::Bilinear));
        let _ = alloc::vec![0u8; 1];
        small.map_or(0, |s| s.as_bytes().iter().map(|&v| u32::from(v)).sum())
    }
}

/// An RGB565 frame -> Pillow bilinear 4x4 -> int8 HWC through a plan whose
/// tables, images and rows live in a buffer on the stack (no allocator).
/// Returns the first quantized value, or -128 on any error.
#[unsafe(no_mangle)]
pub extern "C" fn tp_no_std_arena_plan(seed: u8) -> i8 {
    use tensorprep::arena::Arena;
    use tensorprep::finish::{ChannelOrder, Normalize};
    use tensorprep::pipeline::{ArenaPlan, InputDesc, Op, Pipeline, Resize};
    use tensorprep::resize::{Filter, Resample};
    use tensorprep::{DType, Quantization};
    let mut frame = [0u8; 16 * 12 * 2];
    for (i, v) in frame.iter_mut().enumerate() {
        *v = seed.wrapping_add(i as u8);
    }
    let result = (|| {
        let pipeline = Pipeline::from_ops(&[
            Op::ConvertColor {
                to: PixelFormat::Rgb8,
                range: YuvRange::Full,
            },
            Op::Resize(Resize {
                size: SizeRule::Exact {
                    width: 4,
                    height: 4,
                },
                resample: Resample::Pillow(Filter::Bilinear),
            }),
            Op::Normalize(Normalize::UNIT),
            Op::Layout {
                layout: tensorprep::Layout::Hwc,
                order: ChannelOrder::Rgb,
            },
            Op::Cast {
                dtype: DType::I8,
                quantization: Quantization {
                    scale: 1.0 / 255.0,
                    zero_point: -128,
                },
            },
        ])?;
        let input = InputDesc::pixels(PixelFormat::Rgb565Le, 16, 12);
        let mut memory = [0u8; 8192];
        let needed = ArenaPlan::bytes_needed(&pipeline, input)?;
        let mut arena = Arena::new(&mut memory[..needed.min(8192)]);
        let (plan, mut state) = ArenaPlan::new_in(&mut arena, &pipeline, input)?;
        let src = ImageView::new(PixelFormat::Rgb565Le, 16, 12, &frame)?;
        let mut out = [0i8; 4 * 4 * 3];
        plan.run(&mut state, src, TensorMut::I8(&mut out))?;
        Ok::<i8, tensorprep::Error>(out[0])
    })();
    result.unwrap_or(-128)
}
