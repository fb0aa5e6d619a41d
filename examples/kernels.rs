//! The vector kernels, each timed against its reference in one run: calls
//! interleaved (see `race.rs`), so that the ratios hold on a noisy machine
//! where absolute times do not.
//!
//! ```text
//! cargo run --release --example kernels            # every race, about 25 s
//! cargo run --release --example kernels -- 3       # three times as many rounds
//! ```
//!
//! Each line gives the kernel's median, its reference's median (same run), the
//! ratio and the target it is held to:
//!
//! - the finish pass (normalize + layout + cast to f32) on a 224x224 crop:
//!   its bandwidth as a fraction of a memcpy writing the same tensor;
//! - OpenCV `INTER_AREA`'s fractional path against `INTER_LINEAR`, 1080p RGB
//!   to 455x256 (OpenCV's own two paths differ by about as much);
//! - `Resample::FastImageResize` against the `fast_image_resize` crate itself,
//!   same filter, same images;
//! - packed colour moves and full-range NV21 as fractions of a memcpy of the
//!   bytes they write;
//! - float32 resizing (a depth map) against the crate's `F32` convolution.
//!
//! The reduced-size JPEG decoding is compared with Pillow's `draft()`, which
//! only Python can run: `ffi/python/bench.py`.

use std::hint::black_box;

use fast_image_resize::images::{Image as FirImage, ImageRef as FirImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions};
use tensorprep::color::{YuvRange, convert_color};
use tensorprep::finish::{FinishSpec, Finisher};
use tensorprep::geometry::center_crop;
use tensorprep::resize::{
    Filter, FloatImage, FloatResizer, FloatView, Resample, ResizePlan, ResizeState, resize_owned,
};
use tensorprep::{Image, ImageView, ImageViewMut, Layout, PixelFormat, TensorMut};
use tensorprep_examples::race::{Timings, race};
use tensorprep_examples::{decode_fixture, nv21_from_rgb};

/// How a kernel's time relates to its reference's, and the bound it is held to.
#[derive(Clone, Copy)]
enum Target {
    /// The kernel's bandwidth as a fraction of the reference's (reference
    /// time over kernel time): at least this much. `None`: no target, shown
    /// for scale.
    Bandwidth(Option<f64>),
    /// The kernel's time as a multiple of the reference's: at most this much.
    TimeWithin(Option<f64>),
}

/// One printed line: the race's two timings and what the ratio must be.
struct Line {
    title: String,
    target: Target,
    t: Vec<Timings>,
}

impl Line {
    fn print(&self) {
        let (k, r) = (self.t[0].percentile(0.5), self.t[1].percentile(0.5));
        let (kind, ratio, goal) = match self.target {
            Target::Bandwidth(g) => ("bandwidth", r / k, g.map(|g| (r / k >= g, ">=", g))),
            Target::TimeWithin(g) => ("time", k / r, g.map(|g| (k / r <= g, "<=", g))),
        };
        let goal = goal.map_or(String::from("(for scale)"), |(ok, op, g)| {
            format!("target {op} {g}x: {}", if ok { "met" } else { "MISSED" })
        });
        println!("{}", self.title);
        println!(
            "  {:<38} {:>8.4} ms   {:<34} {:>8.4} ms   {kind} {ratio:>5.2}x  {goal}",
            self.t[0].name, k, self.t[1].name, r
        );
    }
}

/// The bundled photo (640x427 RGB) and a 1920x1080 frame made from it.
fn images() -> (Image, Image) {
    let photo = decode_fixture("sklearn_china.jpg");
    let frame = resize_owned(&photo.view(), 1920, 1080, Resample::Pillow(Filter::Bicubic))
        .expect("resizes");
    (photo, frame)
}

/// `kernel` raced against a memcpy of the `n` elements it writes.
fn against_memcpy<T: Copy + 'static>(
    (name, kernel): (&str, &mut dyn FnMut()),
    n: usize,
    value: T,
    rounds: usize,
) -> Vec<Timings> {
    let (mut copy, reference) = (vec![value; n], vec![value; n]);
    let mut memcpy = || {
        copy.copy_from_slice(black_box(&reference));
        black_box(&copy);
    };
    race(
        &mut [(name, kernel), ("memcpy of the same output", &mut memcpy)],
        rounds,
    )
}

/// The finish pass on a 224x224 crop of `photo` against a memcpy of the tensor.
fn finish(photo: &Image, layout: Layout, rounds: usize) -> Line {
    let spec = FinishSpec {
        layout,
        ..FinishSpec::imagenet()
    };
    let finisher = Finisher::new(&spec).expect("spec");
    let crop = center_crop(&photo.view(), 224, 224).expect("crop");
    let n = finisher.output_len(224, 224);
    let mut tensor = vec![0f32; n];
    let mut kernel = || {
        finisher
            .run(black_box(&crop), TensorMut::F32(&mut tensor))
            .expect("runs");
        black_box(&tensor);
    };
    let t = against_memcpy(("finish", &mut kernel), n, 1f32, rounds);
    Line {
        title: format!("finish: 224x224 crop -> ImageNet-normalized f32 {layout:?}"),
        target: Target::Bandwidth(Some(0.5)),
        t,
    }
}

/// Two resamplers on the same image to the same size, interleaved.
fn resamplers(
    title: String,
    src: &Image,
    (w, h): (u32, u32),
    contestants: [(&'static str, Resample); 2],
    target: Target,
    rounds: usize,
) -> Line {
    let runner = |resample| {
        let plan = ResizePlan::new((src.width(), src.height()), (w, h), resample).expect("plan");
        let mut state = ResizeState::new();
        let mut out = Image::new(src.format(), w, h).expect("image");
        let view = src.view();
        move || {
            plan.run(&mut state, &view, &mut out.view_mut())
                .expect("runs");
            black_box(out.as_bytes());
        }
    };
    let (mut a, mut b) = (runner(contestants[0].1), runner(contestants[1].1));
    let t = race(
        &mut [(contestants[0].0, &mut a), (contestants[1].0, &mut b)],
        rounds,
    );
    Line { title, target, t }
}

/// `Resample::FastImageResize(filter)` against the crate with its filter of
/// the same name, `src` to `w`x`h`.
fn fast_image_resize(
    src: &Image,
    (w, h): (u32, u32),
    (filter, fir_filter): (Filter, FilterType),
    rounds: usize,
) -> Line {
    let plan = ResizePlan::new(
        (src.width(), src.height()),
        (w, h),
        Resample::FastImageResize(filter),
    )
    .expect("plan");
    let mut state = ResizeState::new();
    let mut ours = Image::new(PixelFormat::Rgb8, w, h).expect("image");
    let fir_src = FirImageRef::new(src.width(), src.height(), src.as_bytes(), PixelType::U8x3)
        .expect("image");
    let mut fir_dst = FirImage::new(w, h, PixelType::U8x3);
    let mut fir = fast_image_resize::Resizer::new();
    let opts = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(fir_filter));
    let t = race(
        &mut [
            ("tensorprep, the crate's arithmetic", &mut || {
                plan.run(&mut state, &src.view(), &mut ours.view_mut())
                    .expect("runs");
                black_box(ours.as_bytes());
            }),
            ("fast_image_resize 6.1", &mut || {
                fir.resize(&fir_src, &mut fir_dst, &opts).expect("resizes");
                black_box(fir_dst.buffer());
            }),
        ],
        rounds,
    );
    let same = ours.as_bytes() == fir_dst.buffer();
    assert!(same, "the family must equal the crate byte for byte");
    Line {
        title: format!(
            "fast_image_resize family, {filter:?}: {}x{} RGB -> {w}x{h}",
            src.width(),
            src.height()
        ),
        target: Target::TimeWithin(Some(1.0)),
        t,
    }
}

/// A colour conversion of the photo against a memcpy of the bytes it writes.
fn color(
    title: String,
    src: &ImageView<'_>,
    to: PixelFormat,
    range: YuvRange,
    rounds: usize,
) -> Line {
    let (w, h) = (src.width(), src.height());
    let n = (w * h) as usize * to.bytes_per_pixel().expect("a packed format");
    let mut out = vec![0u8; n];
    let mut kernel = || {
        let mut dst = ImageViewMut::new(to, w, h, &mut out).expect("view");
        convert_color(black_box(src), &mut dst, range).expect("converts");
        black_box(&out);
    };
    let t = against_memcpy(("convert_color", &mut kernel), n, 1u8, rounds);
    Line {
        title,
        target: Target::Bandwidth(None),
        t,
    }
}

/// A 1920x1080 float32 depth map (from the frame's luma) to 455x256 with
/// Pillow's `F` bilinear, against the crate's `F32` bilinear convolution.
fn float(frame: &Image, rounds: usize) -> Line {
    let (sw, sh, dw, dh) = (1920, 1080, 455, 256);
    let depth: Vec<f32> = frame
        .as_bytes()
        .chunks_exact(3)
        .map(|p| 1.0 / (0.1 + f32::from(p[1]) / 255.0))
        .collect();
    let src = FloatView::new(&depth[..], sw, sh, 1).expect("view");
    let mut out = FloatImage::zeros(dw, dh, 1).expect("image");
    let mut resizer = FloatResizer::new();
    let bytes: Vec<u8> = depth.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let fir_src = FirImageRef::new(sw, sh, &bytes, PixelType::F32).expect("image");
    let mut fir_dst = FirImage::new(dw, dh, PixelType::F32);
    let mut fir = fast_image_resize::Resizer::new();
    let opts = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
    let t = race(
        &mut [
            ("tensorprep, Pillow's F bilinear", &mut || {
                resizer
                    .resize(
                        &src,
                        &mut out.view_mut(),
                        Resample::Pillow(Filter::Bilinear),
                    )
                    .expect("resizes");
                black_box(&out);
            }),
            ("fast_image_resize F32 bilinear", &mut || {
                fir.resize(&fir_src, &mut fir_dst, &opts).expect("resizes");
                black_box(fir_dst.buffer());
            }),
        ],
        rounds,
    );
    Line {
        title: "float32 resize: 1920x1080 depth map -> 455x256".into(),
        target: Target::TimeWithin(None),
        t,
    }
}

fn main() {
    let scale: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("the argument is a round multiplier"))
        .unwrap_or(1);
    let (photo, frame) = images();
    let big = (455, 256);
    let bgra = {
        let mut out = Image::new(PixelFormat::Bgra8, photo.width(), photo.height()).expect("image");
        convert_color(&photo.view(), &mut out.view_mut(), YuvRange::Full).expect("converts");
        out
    };
    let nv21 = nv21_from_rgb(&photo, YuvRange::Full);
    println!("median per call; each pair interleaved call by call, {scale}x the default rounds");
    let lines = [
        finish(&photo, Layout::Chw, 8000 * scale),
        finish(&photo, Layout::Hwc, 8000 * scale),
        resamplers(
            "OpenCV INTER_AREA (fractional, 4.22x): 1920x1080 RGB -> 455x256".into(),
            &frame,
            big,
            [
                ("INTER_AREA", Resample::OpenCvArea),
                ("INTER_LINEAR", Resample::OpenCvLinear),
            ],
            Target::TimeWithin(Some(2.0)),
            1800 * scale,
        ),
        fast_image_resize(
            &frame,
            big,
            (Filter::Bilinear, FilterType::Bilinear),
            1800 * scale,
        ),
        fast_image_resize(
            &frame,
            big,
            (Filter::Lanczos3, FilterType::Lanczos3),
            800 * scale,
        ),
        color(
            "packed colour: BGRA -> RGB, 640x427".into(),
            &bgra.view(),
            PixelFormat::Rgb8,
            YuvRange::Full,
            8000 * scale,
        ),
        color(
            "full-range YUV: NV21 -> RGB, 640x426".into(),
            &nv21.view(),
            PixelFormat::Rgb8,
            YuvRange::Full,
            8000 * scale,
        ),
        float(&frame, 800 * scale),
    ];
    println!();
    for line in &lines {
        line.print();
    }
}
