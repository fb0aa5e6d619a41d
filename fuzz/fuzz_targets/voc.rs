//! The Pascal VOC reader on arbitrary annotation XML: every outcome is a
//! dataset whose samples read back (targets that check, boxes of finite
//! numbers) or a typed error; nothing panics. The devkit layout around it
//! (the list naming `a`, `JPEGImages/a.jpg`) is made once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::voc::{Voc, VocCoordinates, VocOptions};
use tensorprep::train::data::{Dataset, Sample};

const JPEG: &[u8] = include_bytes!("../../tests/fixtures/sample_gray.jpg");

fuzz_target!(|data: &[u8]| {
    let root = std::env::temp_dir().join(format!("tp-fuzz-voc-{}", std::process::id()));
    let base = root.join("VOC2007");
    if !base.join("JPEGImages/a.jpg").exists() {
        for d in ["Annotations", "ImageSets/Main", "JPEGImages"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("ImageSets/Main/train.txt"), "a\n").unwrap();
        std::fs::write(base.join("JPEGImages/a.jpg"), JPEG).unwrap();
    }
    std::fs::write(base.join("Annotations/a.xml"), data).unwrap();
    for (keep_difficult, coordinates) in [
        (true, VocCoordinates::AsStored),
        (false, VocCoordinates::ZeroBased),
    ] {
        let options = VocOptions {
            keep_difficult,
            coordinates,
            ..VocOptions::default()
        };
        let Ok(d) = Voc::open(&root, "2007", "train", options) else {
            continue;
        };
        let _ = d.fingerprint();
        let mut s = Sample::default();
        for i in 0..d.len() {
            if d.read(i, &mut s).is_ok() {
                let t = s.target.as_ref().expect("a VOC sample has a target");
                t.check().expect("a target read is consistent");
                let b = t.boxes.as_ref().expect("boxes");
                assert!(b.boxes().iter().flatten().all(|v| v.is_finite()));
            }
        }
    }
});
