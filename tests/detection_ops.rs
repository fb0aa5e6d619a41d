//! torchvision's detection transforms against torchvision 0.29.2, for the
//! same draw: `fixtures/make_detection_fixtures.py` ran torchvision's own
//! transform classes (`RandomIoUCrop`, `RandomZoomOut`, `ScaleJitter`,
//! `RandomShortestSize`, `FixedSizeCrop`, `RandomPhotometricDistort`) on a
//! PIL photo with a target (`tv_tensors.BoundingBoxes`, `tv_tensors.Mask`),
//! with `torch.rand`, `torch.randint` and `torch.randperm` replaying the
//! random words tensorprep's op draws from (a float32 from a word's top 24
//! bits; an integer below `n` by the same multiply-and-reject as
//! [`Draws::below`]). Its pixels, boxes (bit for bit) and masks (byte for
//! byte) are `fixtures/targets/detection.txt`; here the op must give the same.
//!
//! Remaking it: `cargo test -p tensorprep-tests --test detection_ops --
//! --ignored write_draws`, then `python3 make_detection_fixtures.py` in
//! `tests/fixtures` (torch 2.15.0, torchvision 0.29.2).

use tensorprep::TensorMut;
use tensorprep::jpeg::Backend;
use tensorprep::pipeline::{Decode, Input, Op};
use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas, Masks, Target};
use tensorprep::train::{
    Augment, Draws, FixedSizeCrop, RandomIoUCrop, RandomPhotometricDistort, RandomShortestSize,
    RandomZoomOut, SampleKey, ScaleJitter, TrainPipeline, TrainState,
};

/// The photo every case starts from (a PNG: both sides read the same pixels).
const PHOTO: &str = "cv_china_rgb_area_0_0_128x85.png";
/// Sample keys per op.
const KEYS: u64 = 10;
/// The random words written per case (more than any case here draws).
const WORDS: usize = 4096;

/// The ops, by name, with the torchvision transform each stands for.
fn ops() -> Vec<(&'static str, Augment, &'static str)> {
    let mut always = RandomPhotometricDistort::new();
    always.p = 1.0;
    let mut zoom_always = RandomZoomOut::new([123, 117, 104]);
    zoom_always.p = 1.0;
    zoom_always.side_range = (1.0, 2.5);
    vec![
        (
            "iou_crop",
            Augment::RandomIoUCrop(RandomIoUCrop::new()),
            "T.RandomIoUCrop()",
        ),
        (
            "zoom_out",
            Augment::RandomZoomOut(RandomZoomOut::new([123, 117, 104])),
            "T.RandomZoomOut(fill={PIL.Image.Image: (123, 117, 104), tv_tensors.Mask: 0})",
        ),
        (
            "zoom_out_always",
            Augment::RandomZoomOut(zoom_always),
            "T.RandomZoomOut(fill={PIL.Image.Image: (123, 117, 104), tv_tensors.Mask: 0}, side_range=(1.0, 2.5), p=1.0)",
        ),
        (
            "scale_jitter",
            Augment::ScaleJitter(ScaleJitter::new(120, 100)),
            "T.ScaleJitter(target_size=(100, 120))",
        ),
        (
            "shortest_size",
            Augment::RandomShortestSize(RandomShortestSize::new(vec![60, 70, 97], Some(150))),
            "T.RandomShortestSize(min_size=[60, 70, 97], max_size=150)",
        ),
        (
            "fixed_size_crop_pad",
            Augment::FixedSizeCrop(FixedSizeCrop::new(100, 100)),
            "references.FixedSizeCrop(size=(100, 100))",
        ),
        (
            "fixed_size_crop",
            Augment::FixedSizeCrop(FixedSizeCrop::new(60, 50)),
            "references.FixedSizeCrop(size=(50, 60))",
        ),
        (
            "photometric",
            Augment::RandomPhotometricDistort(RandomPhotometricDistort::new()),
            "T.RandomPhotometricDistort()",
        ),
        (
            "photometric_always",
            Augment::RandomPhotometricDistort(always),
            "T.RandomPhotometricDistort(p=1.0)",
        ),
    ]
}

/// splitmix64, for the cases' targets.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The target of case `n` on a `w` x `h` photo: 2 to 7 boxes (in `format`;
/// small, large, thin, some reaching past the edge) with a mask each.
fn target(n: u64, (w, h): (u32, u32), format: BoxFormat) -> Target {
    let mut g = Gen(n ^ 0x5EED);
    let count = 2 + g.below(6) as usize;
    let corners: Vec<[f32; 4]> = (0..count)
        .map(|_| {
            let x1 = g.below(u64::from(w)) as f32 - 2.0 + 0.25 * g.below(4) as f32;
            let y1 = g.below(u64::from(h)) as f32 - 2.0;
            let bw = 1.0 + g.below(u64::from(w) / 2) as f32 + 0.5 * g.below(2) as f32;
            let bh = 1.0 + g.below(u64::from(h) / 2) as f32;
            [x1, y1, x1 + bw, y1 + bh]
        })
        .collect();
    let canvas = Canvas::new(h, w).unwrap();
    let mut boxes = BoundingBoxes::new(corners.clone(), BoxFormat::Xyxy, canvas);
    boxes.clamp();
    boxes.convert_format(format);
    let area = (w * h) as usize;
    let mut data = vec![0u8; count * area];
    for (i, mask) in data.chunks_exact_mut(area).enumerate() {
        let [x1, y1, x2, y2] = corners[i];
        for (y, row) in mask.chunks_exact_mut(w as usize).enumerate() {
            for (x, v) in row.iter_mut().enumerate() {
                let (x, y) = (x as f32 + 0.5, y as f32 + 0.5);
                *v = u8::from(x1 <= x && x < x2 && y1 <= y && y < y2) * (i as u8 + 1);
            }
        }
    }
    let mut t = Target::default();
    t.boxes = Some(boxes);
    t.labels = (1..=count as i64).collect();
    t.masks = Some(Masks::new(data, count, canvas).unwrap());
    t.check().unwrap();
    t
}

fn fnv(bytes: &[u8]) -> String {
    tensorprep_tests::fnv_hex(bytes)
}

fn hex(rows: &[[f32; 4]]) -> String {
    tensorprep_tests::f32_bits_hex(rows)
}

/// A case: an op, a key, and the case's number (its target's seed).
struct Case {
    name: &'static str,
    /// The boxes' format: `n % 3`, or XYXY for the references' transforms
    /// (which take no other).
    format: BoxFormat,
    augment: Augment,
    py: &'static str,
    key: u64,
    n: u64,
}

fn cases() -> Vec<Case> {
    let mut out = vec![];
    for (name, augment, py) in ops() {
        for key in 0..KEYS {
            let n = out.len() as u64;
            let format = if py.starts_with("references.") {
                BoxFormat::Xyxy
            } else {
                [BoxFormat::Xyxy, BoxFormat::Xywh, BoxFormat::Cxcywh][(n % 3) as usize]
            };
            out.push(Case {
                name,
                format,
                augment: augment.clone(),
                py,
                key,
                n,
            });
        }
    }
    out
}

fn sample_key(key: u64) -> SampleKey {
    SampleKey::new(5, 0, key)
}

/// The case's output: `out_size= out_pixels= out_boxes= out_boxes_canvas=
/// out_masks= out_masks_shape=`.
fn run(case: &Case, photo: &[u8]) -> String {
    let finish = Op::RGB_U8_HWC;
    let pipeline = TrainPipeline::new(
        Decode::exact(Backend::Zune),
        vec![case.augment.clone()],
        finish,
    );
    pipeline.check_targets().unwrap();
    let plan = pipeline.compile().unwrap();
    let mut state = TrainState::new();
    let (w, h) = photo_size(photo);
    let mut t = target(case.n, (w, h), case.format);
    let mut out = vec![0u8; 3 * 512 * 512];
    let shape = plan
        .run_input_any_size_with_target(
            &mut state,
            sample_key(case.key),
            Input::Encoded(photo),
            Some(&mut t),
            TensorMut::U8(&mut out),
        )
        .unwrap();
    let pixels = &out[..shape.iter().product::<usize>()];
    let boxes = t.boxes.unwrap();
    let masks = t.masks.unwrap();
    let (c, m) = (boxes.canvas(), masks.canvas());
    format!(
        "out_size={},{} out_pixels={} out_boxes={} out_boxes_canvas={},{} out_masks={} out_masks_shape={},{},{}",
        shape[1],
        shape[0],
        fnv(pixels),
        hex(boxes.boxes()),
        c.height,
        c.width,
        fnv(masks.data()),
        masks.count(),
        m.height,
        m.width,
    )
}

fn photo_size(png: &[u8]) -> (u32, u32) {
    // The IHDR chunk: width and height at bytes 16..24.
    let be = |i: usize| u32::from_be_bytes(png[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

/// Writes what `make_detection_fixtures.py` reads
/// (`$TMPDIR/tensorprep_detection_draws.txt`): per case its transform, its
/// random words and its target.
#[test]
#[ignore = "writes the draws make_detection_fixtures.py reads"]
fn write_draws() {
    let photo = tensorprep_tests::read(PHOTO);
    let (w, h) = photo_size(&photo);
    let mut lines = vec![];
    for case in cases() {
        let mut d = Draws::new(sample_key(case.key), 0);
        let words: Vec<String> = (0..WORDS)
            .map(|_| format!("{:08x}", d.next_u32()))
            .collect();
        let t = target(case.n, (w, h), case.format);
        let boxes = t.boxes.as_ref().unwrap();
        let masks = t.masks.as_ref().unwrap();
        lines.push(format!(
            "case={} key={} format={} boxes={} labels={} masks={} words={}\ttransform={}",
            case.name,
            case.key,
            boxes.format().name(),
            hex(boxes.boxes()),
            t.labels.len(),
            masks
                .data()
                .iter()
                .map(|v| char::from(b'0' + v))
                .collect::<String>(),
            words.join(""),
            case.py,
        ));
    }
    let path = std::env::temp_dir().join("tensorprep_detection_draws.txt");
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn detection_transforms_match_torchvision_for_the_same_draws() {
    let text = std::fs::read_to_string(tensorprep_tests::fixture("targets/detection.txt")).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.contains("torchvision 0.29.2"), "{header}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let photo = tensorprep_tests::read(PHOTO);
    let cases = cases();
    assert_eq!(lines.len(), cases.len());
    let mut changed = 0;
    for (case, line) in cases.iter().zip(&lines) {
        let want: std::collections::BTreeMap<&str, &str> = line
            .split_whitespace()
            .map(|t| t.split_once('=').unwrap())
            .collect();
        assert_eq!(
            (want["case"], want["key"]),
            (case.name, case.key.to_string().as_str())
        );
        let got = run(case, &photo);
        for tok in got.split_whitespace() {
            let (k, v) = tok.split_once('=').unwrap();
            assert_eq!(want[k], v, "{} key {}: {k}", case.name, case.key);
        }
        changed += usize::from(want["out_size"] != "128,85");
    }
    // The draws do change sizes (not every case left as it was).
    assert!(changed > 20, "{changed}");
}

#[test]
fn detection_transforms_refuse_what_they_cannot_do() {
    let finish = Op::RGB_U8_HWC;
    let photo = tensorprep_tests::read(PHOTO);
    // RandomIoUCrop needs boxes: a classification sample is an error.
    let plan = TrainPipeline::new(
        Decode::exact(Backend::Zune),
        vec![Augment::RandomIoUCrop(RandomIoUCrop::new())],
        finish,
    )
    .compile()
    .unwrap();
    let mut out = vec![0u8; 3 * 512 * 512];
    let e = plan
        .run_input_any_size(
            &mut TrainState::new(),
            sample_key(0),
            Input::Encoded(&photo),
            TensorMut::U8(&mut out),
        )
        .unwrap_err();
    assert!(e.to_string().contains("RandomIoUCrop"), "{e}");
    // No boxes and no option of 1: torchvision would draw forever; here the
    // rounds end and the sample is left as it is.
    let mut crop = RandomIoUCrop::new();
    crop.sampler_options = vec![0.5];
    crop.max_rounds = 5;
    let plan = TrainPipeline::new(
        Decode::exact(Backend::Zune),
        vec![Augment::RandomIoUCrop(crop)],
        finish,
    )
    .compile()
    .unwrap();
    let mut t = target(0, photo_size(&photo), BoxFormat::Xyxy);
    t.boxes = Some(BoundingBoxes::new(
        vec![],
        BoxFormat::Xyxy,
        Canvas::new(85, 128).unwrap(),
    ));
    t.masks = None;
    t.labels.clear();
    let shape = plan
        .run_input_any_size_with_target(
            &mut TrainState::new(),
            sample_key(0),
            Input::Encoded(&photo),
            Some(&mut t),
            TensorMut::U8(&mut out),
        )
        .unwrap();
    assert_eq!(shape, [85, 128, 3]);
    // Bad parameters are errors before any sample.
    let mut zoom = RandomZoomOut::new([0; 3]);
    zoom.side_range = (0.5, 2.0);
    let mut iou = RandomIoUCrop::new();
    iou.trials = 0;
    for bad in [
        Augment::RandomZoomOut(zoom),
        Augment::ScaleJitter(ScaleJitter::new(0, 10)),
        Augment::RandomShortestSize(RandomShortestSize::new(vec![], None)),
        Augment::FixedSizeCrop(FixedSizeCrop::new(0, 4)),
        Augment::RandomIoUCrop(iou),
    ] {
        let p = TrainPipeline::new(Decode::exact(Backend::Zune), vec![bad.clone()], finish);
        assert!(p.compile().is_err(), "{bad}");
    }
}
