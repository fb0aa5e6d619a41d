//! The main job: a JPEG photo to the ImageNet eval tensor torchvision would make.
//!
//! ```text
//! cargo run --release --example preprocess                  # the bundled sample photo
//! cargo run --release --example preprocess -- PHOTO.jpg [OUT.npy]
//! # Pillow's own decoder (libjpeg-turbo; needs cmake and nasm): the tensor is then
//! # bit-identical to torchvision's.
//! cargo run --release --example preprocess --features turbojpeg
//! ```
//!
//! Steps (torchvision `Resize(256)`, `CenterCrop(224)`, `ToTensor()`, `Normalize(ImageNet)`):
//! decode -> shorter side to 256 (Pillow bilinear, antialiased) -> 224x224 center crop
//! (a zero-copy view) -> one finish pass writing normalized CHW float32.

use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use tensorprep::finish::{FinishSpec, Finisher};
use tensorprep::geometry::center_crop;
use tensorprep::jpeg::{Backend, DecodeOptions, JpegDecoder};
use tensorprep::resize::{Filter, Resample, Resizer};
use tensorprep::size::SizeRule;
use tensorprep::{Image, TensorMut};

/// Reusable state: decoder, resizer and finisher keep their buffers between images.
struct EvalTransform {
    decoder: JpegDecoder,
    resizer: Resizer,
    finisher: Finisher,
    decoded: Option<Image>,
    resized: Option<Image>,
}

impl EvalTransform {
    fn new() -> Result<Self, tensorprep::Error> {
        Ok(EvalTransform {
            decoder: JpegDecoder::new(DecodeOptions {
                // libjpeg-turbo when built in: Pillow's decoder, so torchvision's tensor exactly.
                backend: if Backend::LibjpegTurbo.is_available() {
                    Backend::LibjpegTurbo
                } else {
                    Backend::Zune
                },
                ..DecodeOptions::default()
            }),
            resizer: Resizer::new(),
            finisher: Finisher::new(&FinishSpec::imagenet())?,
            decoded: None,
            resized: None,
        })
    }

    /// Writes the 3x224x224 tensor for `jpeg` into `out`.
    fn run(&mut self, jpeg: &[u8], out: &mut [f32]) -> Result<(), tensorprep::Error> {
        let info = self.decoder.read_info(jpeg)?;
        let decoded = reuse(
            &mut self.decoded,
            self.decoder.options().format,
            info.width,
            info.height,
        )?;
        self.decoder.decode_into(jpeg, &mut decoded.view_mut())?;
        let rule = SizeRule::ShorterSide {
            size: 256,
            max_size: None,
            rounding: tensorprep::size::Rounding::Truncate,
        };
        let (w, h) = rule.output_size(info.width, info.height)?;
        let resized = reuse(&mut self.resized, decoded.format(), w, h)?;
        self.resizer.resize(
            &decoded.view(),
            &mut resized.view_mut(),
            Resample::Pillow(Filter::Bilinear),
        )?;
        let crop = center_crop(&resized.view(), 224, 224)?;
        self.finisher.run(&crop, TensorMut::F32(out))
    }
}

/// Keeps an image buffer between runs, reallocating only when the shape changes.
fn reuse(
    slot: &mut Option<Image>,
    format: tensorprep::PixelFormat,
    w: u32,
    h: u32,
) -> Result<&mut Image, tensorprep::Error> {
    let fits = slot
        .as_ref()
        .is_some_and(|i| (i.format(), i.width(), i.height()) == (format, w, h));
    if !fits {
        *slot = Some(Image::new(format, w, h)?);
    }
    Ok(slot.as_mut().expect("just filled"))
}

fn write_npy(path: &PathBuf, shape: [usize; 3], data: &[f32]) -> std::io::Result<()> {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}, {}), }}",
        shape[0], shape[1], shape[2]
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in data {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes)
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let input = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sample.jpg")
    });
    let output = args.next().map(PathBuf::from);
    let jpeg = std::fs::read(&input).map_err(|e| format!("{}: {e}", input.display()))?;

    let mut transform = EvalTransform::new()?;
    let info = transform.decoder.read_info(&jpeg)?;
    let mut tensor = vec![0f32; 3 * 224 * 224];
    transform.run(&jpeg, &mut tensor)?;

    // Steady state: the same image again, buffers reused.
    let runs = 50;
    let start = Instant::now();
    for _ in 0..runs {
        transform.run(&jpeg, &mut tensor)?;
    }
    let per_image = start.elapsed() / runs;

    println!(
        "input    {} ({}x{}, {} component(s), {} bytes)",
        input.display(),
        info.width,
        info.height,
        info.components,
        jpeg.len()
    );
    println!("decoder  {:?}", transform.decoder.options().backend);
    println!(
        "steps    decode -> Resize(256) bilinear -> CenterCrop(224) -> ToTensor -> Normalize(ImageNet)"
    );
    println!("output   float32 tensor [3, 224, 224] (CHW, RGB)");
    for (c, name) in ["R", "G", "B"].iter().enumerate() {
        let plane = &tensor[c * 224 * 224..(c + 1) * 224 * 224];
        let mean = plane.iter().map(|&v| f64::from(v)).sum::<f64>() / plane.len() as f64;
        let (min, max) = plane
            .iter()
            .fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        println!("channel  {name}: mean {mean:+.4}  min {min:+.4}  max {max:+.4}");
    }
    println!("first    {:?}", &tensor[..5]);
    let checksum = tensor.iter().fold(0u64, |h, v| {
        (h ^ u64::from(v.to_bits())).wrapping_mul(0x100_0000_01b3)
    });
    println!("checksum {checksum:016x} (FNV-style over the f32 bits)");
    println!(
        "time     {:.2} ms per image (mean of {runs} runs, buffers reused)",
        per_image.as_secs_f64() * 1e3
    );
    if let Some(path) = output {
        write_npy(&path, [3, 224, 224], &tensor)?;
        println!("wrote    {}", path.display());
    }
    Ok(())
}
