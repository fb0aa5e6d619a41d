//! The node-local cache of remote objects (`remote::set_cache`), against
//! the tests' own web server: the first epoch fetches each shard once, the
//! second asks the server nothing; two readers on one node (two threads
//! here, each with its own lock files, as two processes would be) fetch a
//! shard once; an entry in use is never removed to make room, and an
//! object that cannot fit is read from the server; a damaged entry is
//! fetched again. One test: the cache is the process's.

use std::path::Path;
use std::sync::Arc;

use tensorprep::train::data::Dataset;
use tensorprep::train::data::remote;
use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
use tensorprep::train::{Loader, LoaderConfig, TrainPipeline};
use tensorprep_tests::http::Server;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
}

/// Each sample's bytes and labels (not its id: a shard alone numbers its
/// samples from 0).
fn samples(d: &dyn Dataset) -> Vec<(Vec<u8>, Vec<f32>)> {
    let all = tensorprep_tests::read_all(d);
    all.into_iter()
        .map(|(bytes, labels, _)| (bytes, labels))
        .collect()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.contains('.'))
        .collect();
    names.sort();
    names
}

#[test]
fn shards_are_fetched_once_per_node_and_kept_within_the_budget() {
    let server = Server::start(fixtures());
    let dir = std::env::temp_dir().join(format!("tp-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    remote::set_cache(Some(&dir), 1 << 30).unwrap();
    let pattern = server.url("records/shard-{0..1}.tar");
    let local = WebDataset::open(
        fixtures()
            .join("records/shard-{0..1}.tar")
            .to_str()
            .unwrap(),
        WebKeys::CONVENTIONAL,
    )
    .unwrap();

    // Two epochs through a loader: the first fetches each of the two
    // shards once (a HEAD and one GET each), the second asks nothing.
    let data: Arc<dyn Dataset> =
        Arc::new(WebDataset::open(&pattern, WebKeys::CONVENTIONAL).unwrap());
    assert_eq!((server.requests(), server.gets()), (4, 2));
    assert_eq!(entries(&dir).len(), 2);
    let mut plan = TrainPipeline::imagenet_train();
    plan.augments.clear();
    let plan = Arc::new(plan.compile().unwrap());
    let mut config = LoaderConfig::new(2, 2, 3);
    config.epochs = Some(2);
    config.max_shape = Some([3, 1024, 1024]);
    let mut loader = Loader::new(Arc::clone(&data), Arc::clone(&plan), config).unwrap();
    let first: usize = loader.by_ref().map(|b| b.unwrap().len()).sum();
    let after_first = server.requests();
    let mut loader = loader.next_epoch().unwrap();
    let second: usize = loader.by_ref().map(|b| b.unwrap().len()).sum();
    assert_eq!((first, second), (data.len(), data.len()));
    assert_eq!(after_first, 4, "the first epoch read the cache");
    assert_eq!(
        server.requests(),
        4,
        "the second epoch asked the server nothing"
    );
    assert_eq!(samples(&*data), samples(&local));
    drop(loader);
    drop(data);

    // A second reader on the node, opening the set afresh (the entries
    // known by version after a HEAD each): nothing fetched again.
    let again = WebDataset::open(&pattern, WebKeys::CONVENTIONAL).unwrap();
    assert_eq!((server.requests(), server.gets()), (6, 2));
    assert_eq!(samples(&again), samples(&local));
    drop(again);

    // Two readers at once on a fresh cache: each shard fetched once.
    std::fs::remove_dir_all(&dir).unwrap();
    remote::set_cache(Some(&dir), 1 << 30).unwrap();
    let gets = server.gets();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let pattern = pattern.clone();
            std::thread::spawn(move || {
                samples(&WebDataset::open(&pattern, WebKeys::CONVENTIONAL).unwrap())
            })
        })
        .collect();
    for r in readers {
        assert_eq!(r.join().unwrap(), samples(&local));
    }
    assert_eq!(server.gets() - gets, 2);

    // A budget of one shard: the second cannot fit while the first is in
    // use, so it is read from the server (the same samples), and the first
    // stays; once the first is closed, it makes room for the second.
    std::fs::remove_dir_all(&dir).unwrap();
    remote::set_cache(Some(&dir), 30_000).unwrap();
    let one = WebDataset::open(&server.url("records/shard-0.tar"), WebKeys::CONVENTIONAL).unwrap();
    let first_entry = entries(&dir);
    assert_eq!(first_entry.len(), 1);
    let in_use_reader = samples(&one);
    let two = WebDataset::open(&server.url("records/shard-1.tar"), WebKeys::CONVENTIONAL).unwrap();
    assert_eq!(entries(&dir), first_entry, "the entry in use was kept");
    let expected_two = samples(&two);
    assert_eq!(
        [in_use_reader, expected_two.clone()].concat(),
        samples(&local)
    );
    drop(one);
    drop(two);
    let two = WebDataset::open(&server.url("records/shard-1.tar"), WebKeys::CONVENTIONAL).unwrap();
    let now = entries(&dir);
    assert_eq!(now.len(), 1);
    assert_ne!(now, first_entry, "the unused entry made room");
    assert_eq!(samples(&two), expected_two);
    drop(two);

    // A damaged entry (cut short) is not read: fetched again.
    let entry = dir.join(&now[0]);
    let full = std::fs::metadata(&entry).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&entry)
        .unwrap()
        .set_len(full / 2)
        .unwrap();
    let gets = server.gets();
    let two = WebDataset::open(&server.url("records/shard-1.tar"), WebKeys::CONVENTIONAL).unwrap();
    assert_eq!(samples(&two), expected_two);
    assert_eq!(server.gets() - gets, 1);
    assert_eq!(std::fs::metadata(&entry).unwrap().len(), full);
    drop(two);

    // A FIFO at the entry's place (an open of it would wait for a writer):
    // neither waited on nor read; the object is fetched into a regular
    // entry again. A FIFO at its lock's place: an error naming the URL,
    // not a wait.
    let fifo = |path: &Path| {
        std::fs::remove_file(path).unwrap();
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(made.unwrap().success());
    };
    let open_within = |url: String| {
        let reader = std::thread::spawn(move || {
            WebDataset::open(&url, WebKeys::CONVENTIONAL).map(|d| samples(&d))
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !reader.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "the open waits on a FIFO"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        reader.join().unwrap()
    };
    fifo(&entry);
    let url = server.url("records/shard-1.tar");
    assert_eq!(open_within(url.clone()).unwrap(), expected_two);
    assert!(std::fs::metadata(&entry).unwrap().is_file());
    fifo(&entry);
    fifo(&entry.with_extension("lock"));
    let err = open_within(url.clone()).unwrap_err().to_string();
    assert!(err.contains(&url), "{err}");
    remote::set_cache(None, 0).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
