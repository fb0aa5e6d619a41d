//! Examples of tensorprep live beside this file; run them with
//! `cargo run --release --example <name>`. The library holds what several of
//! them (and the benchmarks) share: the bundled fixtures, a camera frame made
//! from a photo, and the interleaved timing in [`race`].

use std::path::PathBuf;

use tensorprep::color::YuvRange;
use tensorprep::jpeg::{DecodeOptions, JpegDecoder};
use tensorprep::{Image, PixelFormat};

pub mod race;

/// The bytes of `tests/fixtures/<name>`.
///
/// ```
/// assert!(tensorprep_examples::fixture("sample.jpg").starts_with(&[0xff, 0xd8]));
/// ```
pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture JPEG `name`, decoded to RGB with the default decoder.
///
/// ```
/// let photo = tensorprep_examples::decode_fixture("sklearn_china.jpg");
/// assert_eq!((photo.width(), photo.height()), (640, 427));
/// ```
pub fn decode_fixture(name: &str) -> Image {
    JpegDecoder::new(DecodeOptions::default())
        .decode(&fixture(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `rgb` (its even-sized part) as an NV21 frame in BT.601 `range`, as a
/// camera would give it: luma per pixel, chroma (V then U) from the top-left
/// pixel of each 2x2 block, in `f64`, rounded.
///
/// ```
/// use tensorprep::{Image, PixelFormat, color::YuvRange};
/// let white = Image::from_vec(PixelFormat::Rgb8, 2, 2, vec![255; 12]).unwrap();
/// let nv21 = tensorprep_examples::nv21_from_rgb(&white, YuvRange::Limited);
/// assert_eq!(nv21.as_bytes(), [235, 235, 235, 235, 128, 128]);
/// ```
pub fn nv21_from_rgb(rgb: &Image, range: YuvRange) -> Image {
    let (w, h) = (rgb.width() as usize & !1, rgb.height() as usize & !1);
    let px = rgb.as_bytes();
    let ycc = |x: usize, y: usize| {
        let i = (y * rgb.width() as usize + x) * 3;
        let [r, g, b] = [0, 1, 2].map(|c| f64::from(px[i + c]));
        match range {
            YuvRange::Limited => (
                16.0 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0,
                128.0 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0,
                128.0 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0,
            ),
            YuvRange::Full => (
                0.299 * r + 0.587 * g + 0.114 * b,
                128.0 - 0.168_736 * r - 0.331_264 * g + 0.5 * b,
                128.0 + 0.5 * r - 0.418_688 * g - 0.081_312 * b,
            ),
        }
    };
    let mut out = Image::new(PixelFormat::Nv21, w as u32, h as u32).expect("an even size");
    let (luma, chroma) = out.as_bytes_mut().split_at_mut(w * h);
    for (i, l) in luma.iter_mut().enumerate() {
        *l = ycc(i % w, i / w).0.round() as u8;
    }
    for (i, vu) in chroma.chunks_exact_mut(2).enumerate() {
        let (_, u, v) = ycc(i % (w / 2) * 2, i / (w / 2) * 2);
        vu.copy_from_slice(&[v.round() as u8, u.round() as u8]);
    }
    out
}
