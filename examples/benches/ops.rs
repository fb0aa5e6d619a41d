//! Throughput of the eager ops on real photos, each beside a reference measured in
//! the same run: the underlying or a peer crate called directly (decode, resize) or a memcpy
//! of the bytes the op writes (colour conversion, finish kernel).
//!
//! `cargo bench -p tensorprep-benches --bench ops`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fast_image_resize::images::{Image as FirImage, ImageRef as FirImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions};
use tensorprep::color::{YuvRange, convert_color};
use tensorprep::finish::{FinishSpec, Finisher};
use tensorprep::geometry::center_crop;
use tensorprep::jpeg::{Backend, DecodeOptions, JpegDecoder, Scale};
use tensorprep::resize::{Filter, Resample, ResizePlan, ResizeState, Resizer, Simd, resize_owned};
use tensorprep::{Image, ImageView, ImageViewMut, PixelFormat, TensorMut};
use tensorprep_examples::{decode_fixture, fixture, nv21_from_rgb};

/// A photo enlarged (Pillow's bicubic) to a `w`x`h` frame.
fn enlarge(photo: &Image, w: u32, h: u32) -> Image {
    resize_owned(&photo.view(), w, h, Resample::Pillow(Filter::Bicubic)).unwrap()
}

fn bench_decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for name in [
        "sample.jpg",
        "sklearn_china.jpg",
        "exif_orient6_grace_hopper.jpg",
    ] {
        let bytes = fixture(name);
        let img = decode_fixture(name);
        g.throughput(Throughput::Bytes(img.as_bytes().len() as u64));
        let mut out = Image::new(PixelFormat::Rgb8, img.width(), img.height()).unwrap();
        for backend in Backend::available() {
            let mut decoder = JpegDecoder::new(DecodeOptions {
                backend,
                ..DecodeOptions::default()
            });
            g.bench_function(
                BenchmarkId::new(format!("tensorprep {backend:?}"), name),
                |b| {
                    b.iter(|| {
                        decoder
                            .decode_into(black_box(&bytes), &mut out.view_mut())
                            .unwrap()
                    })
                },
            );
        }
        if Backend::LibjpegTurbo.is_available() {
            // DCT-domain reduced-size decoding (the pipeline's opt-in fast mode).
            for scale in [Scale::Half, Scale::Quarter] {
                let mut decoder = JpegDecoder::new(DecodeOptions {
                    backend: Backend::LibjpegTurbo,
                    scale,
                    ..DecodeOptions::default()
                });
                let info = decoder.read_info(&bytes).unwrap();
                let mut small = Image::new(PixelFormat::Rgb8, info.width, info.height).unwrap();
                g.bench_function(
                    BenchmarkId::new(format!("tensorprep LibjpegTurbo {scale:?}"), name),
                    |b| {
                        b.iter(|| {
                            decoder
                                .decode_into(black_box(&bytes), &mut small.view_mut())
                                .unwrap()
                        })
                    },
                );
            }
        }
        let mut raw = vec![0u8; img.as_bytes().len()];
        g.bench_function(BenchmarkId::new("zune-jpeg direct", name), |b| {
            b.iter(|| {
                let opts = zune_core::options::DecoderOptions::new_safe().set_strict_mode(true);
                let mut d = zune_jpeg::JpegDecoder::new_with_options(
                    zune_core::bytestream::ZCursor::new(black_box(&bytes[..])),
                    opts,
                );
                d.decode_into(&mut raw).unwrap()
            })
        });
    }
    g.finish();
}

fn bench_resize(c: &mut Criterion) {
    // The case: a 1080p RGB frame (a real photo enlarged) to 455x256.
    let photo = decode_fixture("sklearn_china.jpg");
    let frame = enlarge(&photo, 1920, 1080);
    for (img, (w, h)) in [(&frame, (455u32, 256u32)), (&photo, (256, 171))] {
        let name = format!("resize {}x{}->{w}x{h} rgb", img.width(), img.height());
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(u64::from(w * h * 3)));
        let mut out = Image::new(PixelFormat::Rgb8, w, h).unwrap();
        let mut state = ResizeState::new();
        let src_size = (img.width(), img.height());
        for (label, resample) in [
            ("bilinear", Resample::Pillow(Filter::Bilinear)),
            ("lanczos3", Resample::Pillow(Filter::Lanczos3)),
        ] {
            for simd in Simd::available().rev() {
                let plan = ResizePlan::new(src_size, (w, h), resample)
                    .and_then(|p| p.with_simd(simd))
                    .unwrap();
                g.bench_function(format!("tensorprep {label} {simd:?}"), |b| {
                    b.iter(|| {
                        plan.run(&mut state, &img.view(), &mut out.view_mut())
                            .unwrap()
                    })
                });
            }
        }
        for (label, resample) in [
            ("opencv-linear", Resample::OpenCvLinear),
            ("opencv-area", Resample::OpenCvArea),
            ("torch-bilinear", Resample::Torch(Filter::Bilinear)),
            (
                "torch-float-bilinear",
                Resample::TorchFloat(Filter::Bilinear),
            ),
            ("libyuv-bilinear", Resample::LibyuvBilinear),
            ("fir-bilinear", Resample::FastImageResize(Filter::Bilinear)),
            ("fir-lanczos3", Resample::FastImageResize(Filter::Lanczos3)),
        ] {
            let plan = ResizePlan::new(src_size, (w, h), resample).unwrap();
            g.bench_function(format!("tensorprep {label}"), |b| {
                b.iter(|| {
                    plan.run(&mut state, &img.view(), &mut out.view_mut())
                        .unwrap()
                })
            });
        }
        let src =
            FirImageRef::new(img.width(), img.height(), img.as_bytes(), PixelType::U8x3).unwrap();
        let mut dst = FirImage::new(w, h, PixelType::U8x3);
        let mut fir = fast_image_resize::Resizer::new();
        for (label, filter) in [
            ("fast_image_resize bilinear", FilterType::Bilinear),
            ("fast_image_resize lanczos3", FilterType::Lanczos3),
        ] {
            let opts = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(filter));
            g.bench_function(label, |b| {
                b.iter(|| fir.resize(&src, &mut dst, &opts).unwrap())
            });
        }
        g.finish();
    }
}

/// Each pass of the exact resampler alone (1080p RGB to 455x256 splits into these
/// two), against fast_image_resize doing the same one-dimensional resize.
fn bench_resize_passes(c: &mut Criterion) {
    let photo = decode_fixture("sklearn_china.jpg");
    for (label, (sw, sh), (dw, dh)) in [
        (
            "horizontal pass only",
            (1920u32, 1080u32),
            (455u32, 1080u32),
        ),
        ("vertical pass only", (455, 1080), (455, 256)),
    ] {
        let src = enlarge(&photo, sw, sh);
        let mut g = c.benchmark_group(format!("resize {sw}x{sh}->{dw}x{dh} rgb ({label})"));
        g.throughput(Throughput::Bytes(u64::from(dw * dh * 3)));
        let mut out = Image::new(PixelFormat::Rgb8, dw, dh).unwrap();
        let mut state = ResizeState::new();
        for simd in Simd::available().rev() {
            let plan = ResizePlan::new((sw, sh), (dw, dh), Resample::Pillow(Filter::Bilinear))
                .and_then(|p| p.with_simd(simd))
                .unwrap();
            g.bench_function(format!("tensorprep bilinear {simd:?}"), |b| {
                b.iter(|| {
                    plan.run(&mut state, &src.view(), &mut out.view_mut())
                        .unwrap()
                })
            });
        }
        let fsrc = FirImageRef::new(sw, sh, src.as_bytes(), PixelType::U8x3).unwrap();
        let mut fdst = FirImage::new(dw, dh, PixelType::U8x3);
        let mut fir = fast_image_resize::Resizer::new();
        let opts = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
        g.bench_function("fast_image_resize bilinear", |b| {
            b.iter(|| fir.resize(&fsrc, &mut fdst, &opts).unwrap())
        });
        g.finish();
    }
}

/// A 1920x1080 one-channel float32 "depth map" (from a photo's luma) to
/// 455x256: Pillow's `F` arithmetic and PyTorch's float one against
/// fast_image_resize's `F32` convolution in the same run.
fn bench_resize_f32(c: &mut Criterion) {
    use tensorprep::resize::{FloatImage, FloatResizer, FloatView};
    let photo = decode_fixture("sklearn_china.jpg");
    let (sw, sh, dw, dh) = (1920u32, 1080u32, 455u32, 256u32);
    let mut gray = Image::new(PixelFormat::Gray8, sw, sh).unwrap();
    let big = enlarge(&photo, sw, sh);
    tensorprep::color::convert_color(
        &big.view(),
        &mut gray.view_mut(),
        tensorprep::color::YuvRange::Full,
    )
    .unwrap();
    let depth: Vec<f32> = gray
        .as_bytes()
        .iter()
        .map(|&v| 1.0 / (0.1 + f32::from(v) / 255.0))
        .collect();
    let src = FloatView::new(&depth, sw, sh, 1).unwrap();
    let mut g = c.benchmark_group(format!("resize f32 {sw}x{sh}->{dw}x{dh} 1 channel"));
    g.throughput(Throughput::Bytes(u64::from(dw * dh * 4)));
    let mut out = FloatImage::zeros(dw, dh, 1).unwrap();
    for (label, resample) in [
        (
            "tensorprep Pillow F bilinear",
            Resample::Pillow(Filter::Bilinear),
        ),
        (
            "tensorprep PyTorch float bilinear",
            Resample::TorchFloat(Filter::Bilinear),
        ),
    ] {
        let mut resizer = FloatResizer::new();
        g.bench_function(label, |b| {
            b.iter(|| resizer.resize(&src, &mut out.view_mut(), resample).unwrap())
        });
    }
    // fast_image_resize takes the samples as bytes (a copy, made once).
    let bytes: Vec<u8> = depth.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let fsrc = FirImageRef::new(sw, sh, &bytes, PixelType::F32).unwrap();
    let mut fdst = FirImage::new(dw, dh, PixelType::F32);
    let mut fir = fast_image_resize::Resizer::new();
    let opts = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
    g.bench_function("fast_image_resize F32 bilinear", |b| {
        b.iter(|| fir.resize(&fsrc, &mut fdst, &opts).unwrap())
    });
    g.finish();
}

fn bench_color(c: &mut Criterion) {
    // The photo as a camera frame, full-range BT.601.
    let frame = nv21_from_rgb(&decode_fixture("sklearn_china.jpg"), YuvRange::Full);
    let (w, h, src) = (frame.width(), frame.height(), frame.view());
    let mut g = c.benchmark_group("convert_color 640x426");
    let bytes = (w * h * 3) as usize;
    g.throughput(Throughput::Bytes(bytes as u64));
    let mut out = vec![0u8; bytes];
    g.bench_function("nv21->rgb", |b| {
        b.iter(|| {
            convert_color(
                &src,
                &mut ImageViewMut::new(PixelFormat::Rgb8, w, h, &mut out).unwrap(),
                YuvRange::Full,
            )
            .unwrap()
        })
    });
    let rgb = decode_fixture("sklearn_china.jpg");
    let rgb = rgb.view().crop(tensorprep::Rect::new(0, 0, w, h)).unwrap();
    g.bench_function("rgb->bgr", |b| {
        b.iter(|| {
            convert_color(
                &rgb,
                &mut ImageViewMut::new(PixelFormat::Bgr8, w, h, &mut out).unwrap(),
                YuvRange::Full,
            )
            .unwrap()
        })
    });
    let mut bgra = vec![0u8; (w * h * 4) as usize];
    convert_color(
        &rgb,
        &mut ImageViewMut::new(PixelFormat::Bgra8, w, h, &mut bgra).unwrap(),
        YuvRange::Full,
    )
    .unwrap();
    let bgra = ImageView::new(PixelFormat::Bgra8, w, h, &bgra).unwrap();
    g.bench_function("bgra->rgb", |b| {
        b.iter(|| {
            convert_color(
                &bgra,
                &mut ImageViewMut::new(PixelFormat::Rgb8, w, h, &mut out).unwrap(),
                YuvRange::Full,
            )
            .unwrap()
        })
    });
    let input = vec![1u8; bytes];
    g.bench_function("memcpy (reference)", |b| {
        b.iter(|| out.copy_from_slice(black_box(&input)))
    });
    g.finish();
}

fn bench_finish(c: &mut Criterion) {
    let img = decode_fixture("sklearn_china.jpg");
    let chw = FinishSpec::imagenet();
    let hwc = FinishSpec {
        layout: tensorprep::Layout::Hwc,
        ..chw
    };
    for (label, view, spec, layout) in [
        (
            "224x224 crop",
            center_crop(&img.view(), 224, 224).unwrap(),
            chw,
            "chw",
        ),
        (
            "224x224 crop",
            center_crop(&img.view(), 224, 224).unwrap(),
            hwc,
            "hwc",
        ),
        ("640x427 full", img.view(), chw, "chw"),
    ] {
        let finisher = Finisher::new(&spec).unwrap();
        let n = finisher.output_len(view.width(), view.height());
        let mut g = c.benchmark_group(format!("finish {label} -> f32 {layout}"));
        g.throughput(Throughput::Bytes((n * 4) as u64));
        let mut tensor = vec![0f32; n];
        g.bench_function("finish", |b| {
            b.iter(|| {
                finisher
                    .run(black_box(&view), TensorMut::F32(&mut tensor))
                    .unwrap()
            })
        });
        let reference = vec![1f32; n];
        g.bench_function("memcpy (reference)", |b| {
            b.iter(|| tensor.copy_from_slice(black_box(&reference)))
        });
        g.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2))
}

/// The compiled eval plan on JPEG files against decoding alone (the floor), per
/// backend; and on a 1920x1080 RGB frame against the same steps as eager ops.
fn bench_pipeline(c: &mut Criterion) {
    use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
    for name in ["sklearn_china.jpg", "exif_orient6_grace_hopper.jpg"] {
        let bytes = fixture(name);
        let mut g = c.benchmark_group(format!("pipeline imagenet-eval {name}"));
        for backend in Backend::available() {
            let plan = Pipeline::imagenet_eval()
                .with_decoder(backend)
                .compile(InputDesc::Encoded)
                .unwrap();
            let (mut state, mut out) = (PlanState::new(), vec![0f32; 3 * 224 * 224]);
            g.bench_function(BenchmarkId::new("plan", format!("{backend:?}")), |b| {
                b.iter(|| {
                    plan.run(&mut state, Input::Encoded(&bytes), TensorMut::F32(&mut out))
                        .unwrap()
                })
            });
            let mut dec = JpegDecoder::new(DecodeOptions {
                backend,
                ..DecodeOptions::default()
            });
            let info = dec.read_info(&bytes).unwrap();
            let mut img = Image::new(PixelFormat::Rgb8, info.width, info.height).unwrap();
            g.bench_function(
                BenchmarkId::new("decode only", format!("{backend:?}")),
                |b| b.iter(|| dec.decode_into(&bytes, &mut img.view_mut()).unwrap()),
            );
        }
        g.finish();
    }
    let frame = resize_owned(
        &decode_fixture("sklearn_china.jpg").view(),
        1920,
        1080,
        Resample::default(),
    )
    .unwrap();
    let view = frame.view();
    let plan = Pipeline::imagenet_eval()
        .compile(InputDesc::pixels(PixelFormat::Rgb8, 1920, 1080))
        .unwrap();
    let mut g = c.benchmark_group("pipeline imagenet-eval rgb 1920x1080");
    let (mut state, mut out) = (PlanState::new(), vec![0f32; 3 * 224 * 224]);
    g.bench_function("fused plan", |b| {
        b.iter(|| {
            plan.run(&mut state, Input::Pixels(view), TensorMut::F32(&mut out))
                .unwrap()
        })
    });
    let mut resizer = Resizer::new();
    let mut resized = Image::new(PixelFormat::Rgb8, 455, 256).unwrap();
    let finisher = Finisher::new(&FinishSpec::imagenet()).unwrap();
    g.bench_function("eager ops", |b| {
        b.iter(|| {
            resizer
                .resize(
                    &view,
                    &mut resized.view_mut(),
                    Resample::Pillow(Filter::Bilinear),
                )
                .unwrap();
            let crop = center_crop(&resized.view(), 224, 224).unwrap();
            finisher.run(&crop, TensorMut::F32(&mut out)).unwrap()
        })
    });
    g.finish();
}

/// Reduced-size decoding for the pipeline's fast mode: libjpeg-turbo's DCT
/// scaling against `jpeg-decoder`'s (zune-jpeg has none), on the largest fixture.
fn bench_scaled_decode(c: &mut Criterion) {
    let bytes = fixture("lxqt_butterfly_kenneth_wimer.jpg");
    let mut g = c.benchmark_group("decode 1920x1278 at 1/2");
    let jd = |half: bool| {
        let mut d = jpeg_decoder::Decoder::new(&bytes[..]);
        d.read_info().unwrap();
        if half {
            d.scale(960, 639).unwrap();
        }
        d.decode().unwrap()
    };
    g.bench_function("jpeg-decoder 1/2", |b| b.iter(|| jd(true)));
    g.bench_function("jpeg-decoder full", |b| b.iter(|| jd(false)));
    for scale in [Scale::Half, Scale::Full] {
        if !Backend::LibjpegTurbo.is_available() {
            break;
        }
        let mut dec = JpegDecoder::new(DecodeOptions {
            backend: Backend::LibjpegTurbo,
            scale,
            ..DecodeOptions::default()
        });
        g.bench_function(format!("libjpeg-turbo {scale:?}"), |b| {
            b.iter(|| dec.decode(&bytes).unwrap())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_decode, bench_resize, bench_resize_passes, bench_resize_f32, bench_color,
        bench_finish, bench_pipeline, bench_scaled_decode
}
criterion_main!(benches);
