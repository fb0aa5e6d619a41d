//! The COCO reader on arbitrary annotation files: every outcome is a
//! dataset whose samples read back (targets that check, masks of their
//! image's size) or a typed error; nothing panics or allocates past the
//! limits. One image file, `a.jpg`, lies in the images folder; masks are
//! not read, decoded (polygons and RLE), or kept as polygons and
//! rasterised; key points read and not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::coco::{Categories, Coco, CocoOptions, Crowd, MaskMode};
use tensorprep::train::data::{Dataset, Sample};

const JPEG: &[u8] = include_bytes!("../../tests/fixtures/sample_gray.jpg");

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("tp-fuzz-coco-{}", std::process::id()));
    let images = dir.join("images");
    if !images.join("a.jpg").exists() {
        std::fs::create_dir_all(&images).unwrap();
        std::fs::write(images.join("a.jpg"), JPEG).unwrap();
    }
    let ann = dir.join("instances.json");
    std::fs::write(&ann, data).unwrap();
    for (masks, categories, crowd, keypoints) in [
        (MaskMode::Off, Categories::Raw, Crowd::Keep, true),
        (
            MaskMode::Pixels,
            Categories::ContiguousFrom1,
            Crowd::Drop,
            false,
        ),
        (
            MaskMode::Polygons,
            Categories::ContiguousFrom0,
            Crowd::Keep,
            false,
        ),
    ] {
        let options = CocoOptions {
            masks,
            categories,
            crowd,
            keypoints,
            ..CocoOptions::default()
        };
        let Ok(d) = Coco::open(&images, &ann, options) else {
            continue;
        };
        let _ = d.fingerprint();
        let mut s = Sample::default();
        for i in 0..d.len().min(8) {
            if d.read(i, &mut s).is_ok() {
                let t = s.target.as_mut().expect("a COCO sample has a target");
                t.check().expect("a target read is consistent");
                if t.rasterize_polygons().is_ok() {
                    t.check().expect("rasterised polygons are consistent");
                }
                if let Some(m) = &t.masks {
                    assert!(m.data().iter().all(|&v| v <= 1));
                }
            }
            let _ = d.describe(i);
        }
    }
});
