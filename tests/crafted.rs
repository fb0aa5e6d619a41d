//! Untrusted files cannot make us allocate: a small file whose header claims a
//! huge image is refused before any pixel buffer exists, in every format, and
//! the peak memory of the process is measured around each decode.
//!
//! Peak memory is the kernel's high-water mark of the resident set (`VmHWM`,
//! reset through `/proc/self/clear_refs`), and the largest single allocation
//! the Rust allocator saw. One test, so that nothing else runs meanwhile.
//! `cargo test -p tensorprep-tests --test crafted -- --nocapture` prints them.

use tensorprep::decode::{ImageDecoder, ImageFormat};
use tensorprep::jpeg::{Backend, DecodeOptions};
use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
use tensorprep::{DecodeErrorKind, Error, Tensor};
use tensorprep_tests::{LargestAllocator, crc32, largest_allocation, read, reset_largest};

#[global_allocator]
static GLOBAL: LargestAllocator = LargestAllocator;

/// The resident-set high-water mark in bytes, after resetting it when `reset`.
fn peak_rss(reset: bool) -> u64 {
    if reset {
        std::fs::write("/proc/self/clear_refs", "5").expect("Linux resets VmHWM");
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// `sample.jpg` (34 KB) whose frame header claims `w` x `h`.
fn jpeg_claiming(w: u16, h: u16) -> Vec<u8> {
    jpeg_file_claiming("sample.jpg", w, h)
}

/// A JPEG fixture whose frame header (found by walking the marker segments)
/// claims `w` x `h`.
fn jpeg_file_claiming(file: &str, w: u16, h: u16) -> Vec<u8> {
    let mut b = read(file);
    let mut at = 2;
    while !matches!(b[at + 1], 0xC0..=0xC3) {
        at += 2 + usize::from(u16::from_be_bytes([b[at + 2], b[at + 3]]));
    }
    b[at + 5..at + 7].copy_from_slice(&h.to_be_bytes());
    b[at + 7..at + 9].copy_from_slice(&w.to_be_bytes());
    b
}

/// The side of the largest square the first plausibility bound let a file of
/// `bytes` bytes claim: one bit per 64 pixels, the blocks of one plane only.
fn largest_square_of_one_plane(bytes: usize) -> u16 {
    let max_pixels = bytes as f64 * 8.0 * 64.0;
    (max_pixels.sqrt() as u16).saturating_sub(1)
}

/// A PNG whose IHDR claims `w` x `h` (its CRC recomputed, so it looks valid).
fn png_claiming(file: &str, w: u32, h: u32) -> Vec<u8> {
    let mut b = read(file);
    b[16..20].copy_from_slice(&w.to_be_bytes());
    b[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = crc32(&b[12..29]);
    b[29..33].copy_from_slice(&crc.to_be_bytes());
    b
}

/// A WebP whose VP8 or VP8L header claims `w` x `h`.
fn webp_claiming(file: &str, w: u32, h: u32) -> Vec<u8> {
    let mut b = read(file);
    let at = |tag: &[u8]| b.windows(4).position(|x| x == tag).map(|p| p + 8);
    if let Some(d) = at(b"VP8 ") {
        b[d + 6..d + 8].copy_from_slice(&(w as u16).to_le_bytes());
        b[d + 8..d + 10].copy_from_slice(&(h as u16).to_le_bytes());
    } else {
        let d = at(b"VP8L").unwrap();
        let old = u32::from_le_bytes([b[d + 1], b[d + 2], b[d + 3], b[d + 4]]);
        let bits = (w - 1) | (h - 1) << 14 | (old & 0xF000_0000);
        b[d + 1..d + 5].copy_from_slice(&bits.to_le_bytes());
    }
    b
}

/// A crafted file: what it is, its bytes, the error it must give.
type Case = (&'static str, Vec<u8>, fn(&Error) -> bool);

#[test]
fn crafted_headers_are_refused_before_allocating() {
    let cases: Vec<Case> = vec![
        (
            "JPEG 10000x10000 in 34 KB",
            jpeg_claiming(10_000, 10_000),
            |e| {
                matches!(
                    e,
                    Error::ImplausibleSize {
                        format: ImageFormat::Jpeg,
                        ..
                    }
                )
            },
        ),
        // Every component's blocks count, at the least its coding process
        // spends on one: a 4:2:0 image has 1.5 blocks per 64 pixels, and a
        // progressive file spends at least a bit on each (its DC code), a
        // baseline one two (DC and end of block). Counting one plane at one
        // bit let these claim three and six times what their bytes can hold:
        // 2455x2455 in 12 KB and 4190x4190 in 34 KB (18 and 53 MB of pixels).
        (
            "progressive 4:2:0 JPEG, 1 bit/64 px",
            {
                let side = largest_square_of_one_plane(read("sample_progressive.jpg").len());
                jpeg_file_claiming("sample_progressive.jpg", side, side)
            },
            |e| {
                matches!(
                    e,
                    Error::ImplausibleSize {
                        format: ImageFormat::Jpeg,
                        ..
                    }
                )
            },
        ),
        (
            "baseline 4:2:0 JPEG, 1 bit/64 px",
            {
                let side = largest_square_of_one_plane(read("sample.jpg").len());
                jpeg_claiming(side, side)
            },
            |e| {
                matches!(
                    e,
                    Error::ImplausibleSize {
                        format: ImageFormat::Jpeg,
                        ..
                    }
                )
            },
        ),
        (
            "JPEG 10000x10000, cut short",
            {
                let b = jpeg_claiming(10_000, 10_000);
                b[..b.len() - 100].to_vec()
            },
            |e| {
                matches!(
                    e,
                    Error::Jpeg {
                        kind: DecodeErrorKind::Truncated
                    }
                )
            },
        ),
        (
            "PNG 10000x10000 in 8 KB",
            png_claiming("formats/rgb8.png", 10_000, 10_000),
            |e| {
                matches!(
                    e,
                    Error::ImplausibleSize {
                        format: ImageFormat::Png,
                        ..
                    }
                )
            },
        ),
        (
            "PNG 1-bit 11000x11000",
            png_claiming("formats/gray1.png", 11_000, 11_000),
            |e| {
                matches!(
                    e,
                    Error::ImplausibleSize {
                        format: ImageFormat::Png,
                        ..
                    }
                )
            },
        ),
        (
            "WebP lossy 10000x10000 in 17 KB",
            webp_claiming("formats/sample_lossy.webp", 10_000, 10_000),
            |e| {
                matches!(
                    e,
                    Error::ImplausibleSize {
                        format: ImageFormat::WebP,
                        ..
                    }
                )
            },
        ),
        // Lossless WebP can describe any size in a few bytes (single-symbol
        // Huffman codes cost no bits), so only the limits bound it: the
        // buffers are allocated zeroed (untouched pages cost no memory) and
        // the decode fails on the data, which does not fit the size.
        (
            "WebP lossless 10000x10000 in 23 KB",
            webp_claiming("formats/sample_lossless.webp", 10_000, 10_000),
            |e| matches!(e, Error::WebP { .. }),
        ),
    ];
    println!();
    for (name, bytes, expected) in &cases {
        for backend in Backend::available() {
            let options = DecodeOptions {
                backend,
                ..DecodeOptions::default()
            };
            // The eager decoder.
            let mut decoder = ImageDecoder::new(options);
            let baseline = peak_rss(true);
            reset_largest();
            let err = decoder.decode(bytes).unwrap_err();
            let rss = peak_rss(false).saturating_sub(baseline);
            let largest = largest_allocation();
            assert!(expected(&err), "{name} ({}): {err}", backend.name());
            // The pipeline, as the CLI and the C library run it.
            let plan = Pipeline::imagenet_eval()
                .with_decoder(backend)
                .compile(InputDesc::Encoded)
                .unwrap();
            let mut tensor = Tensor::zeros(plan.dtype(), plan.output_len().unwrap());
            let baseline = peak_rss(true);
            let run = plan.run(
                &mut PlanState::new(),
                Input::Encoded(bytes),
                tensor.as_mut(),
            );
            let plan_rss = peak_rss(false).saturating_sub(baseline);
            assert!(
                run.is_err_and(|e| expected(&e)),
                "{name}: the plan must refuse it too"
            );
            println!(
                "  {name:<38} {:<13} decode: +{:>6.1} MB peak RSS, largest allocation {:>7.1} MB; plan: +{:>6.1} MB   {err}",
                backend.name(),
                rss as f64 / 1e6,
                largest as f64 / 1e6,
                plan_rss as f64 / 1e6,
            );
            assert!(rss < 20_000_000, "{name}: peak RSS grew by {rss} bytes");
            assert!(
                plan_rss < 20_000_000,
                "{name}: the plan's peak RSS grew by {plan_rss} bytes"
            );
            if !name.contains("lossless") {
                assert!(
                    largest < 4 << 20,
                    "{name}: an allocation of {largest} bytes"
                );
            }
        }
    }
}
