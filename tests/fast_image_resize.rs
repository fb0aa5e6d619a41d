//! `Resample::FastImageResize` against the `fast_image_resize` crate itself,
//! run in the test: every filter, on real photographs and on noise, as Gray,
//! RGB and RGBA, shrinking, enlarging and mixed, with whole images, integral
//! crops and fractional boxes, through every SIMD path of ours and the
//! crate's own fastest and portable paths. The bar is 0 differing bytes.
//!
//! `cargo test -p tensorprep-tests --test fast_image_resize -- --nocapture`
//! prints the difference from Pillow's arithmetic as well.

use fast_image_resize::images::{Image as FirImage, ImageRef as FirImageRef};
use fast_image_resize::{CpuExtensions, FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use tensorprep::jpeg::{DecodeOptions, JpegDecoder};
use tensorprep::resize::{Filter, Resample, ResizePlan, ResizeState, Simd, SourceBox};
use tensorprep::{Image, ImageViewMut, Limits, PixelFormat};
use tensorprep_tests::{Diff, Rng, read};

fn algorithm(filter: Filter) -> ResizeAlg {
    let f = match filter {
        Filter::Nearest => return ResizeAlg::Nearest,
        Filter::Box => FilterType::Box,
        Filter::Bilinear => FilterType::Bilinear,
        Filter::Hamming => FilterType::Hamming,
        Filter::Bicubic => FilterType::CatmullRom,
        Filter::Lanczos3 => FilterType::Lanczos3,
    };
    ResizeAlg::Convolution(f)
}

fn pixel_type(format: PixelFormat) -> PixelType {
    match format {
        PixelFormat::Gray8 => PixelType::U8,
        PixelFormat::Rgb8 => PixelType::U8x3,
        _ => PixelType::U8x4,
    }
}

/// The crate's result, with its default options (alpha multiplied in) and
/// `extensions` (its detected best when `None`).
fn reference(
    src: &Image,
    bx: SourceBox,
    dst: (u32, u32),
    filter: Filter,
    extensions: Option<CpuExtensions>,
) -> Vec<u8> {
    let view = src.view();
    let from = FirImageRef::new(
        view.width(),
        view.height(),
        view.plane(0).data,
        pixel_type(src.format()),
    )
    .expect("a packed image");
    let mut to = FirImage::new(dst.0, dst.1, pixel_type(src.format()));
    let mut resizer = Resizer::new();
    if let Some(e) = extensions {
        // SAFETY: only the portable path is asked for here, which every CPU runs.
        unsafe { resizer.set_cpu_extensions(e) };
    }
    let (x0, y0) = (f64::from(bx.x0), f64::from(bx.y0));
    let options = ResizeOptions::new().resize_alg(algorithm(filter)).crop(
        x0,
        y0,
        f64::from(bx.x1) - x0,
        f64::from(bx.y1) - y0,
    );
    resizer
        .resize(&from, &mut to, &options)
        .expect("the crate resizes");
    to.into_vec()
}

fn ours(
    src: &Image,
    bx: SourceBox,
    dst: (u32, u32),
    resample: Resample,
    simd: Option<Simd>,
) -> Vec<u8> {
    let mut plan = ResizePlan::with_source_box(
        (src.width(), src.height()),
        bx,
        dst,
        resample,
        &Limits::DEFAULT,
    )
    .expect("a plan");
    if let Some(s) = simd {
        plan = plan.with_simd(s).expect("an available path");
    }
    let format = src.format();
    let mut out =
        vec![0u8; dst.0 as usize * dst.1 as usize * format.bytes_per_pixel().expect("packed")];
    let mut view = ImageViewMut::new(format, dst.0, dst.1, &mut out).expect("a buffer");
    plan.run(&mut ResizeState::new(), &src.view(), &mut view)
        .expect("resizes");
    out
}

/// A 320x240 window of a photograph (from its centre), to keep the test quick.
fn photo(name: &str) -> Image {
    let img = JpegDecoder::new(DecodeOptions::default())
        .decode(&read(name))
        .expect("fixture decodes");
    let (w, h) = (320.min(img.width()), 240.min(img.height()));
    let (x0, y0) = ((img.width() - w) / 2, (img.height() - h) / 2);
    let view = img.view();
    let plane = view.plane(0);
    let px = (y0..y0 + h)
        .flat_map(|y| {
            let row = &plane.data[y as usize * plane.stride..];
            row[x0 as usize * 3..(x0 + w) as usize * 3].iter().copied()
        })
        .collect();
    Image::from_vec(PixelFormat::Rgb8, w, h, px).expect("sizes match")
}

/// The photo in the three layouts the crate shares with us; RGBA gets an
/// alpha of noise and ramps (photos have none), so premultiplying matters.
fn layouts(rgb: &Image, rng: &mut Rng) -> Vec<Image> {
    let (w, h) = (rgb.width(), rgb.height());
    let px = rgb.view().plane(0).data.to_vec();
    let gray: Vec<u8> = px
        .chunks_exact(3)
        .map(|p| {
            ((u32::from(p[0]) * 299 + u32::from(p[1]) * 587 + u32::from(p[2]) * 114) / 1000) as u8
        })
        .collect();
    let rgba: Vec<u8> = px
        .chunks_exact(3)
        .enumerate()
        .flat_map(|(i, p)| {
            let x = i as u32 % w;
            let a = match x % 3 {
                0 => (x * 255 / w.max(1)) as u8,
                1 => 255,
                _ => rng.next_u32() as u8,
            };
            [p[0], p[1], p[2], a]
        })
        .collect();
    vec![
        Image::from_vec(PixelFormat::Gray8, w, h, gray).expect("sizes match"),
        rgb.clone(),
        Image::from_vec(PixelFormat::Rgba8, w, h, rgba).expect("sizes match"),
    ]
}

fn noise(format: PixelFormat, w: u32, h: u32, rng: &mut Rng) -> Image {
    let n = w as usize * h as usize * format.bytes_per_pixel().expect("packed");
    let px = (0..n).map(|_| rng.next_u32() as u8).collect();
    Image::from_vec(format, w, h, px).expect("sizes match")
}

/// Output sizes and boxes for a `w` x `h` source: shrinking (by a little
/// and by a lot), enlarging, mixed, odd sizes, integral crops and
/// fractional boxes.
fn cases(w: u32, h: u32) -> Vec<(SourceBox, (u32, u32))> {
    let full = SourceBox::full(w, h);
    let (fw, fh) = (w as f32, h as f32);
    vec![
        (full, (w / 4, h / 4)),
        (full, (224, 224)),
        (full, (w - 3, h - 1)),
        (full, (w * 3 / 2 + 1, h * 2 + 1)),
        (full, (w / 3, h * 2)),
        (full, (w, h / 2 + 1)),
        (full, (w / 2 + 1, h)),
        (full, (1, 1)),
        (
            SourceBox {
                x0: 7.0,
                y0: 5.0,
                x1: fw - 11.0,
                y1: fh - 2.0,
            },
            (w / 3, h / 3),
        ),
        (
            SourceBox {
                x0: 3.0,
                y0: 2.0,
                x1: 3.0 + 57.0,
                y1: 2.0 + 41.0,
            },
            (57, 41),
        ),
        (
            SourceBox {
                x0: 10.25,
                y0: 3.5,
                x1: fw * 0.75 + 0.3,
                y1: fh - 7.125,
            },
            (97, 61),
        ),
        (
            SourceBox {
                x0: 4.5,
                y0: 0.0,
                x1: 4.5 + 64.0,
                y1: fh,
            },
            (64, h / 2),
        ),
    ]
}

#[test]
fn equals_fast_image_resize_on_photos_and_noise() {
    let mut rng = Rng(0x0f1a_5eed);
    let mut images = Vec::new();
    for name in ["sample.jpg", "lxqt_butterfly_kenneth_wimer.jpg"] {
        images.extend(layouts(&photo(name), &mut rng));
    }
    for format in [PixelFormat::Gray8, PixelFormat::Rgb8, PixelFormat::Rgba8] {
        images.push(noise(format, 131, 77, &mut rng));
    }
    let simds: Vec<Simd> = Simd::available().collect();
    let (mut compared, mut failures) = (0usize, Vec::new());
    let mut vs_pillow = Vec::new();
    for src in &images {
        for (bx, dst) in cases(src.width(), src.height()) {
            for filter in Filter::ALL {
                let want = reference(src, bx, dst, filter, None);
                let portable = reference(src, bx, dst, filter, Some(CpuExtensions::None));
                // The crate's own paths agree, so there is one reference.
                assert_eq!(
                    want, portable,
                    "fast_image_resize's paths differ: {filter:?} {dst:?}"
                );
                for &simd in &simds {
                    let got = ours(src, bx, dst, Resample::FastImageResize(filter), Some(simd));
                    compared += got.len();
                    let d = Diff::of(&got, &want);
                    if d.differing > 0.0 {
                        failures.push(format!(
                            "{:?} {}x{} box {bx:?} -> {dst:?} {filter:?} {simd:?}: {d}",
                            src.format(),
                            src.width(),
                            src.height(),
                        ));
                    }
                }
                let photo = src.width() > 200 && src.format() != PixelFormat::Rgba8;
                if photo && bx == SourceBox::full(src.width(), src.height()) {
                    let pil = ours(src, bx, dst, Resample::Pillow(filter), None);
                    vs_pillow.push((filter, Diff::of(&want, &pil), want.len()));
                }
            }
        }
    }
    for filter in Filter::ALL {
        let rows = vs_pillow.iter().filter(|(f, ..)| *f == filter);
        let max = rows.clone().map(|(_, d, _)| d.max).fold(0.0, f64::max);
        let bytes: usize = rows.clone().map(|(.., n)| n).sum();
        let share =
            rows.map(|(_, d, n)| d.differing * *n as f64).sum::<f64>() / bytes.max(1) as f64;
        println!(
            "fast_image_resize vs Pillow, {filter:?}: max {max} levels, {:.2}% of bytes differ",
            100.0 * share
        );
    }
    println!("{compared} bytes compared, {} cases differ", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
