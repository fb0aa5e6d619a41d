//! The training loader's speed, as ratios against references measured in the
//! same run, each in steady state (a warm-up epoch first, the median of a
//! few runs): torchvision's ImageNet training transform (`imagenet-train`)
//! over 2,000 ImageNet-like photos (long side 500, made once from the
//! bundled photos into `target/train-speed/`), from an image folder and
//! from a `.rec`, with 1 and 2 workers; beside the same per-image work in a
//! single-threaded loop, and on bytes already in memory with as many
//! threads; and beside PyTorch's DataLoader (torchvision PIL transforms, 2
//! workers) and MindSpore's `RandomCropDecodeResize` pipeline (2 workers)
//! when Python has them.
//!
//! ```text
//! cargo run --release --example train_speed [--features turbojpeg] [-- --images N] [--rounds R]
//!     [--long-side PX]
//!     [--torch-python PATH] [--mindspore-python PATH]
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tensorprep::train::data::folder::FolderDataset;
use tensorprep::train::data::recordio::{RecordIoDataset, RecordIoWriter, pack_image};
use tensorprep::train::data::{Dataset, Sample};
use tensorprep::train::{Loader, LoaderConfig, SampleKey, TrainPipeline, TrainPlan, TrainState};
use tensorprep::{TensorMut, jpeg};

#[path = "photos.rs"]
mod photos;
use photos::{CLASSES, make_photos};

/// Packs the folder into a `.rec` (once).
fn pack(folder: &FolderDataset, path: &Path) {
    if path.is_file() {
        return;
    }
    let mut rec = RecordIoWriter::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ));
    let (mut sample, mut record) = (Sample::default(), Vec::new());
    for i in 0..folder.len() {
        folder.read(i, &mut sample).unwrap();
        pack_image(&sample.labels, i as u64, &sample.bytes, &mut record);
        rec.write_record(&record).unwrap();
    }
}

/// Images per second of the loader in steady state: its second epoch (the
/// first warms it up: threads started, batch buffers touched), timed from
/// the end of the first.
fn loader_rate(data: Arc<dyn Dataset>, plan: &Arc<TrainPlan>, workers: usize) -> f64 {
    let mut config = LoaderConfig::new(64, workers, 1);
    config.epochs = Some(2);
    let mut loader = Loader::new(data, Arc::clone(plan), config).unwrap();
    for batch in &mut loader {
        batch.unwrap();
    }
    let mut loader = loader.next_epoch().unwrap();
    let start = Instant::now();
    let mut n = 0;
    for batch in &mut loader {
        n += batch.unwrap().len();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// Images per second of the same per-image work on bytes in memory, on
/// `threads` threads taking every `threads`-th image: a second pass, timed
/// after a first that warms up as the loader's first epoch does.
fn memory_rate(images: &[Vec<u8>], plan: &TrainPlan, threads: usize) -> f64 {
    let len: usize = plan.output_shape().unwrap().iter().product();
    let warm = std::sync::Barrier::new(threads + 1);
    let mut start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let warm = &warm;
            s.spawn(move || {
                let mut state = TrainState::new();
                let mut out = vec![0f32; len];
                for pass in 0..2u32 {
                    if pass == 1 {
                        warm.wait();
                    }
                    for (i, bytes) in images.iter().enumerate().skip(t).step_by(threads) {
                        plan.run(
                            &mut state,
                            SampleKey::new(1, pass, i as u64),
                            bytes,
                            TensorMut::F32(&mut out),
                        )
                        .unwrap();
                    }
                }
            });
        }
        warm.wait();
        start = Instant::now();
    });
    images.len() as f64 / start.elapsed().as_secs_f64()
}

/// PyTorch's DataLoader and MindSpore's pipeline over the folder, when
/// Python has them: images/s of their second epoch (steady state, as ours;
/// PyTorch's workers persist), or why not.
fn python_rate(python: &str, folder: &Path, which: &str) -> Result<f64, String> {
    let script = match which {
        "pytorch" => {
            "import sys, time, torch, torchvision.transforms as T, torchvision.datasets as D\n\
             t = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),\n\
                            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])\n\
             d = torch.utils.data.DataLoader(D.ImageFolder(sys.argv[1], t), batch_size=64, num_workers=2,\n\
                                             shuffle=True, persistent_workers=True)\n\
             for epoch in range(2):\n\
             \x20   s = time.time(); n = sum(len(x) for x, _ in d)\n\
             print(n / (time.time() - s))\n"
        }
        _ => {
            "import sys, time, mindspore.dataset as ds, mindspore.dataset.vision as V\n\
             d = ds.ImageFolderDataset(sys.argv[1], num_parallel_workers=2, shuffle=True)\n\
             d = d.map([V.RandomCropDecodeResize(224), V.RandomHorizontalFlip(),\n\
                        V.Normalize([123.675, 116.28, 103.53], [58.395, 57.12, 57.375]), V.HWC2CHW()],\n\
                       input_columns='image', num_parallel_workers=2).batch(64)\n\
             it = d.create_tuple_iterator(num_epochs=2)\n\
             for epoch in range(2):\n\
             \x20   s = time.time(); n = sum(x[0].shape[0] for x in it)\n\
             print(n / (time.time() - s))\n"
        }
    };
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(folder)
        .output()
        .map_err(|e| format!("no {python}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("failed").to_owned();
        return Err(last);
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| "no rate printed".to_owned())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut n, mut rounds, mut side) = (2000, 3, 500u32);
    let mut pythons = ["python3".to_owned(), "python3".to_owned()];
    while let Some(a) = args.next() {
        let mut text = || args.next().unwrap_or_else(|| panic!("{a} takes a value"));
        let mut value = || -> usize {
            text()
                .parse()
                .ok()
                .filter(|&v| v > 0)
                .unwrap_or_else(|| panic!("{a} takes a positive number"))
        };
        match a.as_str() {
            "--images" => n = value(),
            "--rounds" => rounds = value(),
            "--long-side" => side = u32::try_from(value().min(4000)).unwrap_or(500),
            "--torch-python" => pythons[0] = text(),
            "--mindspore-python" => pythons[1] = text(),
            _ => panic!(
                "unknown argument {a} (--images N, --rounds R, --long-side PX, --torch-python PATH, --mindspore-python PATH)"
            ),
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/train-speed");
    std::fs::create_dir_all(&root).unwrap();
    let dir = make_photos(&root, n, side);
    let folder = Arc::new(FolderDataset::open(&dir).unwrap());
    let rec_path = dir.with_extension("rec");
    pack(&folder, &rec_path);
    let rec: Arc<dyn Dataset> = Arc::new(RecordIoDataset::open(&rec_path).unwrap());
    let images: Vec<Vec<u8>> = folder
        .files()
        .iter()
        .map(|(p, _)| std::fs::read(p).unwrap())
        .collect();
    let mut pipeline = TrainPipeline::imagenet_train();
    pipeline.decode.backend = jpeg::Backend::available().next_back().unwrap_or_default();
    let plan = Arc::new(pipeline.compile().unwrap());
    println!(
        "{n} photos (long side {side}), imagenet-train, decoder {}, exact mode, median of {rounds} runs",
        pipeline.decode.backend.name()
    );
    // Each figure is the median of `rounds` runs, the runs interleaved so
    // that the machine's slow moments spread over all of them.
    // The same bytes in memory as a dataset: the loader without file reads.
    let shared = Arc::new(images.clone());
    let labels: Vec<f32> = (0..images.len()).map(|i| (i % CLASSES) as f32).collect();
    let in_memory: Arc<dyn Dataset> = Arc::new((images.len(), move |i: usize, s: &mut Sample| {
        s.bytes.clear();
        s.bytes.extend_from_slice(&shared[i]);
        s.labels.clear();
        s.labels.push(labels[i]);
        s.id = i as u64;
        Ok(())
    }));
    let mut runs: [Vec<f64>; 7] = Default::default();
    for _ in 0..rounds {
        runs[6].push(loader_rate(Arc::clone(&in_memory), &plan, 2));
        runs[0].push(memory_rate(&images, &plan, 1));
        runs[1].push(memory_rate(&images, &plan, 2));
        runs[2].push(loader_rate(folder.clone(), &plan, 1));
        runs[3].push(loader_rate(folder.clone(), &plan, 2));
        runs[4].push(loader_rate(Arc::clone(&rec), &plan, 1));
        runs[5].push(loader_rate(Arc::clone(&rec), &plan, 2));
    }
    let [single, memory2, folder1, folder2, rec1, rec2, loaded2] = runs.map(|mut r| {
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    });
    println!("single-threaded loop, bytes in memory: {single:8.1} images/s");
    println!("2 threads, bytes in memory:            {memory2:8.1} images/s");
    println!("loader, bytes in memory, 2 workers:    {loaded2:8.1} images/s");
    println!("loader, folder, 1 worker:              {folder1:8.1} images/s");
    println!("loader, folder, 2 workers:             {folder2:8.1} images/s");
    println!("loader, .rec, 1 worker:                {rec1:8.1} images/s");
    println!("loader, .rec, 2 workers:               {rec2:8.1} images/s");
    println!(
        "2 workers / 1 worker (folder):         {:8.2}x (target 1.8x)",
        folder2 / folder1
    );
    println!(
        "loader / memory, 2 threads (folder):   {:8.2}x (target 0.85x)",
        folder2 / memory2
    );
    println!(
        "loader / memory, 2 threads (.rec):     {:8.2}x",
        rec2 / memory2
    );
    println!(
        "loader / memory, 2 threads (no files): {:8.2}x",
        loaded2 / memory2
    );
    if pipeline.decode.backend == jpeg::Backend::LibjpegTurbo {
        // The reduced modes: each drawn crop decoded at the DCT scale it
        // allows, keeping twice the output (fast) or the output itself (draft).
        for (label, scaling) in [
            ("fast mode", tensorprep::pipeline::DecodeScaling::Fast),
            ("draft mode", tensorprep::pipeline::DecodeScaling::Draft),
        ] {
            let mut reduced = pipeline.clone();
            reduced.decode.scaling = scaling;
            let reduced = Arc::new(reduced.compile().unwrap());
            let mut runs: [Vec<f64>; 3] = Default::default();
            for _ in 0..rounds {
                runs[0].push(memory_rate(&images, &reduced, 2));
                runs[1].push(loader_rate(folder.clone(), &reduced, 1));
                runs[2].push(loader_rate(folder.clone(), &reduced, 2));
            }
            let [memory, one, two] = runs.map(|mut r| {
                r.sort_by(f64::total_cmp);
                r[r.len() / 2]
            });
            println!("{label:<10} 2 threads, bytes in memory: {memory:8.1} images/s");
            println!("{label:<10} loader, folder, 1 worker:   {one:8.1} images/s");
            println!("{label:<10} loader, folder, 2 workers:  {two:8.1} images/s");
            println!(
                "{label:<10} 2 workers / 1 worker:       {:8.2}x; loader / memory {:.2}x; / exact {:.2}x",
                two / one,
                two / memory,
                two / folder2
            );
        }
    } else {
        println!("fast and draft modes: not measured (need libjpeg-turbo: --features turbojpeg)");
    }
    let mut best_peer: Option<f64> = None;
    for (name, which, python) in [
        ("PyTorch DataLoader (2 workers)", "pytorch", &pythons[0]),
        ("MindSpore (2 workers)", "mindspore", &pythons[1]),
    ] {
        match python_rate(python, &dir, which) {
            Ok(rate) => {
                println!("{name}: {rate:8.1} images/s");
                best_peer = Some(best_peer.map_or(rate, |b| b.max(rate)));
            }
            Err(why) => println!("{name}: not measured ({why})"),
        }
    }
    if let Some(peer) = best_peer {
        println!(
            "loader (2 workers) / faster peer:      {:8.2}x (target 2x)",
            folder2 / peer
        );
    }
}
