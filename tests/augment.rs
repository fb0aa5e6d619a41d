//! The augmentation library against torchvision's PIL path: the cases
//! `fixtures/make_augment_fixtures.py` drew and applied with torchvision
//! 0.20.1 and Pillow 13.0.0, for each op tensorprep has so far; 0 differing
//! bytes.

use tensorprep::adjust::{Point, autocontrast, equalize, point};
use tensorprep::{Image, ImageViewMut};
use tensorprep_tests::read_png;

/// One line of `augment/cases.txt`: op, input mode, output, parameters.
struct Case {
    op: String,
    mode: String,
    output: String,
    params: Vec<(String, String)>,
}

impl Case {
    fn param(&self, key: &str) -> &str {
        &self
            .params
            .iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("{} has no {key}", self.output))
            .1
    }
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(tensorprep_tests::fixture("augment/cases.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut f = l.split_whitespace();
            let (op, mode, output) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            let params = f
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap();
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            Case {
                op: op.into(),
                mode: mode.into(),
                output: output.into(),
                params,
            }
        })
        .collect()
}

/// invert, posterize, solarize and brightness (`ImageEnhance.Brightness`,
/// Pillow's blend with black, at drawn factors and at 0 and 2) on RGB and
/// gray: torchvision's bytes.
#[test]
fn point_adjustments_equal_torchvision() {
    let mut checked = 0;
    for case in cases() {
        let adjustment = match case.op.as_str() {
            "invert" => Point::Invert,
            "posterize" => Point::Posterize {
                bits: case.param("bits").parse().unwrap(),
            },
            "solarize" => Point::Solarize {
                threshold: case.param("threshold").parse().unwrap(),
            },
            // Python's float reaches Pillow's C code as a float32.
            "brightness" => Point::Brightness {
                factor: case.param("factor").parse::<f64>().unwrap() as f32,
            },
            _ => continue,
        };
        let src = read_png(&format!("augment/src_{}.png", case.mode));
        let want = read_png(&case.output);
        let mut got = Image::new(src.format(), src.width(), src.height()).unwrap();
        point(&src.view(), &mut got.view_mut(), adjustment).unwrap();
        let differing = got
            .as_bytes()
            .iter()
            .zip(want.as_bytes())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differing, 0, "{}", case.output);
        checked += 1;
    }
    // 1 invert, 5 posterize, 5 solarize, 5 brightness cases, RGB and gray.
    assert_eq!(checked, 32);
}

/// autocontrast and equalize (`ImageOps`, per channel from its histogram)
/// on RGB and gray, and on an image whose histogram needs their special
/// cases (one value: left as it is): torchvision's bytes.
#[test]
fn histogram_adjustments_equal_torchvision() {
    let mut checked = 0;
    for case in cases() {
        let op: fn(&tensorprep::ImageView<'_>, &mut ImageViewMut<'_>) -> tensorprep::Result<()> =
            match case.op.as_str() {
                "autocontrast" => autocontrast,
                "equalize" => equalize,
                _ => continue,
            };
        let src = read_png(&format!("augment/src_{}.png", case.mode));
        let want = read_png(&case.output);
        let mut got = Image::new(src.format(), src.width(), src.height()).unwrap();
        op(&src.view(), &mut got.view_mut()).unwrap();
        assert!(got.as_bytes() == want.as_bytes(), "{}", case.output);
        checked += 1;
    }
    assert_eq!(checked, 4);
    // A flat image: both leave it unchanged.
    let flat = vec![77u8; 12];
    let view = tensorprep::ImageView::new(tensorprep::PixelFormat::Rgb8, 2, 2, &flat).unwrap();
    for op in [autocontrast, equalize] {
        let mut out = vec![0u8; 12];
        let mut dst = ImageViewMut::new(tensorprep::PixelFormat::Rgb8, 2, 2, &mut out).unwrap();
        op(&view, &mut dst).unwrap();
        assert_eq!(out, flat);
    }
}

/// Formats without a per-byte meaning, and mismatched buffers, are refused.
#[test]
fn point_adjustments_refuse_what_they_cannot_do() {
    let src = read_png("augment/src_rgb.png");
    let mut out = vec![0u8; src.as_bytes().len()];
    let mut gray = ImageViewMut::new(
        tensorprep::PixelFormat::Gray8,
        src.width(),
        src.height(),
        &mut out[..(src.width() * src.height()) as usize],
    )
    .unwrap();
    assert!(point(&src.view(), &mut gray, Point::Invert).is_err());
    let nv21 = vec![0u8; 32 * 24 * 3 / 2];
    let view = tensorprep::ImageView::new(tensorprep::PixelFormat::Nv21, 32, 24, &nv21).unwrap();
    let mut dst = vec![0u8; nv21.len()];
    let mut dst = ImageViewMut::new(tensorprep::PixelFormat::Nv21, 32, 24, &mut dst).unwrap();
    let err = point(&view, &mut dst, Point::Invert).unwrap_err();
    assert!(err.to_string().contains("point adjustment"), "{err}");
}
