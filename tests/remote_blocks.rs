//! The shard-block shuffle (`Order::Blocks`) over a remote dataset: each
//! epoch visits every sample once, the batches are the same for 1 and 3
//! workers and after a resume, ranks together cover the epoch once, and it
//! asks the server far fewer requests than a global shuffle when the blocks
//! kept hold a window: 8 TFRecord shards of 64 records of 8 KiB (512 KiB
//! each) over the tests' web server, read in 64 KiB blocks with 1.25 MiB
//! kept (`remote::set_read_blocks`, scaled down from 4 MiB and 64 MiB so
//! that the dataset outgrows what is kept, a window of 2 files does not).
//! One test: the block size is the process's.

use std::path::PathBuf;

use tensorprep::train::data::shards::DEFAULT_OPEN_FILES;
use tensorprep::train::data::tfrecord::{Keys, TfRecordDataset};
use tensorprep::train::data::{Dataset, Sample, remote};
use tensorprep::train::{Blocks, Order, Shard, epoch_indices};
use tensorprep_tests::http::Server;

const SHARDS: usize = 8;
const RECORDS: usize = 64;

/// The shards, written once into a scratch folder: record `i` of shard `s`
/// holds 8 KiB of bytes made from its global index, labelled by it.
fn shards() -> PathBuf {
    tensorprep_tests::tfrecord_shards("tp-blocks", SHARDS, RECORDS, |n| {
        (0..8192).map(|k| (k * 31 + n * 7) as u8).collect()
    })
}

/// Reads the samples at `indices` in order: their labels; and the server's
/// requests for it.
fn read_in_order(d: &dyn Dataset, indices: &[u64], server: &Server) -> (Vec<f32>, usize) {
    remote::clear_cache();
    let before = server.requests();
    let mut s = Sample::default();
    let labels = indices
        .iter()
        .map(|&i| {
            d.read(i as usize, &mut s).unwrap();
            s.labels[0]
        })
        .collect();
    (labels, server.requests() - before)
}

#[test]
fn a_block_shuffle_visits_each_sample_once_in_few_requests() {
    let dir = shards();
    let server = Server::start(&dir);
    remote::set_read_blocks(64 << 10, 1280 << 10);
    let urls: Vec<String> = (0..SHARDS)
        .map(|s| server.url(&format!("part-{s}.tfrecord")))
        .collect();
    let d = TfRecordDataset::open_many(&urls, Keys::CONVENTIONAL, DEFAULT_OPEN_FILES).unwrap();
    assert_eq!(d.len(), SHARDS * RECORDS);
    assert_eq!(
        d.blocks(),
        (0..SHARDS).map(|s| s * RECORDS).collect::<Vec<_>>()
    );

    let blocks = Order::Blocks(Blocks::new(RECORDS, 2).unwrap());
    let mut global_requests = 0;
    let mut block_requests = 0;
    for epoch in 0..2 {
        // The loader's order: the dataset's files as blocks.
        let mut order = Vec::new();
        tensorprep::train::epoch_indices_of(&blocks, 5, Shard::ALL, epoch, &d, &mut order);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            (0..d.len() as u64).collect::<Vec<_>>(),
            "each sample once"
        );
        // Each window of 2 * 64 positions holds two whole files.
        for window in order.chunks(2 * RECORDS) {
            let mut files: Vec<u64> = window.iter().map(|i| i / RECORDS as u64).collect();
            files.sort();
            files.dedup();
            assert_eq!(files.len(), 2, "epoch {epoch}");
        }
        let (labels, requests) = read_in_order(&d, &order, &server);
        assert_eq!(labels, order.iter().map(|&i| i as f32).collect::<Vec<_>>());
        block_requests += requests;
        let mut shuffled = Vec::new();
        epoch_indices(
            &Order::Shuffled,
            5,
            Shard::ALL,
            epoch,
            d.len(),
            &mut shuffled,
        );
        global_requests += read_in_order(&d, &shuffled, &server).1;
        // Ranks take every n-th position: together, the epoch once.
        let mut all = Vec::new();
        for rank in 0..3 {
            let mut mine = Vec::new();
            let shard = Shard::new(3, rank, true).unwrap();
            tensorprep::train::epoch_indices_of(&blocks, 5, shard, epoch, &d, &mut mine);
            all.extend(mine);
        }
        all.sort();
        all.dedup();
        assert_eq!(all.len(), (d.len() / 3) * 3);
    }
    // Each file (528 KiB) in pairs of 64 KiB blocks, one GET a pair: each
    // pair fetched once an epoch, plus a HEAD per file when the pool first
    // opens it. A global shuffle jumps between all 8 files (4.1 MiB) with
    // 1.25 MiB of blocks kept: it asks far more.
    let pairs: u64 = (0..SHARDS)
        .map(|s| {
            let len = std::fs::metadata(dir.join(format!("part-{s}.tfrecord")))
                .unwrap()
                .len();
            len.div_ceil(128 << 10)
        })
        .sum();
    eprintln!("requests over 2 epochs: blocks {block_requests}, global shuffle {global_requests}");
    assert_eq!(block_requests as u64, 2 * pairs + SHARDS as u64);
    assert!(
        global_requests >= 4 * block_requests,
        "{global_requests} vs {block_requests}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
