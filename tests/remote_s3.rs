//! Datasets at `s3://` URLs against a real S3-compatible server that checks
//! request signatures: `s3s-fs` 0.14.1 (`cargo install s3s-fs --version
//! 0.14.1 --features binary --locked`), serving a copy of the fixtures as a
//! bucket on 127.0.0.1. Every format gives the samples and batches it gives
//! from disk; a wrong secret, a missing object, a changed object and a
//! stopped server are errors naming the URL within a bounded time; a
//! restarted server serves again.
//!
//! Ignored by default (it needs the server): `.ci/run` installs `s3s-fs`
//! and runs it with `--ignored`, naming the binary in `TENSORPREP_S3S_FS`.
//! One test in this binary: it sets the `AWS_*` variables `object_store`
//! reads, which no other thread reads meanwhile.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tensorprep::train::Shard;
use tensorprep::train::data::recordio::RecordIoDataset;
use tensorprep::train::data::remote;
use tensorprep::train::data::tfrecord::{Keys, TfRecordDataset};
use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
use tensorprep::train::data::{Dataset, Sample};

const ACCESS: &str = "tensorprep-test";
const SECRET: &str = "a-secret-s3s-fs-checks";

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
}

/// `s3s-fs` serving `root` on `port`, with the test's keys.
fn serve(binary: &Path, root: &Path, port: u16) -> Child {
    let child = Command::new(binary)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--access-key", ACCESS, "--secret-key", SECRET])
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "s3s-fs did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Copies the record fixtures into `bucket` (a folder of `root`).
fn fill(root: &Path, bucket: &str) -> PathBuf {
    let dir = root.join(bucket);
    for sub in ["records", "mindrecord/imagenet"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for e in std::fs::read_dir(fixtures().join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                std::fs::copy(&p, dir.join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    dir
}

/// A format's name, its dataset from disk and from the server.
type Pair = (&'static str, Box<dyn Dataset>, Box<dyn Dataset>);

fn set(key: &str, value: &str) {
    // SAFETY: this binary has one test, and this thread is its only one
    // reading the environment (object_store reads it when a client is made,
    // on this thread).
    unsafe { std::env::set_var(key, value) };
}

fn samples(d: &dyn Dataset) -> Vec<(Vec<u8>, Vec<f32>, u64)> {
    tensorprep_tests::read_all(d)
}

#[test]
#[ignore = "needs s3s-fs: .ci/run installs it and runs this with --ignored (TENSORPREP_S3S_FS names it)"]
fn datasets_on_a_signature_checking_s3_server() {
    let binary = PathBuf::from(
        std::env::var("TENSORPREP_S3S_FS").expect("TENSORPREP_S3S_FS names the s3s-fs binary"),
    );
    let root = std::env::temp_dir().join(format!("tp-s3-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for bucket in ["wrong", "data"] {
        fill(&root, bucket);
    }
    let port = free_port();
    let mut server = serve(&binary, &root, port);
    set("AWS_ENDPOINT_URL", &format!("http://127.0.0.1:{port}"));
    set("AWS_ALLOW_HTTP", "true");
    set("AWS_REGION", "us-east-1");
    set("AWS_ACCESS_KEY_ID", ACCESS);

    // A wrong secret is refused by the server: an error naming the URL.
    // (Clients are made per bucket, from the variables at that moment.)
    set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
    let url = "s3://wrong/records/folder.rec";
    let e = RecordIoDataset::open(url).unwrap_err().to_string();
    assert!(e.contains(url) && e.contains("403"), "{e}");
    set("AWS_SECRET_ACCESS_KEY", SECRET);

    // Every format: the samples it gives from disk.
    let local = |rel: &str| fixtures().join(rel);
    let s3 = |rel: &str| format!("s3://data/{rel}");
    let pairs: Vec<Pair> = vec![
        (
            "TFRecord",
            Box::new(
                TfRecordDataset::open(local("records/folder.tfrecord"), Keys::CONVENTIONAL)
                    .unwrap(),
            ),
            Box::new(
                TfRecordDataset::open(s3("records/folder.tfrecord"), Keys::CONVENTIONAL).unwrap(),
            ),
        ),
        (
            "RecordIO",
            Box::new(RecordIoDataset::open(local("records/folder.rec")).unwrap()),
            Box::new(RecordIoDataset::open(s3("records/folder.rec")).unwrap()),
        ),
        (
            "WebDataset",
            Box::new(
                WebDataset::open(
                    local("records/shard-{0..1}.tar").to_str().unwrap(),
                    WebKeys::CONVENTIONAL,
                )
                .unwrap(),
            ),
            Box::new(
                WebDataset::open(&s3("records/shard-{0..1}.tar"), WebKeys::CONVENTIONAL).unwrap(),
            ),
        ),
        (
            "MindRecord",
            Box::new(
                tensorprep::train::data::mindrecord::MindRecord::open(local(
                    "mindrecord/imagenet/imagenet.mindrecord0",
                ))
                .unwrap(),
            ),
            Box::new(
                tensorprep::train::data::mindrecord::MindRecord::open(s3(
                    "mindrecord/imagenet/imagenet.mindrecord0",
                ))
                .unwrap(),
            ),
        ),
    ];
    for (name, l, r) in &pairs {
        assert_eq!(samples(&**l), samples(&**r), "{name}");
        assert_eq!(l.fingerprint(), r.fingerprint(), "{name}");
    }
    // The loader's batches: 1 and 2 workers, and each of 2 ranks.
    let local: Arc<dyn Dataset> = Arc::new(
        TfRecordDataset::open(local("records/folder.tfrecord"), Keys::CONVENTIONAL).unwrap(),
    );
    let remote_data: Arc<dyn Dataset> =
        Arc::new(TfRecordDataset::open(s3("records/folder.tfrecord"), Keys::CONVENTIONAL).unwrap());
    let batches = |d: &Arc<dyn Dataset>, workers, shard| {
        tensorprep_tests::small_batches(Arc::clone(d), workers, shard)
    };
    let here = batches(&local, 1, Shard::ALL);
    assert_eq!(here, batches(&remote_data, 1, Shard::ALL));
    assert_eq!(here, batches(&remote_data, 2, Shard::ALL));
    for rank in 0..2 {
        let shard = Shard::new(2, rank, false).unwrap();
        assert_eq!(
            batches(&local, 1, shard),
            batches(&remote_data, 2, shard),
            "rank {rank}"
        );
    }

    // A missing object.
    let url = "s3://data/records/none.rec";
    let e = RecordIoDataset::open(url).unwrap_err().to_string();
    assert!(e.contains(url), "{e}");

    // An object changed after it was opened (s3s-fs's ETag of a file it
    // did not write is its content's MD5): an error, not a mix.
    let url = s3("records/folder.tfrecord");
    let d = TfRecordDataset::open(&url, Keys::CONVENTIONAL).unwrap();
    let file = root.join("data/records/folder.tfrecord");
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    remote::clear_cache();
    let mut s = Sample::default();
    let e = d.read(0, &mut s).unwrap_err().to_string();
    assert!(e.contains(&url) && e.contains("another ETag"), "{e}");

    // The server stops: an error within the retries' bound; restarted on
    // the same port, it serves again.
    let d = RecordIoDataset::open(s3("records/folder.rec")).unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    remote::clear_cache();
    let start = Instant::now();
    let e = d.read(0, &mut s).unwrap_err().to_string();
    assert!(e.contains("s3://data/records/folder.rec"), "{e}");
    let bound = Duration::from_secs(remote::RETRY_SECONDS + 2 * remote::REQUEST_SECONDS);
    assert!(start.elapsed() < bound, "{:?}", start.elapsed());
    let mut server = serve(&binary, &root, port);
    let again = RecordIoDataset::open(s3("records/folder.rec")).unwrap();
    assert_eq!(samples(&again), samples(&*pairs[1].1));
    server.kill().unwrap();
    server.wait().unwrap();
    std::fs::remove_dir_all(&root).unwrap();
}
