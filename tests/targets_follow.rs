//! Targets through drawn augmentations against torchvision 0.29.2: for each
//! case (a pipeline, a sample key, a target), the ops tensorprep draws are
//! recorded as torchvision's functional calls (`fixtures/targets/
//! follow.txt`, `geoms=`), and `fixtures/make_follow_fixtures.py` applied
//! those calls in order to `tv_tensors` (boxes in three formats, key points,
//! instance masks). Here the same draws must come out (the recorded draw),
//! and [`move_target`] must give torchvision's boxes and points bit for bit
//! and its masks byte for byte.
//!
//! The draws are written by the ignored test `write_draws` below
//! (`cargo test -p tensorprep-tests --test targets_follow -- --ignored
//! write_draws`), then `python3 make_follow_fixtures.py` in
//! `tests/fixtures` adds torchvision's outputs.

use tensorprep::geometry::{Flip, Rotation};
use tensorprep::jpeg::Backend;
use tensorprep::pipeline::{CenterCrop, CropRounding, Decode, Input, Op, Pad, PadTo, Resize};
use tensorprep::resize::{Filter, Resample};
use tensorprep::size::SizeRule;
use tensorprep::targets::{
    BoundingBoxes, BoxFormat, Canvas, Geometry, InstanceKeyPoints, KeyPoints, Masks, Target,
};
use tensorprep::train::{
    Augment, AutoAugment, AutoAugmentPolicy, RandAugment, RandomAffine, RandomApply, RandomChoice,
    RandomCrop, RandomFlip, RandomPerspective, RandomResizedCrop, RandomRotation, SampleKey,
    TrainPipeline, TrainState, TrivialAugmentWide, move_target,
};
use tensorprep::{ImageView, PixelFormat};

/// The image every case draws on: width, height.
const SIZE: (u32, u32) = (61, 47);
/// Samples per pipeline.
const KEYS: u64 = 6;

/// The pipelines, by name.
fn pipelines() -> Vec<(&'static str, Vec<Augment>)> {
    let mut affine = RandomAffine::new(-30.0, 30.0);
    affine.translate = Some((0.1, 0.2));
    affine.scale = Some((0.8, 1.2));
    affine.shear = Some([-10.0, 10.0, -5.0, 5.0]);
    let mut rotation = RandomRotation::new(-40.0, 40.0);
    rotation.expand = true;
    let mut pivoted = RandomRotation::new(-90.0, 90.0);
    pivoted.center = Some((10.0, 30.5));
    let mut crop = RandomCrop::new(40, 50);
    crop.padding = [3, 1, 2, 4];
    crop.pad_if_needed = true;
    let resize = |size| {
        Augment::Op(Op::Resize(Resize {
            size,
            resample: Resample::Pillow(Filter::Bilinear),
        }))
    };
    vec![
        (
            "random_resized_crop",
            vec![Augment::RandomResizedCrop(RandomResizedCrop::new(32, 24))],
        ),
        ("random_crop", vec![Augment::RandomCrop(crop)]),
        (
            "flips",
            vec![
                Augment::RandomFlip(RandomFlip::new(Flip::Horizontal, 0.5)),
                Augment::RandomFlip(RandomFlip::new(Flip::Vertical, 0.5)),
            ],
        ),
        ("rotation_expand", vec![Augment::RandomRotation(rotation)]),
        ("rotation_center", vec![Augment::RandomRotation(pivoted)]),
        ("affine", vec![Augment::RandomAffine(affine)]),
        (
            "perspective",
            vec![Augment::RandomPerspective(RandomPerspective::new(0.5, 1.0))],
        ),
        (
            "autoaugment",
            vec![Augment::AutoAugment(AutoAugment::new(
                AutoAugmentPolicy::ImageNet,
            ))],
        ),
        (
            "randaugment",
            vec![Augment::RandAugment(RandAugment::new(3, 12))],
        ),
        (
            "trivialaugment",
            vec![Augment::TrivialAugmentWide(TrivialAugmentWide::new())],
        ),
        (
            "fixed",
            vec![
                resize(SizeRule::ShorterSide {
                    size: 40,
                    max_size: None,
                    rounding: Default::default(),
                }),
                Augment::Op(Op::CenterCrop(CenterCrop {
                    width: 33,
                    height: 37,
                    rounding: CropRounding::HalfEven,
                })),
                Augment::Op(Op::Pad(Pad {
                    to: PadTo::Borders {
                        left: 2,
                        top: 5,
                        right: 0,
                        bottom: 3,
                    },
                    fill: [0; 3],
                })),
                Augment::Op(Op::Rotate(Rotation::Cw90)),
                Augment::Op(Op::Flip(Flip::Both)),
                Augment::Op(Op::Rotate(Rotation::Cw270)),
                resize(SizeRule::Exact {
                    width: 29,
                    height: 31,
                }),
            ],
        ),
        (
            "composed",
            vec![
                Augment::RandomChoice(RandomChoice::new(
                    vec![1.0, 1.0],
                    vec![
                        Augment::RandomRotation(RandomRotation::new(-20.0, 20.0)),
                        Augment::RandomFlip(RandomFlip::new(Flip::Vertical, 1.0)),
                    ],
                )),
                Augment::RandomApply(RandomApply::new(
                    0.5,
                    vec![Augment::RandomResizedCrop(RandomResizedCrop::new(20, 20))],
                )),
            ],
        ),
    ]
}

/// The geometry as its torchvision call's arguments (floats as Rust's
/// shortest round-trip text, which Python's `float` reads back exactly).
fn text(g: &Geometry) -> String {
    let pair = |p: Option<(f64, f64)>| p.map_or("-".into(), |(x, y)| format!("{x:?},{y:?}"));
    match *g {
        Geometry::Flip(Flip::Horizontal) => "horizontal_flip".into(),
        Geometry::Flip(Flip::Vertical) => "vertical_flip".into(),
        Geometry::Flip(Flip::Both) => "horizontal_flip/vertical_flip".into(),
        Geometry::Resize(c) => format!("resize:{},{}", c.height, c.width),
        Geometry::Crop {
            top,
            left,
            height,
            width,
        } => format!("crop:{top},{left},{height},{width}"),
        Geometry::Pad(p) => format!("pad:{},{},{},{}", p.left, p.top, p.right, p.bottom),
        Geometry::Affine(a) => format!(
            "affine:{:?},{:?},{:?},{:?},{:?},{:?},{}",
            a.angle,
            a.translate.0,
            a.translate.1,
            a.scale,
            a.shear.0,
            a.shear.1,
            pair(a.center)
        ),
        Geometry::Rotate {
            angle,
            expand,
            center,
        } => format!("rotate:{angle:?},{},{}", u8::from(expand), pair(center)),
        Geometry::Perspective(c) => {
            format!("perspective:{}", c.map(|v| format!("{v:?}")).join(","))
        }
        _ => unreachable!("a geometry this test does not know: {g:?}"),
    }
}

/// A small deterministic generator (splitmix64) for the cases' targets.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float32 in `lo..hi` in quarter steps.
    fn quarter(&mut self, lo: f32, hi: f32) -> f32 {
        let steps = ((hi - lo) * 4.0) as u64 + 1;
        lo + (self.next() % steps) as f32 * 0.25
    }
}

/// The target of case `n`: 5 instances, each a box (in format `n % 3`), a
/// label, two key points and a mask (its box's pixels, plus a disc in a
/// value of its own).
fn target(n: u64) -> Target {
    let (w, h) = (SIZE.0 as f32, SIZE.1 as f32);
    let canvas = Canvas::new(SIZE.1, SIZE.0).unwrap();
    let mut g = Gen(n);
    let corners: Vec<[f32; 4]> = (0..5)
        .map(|_| {
            let (x1, y1) = (g.quarter(-4.0, w - 2.0), g.quarter(-4.0, h - 2.0));
            let (x2, y2) = (g.quarter(x1, w + 4.0), g.quarter(y1, h + 4.0));
            [x1, y1, x2, y2]
        })
        .collect();
    let format = [BoxFormat::Xyxy, BoxFormat::Xywh, BoxFormat::Cxcywh][(n % 3) as usize];
    let mut boxes = BoundingBoxes::new(corners.clone(), BoxFormat::Xyxy, canvas);
    boxes.clamp();
    boxes.convert_format(format);
    let points: Vec<[f32; 2]> = (0..10)
        .map(|_| [g.quarter(-1.0, w), g.quarter(-1.0, h)])
        .collect();
    let area = (SIZE.0 * SIZE.1) as usize;
    let mut data = vec![0u8; 5 * area];
    for (i, mask) in data.chunks_exact_mut(area).enumerate() {
        let [x1, y1, x2, y2] = corners[i];
        for (y, row) in mask.chunks_exact_mut(SIZE.0 as usize).enumerate() {
            for (x, v) in row.iter_mut().enumerate() {
                let (xf, yf) = (x as f32, y as f32);
                let (dx, dy) = (x as i64 - 30, y as i64 - 3 * i as i64 - 10);
                if xf >= x1 && xf < x2 && yf >= y1 && yf < y2 {
                    *v = i as u8 + 1;
                } else if dx * dx + dy * dy < 40 {
                    *v = 9;
                }
            }
        }
    }
    let mut t = Target::default();
    t.boxes = Some(boxes);
    t.labels = (1..=5).collect();
    t.masks = Some(Masks::new(data, 5, canvas).unwrap());
    t.keypoints =
        Some(InstanceKeyPoints::new(KeyPoints::new(points, canvas), 2, vec![], vec![]).unwrap());
    t.check().unwrap();
    t
}

/// One case: a pipeline's draw for one sample key.
struct Sample {
    name: &'static str,
    key: u64,
    /// The case's number: its target is [`target`]`(n)`.
    n: u64,
    ops: Vec<tensorprep::train::Drawn>,
    /// The target moved as the ops were drawn (`TrainPlan::draw_with_target`).
    moved: Target,
}

impl Sample {
    /// The torchvision calls the ops are, in order, `/` between them.
    fn geoms(&self) -> String {
        let mut size = SIZE;
        let mut geoms = vec![];
        for d in &self.ops {
            if let Some(g) = d.geometry(size).unwrap() {
                geoms.push(text(&g));
            }
            size = d.output_size(size).unwrap();
        }
        if geoms.is_empty() {
            "-".into()
        } else {
            geoms.join("/")
        }
    }

    /// The draws file's line: the case, its draw and its target.
    fn line(&self) -> String {
        let t = target(self.n);
        let (boxes, points, masks) = parts(&t);
        format!(
            "case={} key={} n={} format={} geoms={} {}",
            self.name,
            self.key,
            self.n,
            boxes.format().name(),
            self.geoms(),
            fields("", &boxes, &points, &masks)
        )
    }
}

/// The boxes, points and masks of a target that has all three.
fn parts(t: &Target) -> (BoundingBoxes, KeyPoints, Masks) {
    (
        t.boxes.clone().unwrap(),
        t.keypoints.clone().unwrap().points,
        t.masks.clone().unwrap(),
    )
}

/// `boxes= boxes_canvas= points= points_canvas= masks= masks_canvas=`, each
/// key after `prefix`: float32 as 8 hex digits of their bits (`,` within a
/// box or point, `;` between, `-` for none), masks as runs `value:count`
/// (`.` between runs, `;` between masks), canvases `H,W`.
fn fields(prefix: &str, boxes: &BoundingBoxes, points: &KeyPoints, masks: &Masks) -> String {
    use tensorprep_tests::f32_bits_hex as hex;
    let canvas = |c: Canvas| format!("{},{}", c.height, c.width);
    let area = (masks.canvas().height * masks.canvas().width) as usize;
    let runs = if masks.count() == 0 {
        "-".into()
    } else {
        masks
            .data()
            .chunks_exact(area.max(1))
            .map(|m| {
                let mut runs: Vec<(u8, usize)> = vec![];
                for &v in m {
                    match runs.last_mut() {
                        Some((last, n)) if *last == v => *n += 1,
                        _ => runs.push((v, 1)),
                    }
                }
                runs.iter()
                    .map(|(v, n)| format!("{v}:{n}"))
                    .collect::<Vec<_>>()
                    .join(".")
            })
            .collect::<Vec<_>>()
            .join(";")
    };
    format!(
        "{prefix}boxes={} {prefix}boxes_canvas={} {prefix}points={} {prefix}points_canvas={} {prefix}masks={} {prefix}masks_canvas={}",
        hex(boxes.boxes()),
        canvas(boxes.canvas()),
        hex(points.points()),
        canvas(points.canvas()),
        runs,
        canvas(masks.canvas()),
    )
}

/// Draws every case.
fn draw_all() -> Vec<Sample> {
    let finish = Op::RGB_U8_HWC;
    let pixels = vec![128u8; (SIZE.0 * SIZE.1 * 3) as usize];
    let view = ImageView::new(PixelFormat::Rgb8, SIZE.0, SIZE.1, &pixels).unwrap();
    let mut state = TrainState::new();
    let mut out = vec![];
    for (name, augments) in pipelines() {
        let pipeline = TrainPipeline::new(Decode::exact(Backend::Zune), augments, finish);
        pipeline.check_targets().unwrap();
        let plan = pipeline.compile().unwrap();
        for key in 0..KEYS {
            let ops = plan
                .draw_input(&mut state, SampleKey::new(7, 0, key), Input::Pixels(view))
                .unwrap()
                .to_vec();
            let n = out.len() as u64;
            let mut moved = target(n);
            let again = plan
                .draw_with_target(
                    &mut state,
                    SampleKey::new(7, 0, key),
                    Input::Pixels(view),
                    &mut moved,
                )
                .unwrap();
            assert_eq!(
                again,
                &ops[..],
                "{name} key {key}: the same draw with a target"
            );
            out.push(Sample {
                name,
                key,
                n,
                ops,
                moved,
            });
        }
    }
    out
}

const FIXTURE: &str = "targets/follow.txt";

/// Writes the draws (`$TMPDIR/tensorprep_follow_draws.txt`) that
/// `make_follow_fixtures.py` reads.
#[test]
#[ignore = "writes the draws make_follow_fixtures.py reads"]
fn write_draws() {
    let lines: Vec<String> = draw_all().iter().map(Sample::line).collect();
    let path = std::env::temp_dir().join("tensorprep_follow_draws.txt");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
}

fn tokens(line: &str) -> std::collections::BTreeMap<&str, &str> {
    line.split_whitespace()
        .map(|t| t.split_once('=').unwrap())
        .collect()
}

#[test]
fn targets_follow_drawn_ops_as_torchvision_moves_them() {
    let text = std::fs::read_to_string(tensorprep_tests::fixture(FIXTURE)).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.contains("torchvision 0.29.2"), "{header}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let samples = draw_all();
    assert_eq!(lines.len(), samples.len());
    let mut kinds = std::collections::BTreeSet::new();
    for (sample, line) in samples.iter().zip(&lines) {
        let want = tokens(line);
        let what = format!("{} key {}", sample.name, sample.key);
        // The recorded draw and target: the same as drawn here now.
        let recorded = sample.line();
        for (k, v) in tokens(&recorded) {
            assert_eq!(want[k], v, "{what}: {k}");
        }
        for g in sample.geoms().split('/') {
            kinds.insert(g.split(':').next().unwrap().to_string());
        }
        let mut t = target(sample.n);
        let size = move_target(&sample.ops, SIZE, &mut t).unwrap();
        assert_eq!(
            t, sample.moved,
            "{what}: moved after the draw, or while drawing"
        );
        let (boxes, points, masks) = parts(&t);
        let got = fields("out_", &boxes, &points, &masks);
        for (k, v) in tokens(&got) {
            assert_eq!(want[k], v, "{what}: {k} (geometry {})", sample.geoms());
        }
        // The image's size after the ops is the masks' canvas.
        let c = masks.canvas();
        assert_eq!(size, (c.width, c.height), "{what}");
    }
    // Every kind of torchvision call was made.
    for k in [
        "horizontal_flip",
        "vertical_flip",
        "resize",
        "crop",
        "pad",
        "affine",
        "rotate",
        "perspective",
    ] {
        assert!(kinds.contains(k), "no {k} drawn: {kinds:?}");
    }
}

#[test]
fn targets_that_cannot_follow_are_refused() {
    use tensorprep::train::AugMix;
    let finish = Op::RGB_U8_HWC;
    // AugMix, even nested: refused by name before any sample.
    let nested = vec![Augment::RandomApply(RandomApply::new(
        0.5,
        vec![Augment::AugMix(AugMix::new())],
    ))];
    let p = TrainPipeline::new(Decode::exact(Backend::Zune), nested.clone(), finish);
    let e = p.check_targets().unwrap_err().to_string();
    assert!(e.contains("AugMix"), "{e}");
    // And when drawn anyway: move_target refuses its warps.
    let plan = TrainPipeline::new(
        Decode::exact(Backend::Zune),
        vec![Augment::AugMix(AugMix::new())],
        finish,
    )
    .compile()
    .unwrap();
    let pixels = vec![128u8; (SIZE.0 * SIZE.1 * 3) as usize];
    let view = ImageView::new(PixelFormat::Rgb8, SIZE.0, SIZE.1, &pixels).unwrap();
    let mut state = TrainState::new();
    let mut refused = 0;
    for key in 0..20 {
        let ops = plan
            .draw_input(&mut state, SampleKey::new(1, 0, key), Input::Pixels(view))
            .unwrap()
            .to_vec();
        let warps = ops
            .iter()
            .filter(|d| d.geometry(SIZE).unwrap().is_some())
            .count();
        let r = move_target(&ops, SIZE, &mut target(key));
        assert_eq!(r.is_err(), warps > 0, "key {key}: {r:?}");
        refused += usize::from(r.is_err());
    }
    assert!(refused > 0);
    // A target annotated for another image size is an error, not moved.
    let mut t = target(0);
    let e = move_target(&[], (SIZE.0 + 1, SIZE.1), &mut t).unwrap_err();
    assert!(matches!(e, tensorprep::Error::SizeMismatch { .. }), "{e:?}");
    // Per-instance fields must agree.
    let mut t = target(0);
    t.labels.pop();
    assert!(t.check().is_err());
}

/// A target on the stored pixels of a photo with an EXIF orientation turns
/// upright with it when the decode applies the orientation: boxes as the
/// orientation moves the plane, masks as the image's pixels move.
#[test]
fn targets_turn_upright_with_their_photo() {
    use tensorprep::geometry::{Transform, transform};
    use tensorprep::jpeg::Orientation;
    let photo = tensorprep_tests::read("exif_orient6_grace_hopper.jpg");
    let (w, h) = (600u32, 512u32); // stored; orientation 6: a quarter turn clockwise
    let canvas = Canvas::new(h, w).unwrap();
    let mut mask = vec![0u8; (w * h) as usize];
    for y in 20..80 {
        for x in 10..50 {
            mask[(y * w + x) as usize] = 1;
        }
    }
    mask[(5 * w + 7) as usize] = 2;
    let make = || {
        let mut t = Target::default();
        t.boxes = Some(BoundingBoxes::new(
            vec![[10.0, 20.0, 50.0, 80.0]],
            BoxFormat::Xyxy,
            canvas,
        ));
        t.labels = vec![1];
        t.masks = Some(Masks::new(mask.clone(), 1, canvas).unwrap());
        t
    };
    let finish = Op::RGB_U8_HWC;
    let mut decode = Decode::exact(Backend::Zune);
    decode.orientation = Orientation::Apply;
    let plan = TrainPipeline::new(decode, vec![], finish)
        .compile()
        .unwrap();
    let mut t = make();
    let mut out = vec![0u8; 3 * 600 * 600];
    let shape = plan
        .run_input_any_size_with_target(
            &mut TrainState::new(),
            SampleKey::new(1, 0, 0),
            Input::Encoded(&photo),
            Some(&mut t),
            tensorprep::TensorMut::U8(&mut out),
        )
        .unwrap();
    assert_eq!(shape, [600, 512, 3]);
    let b = t.boxes.as_ref().unwrap();
    assert_eq!(b.canvas(), Canvas::new(600, 512).unwrap());
    assert_eq!(b.boxes(), &[[432.0, 10.0, 492.0, 50.0]]);
    // The mask went where the photo's pixels went.
    let upright = Transform::from_exif(6).unwrap();
    let src = tensorprep::ImageView::new(PixelFormat::Gray8, w, h, &mask).unwrap();
    let mut want = vec![0u8; (w * h) as usize];
    let mut dst = tensorprep::ImageViewMut::new(PixelFormat::Gray8, h, w, &mut want).unwrap();
    transform(&src, &mut dst, upright).unwrap();
    assert_eq!(t.masks.as_ref().unwrap().data(), &want[..]);
    // Stored orientation (the default): the target stays where it was.
    let plan = TrainPipeline::new(Decode::exact(Backend::Zune), vec![], finish)
        .compile()
        .unwrap();
    let mut t = make();
    plan.run_input_any_size_with_target(
        &mut TrainState::new(),
        SampleKey::new(1, 0, 0),
        Input::Encoded(&photo),
        Some(&mut t),
        tensorprep::TensorMut::U8(&mut out),
    )
    .unwrap();
    assert_eq!(t, make());
}
