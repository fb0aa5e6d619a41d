//! Boxes and key points through the geometric ops against torchvision 0.29.2:
//! the cases `fixtures/make_target_fixtures.py` made with torchvision's
//! functional ops on `tv_tensors.BoundingBoxes` and `tv_tensors.KeyPoints`.
//! Every float32 is compared bit for bit (a `-0.0` from a flip included),
//! and so is the new canvas. Masks (`make_mask_fixtures.py`): every byte.

use tensorprep::size::{Rounding, SizeRule};
use tensorprep::targets::{Affine, BoundingBoxes, BoxFormat, Canvas, KeyPoints, Masks, Padding};
use tensorprep::warp::Warp;

/// An op on boxes that may be refused.
type BoxOp = fn(&mut BoundingBoxes) -> tensorprep::Result<()>;

/// One case line: `key=value` tokens.
struct Case {
    line: usize,
    tokens: Vec<(String, String)>,
}

impl Case {
    fn get(&self, key: &str) -> Option<&str> {
        self.tokens
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| *v != "-")
    }

    fn param(&self, key: &str) -> &str {
        self.get(key)
            .unwrap_or_else(|| panic!("line {}: no {key}", self.line))
    }

    fn f64(&self, key: &str) -> f64 {
        self.param(key).parse().unwrap()
    }

    fn list(&self, key: &str) -> Vec<f64> {
        self.param(key)
            .split(',')
            .map(|v| v.parse().unwrap())
            .collect()
    }

    fn pair(&self, key: &str) -> Option<(f64, f64)> {
        self.get(key).map(|_| {
            let v = self.list(key);
            assert_eq!(v.len(), 2, "line {}: {key}", self.line);
            (v[0], v[1])
        })
    }

    fn ints(&self, key: &str) -> Vec<i64> {
        self.list(key).into_iter().map(|v| v as i64).collect()
    }

    fn canvas(&self, key: &str) -> Canvas {
        let v = self.ints(key);
        Canvas::new(v[0] as u32, v[1] as u32).unwrap()
    }

    fn corners(&self, key: &str) -> [(f64, f64); 4] {
        let v = self.list(key);
        assert_eq!(v.len(), 8, "line {}: {key}", self.line);
        core::array::from_fn(|i| (v[2 * i], v[2 * i + 1]))
    }

    /// torchvision's perspective coefficients (float32 bits, as doubles).
    fn coefficients(&self) -> [f64; 8] {
        let v = self.rows::<8>("coefficients");
        v[0].map(f64::from)
    }

    /// `in=` or `out=`: rows of float32 bit patterns.
    fn rows<const N: usize>(&self, key: &str) -> Vec<[f32; N]> {
        let Some(v) = self.get(key) else {
            return Vec::new();
        };
        v.split(';')
            .map(|row| {
                let values: Vec<f32> = row
                    .split(',')
                    .map(|h| f32::from_bits(u32::from_str_radix(h, 16).unwrap()))
                    .collect();
                values.try_into().unwrap_or_else(|_| {
                    panic!("line {}: a row of {key} is not {N} values", self.line)
                })
            })
            .collect()
    }

    /// torchvision's resize size arguments: `[h, w]`, or `[s]` (the shorter
    /// side) with an optional `max_size`.
    fn resized(&self, canvas: Canvas) -> Canvas {
        let size = self.ints("size");
        let (w, h) = match size[..] {
            [h, w] => (w as u32, h as u32),
            [s] => SizeRule::ShorterSide {
                size: s as u32,
                max_size: self.get("max_size").map(|m| m.parse().unwrap()),
                rounding: Rounding::Truncate,
            }
            .output_size(canvas.width, canvas.height)
            .unwrap(),
            _ => panic!("line {}: size", self.line),
        };
        Canvas::new(h, w).unwrap()
    }

    fn crop_window(&self) -> (i64, i64, u32, u32) {
        let v = |k| self.param(k).parse::<i64>().unwrap();
        (v("top"), v("left"), v("height") as u32, v("width") as u32)
    }

    fn affine(&self) -> Affine {
        let shear = self.list("shear");
        // A one-element shear list is (s, s) in torchvision.
        let shear = match shear[..] {
            [s] => (s, s),
            [x, y] => (x, y),
            _ => panic!("line {}: shear", self.line),
        };
        Affine::new(
            self.f64("angle"),
            self.pair("translate").unwrap(),
            self.f64("scale"),
            shear,
            self.pair("center"),
        )
    }

    /// A mask warp's `fill`: none (`-`), one value or one per mask.
    fn fill(&self) -> Vec<u8> {
        self.get("fill").map_or_else(Vec::new, |_| {
            self.ints("fill").into_iter().map(|v| v as u8).collect()
        })
    }

    fn output_size(&self) -> (u32, u32) {
        let v = self.ints("output_size");
        match v[..] {
            [s] => (s as u32, s as u32),
            [h, w] => (h as u32, w as u32),
            _ => panic!("line {}: output_size", self.line),
        }
    }
}

fn cases(file: &str) -> (String, Vec<Case>) {
    let text = std::fs::read_to_string(tensorprep_tests::fixture(file)).unwrap();
    let header = text.lines().next().unwrap().to_string();
    let cases = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| Case {
            line: i + 1,
            tokens: l
                .split_whitespace()
                .map(|t| {
                    let (k, v) = t.split_once('=').unwrap();
                    (k.to_string(), v.to_string())
                })
                .collect(),
        })
        .collect();
    (header, cases)
}

fn bits<const N: usize>(rows: &[[f32; N]]) -> Vec<[u32; N]> {
    rows.iter().map(|r| r.map(f32::to_bits)).collect()
}

/// Runs every case of `file` through `run` (the op on the case's input: the
/// output rows and canvas); each must equal torchvision's bit for bit.
fn check<const N: usize>(
    file: &str,
    run: impl Fn(&Case, Vec<[f32; N]>, Canvas) -> (Vec<[f32; N]>, Canvas),
) -> usize {
    let (header, cases) = cases(file);
    assert!(header.contains("torchvision 0.29.2"), "{header}");
    let mut ops = std::collections::BTreeSet::new();
    for case in &cases {
        let op = case.param("op");
        let (got, canvas) = run(case, case.rows("in"), case.canvas("canvas"));
        let want = case.rows::<N>("out");
        assert_eq!(
            bits(&got),
            bits(&want),
            "line {} ({op}): got {got:?}, torchvision {want:?}",
            case.line
        );
        if op == "rotate" && case.param("expand") == "1" && want.is_empty() {
            // torchvision's kernels return an empty set before sizing the
            // new canvas, so its canvas stays the old one, unlike the image's
            // (and a later op's size check then fails there); here it is the
            // expanded canvas, as for a set that is not empty.
            assert_eq!(case.canvas("out_canvas"), case.canvas("canvas"));
            assert_ne!(canvas, case.canvas("canvas"), "line {}", case.line);
        } else {
            assert_eq!(
                canvas,
                case.canvas("out_canvas"),
                "line {} ({op})",
                case.line
            );
        }
        ops.insert(op.to_string());
    }
    ops.len()
}

#[test]
fn boxes_move_bit_for_bit_as_torchvision_moves_them() {
    let ops = check::<4>("targets/boxes.txt", |case, input, canvas| {
        let format: BoxFormat = case.param("format").parse().unwrap();
        let mut b = BoundingBoxes::new(input, format, canvas);
        match case.param("op") {
            "convert_bounding_box_format" => b.convert_format(case.param("to").parse().unwrap()),
            "clamp_bounding_boxes" => b.clamp(),
            "horizontal_flip" => b.horizontal_flip(),
            "vertical_flip" => b.vertical_flip(),
            "resize" => b.resize(case.resized(canvas)),
            "crop" => {
                let (t, l, h, w) = case.crop_window();
                b.crop(t, l, h, w).unwrap()
            }
            "center_crop" => {
                let (h, w) = case.output_size();
                b.center_crop(h, w).unwrap()
            }
            "resized_crop" => {
                let (t, l, h, w) = case.crop_window();
                let size = case.resized(Canvas::new(h, w).unwrap());
                b.resized_crop(t, l, h, w, size).unwrap()
            }
            "pad" => b
                .pad(Padding::from_torchvision(&case.ints("padding")).unwrap())
                .unwrap(),
            "affine" => b.affine(&case.affine()).unwrap(),
            "rotate" => b
                .rotate(
                    case.f64("angle"),
                    case.param("expand") == "1",
                    case.pair("center"),
                )
                .unwrap(),
            "perspective" => b.perspective_coefficients(&case.coefficients()).unwrap(),
            op => panic!("line {}: op {op} not covered", case.line),
        }
        let canvas = b.canvas();
        (b.into_boxes(), canvas)
    });
    assert_eq!(ops, 12, "every box op has cases");
}

#[test]
fn key_points_move_bit_for_bit_as_torchvision_moves_them() {
    let ops = check::<2>("targets/keypoints.txt", |case, input, canvas| {
        let mut k = KeyPoints::new(input, canvas);
        match case.param("op") {
            "horizontal_flip" => k.horizontal_flip(),
            "vertical_flip" => k.vertical_flip(),
            "resize" => k.resize(case.resized(canvas)),
            "crop" => {
                let (t, l, h, w) = case.crop_window();
                k.crop(t, l, h, w).unwrap()
            }
            "center_crop" => {
                let (h, w) = case.output_size();
                k.center_crop(h, w).unwrap()
            }
            "resized_crop" => {
                let (t, l, h, w) = case.crop_window();
                let size = case.resized(Canvas::new(h, w).unwrap());
                k.resized_crop(t, l, h, w, size).unwrap()
            }
            "pad" => k
                .pad(Padding::from_torchvision(&case.ints("padding")).unwrap())
                .unwrap(),
            "affine" => k.affine(&case.affine()).unwrap(),
            "rotate" => k
                .rotate(
                    case.f64("angle"),
                    case.param("expand") == "1",
                    case.pair("center"),
                )
                .unwrap(),
            "perspective" => k.perspective_coefficients(&case.coefficients()).unwrap(),
            op => panic!("line {}: op {op} not covered", case.line),
        }
        let canvas = k.canvas();
        (k.into_points(), canvas)
    });
    assert_eq!(ops, 10, "every key point op has cases");
}

#[test]
fn masks_move_byte_for_byte_as_torchvision_moves_them() {
    let (header, cases) = cases("targets/masks.txt");
    assert!(header.contains("torchvision 0.29.2"), "{header}");
    let mut ops = std::collections::BTreeSet::new();
    for case in &cases {
        let canvas = case.canvas("canvas");
        let n: usize = case.param("count").parse().unwrap();
        let (h, w) = (canvas.height as usize, canvas.width as usize);
        let input = (0..n * h * w)
            .map(|i| ((i / (h * w) * 97 + i / w % h * 31 + i % w * 7) % 251) as u8)
            .collect();
        let mut m = Masks::new(input, n, canvas).unwrap();
        let size = |key| {
            let v = case.ints(key);
            Canvas::new(v[0] as u32, v[1] as u32).unwrap()
        };
        match case.param("op") {
            "horizontal_flip" => m.horizontal_flip(),
            "vertical_flip" => m.vertical_flip(),
            "resize" => m.resize(size("size")).unwrap(),
            "crop" => {
                let (t, l, h, w) = case.crop_window();
                m.crop(t, l, h, w).unwrap()
            }
            "center_crop" => {
                let (h, w) = case.output_size();
                m.center_crop(h, w).unwrap()
            }
            "resized_crop" => {
                let (t, l, h, w) = case.crop_window();
                m.resized_crop(t, l, h, w, size("size")).unwrap()
            }
            "pad" => m
                .pad(Padding::from_torchvision(&case.ints("padding")).unwrap())
                .unwrap(),
            "affine" => m.affine(&case.affine(), &case.fill()).unwrap(),
            "rotate" => m
                .rotate(
                    case.f64("angle"),
                    case.param("expand") == "1",
                    case.pair("center"),
                    &case.fill(),
                )
                .unwrap(),
            "perspective" => m
                .perspective_coefficients(&case.coefficients(), &case.fill())
                .unwrap(),
            op => panic!("line {}: op {op} not covered", case.line),
        }
        let want: Vec<u8> = (0..case.param("out").len() / 2)
            .map(|i| u8::from_str_radix(&case.param("out")[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(m.canvas(), case.canvas("out_canvas"), "line {}", case.line);
        assert_eq!(m.count(), n);
        assert_eq!(
            m.data(),
            &want[..],
            "line {} ({})",
            case.line,
            case.param("op")
        );
        ops.insert(case.param("op").to_string());
    }
    assert_eq!(ops.len(), 10, "every mask op has cases");
}

/// Masks through `perspective(startpoints, endpoints)` with our own
/// coefficients (the exact solution rounded to float32) against
/// torchvision's output (its lstsq's coefficients): the bytes that differ
/// are counted and printed, and bounded (a coefficient a float32 step off
/// moves at most a few pixels across a rounding boundary).
#[test]
fn mask_perspectives_from_corners_read_nearly_torchvision_s_pixels() {
    let (_, cases) = cases("targets/masks.txt");
    let (mut cases_differing, mut bytes_differing, mut all) = (0, 0, 0);
    for case in cases
        .iter()
        .filter(|c| c.param("op") == "perspective" && c.get("startpoints").is_some())
    {
        let canvas = case.canvas("canvas");
        let n: usize = case.param("count").parse().unwrap();
        let (h, w) = (canvas.height as usize, canvas.width as usize);
        let input = (0..n * h * w)
            .map(|i| ((i / (h * w) * 97 + i / w % h * 31 + i % w * 7) % 251) as u8)
            .collect();
        let mut m = Masks::new(input, n, canvas).unwrap();
        m.perspective(
            case.corners("startpoints"),
            case.corners("endpoints"),
            &case.fill(),
        )
        .unwrap();
        let want = case.param("out");
        let differ = m
            .data()
            .iter()
            .enumerate()
            .filter(|&(i, b)| format!("{b:02x}") != want[2 * i..2 * i + 2])
            .count();
        cases_differing += usize::from(differ > 0);
        bytes_differing += differ;
        all += 1;
    }
    assert_eq!(all, 6);
    println!(
        "mask perspectives from corners: {cases_differing} of {all} cases differ from torchvision, {bytes_differing} bytes"
    );
    assert!(bytes_differing <= 8, "{bytes_differing} bytes differ");
}

/// torch's nearest source indices (what a mask resize reads) for pairs of
/// sides, five of them where a float64 scale would read other pixels.
#[test]
fn mask_resizes_read_the_pixels_torch_s_nearest_reads() {
    let text = std::fs::read_to_string(tensorprep_tests::fixture("targets/nearest.txt")).unwrap();
    let mut pairs = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let v: Vec<&str> = line
            .split_whitespace()
            .map(|t| t.split_once('=').unwrap().1)
            .collect();
        let (src, dst): (u32, u32) = (v[0].parse().unwrap(), v[1].parse().unwrap());
        let mut at = 0;
        let want: Vec<u8> = v[2]
            .bytes()
            .map(|d| {
                at += u32::from(d - b'0');
                at as u8
            })
            .collect();
        // One row of `src` pixels whose values are their columns, modulo
        // 256 (a wrong column still shows).
        let row: Vec<u8> = (0..src).map(|x| x as u8).collect();
        let mut m = Masks::new(row, 1, Canvas::new(1, src).unwrap()).unwrap();
        m.resize(Canvas::new(1, dst).unwrap()).unwrap();
        assert_eq!(m.data(), &want[..], "{src} -> {dst}");
        pairs += 1;
    }
    assert_eq!(pairs, 20);
}

/// `SanitizeBoundingBoxes`' keep mask, as `F.sanitize_bounding_boxes`
/// computes it; boxes, masks and key points kept in step with it.
#[test]
fn sanitizing_keeps_the_boxes_torchvision_keeps() {
    let text = std::fs::read_to_string(tensorprep_tests::fixture("targets/sanitize.txt")).unwrap();
    let (mut kept, mut removed) = (0, 0);
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#'))
    {
        let case = Case {
            line: i + 1,
            tokens: line
                .split_whitespace()
                .map(|t| {
                    let (k, v) = t.split_once('=').unwrap();
                    (k.to_string(), v.to_string())
                })
                .collect(),
        };
        let boxes = case.rows::<4>("in");
        let n = boxes.len();
        let mut b = BoundingBoxes::new(
            boxes,
            case.param("format").parse().unwrap(),
            case.canvas("canvas"),
        );
        let keep = b
            .sanitize_mask(case.f64("min_size"), case.f64("min_area"))
            .unwrap();
        let want: Vec<bool> = case.param("keep").bytes().map(|c| c == b'1').collect();
        assert_eq!(keep, want, "line {}", case.line);
        kept += want.iter().filter(|k| **k).count();
        removed += want.iter().filter(|k| !**k).count();

        // Masks (one per box, filled with its index) and key points (two per
        // box) follow the boxes.
        let canvas = Canvas::new(2, 3).unwrap();
        let mut m = Masks::new((0..n).flat_map(|i| [i as u8; 6]).collect(), n, canvas).unwrap();
        let mut k = KeyPoints::new((0..2 * n).map(|p| [p as f32, 0.0]).collect(), canvas);
        b.retain(&keep).unwrap();
        m.retain(&keep).unwrap();
        k.retain_instances(&keep, 2).unwrap();
        assert!(k.retain_instances(&keep, 3).is_err(), "another group size");
        let survivors: Vec<usize> = (0..n).filter(|i| keep[*i]).collect();
        assert_eq!(b.len(), survivors.len());
        assert_eq!(m.count(), survivors.len());
        let firsts: Vec<u8> = m.data().chunks(6).map(|c| c[0]).collect();
        assert_eq!(
            firsts,
            survivors.iter().map(|i| *i as u8).collect::<Vec<_>>()
        );
        let groups: Vec<usize> = k.points().chunks(2).map(|p| p[0][0] as usize / 2).collect();
        assert_eq!(groups, survivors);
    }
    assert!(
        kept > 20 && removed > 20,
        "both kinds covered: {kept} kept, {removed} removed"
    );
    let b = BoundingBoxes::new(vec![], BoxFormat::Xyxy, Canvas::new(4, 4).unwrap());
    assert!(
        b.sanitize_mask(0.5, 1.0).is_err(),
        "torchvision's transform refuses below 1"
    );
    let mut b = b;
    assert!(b.retain(&[true]).is_err(), "a mask of another length");
}

/// The coefficients of `perspective(startpoints, endpoints)`: ours are the
/// system's exact solution (fractions, in the fixture) rounded to float32,
/// but for coefficients that are 0 within 1e-12. torchvision's own (LAPACK
/// least squares in float64, then float32) are off by a few float32 steps
/// in some cases, which is why the kernels above are checked on
/// torchvision's coefficients: bit-exact outputs from startpoints need
/// torchvision's solver's rounding (`perspective_coefficients` takes them).
#[test]
fn perspective_coefficients_are_the_exact_solution_rounded() {
    let (_, cases) = cases("targets/boxes.txt");
    let (mut exact, mut all, mut torchvision_exact) = (0, 0, 0);
    for case in cases.iter().filter(|c| c.param("op") == "perspective") {
        let Warp::Perspective(ours) =
            Warp::perspective(case.corners("startpoints"), case.corners("endpoints")).unwrap()
        else {
            unreachable!("a perspective")
        };
        let want = case.rows::<8>("exact")[0];
        let torchvision = case.coefficients();
        for ((ours, want), theirs) in ours.iter().zip(want).zip(torchvision) {
            let ours = *ours as f32;
            assert!(
                ours == want || (ours - want).abs() <= 1e-12,
                "line {}: {ours:e}, exactly {want:e}",
                case.line
            );
            exact += usize::from(ours.to_bits() == want.to_bits());
            torchvision_exact += usize::from(theirs as f32 == want);
            all += 1;
        }
    }
    assert_eq!(all, 8 * 22);
    assert!(exact >= all - 4, "{exact} of {all} exact");
    assert!(
        torchvision_exact < exact,
        "torchvision's solver rounds away from the exact solution more often"
    );
    println!(
        "coefficients equal to the exact ones rounded: ours {exact} of {all}, torchvision's {torchvision_exact}"
    );
}

/// A sum of zeros is +0.0 in torch's matrix product (it starts from a +0.0
/// accumulator): a mirror's inverse has -0.0 coefficients, and torchvision
/// 0.29.2's `F.perspective(coefficients=[-1, 0, 0, 0, 1, 0, 0, 0])` moves the
/// point (0, 0) to (+0.0, +0.0), (3, 4) to (-3, 4), and the box [0, 0, 0, 5]
/// to [+0.0, +0.0, +0.0, 5].
#[test]
fn a_sum_of_zeros_is_positive_zero_as_in_torch() {
    let mirror = [-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    let canvas = Canvas::new(10, 10).unwrap();
    let mut k = KeyPoints::new(vec![[0.0, 0.0], [3.0, 4.0]], canvas);
    k.perspective_coefficients(&mirror).unwrap();
    assert_eq!(bits(k.points()), bits(&[[0.0, 0.0], [-3.0, 4.0]]));
    let mut b = BoundingBoxes::new(vec![[0.0, 0.0, 0.0, 5.0]], BoxFormat::Xyxy, canvas);
    b.perspective_coefficients(&mirror).unwrap();
    assert_eq!(bits(b.boxes()), bits(&[[0.0, 0.0, 0.0, 5.0]]));
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    let canvas = Canvas::new(10, 20).unwrap();
    let mut b = BoundingBoxes::new(vec![[1.0, 2.0, 3.0, 4.0]], BoxFormat::Xyxy, canvas);
    let before = b.clone();
    assert!(Canvas::new(0, 5).is_err());
    assert!(Padding::from_torchvision(&[1, 2, 3]).is_err());
    // Each refusal leaves the boxes as they were.
    let refusals: [(&str, BoxOp); 6] = [
        ("an empty crop", |b| b.crop(0, 0, 0, 4)),
        ("padding past the canvas", |b| {
            b.pad(Padding::from_torchvision(&[-10]).unwrap())
        }),
        ("scale 0", |b| {
            b.affine(&Affine::new(10.0, (0.0, 0.0), 0.0, (0.0, 0.0), None))
        }),
        ("a NaN angle", |b| b.rotate(f64::NAN, false, None)),
        ("an infinite centre", |b| {
            b.rotate(30.0, true, Some((f64::INFINITY, 0.0)))
        }),
        ("an expanded canvas past the largest side", |b| {
            *b = BoundingBoxes::new(
                b.boxes().to_vec(),
                b.format(),
                Canvas::new(1 << 18, 1 << 18).unwrap(),
            );
            b.rotate(45.0, true, None)
        }),
    ];
    for (what, refused) in refusals {
        let mut c = b.clone();
        let canvas = if what.starts_with("an expanded") {
            Canvas::new(1 << 18, 1 << 18).unwrap()
        } else {
            canvas
        };
        assert!(refused(&mut c).is_err(), "{what}");
        assert_eq!(c.boxes(), b.boxes(), "{what}: the boxes unchanged");
        assert_eq!(c.canvas(), canvas, "{what}: the canvas unchanged");
    }
    // Padding whose sides cancel out (torchvision takes it too): no overflow.
    let mut c = b.clone();
    c.pad(Padding::from_torchvision(&[0, i64::MIN, 0, i64::MAX]).unwrap())
        .unwrap();
    assert_eq!(c.canvas(), Canvas::new(9, 20).unwrap());
    assert!(
        b.crop(i64::MIN, i64::MAX, 5, 5).is_ok(),
        "far away: every box clamped"
    );
    b = before.clone();
    let square = [(0.0, 0.0), (9.0, 0.0), (9.0, 9.0), (0.0, 9.0)];
    assert!(
        b.perspective(square, [(0.0, 0.0); 4]).is_err(),
        "a degenerate quadrilateral"
    );
    assert_eq!(b, before, "a refused op leaves the boxes as they were");
    assert!("xywh".parse::<BoxFormat>().is_ok() && "XYZ".parse::<BoxFormat>().is_err());

    let mut m = Masks::new(vec![7; 6], 1, Canvas::new(2, 3).unwrap()).unwrap();
    assert!(
        Masks::new(vec![7; 5], 1, Canvas::new(2, 3).unwrap()).is_err(),
        "a short buffer"
    );
    assert!(Masks::new(vec![], usize::MAX, Canvas::new(2, 3).unwrap()).is_err());
    m.crop(i64::MIN, i64::MAX, 2, 2).unwrap();
    assert_eq!(m.data(), &[0; 4], "a window outside is zeros");
    assert!(
        m.pad(Padding::from_torchvision(&[i64::MAX]).unwrap())
            .is_err()
    );
    let huge = Canvas::new(1 << 18, 1 << 18).unwrap();
    assert!(
        m.resize(huge).is_err(),
        "past the allocation cap: refused before allocating"
    );
    assert_eq!(m.canvas(), Canvas::new(2, 2).unwrap());

    // The warps: bad parameters, a fill of the wrong length, a canvas past
    // the cap; each refused, the masks left as they were.
    let mut m = Masks::new((0..12).collect(), 2, Canvas::new(2, 3).unwrap()).unwrap();
    let before = m.clone();
    let bad_scale = Affine::new(10.0, (0.0, 0.0), 0.0, (0.0, 0.0), None);
    assert!(m.affine(&bad_scale, &[]).is_err(), "scale 0");
    let nan_angle = Affine::rotation(f64::NAN, None);
    assert!(m.affine(&nan_angle, &[]).is_err());
    assert!(m.rotate(f64::INFINITY, false, None, &[]).is_err());
    assert!(m.rotate(30.0, true, Some((f64::NAN, 0.0)), &[]).is_err());
    assert!(
        m.rotate(30.0, false, None, &[1, 2, 3]).is_err(),
        "3 fills for 2 masks"
    );
    assert!(m.perspective(square, [(0.0, 0.0); 4], &[]).is_err());
    let mut inf = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    inf[2] = f64::INFINITY;
    assert!(m.perspective_coefficients(&inf, &[]).is_err());
    inf[2] = 1e300; // finite, but not in float32
    assert!(m.perspective_coefficients(&inf, &[]).is_err());
    assert_eq!(m, before, "a refused warp leaves the masks as they were");
    let mut line = Masks::new(vec![1; 1 << 18], 1, Canvas::new(1, 1 << 18).unwrap()).unwrap();
    assert!(
        line.rotate(45.0, true, None, &[]).is_err(),
        "an expanded canvas past the allocation cap"
    );
    assert_eq!(line.canvas(), Canvas::new(1, 1 << 18).unwrap());
    // Fills: none, one, one per mask; a fast path ignores them, as in
    // torchvision; no masks at all still get the new canvas. (The values
    // and canvases are torchvision 0.29.2's for the same calls.)
    m.rotate(180.0, false, None, &[1, 2, 3]).unwrap();
    assert_eq!(m.data(), &[5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6]);
    m.rotate(90.0, true, None, &[]).unwrap();
    assert_eq!(m.canvas(), Canvas::new(3, 2).unwrap());
    let shift = Affine::new(0.0, (0.0, 2.0), 1.0, (0.0, 0.0), None);
    m.affine(&shift, &[7, 9]).unwrap();
    assert_eq!(m.data(), &[7, 7, 7, 7, 3, 0, 9, 9, 9, 9, 9, 6]);
    let mut none = Masks::new(vec![], 0, Canvas::new(4, 6).unwrap()).unwrap();
    none.rotate(90.0, true, None, &[]).unwrap();
    none.rotate(30.0, true, None, &[5]).unwrap();
    assert_eq!(none.data(), &[] as &[u8]);
    assert_eq!(
        none.canvas(),
        Canvas::new(8, 8).unwrap(),
        "torchvision's [0, 8, 8]"
    );
}

/// Polygons kept as geometry (`Polygons`): COCO polygons moved through the
/// ops of `fixtures/targets/polygons.json` and rasterised on the canvas the
/// ops leave equal pycocotools 2.0.11's masks of the same vertices moved in
/// float64 (`make_polygon_fixtures.py`), byte for byte; and they stay close
/// to the masks torchvision moves as pixels.
mod polygons {
    use serde_json::Value;
    use tensorprep::geometry::Flip;
    use tensorprep::targets::{Affine, Canvas, Geometry, Masks, Padding, Polygons, Rle};

    fn pair(v: &Value) -> (f64, f64) {
        (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
    }

    /// One fixture op as a `Geometry` on a canvas of `canvas`.
    fn geometry(op: &Value) -> Geometry {
        let int = |k: &str| op[k].as_i64().unwrap();
        match op["op"].as_str().unwrap() {
            "hflip" => Geometry::Flip(Flip::Horizontal),
            "vflip" => Geometry::Flip(Flip::Vertical),
            "resize" => Geometry::Resize(
                Canvas::new(
                    op["size"][0].as_u64().unwrap() as u32,
                    op["size"][1].as_u64().unwrap() as u32,
                )
                .unwrap(),
            ),
            "crop" => Geometry::Crop {
                top: int("top"),
                left: int("left"),
                height: int("height") as u32,
                width: int("width") as u32,
            },
            "pad" => {
                let p: Vec<i64> = op["padding"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect();
                Geometry::Pad(Padding::from_torchvision(&p).unwrap())
            }
            "affine" => Geometry::Affine(Affine::new(
                op["angle"].as_f64().unwrap(),
                pair(&op["translate"]),
                op["scale"].as_f64().unwrap(),
                pair(&op["shear"]),
                op.get("center").filter(|c| !c.is_null()).map(pair),
            )),
            "quarter_turn" => Geometry::Rotate {
                angle: 90.0 * int("k") as f64,
                expand: true,
                center: None,
            },
            "rotate" => Geometry::Rotate {
                angle: op["angle"].as_f64().unwrap(),
                expand: false,
                center: op.get("center").filter(|c| !c.is_null()).map(pair),
            },
            "perspective" => {
                let c: Vec<f64> = op["coefficients"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect();
                Geometry::Perspective(c.try_into().unwrap())
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn moved_polygons_rasterise_as_pycocotools_does() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/targets/polygons.json"
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(
            v["made_by"]
                .as_str()
                .unwrap()
                .contains("pycocotools 2.0.11")
        );
        let canvas = Canvas::new(
            v["height"].as_u64().unwrap() as u32,
            v["width"].as_u64().unwrap() as u32,
        )
        .unwrap();
        let mut source = Polygons::new(canvas);
        for instance in v["instances"].as_array().unwrap() {
            let parts: Vec<Vec<f64>> = instance
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    p.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap())
                        .collect()
                })
                .collect();
            source.push(parts.iter().map(Vec::as_slice)).unwrap();
        }
        let cases = v["cases"].as_array().unwrap();
        assert!(cases.len() >= 14);
        let mut near_outlines = 0;
        for case in cases {
            let name = case["name"].as_str().unwrap();
            let mut p = source.clone();
            // The same instances as pixels, moved as torchvision moves masks.
            let mut pixels = source.rasterize().unwrap();
            for op in case["ops"].as_array().unwrap() {
                let g = geometry(op);
                p.apply(&g).unwrap();
                pixels.apply(&g, 0).unwrap();
            }
            let out = Canvas::new(
                case["height"].as_u64().unwrap() as u32,
                case["width"].as_u64().unwrap() as u32,
            )
            .unwrap();
            assert_eq!(p.canvas(), out, "{name}: canvas");
            assert_eq!(pixels.canvas(), out, "{name}: the masks' canvas");
            let ours: Masks = p.rasterize().unwrap();
            let size = (out.height * out.width) as usize;
            let expected = case["masks_rle"].as_array().unwrap();
            assert_eq!(ours.count(), expected.len(), "{name}");
            for (i, rle) in expected.iter().enumerate() {
                let want = Rle::from_compressed(rle.as_str().unwrap().as_bytes(), out)
                    .unwrap()
                    .decode()
                    .unwrap();
                let got = &ours.data()[i * size..(i + 1) * size];
                assert!(got == want, "{name}: instance {i}");
                // Pixels moved by nearest sampling lose along the outline
                // only: the two agree on all but a thin band.
                let moved = &pixels.data()[i * size..(i + 1) * size];
                let both = got
                    .iter()
                    .zip(moved)
                    .filter(|(a, b)| **a == 1 && **b == 1)
                    .count();
                let either = got
                    .iter()
                    .zip(moved)
                    .filter(|(a, b)| **a == 1 || **b == 1)
                    .count();
                if either >= 400 {
                    let iou = both as f64 / either as f64;
                    assert!(iou > 0.85, "{name}: instance {i}: IoU {iou}");
                    near_outlines += 1;
                }
            }
        }
        assert!(near_outlines >= 40, "{near_outlines}");
    }
}
