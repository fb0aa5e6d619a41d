//! The main job: a photo (JPEG, PNG or WebP) to the ImageNet eval tensor
//! torchvision would make.
//!
//! ```text
//! cargo run --release --example preprocess                  # the bundled sample photo
//! cargo run --release --example preprocess -- PHOTO [OUT.npy]
//! # Pillow's own decoder (libjpeg-turbo; needs cmake and nasm): the tensor is then
//! # bit-identical to torchvision's.
//! cargo run --release --example preprocess --features turbojpeg
//! ```
//!
//! Steps (torchvision `Resize(256)`, `CenterCrop(224)`, `ToTensor()`, `Normalize(ImageNet)`),
//! the `imagenet-eval` preset compiled once into a plan: decode (with libjpeg-turbo,
//! only the part the crop needs) -> shorter side to 256 (Pillow bilinear,
//! antialiased), computing only the 224x224 centre -> one finish pass writing
//! normalized CHW float32.

use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use tensorprep::jpeg::Backend;
use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
use tensorprep::{Tensor, TensorMut};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let input = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sample.jpg")
    });
    let output = args.next().map(PathBuf::from);
    let jpeg = std::fs::read(&input).map_err(|e| format!("{}: {e}", input.display()))?;

    // libjpeg-turbo when built in: Pillow's decoder, so torchvision's tensor exactly.
    let backend = Backend::available().last().unwrap_or(Backend::Zune);
    let plan = Pipeline::imagenet_eval()
        .with_decoder(backend)
        .compile(InputDesc::Encoded)?;
    let mut state = PlanState::new();
    let shape = plan
        .output_shape()
        .ok_or("the preset has a fixed output shape")?;
    let mut tensor = vec![0f32; shape.iter().product()];
    // Errors name the file: "photo.png: PNG data ends before the image does".
    let geometry = plan
        .run(
            &mut state,
            Input::Encoded(&jpeg),
            TensorMut::F32(&mut tensor),
        )
        .map_err(|e| format!("{}: {e}", input.display()))?;

    // Steady state: the same image again, buffers reused, nothing allocated
    // beyond the decoder's own.
    let runs = 50;
    let start = Instant::now();
    for _ in 0..runs {
        plan.run(
            &mut state,
            Input::Encoded(&jpeg),
            TensorMut::F32(&mut tensor),
        )?;
    }
    let per_image = start.elapsed() / runs;

    println!(
        "input    {} ({}x{}, {} bytes)",
        input.display(),
        geometry.input.0,
        geometry.input.1,
        jpeg.len()
    );
    println!("decoder  {} (for JPEG files)", backend.name());
    println!(
        "steps    decode -> Resize(256) bilinear -> CenterCrop(224) -> ToTensor -> Normalize(ImageNet)"
    );
    println!("output   float32 tensor {shape:?} (CHW, RGB)");
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
        let file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        tensorprep::npy::write(file, &shape, &Tensor::F32(tensor))?;
        println!("wrote    {}", path.display());
    }
    Ok(())
}
