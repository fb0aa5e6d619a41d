//! Many files as one dataset: 1,024 TFRecord shards and 300 RecordIO files
//! read whole under a limit of 256 descriptors (a child process with
//! `ulimit -n 256`), patterns naming them in order, and a WebDataset of 64
//! large (sparse) shards indexed by reading its headers alone.

use std::io::{Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tensorprep::train::data::recordio::{RecordIoDataset, RecordIoWriter, pack_image};
use tensorprep::train::data::shards::{expand, expand_all};
use tensorprep::train::data::tfrecord::{
    Feature, Keys, TfRecordDataset, TfRecordWriter, encode_example,
};
use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
use tensorprep::train::data::{DataError, Dataset, Sample};

const TF_SHARDS: usize = 1024;
const REC_FILES: usize = 300;
const BUDGET: usize = 64;

fn image_of(shard: usize, record: usize) -> Vec<u8> {
    format!("image {shard} {record}").into_bytes()
}

/// A fresh `dir` with 1,024 TFRecord shards of 1 to 3 records (shard `i`
/// holds `i % 3 + 1`; record `r`'s label is `i * 10 + r`) and 300 `.rec`
/// files of 2 records each.
fn make_shards(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tp-many-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut example = Vec::new();
    for i in 0..TF_SHARDS {
        let mut w = TfRecordWriter::new(Vec::new());
        for r in 0..i % 3 + 1 {
            let image = image_of(i, r);
            let feats = [
                ("image/encoded", Feature::Bytes(&[&image])),
                ("image/class/label", Feature::Int64(&[(i * 10 + r) as i64])),
            ];
            encode_example(&feats, &mut example);
            w.write_record(&example).unwrap();
        }
        std::fs::write(dir.join(format!("shard-{i:04}.tfrecord")), w.into_inner()).unwrap();
    }
    let mut record = Vec::new();
    for i in 0..REC_FILES {
        let mut w = RecordIoWriter::new(Vec::new());
        for r in 0..2 {
            pack_image(
                &[(i * 10 + r) as f32],
                r as u64,
                &image_of(i, r),
                &mut record,
            );
            w.write_record(&record).unwrap();
        }
        std::fs::write(dir.join(format!("part-{i:03}.rec")), w.into_inner()).unwrap();
    }
    dir
}

/// The descriptors this process holds.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Reads every sample in order, then in a stride order that returns to
/// each file many times, checking each against what was written.
fn read_all(d: &dyn Dataset, expected: &[(usize, usize)]) {
    assert_eq!(d.len(), expected.len());
    let mut sample = Sample::default();
    let n = d.len();
    let order = (0..n).chain((0..n).map(|k| k * 389 % n));
    for index in order {
        d.read(index, &mut sample).unwrap();
        let (file, record) = expected[index];
        assert_eq!(sample.bytes, image_of(file, record), "sample {index}");
        assert_eq!(sample.labels, [(file * 10 + record) as f32]);
    }
}

/// Runs in the child (`ulimit -n 256`): every file of both sets read, never
/// more than the budget open.
#[test]
#[ignore = "run by many_files_read_under_a_descriptor_limit in a child process"]
fn child_reads_many_files() {
    let Ok(dir) = std::env::var("TP_MANY_FILES_DIR") else {
        panic!("run by many_files_read_under_a_descriptor_limit");
    };
    let dir = PathBuf::from(dir);
    let base = open_descriptors();
    let tf = expand(&format!("{}/shard-*.tfrecord", dir.display())).unwrap();
    assert_eq!(tf.len(), TF_SHARDS);
    let d = TfRecordDataset::open_many(&tf, Keys::CONVENTIONAL, BUDGET).unwrap();
    assert!(open_descriptors() <= base, "indexing keeps no file open");
    let expected: Vec<_> = (0..TF_SHARDS)
        .flat_map(|i| (0..i % 3 + 1).map(move |r| (i, r)))
        .collect();
    read_all(&d, &expected);
    assert_eq!(d.files().open_count(), BUDGET);
    assert!(open_descriptors() <= base + BUDGET);
    assert_eq!(d.file_of(0).unwrap(), tf[0]);
    drop(d);

    let recs = expand_all(&[format!("{}/part-{{000..299}}.rec", dir.display())]).unwrap();
    let d = RecordIoDataset::open_many(&recs, BUDGET).unwrap();
    let expected: Vec<_> = (0..REC_FILES).flat_map(|i| [(i, 0), (i, 1)]).collect();
    read_all(&d, &expected);
    assert!(d.files().open_count() <= BUDGET);
    assert!(open_descriptors() <= base + BUDGET);

    // Keeping every file open, as one dataset per file would, is refused
    // by the limit: the limit is real.
    let each: Result<Vec<_>, DataError> = tf
        .iter()
        .take(300)
        .map(|p| {
            std::fs::File::open(p).map_err(|e| DataError::Invalid {
                what: e.to_string(),
            })
        })
        .collect();
    assert!(each.is_err(), "300 files open under ulimit -n 256");
}

#[test]
fn many_files_read_under_a_descriptor_limit() {
    let dir = make_shards("limit");
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" --exact child_reads_many_files --ignored --test-threads 1")
        .arg(&exe)
        .env("TP_MANY_FILES_DIR", &dir)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn patterns_name_the_files_in_order() {
    let dir = make_shards("patterns");
    let d = dir.display();
    let star = expand(&format!("{d}/shard-*.tfrecord")).unwrap();
    let braces = expand(&format!("{d}/shard-{{0000..1023}}.tfrecord")).unwrap();
    assert_eq!(star, braces);
    let some = expand_all(&[
        format!("{d}/shard-000?.tfrecord"),
        format!("{d}/shard-1023.tfrecord"),
    ])
    .unwrap();
    assert_eq!(some.len(), 11);
    assert_eq!(some[10], dir.join("shard-1023.tfrecord"));
    assert!(matches!(
        expand(&format!("{d}/nothing-*.tfrecord")),
        Err(DataError::Corrupt { .. })
    ));
    // A matching file whose name is not UTF-8 is an error naming it, not a
    // file left out.
    let odd = dir.join(std::ffi::OsStr::from_bytes(b"shard-\xff.tfrecord"));
    std::fs::write(&odd, b"").unwrap();
    match expand(&format!("{d}/shard-*.tfrecord")) {
        Err(DataError::Corrupt { path, what, .. }) => {
            assert!(
                path.contains("shard-") && what.contains("not UTF-8"),
                "{path}: {what}"
            )
        }
        other => panic!("{other:?}"),
    }
    // One that does not match is none of the pattern's business.
    std::fs::rename(&odd, dir.join(std::ffi::OsStr::from_bytes(b"other-\xff"))).unwrap();
    assert_eq!(expand(&format!("{d}/shard-*.tfrecord")).unwrap(), star);
    // Concatenated files read as the files one after the other.
    let two = TfRecordDataset::open_many(&star[..2], Keys::CONVENTIONAL, 1).unwrap();
    let mut sample = Sample::default();
    two.read(1, &mut sample).unwrap();
    assert_eq!(sample.bytes, image_of(1, 0));
    assert_eq!(
        two.describe(1),
        format!("{}: record at 0", star[1].display())
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// This thread's bytes read through system calls (`rchar`).
fn thread_rchar() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .parse()
        .unwrap()
}

/// A WebDataset shard of `len` bytes (sparse): one 256 MB image member,
/// its label, then the end of the archive.
fn sparse_shard(path: &Path, member: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    let mut header = tar::Header::new_ustar();
    header.set_path("sample0.jpg").unwrap();
    header.set_size(member);
    header.set_mode(0o644);
    header.set_cksum();
    f.write_all(header.as_bytes()).unwrap();
    f.seek(SeekFrom::Current(member.div_ceil(512) as i64 * 512))
        .unwrap();
    let mut label = tar::Header::new_ustar();
    label.set_path("sample0.cls").unwrap();
    label.set_size(1);
    label.set_mode(0o644);
    label.set_cksum();
    f.write_all(label.as_bytes()).unwrap();
    let mut block = [0u8; 512];
    block[0] = b'7';
    f.write_all(&block).unwrap();
    f.write_all(&[0; 1024]).unwrap();
}

#[test]
fn webdataset_open_reads_only_the_headers() {
    const SHARDS: usize = 64;
    const MEMBER: u64 = 256 << 20;
    let dir = std::env::temp_dir().join(format!("tp-sparse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..SHARDS {
        sparse_shard(&dir.join(format!("big-{i:02}.tar")), MEMBER);
    }
    let pattern = format!("{}/big-{{00..63}}.tar", dir.display());
    let before = thread_rchar();
    let d = WebDataset::open(&pattern, WebKeys::CONVENTIONAL).unwrap();
    let read = thread_rchar() - before;
    eprintln!(
        "WebDataset::open of {SHARDS} shards of {} MiB: {read} bytes read ({} per shard)",
        MEMBER >> 20,
        read / SHARDS as u64
    );
    assert_eq!(d.len(), SHARDS);
    assert!(d.keys().iter().all(|k| k == "sample0"));
    // Two 512-byte headers, the end blocks and the tar crate's look-ahead
    // per shard: far from the 16 GiB the members hold.
    assert!(read < SHARDS as u64 * 16 * 1024, "{read} bytes read");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Reads `order` with `threads` threads (thread `t` takes every
/// `threads`-th index from `t`), checking each sample; returns the
/// samples read per second.
fn read_with_threads(
    d: &TfRecordDataset,
    order: &[usize],
    expected: &[(usize, usize)],
    threads: usize,
) -> f64 {
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut sample = Sample::default();
                for &index in order.iter().skip(t).step_by(threads) {
                    d.read(index, &mut sample).unwrap();
                    let (file, record) = expected[index];
                    assert_eq!(sample.bytes, image_of(file, record), "sample {index}");
                    assert_eq!(sample.labels, [(file * 10 + record) as f32]);
                }
            });
        }
    });
    order.len() as f64 / start.elapsed().as_secs_f64()
}

/// Shuffled reads of the 1,024 shards under a budget of 64 (most reads
/// open a file) from 1 and from 4 threads: every sample right, the pool
/// within its budget. Prints the throughput of each and their ratio (run
/// with `--nocapture`); the ratio depends on the machine, so it is shown,
/// not asserted.
#[test]
fn shuffled_reads_from_threads_share_the_pool() {
    let dir = make_shards("threads");
    let tf = expand(&format!("{}/shard-*.tfrecord", dir.display())).unwrap();
    let d = TfRecordDataset::open_many(&tf, Keys::CONVENTIONAL, BUDGET).unwrap();
    let expected: Vec<_> = (0..TF_SHARDS)
        .flat_map(|i| (0..i % 3 + 1).map(move |r| (i, r)))
        .collect();
    let n = d.len();
    // A fixed shuffle (a full-period LCG over the indices), eight epochs.
    let mut order = Vec::with_capacity(8 * n);
    let mut x = 1usize;
    while order.len() < 8 * n {
        x = (x * 1_103_515_245 + 12_345) % (1 << 31);
        order.push(x % n);
    }
    read_with_threads(&d, &order[..n], &expected, 1); // warm the page cache
    let one = read_with_threads(&d, &order, &expected, 1);
    assert!(d.files().open_count() <= BUDGET);
    let four = read_with_threads(&d, &order, &expected, 4);
    assert!(d.files().open_count() <= BUDGET);
    eprintln!(
        "{} shuffled reads over {TF_SHARDS} shards, budget {BUDGET}: 1 thread {one:.0}/s, \
         4 threads {four:.0}/s, ratio {:.2} ({} cores)",
        order.len(),
        four / one,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
