//! YOLO (Ultralytics) labels on a tiny crafted tree: normalised boxes to
//! CXCYWH pixels on the upright image size, missing label files as no
//! objects, malformed lines refused naming file and line.

use std::path::{Path, PathBuf};

use tensorprep::targets::{BoxFormat, Canvas};
use tensorprep::train::data::yolo::{Yolo, YoloOptions};
use tensorprep::train::data::{Dataset, Sample};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

/// `images/train`: a.jpg (sample.jpg, 451x300), b.jpg (EXIF orientation 6:
/// stored 600x512, upright 512x600), c.jpg (no label file), notes.txt
/// (not an image); `labels/train` with a.txt and b.txt as given.
fn tree(tag: &str, a: &str, b: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("tp-yolo-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("images/train")).unwrap();
    std::fs::create_dir_all(root.join("labels/train")).unwrap();
    for (from, to) in [
        ("sample.jpg", "a.jpg"),
        ("exif_orient6_grace_hopper.jpg", "b.jpg"),
        ("sample_gray.jpg", "c.jpg"),
    ] {
        std::fs::copy(
            Path::new(FIXTURES).join(from),
            root.join("images/train").join(to),
        )
        .unwrap();
    }
    std::fs::write(root.join("images/train/notes.txt"), "not an image").unwrap();
    std::fs::write(root.join("labels/train/a.txt"), a).unwrap();
    std::fs::write(root.join("labels/train/b.txt"), b).unwrap();
    root
}

fn read(yolo: &Yolo, i: usize) -> Sample {
    let mut s = Sample::default();
    yolo.read(i, &mut s).unwrap();
    s
}

#[test]
fn boxes_in_pixels_on_the_upright_image() {
    let root = tree(
        "plain",
        "0 0.5 0.5 0.2 0.4\n\n3 0.1 0.2 0.05 0.1\n",
        "1 0.5 0.25 1.0000001 0.5",
    );
    let yolo = Yolo::open(&root, "train", YoloOptions::default()).unwrap();
    assert_eq!(yolo.len(), 3);
    let s = read(&yolo, 0);
    assert_eq!(
        s.bytes,
        std::fs::read(root.join("images/train/a.jpg")).unwrap()
    );
    let t = s.target.unwrap();
    let b = t.boxes.as_ref().unwrap();
    assert_eq!(
        (b.format(), b.canvas()),
        (BoxFormat::Cxcywh, Canvas::new(300, 451).unwrap())
    );
    let px = |v: f32, side: f32| v * side;
    assert_eq!(
        b.boxes(),
        &[
            [
                px(0.5, 451.0),
                px(0.5, 300.0),
                px(0.2, 451.0),
                px(0.4, 300.0)
            ],
            [
                px(0.1, 451.0),
                px(0.2, 300.0),
                px(0.05, 451.0),
                px(0.1, 300.0)
            ],
        ]
    );
    assert_eq!(t.labels, [0, 3]);
    // EXIF orientation 6: the upright 512x600 (width x height).
    let t = read(&yolo, 1).target.unwrap();
    let b = t.boxes.unwrap();
    assert_eq!(b.canvas(), Canvas::new(600, 512).unwrap());
    assert_eq!(b.boxes()[0][..2], [256.0, 150.0]);
    // No label file: no objects.
    let t = read(&yolo, 2).target.unwrap();
    assert_eq!(t.instances(), 0);
    assert!(yolo.describe(2).ends_with("c.jpg"));
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn malformed_lines_are_errors_naming_file_and_line() {
    let cases = [
        ("four_fields", "0 0.5 0.5 0.2\n", "line 1: 4 fields"),
        ("segment", "0 0.1 0.1 0.2 0.1 0.2 0.2\n", "7 fields, not 5"),
        (
            "nan",
            "0 0.5 0.5 0.2 0.4\n0 nan 0.5 0.2 0.4\n",
            "line 2: \"nan\" is not a finite number",
        ),
        ("word", "0 0.5 0.5 0.2 x\n", "\"x\" is not a finite number"),
        (
            "negative_class",
            "-1 0.5 0.5 0.2 0.4\n",
            "class -1 is not a whole number",
        ),
        (
            "fractional_class",
            "1.5 0.5 0.5 0.2 0.4\n",
            "class 1.5 is not a whole number",
        ),
        ("outside", "0 0.5 1.01 0.2 0.4\n", "1.01 is outside [0, 1]"),
        ("pixels", "0 200 100 20 40\n", "200 is outside [0, 1]"),
        ("negative", "0 0.5 0.5 -0.1 0.4\n", "-0.1 is outside [0, 1]"),
    ];
    for (tag, a, expected) in cases {
        let root = tree(tag, a, "");
        let e = Yolo::open(&root, "train", YoloOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(expected) && e.contains("a.txt"), "{tag}: {e}");
        std::fs::remove_dir_all(root).unwrap();
    }
    let root = tree("classes", "0 0.5 0.5 0.2 0.4\n7 0.5 0.5 0.2 0.4\n", "");
    assert!(Yolo::open(&root, "train", YoloOptions::default()).is_ok());
    let e = Yolo::open(&root, "train", YoloOptions { classes: Some(7) })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2: class 7 is not below the 7 classes"),
        "{e}"
    );
    // A missing split, and an image that is not one (read time).
    assert!(
        Yolo::open(&root, "val", YoloOptions::default())
            .unwrap_err()
            .to_string()
            .contains("val")
    );
    std::fs::write(root.join("images/train/c.jpg"), b"not a jpeg").unwrap();
    let yolo = Yolo::open(&root, "train", YoloOptions::default()).unwrap();
    let e = yolo
        .read(2, &mut Sample::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("c.jpg"), "{e}");
    std::fs::remove_dir_all(root).unwrap();
}

/// A label on the upright image (EXIF orientation 6) lands on the image a
/// plan decodes: left upright with `Orientation::Apply` (as Ultralytics
/// reads its images), turned back onto the stored pixels otherwise.
#[test]
fn upright_labels_follow_the_decode_s_orientation() {
    use tensorprep::jpeg::{Backend, Orientation};
    use tensorprep::pipeline::{Decode, Op};
    use tensorprep::train::{SampleKey, TrainPipeline, TrainState};
    let root = tree("orient", "", "1 0.25 0.1 0.1 0.2");
    let yolo = Yolo::open(&root, "train", YoloOptions::default()).unwrap();
    let mut s = read(&yolo, 1);
    let target = *s.target.take().unwrap();
    assert!(target.upright);
    // cx 0.25 * 512, cy 0.1 * 600, w 51.2, h 120 on the upright 512 x 600.
    let upright = [128.0f32, 60.0, 51.2, 120.0];
    assert_eq!(target.boxes.as_ref().unwrap().boxes(), &[upright]);
    let finish = Op::RGB_U8_HWC;
    let run = |orientation| {
        let mut out = vec![0u8; 3 * 600 * 600];
        let mut decode = Decode::exact(Backend::Zune);
        decode.orientation = orientation;
        let plan = TrainPipeline::new(decode, vec![], finish)
            .compile()
            .unwrap();
        let mut t = target.clone();
        let shape = plan
            .run_input_any_size_with_target(
                &mut TrainState::new(),
                SampleKey::new(1, 0, 0),
                s.input().unwrap(),
                Some(&mut t),
                tensorprep::TensorMut::U8(&mut out),
            )
            .unwrap();
        (shape, t)
    };
    let (shape, t) = run(Orientation::Apply);
    assert_eq!(shape, [600, 512, 3]);
    assert_eq!(t.boxes.as_ref().unwrap().boxes(), &[upright]);
    // Stored (600 wide, 512 high): the quarter turn clockwise undone, a
    // quarter turn counter-clockwise: (x, y) -> (y, 512 - x).
    let (shape, t) = run(Orientation::Ignore);
    assert_eq!(shape, [512, 600, 3]);
    let b = t.boxes.as_ref().unwrap();
    assert_eq!(b.canvas(), Canvas::new(512, 600).unwrap());
    assert_eq!(b.format(), BoxFormat::Cxcywh);
    // Through the corner format and torchvision's rotate kernel in float32:
    // within a float32 step of the exact box.
    let got = b.boxes()[0];
    let want = [60.0f32, 512.0 - 128.0, 120.0, 51.2];
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 2.0 * f32::EPSILON * w.abs(),
            "{got:?} vs {want:?}"
        );
    }
}
