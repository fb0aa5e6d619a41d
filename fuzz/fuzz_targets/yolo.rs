//! The YOLO reader on arbitrary label files: every outcome is a dataset
//! whose samples read back (targets that check, finite boxes) or a typed
//! error naming the line; nothing panics. `images/train/a.jpg` is made once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::yolo::{Yolo, YoloOptions};
use tensorprep::train::data::{Dataset, Sample};

const JPEG: &[u8] = include_bytes!("../../tests/fixtures/sample_gray.jpg");

fuzz_target!(|data: &[u8]| {
    let root = std::env::temp_dir().join(format!("tp-fuzz-yolo-{}", std::process::id()));
    if !root.join("images/train/a.jpg").exists() {
        std::fs::create_dir_all(root.join("images/train")).unwrap();
        std::fs::create_dir_all(root.join("labels/train")).unwrap();
        std::fs::write(root.join("images/train/a.jpg"), JPEG).unwrap();
    }
    std::fs::write(root.join("labels/train/a.txt"), data).unwrap();
    for classes in [None, Some(5)] {
        let Ok(d) = Yolo::open(&root, "train", YoloOptions { classes }) else {
            continue;
        };
        let _ = d.fingerprint();
        let mut s = Sample::default();
        for i in 0..d.len() {
            if d.read(i, &mut s).is_ok() {
                let t = s.target.as_ref().expect("a YOLO sample has a target");
                t.check().expect("a target read is consistent");
                let b = t.boxes.as_ref().expect("boxes");
                assert!(b.boxes().iter().flatten().all(|v| v.is_finite()));
                if let Some(nc) = classes {
                    assert!(t.labels.iter().all(|&l| (0..i64::from(nc)).contains(&l)));
                }
            }
        }
    }
});
