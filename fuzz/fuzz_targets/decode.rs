//! Arbitrary bytes through the image decoder (JPEG on both backends, PNG,
//! WebP; the format found from the bytes), in every mode, scale and output
//! format. Seed the corpus with `tests/fixtures/*.jpg` and `tests/fixtures/formats/*`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::decode::ImageDecoder;
use tensorprep::jpeg::{Backend, DecodeOptions, Orientation, Scale};
use tensorprep::{Limits, PixelFormat};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the options, so the fuzzer explores all of them.
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let formats = [PixelFormat::Rgb8, PixelFormat::Gray8, PixelFormat::Bgra8];
    let options = DecodeOptions {
        format: formats[usize::from(mode % 3)],
        orientation: if mode & 4 != 0 {
            Orientation::Apply
        } else {
            Orientation::Ignore
        },
        strict: mode & 8 == 0,
        backend: if mode & 16 != 0 {
            Backend::LibjpegTurbo
        } else {
            Backend::Zune
        },
        // Reduced sizes only exist on libjpeg-turbo; on zune-jpeg they must be refused.
        scale: [Scale::Full, Scale::Half, Scale::Quarter, Scale::Eighth]
            [usize::from(mode >> 5) & 3],
        // Small caps keep each run fast and exercise the limit checks.
        limits: Limits {
            max_pixels: 1 << 22,
            max_alloc_bytes: 1 << 26,
        },
    };
    let mut decoder = ImageDecoder::new(options);
    if let Ok(info) = decoder.read_info(bytes) {
        assert!(info.width > 0 && info.height > 0);
        if let Ok(image) = decoder.decode(bytes) {
            assert_eq!((image.width(), image.height()), (info.width, info.height));
        }
    }
});
