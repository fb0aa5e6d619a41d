//! Allocation counts per call, with a counting global allocator: the ops without
//! `alloc` in their signature allocate nothing; a resize allocates only on its
//! first call (plan tables, scratch rows); the decoder reports what its backend
//! allocates per image (printed with `--nocapture`).

use tensorprep::color::{YuvRange, convert_color};
use tensorprep::finish::{FinishSpec, Finisher};
use tensorprep::geometry::{Flip, Placement, Rotation, center_crop, flip, pad, rotate};
use tensorprep::jpeg::{Backend, DecodeOptions, JpegDecoder};
use tensorprep::resize::{Resample, ResizePlan, ResizeState, Resizer, SourceBox};
use tensorprep::{Image, ImageView, ImageViewMut, Limits, PixelFormat, TensorMut};
use tensorprep_tests::{CountingAllocator, allocations, read};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn eager_ops_without_alloc_in_their_signature_allocate_nothing() {
    let decoded = JpegDecoder::new(DecodeOptions::default())
        .decode(&read("sample.jpg"))
        .unwrap();
    let src = decoded.view();
    let (w, h) = (src.width(), src.height());
    let mut out = vec![0u8; (w * h * 4) as usize];
    let mut tensor = vec![0f32; 3 * 224 * 224];
    let finisher = Finisher::new(&FinishSpec::imagenet()).unwrap();
    let nv21 = vec![128u8; (w * h * 3 / 2) as usize];

    let n = allocations(|| {
        let crop = center_crop(&src, 224, 224).unwrap();
        finisher.run(&crop, TensorMut::F32(&mut tensor)).unwrap();
        let mut dst = ImageViewMut::new(PixelFormat::Bgr8, w, h, &mut out).unwrap();
        convert_color(&src, &mut dst, YuvRange::Full).unwrap();
        let yuv = ImageView::new(PixelFormat::Nv21, w & !1, h & !1, &nv21).unwrap();
        let mut dst = ImageViewMut::new(PixelFormat::Rgb8, w & !1, h & !1, &mut out).unwrap();
        convert_color(&yuv, &mut dst, YuvRange::Limited).unwrap();
        let mut dst = ImageViewMut::new(PixelFormat::Rgb8, h, w, &mut out).unwrap();
        rotate(&src, &mut dst, Rotation::Cw90).unwrap();
        let mut dst = ImageViewMut::new(PixelFormat::Rgb8, w, h, &mut out).unwrap();
        flip(&src, &mut dst, Flip::Horizontal).unwrap();
        let mut dst = ImageViewMut::new(PixelFormat::Rgb8, w + 10, h + 10, &mut out).unwrap();
        pad(&src, &mut dst, Placement::Center, &[114, 114, 114]).unwrap();
        let _ = Finisher::new(&FinishSpec::imagenet()).unwrap();
    });
    assert_eq!(n, 0, "allocations in ops that take caller buffers");
}

/// Plans in caller memory allocate nothing, not even while they are built:
/// counting, building and running a camera pipeline (RGB565 and YUYV frames
/// to an int8 tensor, with a crop, a turn and a resize).
#[test]
fn arena_plans_allocate_nothing_at_all() {
    use tensorprep::arena::Arena;
    use tensorprep::finish::{ChannelOrder, Normalize};
    use tensorprep::pipeline::{
        ArenaPlan, CenterCrop, CropRounding, InputDesc, Op, Pipeline, Resize,
    };
    use tensorprep::resize::Filter;
    use tensorprep::size::SizeRule;
    use tensorprep::{DType, Layout, Quantization};
    let (w, h) = (320u32, 240u32);
    let frame: Vec<u8> = (0..w * h * 2).map(|i| (i * 7 % 251) as u8).collect();
    let mut memory = vec![0u8; 1 << 20];
    let mut tensor = vec![0i8; 96 * 96 * 3];
    for format in [PixelFormat::Rgb565Be, PixelFormat::Yuyv] {
        let pipeline = Pipeline::from_ops(&[
            Op::ConvertColor {
                to: PixelFormat::Rgb8,
                range: YuvRange::Limited,
            },
            Op::CenterCrop(CenterCrop {
                width: 240,
                height: 240,
                rounding: CropRounding::HalfEven,
            }),
            Op::Rotate(Rotation::Cw90),
            Op::Resize(Resize {
                size: SizeRule::Exact {
                    width: 96,
                    height: 96,
                },
                resample: Resample::Pillow(Filter::Bilinear),
            }),
            Op::Normalize(Normalize::UNIT),
            Op::Layout {
                layout: Layout::Hwc,
                order: ChannelOrder::Rgb,
            },
            Op::Cast {
                dtype: DType::I8,
                quantization: Quantization {
                    scale: 1.0 / 255.0,
                    zero_point: -128,
                },
            },
        ])
        .unwrap();
        let input = InputDesc::pixels(format, w, h);
        let src = ImageView::new(format, w, h, &frame).unwrap();
        let n = allocations(|| {
            let needed = ArenaPlan::bytes_needed(&pipeline, input).unwrap();
            let mut arena = Arena::new(&mut memory[..needed]);
            let (plan, mut state) = ArenaPlan::new_in(&mut arena, &pipeline, input).unwrap();
            plan.run(&mut state, src, TensorMut::I8(&mut tensor))
                .unwrap();
        });
        assert_eq!(n, 0, "{format:?}");
    }
}

#[test]
fn resizing_allocates_nothing_after_the_first_call() {
    let jpeg = read("sample.jpg");
    let rgb = JpegDecoder::new(DecodeOptions::default())
        .decode(&jpeg)
        .unwrap();
    let gray = JpegDecoder::new(DecodeOptions {
        format: PixelFormat::Gray8,
        ..DecodeOptions::default()
    })
    .decode(&jpeg)
    .unwrap();
    let rgba = JpegDecoder::new(DecodeOptions {
        format: PixelFormat::Rgba8,
        ..DecodeOptions::default()
    })
    .decode(&jpeg)
    .unwrap();
    let (w, h) = (rgb.width(), rgb.height());
    let mut checked = 0;
    for img in [&gray, &rgb, &rgba] {
        // Downscale, upscale, one axis only, and a fractional Pillow box.
        for (size, source_box) in [
            ((256, 171), SourceBox::full(w, h)),
            ((640, 427), SourceBox::full(w, h)),
            ((200, h), SourceBox::full(w, h)),
            (
                (224, 224),
                SourceBox {
                    x0: 10.5,
                    y0: 3.25,
                    x1: 400.0,
                    y1: 290.75,
                },
            ),
        ] {
            let mut out = Image::new(img.format(), size.0, size.1).unwrap();
            for r in Resample::ALL {
                let b = if matches!(r, Resample::Pillow(_)) {
                    source_box
                } else {
                    SourceBox::full(w, h)
                };
                // A plan and a state, as a pipeline holds them ...
                let plan =
                    ResizePlan::with_source_box((w, h), b, size, r, &Limits::DEFAULT).unwrap();
                let mut state = ResizeState::new();
                plan.run(&mut state, &img.view(), &mut out.view_mut())
                    .unwrap();
                let n = allocations(|| {
                    plan.run(&mut state, &img.view(), &mut out.view_mut())
                        .unwrap()
                });
                assert_eq!(n, 0, "plan.run {:?} {r:?} {size:?}", img.format());
                // ... and the eager Resizer, which keeps its last plan.
                let mut resizer = Resizer::new();
                resizer
                    .resize_box(&img.view(), b, &mut out.view_mut(), r)
                    .unwrap();
                let n = allocations(|| {
                    resizer
                        .resize_box(&img.view(), b, &mut out.view_mut(), r)
                        .unwrap()
                });
                assert_eq!(n, 0, "Resizer {:?} {r:?} {size:?}", img.format());
                checked += 1;
            }
        }
    }
    println!(
        "resize: 0 allocations per call after the first, in all {checked} format/size/method cases"
    );
    // The first call does allocate (tables and scratch), so the counter is live.
    let first = allocations(|| {
        let plan = ResizePlan::new((w, h), (256, 171), Resample::default()).unwrap();
        let mut out = Image::new(PixelFormat::Rgb8, 256, 171).unwrap();
        plan.run(&mut ResizeState::new(), &rgb.view(), &mut out.view_mut())
            .unwrap();
    });
    assert!(first > 0);
    println!("resize: {first} allocations for a new plan, state and output");
}

#[test]
fn float_resizing_allocates_nothing_after_the_first_call() {
    use tensorprep::resize::{Filter, FloatImage, FloatResizer, FloatView};
    let px: Vec<f32> = (0..97 * 61 * 3).map(|i| (i % 251) as f32 / 7.0).collect();
    let src = FloatView::new(&px, 97, 61, 3).unwrap();
    let methods = Filter::ALL
        .map(Resample::Pillow)
        .into_iter()
        .chain([Filter::Bilinear, Filter::Bicubic].map(Resample::TorchFloat));
    let mut checked = 0;
    for r in methods {
        for (w, h) in [(31, 20), (150, 90), (97, 30), (40, 61)] {
            let mut out = FloatImage::zeros(w, h, 3).unwrap();
            let mut resizer = FloatResizer::new();
            let first = allocations(|| resizer.resize(&src, &mut out.view_mut(), r).unwrap());
            let n = allocations(|| resizer.resize(&src, &mut out.view_mut(), r).unwrap());
            assert_eq!(n, 0, "FloatResizer {r:?} {w}x{h} (first call: {first})");
            checked += 1;
        }
    }
    println!("float resize: 0 allocations per call after the first in {checked} cases");
}

#[test]
fn decoder_allocations_per_image_are_counted() {
    let jpeg = read("sample.jpg");
    for backend in Backend::available() {
        let mut decoder = JpegDecoder::new(DecodeOptions {
            backend,
            ..DecodeOptions::default()
        });
        let info = decoder.read_info(&jpeg).unwrap();
        let mut img = Image::new(PixelFormat::Rgb8, info.width, info.height).unwrap();
        decoder.decode_into(&jpeg, &mut img.view_mut()).unwrap();
        let n = allocations(|| {
            decoder.decode_into(&jpeg, &mut img.view_mut()).unwrap();
        });
        println!("decode_into {backend:?}: {n} Rust-heap allocations per image after the first");
        match backend {
            // zune-jpeg allocates its component buffers per decode, a bounded number.
            Backend::Zune => assert!(n > 0 && n < 100, "{n}"),
            // libjpeg-turbo allocates with C malloc, which this counter does not see;
            // nothing of ours allocates around it.
            _ => assert_eq!(n, 0),
        }
    }
}

mod pipeline {
    use super::*;
    use tensorprep::finish::{ChannelOrder, Normalize};
    use tensorprep::pipeline::{Input, InputDesc, Op, Pipeline, PlanState, Resize};
    use tensorprep::resize::Filter;
    use tensorprep::size::SizeRule;
    use tensorprep::{DType, Layout, Quantization, Tensor};

    fn finish_f32() -> [Op; 3] {
        Op::finish(
            Normalize::IMAGENET,
            Layout::Chw,
            ChannelOrder::Rgb,
            DType::F32,
            Quantization::IDENTITY,
        )
    }

    /// Runs `plan` on `input` `runs` times; returns the allocations of the first
    /// run and the most any later run made.
    fn steady(plan: &tensorprep::pipeline::Plan, input: Input<'_>, len: usize) -> (usize, usize) {
        let mut state = PlanState::new();
        let mut out = Tensor::zeros(plan.dtype(), len);
        let first = allocations(|| {
            plan.run(&mut state, input, out.as_mut()).unwrap();
        });
        let later = (0..5)
            .map(|_| {
                allocations(|| {
                    plan.run(&mut state, input, out.as_mut()).unwrap();
                })
            })
            .max()
            .unwrap();
        (first, later)
    }

    #[test]
    fn pixel_plans_allocate_nothing_after_the_first_run() {
        let (w, h) = (1920u32, 1080u32);
        let frame: Vec<u8> = (0..w as usize * h as usize * 3)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let nv21 = &frame[..w as usize * h as usize * 3 / 2];
        let to_224 = Op::Resize(Resize {
            size: SizeRule::Exact {
                width: 224,
                height: 224,
            },
            resample: Resample::Pillow(Filter::Bilinear),
        });
        let rgb = Op::ConvertColor {
            to: PixelFormat::Rgb8,
            range: YuvRange::Full,
        };
        let cases: Vec<(&str, Pipeline, PixelFormat, &[u8])> = vec![
            (
                "RGB imagenet-eval",
                Pipeline::imagenet_eval(),
                PixelFormat::Rgb8,
                &frame,
            ),
            (
                "RGB letterbox 640",
                Pipeline::yolo_letterbox(640, 640),
                PixelFormat::Rgb8,
                &frame,
            ),
            (
                "NV21 -> 224x224 CHW f32",
                Pipeline::from_ops(&[rgb, to_224]).unwrap(),
                PixelFormat::Nv21,
                nv21,
            ),
            (
                "NV21 -> rotate -> OpenCV linear 224x224",
                Pipeline::from_ops(&[
                    rgb,
                    Op::Rotate(Rotation::Cw90),
                    Op::Resize(Resize {
                        size: SizeRule::Exact {
                            width: 224,
                            height: 224,
                        },
                        resample: Resample::OpenCvLinear,
                    }),
                ])
                .unwrap(),
                PixelFormat::Nv21,
                nv21,
            ),
        ];
        for (name, mut p, format, data) in cases {
            if !p.ops().iter().any(|op| matches!(op, Op::Layout { .. })) {
                for op in finish_f32() {
                    p.push(op).unwrap();
                }
            }
            let plan = p.compile(InputDesc::pixels(format, w, h)).unwrap();
            let view = ImageView::new(format, w, h, data).unwrap();
            let (first, later) = steady(&plan, Input::Pixels(view), plan.output_len().unwrap());
            println!("pipeline {name:<42} first run {first:>3} allocations, then {later}");
            assert_eq!(later, 0, "{name}");
        }
    }

    #[test]
    fn jpeg_plans_allocate_only_inside_the_decoder() {
        for backend in Backend::available() {
            let plan = Pipeline::imagenet_eval()
                .with_decoder(backend)
                .compile(tensorprep::pipeline::InputDesc::Encoded)
                .unwrap();
            for name in ["sample.jpg", "sklearn_china.jpg"] {
                let bytes = read(name);
                let (first, later) = steady(&plan, Input::Encoded(&bytes), 3 * 224 * 224);
                // The decoder on its own, for comparison.
                let mut dec = JpegDecoder::new(DecodeOptions {
                    backend,
                    ..DecodeOptions::default()
                });
                let info = dec.read_info(&bytes).unwrap();
                let mut img = Image::new(PixelFormat::Rgb8, info.width, info.height).unwrap();
                dec.decode_into(&bytes, &mut img.view_mut()).unwrap();
                let decoder_alone = allocations(|| {
                    dec.read_info(&bytes).unwrap();
                    dec.decode_into(&bytes, &mut img.view_mut()).unwrap();
                });
                println!(
                    "pipeline imagenet-eval {backend:?} {name:<18} first run {first:>3}, then {later} (the decoder alone: {decoder_alone})"
                );
                // Everything beyond the decoder's own allocations is reused.
                assert!(
                    later <= decoder_alone,
                    "{backend:?} {name}: {later} > {decoder_alone}"
                );
                if backend == Backend::LibjpegTurbo {
                    assert_eq!(later, 0);
                }
            }
        }
    }

    #[test]
    fn alternating_jpeg_sizes_reuse_their_resolved_plans() {
        let plan = Pipeline::imagenet_eval()
            .with_decoder(Backend::available().last().unwrap())
            .compile(tensorprep::pipeline::InputDesc::Encoded)
            .unwrap();
        let files = [
            read("sample.jpg"),
            read("sklearn_china.jpg"),
            read("exif_orient6_grace_hopper.jpg"),
        ];
        let mut state = PlanState::new();
        let mut out = Tensor::zeros(plan.dtype(), 3 * 224 * 224);
        // Each size once: tables and buffers built.
        for f in &files {
            plan.run(&mut state, Input::Encoded(f), out.as_mut())
                .unwrap();
        }
        // Then taking turns: only what the decoder itself allocates.
        let mut dec = JpegDecoder::new(DecodeOptions {
            backend: Backend::available().last().unwrap(),
            ..DecodeOptions::default()
        });
        for f in files.iter().cycle().take(3 * files.len()) {
            let most = allocations(|| {
                plan.run(&mut state, Input::Encoded(f), out.as_mut())
                    .unwrap();
            });
            let info = dec.read_info(f).unwrap();
            let mut img = Image::new(PixelFormat::Rgb8, info.width, info.height).unwrap();
            dec.decode_into(f, &mut img.view_mut()).unwrap();
            let decoder_alone = allocations(|| {
                dec.read_info(f).unwrap();
                dec.decode_into(f, &mut img.view_mut()).unwrap();
            });
            assert!(most <= decoder_alone, "{most} > {decoder_alone}");
        }
    }
}

/// 50 photos of 50 different sizes, as a real folder has them: PNGs of crops
/// of the sample photo (every one a new size for the plan).
fn photos_of_many_sizes() -> Vec<Vec<u8>> {
    let rgb = JpegDecoder::new(DecodeOptions::default())
        .decode(&read("sample.jpg"))
        .unwrap();
    (0..50u32)
        .map(|i| {
            let (w, h) = (250 + 3 * i, 200 + (i * 7) % 61);
            let crop = rgb
                .view()
                .crop(tensorprep::Rect::new(i, i / 2, w, h))
                .unwrap();
            let mut bytes = Vec::new();
            let mut encoder = png::Encoder::new(&mut bytes, w, h);
            encoder.set_color(png::ColorType::Rgb);
            let mut writer = encoder.write_header().unwrap();
            let data: Vec<u8> = (0..h).flat_map(|y| crop.row(y).to_vec()).collect();
            writer.write_image_data(&data).unwrap();
            writer.finish().unwrap();
            bytes
        })
        .collect()
}

#[test]
fn a_folder_of_many_sizes_resolves_plans_without_garbage() {
    use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
    use tensorprep_tests::decoding_allocations;
    let photos = photos_of_many_sizes();
    for pipeline in [
        Pipeline::imagenet_eval(),
        Pipeline::yolo_letterbox(320, 320),
    ] {
        let plan = pipeline.compile(InputDesc::Encoded).unwrap();
        let mut state = PlanState::new();
        let mut tensor = vec![0f32; plan.output_len().unwrap()];
        let mut pass = |state: &mut PlanState| {
            allocations(|| {
                for p in &photos {
                    plan.run(state, Input::Encoded(p), TensorMut::F32(&mut tensor))
                        .unwrap();
                }
            })
        };
        // Warm-up: buffers grow to the largest size; the tables, handed from
        // size to size, grow (by doubling) until each fits every size: a few
        // allocations in the second pass (4 of them here), none after.
        pass(&mut state);
        pass(&mut state);
        let planned = pass(&mut state);
        // The decoder's own allocations on the same files (zune-png inflates
        // into buffers of its own).
        let decoding = decoding_allocations(photos.iter().map(Vec::as_slice));
        println!(
            "{} sizes: {planned} allocations through the plan, {decoding} in decoding alone",
            photos.len()
        );
        assert_eq!(
            planned, decoding,
            "the plan must allocate nothing beyond the decoder's own"
        );
    }
}
