//! The photos the loader benchmarks read (`train_speed`, `detection_speed`):
//! made once from the bundled ones into `target/train-speed/`, shared by
//! including this file (`#[path = "photos.rs"] mod photos;`).

use std::path::{Path, PathBuf};

use tensorprep::jpeg;

/// The classes the photos are spread over (`class00` to `class09`).
pub(crate) const CLASSES: usize = 10;

/// Makes (once) `n` photos of long side `side` from the bundled ones: crops at
/// varied places and sizes, resized (Pillow bilinear), JPEG quality 90.
pub(crate) fn make_photos(root: &Path, n: usize, side: u32) -> PathBuf {
    let name = if side == 500 {
        format!("folder-{n}")
    } else {
        format!("folder-{n}-{side}")
    };
    let dir = root.join(name);
    if dir.join("done").is_file() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let sources: Vec<tensorprep::Image> = [
        "lxqt_butterfly_kenneth_wimer.jpg",
        "sklearn_china.jpg",
        "sample.jpg",
        "exif_orient6_grace_hopper.jpg",
    ]
    .iter()
    .map(|name| {
        let bytes = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures")
                .join(name),
        )
        .unwrap();
        jpeg::decode_jpeg(&bytes, &jpeg::DecodeOptions::default()).unwrap()
    })
    .collect();
    for i in 0..n {
        let src = &sources[i % sources.len()];
        let (w, h) = (src.width(), src.height());
        // A crop of 60-100% of each side, placed by the index.
        let cw = w * (60 + (i * 7 % 41) as u32) / 100;
        let ch = h * (60 + (i * 13 % 41) as u32) / 100;
        let (x, y) = (
            (w - cw) * (i as u32 % 5) / 4,
            (h - ch) * (i as u32 / 5 % 5) / 4,
        );
        let crop = src
            .view()
            .crop(tensorprep::Rect::new(x, y, cw, ch))
            .unwrap();
        let scale = f64::from(side) / cw.max(ch) as f64;
        let (ow, oh) = (
            (cw as f64 * scale).round() as u32,
            (ch as f64 * scale).round() as u32,
        );
        let mut out = tensorprep::Image::new(tensorprep::PixelFormat::Rgb8, ow, oh).unwrap();
        tensorprep::resize::resize(
            &crop,
            &mut out.view_mut(),
            tensorprep::resize::Resample::Pillow(tensorprep::resize::Filter::Bilinear),
        )
        .unwrap();
        let mut jpeg_bytes = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut jpeg_bytes, 90);
        encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_2);
        encoder
            .encode(
                out.as_bytes(),
                ow as u16,
                oh as u16,
                jpeg_encoder::ColorType::Rgb,
            )
            .unwrap();
        let class = dir.join(format!("class{:02}", i % CLASSES));
        std::fs::create_dir_all(&class).unwrap();
        std::fs::write(class.join(format!("{i:05}.jpg")), jpeg_bytes).unwrap();
    }
    std::fs::write(dir.join("done"), b"").unwrap();
    dir
}
