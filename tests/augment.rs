//! The augmentation library against torchvision's PIL path: the cases
//! `fixtures/make_augment_fixtures.py` drew and applied with torchvision
//! 0.20.1 and Pillow 13.0.0, for each op tensorprep has so far; 0 differing
//! bytes.

use tensorprep::adjust::{
    GaussianKernel, Point, autocontrast, contrast, equalize, gaussian_blur, grayscale, hue, point,
    saturation, sharpness,
};
use tensorprep::warp::{Interpolation, Warp, warp};
use tensorprep::{Image, ImageView, ImageViewMut};
use tensorprep_tests::read_png;

/// One line of `augment/cases.txt`: op, input mode, output, parameters.
struct Case {
    op: String,
    mode: String,
    output: String,
    params: Vec<(String, String)>,
}

impl Case {
    /// A parameter parsed as a float32 (Python's float reaches Pillow's C
    /// code as one).
    fn f32(&self, key: &str) -> f32 {
        self.param(key).parse::<f64>().unwrap() as f32
    }

    /// Runs `op` on the case's input; the output bytes and the reference's.
    fn run(
        &self,
        op: impl FnOnce(&ImageView<'_>, &mut ImageViewMut<'_>) -> tensorprep::Result<()>,
    ) -> (Vec<u8>, Vec<u8>) {
        let src = read_png(&format!("augment/src_{}.png", self.mode));
        let want = read_png(&self.output);
        let mut got = Image::new(src.format(), src.width(), src.height()).unwrap();
        op(&src.view(), &mut got.view_mut()).unwrap();
        assert_eq!(
            got.as_bytes().len(),
            want.as_bytes().len(),
            "{}",
            self.output
        );
        (got.as_bytes().to_vec(), want.as_bytes().to_vec())
    }

    fn f64(&self, key: &str) -> f64 {
        self.param(key).parse().unwrap()
    }

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

/// Bytes that differ, and the largest difference in levels.
fn differences(got: &[u8], want: &[u8]) -> (usize, u8) {
    got.iter()
        .zip(want)
        .filter(|(a, b)| a != b)
        .fold((0, 0), |(n, m), (a, b)| (n + 1, m.max(a.abs_diff(*b))))
}

/// One colour enhancement with its parameters from a case's line.
fn enhance(case: &Case, op: &str, src: &ImageView<'_>, dst: &mut ImageViewMut<'_>) {
    let key = match op {
        "color_jitter" => unreachable!(),
        _ if case.op == "color_jitter" => op,
        _ => "factor",
    };
    match op {
        "brightness" => point(
            src,
            dst,
            Point::Brightness {
                factor: case.f32(key),
            },
        ),
        "contrast" => contrast(src, dst, case.f32(key)),
        "saturation" => saturation(src, dst, case.f32(key)),
        "hue" => hue(src, dst, case.f32(key)),
        "sharpness" => sharpness(src, dst, case.f32(key)),
        _ => unreachable!("{op}"),
    }
    .unwrap();
}

/// contrast (mean gray), saturation (blend with luma), hue (Pillow's HSV
/// round trip), sharpness (`SMOOTH` and a blend) and gray conversion at
/// drawn factors and at their edges, on RGB and gray: torchvision's bytes.
#[test]
fn colour_enhancements_equal_torchvision() {
    let mut checked = 0;
    for case in cases() {
        let (got, want) = match case.op.as_str() {
            op @ ("contrast" | "saturation" | "hue" | "sharpness") => case.run(|s, d| {
                enhance(&case, op, s, d);
                Ok(())
            }),
            "grayscale" => case.run(grayscale),
            _ => continue,
        };
        assert_eq!(differences(&got, &want), (0, 0), "{}", case.output);
        checked += 1;
    }
    // 5 contrast, 5 saturation, 6 hue, 4 sharpness on RGB and gray; 1 gray.
    assert_eq!(checked, 41);
}

/// ColorJitter: the four enhancements in the drawn permutation's order.
#[test]
fn color_jitter_equals_torchvision() {
    let names = ["brightness", "contrast", "saturation", "hue"];
    let mut checked = 0;
    for case in cases().iter().filter(|c| c.op == "color_jitter") {
        let (got, want) = case.run(|src, dst| {
            let mut img = Image::new(src.format(), src.width(), src.height())?;
            let mut before = img.clone();
            for y in 0..src.height() {
                img.view_mut().row_mut(y).copy_from_slice(src.row(y));
            }
            for i in case.param("order").split(',') {
                std::mem::swap(&mut img, &mut before);
                let op = names[i.parse::<usize>().unwrap()];
                enhance(case, op, &before.view(), &mut img.view_mut());
            }
            for y in 0..src.height() {
                dst.row_mut(y).copy_from_slice(img.view().row(y));
            }
            Ok(())
        });
        assert_eq!(differences(&got, &want), (0, 0), "{}", case.output);
        checked += 1;
    }
    assert_eq!(checked, 8);
}

/// GaussianBlur with drawn sigmas at 3, 5 and 9 taps: torch convolves in
/// float32 in its own order, so a sum a rounding step from .5 may round the
/// other way; at most one level apart, on under 1% of the bytes.
#[test]
fn gaussian_blur_is_within_one_level_of_torchvision() {
    let mut checked = 0;
    let (mut differing, mut total) = (0, 0);
    for case in cases().iter().filter(|c| c.op == "gaussian_blur") {
        let kernel =
            GaussianKernel::new(case.param("kernel").parse().unwrap(), case.f32("sigma")).unwrap();
        let (got, want) = case.run(|src, dst| {
            let mut scratch = vec![0f32; src.width() as usize * 3];
            gaussian_blur(src, dst, &kernel, &kernel, &mut scratch)
        });
        let (n, max) = differences(&got, &want);
        assert!(max <= 1, "{}: {max} levels", case.output);
        differing += n;
        total += got.len();
        checked += 1;
    }
    assert_eq!(checked, 6);
    assert!(
        differing * 100 < total,
        "{differing} of {total} bytes differ"
    );
    eprintln!("gaussian blur: {differing} of {total} bytes differ by one level");
}

impl Case {
    /// A comma-separated list parameter as floats.
    fn floats(&self, key: &str) -> Vec<f64> {
        self.param(key)
            .split(',')
            .map(|v| v.parse().unwrap())
            .collect()
    }

    fn interpolation(&self) -> Interpolation {
        match self.param("interpolation") {
            "nearest" => Interpolation::Nearest,
            "bilinear" => Interpolation::Bilinear,
            other => panic!("{other}"),
        }
    }

    /// The fill torchvision gave Pillow: the listed colour (its first value
    /// for gray), or black.
    fn fill(&self) -> [u8; 3] {
        match self.params.iter().any(|(k, _)| k == "fill") {
            true => {
                let f = self.floats("fill");
                if self.mode == "gray" {
                    [f[0] as u8; 3]
                } else {
                    [f[0] as u8, f[1] as u8, f[2] as u8]
                }
            }
            false => [0; 3],
        }
    }

    /// Warps the case's input through `matrix` into an image of `size`; the
    /// bytes and the reference's (whose size must be the same).
    fn run_warp(&self, matrix: &Warp, size: (u32, u32)) -> (Vec<u8>, Vec<u8>) {
        let src = read_png(&format!("augment/src_{}.png", self.mode));
        let want = read_png(&self.output);
        assert_eq!(size, (want.width(), want.height()), "{}", self.output);
        let mut got = Image::new(src.format(), size.0, size.1).unwrap();
        warp(
            &src.view(),
            &mut got.view_mut(),
            matrix,
            self.interpolation(),
            self.fill(),
        )
        .unwrap();
        (got.as_bytes().to_vec(), want.as_bytes().to_vec())
    }
}

/// RandomRotation's drawn angles (nearest and bilinear, expand, a centre,
/// a fill), RandomAffine's drawn angle, translation, scale and shear, and
/// RandomPerspective's drawn corners, on RGB and gray: Pillow's bytes.
#[test]
fn warps_equal_torchvision() {
    let mut checked = 0;
    for case in cases() {
        let size = (32, 24);
        let (got, want) = match case.op.as_str() {
            "rotate" => {
                let center = case
                    .params
                    .iter()
                    .any(|(k, _)| k == "center")
                    .then(|| case.floats("center"))
                    .map(|c| (c[0], c[1]));
                let expand = case.param("expand") == "1";
                let (m, out) = Warp::rotate(case.f64("angle"), center, expand, size).unwrap();
                case.run_warp(&m, out)
            }
            "affine" => {
                let t = case.floats("translate");
                let shear = case.floats("shear");
                let m = Warp::affine(
                    case.f64("angle"),
                    (t[0], t[1]),
                    case.f64("scale"),
                    (shear[0], shear[1]),
                    None,
                    size,
                )
                .unwrap();
                case.run_warp(&m, size)
            }
            "perspective" => {
                let corners = |key| {
                    let v = case.floats(key);
                    std::array::from_fn(|i| (v[2 * i], v[2 * i + 1]))
                };
                let m = Warp::perspective(corners("start"), corners("end")).unwrap();
                case.run_warp(&m, size)
            }
            _ => continue,
        };
        assert_eq!(differences(&got, &want), (0, 0), "{}", case.output);
        checked += 1;
    }
    // 6 rotations, 6 affine, 4 perspective, on RGB and gray.
    assert_eq!(checked, 32);
}

/// A policy op by torchvision's name.
#[cfg(feature = "train")]
fn policy_op(name: &str) -> tensorprep::train::PolicyOp {
    use tensorprep::train::{PolicyOp, SPACE_OPS};
    SPACE_OPS
        .iter()
        .chain(&[PolicyOp::Invert])
        .copied()
        .find(|op| format!("{op:?}") == name)
        .unwrap_or_else(|| panic!("no policy op {name}"))
}

/// Every op of RandAugment's space at bins 0, 10 and 30 with its drawn
/// sign, as torchvision's `_apply_op` applies it (nearest, black fill) on
/// RGB and gray: the same bytes.
#[cfg(feature = "train")]
#[test]
fn policy_ops_equal_torchvision() {
    let mut checked = 0;
    for case in cases().iter().filter(|c| c.op == "policy_op") {
        let op = policy_op(case.param("name"));
        let pixel = op
            .image_op(
                case.f64("magnitude"),
                (32, 24),
                Interpolation::Nearest,
                [0; 3],
            )
            .unwrap();
        let (got, want) = case.run(|src, dst| match pixel {
            Some(p) => p.apply(src, dst, &mut Vec::new()),
            None => {
                for y in 0..src.height() {
                    dst.row_mut(y).copy_from_slice(src.row(y));
                }
                Ok(())
            }
        });
        assert_eq!(differences(&got, &want), (0, 0), "{}", case.output);
        checked += 1;
    }
    assert_eq!(checked, 72);
}

/// The magnitude each policy_op fixture case used (RandAugment's bins 0, 10
/// and 30 on the fixtures' 32x24 image), and which ops take a sign.
#[cfg(feature = "train")]
#[test]
fn policy_bins_equal_torchvision() {
    use tensorprep::train::{PolicyOp, Space};
    let mut checked = 0;
    for case in cases()
        .iter()
        .filter(|c| c.op == "policy_op" && c.mode == "rgb")
    {
        let op = policy_op(case.param("name"));
        let bin: u32 = case.param("bin").parse().unwrap();
        let want = case.f64("magnitude").abs();
        let got = Space::Standard.magnitude(op, bin, 31, (32, 24));
        assert_eq!(got, want, "{op:?} bin {bin}");
        assert_eq!(
            op.signed(),
            !matches!(
                op,
                PolicyOp::Identity
                    | PolicyOp::Posterize
                    | PolicyOp::Solarize
                    | PolicyOp::AutoContrast
                    | PolicyOp::Equalize
            )
        );
        checked += 1;
    }
    assert_eq!(checked, 36);
}

/// RandomErasing's fill on the image tensor (uint8, HWC from the PNG):
/// torchvision's `F.erase` with constant values, on RGB and gray.
#[cfg(feature = "train")]
#[test]
fn erase_equals_torchvision() {
    use tensorprep::train::erase;
    use tensorprep::{Layout, Rect, TensorMut};
    let mut checked = 0;
    for case in cases().iter().filter(|c| c.op == "erase") {
        let p = |k| case.param(k).parse::<u32>().unwrap();
        let rect = Rect::new(p("j"), p("i"), p("w"), p("h"));
        let value = case.floats("value");
        let (got, want) = case.run(|src, dst| {
            for y in 0..src.height() {
                dst.row_mut(y).copy_from_slice(src.row(y));
            }
            let c = src.format().bytes_per_pixel().unwrap();
            let shape = [src.height() as usize, src.width() as usize, c];
            let mut t = vec![0u8; shape.iter().product()];
            for y in 0..src.height() as usize {
                let row = shape[1] * c;
                t[y * row..(y + 1) * row].copy_from_slice(src.row(y as u32));
            }
            erase(TensorMut::U8(&mut t), shape, Layout::Hwc, rect, &mut |ch| {
                value[ch] as f32
            })?;
            for y in 0..src.height() as usize {
                let row = shape[1] * c;
                dst.row_mut(y as u32)
                    .copy_from_slice(&t[y * row..(y + 1) * row]);
            }
            Ok(())
        });
        assert_eq!(differences(&got, &want), (0, 0), "{}", case.output);
        checked += 1;
    }
    assert_eq!(checked, 6);
}

/// timm's draws for one case, replayed in order.
#[cfg(feature = "train")]
struct Replay {
    rand: std::collections::VecDeque<f64>,
    beta: std::collections::VecDeque<f64>,
    randint: std::collections::VecDeque<f64>,
}

#[cfg(feature = "train")]
impl tensorprep::train::MixDraws for Replay {
    fn rand(&mut self) -> f64 {
        self.rand.pop_front().expect("timm drew another rand")
    }
    fn beta(&mut self, _alpha: f64) -> f64 {
        self.beta.pop_front().expect("timm drew another beta")
    }
    fn randint(&mut self, lo: i64, hi: i64) -> i64 {
        let v = self.randint.pop_front().expect("timm drew another randint") as i64;
        assert!(
            (lo..hi.max(lo + 1)).contains(&v),
            "randint {v} outside {lo}..{hi}"
        );
        v
    }
}

/// Mixup and CutMix in timm's modes batch, pair and elem (mixup, CutMix,
/// both with a switch; label smoothing): with timm's draws replayed, the
/// mixed batch and the soft targets equal timm's float32 values exactly,
/// and every draw timm made is used.
#[cfg(feature = "train")]
#[test]
fn mixup_and_cutmix_equal_timm() {
    use tensorprep::train::{BatchShape, MixMode, MixScratch, Mixup};
    let read_f32 = |name: &str| tensorprep_tests::read_f32_le(&format!("mixup/{name}"));
    let input = read_f32("input_x.bin");
    let labels = [0.0f32, 3.0, 1.0, 2.0];
    let shape = BatchShape {
        n: 4,
        channels: 3,
        height: 8,
        width: 12,
        layout: tensorprep::Layout::Chw,
    };
    let text = std::fs::read_to_string(tensorprep_tests::fixture("mixup/cases.txt")).unwrap();
    let mut scratch = MixScratch::default();
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let mut m = Mixup::new(f[2].parse().unwrap(), f[3].parse().unwrap(), 5);
        m.switch_prob = f[4].parse().unwrap();
        m.label_smoothing = f[5].parse().unwrap();
        m.mode = match f[1] {
            "batch" => MixMode::Batch,
            "pair" => MixMode::Pair,
            _ => MixMode::Elem,
        };
        let mut replay = Replay {
            rand: Default::default(),
            beta: Default::default(),
            randint: Default::default(),
        };
        for draw in f[6].trim_start_matches("draws=").split(';') {
            let (kind, values) = draw.split_once(':').unwrap();
            let values = values.split(',').map(|v| v.parse::<f64>().unwrap());
            match kind {
                "rand" => replay.rand.extend(values),
                "beta" => replay.beta.extend(values),
                _ => replay.randint.extend(values),
            }
        }
        let mut x = input.clone();
        let mut targets = vec![0f32; 4 * 5];
        m.apply(
            &mut replay,
            &mut x,
            shape,
            &labels,
            &mut targets,
            &mut scratch,
        )
        .unwrap();
        let (want_x, want_y) = (
            read_f32(&format!("{}_x.bin", f[0])),
            read_f32(&format!("{}_y.bin", f[0])),
        );
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&x), bits(&want_x), "case {}: batch", f[0]);
        assert_eq!(bits(&targets), bits(&want_y), "case {}: targets", f[0]);
        assert!(
            replay.rand.is_empty() && replay.beta.is_empty() && replay.randint.is_empty(),
            "case {}: draws left",
            f[0]
        );
        checked += 1;
    }
    assert_eq!(checked, 10);
}

/// Every magnitude bin of AutoAugment, RandAugment, TrivialAugmentWide and
/// AugMix (`make_policy_bins.py`: torch 2.5.1's float32 `linspace` and
/// posterize formula) at the fixtures' size, and the translations at a
/// photo's: the same values.
#[cfg(feature = "train")]
#[test]
fn policy_bins_equal_torchvision_everywhere() {
    use tensorprep::train::Space;
    let text = std::fs::read_to_string(tensorprep_tests::fixture("augment/bins.txt")).unwrap();
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (space, bins) = match f[0] {
            "autoaugment" => (Space::Standard, 10),
            "randaugment" => (Space::Standard, 31),
            "trivialaugmentwide" => (Space::Wide, 31),
            "augmix" => (Space::AugMix, 10),
            other => panic!("{other}"),
        };
        let size = (f[1].parse().unwrap(), f[2].parse().unwrap());
        let op = policy_op(f[3]);
        let bin: u32 = f[4].parse().unwrap();
        let want: f64 = f[5].parse().unwrap();
        assert_eq!(space.magnitude(op, bin, bins, size), want, "{line}");
        checked += 1;
    }
    assert_eq!(checked, 1066);
}
