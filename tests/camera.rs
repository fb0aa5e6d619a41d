//! The camera formats of boards and webcams (YUV 4:2:2 YUYV/UYVY, RGB565 in both
//! byte orders) against OpenCV's `cvtColor` and Pillow, and through plans.
//!
//! Fixtures: `fixtures/make_camera_fixtures.py` (OpenCV 5.0.0, Pillow 13.0.0).

use tensorprep::color::{YuvRange, convert_color_owned};
use tensorprep::pipeline::{Input, InputDesc, Op, Pipeline, PlanState, Resize};
use tensorprep::resize::{Filter, Resample, ResizePlan, ResizeState};
use tensorprep::size::SizeRule;
use tensorprep::{Error, Image, ImageView, PixelFormat, Rect};
use tensorprep_tests::{Diff, read, read_png, rgb565_le, swap_byte_pairs};

const CAMERA: [PixelFormat; 4] = [
    PixelFormat::Yuyv,
    PixelFormat::Uyvy,
    PixelFormat::Rgb565Le,
    PixelFormat::Rgb565Be,
];

/// Every RGB565 value once (pixel `i` holds `i`), 256x256, in `format`'s byte order.
fn all_rgb565(format: PixelFormat) -> Vec<u8> {
    (0..=u16::MAX)
        .flat_map(|p| match format {
            PixelFormat::Rgb565Be => p.to_be_bytes(),
            _ => p.to_le_bytes(),
        })
        .collect()
}

fn format_named(name: &str) -> PixelFormat {
    match name {
        "yuyv" => PixelFormat::Yuyv,
        "uyvy" => PixelFormat::Uyvy,
        "rgb565le" => PixelFormat::Rgb565Le,
        "rgb565be" => PixelFormat::Rgb565Be,
        "rgb" => PixelFormat::Rgb8,
        "bgr" => PixelFormat::Bgr8,
        "gray" => PixelFormat::Gray8,
        other => panic!("unknown format {other}"),
    }
}

fn frame_bytes(name: &str, format: PixelFormat) -> Vec<u8> {
    match name {
        "all565le" | "all565be" => all_rgb565(format),
        file => read(&format!("camera/{file}")),
    }
}

#[test]
fn camera_formats_match_opencv_and_pillow() {
    let cases = String::from_utf8(read("camera/cases.txt")).unwrap();
    let mut checked = 0;
    for line in cases.lines().filter(|l| !l.starts_with('#')) {
        let w: Vec<&str> = line.split_whitespace().collect();
        let from = format_named(w[2]);
        let (width, height) = (w[3].parse().unwrap(), w[4].parse().unwrap());
        let range = if w[5] == "limited" {
            YuvRange::Limited
        } else {
            YuvRange::Full
        };
        let to = format_named(w[6]);
        let bytes = frame_bytes(w[1], from);
        let src = ImageView::new(from, width, height, &bytes).unwrap();
        let ours = convert_color_owned(&src, to, range).unwrap();
        let want = read_png(&format!("camera/{}", w[7]));
        // PNG has no BGR: those references hold BGR bytes in an RGB file.
        let stored = if to == PixelFormat::Bgr8 {
            PixelFormat::Rgb8
        } else {
            to
        };
        assert_eq!(want.format(), stored, "{line}");
        let d = Diff::of(ours.as_bytes(), want.as_bytes());
        println!("{:<9} {:<8} -> {:<5} vs {:<22} {d}", w[2], w[5], w[6], w[7]);
        // OpenCV's conversions are integer arithmetic we reproduce: identical bytes.
        // Pillow's full-range YCbCr rounds its own way (as for NV21): 1 level.
        let bar = if w[7].starts_with("pil_yuyv") {
            1.0
        } else {
            0.0
        };
        assert!(d.max <= bar, "{line}: {d}");
        checked += 1;
    }
    assert_eq!(checked, 11);
}

/// The two 4:2:2 byte orders and the two RGB565 byte orders hold the same pixels.
#[test]
fn byte_orders_agree() {
    let yuyv = read("camera/frame_128x96.yuyv");
    let uyvy = swap_byte_pairs(&yuyv);
    let le = all_rgb565(PixelFormat::Rgb565Le);
    let be = all_rgb565(PixelFormat::Rgb565Be);
    for to in [PixelFormat::Rgb8, PixelFormat::Bgra8, PixelFormat::Gray8] {
        for range in [YuvRange::Full, YuvRange::Limited] {
            let a = ImageView::new(PixelFormat::Yuyv, 128, 96, &yuyv).unwrap();
            let b = ImageView::new(PixelFormat::Uyvy, 128, 96, &uyvy).unwrap();
            assert_eq!(
                convert_color_owned(&a, to, range).unwrap(),
                convert_color_owned(&b, to, range).unwrap()
            );
        }
        let a = ImageView::new(PixelFormat::Rgb565Le, 256, 256, &le).unwrap();
        let b = ImageView::new(PixelFormat::Rgb565Be, 256, 256, &be).unwrap();
        assert_eq!(
            convert_color_owned(&a, to, YuvRange::Full).unwrap(),
            convert_color_owned(&b, to, YuvRange::Full).unwrap()
        );
    }
}

/// An odd width: the last pixel is the first of a 4-byte group, with that group's chroma.
#[test]
fn odd_widths_use_the_last_groups_first_pixel() {
    let four = [90u8, 60, 120, 200, 30, 250, 40, 10]; // Y0 U Y1 V, Y2 U Y3 V
    let even = ImageView::new(PixelFormat::Yuyv, 4, 1, &four).unwrap();
    let odd = ImageView::new(PixelFormat::Yuyv, 3, 1, &four).unwrap();
    for range in [YuvRange::Full, YuvRange::Limited] {
        let e = convert_color_owned(&even, PixelFormat::Rgb8, range).unwrap();
        let o = convert_color_owned(&odd, PixelFormat::Rgb8, range).unwrap();
        assert_eq!(o.as_bytes(), &e.as_bytes()[..9]);
    }
    // A 3-wide frame is still two whole groups: 7 bytes are too few.
    assert!(matches!(
        ImageView::new(PixelFormat::Yuyv, 3, 1, &four[..7]),
        Err(Error::BufferTooSmall { .. })
    ));
    // RGB565 sizes: 2 bytes per pixel.
    assert!(ImageView::new(PixelFormat::Rgb565Be, 4, 1, &four).is_ok());
    assert!(ImageView::new(PixelFormat::Rgb565Be, 5, 1, &four).is_err());
}

#[test]
fn crops_start_on_a_chroma_pair() {
    let yuyv = read("camera/frame_128x96.yuyv");
    let src = ImageView::new(PixelFormat::Yuyv, 128, 96, &yuyv).unwrap();
    // YUV 4:2:2 is subsampled across only: any row, even columns.
    assert!(src.crop(Rect::new(2, 3, 10, 10)).is_ok());
    assert!(matches!(
        src.crop(Rect::new(3, 2, 10, 10)),
        Err(Error::UnalignedCrop { .. })
    ));
    let rgb = convert_color_owned(&src, PixelFormat::Rgb8, YuvRange::Limited).unwrap();
    let part = src.crop(Rect::new(2, 3, 10, 10)).unwrap();
    let got = convert_color_owned(&part, PixelFormat::Rgb8, YuvRange::Limited).unwrap();
    let want = rgb.view().crop(Rect::new(2, 3, 10, 10)).unwrap();
    let want: Vec<u8> = (0..10).flat_map(|y| want.row(y).to_vec()).collect();
    assert_eq!(got.as_bytes(), &want[..]);
    // Mirroring or turning 4:2:2 in place would split pairs: refused with a reason.
    let mut out = Image::new(PixelFormat::Yuyv, 96, 128).unwrap();
    let turn = tensorprep::geometry::Transform::from_rotation(tensorprep::geometry::Rotation::Cw90);
    assert!(matches!(
        tensorprep::geometry::transform(&src, &mut out.view_mut(), turn),
        Err(Error::UnsupportedFormat { .. })
    ));
}

/// A frame of `format` made from a real photo crop (the 4:2:2 fixture's
/// pixels, re-encoded), `w` x `h`.
fn frame(format: PixelFormat) -> (Vec<u8>, u32, u32) {
    let yuyv = read("camera/frame_128x96.yuyv");
    match format {
        PixelFormat::Yuyv => (yuyv, 128, 96),
        PixelFormat::Uyvy => (swap_byte_pairs(&yuyv), 128, 96),
        _ => {
            let src = ImageView::new(PixelFormat::Yuyv, 128, 96, &yuyv).unwrap();
            let rgb = convert_color_owned(&src, PixelFormat::Rgb8, YuvRange::Limited).unwrap();
            let le = rgb565_le(rgb.as_bytes());
            let bytes = if format == PixelFormat::Rgb565Be {
                swap_byte_pairs(&le)
            } else {
                le
            };
            (bytes, 128, 96)
        }
    }
}

/// Fused first passes (conversion while resizing, cropping or turning) give
/// the bytes of converting the whole frame first.
#[test]
fn fused_passes_equal_converting_first() {
    let rgb_ops = |to| {
        vec![
            vec![Op::ConvertColor {
                to,
                range: YuvRange::Limited,
            }],
            vec![
                Op::ConvertColor {
                    to,
                    range: YuvRange::Limited,
                },
                Op::Crop(Rect::new(3, 5, 61, 40)),
                Op::Resize(Resize {
                    size: SizeRule::Exact {
                        width: 24,
                        height: 17,
                    },
                    resample: Resample::Pillow(Filter::Bicubic),
                }),
            ],
            vec![
                Op::ConvertColor {
                    to,
                    range: YuvRange::Full,
                },
                Op::Rotate(tensorprep::geometry::Rotation::Cw90),
                Op::Crop(Rect::new(1, 1, 33, 50)),
            ],
            vec![
                Op::ConvertColor {
                    to,
                    range: YuvRange::Limited,
                },
                Op::Flip(tensorprep::geometry::Flip::Horizontal),
                Op::Resize(Resize {
                    size: SizeRule::Exact {
                        width: 96,
                        height: 96,
                    },
                    resample: Resample::OpenCvLinear,
                }),
            ],
        ]
    };
    let mut state = PlanState::new();
    let mut compared = 0;
    for format in CAMERA {
        let (bytes, w, h) = frame(format);
        let src = ImageView::new(format, w, h, &bytes).unwrap();
        for to in [PixelFormat::Rgb8, PixelFormat::Bgr8, PixelFormat::Gray8] {
            for ops in rgb_ops(to) {
                let Op::ConvertColor { range, .. } = ops[0] else {
                    unreachable!()
                };
                let converted = convert_color_owned(&src, to, range).unwrap();
                let finish = [
                    Op::Layout {
                        layout: tensorprep::Layout::Hwc,
                        order: if to == PixelFormat::Gray8 {
                            tensorprep::finish::ChannelOrder::Gray
                        } else {
                            tensorprep::finish::ChannelOrder::Rgb
                        },
                    },
                    Op::Cast {
                        dtype: tensorprep::DType::U8,
                        quantization: tensorprep::Quantization::IDENTITY,
                    },
                ];
                let fused = Pipeline::from_ops(&[&ops[..], &finish].concat()).unwrap();
                let plan = fused.compile(InputDesc::pixels(format, w, h)).unwrap();
                let mut got = vec![0u8; plan.output_len().unwrap()];
                plan.run(
                    &mut state,
                    Input::Pixels(src),
                    tensorprep::TensorMut::U8(&mut got),
                )
                .unwrap();
                let rest = Pipeline::from_ops(&[&ops[1..], &finish].concat()).unwrap();
                let plan = rest.compile(InputDesc::pixels(to, w, h)).unwrap();
                let mut want = vec![0u8; plan.output_len().unwrap()];
                plan.run(
                    &mut state,
                    Input::Pixels(converted.view()),
                    tensorprep::TensorMut::U8(&mut want),
                )
                .unwrap();
                assert!(got == want, "{format:?} -> {to:?}: {ops:?}");
                compared += 1;
            }
            // The eager resizer converting while it reads.
            let plan =
                ResizePlan::new((w, h), (40, 30), Resample::Pillow(Filter::Bilinear)).unwrap();
            let mut got = Image::new(to, 40, 30).unwrap();
            plan.run_converting(
                &mut ResizeState::new(),
                &src,
                YuvRange::Limited,
                &mut got.view_mut(),
            )
            .unwrap();
            let rgb = convert_color_owned(&src, to, YuvRange::Limited).unwrap();
            let mut want = Image::new(to, 40, 30).unwrap();
            plan.run(&mut ResizeState::new(), &rgb.view(), &mut want.view_mut())
                .unwrap();
            assert_eq!(got, want, "{format:?} -> {to:?} run_converting");
        }
    }
    assert_eq!(compared, 4 * 3 * 4);
}
