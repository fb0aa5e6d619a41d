//! The augmentations' speed against torchvision's PIL path, as ratios from
//! one command: each op with fixed parameters on the same 224x224 RGB
//! images (single thread, images/s), and torchvision's "ImageNet train with
//! AutoAugment" recipe (`RandomResizedCrop(224)`, `RandomHorizontalFlip`,
//! `AutoAugment(IMAGENET)`, `ToTensor`, `Normalize`) from the same JPEG
//! bytes, decoding included. torchvision's side runs when Python has it.
//!
//! ```text
//! cargo run --release --example augment_speed [-- --images N] [--rounds R] [--torch-python PATH]
//! ```

use std::path::Path;
use std::time::Instant;

use tensorprep::adjust::{self, GaussianKernel, Point};
use tensorprep::pipeline::{Input, InputDesc, Op, Pipeline, PlanState, Resize};
use tensorprep::resize::{Filter, Resample};
use tensorprep::size::SizeRule;
use tensorprep::train::{Augment, AutoAugmentPolicy, SampleKey, TrainPipeline, TrainState};
use tensorprep::warp::{self, Interpolation, Warp};
use tensorprep::{ImageView, ImageViewMut, PixelFormat, TensorMut};

const SIDE: u32 = 224;
const PHOTOS: [&str; 4] = [
    "lxqt_butterfly_kenneth_wimer.jpg",
    "sklearn_china.jpg",
    "sample.jpg",
    "exif_orient6_grace_hopper.jpg",
];

/// One op with its fixed parameters: its name (shared with the Python
/// side) and how tensorprep runs it.
type OpFn = fn(&ImageView<'_>, &mut ImageViewMut<'_>, &mut Vec<f32>);

fn ops() -> Vec<(&'static str, OpFn)> {
    vec![
        ("invert", |s, d, _| {
            adjust::point(s, d, Point::Invert).unwrap()
        }),
        ("posterize", |s, d, _| {
            adjust::point(s, d, Point::Posterize { bits: 4 }).unwrap()
        }),
        ("solarize", |s, d, _| {
            adjust::point(s, d, Point::Solarize { threshold: 128 }).unwrap()
        }),
        ("brightness", |s, d, _| {
            adjust::point(s, d, Point::Brightness { factor: 1.3 }).unwrap()
        }),
        ("contrast", |s, d, _| adjust::contrast(s, d, 1.3).unwrap()),
        ("saturation", |s, d, _| {
            adjust::saturation(s, d, 1.3).unwrap()
        }),
        ("hue", |s, d, _| adjust::hue(s, d, 0.05).unwrap()),
        ("sharpness", |s, d, _| adjust::sharpness(s, d, 1.5).unwrap()),
        ("grayscale", |s, d, _| adjust::grayscale(s, d).unwrap()),
        ("autocontrast", |s, d, _| {
            adjust::autocontrast(s, d).unwrap()
        }),
        ("equalize", |s, d, _| adjust::equalize(s, d).unwrap()),
        ("gaussian_blur", |s, d, scratch| {
            let k = GaussianKernel::new(9, 1.5).unwrap();
            scratch.resize(SIDE as usize * 3, 0.0);
            adjust::gaussian_blur(s, d, &k, &k, scratch).unwrap()
        }),
        ("rotate", |s, d, _| {
            let (m, _) = Warp::rotate(15.0, None, false, (SIDE, SIDE)).unwrap();
            warp::warp(s, d, &m, Interpolation::Bilinear, [0; 3]).unwrap()
        }),
        ("affine", |s, d, _| {
            let m = Warp::affine(10.0, (5.0, 5.0), 1.1, (5.0, 0.0), None, (SIDE, SIDE)).unwrap();
            warp::warp(s, d, &m, Interpolation::Nearest, [0; 3]).unwrap()
        }),
        ("perspective", |s, d, _| {
            let m = Warp::perspective(START, END).unwrap();
            warp::warp(s, d, &m, Interpolation::Bilinear, [0; 3]).unwrap()
        }),
    ]
}

const START: [(f64, f64); 4] = [(0.0, 0.0), (223.0, 0.0), (223.0, 223.0), (0.0, 223.0)];
const END: [(f64, f64); 4] = [(20.0, 10.0), (200.0, 25.0), (210.0, 215.0), (5.0, 190.0)];

/// torchvision's side: the same ops with the same parameters on PIL images
/// made from the same bytes, then the recipe from the JPEG bytes; prints
/// `name rate` lines.
const PYTHON: &str = r#"
import io, sys, time
import torch, torchvision.transforms as T, torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode as I
torch.set_num_threads(1)
raw, rounds, side = open(sys.argv[1], "rb").read(), int(sys.argv[2]), 224
n = len(raw) // (side * side * 3)
imgs = [Image.frombytes("RGB", (side, side), raw[k * side * side * 3:(k + 1) * side * side * 3]) for k in range(n)]
start, end = [[0, 0], [223, 0], [223, 223], [0, 223]], [[20, 10], [200, 25], [210, 215], [5, 190]]
ops = {
    "invert": F.invert, "posterize": lambda i: F.posterize(i, 4), "solarize": lambda i: F.solarize(i, 128),
    "brightness": lambda i: F.adjust_brightness(i, 1.3), "contrast": lambda i: F.adjust_contrast(i, 1.3),
    "saturation": lambda i: F.adjust_saturation(i, 1.3), "hue": lambda i: F.adjust_hue(i, 0.05),
    "sharpness": lambda i: F.adjust_sharpness(i, 1.5), "grayscale": lambda i: F.rgb_to_grayscale(i, 3),
    "autocontrast": F.autocontrast, "equalize": F.equalize,
    "gaussian_blur": lambda i: F.gaussian_blur(i, [9, 9], [1.5, 1.5]),
    "rotate": lambda i: F.rotate(i, 15.0, I.BILINEAR),
    "affine": lambda i: F.affine(i, 10.0, [5, 5], 1.1, [5.0, 0.0], I.NEAREST),
    "perspective": lambda i: F.perspective(i, start, end, I.BILINEAR),
}
for name, f in ops.items():
    for r in range(rounds + 1):
        if r == 1: s = time.perf_counter()
        for im in imgs: f(im)
    print(name, n * rounds / (time.perf_counter() - s))
jpegs = [open(p, "rb").read() for p in sys.argv[3:]]
t = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.AutoAugment(T.AutoAugmentPolicy.IMAGENET),
               T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
count = n * rounds
s = time.perf_counter()
for k in range(count): t(Image.open(io.BytesIO(jpegs[k % len(jpegs)])).convert("RGB"))
print("recipe", count / (time.perf_counter() - s))
"#;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut n, mut rounds) = (64usize, 5usize);
    let mut python = "python3".to_owned();
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} takes a value"));
        match a.as_str() {
            "--images" => n = value().parse().expect("--images takes a number"),
            "--rounds" => rounds = value().parse().expect("--rounds takes a number"),
            "--torch-python" => python = value(),
            _ => panic!("unknown argument {a} (--images N, --rounds R, --torch-python PATH)"),
        }
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let jpegs: Vec<Vec<u8>> = PHOTOS
        .iter()
        .map(|p| std::fs::read(fixtures.join(p)).unwrap())
        .collect();
    // The images: each photo resized to 224x224 (Pillow bilinear), taken
    // in turn.
    let decode = Pipeline::imagenet_eval().ops()[0];
    let mut to_image = vec![
        decode,
        Op::Resize(Resize {
            size: SizeRule::Exact {
                width: SIDE,
                height: SIDE,
            },
            resample: Resample::Pillow(Filter::Bilinear),
        }),
    ];
    to_image.extend(Op::RGB_U8_HWC);
    let plan = Pipeline::from_ops(&to_image)
        .unwrap()
        .compile(InputDesc::Encoded)
        .unwrap();
    let len = (SIDE * SIDE * 3) as usize;
    let mut raw = vec![0u8; n * len];
    let mut state = PlanState::new();
    for (k, img) in raw.chunks_mut(len).enumerate() {
        plan.run(
            &mut state,
            Input::Encoded(&jpegs[k % 4]),
            TensorMut::U8(img),
        )
        .unwrap();
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/augment-speed");
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("images.bin");
    std::fs::write(&bin, &raw).unwrap();

    let mut ours = Vec::new();
    let mut out = vec![0u8; len];
    let mut scratch = Vec::new();
    for (name, op) in ops() {
        let mut start = Instant::now();
        for r in 0..=rounds {
            if r == 1 {
                start = Instant::now();
            }
            for img in raw.chunks(len) {
                let src = ImageView::new(PixelFormat::Rgb8, SIDE, SIDE, img).unwrap();
                let mut dst = ImageViewMut::new(PixelFormat::Rgb8, SIDE, SIDE, &mut out).unwrap();
                op(&src, &mut dst, &mut scratch);
            }
        }
        ours.push((name, (n * rounds) as f64 / start.elapsed().as_secs_f64()));
    }
    // The recipe from JPEG bytes, decoding included, one thread.
    let mut recipe = TrainPipeline::imagenet_train();
    recipe
        .augments
        .push(Augment::auto_augment(AutoAugmentPolicy::ImageNet));
    let recipe = recipe.compile().unwrap();
    let mut state = TrainState::new();
    let mut tensor = vec![0f32; 3 * 224 * 224];
    let count = n * rounds;
    let start = Instant::now();
    for k in 0..count {
        recipe
            .run(
                &mut state,
                SampleKey::new(1, 0, k as u64),
                &jpegs[k % 4],
                TensorMut::F32(&mut tensor),
            )
            .unwrap();
    }
    ours.push(("recipe", count as f64 / start.elapsed().as_secs_f64()));

    let theirs: Vec<(String, f64)> = match std::process::Command::new(&python)
        .arg("-c")
        .arg(PYTHON)
        .arg(&bin)
        .arg(rounds.to_string())
        .args(PHOTOS.iter().map(|p| fixtures.join(p)))
        .output()
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (name, rate) = l.split_once(' ')?;
                Some((name.to_owned(), rate.parse().ok()?))
            })
            .collect(),
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            eprintln!("torchvision: {}", err.lines().last().unwrap_or("failed"));
            Vec::new()
        }
        Err(e) => {
            eprintln!("torchvision: no {python}: {e}");
            Vec::new()
        }
    };
    println!(
        "{n} images of {SIDE}x{SIDE} RGB, {rounds} rounds after a warm-up, one thread; recipe from JPEG bytes"
    );
    println!(
        "{:<14} {:>14} {:>16} {:>7}",
        "op", "tensorprep/s", "torchvision/s", "ratio"
    );
    for (name, rate) in ours {
        match theirs.iter().find(|(t, _)| t == name) {
            Some((_, t)) => println!("{name:<14} {rate:>14.0} {t:>16.0} {:>6.2}x", rate / t),
            None => println!("{name:<14} {rate:>14.0} {:>16} {:>7}", "-", "-"),
        }
    }
}
