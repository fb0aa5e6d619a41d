//! The loader over a remote dataset against the same files on disk, in one
//! run: 2000 photos (long side 500, about 110 MB) packed into 16 RecordIO
//! files, ImageNet's training transform, 2 decode threads and 4 read
//! threads, batches of 16, read (1) from disk; (2) over `http://` from a web
//! server on 127.0.0.1 that waits 20 ms before each answer, with the
//! shard-block shuffle (2 files per window) in 1 MiB blocks with 32 MiB kept
//! (two windows fit, the dataset does not), the read stage hinting each
//! sample 256 ahead ([`LoaderConfig::DEFAULT_FETCH_AHEAD`]) so that the next
//! window's blocks come while the readers work through this one's; (3) the
//! same without the hints; (4) the same as (2) through a node-local cache.
//! Each figure is the images/s of a second epoch (the first warms up, and
//! fills the node cache), the median of the rounds, the runs interleaved;
//! and the requests of opening the dataset and of each epoch. The server
//! shares the machine's cores with the decoders.
//!
//! ```text
//! cargo run --release --features remote --example remote_speed [-- --rounds R]
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tensorprep::train::data::folder::FolderDataset;
use tensorprep::train::data::recordio::{RecordIoDataset, RecordIoWriter, pack_image};
use tensorprep::train::data::shards::DEFAULT_OPEN_FILES;
use tensorprep::train::data::{Dataset, Sample, remote};
use tensorprep::train::{Blocks, Loader, LoaderConfig, Order, TrainPipeline, TrainPlan};

#[path = "photos.rs"]
mod photos;

// The tests' web server (its latency switch), shared by including the file.
#[path = "../tests/http.rs"]
#[allow(dead_code, unreachable_pub)]
mod http;

const FILES: usize = 16;
const PHOTOS: usize = 2000;

/// Packs the photos into `FILES` RecordIO files (once).
fn pack(folder: &Path, dir: &Path) {
    if dir.join("done").is_file() {
        return;
    }
    std::fs::create_dir_all(dir).unwrap();
    let photos = FolderDataset::open(folder).unwrap();
    let per = photos.len().div_ceil(FILES);
    let (mut sample, mut record) = (Sample::default(), Vec::new());
    for f in 0..FILES {
        let mut rec = RecordIoWriter::new(Vec::new());
        for i in f * per..((f + 1) * per).min(photos.len()) {
            photos.read(i, &mut sample).unwrap();
            pack_image(&sample.labels, i as u64, &sample.bytes, &mut record);
            rec.write_record(&record).unwrap();
        }
        std::fs::write(dir.join(format!("part-{f}.rec")), rec.into_inner()).unwrap();
    }
    std::fs::write(dir.join("done"), b"").unwrap();
}

/// Images per second of the second epoch, and the requests of each epoch,
/// hinting samples `fetch_ahead` before they are read.
fn rate(data: Arc<dyn Dataset>, plan: &Arc<TrainPlan>, fetch_ahead: usize) -> (f64, [u64; 2]) {
    let mut config = LoaderConfig::new(16, 2, 1);
    config.read_workers = 4;
    config.fetch_ahead = fetch_ahead;
    config.epochs = Some(2);
    config.order = Order::Blocks(Blocks::new(64, 2).unwrap());
    let before = remote::requests();
    let mut loader = Loader::new(data, Arc::clone(plan), config).unwrap();
    for b in &mut loader {
        b.unwrap();
    }
    let first = remote::requests() - before;
    let mut loader = loader.next_epoch().unwrap();
    let start = Instant::now();
    let mut n = 0;
    for b in &mut loader {
        n += b.unwrap().len();
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    (rate, [first, remote::requests() - before - first])
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut rounds = 3;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => rounds = args.next().expect("a count").parse().expect("a count"),
            _ => panic!("unknown argument {a} (--rounds R)"),
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/train-speed");
    let folder = photos::make_photos(&root, PHOTOS, 500);
    let dir = root.join(format!("remote-{PHOTOS}"));
    pack(&folder, &dir);
    let server = http::Server::start(&dir);
    server.set_latency(20);
    remote::set_read_blocks(1 << 20, 32 << 20);
    let opened = std::cell::Cell::new(0);
    let open = |base: &str| -> Arc<dyn Dataset> {
        let files: Vec<String> = (0..FILES).map(|f| format!("{base}/part-{f}.rec")).collect();
        let before = remote::requests();
        let d = Arc::new(RecordIoDataset::open_many(&files, DEFAULT_OPEN_FILES).unwrap());
        opened.set(remote::requests() - before);
        d
    };
    let plan = Arc::new(TrainPipeline::imagenet_train().compile().unwrap());
    let url = server.url("");
    let url = url.trim_end_matches('/');
    let cache = root.join("remote-cache");
    let ahead = LoaderConfig::DEFAULT_FETCH_AHEAD;
    // Images/s of each round, and the last round's requests: disk, http,
    // http without hints, http through the node cache.
    let mut rates: [Vec<f64>; 4] = Default::default();
    let mut requests = [[0; 3]; 4];
    for _ in 0..rounds {
        remote::set_cache(None, 0).unwrap();
        rates[0].push(rate(open(dir.to_str().unwrap()), &plan, ahead).0);
        for (k, fetch_ahead) in [(1, ahead), (2, 0)] {
            remote::clear_cache();
            let (r, q) = rate(open(url), &plan, fetch_ahead);
            rates[k].push(r);
            requests[k] = [opened.get(), q[0], q[1]];
        }
        let _ = std::fs::remove_dir_all(&cache);
        remote::set_cache(Some(&cache), 1 << 30).unwrap();
        let (r, q) = rate(open(url), &plan, ahead);
        rates[3].push(r);
        requests[3] = [opened.get(), q[0], q[1]];
    }
    let rates = rates.map(median);
    println!(
        "{PHOTOS} photos in {FILES} RecordIO files, ImageNet training transform, 2 decode + 4 read threads, \
         block shuffle (2 files a window), median of {rounds}"
    );
    println!(
        "from disk:                         {:8.1} images/s",
        rates[0]
    );
    let names = [
        "",
        "http, 20 ms a request:            ",
        "http, 20 ms, no read-ahead:       ",
        "http, 20 ms, node cache:          ",
    ];
    for k in 1..4 {
        let q = requests[k];
        println!(
            "{} {:8.1} images/s  {:.2}x  requests: open {}, epochs {} then {}",
            names[k],
            rates[k],
            rates[k] / rates[0],
            q[0],
            q[1],
            q[2]
        );
    }
    let _ = std::fs::remove_dir_all(&cache);
}
