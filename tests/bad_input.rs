//! Hostile and careless input: every op returns a typed error, none panics, and no
//! allocation is made for an image that the limits refuse.

use tensorprep::color::{YuvRange, convert_color};
use tensorprep::finish::{FinishSpec, Finisher};
use tensorprep::geometry::{Flip, Placement, Rotation, center_crop, flip, pad, rotate};
use tensorprep::jpeg::{Backend, DecodeOptions, JpegDecoder};
use tensorprep::resize::{Filter, Resample, ResizePlan, ResizeState, Resizer, SourceBox};
use tensorprep::{
    Error, Image, ImageView, ImageViewMut, JpegErrorKind, Limits, PixelFormat, Plane, Rect,
    TensorMut,
};
use tensorprep_tests::{LargestAllocator, Rng, largest_allocation, read, reset_largest};

#[global_allocator]
static GLOBAL: LargestAllocator = LargestAllocator;

const JPEGS: [&str; 6] = [
    "sample.jpg",
    "sample_progressive.jpg",
    "sample_gray.jpg",
    "sample_cmyk.jpg",
    "sklearn_china.jpg",
    "exif_orient6_grace_hopper.jpg",
];

/// Default options on `backend`.
fn on(backend: Backend) -> DecodeOptions {
    DecodeOptions {
        backend,
        ..DecodeOptions::default()
    }
}

#[test]
fn truncated_jpegs_are_errors_in_strict_mode_at_every_cut() {
    for backend in Backend::available() {
        truncated_jpegs_with(backend);
    }
}

fn truncated_jpegs_with(backend: Backend) {
    let mut decoder = JpegDecoder::new(on(backend));
    let mut lenient = JpegDecoder::new(DecodeOptions {
        strict: false,
        ..on(backend)
    });
    for name in JPEGS {
        let bytes = read(name);
        assert!(decoder.decode(&bytes).is_ok(), "{name} itself must decode");
        // Every cut in the headers, then about 100 cuts spread over the entropy-coded
        // data (an odd step, so they land at every phase of the bit stream).
        let step = (bytes.len() / 100) | 1;
        let cuts = (0..bytes.len().min(700)).chain((700..bytes.len() - 2).step_by(step));
        for cut in cuts {
            let result = decoder.decode(&bytes[..cut]);
            assert!(
                matches!(result, Err(Error::Jpeg { .. })),
                "{backend:?}: {name} cut at {cut} of {}: {:?}",
                bytes.len(),
                result.map(|i| (i.width(), i.height()))
            );
            // Lenient mode may fill with gray or fail, but never panics.
            let _ = lenient.decode(&bytes[..cut]);
        }
    }
    // The error says what happened.
    let bytes = read("sample.jpg");
    assert_eq!(
        decoder.decode(&bytes[..bytes.len() / 2]).unwrap_err(),
        Error::Jpeg {
            kind: JpegErrorKind::Truncated
        }
    );
}

#[test]
fn random_and_corrupted_bytes_never_panic() {
    for backend in Backend::available() {
        random_bytes_with(backend);
    }
}

fn random_bytes_with(backend: Backend) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut decoder = JpegDecoder::new(on(backend));
    for len in [0usize, 1, 2, 3, 4, 16, 100, 1000, 10_000] {
        for _ in 0..20 {
            let mut junk: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if len >= 2 {
                junk[0] = 0xFF;
                junk[1] = 0xD8; // a JPEG start marker, so the parser goes further
            }
            assert!(decoder.decode(&junk).is_err());
        }
    }
    for name in JPEGS {
        let original = read(name);
        for round in 0..150 {
            let mut bytes = original.clone();
            for _ in 0..1 + round % 8 {
                let at = rng.below(bytes.len());
                bytes[at] = rng.next_u64() as u8;
            }
            for strict in [true, false] {
                let mut d = JpegDecoder::new(DecodeOptions {
                    strict,
                    ..on(backend)
                });
                let _ = d.decode(&bytes);
            }
        }
    }
}

/// Reduced-size decoding reads a rewritten stream for progressive files at
/// 1/8 (`jpeg::progressive`): damaged and cut progressive files go through
/// it (or around it) without a panic, strict cuts stay errors, and what
/// decodes has the 1/8 size.
#[test]
#[cfg_attr(
    not(feature = "turbojpeg"),
    ignore = "needs libjpeg-turbo: cargo test -p tensorprep-tests --features turbojpeg"
)]
fn damaged_progressive_files_at_one_eighth_never_panic() {
    use tensorprep::jpeg::Scale;
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let eighth = |strict| {
        JpegDecoder::new(DecodeOptions {
            backend: Backend::LibjpegTurbo,
            scale: Scale::Eighth,
            strict,
            ..DecodeOptions::default()
        })
    };
    let (mut strict, mut lenient) = (eighth(true), eighth(false));
    let mut decoded = 0;
    for name in ["p444.jpg", "p420_restart.jpg", "p_gray.jpg", "p_cmyk.jpg"] {
        let original = read(&format!("progressive/{name}"));
        let full = strict.decode(&original).unwrap();
        for round in 0..200 {
            let mut bytes = original.clone();
            for _ in 0..1 + round % 6 {
                let at = rng.below(bytes.len());
                bytes[at] = rng.next_u64() as u8;
            }
            for d in [&mut strict, &mut lenient] {
                if let Ok(img) = d.decode(&bytes) {
                    assert_eq!((img.width(), img.height()), (full.width(), full.height()));
                    decoded += 1;
                }
            }
        }
        // Cut anywhere: strict decoding refuses, lenient never panics.
        let step = (original.len() / 60) | 1;
        for cut in (700..original.len() - 2).step_by(step) {
            assert!(
                strict.decode(&original[..cut]).is_err(),
                "{name} cut at {cut}"
            );
            let _ = lenient.decode(&original[..cut]);
        }
    }
    assert!(
        decoded > 0,
        "no damaged file decoded at all: the test reaches nothing"
    );
}

/// `sample.jpg` with the frame header patched to claim `width` x `height`.
fn with_claimed_size(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = read("sample.jpg");
    let sof = bytes
        .windows(2)
        .position(|w| w == [0xFF, 0xC0])
        .expect("baseline SOF0");
    bytes[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    bytes
}

#[test]
fn pixel_limits_refuse_before_allocating() {
    let bomb = with_claimed_size(65_000, 65_000);
    let limits = Limits {
        max_pixels: 4_000_000,
        ..Limits::DEFAULT
    };
    let mut decoder = JpegDecoder::new(DecodeOptions {
        limits,
        ..DecodeOptions::default()
    });
    reset_largest();
    let err = decoder.decode(&bomb).unwrap_err();
    assert_eq!(
        err,
        Error::TooManyPixels {
            pixels: 65_000 * 65_000,
            limit: 4_000_000
        }
    );
    assert!(decoder.read_info(&bomb).is_err());
    let largest = largest_allocation();
    assert!(
        largest < 1 << 20,
        "largest allocation {largest} bytes for a refused image"
    );
    // Even within the pixel cap, the allocation cap holds.
    let tight = JpegDecoder::new(DecodeOptions {
        limits: Limits {
            max_pixels: u64::MAX,
            max_alloc_bytes: 1000,
        },
        ..DecodeOptions::default()
    })
    .decode(&read("sample.jpg"));
    assert!(matches!(tight, Err(Error::AllocationTooLarge { .. })));
    // The same caps hold on every backend.
    for backend in Backend::available() {
        let mut d = JpegDecoder::new(DecodeOptions {
            limits,
            ..on(backend)
        });
        reset_largest();
        assert!(
            matches!(d.decode(&bomb), Err(Error::TooManyPixels { .. })),
            "{backend:?}"
        );
        assert!(largest_allocation() < 1 << 20, "{backend:?}");
        assert!(d.decode(&with_claimed_size(0, 300)).is_err(), "{backend:?}");
    }
    // A zero dimension in the header is corrupt, not a zero-sized image.
    assert!(decoder.decode(&with_claimed_size(0, 300)).is_err());
    assert!(Image::new(PixelFormat::Rgb8, 200_000, 200_000).is_err());
    assert!(Image::new(PixelFormat::Rgb8, 0, 10).is_err());
}

#[test]
fn views_validate_dimensions_strides_and_lengths() {
    let buf = [0u8; 64];
    assert!(matches!(
        ImageView::new(PixelFormat::Rgb8, 0, 4, &buf),
        Err(Error::InvalidDimensions { .. })
    ));
    assert!(matches!(
        ImageView::new(PixelFormat::Gray8, 1 << 20, 1, &buf),
        Err(Error::InvalidDimensions { .. })
    ));
    assert!(matches!(
        ImageView::with_stride(PixelFormat::Rgb8, 4, 2, &buf, 11),
        Err(Error::StrideTooSmall {
            stride: 11,
            min: 12,
            ..
        })
    ));
    assert!(matches!(
        ImageView::with_stride(PixelFormat::Rgb8, 4, 3, &buf, 30),
        Err(Error::BufferTooSmall { needed: 72, .. })
    ));
    // The last row need not be padded.
    assert!(ImageView::with_stride(PixelFormat::Rgb8, 4, 2, &buf[..44], 32).is_ok());
    // YUV: each plane is checked.
    let y = [0u8; 16];
    let uv = [0u8; 7];
    assert!(matches!(
        ImageView::from_planes(
            PixelFormat::Nv21,
            4,
            4,
            &[Plane::new(&y, 4), Plane::new(&uv, 4)]
        ),
        Err(Error::BufferTooSmall { plane: 1, .. })
    ));
    assert!(matches!(
        ImageView::from_planes(PixelFormat::I420, 4, 4, &[Plane::new(&y, 4)]),
        Err(Error::WrongPlaneCount { .. })
    ));
    assert!(
        usize::MAX > 0
            && ImageView::with_stride(PixelFormat::Gray8, 4, 4, &buf, usize::MAX).is_err()
    );
    let img = ImageView::new(PixelFormat::Nv12, 4, 4, &[0u8; 24]).unwrap();
    assert!(matches!(
        img.crop(Rect::new(1, 0, 2, 2)),
        Err(Error::UnalignedCrop { .. })
    ));
    assert!(matches!(
        img.crop(Rect::new(2, 2, 4, 2)),
        Err(Error::RectOutOfBounds { .. })
    ));
    assert!(img.crop(Rect::new(0, 0, 0, 2)).is_err());
}

#[test]
fn every_op_rejects_wrong_destinations() {
    let px = [7u8; 6 * 4 * 3];
    let src = ImageView::new(PixelFormat::Rgb8, 6, 4, &px).unwrap();
    let mut out = [0u8; 256];

    let mut dst = ImageViewMut::new(PixelFormat::Rgb8, 5, 4, &mut out).unwrap();
    assert!(matches!(
        convert_color(&src, &mut dst, YuvRange::Full),
        Err(Error::SizeMismatch { .. })
    ));
    assert!(matches!(
        flip(&src, &mut dst, Flip::Vertical),
        Err(Error::SizeMismatch { .. })
    ));
    assert!(matches!(
        rotate(&src, &mut dst, Rotation::Cw90),
        Err(Error::SizeMismatch { .. })
    ));
    assert!(matches!(
        pad(&src, &mut dst, Placement::Center, &[0, 0, 0]),
        Err(Error::RectOutOfBounds { .. })
    ));

    let mut gray = ImageViewMut::new(PixelFormat::Gray8, 6, 4, &mut out).unwrap();
    assert!(matches!(
        Resizer::new().resize(&src, &mut gray, Resample::Pillow(Filter::Bilinear)),
        Err(Error::FormatMismatch { .. })
    ));
    assert!(matches!(
        flip(&src, &mut gray, Flip::Vertical),
        Err(Error::FormatMismatch { .. })
    ));

    let mut big = ImageViewMut::new(PixelFormat::Rgb8, 8, 8, &mut out[..192]).unwrap();
    assert!(
        pad(&src, &mut big, Placement::Center, &[1, 2]).is_err(),
        "fill of the wrong length"
    );

    assert!(matches!(
        center_crop(&src, 7, 2),
        Err(Error::RectOutOfBounds { .. })
    ));

    let finisher = Finisher::new(&FinishSpec::imagenet()).unwrap();
    let mut tensor = vec![0f32; 3 * 6 * 4 + 1];
    assert!(matches!(
        finisher.run(&src, TensorMut::F32(&mut tensor)),
        Err(Error::TensorSize { .. })
    ));
    let nv = [0u8; 36];
    let yuv = ImageView::new(PixelFormat::Nv21, 6, 4, &nv).unwrap();
    assert!(matches!(
        finisher.run(&yuv, TensorMut::F32(&mut tensor[..72])),
        Err(Error::UnsupportedFormat { .. })
    ));

    let jpeg = read("sample.jpg");
    let mut decoder = JpegDecoder::new(DecodeOptions::default());
    let mut small = Image::new(PixelFormat::Rgb8, 450, 300).unwrap();
    assert!(matches!(
        decoder.decode_into(&jpeg, &mut small.view_mut()),
        Err(Error::SizeMismatch { .. })
    ));
    let mut wrong = Image::new(PixelFormat::Bgr8, 451, 300).unwrap();
    assert!(matches!(
        decoder.decode_into(&jpeg, &mut wrong.view_mut()),
        Err(Error::FormatMismatch { .. })
    ));
    let yuv_out = JpegDecoder::new(DecodeOptions {
        format: PixelFormat::I420,
        ..DecodeOptions::default()
    })
    .decode(&jpeg);
    assert!(matches!(yuv_out, Err(Error::UnsupportedFormat { .. })));
}

/// Random shapes, strides, crops and parameters through every op: errors are fine,
/// panics are not.
#[test]
fn random_shapes_through_every_op_never_panic() {
    let mut rng = Rng(42);
    let data: Vec<u8> = (0..40_000).map(|_| rng.next_u64() as u8).collect();
    let mut out = vec![0u8; 40_000];
    let mut tensor = vec![0f32; 40_000];
    let mut resizer = Resizer::new();
    let finisher = Finisher::new(&FinishSpec::imagenet()).unwrap();
    for _ in 0..20_000 {
        let f = PixelFormat::ALL[rng.below(8)];
        let g = PixelFormat::ALL[rng.below(8)];
        let (w, h) = (rng.below(40) as u32, rng.below(40) as u32);
        let (w2, h2) = (rng.below(40) as u32, rng.below(40) as u32);
        let stride = rng.below(200);
        let len = rng.below(data.len());
        let Ok(src) = ImageView::with_stride(f, w, h, &data[..len], stride)
            .or_else(|_| ImageView::new(f, w, h, &data[..len]))
        else {
            continue;
        };
        let src = match rng.below(3) {
            0 => src
                .crop(Rect::new(rng.below(8) as u32, rng.below(8) as u32, w2, h2))
                .unwrap_or(src),
            _ => src,
        };
        let olen = rng.below(out.len());
        let Ok(mut dst) = ImageViewMut::new(g, w2, h2, &mut out[..olen]) else {
            continue;
        };
        let _ = convert_color(&src, &mut dst, YuvRange::Limited);
        let _ = resizer.resize(&src, &mut dst, Resample::Pillow(Filter::Lanczos3));
        let _ = resizer.resize(&src, &mut dst, Resample::OpenCvLinear);
        let _ = resizer.resize(&src, &mut dst, Resample::OpenCvArea);
        // Boxes anywhere, including outside the image, reversed, NaN and infinite.
        let coord = |rng: &mut Rng| match rng.below(12) {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => -1.5,
            _ => rng.below(50) as f32 + rng.below(4) as f32 * 0.25,
        };
        let b = SourceBox {
            x0: coord(&mut rng),
            y0: coord(&mut rng),
            x1: coord(&mut rng),
            y1: coord(&mut rng),
        };
        let filter = [Filter::Nearest, Filter::Box, Filter::Bicubic][rng.below(3)];
        let _ = resizer.resize_box(&src, b, &mut dst, Resample::Pillow(filter));
        let _ = resizer.resize_box(&src, b, &mut dst, Resample::OpenCvArea);
        let _ = resizer.letterbox(
            &src,
            &mut dst,
            Resample::Pillow(Filter::Nearest),
            Placement::Center,
            &[114; 3],
        );
        let _ = flip(&src, &mut dst, Flip::Both);
        let _ = rotate(&src, &mut dst, Rotation::Cw270);
        let _ = pad(
            &src,
            &mut dst,
            Placement::TopLeft,
            &[0; 4][..f.bytes_per_pixel().unwrap_or(1)],
        );
        let tlen = rng.below(tensor.len());
        let _ = finisher.run(&src, TensorMut::F32(&mut tensor[..tlen]));
        let _ = center_crop(&src, w2, h2);
    }
}

#[test]
fn resize_plans_refuse_scratch_beyond_the_limits() {
    // Widened and flattened: the intermediate rows (262144 wide, 100000 of them)
    // would take 100 GB. (A strip over 100 times taller than wide would not: Pillow
    // resamples those vertically first.)
    let bilinear = Resample::Pillow(Filter::Bilinear);
    let r = ResizePlan::new((3000, 100_000), (262_144, 10), bilinear).map(|_| ());
    assert!(matches!(r, Err(Error::AllocationTooLarge { .. })), "{r:?}");
    assert!(ResizePlan::new((10, 262_144), (262_144, 10), bilinear).is_ok());
    // Destination larger than the pixel cap.
    let tight = Limits {
        max_pixels: 1000,
        max_alloc_bytes: 1 << 30,
    };
    let full = SourceBox::full(10, 10);
    let r = ResizePlan::with_source_box((10, 10), full, (100, 100), Resample::default(), &tight);
    assert!(
        matches!(r, Err(Error::TooManyPixels { .. })),
        "{:?}",
        r.map(|_| ())
    );
    // A plan is for one size: other sizes are errors, not out-of-bounds reads.
    let plan = ResizePlan::new((8, 8), (4, 4), Resample::default()).unwrap();
    let px = [0u8; 9 * 9 * 3];
    let mut out = [0u8; 4 * 4 * 3];
    let src = ImageView::new(PixelFormat::Rgb8, 9, 9, &px).unwrap();
    let mut dst = ImageViewMut::new(PixelFormat::Rgb8, 4, 4, &mut out).unwrap();
    assert!(matches!(
        plan.run(&mut ResizeState::new(), &src, &mut dst),
        Err(Error::SizeMismatch { .. })
    ));
}

/// Shapes are checked arithmetic, and a fixed output must fit the limits when
/// the plan is compiled (the caller allocates the tensor from its shape).
#[test]
fn output_shapes_are_checked_when_compiling() {
    use tensorprep::pipeline::{InputDesc, Op, Pad, PadTo, Pipeline};
    let eval = Pipeline::imagenet_eval();
    let (decode, rest) = eval.ops().split_first().unwrap();
    let with = |extra: Op| {
        let mut ops = vec![*decode];
        ops.extend_from_slice(&rest[..2]); // Resize, CenterCrop 224
        ops.push(extra);
        ops.extend_from_slice(&rest[2..]);
        Pipeline::from_ops(&ops).unwrap()
    };
    // Borders summing past u32: refused, not wrapped to a small false shape.
    let wrap = with(Op::Pad(Pad {
        to: PadTo::Borders {
            left: u32::MAX - 100,
            top: 0,
            right: 200,
            bottom: 0,
        },
        fill: [0; 3],
    }));
    for input in [
        InputDesc::Encoded,
        InputDesc::pixels(PixelFormat::Rgb8, 640, 480),
    ] {
        let err = wrap.compile(input).unwrap_err();
        assert!(
            matches!(err, Error::InvalidDimensions { .. }),
            "{input:?}: {err}"
        );
    }
    // A canvas of 262144 x 262144: refused by the pixel limit at compile time.
    let huge = with(Op::Pad(Pad {
        to: PadTo::Canvas {
            width: 1 << 18,
            height: 1 << 18,
            placement: Placement::Center,
        },
        fill: [0; 3],
    }));
    let err = huge.compile(InputDesc::Encoded).unwrap_err();
    assert!(matches!(err, Error::TooManyPixels { .. }), "{err}");
    // Within the pixel limit but over the allocation limit for its float tensor.
    let big = with(Op::Pad(Pad {
        to: PadTo::Canvas {
            width: 16_000,
            height: 8_000,
            placement: Placement::Center,
        },
        fill: [0; 3],
    }));
    let limits = Limits {
        max_alloc_bytes: 1 << 30,
        ..Limits::DEFAULT
    };
    let err = big
        .compile_with_limits(InputDesc::Encoded, &limits)
        .unwrap_err();
    assert!(matches!(err, Error::AllocationTooLarge { .. }), "{err}");
}

/// Normalize parameters each finite but whose result is not, for some 8-bit
/// value, are refused (they gave tensors of infinities).
#[test]
fn normalizations_that_overflow_are_refused() {
    use tensorprep::finish::{ChannelOrder, Normalize};
    use tensorprep::{DType, Layout, Quantization};
    let cases = [
        Normalize {
            mean: [0.0; 3],
            std: [1e-45; 3],
            divisor: 255.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        },
        Normalize {
            mean: [0.0; 3],
            std: [1.0; 3],
            divisor: 1e-45,
            std_reciprocal: false,
            second_std: [1.0; 3],
        },
        Normalize {
            mean: [3e38; 3],
            std: [1e-30; 3],
            divisor: 1.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        },
    ];
    for normalize in cases {
        let spec = FinishSpec {
            normalize,
            order: ChannelOrder::Rgb,
            layout: Layout::Chw,
            dtype: DType::F32,
            quantization: Quantization::IDENTITY,
        };
        let err = Finisher::new(&spec).unwrap_err();
        assert!(
            err.to_string().contains("overflows"),
            "{normalize:?}: {err}"
        );
    }
    // Finite in float32 but past float16's range: refused for f16 output only.
    let wide = FinishSpec {
        normalize: Normalize {
            mean: [0.0; 3],
            std: [0.001; 3],
            divisor: 1.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        },
        order: ChannelOrder::Rgb,
        layout: Layout::Chw,
        dtype: DType::F16,
        quantization: Quantization::IDENTITY,
    };
    assert!(
        Finisher::new(&wide)
            .unwrap_err()
            .to_string()
            .contains("float16")
    );
    assert!(
        Finisher::new(&FinishSpec {
            dtype: DType::F32,
            ..wide
        })
        .is_ok()
    );
    assert!(Finisher::new(&FinishSpec::imagenet()).is_ok());
}

/// A progressive JPEG with hundreds of (valid, empty) scans is refused before
/// decoding, on every backend, and says why.
#[test]
fn jpegs_with_too_many_scans_are_refused() {
    let bytes = read("sample_progressive.jpg");
    // Insert copies of a DC refinement-free scan: the last SOS segment and its
    // data, repeated before the EOI.
    let last_sos = bytes.windows(2).rposition(|w| w == [0xFF, 0xDA]).unwrap();
    let scan = &bytes[last_sos..bytes.len() - 2];
    let mut bomb = bytes[..bytes.len() - 2].to_vec();
    for _ in 0..300 {
        bomb.extend_from_slice(scan);
    }
    bomb.extend_from_slice(&[0xFF, 0xD9]);
    for backend in Backend::available() {
        let mut d = JpegDecoder::new(on(backend));
        let err = d.decode(&bomb).unwrap_err();
        assert!(
            matches!(err, Error::TooManyScans { limit: 256, .. }),
            "{backend:?}: {err}"
        );
        assert!(err.to_string().contains("at most 256"), "{err}");
        // The file itself (10 scans) is fine.
        assert!(d.decode(&bytes).is_ok());
    }
}

/// Every JPEG under `tests/fixtures`, as paths relative to it, but those
/// of the decoder under construction (`jpeg_exact/`: a file without Huffman
/// tables, which libjpeg-turbo reads with the standard's and zune-jpeg
/// calls corrupt; coefficients no encoder writes), which its own tests read.
fn jpeg_fixtures() -> Vec<String> {
    let root = tensorprep_tests::fixture("");
    let mut dirs = vec![root.clone()];
    let mut files = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "jpeg_exact") {
                    continue;
                }
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jpg") {
                let relative = path.strip_prefix(&root).unwrap();
                files.push(relative.to_str().unwrap().to_owned());
            }
        }
    }
    files.sort();
    files
}

/// The header plausibility bound counts the blocks of every component at the
/// fewest bits their coding process spends on one, and still refuses no real
/// file: every JPEG fixture decodes on every backend that has its coding
/// features, the flat 4:2:0 ones at about 2 bits per block included; the flat
/// baseline file claiming twice its height is refused before decoding.
#[test]
fn the_plausibility_bound_refuses_no_real_jpeg() {
    let files = jpeg_fixtures();
    assert!(files.len() >= 20, "{files:?}");
    for backend in Backend::available() {
        let mut decoder = JpegDecoder::new(on(backend));
        for file in &files {
            match decoder.decode(&read(file)) {
                Ok(_) => {}
                Err(Error::JpegFeature { feature, .. })
                    if feature.decoded_by() != Some(backend) => {}
                Err(e) => panic!("{backend:?}: {file}: {e}"),
            }
        }
        let mut doubled = read("flat_420_baseline.jpg");
        let sof = doubled.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        doubled[sof + 5..sof + 7].copy_from_slice(&3072u16.to_be_bytes());
        reset_largest();
        let err = decoder.read_info(&doubled).unwrap_err();
        assert!(
            matches!(
                err,
                Error::ImplausibleSize {
                    width: 2048,
                    height: 3072,
                    ..
                }
            ),
            "{backend:?}: {err}"
        );
        assert!(largest_allocation() < 1 << 20, "{backend:?}");
    }
}

/// A plan's buffers are budgeted as a whole (not one by one), and only two
/// intermediate images are alive at a time: 27 resizes and flips of a huge
/// image cost two buffers, and a total over the limit is refused when the
/// plan is resolved, naming it.
#[test]
fn a_plan_s_buffers_have_one_budget() {
    use tensorprep::pipeline::InputDesc;
    use tensorprep::resize::{Filter, Resample};
    let pipeline = tensorprep_tests::flip_bomb(false, 4000, Resample::Pillow(Filter::Nearest));
    let input = InputDesc::pixels(PixelFormat::Rgb8, 64, 64);
    // Each image is 48 MB: two slots, 96 MB, whatever the number of flips.
    let limits = |mb: u64| Limits {
        max_alloc_bytes: mb << 20,
        ..Limits::DEFAULT
    };
    assert!(pipeline.compile_with_limits(input, &limits(100)).is_ok());
    let err = pipeline
        .compile_with_limits(input, &limits(90))
        .unwrap_err();
    assert!(matches!(err, Error::PlanTooLarge { .. }), "{err}");
    assert!(err.to_string().contains("96000000 bytes"), "{err}");
}

/// Two EXIF segments, the first saying orientation 6 and the second 1:
/// Pillow and libjpeg-turbo read the first (upright 512x600); zune-jpeg's own
/// EXIF accessor keeps the last, so the decoder reads the segments itself.
#[test]
fn the_first_of_two_exif_segments_counts() {
    use tensorprep::jpeg::Orientation;
    let b = read("exif_orient6_grace_hopper.jpg");
    // The first APP1 `Exif` segment.
    let mut i = 2;
    let (start, len) = loop {
        let len = usize::from(u16::from_be_bytes([b[i + 2], b[i + 3]]));
        if b[i + 1] == 0xE1 && &b[i + 4..i + 10] == b"Exif\0\0" {
            break (i, 2 + len);
        }
        i += 2 + len;
    };
    let mut second = b[start..start + len].to_vec();
    // Its IFD0's Orientation entry set to 1 in the copy.
    let tiff = 10;
    let le = &second[tiff..tiff + 2] == b"II";
    let u16_at = |s: &[u8], o: usize| {
        let v = [s[o], s[o + 1]];
        if le {
            u16::from_le_bytes(v)
        } else {
            u16::from_be_bytes(v)
        }
    };
    let u32_at = |s: &[u8], o: usize| {
        let v = [s[o], s[o + 1], s[o + 2], s[o + 3]];
        if le {
            u32::from_le_bytes(v)
        } else {
            u32::from_be_bytes(v)
        }
    };
    let ifd = tiff + u32_at(&second, tiff + 4) as usize;
    let entries = usize::from(u16_at(&second, ifd));
    let entry = (0..entries)
        .map(|k| ifd + 2 + 12 * k)
        .find(|&e| u16_at(&second, e) == 0x0112)
        .expect("an Orientation tag");
    let one = if le {
        1u16.to_le_bytes()
    } else {
        1u16.to_be_bytes()
    };
    second[entry + 8..entry + 10].copy_from_slice(&one);
    let mut two = b[..start + len].to_vec();
    two.extend_from_slice(&second);
    two.extend_from_slice(&b[start + len..]);
    for backend in Backend::available() {
        let img = JpegDecoder::new(DecodeOptions {
            orientation: Orientation::Apply,
            ..on(backend)
        })
        .decode(&two)
        .unwrap();
        assert_eq!((img.width(), img.height()), (512, 600), "{backend:?}");
    }
}

/// Asking a fixed-shape plan for the shape of bytes that are no image is an
/// error (it answered with the fixed shape), and so is the run.
#[test]
fn the_output_shape_of_garbage_is_an_error() {
    use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
    let plan = Pipeline::imagenet_eval()
        .compile(InputDesc::Encoded)
        .unwrap();
    assert_eq!(plan.output_shape(), Some([3, 224, 224]));
    let mut state = tensorprep::pipeline::PlanState::new();
    let err = plan
        .output_shape_for(&mut state, Input::Encoded(b"not an image at all"))
        .unwrap_err();
    assert!(matches!(err, Error::UnsupportedImageFormat { .. }), "{err}");
    let jpeg = read("sample.jpg");
    assert_eq!(
        plan.output_shape_for(&mut PlanState::new(), Input::Encoded(&jpeg)),
        Ok([3, 224, 224])
    );
}

/// The positions of the restart markers (`FF D0`-`FF D7`) in `jpeg`.
fn restart_markers(jpeg: &[u8]) -> Vec<usize> {
    (0..jpeg.len() - 1)
        .filter(|&i| jpeg[i] == 0xFF && (0xD0..=0xD7).contains(&jpeg[i + 1]))
        .collect()
}

/// A restart interval whose markers are missing: zune-jpeg alone decoded it
/// with shifted blocks (68 levels off Pillow at interval 1); now both
/// backends refuse it, and the same file with its markers decodes exactly as
/// the file without a restart interval.
#[test]
fn missing_restart_markers_are_refused() {
    let plain = read("sample.jpg");
    let with = read("sample_restart.jpg");
    let at = restart_markers(&with);
    assert_eq!(
        at.len(),
        275,
        "the fixture has a marker every 2 of 551 MCUs"
    );
    let without = |drop: &[usize]| -> Vec<u8> {
        let mut out = Vec::new();
        let mut last = 0;
        for &i in drop {
            out.extend_from_slice(&with[last..i]);
            last = i + 2;
        }
        out.extend_from_slice(&with[last..]);
        out
    };
    for backend in Backend::available() {
        let mut d = JpegDecoder::new(on(backend));
        assert_eq!(
            d.decode(&with).unwrap().into_vec(),
            d.decode(&plain).unwrap().into_vec(),
            "{backend:?}: restart markers change no pixel"
        );
        for (drop, found) in [(&at[..], 0), (&at[100..101], 274)] {
            let err = d.decode(&without(drop)).unwrap_err();
            assert!(
                matches!(
                    (backend, err),
                    (Backend::LibjpegTurbo, Error::Jpeg { .. })
                        | (
                            Backend::Zune,
                            Error::JpegRestartMarkers {
                                scan: 1,
                                expected: 275,
                                ..
                            }
                        )
                ),
                "{backend:?}: {err}"
            );
            if backend == Backend::Zune {
                assert!(
                    err.to_string()
                        .contains(&format!("has {found} restart markers where")),
                    "{err}"
                );
            }
        }
    }
}

/// A scan cut short and followed by an end-of-image marker: zune-jpeg alone
/// read zero bits past the marker and reported success with wrong pixels;
/// libjpeg-turbo refuses in strict mode. Now both refuse at every cut of the
/// baseline files (their lenient modes still decode what is there).
#[test]
fn scans_cut_before_an_end_of_image_marker_are_refused() {
    for backend in Backend::available() {
        let mut strict = JpegDecoder::new(on(backend));
        let mut lenient = JpegDecoder::new(DecodeOptions {
            strict: false,
            ..on(backend)
        });
        for name in [
            "sample.jpg",
            "sample_gray.jpg",
            "sample_cmyk.jpg",
            "sample_restart.jpg",
            "sklearn_china.jpg",
            "exif_orient6_grace_hopper.jpg",
        ] {
            let bytes = read(name);
            let sos = bytes.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
            let data = sos + 20..bytes.len() - 2;
            let step = (data.len() / 60) | 1;
            for cut in data.step_by(step) {
                let mut cut_file = bytes[..cut].to_vec();
                if cut_file.last() == Some(&0xFF) {
                    cut_file.pop();
                }
                cut_file.extend_from_slice(&[0xFF, 0xD9]);
                let result = strict.decode(&cut_file);
                // The first cuts leave fewer bytes than the blocks' shortest
                // codes need: refused from the header, before decoding.
                assert!(
                    matches!(
                        result,
                        Err(Error::Jpeg { .. }
                            | Error::JpegRestartMarkers { .. }
                            | Error::ImplausibleSize { .. })
                    ),
                    "{backend:?}: {name} cut at {cut} of {}: {:?}",
                    bytes.len(),
                    result.map(|i| (i.width(), i.height()))
                );
                let _ = lenient.decode(&cut_file);
            }
        }
        // Without restart markers the cut is named as such.
        let bytes = read("sample.jpg");
        let mut cut_file = bytes[..bytes.len() * 2 / 3].to_vec();
        cut_file.extend_from_slice(&[0xFF, 0xD9]);
        assert_eq!(
            strict.decode(&cut_file).unwrap_err(),
            Error::Jpeg {
                kind: JpegErrorKind::Truncated
            },
            "{backend:?}"
        );
    }
}

/// A stride whose rows end past the address space names the stride, not
/// an allocation of `u64::MAX` bytes (nothing is allocated).
#[test]
fn a_stride_past_the_address_space_is_named() {
    let buf = [0u8; 64];
    let err = ImageView::with_stride(PixelFormat::Rgb8, 4, 3, &buf, usize::MAX).unwrap_err();
    assert_eq!(
        err,
        Error::StrideTooLarge {
            plane: 0,
            stride: usize::MAX,
            rows: 3
        }
    );
    assert!(err.to_string().contains("row stride"), "{err}");
}
