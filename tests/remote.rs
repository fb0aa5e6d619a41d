//! Datasets at URLs (feature `remote`) against the same files on disk: every
//! record format read over `http://` from the tests' own web server
//! (`tensorprep_tests::http`: ranges, ETags, injected faults) gives the same
//! samples and the same batches for 1 and 2 workers; faults end in an error
//! naming the URL within a bounded time, or in the same data after retries.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tensorprep::train::Shard;
use tensorprep::train::data::mindrecord::MindRecord;
use tensorprep::train::data::recordio::RecordIoDataset;
use tensorprep::train::data::remote;
use tensorprep::train::data::tfrecord::{Keys, TfRecordDataset};
use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
use tensorprep::train::data::{Dataset, Sample};
use tensorprep_tests::http::Server;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
}

/// Each format's dataset over `base` (a folder, or the server's URL of it).
fn open_all(base: &str) -> Vec<(&'static str, Arc<dyn Dataset>)> {
    let p = |rel: &str| format!("{base}/{rel}");
    vec![
        (
            "TFRecord",
            Arc::new(
                TfRecordDataset::open(p("records/folder.tfrecord"), Keys::CONVENTIONAL).unwrap(),
            ) as Arc<dyn Dataset>,
        ),
        (
            "TFRecord with its index",
            Arc::new(
                TfRecordDataset::open_with_index(
                    p("records/folder.tfrecord"),
                    p("records/folder.tfindex"),
                    Keys::CONVENTIONAL,
                )
                .unwrap(),
            ),
        ),
        (
            "RecordIO",
            Arc::new(RecordIoDataset::open(p("records/folder.rec")).unwrap()),
        ),
        (
            "WebDataset",
            Arc::new(
                WebDataset::open(&p("records/shard-{0..1}.tar"), WebKeys::CONVENTIONAL).unwrap(),
            ),
        ),
        (
            "MindRecord",
            Arc::new(MindRecord::open(p("mindrecord/imagenet/imagenet.mindrecord0")).unwrap()),
        ),
    ]
}

fn samples(d: &dyn Dataset) -> Vec<(Vec<u8>, Vec<f32>, u64)> {
    tensorprep_tests::read_all(d)
}

#[test]
fn every_format_over_http_reads_as_from_disk() {
    let server = Server::start(fixtures());
    let base = server.url("");
    let base = base.trim_end_matches('/');
    let local = open_all(fixtures().to_str().unwrap());
    let remote = open_all(base);
    for ((name, l), (_, r)) in local.iter().zip(&remote) {
        assert_eq!(l.len(), r.len(), "{name}");
        assert!(!l.is_empty(), "{name}");
        assert_eq!(samples(&**l), samples(&**r), "{name}");
        let batches = |d: &Arc<dyn Dataset>, workers, shard| {
            tensorprep_tests::small_batches(Arc::clone(d), workers, shard)
        };
        let here = batches(l, 1, Shard::ALL);
        assert_eq!(here, batches(r, 1, Shard::ALL), "{name}: 1 worker");
        assert_eq!(here, batches(r, 2, Shard::ALL), "{name}: 2 workers");
        for rank in 0..2 {
            let shard = Shard::new(2, rank, false).unwrap();
            assert_eq!(
                batches(l, 1, shard),
                batches(r, 2, shard),
                "{name}: rank {rank} of 2"
            );
        }
        // A file and its URL are one dataset to a resume: same fingerprint.
        assert_eq!(l.fingerprint(), r.fingerprint(), "{name}");
    }
}

#[test]
fn reads_are_few_ranged_requests() {
    let server = Server::start(fixtures());
    let before = server.requests();
    let d =
        TfRecordDataset::open(server.url("records/folder.tfrecord"), Keys::CONVENTIONAL).unwrap();
    let all = samples(&d);
    assert!(!all.is_empty());
    // A HEAD when it is indexed and one when the reader opens it, and the
    // whole file (under a block) in one GET: the indexing walk and every
    // record come from it. (The process's count, `remote::requests`, also
    // counts the other tests' requests.)
    let sent = server.requests() - before;
    assert_eq!(sent, 3);
}

#[test]
fn faults_are_errors_naming_the_url_or_retried() {
    let server = Server::start(fixtures());
    // A missing object.
    let url = server.url("records/none.tfrecord");
    let e = TfRecordDataset::open(&url, Keys::CONVENTIONAL)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&url) && e.contains("no such object"), "{e}");
    // Server errors are retried: the same samples.
    let url = server.url("records/folder.rec");
    server.fail_next(3);
    let d = RecordIoDataset::open(&url).unwrap();
    let local = RecordIoDataset::open(fixtures().join("records/folder.rec")).unwrap();
    assert_eq!(samples(&d), samples(&local));
    // A file replaced after it was opened: an error naming it, not a mix.
    let url = server.url("records/shard-0.tar");
    let d = WebDataset::open(&url, WebKeys::CONVENTIONAL).unwrap();
    server.change_versions();
    // Past the blocks already fetched: the reader asks the server again.
    let e = loop_until_error(&d);
    assert!(e.contains(&url) && e.contains("another ETag"), "{e}");
    // A wildcard cannot be listed: refused, naming the pattern.
    let e = tensorprep::train::data::shards::expand(&server.url("records/*.tfrecord"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("wildcard in a URL"), "{e}");
}

/// Reads every sample of `d`, the fetched blocks dropped first (so each
/// read asks the server), until one fails: its message.
fn loop_until_error(d: &dyn Dataset) -> String {
    remote::clear_cache();
    for i in 0..d.len() {
        let mut s = Sample::default();
        if let Err(e) = d.read(i, &mut s) {
            return e.to_string();
        }
    }
    panic!("no read failed");
}

#[test]
fn a_stopped_server_is_an_error_within_a_bound() {
    let server = Server::start(fixtures());
    let url = server.url("records/folder.tfrecord");
    let d = TfRecordDataset::open(&url, Keys::CONVENTIONAL).unwrap();
    drop(server);
    remote::clear_cache();
    let start = Instant::now();
    let mut s = Sample::default();
    let e = d.read(0, &mut s).unwrap_err().to_string();
    let took = start.elapsed();
    assert!(e.contains(&url), "{e}");
    let bound = Duration::from_secs(remote::RETRY_SECONDS + 2 * remote::REQUEST_SECONDS);
    assert!(took < bound, "{took:?}");
}
