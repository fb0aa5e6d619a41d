//! Camera-frame preprocessing: the fused plan against the same steps as separate
//! eager ops, and (with `--features opencv`) against OpenCV's C++ API, all in one
//! run, frames interleaved so that machine noise hits every contestant alike.
//!
//! ```text
//! cargo run --release --example pixels                     # fused vs unfused
//! cargo run --release --example pixels --features opencv   # + OpenCV (libopencv-dev)
//! ```
//!
//! Every case turns a 1920x1080 frame (RGB or NV21, made from a real photo) into a
//! 224x224 ImageNet-normalized CHW float32 tensor. Prints per-frame p50 and p99
//! latency, and the ratios of the medians. A last race times the resamplers
//! alone (the RGB frame to 455x256): OpenCV `INTER_AREA` against
//! `INTER_LINEAR`, the same interleaving keeping the ratio steady on a noisy
//! machine.

use std::hint::black_box;

use tensorprep::color::{YuvRange, convert_color};
use tensorprep::finish::{ChannelOrder, FinishSpec, Finisher, Normalize};
use tensorprep::pipeline::{Input, InputDesc, Op, Pipeline, Plan, PlanState, Resize};
use tensorprep::resize::{Filter, Resample, ResizePlan, ResizeState, Resizer};
use tensorprep::size::{Rounding, SizeRule};
use tensorprep::{DType, Image, ImageView, Layout, PixelFormat, Quantization, TensorMut};
// (This package's library also carries the OpenCV reference, when its build script found OpenCV.)
use tensorprep_examples::race::{race, report};
use tensorprep_examples::{decode_fixture, nv21_from_rgb};

const W: u32 = 1920;
const H: u32 = 1080;
const FRAMES: usize = 300;

#[cfg(tp_opencv)]
mod opencv {
    unsafe extern "C" {
        /// `examples/opencv_ref.cpp`: cvtColor (NV21 only), resize, convertTo,
        /// per-channel normalize, split into CHW planes. 0 on success.
        pub(super) fn tp_opencv_ref(
            src: *const u8,
            nv21: i32,
            w: i32,
            h: i32,
            out_w: i32,
            out_h: i32,
            interpolation: i32,
            mean: *const f32,
            std: *const f32,
            out: *mut f32,
        ) -> i32;
    }
    /// OpenCV's `INTER_LINEAR` and `INTER_AREA` flags.
    pub(super) const INTER_LINEAR: i32 = 1;
    pub(super) const INTER_AREA: i32 = 3;
}

/// A 1920x1080 RGB frame made from the bundled photo (bilinear upscale).
fn rgb_frame() -> Image {
    let photo = decode_fixture("sklearn_china.jpg");
    tensorprep::resize::resize_owned(&photo.view(), W, H, Resample::default()).expect("resizes")
}

fn finish_ops() -> [Op; 3] {
    Op::finish(
        Normalize::IMAGENET,
        Layout::Chw,
        ChannelOrder::Rgb,
        DType::F32,
        Quantization::IDENTITY,
    )
}

/// The fused plan for `geometry` after an optional colour conversion.
fn plan(format: PixelFormat, range: YuvRange, geometry: &[Op]) -> Plan {
    let mut ops = Vec::new();
    if format != PixelFormat::Rgb8 {
        ops.push(Op::ConvertColor {
            to: PixelFormat::Rgb8,
            range,
        });
    }
    ops.extend_from_slice(geometry);
    ops.extend(finish_ops());
    Pipeline::from_ops(&ops)
        .and_then(|p| p.compile(InputDesc::pixels(format, W, H)))
        .expect("compiles")
}

/// The same steps as separate eager ops, each writing its own (reused) image.
struct Unfused {
    rgb: Image,
    resized: Image,
    resizer: Resizer,
    finisher: Finisher,
    resample: Resample,
    range: YuvRange,
    crop: Option<u32>,
}

impl Unfused {
    fn new(resized: (u32, u32), resample: Resample, range: YuvRange, crop: Option<u32>) -> Self {
        Unfused {
            rgb: Image::new(PixelFormat::Rgb8, W, H).expect("frame"),
            resized: Image::new(PixelFormat::Rgb8, resized.0, resized.1).expect("frame"),
            resizer: Resizer::new(),
            finisher: Finisher::new(&FinishSpec::imagenet()).expect("spec"),
            resample,
            range,
            crop,
        }
    }

    fn run(&mut self, src: &ImageView<'_>, out: &mut [f32]) -> tensorprep::Result<()> {
        let rgb = if src.format() == PixelFormat::Rgb8 {
            *src
        } else {
            convert_color(src, &mut self.rgb.view_mut(), self.range)?;
            self.rgb.view()
        };
        self.resizer
            .resize(&rgb, &mut self.resized.view_mut(), self.resample)?;
        let view = self.resized.view();
        let crop = match self.crop {
            Some(c) => tensorprep::geometry::center_crop(&view, c, c)?,
            None => view,
        };
        self.finisher.run(&crop, TensorMut::F32(out))
    }
}

/// Title, input format, YUV range, geometric ops, the unfused resize size and
/// centre crop, and the resampler.
type Case<'a> = (
    &'a str,
    PixelFormat,
    YuvRange,
    &'a [Op],
    (u32, u32),
    Option<u32>,
    Resample,
);

/// Largest difference between two ImageNet-normalized tensors, in 8-bit levels.
#[cfg_attr(not(tp_opencv), allow(dead_code))]
fn max_levels(a: &[f32], b: &[f32]) -> f64 {
    let hw = a.len() / 3;
    a.iter()
        .zip(b)
        .enumerate()
        .map(|(i, (x, y))| {
            f64::from((x - y).abs()) * 255.0 * f64::from(Normalize::IMAGENET.std[i / hw])
        })
        .fold(0.0, f64::max)
}

fn main() {
    let rgb = rgb_frame();
    // BT.601 limited range, what cameras and OpenCV use.
    let nv21 = nv21_from_rgb(&rgb, YuvRange::Limited);
    let nv21_view = nv21.view();
    let rgb_view = rgb.view();
    let one = 3 * 224 * 224;
    let to_224 = |resample| {
        [Op::Resize(Resize {
            size: SizeRule::Exact {
                width: 224,
                height: 224,
            },
            resample,
        })]
    };
    let eval = [
        Op::Resize(Resize {
            size: SizeRule::ShorterSide {
                size: 256,
                max_size: None,
                rounding: Rounding::Truncate,
            },
            resample: Resample::Pillow(Filter::Bilinear),
        }),
        Pipeline::imagenet_eval().ops()[2],
    ];
    println!("{FRAMES} frames of {W}x{H} per contestant, one thread, interleaved");
    if cfg!(feature = "opencv") && !cfg!(tp_opencv) {
        println!("(built with --features opencv, but OpenCV 4 was not found at build time)");
    }

    let cases: [Case<'_>; 4] = [
        (
            "RGB -> Resize 224x224 (Pillow bilinear) -> CHW f32",
            PixelFormat::Rgb8,
            YuvRange::Full,
            &to_224(Resample::Pillow(Filter::Bilinear)),
            (224, 224),
            None,
            Resample::Pillow(Filter::Bilinear),
        ),
        (
            "RGB -> Resize(256) + CenterCrop(224) -> CHW f32",
            PixelFormat::Rgb8,
            YuvRange::Full,
            &eval,
            (455, 256),
            Some(224),
            Resample::Pillow(Filter::Bilinear),
        ),
        (
            "NV21 -> RGB -> Resize 224x224 (Pillow bilinear) -> CHW f32",
            PixelFormat::Nv21,
            YuvRange::Limited,
            &to_224(Resample::Pillow(Filter::Bilinear)),
            (224, 224),
            None,
            Resample::Pillow(Filter::Bilinear),
        ),
        (
            "NV21 -> RGB -> Resize 224x224 (OpenCV INTER_LINEAR) -> CHW f32",
            PixelFormat::Nv21,
            YuvRange::Limited,
            &to_224(Resample::OpenCvLinear),
            (224, 224),
            None,
            Resample::OpenCvLinear,
        ),
    ];
    for (title, format, range, geometry, resized, crop, resample) in cases {
        let src = if format == PixelFormat::Rgb8 {
            rgb_view
        } else {
            nv21_view
        };
        let plan = plan(format, range, geometry);
        let mut state = PlanState::new();
        let mut unfused = Unfused::new(resized, resample, range, crop);
        let (mut fused_out, mut unfused_out) = (vec![0f32; one], vec![0f32; one]);
        #[cfg(tp_opencv)]
        let mut cv_out = vec![0f32; one];
        #[cfg(tp_opencv)]
        let mut cv_area_out = vec![0f32; one];
        let mut fused = || {
            plan.run(
                &mut state,
                Input::Pixels(src),
                TensorMut::F32(&mut fused_out),
            )
            .expect("runs");
            black_box(&fused_out);
        };
        let mut eager = || {
            unfused.run(&src, &mut unfused_out).expect("runs");
            black_box(&unfused_out);
        };
        #[allow(unused_mut)]
        let mut contestants: Vec<(&str, &mut dyn FnMut())> = vec![
            ("fused plan (Plan::run)", &mut fused),
            ("unfused eager ops, buffers reused", &mut eager),
        ];
        #[cfg(tp_opencv)]
        let cv = |interpolation: i32, out: &mut [f32]| {
            let n = Normalize::IMAGENET;
            // SAFETY: `src` holds the whole frame (NV21: w*h*3/2 bytes; RGB:
            // w*h*3, tight), `out` holds 3*224*224 floats, mean/std 3 floats each.
            let rc = unsafe {
                opencv::tp_opencv_ref(
                    src.plane(0).data.as_ptr(),
                    i32::from(format == PixelFormat::Nv21),
                    W as i32,
                    H as i32,
                    224,
                    224,
                    interpolation,
                    n.mean.as_ptr(),
                    n.std.as_ptr(),
                    out.as_mut_ptr(),
                )
            };
            assert_eq!(rc, 0, "OpenCV reference failed");
            black_box(out);
        };
        #[cfg(tp_opencv)]
        let mut cv_linear = || cv(opencv::INTER_LINEAR, &mut cv_out);
        #[cfg(tp_opencv)]
        let mut cv_area = || cv(opencv::INTER_AREA, &mut cv_area_out);
        #[cfg(tp_opencv)]
        if crop.is_none() {
            contestants.push(("OpenCV C++ INTER_LINEAR", &mut cv_linear));
            contestants.push(("OpenCV C++ INTER_AREA", &mut cv_area));
        }
        let t = race(&mut contestants, FRAMES);
        drop(contestants);
        report(title, &t);
        let same = fused_out
            .iter()
            .zip(&unfused_out)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        println!("  fused output identical to unfused: {same}");
        #[cfg(tp_opencv)]
        if crop.is_none() {
            let mut o = vec![0f32; one];
            let interp = if resample == Resample::OpenCvLinear {
                opencv::INTER_LINEAR
            } else {
                opencv::INTER_AREA
            };
            cv(interp, &mut o);
            println!(
                "  fused vs OpenCV {}: max difference {:.2} levels",
                if interp == opencv::INTER_LINEAR {
                    "INTER_LINEAR"
                } else {
                    "INTER_AREA (a different filter)"
                },
                max_levels(&fused_out, &o)
            );
        }
        assert!(same, "{title}: the fused plan must equal the eager ops");
    }
    resamplers_alone(&rgb_view);
}

/// The RGB frame to 455x256 by each OpenCV resampler alone, interleaved.
fn resamplers_alone(src: &ImageView<'_>) {
    let (w, h) = (455, 256);
    // Each contestant with its plan, state and output.
    let contestant = |resample| {
        let plan = ResizePlan::new((W, H), (w, h), resample).expect("plan");
        let mut state = ResizeState::new();
        let mut out = Image::new(PixelFormat::Rgb8, w, h).expect("image");
        move || {
            plan.run(&mut state, src, &mut out.view_mut())
                .expect("runs");
            black_box(out.as_bytes());
        }
    };
    let mut linear = contestant(Resample::OpenCvLinear);
    let mut area = contestant(Resample::OpenCvArea);
    let t = race(
        &mut [
            ("OpenCV INTER_LINEAR", &mut linear),
            ("OpenCV INTER_AREA (fractional: 4.22x)", &mut area),
        ],
        FRAMES,
    );
    report(&format!("RGB {W}x{H} -> {w}x{h}, the resampler alone"), &t);
}
