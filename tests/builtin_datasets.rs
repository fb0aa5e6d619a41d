//! Pixel samples through the training loader, and the built-in datasets
//! (CIFAR-10/100, MNIST and its idx kin) read as torchvision 0.29.2 reads
//! them (fixtures made by `fixtures/make_builtin_fixtures.py`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tensorprep::train::data::folder::FolderDataset;
use tensorprep::train::data::{Content, DataError, Dataset, Sample};
use tensorprep::train::{Loader, LoaderConfig, TrainPipeline};
use tensorprep_tests::{fixture, read_png};

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tp-builtin-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every batch (tensor and labels) the loader gives for `data` in one epoch.
fn batches(
    data: Arc<dyn Dataset>,
    pipeline: &TrainPipeline,
    workers: usize,
) -> Vec<(Vec<f32>, Vec<f32>)> {
    let plan = Arc::new(pipeline.compile().unwrap());
    let mut config = LoaderConfig::new(2, workers, 11);
    config.epochs = Some(1);
    Loader::new(data, plan, config)
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            let tensor = match b.tensor() {
                tensorprep::Tensor::F32(v) => v.clone(),
                other => panic!("a float32 pipeline gave {other:?}"),
            };
            (tensor, b.labels().to_vec())
        })
        .collect()
}

/// A folder of PNGs in gray, RGB and RGBA, and the same images decoded
/// (by the `png` crate) into pixel samples in their own formats.
fn folder_and_pixels(dir: &Path) -> (Arc<dyn Dataset>, Arc<dyn Dataset>) {
    let files = [
        ("a", "formats/gray8.png"),
        ("a", "formats/rgb8.png"),
        ("b", "records/folder/dog/dog1.png"),
        ("b", "formats/rgba8.png"),
        ("b", "records/folder/cat/cat1.png"),
    ];
    for (k, (class, name)) in files.iter().enumerate() {
        std::fs::create_dir_all(dir.join(class)).unwrap();
        std::fs::copy(fixture(name), dir.join(class).join(format!("{k}.png"))).unwrap();
    }
    let folder = FolderDataset::open(dir).unwrap();
    let mut pixels = Vec::new();
    for (path, label) in folder.files() {
        let k: usize = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
        let image = read_png(files[k].1);
        let view = image.view();
        let content = Content::Pixels {
            width: view.width(),
            height: view.height(),
            format: view.format(),
        };
        pixels.push((image.as_bytes().to_vec(), content, *label as f32));
    }
    let pixels = (pixels.len(), move |i: usize, s: &mut Sample| {
        let (bytes, content, label) = &pixels[i];
        s.bytes.clear();
        s.bytes.extend_from_slice(bytes);
        s.labels.clear();
        s.labels.push(*label);
        s.content = *content;
        s.id = i as u64;
        Ok::<(), DataError>(())
    });
    (Arc::new(folder), Arc::new(pixels))
}

#[test]
fn pixel_samples_give_the_folder_s_batches_for_any_worker_count() {
    let dir = scratch("pixels");
    let (folder, pixels) = folder_and_pixels(&dir);
    // Plan ops only (a random crop and flip), and with adjustments and
    // warps drawn between them (TrivialAugment).
    for preset in ["imagenet-train", "imagenet-trivialaugment"] {
        let pipeline = TrainPipeline::preset(preset).unwrap();
        let want = batches(Arc::clone(&folder), &pipeline, 1);
        assert_eq!(want.len(), 3, "{preset}");
        for workers in [1, 3] {
            let got = batches(Arc::clone(&pixels), &pipeline, workers);
            assert!(got == want, "{preset}: {workers} workers");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
