//! PNG and WebP decoding against Pillow (`fixtures/formats/`, made by
//! `fixtures/make_format_fixtures.py`): every PNG colour type and bit depth,
//! tRNS, Adam7; WebP lossless (exact) and lossy (within a measured bound).
//! Also: the format is found from the bytes, and unknown formats are refused by name.
//!
//! `cargo test -p tensorprep-tests --test formats -- --nocapture` prints the table.

use tensorprep::decode::{ImageDecoder, ImageFormat};
use tensorprep::jpeg::DecodeOptions;
use tensorprep::{DecodeErrorKind, Error, Image, PixelFormat};
use tensorprep_tests::{Diff, read, read_png};

/// `(file, mode Pillow opens it in)` for every case of `formats/refs.txt`.
fn cases() -> Vec<(String, String)> {
    let text = String::from_utf8(read("formats/refs.txt")).expect("UTF-8");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut w = l.split('\t');
            (w.next().unwrap().to_owned(), w.next().unwrap().to_owned())
        })
        .collect()
}

fn decode(bytes: &[u8], format: PixelFormat) -> tensorprep::Result<Image> {
    ImageDecoder::new(DecodeOptions {
        format,
        ..DecodeOptions::default()
    })
    .decode(bytes)
}

/// The Pillow reference of `file` converted to `mode` (L, RGB or RGBA).
fn reference(file: &str, mode: &str) -> Option<Image> {
    let stem = file.rsplit_once('.').unwrap().0;
    let name = format!("formats/{stem}.{mode}.png");
    tensorprep_tests::fixture(&name)
        .exists()
        .then(|| read_png(&name))
}

const MODES: [(&str, PixelFormat); 3] = [
    ("L", PixelFormat::Gray8),
    ("RGB", PixelFormat::Rgb8),
    ("RGBA", PixelFormat::Rgba8),
];

#[test]
fn png_equals_pillow_in_every_mode() {
    let mut checked = 0;
    for (file, opened) in cases().iter().filter(|(f, _)| f.ends_with(".png")) {
        let bytes = read(&format!("formats/{file}"));
        assert_eq!(ImageFormat::sniff(&bytes), Some(ImageFormat::Png));
        for (mode, format) in MODES {
            let want = reference(file, mode).expect("every PNG has three references");
            let got = decode(&bytes, format).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(
                (got.width(), got.height()),
                (want.width(), want.height()),
                "{file} {mode}"
            );
            let d = Diff::of(got.as_bytes(), want.as_bytes());
            assert_eq!(
                d.max, 0.0,
                "{file} (Pillow opens it as {opened}) as {mode}: {d}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 22 * 3, "every PNG case of refs.txt");
}

#[test]
fn bgr_orders_are_the_rgb_ones_swapped() {
    let bytes = read("formats/rgba8.png");
    let rgba = decode(&bytes, PixelFormat::Rgba8).unwrap();
    let bgra = decode(&bytes, PixelFormat::Bgra8).unwrap();
    let bgr = decode(&bytes, PixelFormat::Bgr8).unwrap();
    for ((a, b), c) in rgba
        .as_bytes()
        .chunks_exact(4)
        .zip(bgra.as_bytes().chunks_exact(4))
        .zip(bgr.as_bytes().chunks_exact(3))
    {
        assert_eq!([a[2], a[1], a[0], a[3]], b);
        assert_eq!([a[2], a[1], a[0]], c);
    }
}

#[test]
fn webp_lossless_is_exact_and_lossy_is_within_its_bound() {
    println!("\nWebP vs Pillow (libwebp), levels:");
    let mut lossy = 0;
    for (file, _) in cases().iter().filter(|(f, _)| f.ends_with(".webp")) {
        let bytes = read(&format!("formats/{file}"));
        assert_eq!(ImageFormat::sniff(&bytes), Some(ImageFormat::WebP));
        for (mode, format) in MODES {
            let Some(want) = reference(file, mode) else {
                continue;
            };
            let got = decode(&bytes, format).unwrap_or_else(|e| panic!("{file}: {e}"));
            let d = Diff::of(got.as_bytes(), want.as_bytes());
            println!("  {file:<22} {mode:<4} {d}");
            // VP8 decoding is bit-exact by specification (RFC 6386); what a
            // decoder may choose is the chroma upsampling and YUV -> RGB, and
            // image-webp's "fancy" upsampling is libwebp's: measured identical.
            assert_eq!(d.max, 0.0, "{file} {mode}: {d}");
            lossy += usize::from(!file.contains("lossless"));
        }
    }
    assert_eq!(lossy, 4, "the lossy cases ran");
}

#[test]
fn unsupported_formats_are_refused_by_name() {
    let gif = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
    let err = decode(gif, PixelFormat::Rgb8).unwrap_err();
    assert_eq!(
        err,
        Error::UnsupportedImageFormat {
            found: Some(ImageFormat::Gif)
        }
    );
    assert_eq!(
        err.to_string(),
        "GIF is not supported; this build reads JPEG, PNG, WebP"
    );
    let err = decode(b"just some text", PixelFormat::Rgb8).unwrap_err();
    assert_eq!(err, Error::UnsupportedImageFormat { found: None });
    assert!(err.to_string().contains("JPEG, PNG, WebP"), "{err}");
    // Debug shows the message too (what `fn main() -> Result<..>` prints).
    assert_eq!(format!("{err:?}"), err.to_string());
}

#[test]
fn truncated_and_corrupt_files_are_typed_errors() {
    for (file, format) in [
        ("formats/rgb8.png", ImageFormat::Png),
        ("formats/rgb8_interlaced.png", ImageFormat::Png),
        ("formats/sample_lossy.webp", ImageFormat::WebP),
        ("formats/sample_lossless.webp", ImageFormat::WebP),
    ] {
        let bytes = read(file);
        let kind_of = |e: Error| match (format, e) {
            (ImageFormat::Png, Error::Png { kind }) | (ImageFormat::WebP, Error::WebP { kind }) => {
                kind
            }
            (_, e) => panic!("{file}: unexpected error {e}"),
        };
        // Every cut: a typed error (never a panic, never success).
        let step = (bytes.len() / 300).max(1);
        for n in (1..bytes.len()).step_by(step) {
            match decode(&bytes[..n], PixelFormat::Rgb8) {
                Ok(_) => panic!("{file} cut at {n} decoded"),
                Err(Error::ImplausibleSize { .. }) => {}
                Err(e) => {
                    let kind = kind_of(e);
                    assert_eq!(kind, DecodeErrorKind::Truncated, "{file} cut at {n}: {e}");
                }
            }
        }
        // Flipped bytes in the data: an error or some image, never a panic.
        for i in (40..bytes.len()).step_by(step * 3) {
            let mut bad = bytes.clone();
            bad[i] ^= 0x5a;
            let _ = decode(&bad, PixelFormat::Rgba8);
        }
    }
}

/// A plan compiled for encoded input runs PNG and WebP files too, with the
/// tensor the same plan makes from Pillow's decoded pixels.
#[test]
fn plans_run_png_and_webp_files() {
    use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
    use tensorprep::{Tensor, TensorMut};

    let pipeline = Pipeline::imagenet_eval();
    let plan = pipeline.compile(InputDesc::Encoded).unwrap();
    let mut state = PlanState::new();
    let len = plan.output_len().unwrap();
    for file in [
        "gray16.png",
        "palette4_interlaced.png",
        "rgba16.png",
        "sample_lossy.webp",
        "rgba_lossless.webp",
        "../sample.jpg",
    ] {
        let bytes = read(&format!("formats/{file}"));
        let mut got = vec![0f32; len];
        let g = plan
            .run(&mut state, Input::Encoded(&bytes), TensorMut::F32(&mut got))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let pixels = ImageDecoder::new(DecodeOptions::default())
            .decode(&bytes)
            .unwrap();
        assert_eq!(g.input, (pixels.width(), pixels.height()));
        let eager = pipeline
            .compile(InputDesc::pixels(
                PixelFormat::Rgb8,
                pixels.width(),
                pixels.height(),
            ))
            .unwrap();
        let mut want = Tensor::zeros(eager.dtype(), len);
        eager
            .run(
                &mut PlanState::new(),
                Input::Pixels(pixels.view()),
                want.as_mut(),
            )
            .unwrap();
        let Tensor::F32(want) = want else {
            unreachable!("imagenet-eval is f32")
        };
        assert_eq!(got, want, "{file}");
    }
}

/// An arithmetic-coded JPEG (`cjpeg -arithmetic`, libjpeg-turbo 2.1.5, from the
/// CC0 sample): zune-jpeg cannot decode it and says which decoder can;
/// libjpeg-turbo decodes it as Pillow does.
#[test]
fn a_jpeg_feature_the_decoder_lacks_is_named_with_the_decoder_that_has_it() {
    use tensorprep::jpeg::{Backend, JpegFeature};
    let bytes = read("sample_arithmetic.jpg");
    let on = |backend| {
        ImageDecoder::new(DecodeOptions {
            backend,
            ..DecodeOptions::default()
        })
        .decode(&bytes)
    };
    let err = on(Backend::Zune).unwrap_err();
    assert_eq!(
        err,
        Error::JpegFeature {
            feature: JpegFeature::ArithmeticCoding,
            backend: Backend::Zune
        }
    );
    let text = err.to_string();
    assert!(
        text.starts_with(
            "the JPEG uses arithmetic coding, which zune-jpeg does not decode; libjpeg-turbo does"
        ),
        "{text}"
    );
    if Backend::LibjpegTurbo.is_available() {
        assert!(text.contains("--decoder libjpeg-turbo"), "{text}");
        let got = on(Backend::LibjpegTurbo).unwrap();
        let want = read_png("sample_arithmetic_decode.png");
        assert_eq!(got.as_bytes(), want.as_bytes(), "Pillow's decode");
        assert_eq!(err.missing_decoder(), None);
    } else {
        // The feature's name depends on the crate being built: the front
        // ends add their own hint.
        assert!(text.ends_with("but this build leaves it out"), "{text}");
        assert_eq!(err.missing_decoder(), Some(Backend::LibjpegTurbo));
    }
}

/// A 3-component JPEG with Adobe's APP14 transform 0 holds RGB, not YCbCr
/// (`cjpeg -rgb`). zune-jpeg reads it as CMYK-like and gets every pixel
/// wrong, so it is refused naming libjpeg-turbo, which decodes it as Pillow.
#[test]
fn an_adobe_rgb_jpeg_is_never_decoded_wrong() {
    use tensorprep::jpeg::{Backend, JpegFeature};
    let bytes = read("sample_adobe_rgb.jpg");
    let want = read_png("sample_adobe_rgb_decode.png");
    for backend in Backend::available() {
        let got = ImageDecoder::new(DecodeOptions {
            backend,
            ..DecodeOptions::default()
        })
        .decode(&bytes);
        match (backend, got) {
            (Backend::LibjpegTurbo, Ok(img)) => assert_eq!(img.as_bytes(), want.as_bytes()),
            (Backend::Zune, Err(e)) => assert_eq!(
                e,
                Error::JpegFeature {
                    feature: JpegFeature::AdobeRgb,
                    backend: Backend::Zune
                }
            ),
            (b, Ok(img)) => {
                let d = Diff::of(img.as_bytes(), want.as_bytes());
                panic!("{b:?} decoded it, {d} off Pillow");
            }
            (b, Err(e)) => panic!("{b:?}: {e}"),
        }
    }
}
