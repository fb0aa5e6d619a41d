//! tensorprep's functional ops against torchvision 0.29.2's, with the same
//! explicit parameters, on a PIL photo with boxes and masks
//! (`fixtures/make_functional_fixtures.py`): the pixels, the boxes (bit for
//! bit) and the masks (byte for byte) are torchvision's; the Gaussian blur's
//! pixels are within one level of them.

use std::collections::BTreeMap;

use tensorprep::Image;
use tensorprep::functional;
use tensorprep::resize::{Filter, Resample};
use tensorprep::size::{Rounding, SizeRule};
use tensorprep::targets::{Affine, BoundingBoxes, BoxFormat, Canvas, Masks, Padding, Target};
use tensorprep::warp::Interpolation;

const BOXES: [[f32; 4]; 2] = [[10.0, 5.0, 60.0, 40.0], [70.5, 20.25, 127.0, 84.0]];

fn fnv(bytes: &[u8]) -> String {
    tensorprep_tests::fnv_hex(bytes)
}

fn hex(rows: &[[f32; 4]]) -> String {
    tensorprep_tests::f32_bits_hex(rows)
}

fn target(w: u32, h: u32) -> Target {
    let canvas = Canvas::new(h, w).unwrap();
    let mut masks = vec![0u8; 2 * (w * h) as usize];
    for (i, m) in masks.chunks_exact_mut((w * h) as usize).enumerate() {
        let [x1, y1, x2, y2] = BOXES[i];
        for y in 0..h {
            for x in 0..w {
                let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
                if x1 <= fx && fx < x2 && y1 <= fy && fy < y2 {
                    m[(y * w + x) as usize] = 1;
                }
            }
        }
    }
    let mut t = Target::default();
    t.boxes = Some(BoundingBoxes::new(BOXES.to_vec(), BoxFormat::Xyxy, canvas));
    t.labels = vec![1, 2];
    t.masks = Some(Masks::new(masks, 2, canvas).unwrap());
    t
}

fn floats(s: &str) -> Vec<f64> {
    s.split(',').map(|v| v.parse().unwrap()).collect()
}

fn pair(s: &str) -> Option<(f64, f64)> {
    (s != "-").then(|| {
        let v = floats(s);
        (v[0], v[1])
    })
}

fn fill(s: &str) -> [u8; 3] {
    let v: Vec<u8> = s.split(',').map(|v| v.parse().unwrap()).collect();
    [v[0], v[1], v[2]]
}

fn interpolation(s: &str) -> Interpolation {
    match s {
        "nearest" => Interpolation::Nearest,
        _ => Interpolation::Bilinear,
    }
}

#[test]
fn functional_ops_give_torchvision_s_pixels_boxes_and_masks() {
    let text =
        std::fs::read_to_string(tensorprep_tests::fixture("targets/functional.txt")).unwrap();
    assert!(text.lines().next().unwrap().contains("torchvision 0.29.2"));
    let png = tensorprep_tests::read("cv_china_rgb_area_0_0_128x85.png");
    let photo: Image =
        tensorprep::decode::decode(&png, &tensorprep::jpeg::DecodeOptions::default()).unwrap();
    let (w, h) = (photo.width(), photo.height());
    let bilinear = Resample::Pillow(Filter::Bilinear);
    let (mut ops, mut photometric_ops) = (0, 0);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let p: BTreeMap<&str, &str> = line
            .split_whitespace()
            .map(|t| t.split_once('=').unwrap())
            .collect();
        let int = |k: &str| p[k].parse::<i64>().unwrap();
        let mut t = target(w, h);
        let view = photo.view();
        let out = match p["op"] {
            "horizontal_flip" => functional::horizontal_flip(&view, Some(&mut t)),
            "vertical_flip" => functional::vertical_flip(&view, Some(&mut t)),
            "resize" => {
                let max = p.get("max_size").filter(|v| **v != "-");
                let max = max.map(|v| v.parse::<u32>().unwrap());
                let rounding = Rounding::Truncate;
                let rule = match (p["size"], max) {
                    ("-", Some(size)) => SizeRule::LongerSide { size, rounding },
                    (s, max_size) => match floats(s)[..] {
                        [size] => SizeRule::ShorterSide {
                            size: size as u32,
                            max_size,
                            rounding,
                        },
                        [h, w] => SizeRule::Exact {
                            width: w as u32,
                            height: h as u32,
                        },
                        _ => panic!("a size of 1 or 2 values: {s}"),
                    },
                };
                functional::resize(&view, rule, bilinear, Some(&mut t))
            }
            "center_crop" => {
                let s = floats(p["output_size"]);
                functional::center_crop(&view, s[0] as u32, s[1] as u32, Some(&mut t))
            }
            "crop" => functional::crop(
                &view,
                int("top"),
                int("left"),
                int("height") as u32,
                int("width") as u32,
                Some(&mut t),
            ),
            "resized_crop" => {
                let s = floats(p["size"]);
                functional::resized_crop(
                    &view,
                    int("top"),
                    int("left"),
                    int("height") as u32,
                    int("width") as u32,
                    SizeRule::Exact {
                        width: s[1] as u32,
                        height: s[0] as u32,
                    },
                    bilinear,
                    Some(&mut t),
                )
            }
            "pad" => {
                let v: Vec<i64> = p["padding"]
                    .split(',')
                    .map(|v| v.parse().unwrap())
                    .collect();
                let padding = Padding::from_torchvision(&v).unwrap();
                functional::pad(&view, padding, fill(p["fill"]), Some(&mut t))
            }
            "affine" => {
                let tr = pair(p["translate"]).unwrap();
                let sh = pair(p["shear"]).unwrap();
                let a = Affine::new(
                    p["angle"].parse().unwrap(),
                    tr,
                    p["scale"].parse().unwrap(),
                    sh,
                    pair(p["center"]),
                );
                functional::affine(
                    &view,
                    a,
                    interpolation(p["interpolation"]),
                    fill(p["fill"]),
                    Some(&mut t),
                )
            }
            "rotate" => functional::rotate(
                &view,
                p["angle"].parse().unwrap(),
                p["expand"] == "1",
                pair(p["center"]),
                interpolation(p["interpolation"]),
                fill(p["fill"]),
                Some(&mut t),
            ),
            "perspective" => {
                let c = floats(p["coefficients"]);
                functional::perspective(
                    &view,
                    core::array::from_fn(|i| c[i]),
                    interpolation(p["interpolation"]),
                    fill(p["fill"]),
                    Some(&mut t),
                )
            }
            op => {
                photometric(op, &p, &photo);
                photometric_ops += 1;
                continue;
            }
        }
        .unwrap();
        let what = line.split(" out_").next().unwrap();
        assert_eq!(
            format!("{},{}", out.width(), out.height()),
            p["out_size"],
            "{what}"
        );
        assert_eq!(fnv(out.as_bytes()), p["out_pixels"], "{what}: pixels");
        let b = t.boxes.as_ref().unwrap();
        assert_eq!(hex(b.boxes()), p["out_boxes"], "{what}: boxes");
        let c = b.canvas();
        assert_eq!(
            format!("{},{}", c.height, c.width),
            p["out_boxes_canvas"],
            "{what}"
        );
        let m = t.masks.as_ref().unwrap();
        let mc = m.canvas();
        assert_eq!(
            format!("{},{},{}", m.count(), mc.height, mc.width),
            p["out_masks_shape"],
            "{what}"
        );
        assert_eq!(fnv(m.data()), p["out_masks"], "{what}: masks");
        ops += 1;
    }
    assert_eq!((ops, photometric_ops), (20, 21));
}

/// Runs photometric op `op` with the line's parameters and checks its
/// pixels: equal to torchvision's, or for the blur within one level of the
/// reference image the line names.
fn photometric(op: &str, p: &BTreeMap<&str, &str>, photo: &Image) {
    let view = photo.view();
    let float = |k: &str| p[k].parse::<f32>().unwrap();
    let out = match op {
        "adjust_brightness" => functional::adjust_brightness(&view, float("brightness_factor")),
        "adjust_contrast" => functional::adjust_contrast(&view, float("contrast_factor")),
        "adjust_saturation" => functional::adjust_saturation(&view, float("saturation_factor")),
        "adjust_hue" => functional::adjust_hue(&view, float("hue_factor")),
        "adjust_sharpness" => functional::adjust_sharpness(&view, float("sharpness_factor")),
        "posterize" => functional::posterize(&view, p["bits"].parse().unwrap()),
        "solarize" => functional::solarize(&view, p["threshold"].parse().unwrap()),
        "autocontrast" => functional::autocontrast(&view),
        "equalize" => functional::equalize(&view),
        "invert" => functional::invert(&view),
        "rgb_to_grayscale" => {
            functional::rgb_to_grayscale(&view, p["num_output_channels"].parse().unwrap())
        }
        "gaussian_blur" => {
            let k = floats(p["kernel_size"]);
            let sigma = floats(p["sigma"]);
            assert_eq!(sigma[0], sigma[1], "one sigma for both directions");
            functional::gaussian_blur(&view, (k[0] as u16, k[1] as u16), sigma[0] as f32)
        }
        "erase" => {
            let int = |k: &str| p[k].parse::<u32>().unwrap();
            let v: Vec<u8> = p["v"].split(',').map(|v| v.parse().unwrap()).collect();
            functional::erase(&view, (int("i"), int("j"), int("h"), int("w")), &v)
        }
        op => panic!("an op the test does not know: {op}"),
    }
    .unwrap();
    let what = format!("{op} {p:?}");
    assert_eq!(
        format!("{},{}", out.width(), out.height()),
        p["out_size"],
        "{what}"
    );
    if let Some(file) = p.get("out_file") {
        let png = std::fs::read(tensorprep_tests::fixture(file)).unwrap();
        let reference: Image =
            tensorprep::decode::decode(&png, &tensorprep::jpeg::DecodeOptions::default()).unwrap();
        assert_eq!(fnv(reference.as_bytes()), p["out_pixels"], "{file}");
        let worst = out
            .as_bytes()
            .iter()
            .zip(reference.as_bytes())
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        assert!(worst <= 1, "{what}: {worst} levels off torchvision");
    } else {
        assert_eq!(fnv(out.as_bytes()), p["out_pixels"], "{what}: pixels");
    }
}
