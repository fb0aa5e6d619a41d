//! The detection loader's speed against torchvision's, measured in the same
//! run: the `detection-ssd` recipe (torchvision's `DetectionPresetTrain` ssd,
//! `use_v2`) over a COCO-format folder of photos (long side 500, made once
//! into `target/train-speed/`, with 1 to 6 boxes each), 2 workers, batches
//! of 8, beside torchvision's `CocoDetection` with the same v2 transforms in
//! a 2-worker `DataLoader` (when Python has torch, torchvision and
//! pycocotools). Each figure is the images/s of a second epoch (the first
//! warms up), the median of the rounds, the runs interleaved.
//!
//! With `--masks`, every object also has a polygon (an octagon in its box)
//! and the three loaders carry instance masks: tensorprep's decoded at read
//! and moved as pixels (`MaskMode::Pixels`, torchvision's masks exactly),
//! tensorprep's kept as polygons and rasterised at the end
//! (`MaskMode::Polygons`), and torchvision's (`target_keys` with `masks`).
//!
//! ```text
//! cargo run --release --example detection_speed [-- --images N] [--rounds R] [--python PATH] [--masks]
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tensorprep::train::data::coco::{Coco, CocoOptions, MaskMode};
use tensorprep::train::{Loader, LoaderConfig, TrainPipeline, TrainPlan};

#[path = "photos.rs"]
mod photos;

/// The batch size of both loaders.
const BATCH: usize = 8;

/// Writes (once) a COCO instances file for the photos of `folder`: 1 to 6
/// boxes per photo, placed by its index, each with an octagon inside it as
/// its polygon, with their image sizes.
fn annotate(folder: &Path, out: &Path) {
    if out.is_file() {
        return;
    }
    let mut files: Vec<_> = walk(folder);
    files.sort();
    let (mut images, mut annotations) = (vec![], vec![]);
    for (i, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap();
        let info = tensorprep::decode::ImageDecoder::default()
            .read_info(&bytes)
            .unwrap();
        let (w, h) = (f64::from(info.width), f64::from(info.height));
        let name = path.strip_prefix(folder).unwrap().to_string_lossy();
        images.push(format!(
            r#"{{"id": {i}, "file_name": "{name}", "width": {}, "height": {}}}"#,
            info.width, info.height
        ));
        for k in 0..1 + i % 6 {
            let (fx, fy) = ((i * 37 + k * 101) % 80, (i * 53 + k * 71) % 80);
            let (x, y) = (w * fx as f64 / 100.0, h * fy as f64 / 100.0);
            let (bw, bh) = (w * (0.1 + 0.05 * (k % 3) as f64), h * 0.15);
            let octagon: Vec<String> = (0..8)
                .flat_map(|j| {
                    let a = std::f64::consts::PI * (j as f64 + 0.5) / 4.0;
                    let (cx, cy) = (x + bw / 2.0, y + bh / 2.0);
                    [cx + bw / 2.0 * a.cos(), cy + bh / 2.0 * a.sin()]
                })
                .map(|v| format!("{v:.2}"))
                .collect();
            annotations.push(format!(
                r#"{{"id": {}, "image_id": {i}, "category_id": {}, "bbox": [{x}, {y}, {bw}, {bh}], "area": {}, "iscrowd": 0, "segmentation": [[{}]]}}"#,
                i * 10 + k,
                1 + (i + k) % 20,
                bw * bh,
                octagon.join(", ")
            ));
        }
    }
    let categories: Vec<String> = (1..=20)
        .map(|c| format!(r#"{{"id": {c}, "name": "c{c}"}}"#))
        .collect();
    let json = format!(
        r#"{{"images": [{}], "annotations": [{}], "categories": [{}]}}"#,
        images.join(", "),
        annotations.join(", "),
        categories.join(", ")
    );
    std::fs::write(out, json).unwrap();
}

/// The JPEG files under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "jpg") {
            out.push(p);
        }
    }
    out
}

/// Images per second of the loader's second epoch.
fn loader_rate(data: Arc<Coco>, plan: &Arc<TrainPlan>) -> f64 {
    let mut config = LoaderConfig::new(BATCH, 2, 1);
    config.max_shape = Some([3, 2000, 2000]); // RandomZoomOut: up to 4 x 500
    config.epochs = Some(2);
    let mut loader = Loader::new(data, Arc::clone(plan), config).unwrap();
    for batch in &mut loader {
        batch.unwrap();
    }
    let mut loader = loader.next_epoch().unwrap();
    let start = Instant::now();
    let mut n = 0;
    for batch in &mut loader {
        let batch = batch.unwrap();
        n += batch.len();
        // The boxes as a trainer takes them.
        std::hint::black_box(batch.padded_boxes(None).unwrap());
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// torchvision's CocoDetection through the ssd recipe's v2 transforms in a
/// 2-worker DataLoader: images/s of the second epoch, or why not.
fn torchvision_rate(python: &str, folder: &Path, ann: &Path, masks: bool) -> Result<f64, String> {
    let script = "\
import sys, time, torch
from collections import defaultdict
import torchvision
from torchvision import datasets, tv_tensors
from torchvision.transforms import v2 as T
mean = (123.0, 117.0, 104.0)
t = T.Compose([T.RandomPhotometricDistort(), T.RandomZoomOut(fill=defaultdict(lambda: mean, {tv_tensors.Mask: 0})),
               T.RandomIoUCrop(), T.RandomHorizontalFlip(p=0.5), T.ToImage(), T.ToDtype(torch.float, scale=True),
               T.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY), T.SanitizeBoundingBoxes(), T.ToPureTensor()])
keys = ('boxes', 'labels', 'image_id') + (('masks',) if sys.argv[4] == '1' else ())
d = datasets.wrap_dataset_for_transforms_v2(datasets.CocoDetection(sys.argv[1], sys.argv[2], transforms=t),
                                             target_keys=keys)
l = torch.utils.data.DataLoader(d, batch_size=int(sys.argv[3]), num_workers=2, shuffle=True,
                                persistent_workers=True, collate_fn=lambda b: tuple(zip(*b)))
for epoch in range(2):
    s = time.time(); n = sum(len(x) for x, _ in l)
print(n / (time.time() - s))
";
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(folder)
        .arg(ann)
        .arg(BATCH.to_string())
        .arg(if masks { "1" } else { "0" })
        .output()
        .map_err(|e| format!("no {python}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("failed").to_owned());
    }
    // pycocotools prints its progress first: the rate is the last line.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| "no rate printed".to_owned())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut n, mut rounds, mut python, mut masks) = (500, 3, "python3".to_owned(), false);
    while let Some(a) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match a.as_str() {
            "--images" => n = value().parse().expect("a count"),
            "--rounds" => rounds = value().parse().expect("a count"),
            "--python" => python = value(),
            "--masks" => masks = true,
            _ => panic!("unknown argument {a} (--images N, --rounds R, --python PATH, --masks)"),
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/train-speed");
    let folder = photos::make_photos(&root, n, 500);
    let ann = root.join(format!("instances-{n}-polygons.json"));
    annotate(&folder, &ann);
    let open = |masks: MaskMode| {
        let options = CocoOptions {
            masks,
            ..CocoOptions::default()
        };
        Arc::new(Coco::open(&folder, &ann, options).unwrap())
    };
    // Without masks, or with them as pixels and as polygons.
    let modes: &[(MaskMode, &str)] = if masks {
        &[
            (MaskMode::Pixels, "masks as pixels"),
            (MaskMode::Polygons, "masks as polygons"),
        ]
    } else {
        &[(MaskMode::Off, "")]
    };
    let plan = Arc::new(
        TrainPipeline::preset("detection-ssd")
            .unwrap()
            .compile()
            .unwrap(),
    );
    println!(
        "{n} photos (long side 500), detection-ssd, batch {BATCH}, 2 workers, median of {rounds}{}",
        if masks { ", with instance masks" } else { "" }
    );
    let (mut ours, mut theirs) = (vec![vec![]; modes.len()], vec![]);
    for _ in 0..rounds {
        for (rates, (mode, _)) in ours.iter_mut().zip(modes) {
            rates.push(loader_rate(open(*mode), &plan));
        }
        match torchvision_rate(&python, &folder, &ann, masks) {
            Ok(r) => theirs.push(r),
            Err(e) => println!("torchvision: {e}"),
        }
    }
    let ours: Vec<f64> = ours.into_iter().map(median).collect();
    for (rate, (_, what)) in ours.iter().zip(modes) {
        let label = format!("tensorprep Loader {what}:");
        println!("{label:<40}{rate:8.1} images/s");
    }
    if masks {
        println!("polygons / pixels: {:.2}x", ours[1] / ours[0]);
    }
    if !theirs.is_empty() {
        let theirs = median(theirs);
        println!(
            "{:<40}{theirs:8.1} images/s",
            "torchvision DataLoader (2 workers):"
        );
        for (rate, (_, what)) in ours.iter().zip(modes) {
            println!(
                "ratio{}: {:.2}x",
                if what.is_empty() {
                    String::new()
                } else {
                    format!(" ({what})")
                },
                rate / theirs
            );
        }
    }
}
