//! Compiled, fused plans against the eager ops they replace.
//!
//! The reference is an interpreter that runs each op of a pipeline as its own
//! eager call on an owned image (convert, resize, crop, pad, flip/rotate, then
//! the finish pass). A plan fuses those steps (crops become resize windows or
//! read regions, conversions happen on first read, region decoding), and must
//! produce the same tensor bit for bit.

use tensorprep::color::{YuvRange, convert_color_owned};
use tensorprep::finish::{ChannelOrder, FinishSpec, Finisher, Normalize};
use tensorprep::geometry::{Flip, Placement, Rotation, Transform, pad, transform_owned};
use tensorprep::jpeg::{Backend, DecodeOptions, JpegDecoder, Orientation};
use tensorprep::pipeline::{
    CenterCrop, CropRounding, Decode, Input, InputDesc, Op, Pad, PadTo, Pipeline, PlanState, Resize,
};
use tensorprep::resize::{Filter, Resample, resize_owned};
use tensorprep::size::{Rounding, SizeRule};
use tensorprep::{
    DType, Error, Image, ImageView, InputKind, Layout, PixelFormat, Quantization, Rect, Tensor,
};
use tensorprep_tests::{Rng, read, read_npy_f32, read_png, refs, rgb565_le, swap_byte_pairs};

/// The eager composition of `ops` on `img`: each op its own call and image.
fn eager(ops: &[Op], img: Image, decode: Option<(&[u8], Decode)>) -> Result<Tensor, Error> {
    let mut img = match decode {
        Some((bytes, d)) => JpegDecoder::new(DecodeOptions {
            format: d.format,
            orientation: d.orientation,
            strict: d.strict,
            backend: d.backend,
            ..DecodeOptions::default()
        })
        .decode(bytes)?,
        None => img,
    };
    let mut spec = FinishSpec {
        normalize: Normalize::RAW,
        ..FinishSpec::imagenet()
    };
    for op in ops {
        let v = img.view();
        img = match *op {
            Op::Decode(_) => continue,
            Op::ConvertColor { to, range } => convert_color_owned(&v, to, range)?,
            Op::Resize(r) => {
                let (w, h) = r.size.output_size(v.width(), v.height())?;
                resize_owned(&v, w, h, r.resample)?
            }
            Op::CenterCrop(c) => {
                let rect = c
                    .rect(v.width(), v.height())
                    .ok_or(Error::InvalidParameter {
                        name: "crop",
                        reason: "does not fit",
                    })?;
                copy(&v.crop(rect)?)
            }
            Op::Crop(r) => copy(&v.crop(r)?),
            Op::Pad(p) => {
                let fill = pixel_bytes(v.format(), p.fill);
                let bpp = v.format().bytes_per_pixel().unwrap();
                let (w, h, placement) = match p.to {
                    PadTo::Borders {
                        left,
                        top,
                        right,
                        bottom,
                    } => {
                        // Borders: a canvas with the image at (left, top).
                        let (cw, ch) = (v.width() + left + right, v.height() + top + bottom);
                        let mut out = Image::new(v.format(), cw, ch)?;
                        let mut dst = out.view_mut();
                        let mut sub =
                            dst.sub_view_mut(Rect::new(left, top, v.width(), v.height()))?;
                        pad(&v, &mut sub, Placement::TopLeft, &fill[..bpp])?;
                        tensorprep::geometry::fill_border(
                            &mut dst,
                            Rect::new(left, top, v.width(), v.height()),
                            &fill[..bpp],
                        )?;
                        img = out;
                        continue;
                    }
                    PadTo::Canvas {
                        width,
                        height,
                        placement,
                    } => (width, height, placement),
                    PadTo::AtLeast {
                        width,
                        height,
                        placement,
                    } => (v.width().max(width), v.height().max(height), placement),
                    _ => unreachable!("every padding is handled"),
                };
                tensorprep::geometry::pad_owned(&v, w, h, placement, &fill[..bpp])?.0
            }
            Op::Flip(f) => transform_owned(&v, Transform::from_flip(f))?,
            Op::Rotate(r) => transform_owned(&v, Transform::from_rotation(r))?,
            Op::Normalize(n) => {
                spec.normalize = n;
                continue;
            }
            Op::Layout { layout, order } => {
                spec.layout = layout;
                spec.order = order;
                continue;
            }
            Op::Cast {
                dtype,
                quantization,
            } => {
                spec.dtype = dtype;
                spec.quantization = quantization;
                continue;
            }
            _ => unreachable!("every op is handled"),
        };
    }
    Finisher::new(&spec)?.run_to_tensor(&img.view())
}

fn copy(v: &ImageView<'_>) -> Image {
    let mut out = Image::new(v.format(), v.width(), v.height()).unwrap();
    tensorprep::geometry::transform(v, &mut out.view_mut(), Transform::IDENTITY).unwrap();
    out
}

/// An RGB colour as one pixel of `format`.
fn pixel_bytes(format: PixelFormat, rgb: [u8; 3]) -> [u8; 4] {
    let src = ImageView::new(PixelFormat::Rgb8, 1, 1, &rgb).unwrap();
    let px = convert_color_owned(&src, format, YuvRange::Full).unwrap();
    let mut out = [0u8; 4];
    out[..px.as_bytes().len()].copy_from_slice(px.as_bytes());
    out
}

/// Runs a compiled plan into a fresh tensor of its dtype.
fn run_plan(
    plan: &tensorprep::pipeline::Plan,
    state: &mut PlanState,
    input: Input<'_>,
    len: usize,
) -> Result<Tensor, Error> {
    let mut t = Tensor::zeros(plan.dtype(), len);
    plan.run(state, input, t.as_mut())?;
    Ok(t)
}

/// Bitwise equality (f32 NaN-safe).
fn same(a: &Tensor, b: &Tensor) -> bool {
    match (a, b) {
        (Tensor::F32(x), Tensor::F32(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        _ => a == b,
    }
}

/// A random geometric op for an image of about `(w, h)`; returns the op and the size after it.
fn random_op(rng: &mut Rng, (w, h): (u32, u32)) -> (Op, (u32, u32)) {
    match rng.below_u32(7) {
        0 | 1 => {
            let resample = rng.pick(&Resample::ALL);
            let size = match rng.below_u32(5) {
                0 => SizeRule::Exact {
                    width: 1 + rng.below_u32(w * 2),
                    height: 1 + rng.below_u32(h * 2),
                },
                1 => SizeRule::ShorterSide {
                    size: 8 + rng.below_u32(w.min(h)),
                    max_size: None,
                    rounding: rng.pick(&[Rounding::Truncate, Rounding::HalfEven]),
                },
                2 => SizeRule::LongerSide {
                    size: 8 + rng.below_u32(w.max(h)),
                    rounding: rng.pick(&[Rounding::Truncate, Rounding::HalfEven]),
                },
                3 => SizeRule::Fit {
                    width: 8 + rng.below_u32(w),
                    height: 8 + rng.below_u32(h),
                    upscale: rng.below_u32(2) == 0,
                },
                _ => SizeRule::Multiple {
                    width: 8 + rng.below_u32(w),
                    height: 8 + rng.below_u32(h),
                    multiple: 1 + rng.below_u32(8),
                    keep_aspect_ratio: rng.below_u32(2) == 0,
                },
            };
            let out = size.output_size(w, h).unwrap_or((w, h));
            (Op::Resize(Resize { size, resample }), out)
        }
        2 | 3 => {
            let (cw, ch) = (1 + rng.below_u32(w), 1 + rng.below_u32(h));
            if rng.below_u32(2) == 0 {
                let rounding = rng.pick(&[CropRounding::HalfEven, CropRounding::Floor]);
                let c = CenterCrop {
                    width: cw,
                    height: ch,
                    rounding,
                };
                (Op::CenterCrop(c), (cw, ch))
            } else {
                let r = Rect::new(rng.below_u32(w - cw + 1), rng.below_u32(h - ch + 1), cw, ch);
                (Op::Crop(r), (cw, ch))
            }
        }
        4 => {
            let fill = [
                rng.below_u32(256) as u8,
                rng.below_u32(256) as u8,
                rng.below_u32(256) as u8,
            ];
            let kind = rng.below_u32(3);
            if kind == 2 {
                // Up to a size each side may already exceed.
                let (aw, ah) = (
                    (w + rng.below_u32(9)).saturating_sub(4).max(1),
                    (h + rng.below_u32(9)).saturating_sub(4).max(1),
                );
                let placement = rng.pick(&[Placement::Center, Placement::TopLeft]);
                let to = PadTo::AtLeast {
                    width: aw,
                    height: ah,
                    placement,
                };
                (Op::Pad(Pad { to, fill }), (w.max(aw), h.max(ah)))
            } else if kind == 0 {
                let (l, t, r, b) = (
                    rng.below_u32(5),
                    rng.below_u32(5),
                    rng.below_u32(5),
                    rng.below_u32(5),
                );
                let to = PadTo::Borders {
                    left: l,
                    top: t,
                    right: r,
                    bottom: b,
                };
                (Op::Pad(Pad { to, fill }), (w + l + r, h + t + b))
            } else {
                let (cw, ch) = (w + rng.below_u32(9), h + rng.below_u32(9));
                let placement = rng.pick(&[Placement::Center, Placement::TopLeft]);
                let to = PadTo::Canvas {
                    width: cw,
                    height: ch,
                    placement,
                };
                (Op::Pad(Pad { to, fill }), (cw, ch))
            }
        }
        5 => (
            Op::Flip(rng.pick(&[Flip::Horizontal, Flip::Vertical, Flip::Both])),
            (w, h),
        ),
        _ => {
            let r = rng.pick(&[Rotation::Cw90, Rotation::Cw180, Rotation::Cw270]);
            let out = if r == Rotation::Cw180 { (w, h) } else { (h, w) };
            (Op::Rotate(r), out)
        }
    }
}

fn random_finish(rng: &mut Rng, format: PixelFormat) -> [Op; 3] {
    let order = if format == PixelFormat::Gray8 {
        rng.pick(&[ChannelOrder::Gray, ChannelOrder::Rgb])
    } else {
        rng.pick(&[ChannelOrder::Rgb, ChannelOrder::Bgr])
    };
    let dtype = rng.pick(&[DType::F32, DType::F16, DType::U8, DType::I8]);
    let quantization = match dtype {
        DType::U8 | DType::I8 => Quantization {
            scale: 1.0 / 64.0,
            zero_point: rng.below_u32(3) as i32 - 1,
        },
        _ => Quantization::IDENTITY,
    };
    [
        Op::Normalize(rng.pick(&[Normalize::IMAGENET, Normalize::UNIT, Normalize::RAW])),
        Op::Layout {
            layout: rng.pick(&[Layout::Chw, Layout::Hwc]),
            order,
        },
        Op::Cast {
            dtype,
            quantization,
        },
    ]
}

#[test]
fn random_fused_pipelines_equal_the_eager_ops_bit_for_bit() {
    let rgb = read_png("src_china_small_rgb.png");
    let rgba = read_png("src_china_rgba.png");
    let gray = read_png("src_sample_small_gray.png");
    // Camera frames: NV21, YUV 4:2:2 in both orders, RGB565 in both byte orders.
    let nv21 = read("frame_128x96.nv21");
    let yuyv = read("camera/frame_128x96.yuyv");
    let uyvy = swap_byte_pairs(&yuyv);
    let rgb565 = rgb565_le(rgb.as_bytes());
    let rgb565_be = swap_byte_pairs(&rgb565);
    let (rw, rh) = (rgb.width(), rgb.height());
    let cameras = [
        ImageView::new(PixelFormat::Nv21, 128, 96, &nv21).unwrap(),
        ImageView::new(PixelFormat::Yuyv, 128, 96, &yuyv).unwrap(),
        ImageView::new(PixelFormat::Uyvy, 128, 96, &uyvy).unwrap(),
        ImageView::new(PixelFormat::Rgb565Le, rw, rh, &rgb565).unwrap(),
        ImageView::new(PixelFormat::Rgb565Be, rw, rh, &rgb565_be).unwrap(),
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut compared, mut refused, mut in_arena) = (0, 0, 0);
    let mut state = PlanState::new();
    for case in 0..400 {
        // The source, and the colour conversion its pipeline starts with (if any).
        let (src, convert): (ImageView<'_>, Option<Op>) = match case % 5 {
            0 | 1 => (rgb.view(), None),
            2 => (rgba.view(), None),
            3 => (gray.view(), None),
            _ => (
                cameras[rng.below(cameras.len())],
                Some(Op::ConvertColor {
                    to: rng.pick(&[PixelFormat::Rgb8, PixelFormat::Bgr8, PixelFormat::Gray8]),
                    range: rng.pick(&[YuvRange::Full, YuvRange::Limited]),
                }),
            ),
        };
        let mut ops = Vec::new();
        let mut format = src.format();
        if let Some(op @ Op::ConvertColor { to, .. }) = convert {
            ops.push(op);
            format = to;
        } else if rng.below_u32(4) == 0 {
            format = rng.pick(&[PixelFormat::Rgb8, PixelFormat::Bgra8, PixelFormat::Gray8]);
            ops.push(Op::ConvertColor {
                to: format,
                range: YuvRange::Full,
            });
        }
        let mut size = (src.width(), src.height());
        for _ in 0..1 + rng.below_u32(4) {
            let (op, next) = random_op(&mut rng, size);
            ops.push(op);
            size = next;
        }
        ops.extend(random_finish(&mut rng, format));
        let pipeline = Pipeline::from_ops(&ops).unwrap();
        let input = Image::from_vec(src.format(), src.width(), src.height(), {
            let mut v = Vec::new();
            for p in 0..src.format().plane_count() {
                let g = src
                    .format()
                    .plane_geometry(p, src.width(), src.height())
                    .unwrap();
                v.extend_from_slice(&src.plane(p).data[..g.row_bytes() * g.rows]);
            }
            v
        })
        .unwrap();
        let want = eager(&ops, input, None);
        let plan = pipeline.compile(InputDesc::pixels(src.format(), src.width(), src.height()));
        match (want, plan) {
            (Ok(want), Ok(plan)) => {
                assert_eq!(plan.output_len(), Some(want.len()), "{ops:?}");
                let got = run_plan(&plan, &mut state, Input::Pixels(src), want.len())
                    .unwrap_or_else(|e| panic!("{e}: {ops:?}"));
                assert!(same(&got, &want), "case {case}: {ops:?}");
                compared += 1;
                if arena_plan_agrees(&pipeline, src, &got) {
                    in_arena += 1;
                }
            }
            // Both refuse (a crop that no longer fits, a degenerate size, ...).
            (Err(_), Err(_)) => refused += 1,
            (w, p) => panic!(
                "case {case}: eager {:?} but plan {:?}: {ops:?}",
                w.map(|_| ()),
                p.map(|_| ())
            ),
        }
    }
    println!(
        "{compared} random pipelines identical to the eager ops, {refused} refused by both; \
         {in_arena} of them also run in caller memory, identical"
    );
    assert!(compared >= 250, "only {compared} compared");
    assert_eq!(
        in_arena, compared,
        "every pipeline also runs in caller memory"
    );
}

/// Runs `pipeline` as an arena plan (no allocation: tables, images and rows
/// in the bytes `ArenaPlan::bytes_needed` reports) and checks it gives the
/// heap plan's tensor `want`.
fn arena_plan_agrees(pipeline: &Pipeline, src: ImageView<'_>, want: &Tensor) -> bool {
    use tensorprep::arena::Arena;
    use tensorprep::pipeline::ArenaPlan;
    let input = InputDesc::pixels(src.format(), src.width(), src.height());
    let needed = ArenaPlan::bytes_needed(pipeline, input)
        .unwrap_or_else(|e| panic!("{e}: {:?}", pipeline.ops()));
    let mut memory = vec![0u8; needed];
    let mut arena = Arena::new(&mut memory);
    let (plan, mut state) = ArenaPlan::new_in(&mut arena, pipeline, input).unwrap();
    assert!(arena.used() <= needed);
    let mut got = Tensor::zeros(plan.dtype(), plan.output_len());
    plan.run(&mut state, src, got.as_mut()).unwrap();
    assert!(same(&got, want), "arena plan: {:?}", pipeline.ops());
    // A second run reuses the same memory: same tensor.
    plan.run(&mut state, src, got.as_mut()).unwrap();
    assert!(
        same(&got, want),
        "arena plan, second run: {:?}",
        pipeline.ops()
    );
    true
}

/// The JPEG fixtures the eval pipeline is checked on.
const PHOTOS: [&str; 6] = [
    "sample.jpg",
    "sklearn_china.jpg",
    "exif_orient6_grace_hopper.jpg",
    "sample_gray.jpg",
    "sample_progressive.jpg",
    "sample_cmyk.jpg",
];

#[test]
fn jpeg_plans_equal_the_eager_ops_with_and_without_region_decoding() {
    for backend in Backend::available() {
        for orientation in [Orientation::Ignore, Orientation::Apply] {
            for roi in [false, true] {
                let mut p = Pipeline::imagenet_eval().with_decoder(backend);
                p.map_decode(|d| {
                    d.orientation = orientation;
                    d.region_of_interest = roi;
                });
                let plan = p.compile(InputDesc::Encoded).unwrap();
                assert_eq!(plan.output_shape(), Some([3, 224, 224]));
                let decode = match p.ops()[0] {
                    Op::Decode(d) => d,
                    _ => unreachable!(),
                };
                // One state over all photos: each new size re-resolves the plan.
                let mut state = PlanState::new();
                for round in 0..2 {
                    for name in PHOTOS {
                        let bytes = read(name);
                        let want = eager(
                            p.ops(),
                            Image::new(PixelFormat::Rgb8, 1, 1).unwrap(),
                            Some((&bytes, decode)),
                        )
                        .unwrap();
                        let got =
                            run_plan(&plan, &mut state, Input::Encoded(&bytes), 3 * 224 * 224)
                                .unwrap();
                        assert!(
                            same(&got, &want),
                            "{backend:?} {orientation:?} roi={roi} round {round}: {name}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "turbojpeg"),
    ignore = "needs libjpeg-turbo: cargo test -p tensorprep-tests --features turbojpeg"
)]
fn eval_plan_with_libjpeg_turbo_is_pillow_exact() {
    let plan = Pipeline::imagenet_eval()
        .with_decoder(Backend::LibjpegTurbo)
        .compile(InputDesc::Encoded)
        .unwrap();
    let mut state = PlanState::new();
    let mut checked = 0;
    for w in refs("eval").iter().filter(|w| w[2].ends_with(".npy")) {
        let (_, want) = read_npy_f32(&w[2]);
        let got = run_plan(&plan, &mut state, Input::Encoded(&read(&w[1])), want.len()).unwrap();
        assert!(same(&got, &Tensor::F32(want)), "{}", w[1]);
        checked += 1;
    }
    assert!(checked >= 1);
}

#[test]
fn letterbox_geometry_maps_detections_back() {
    let (w, h) = (451u32, 300u32);
    let plan = Pipeline::yolo_letterbox(640, 640)
        .compile(InputDesc::pixels(PixelFormat::Rgb8, w, h))
        .unwrap();
    let g = plan.geometry().unwrap();
    // r = 640 / 451; the resized image is 640 x round(300 r) = 426 rows, padded (640 - 426) / 2 = 107 on top.
    let r = 640.0 / 451.0;
    assert_eq!(g.output, (640, 640));
    let (sx, sy) = g.scale();
    assert!((sx - r).abs() < 1e-12 && (sy - 426.0 / 300.0).abs() < 1e-12);
    assert_eq!(g.offset(), (0.0, 107.0));
    // The content's corners map back to the image's corners.
    let b = g.to_source_box([0.0, 107.0, 640.0, 107.0 + 426.0]);
    for (a, e) in b.iter().zip([0.0, 0.0, f64::from(w), f64::from(h)]) {
        assert!((a - e).abs() < 1e-9, "{b:?}");
    }
    // Padding rows map outside and are clamped to the image.
    assert_eq!(g.to_source_box([0.0, 0.0, 10.0, 10.0])[3], 0.0);
}

#[test]
fn geometry_follows_crops_resizes_and_quarter_turns() {
    let ops = [
        Op::Crop(Rect::new(10, 20, 100, 50)),
        Op::Resize(Resize {
            size: SizeRule::Exact {
                width: 50,
                height: 100,
            },
            resample: Resample::Pillow(Filter::Box),
        }),
        Op::Rotate(Rotation::Cw90),
        Op::Layout {
            layout: Layout::Chw,
            order: ChannelOrder::Rgb,
        },
        Op::Cast {
            dtype: DType::U8,
            quantization: Quantization::IDENTITY,
        },
    ];
    let plan = Pipeline::from_ops(&ops)
        .unwrap()
        .compile(InputDesc::pixels(PixelFormat::Rgb8, 200, 100))
        .unwrap();
    let g = plan.geometry().unwrap();
    assert_eq!(g.output, (100, 50));
    // Input (10, 20) is the crop's corner: resized (0, 0), turned to (100, 0).
    assert_eq!(g.to_output.point((10.0, 20.0)), (100.0, 0.0));
    // Input (110, 70), the crop's far corner: resized (50, 100), turned to (0, 50).
    assert_eq!(g.to_output.point((110.0, 70.0)), (0.0, 50.0));
    let back = g.to_source((0.0, 50.0));
    assert!((back.0 - 110.0).abs() < 1e-9 && (back.1 - 70.0).abs() < 1e-9);
    assert_eq!(plan.output_shape(), Some([3, 50, 100]));
}

#[test]
fn malformed_pipelines_and_wrong_inputs_are_errors() {
    let finish = [
        Op::Layout {
            layout: Layout::Chw,
            order: ChannelOrder::Rgb,
        },
        Op::Cast {
            dtype: DType::F32,
            quantization: Quantization::IDENTITY,
        },
    ];
    let rgb = InputDesc::pixels(PixelFormat::Rgb8, 64, 48);
    let compile = |ops: &[Op], input| Pipeline::from_ops(ops).unwrap().compile(input);
    let resize = Op::Resize(Resize {
        size: SizeRule::Exact {
            width: 8,
            height: 8,
        },
        resample: Resample::default(),
    });
    // No Layout / Cast.
    assert!(compile(&[resize], rgb).is_err());
    assert!(compile(&[resize, finish[0]], rgb).is_err());
    // A pixel op after a finish op.
    assert!(compile(&[finish[0], resize, finish[1]], rgb).is_err());
    // Decode not first; JPEG input without Decode.
    let decode = Op::Decode(Decode::exact(Backend::Zune));
    assert!(compile(&[resize, decode, finish[0], finish[1]], rgb).is_err());
    assert!(compile(&[resize, finish[0], finish[1]], InputDesc::Encoded).is_err());
    // Resizing YUV without a ConvertColor.
    let nv21 = InputDesc::pixels(PixelFormat::Nv21, 64, 48);
    assert!(compile(&[resize, finish[0], finish[1]], nv21).is_err());
    // A crop larger than the image.
    let crop = Op::Crop(Rect::new(0, 0, 65, 10));
    assert!(matches!(
        compile(&[crop, finish[0], finish[1]], rgb),
        Err(Error::RectOutOfBounds { .. })
    ));
    // Fast decoding without libjpeg-turbo, or not followed by a resize.
    let mut fast = Decode::exact(Backend::Zune);
    fast.scaling = tensorprep::pipeline::DecodeScaling::Fast;
    assert!(
        compile(
            &[Op::Decode(fast), resize, finish[0], finish[1]],
            InputDesc::Encoded
        )
        .is_err()
    );
    fast.backend = Backend::LibjpegTurbo;
    assert!(
        compile(
            &[Op::Decode(fast), finish[0], finish[1]],
            InputDesc::Encoded
        )
        .is_err()
    );
    // Too many ops.
    let mut p = Pipeline::new();
    for _ in 0..tensorprep::pipeline::MAX_OPS {
        p.push(Op::Flip(Flip::Horizontal)).unwrap();
    }
    assert!(p.push(Op::Flip(Flip::Horizontal)).is_err());

    // Running with the wrong input.
    let plan = compile(&[resize, finish[0], finish[1]], rgb).unwrap();
    let mut state = PlanState::new();
    let mut out = vec![0f32; 3 * 64];
    let px = vec![0u8; 64 * 48 * 3];
    let small = ImageView::new(PixelFormat::Rgb8, 32, 48, &px).unwrap();
    let run = |state: &mut PlanState, input, out: &mut [f32]| {
        plan.run(state, input, tensorprep::TensorMut::F32(out))
    };
    assert!(matches!(
        run(&mut state, Input::Pixels(small), &mut out),
        Err(Error::SizeMismatch { .. })
    ));
    let bgr = ImageView::new(PixelFormat::Bgr8, 64, 48, &px).unwrap();
    assert!(matches!(
        run(&mut state, Input::Pixels(bgr), &mut out),
        Err(Error::FormatMismatch { .. })
    ));
    assert!(matches!(
        run(&mut state, Input::Encoded(&px), &mut out),
        Err(Error::WrongInputKind {
            expected: InputKind::Pixels,
            found: InputKind::Encoded,
            ..
        })
    ));
    let ok = ImageView::new(PixelFormat::Rgb8, 64, 48, &px).unwrap();
    let mut bytes = vec![0u8; 3 * 64];
    assert!(matches!(
        plan.run(
            &mut state,
            Input::Pixels(ok),
            tensorprep::TensorMut::U8(&mut bytes)
        ),
        Err(Error::DTypeMismatch {
            expected: DType::F32,
            found: DType::U8,
        })
    ));
    assert!(matches!(
        run(&mut state, Input::Pixels(ok), &mut out[..10]),
        Err(Error::TensorSize { .. })
    ));
    run(&mut state, Input::Pixels(ok), &mut out).unwrap();

    // A JPEG plan given garbage, then a truncated file: errors, and the state still works.
    let jpeg_plan = Pipeline::imagenet_eval()
        .compile(InputDesc::Encoded)
        .unwrap();
    let mut out = vec![0f32; 3 * 224 * 224];
    let bytes = read("sample.jpg");
    for bad in [&px[..100], &bytes[..bytes.len() / 2], &[][..]] {
        assert!(
            jpeg_plan
                .run(
                    &mut state,
                    Input::Encoded(bad),
                    tensorprep::TensorMut::F32(&mut out)
                )
                .is_err()
        );
    }
    jpeg_plan
        .run(
            &mut state,
            Input::Encoded(&bytes),
            tensorprep::TensorMut::F32(&mut out),
        )
        .unwrap();
}

#[test]
#[cfg_attr(
    not(feature = "turbojpeg"),
    ignore = "needs libjpeg-turbo: cargo test -p tensorprep-tests --features turbojpeg"
)]
fn region_decoding_equals_the_full_decode() {
    use tensorprep::jpeg::Scale;
    let mut checked = 0;
    for name in PHOTOS {
        let bytes = read(name);
        for scale in [Scale::Full, Scale::Half, Scale::Quarter] {
            let mut dec = JpegDecoder::new(DecodeOptions {
                backend: Backend::LibjpegTurbo,
                scale,
                ..DecodeOptions::default()
            });
            let full = dec.decode(&bytes).unwrap();
            let info = dec.read_info(&bytes).unwrap();
            let (w, h) = (info.width, info.height);
            let wanted = [
                Rect::new(0, 0, w, h),
                Rect::new(16, 1, w - 19, h - 2),
                Rect::new(32, h / 3, 21, h / 3),
                Rect::new(0, h - 1, 7, 1),
                Rect::new(w - 9, 5, 9, 9),
                Rect::new(w / 2, h / 2, 1, 1),
            ];
            for want in wanted {
                let r = info
                    .region_covering(want, scale)
                    .expect("libjpeg-turbo reports the MCU");
                let mut out = Image::new(PixelFormat::Rgb8, r.width, r.height).unwrap();
                dec.decode_region_into(&bytes, r, &mut out.view_mut())
                    .unwrap();
                // The wanted part of the region, against the full decode.
                let inner = Rect::new(want.x - r.x, 0, want.width, want.height);
                let got = copy(&out.view().crop(inner).unwrap());
                let expected = copy(&full.view().crop(want).unwrap());
                assert!(got == expected, "{name} {scale:?} {want:?} via {r:?}");
                checked += 1;
            }
        }
    }
    println!("{checked} regions identical to the full decode");
}

#[test]
fn batches_sequential_parallel_and_pulled_equal_single_runs() {
    let plan = Pipeline::imagenet_eval()
        .compile(InputDesc::Encoded)
        .unwrap();
    let files: Vec<Vec<u8>> = PHOTOS.iter().map(|n| read(n)).collect();
    let inputs: Vec<Input<'_>> = files.iter().map(|b| Input::Encoded(b)).collect();
    let one = 3 * 224 * 224;
    let mut state = PlanState::new();
    let mut singles = vec![0f32; one * inputs.len()];
    for (i, input) in inputs.iter().enumerate() {
        plan.run(
            &mut state,
            *input,
            tensorprep::TensorMut::F32(&mut singles[i * one..(i + 1) * one]),
        )
        .unwrap();
    }
    let mut batch = vec![0f32; one * inputs.len()];
    plan.run_batch(&mut state, &inputs, tensorprep::TensorMut::F32(&mut batch))
        .unwrap();
    assert!(batch == singles);
    for threads in [1, 2, 3] {
        let mut states: Vec<PlanState> = (0..threads).map(|_| PlanState::new()).collect();
        let mut par = vec![0f32; one * inputs.len()];
        plan.run_batch_parallel(&mut states, &inputs, tensorprep::TensorMut::F32(&mut par))
            .unwrap();
        assert!(par == singles, "{threads} threads");
    }
    // Pulled from a source in batches of 4: 4, then the remaining 2, then none.
    let slices: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    let mut source = tensorprep::pipeline::BytesSource::new(&slices);
    let mut pulled = vec![0f32; one * 4];
    let mut got = Vec::new();
    loop {
        let n = plan
            .pull_batch(
                &mut state,
                &mut source,
                tensorprep::TensorMut::F32(&mut pulled),
                4,
            )
            .unwrap();
        got.extend_from_slice(&pulled[..n * one]);
        if n < 4 {
            break;
        }
    }
    assert!(got == singles);
    // A bad file in a parallel batch: its error comes back, the others are written.
    let mut with_bad = inputs.clone();
    with_bad[2] = Input::Encoded(&files[0][..100]);
    let mut states: Vec<PlanState> = (0..2).map(|_| PlanState::new()).collect();
    let mut par = vec![0f32; one * inputs.len()];
    let r = plan.run_batch_parallel(&mut states, &with_bad, tensorprep::TensorMut::F32(&mut par));
    assert!(matches!(r, Err(Error::Jpeg { .. })));
    assert!(par[5 * one..] == singles[5 * one..]);
}

#[test]
#[cfg_attr(
    not(feature = "turbojpeg"),
    ignore = "needs libjpeg-turbo: cargo test -p tensorprep-tests --features turbojpeg"
)]
fn fast_decode_equals_scaled_decode_then_the_same_resize() {
    use tensorprep::jpeg::Scale;
    use tensorprep::pipeline::DecodeScaling;
    // Pillow's resize, and fast_image_resize's (which the fast mode suits).
    for resample in [
        Resample::default(),
        Resample::FastImageResize(Filter::Bilinear),
    ] {
        let mut p =
            tensorprep_tests::imagenet_eval_with(resample).with_decoder(Backend::LibjpegTurbo);
        let exact = p.compile(InputDesc::Encoded).unwrap();
        for (scaling, gap) in [(DecodeScaling::Fast, 2), (DecodeScaling::Draft, 1)] {
            assert_eq!(scaling.reducing_gap(), Some(gap));
            p.map_decode(|d| d.scaling = scaling);
            let fast = p.compile(InputDesc::Encoded).unwrap();
            let rule = SizeRule::ShorterSide {
                size: 256,
                max_size: None,
                rounding: Rounding::Truncate,
            };
            let mut state = PlanState::new();
            let mut scaled = 0;
            for name in PHOTOS.iter().chain(&["lxqt_butterfly_kenneth_wimer.jpg"]) {
                let bytes = read(name);
                let mut dec = JpegDecoder::new(DecodeOptions {
                    backend: Backend::LibjpegTurbo,
                    ..DecodeOptions::default()
                });
                let info = dec.read_info(&bytes).unwrap();
                // The target comes from the full size; the decode is the smallest scale
                // at least `gap` times that target; the resize goes from there to the
                // same target.
                let target = rule.output_size(info.width, info.height).unwrap();
                let scale = Scale::keeping((info.stored_width, info.stored_height), target, gap);
                scaled += usize::from(scale != Scale::Full);
                let small = JpegDecoder::new(DecodeOptions {
                    backend: Backend::LibjpegTurbo,
                    scale,
                    ..DecodeOptions::default()
                })
                .decode(&bytes)
                .unwrap();
                let resized = resize_owned(&small.view(), target.0, target.1, resample).unwrap();
                let rect = CenterCrop {
                    width: 224,
                    height: 224,
                    rounding: CropRounding::HalfEven,
                }
                .rect(target.0, target.1)
                .unwrap();
                let want = Finisher::new(&FinishSpec::imagenet())
                    .unwrap()
                    .run_to_tensor(&resized.view().crop(rect).unwrap())
                    .unwrap();
                let got = run_plan(&fast, &mut state, Input::Encoded(&bytes), want.len()).unwrap();
                assert!(
                    same(&got, &want),
                    "{name} at {scale:?} ({scaling:?}, {resample:?})"
                );
                let full =
                    run_plan(&exact, &mut state, Input::Encoded(&bytes), want.len()).unwrap();
                let (Tensor::F32(a), Tensor::F32(b)) = (&got, &full) else {
                    unreachable!()
                };
                let levels = a
                    .iter()
                    .zip(b)
                    .enumerate()
                    .map(|(i, (x, y))| {
                        f64::from((x - y).abs())
                            * 255.0
                            * f64::from(Normalize::IMAGENET.std[i / (224 * 224)])
                    })
                    .fold((0.0f64, 0.0f64), |(m, s), d| (m.max(d), s + d));
                println!(
                    "{scaling:?} decode {name:<32} {scale:?} {resample:?}: max {:.1} mean {:.3} levels from the exact tensor",
                    levels.0,
                    levels.1 / a.len() as f64
                );
            }
            assert!(
                scaled > 0,
                "no photo was large enough to decode at reduced size ({scaling:?})"
            );
        }
    }
}

#[test]
fn hostile_pipeline_parameters_are_errors_not_panics() {
    use tensorprep::arena::Arena;
    use tensorprep::pipeline::ArenaPlan;
    let mut in_arena = 0;
    let px: Vec<u8> = (0..40 * 30 * 3).map(|i| (i % 251) as u8).collect();
    let src = ImageView::new(PixelFormat::Rgb8, 40, 30, &px).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let extremes = [
        0u32,
        1,
        2,
        16,
        31,
        64,
        1 << 16,
        1 << 20,
        u32::MAX / 2,
        u32::MAX,
    ];
    let (mut compiled, mut refused) = (0, 0);
    let mut state = PlanState::new();
    for _ in 0..3000 {
        let mut ops = Vec::new();
        for _ in 0..1 + rng.below_u32(4) {
            let a = rng.pick(&extremes);
            let b = rng.pick(&extremes);
            ops.push(match rng.below_u32(6) {
                0 => Op::Resize(Resize {
                    size: rng.pick(&[
                        SizeRule::Exact {
                            width: a,
                            height: b,
                        },
                        SizeRule::ShorterSide {
                            size: a,
                            max_size: Some(b),
                            rounding: Rounding::HalfEven,
                        },
                        SizeRule::LongerSide {
                            size: a,
                            rounding: Rounding::Truncate,
                        },
                        SizeRule::Fit {
                            width: a,
                            height: b,
                            upscale: true,
                        },
                        SizeRule::Multiple {
                            width: a,
                            height: b,
                            multiple: 14,
                            keep_aspect_ratio: true,
                        },
                    ]),
                    resample: rng.pick(&Resample::ALL),
                }),
                1 => Op::Crop(Rect::new(a, b, rng.pick(&extremes), rng.pick(&extremes))),
                2 => Op::CenterCrop(CenterCrop {
                    width: a,
                    height: b,
                    rounding: CropRounding::Floor,
                }),
                3 => Op::Pad(Pad {
                    to: match rng.below_u32(3) {
                        0 => PadTo::Borders {
                            left: a,
                            top: b,
                            right: a,
                            bottom: b,
                        },
                        1 => PadTo::Canvas {
                            width: a,
                            height: b,
                            placement: Placement::Center,
                        },
                        _ => PadTo::AtLeast {
                            width: a,
                            height: b,
                            placement: Placement::TopLeft,
                        },
                    },
                    fill: [1, 2, 3],
                }),
                4 => Op::Rotate(Rotation::Cw90),
                _ => Op::ConvertColor {
                    to: rng.pick(&[PixelFormat::Nv21, PixelFormat::Gray8, PixelFormat::Rgba8]),
                    range: YuvRange::Full,
                },
            });
        }
        // Mostly valid values, so that many pipelines get as far as running.
        let bad = f32::from_bits(rng.next_u32());
        let odd = rng.below_u32(5) == 0;
        ops.push(Op::Normalize(Normalize {
            mean: [if odd { bad } else { 0.5 }, 0.0, 0.0],
            std: if odd {
                rng.pick(&[[0.0; 3], [f32::NAN; 3], [bad; 3]])
            } else {
                [0.25; 3]
            },
            divisor: if odd {
                rng.pick(&[0.0, -1.0, f32::INFINITY])
            } else {
                255.0
            },
            std_reciprocal: false,
            second_std: [1.0; 3],
        }));
        ops.extend(Op::finish(
            Normalize::RAW,
            Layout::Hwc,
            ChannelOrder::Rgb,
            DType::U8,
            Quantization {
                scale: rng.pick(&[1.0, 1.0, 1.0, 0.0, f32::NAN, -2.0]),
                zero_point: rng.pick(&[0, 0, i32::MAX, i32::MIN]),
            },
        ));
        // Keep one Normalize (the second would be refused for being a duplicate).
        ops.remove(ops.len() - 3);
        let Ok(p) = Pipeline::from_ops(&ops) else {
            refused += 1;
            continue;
        };
        match p.compile(InputDesc::pixels(PixelFormat::Rgb8, 40, 30)) {
            Ok(plan) => {
                compiled += 1;
                let mut out = Tensor::zeros(plan.dtype(), plan.output_len().unwrap_or(0));
                // Running may still fail (a tensor too large is never allocated
                // here), but it must not panic.
                if out.len() < 1 << 24 {
                    let ran = plan.run(&mut state, Input::Pixels(src), out.as_mut());
                    // The same pipeline in caller memory: no panic either, and
                    // where both run, the same tensor.
                    let input = InputDesc::pixels(PixelFormat::Rgb8, 40, 30);
                    if let Ok(needed) = ArenaPlan::bytes_needed(&p, input)
                        && needed < 1 << 26
                    {
                        let mut memory = vec![0u8; needed];
                        let mut arena = Arena::new(&mut memory);
                        let built = ArenaPlan::new_in(&mut arena, &p, input);
                        if let (Ok((arena_plan, mut arena_state)), Ok(_)) = (built, &ran) {
                            let mut again = Tensor::zeros(arena_plan.dtype(), out.len());
                            arena_plan
                                .run(&mut arena_state, src, again.as_mut())
                                .unwrap_or_else(|e| panic!("{e}: {ops:?}"));
                            assert!(same(&again, &out), "{ops:?}");
                            in_arena += 1;
                        }
                    }
                }
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
        }
    }
    println!(
        "hostile pipelines: {compiled} compiled, {refused} refused, none panicked; \
         {in_arena} also ran in caller memory, identical"
    );
    assert!(refused > 0 && compiled > 0 && in_arena > 0);
}
