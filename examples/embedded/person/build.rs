//! Makes the example's camera frame from a real photo: Grace Hopper's portrait
//! (tests/fixtures, public domain), upright, its top 4:3 part resized to QVGA
//! (320x240, Pillow's bilinear) and packed as RGB565 big-endian, the order
//! most SPI camera modules send. Written to `$OUT_DIR/frame.rgb565`.

use std::path::PathBuf;

use tensorprep::decode::ImageDecoder;
use tensorprep::resize::{Filter, Resample, resize_owned};
use tensorprep::{PixelFormat, Rect};

fn main() {
    let photo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures/exif_orient6_grace_hopper.jpg");
    println!("cargo:rerun-if-changed={}", photo.display());
    let bytes = std::fs::read(&photo).expect("the photo fixture");
    let upright = ImageDecoder::default().decode(&bytes).expect("a JPEG");
    assert_eq!(upright.format(), PixelFormat::Rgb8);
    // The top of the portrait, 4:3 like a camera's frame.
    let (w, h) = (upright.width(), upright.width() * 3 / 4);
    let view = upright.view();
    let top = view.crop(Rect::new(0, 0, w, h)).expect("a 4:3 crop fits");
    let qvga = resize_owned(&top, 320, 240, Resample::Pillow(Filter::Bilinear)).expect("resize");
    let frame: Vec<u8> = qvga
        .as_bytes()
        .chunks_exact(3)
        .flat_map(|p| {
            let v =
                (u16::from(p[0]) >> 3) << 11 | (u16::from(p[1]) >> 2) << 5 | u16::from(p[2]) >> 3;
            v.to_be_bytes()
        })
        .collect();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("frame.rgb565");
    std::fs::write(out, frame).expect("write the frame");
}
