//! The read stage's read-ahead over a remote dataset: 8 TFRecord shards
//! of 24 photos each over the tests' web server (10 ms before each
//! answer), read in 64 KiB blocks with the whole dataset fitting in what is
//! kept (nothing evicted, so the counts are exact), by 4 read threads in
//! the shard-block order. With the hints, each block pair is asked for
//! once (a reader needing a pair being fetched waits for that request) and
//! most reads find their block fetched ahead; without them, every pair is
//! a reader's miss. The batches are the same either way. One test: the
//! block size and the counters are the process's.

use std::path::PathBuf;
use std::sync::Arc;

use tensorprep::train::data::shards::DEFAULT_OPEN_FILES;
use tensorprep::train::data::tfrecord::{Keys, TfRecordDataset};
use tensorprep::train::data::{Dataset, remote};
use tensorprep::train::{
    Augment, Blocks, Loader, LoaderConfig, Order, RandomResizedCrop, TrainPipeline,
};
use tensorprep_tests::http::Server;

const SHARDS: usize = 8;
const RECORDS: usize = 24;

/// The shards, written once into a scratch folder: record `n` holds one
/// of two photos, labelled `n`.
fn shards() -> PathBuf {
    let photos = [
        tensorprep_tests::read("sample.jpg"),
        tensorprep_tests::read("sample_gray.jpg"),
    ];
    tensorprep_tests::tfrecord_shards("tp-read-ahead", SHARDS, RECORDS, |n| photos[n % 2].clone())
}

/// Each batch's indices and tensor bits.
type Batches = Vec<(Vec<u64>, Vec<u32>)>;

/// One epoch in the shard-block order with 4 read threads, hinting
/// `fetch_ahead` samples ahead, from an empty block cache: each batch's
/// indices and tensor bits; the server's GETs and the readers' misses.
fn epoch(data: &Arc<dyn Dataset>, server: &Server, fetch_ahead: usize) -> (Batches, usize, u64) {
    remote::clear_cache();
    let (gets, misses) = (server.gets(), remote::misses());
    let mut p = TrainPipeline::imagenet_train();
    p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(24, 24));
    let plan = Arc::new(p.compile().unwrap());
    let mut config = LoaderConfig::new(4, 1, 3);
    config.read_workers = 4;
    config.epochs = Some(1);
    config.order = Order::Blocks(Blocks::new(RECORDS, 2).unwrap());
    config.fetch_ahead = fetch_ahead;
    let batches = Loader::new(Arc::clone(data), plan, config)
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            let tensorprep::Tensor::F32(t) = b.tensor() else {
                unreachable!("a float plan")
            };
            (
                b.indices().to_vec(),
                t.iter().map(|v| v.to_bits()).collect(),
            )
        })
        .collect();
    (batches, server.gets() - gets, remote::misses() - misses)
}

#[test]
fn read_ahead_fetches_each_pair_once_before_its_reads() {
    let dir = shards();
    let server = Server::start(&dir);
    let urls: Vec<String> = (0..SHARDS)
        .map(|s| server.url(&format!("part-{s}.tfrecord")))
        .collect();
    let data: Arc<dyn Dataset> = Arc::new(
        TfRecordDataset::open_many(&urls, Keys::CONVENTIONAL, DEFAULT_OPEN_FILES).unwrap(),
    );
    // 64 KiB blocks, 16 MiB kept: the whole dataset (about 0.6 MiB), and
    // up to 64 pairs in flight.
    remote::set_read_blocks(64 << 10, 16 << 20);
    let pairs: usize = (0..SHARDS)
        .map(|s| {
            let len = std::fs::metadata(dir.join(format!("part-{s}.tfrecord")))
                .unwrap()
                .len();
            len.div_ceil(128 << 10) as usize
        })
        .sum();
    server.set_latency(10);
    let (plain, plain_gets, plain_misses) = epoch(&data, &server, 0);
    let (ahead, ahead_gets, ahead_misses) = epoch(&data, &server, 256);
    eprintln!(
        "{pairs} pairs; no hints: {plain_gets} GETs, {plain_misses} misses; \
         hints: {ahead_gets} GETs, {ahead_misses} misses"
    );
    assert_eq!(plain.len(), SHARDS * RECORDS / 4);
    assert_eq!(ahead, plain, "the same batches with and without the hints");
    // 4 readers in a random order within windows: never two requests for
    // one pair.
    assert_eq!(plain_gets, pairs, "each pair once, without hints");
    assert_eq!(ahead_gets, pairs, "each pair once, with hints");
    // Without hints every pair is a reader's miss; with them, only what
    // the readers reach before the first hints are out.
    assert_eq!(plain_misses as usize, pairs);
    assert!(
        (ahead_misses as usize) * 2 < pairs,
        "{ahead_misses} of {pairs} pairs missed with read-ahead"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
