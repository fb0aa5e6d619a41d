//! The training side under attack (issue 32): labels that are not labels,
//! record files that do not start with a record, image folders with link
//! cycles, tar headers and patterns that claim gigabytes, batch buffers and
//! decodes larger than the input can fill, a loader thread that dies. Each
//! case is a typed error naming what is wrong (never a NaN, a quiet gap or a
//! hang), and what is allocated is bounded by what the input holds.
//!
//! This binary installs [`LargestAllocator`]: the memory cases assert the
//! largest single allocation made while they run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tensorprep::train::data::recordio::{RecordIoDataset, RecordIoWriter, pack_image};
use tensorprep::train::data::tfrecord::{
    Feature, Keys, TfRecordDataset, TfRecordWriter, encode_example,
};
use tensorprep::train::data::webdataset::{WebDataset, WebKeys, expand_braces};
use tensorprep::train::data::{DataError, Dataset, Sample};
use tensorprep::train::{
    Augment, LoadError, Loader, LoaderConfig, Order, RandomResizedCrop, TrainPipeline, TrainPlan,
    Weighted,
};
use tensorprep_tests::{LargestAllocator, largest_allocation, read, reset_largest};

#[global_allocator]
static A: LargestAllocator = LargestAllocator;

/// The tests run one at a time: the largest allocation is the process's,
/// so another test running meanwhile would be counted too.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The largest allocation made while `f` runs (in a test holding
/// [`serial`]).
fn largest<T>(f: impl FnOnce() -> T) -> (T, usize) {
    reset_largest();
    let out = f();
    (out, largest_allocation())
}

/// A fresh scratch folder for `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tp-hardening-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn corrupt_what(e: &DataError) -> String {
    match e {
        DataError::Corrupt { what, .. } => what.clone(),
        other => panic!("expected a Corrupt error, got {other}"),
    }
}

fn plan(size: u32) -> Arc<TrainPlan> {
    let mut p = TrainPipeline::imagenet_train();
    p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(size, size));
    Arc::new(p.compile().unwrap())
}

mod labels {
    use super::*;

    fn tfrecord_with(label: Feature<'_>) -> Result<(), DataError> {
        let dir = scratch("tf-label");
        let path = dir.join("one.tfrecord");
        let jpeg = read("sample.jpg");
        let mut example = Vec::new();
        encode_example(
            &[
                ("image/encoded", Feature::Bytes(&[&jpeg])),
                ("image/class/label", label),
            ],
            &mut example,
        );
        let mut w = TfRecordWriter::new(Vec::new());
        w.write_record(&example).unwrap();
        std::fs::write(&path, w.into_inner()).unwrap();
        let d = TfRecordDataset::open(&path, Keys::CONVENTIONAL)?;
        d.read(0, &mut Sample::default())
    }

    /// A label stored as bytes, an empty list, a NaN, an infinity, an
    /// integer float32 would round: each an error naming the record; an
    /// exact one reads back.
    #[test]
    fn tfrecord_labels_are_numbers_float32_holds() {
        let _serial = serial();
        for (label, what) in [
            (Feature::Bytes(&[b"3"]), "bytes list"),
            (Feature::Int64(&[]), "empty label list"),
            (Feature::Float(&[]), "empty label list"),
            (Feature::Float(&[f32::NAN]), "not a finite number"),
            (Feature::Float(&[f32::INFINITY]), "not a finite number"),
            (Feature::Int64(&[16_777_217]), "cannot hold exactly"),
            (Feature::Int64(&[i64::MAX]), "cannot hold exactly"),
        ] {
            let err = tfrecord_with(label).expect_err(&format!("{label:?}"));
            assert!(corrupt_what(&err).contains(what), "{label:?}: {err}");
            assert!(err.to_string().contains("one.tfrecord"), "{err}");
        }
        tfrecord_with(Feature::Int64(&[16_777_216])).unwrap();
        tfrecord_with(Feature::Float(&[0.25, 7.0])).unwrap();
    }

    /// A RecordIO header's NaN or infinite label is an error naming the
    /// record's offset.
    #[test]
    fn recordio_labels_are_finite() {
        let _serial = serial();
        let dir = scratch("rec-label");
        let jpeg = read("sample.jpg");
        for (labels, ok) in [
            (&[f32::NAN][..], false),
            (&[1.0, f32::NEG_INFINITY], false),
            (&[2.0], true),
        ] {
            let path = dir.join("one.rec");
            let mut w = RecordIoWriter::new(Vec::new());
            let mut record = Vec::new();
            pack_image(&[1.0], 0, &jpeg, &mut record);
            w.write_record(&record).unwrap();
            pack_image(labels, 1, &jpeg, &mut record);
            let at = w.write_record(&record).unwrap();
            std::fs::write(&path, w.into_inner()).unwrap();
            let d = RecordIoDataset::open(&path).unwrap();
            let got = d.read(1, &mut Sample::default());
            match got {
                Ok(()) => assert!(ok, "{labels:?} read as a label"),
                Err(DataError::Corrupt { offset, what, .. }) => {
                    assert!(!ok, "{labels:?}: {what}");
                    assert_eq!(offset, at);
                    assert!(what.contains("finite"), "{what}");
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// A tar of `members` (name, bytes), as `tar` writes it.
    pub(super) fn tar_of(path: &Path, members: &[(&str, &[u8])]) {
        let mut b = tar::Builder::new(Vec::new());
        for (name, bytes) in members {
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *bytes).unwrap();
        }
        std::fs::write(path, b.into_inner().unwrap()).unwrap();
    }

    /// WebDataset `.cls` members of `nan`, `inf`, `1e40`, `16777217`, text
    /// that is not a number, or a sample without one among samples with
    /// one: errors naming the shard and the sample's key.
    #[test]
    fn webdataset_labels_are_numbers_float32_holds() {
        let _serial = serial();
        let dir = scratch("wds-label");
        let jpeg = read("sample.jpg");
        let path = dir.join("s.tar");
        for (cls, ok) in [
            (&b"nan"[..], false),
            (b"inf", false),
            (b"-inf", false),
            (b"1e40", false),
            (b"16777217", false),
            (b"cat", false),
            (b"", false),
            (b" 7\n", true),
            (b"0.5", true),
        ] {
            tar_of(&path, &[("a.jpg", &jpeg), ("a.cls", cls)]);
            let d = WebDataset::open(path.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap();
            match d.read(0, &mut Sample::default()) {
                Ok(()) => assert!(ok, "{:?} read as a label", String::from_utf8_lossy(cls)),
                Err(e) => {
                    assert!(!ok, "{e}");
                    let text = e.to_string();
                    assert!(text.contains("s.tar") && text.contains("`a`"), "{text}");
                }
            }
        }
        tar_of(
            &path,
            &[("a.jpg", &jpeg), ("a.cls", b"1"), ("b.jpg", &jpeg)],
        );
        let err = WebDataset::open(path.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap_err();
        assert!(
            corrupt_what(&err).contains("sample `b` has no `.cls` label"),
            "{err}"
        );
        // A dataset without labels at all opens, and loads with a label
        // width of 0 (batches of images alone); a loader that asks for one
        // label per sample refuses its samples, naming them.
        tar_of(&path, &[("a.jpg", &jpeg), ("b.jpg", &jpeg)]);
        let d = Arc::new(WebDataset::open(path.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap());
        let mut config = LoaderConfig::new(2, 1, 0);
        config.epochs = Some(1);
        config.order = Order::Sequential;
        let mut loader = Loader::new(d.clone(), plan(16), config.clone()).unwrap();
        assert_eq!(loader.label_width(), 0);
        let batch = loader.next().unwrap().unwrap();
        assert_eq!((batch.len(), batch.label_width()), (2, 0));
        assert!(batch.labels().is_empty());
        config.label_width = Some(1);
        let err = Loader::new(d, plan(16), config)
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(
                err,
                LoadError::LabelCount {
                    expected: 1,
                    found: 0,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("s.tar: sample `a`"), "{err}");
    }

    /// macOS's `._name.jpg` members (AppleDouble) are skipped, as
    /// webdataset skips names starting with a dot.
    #[test]
    fn hidden_tar_members_are_skipped() {
        let _serial = serial();
        let dir = scratch("wds-hidden");
        let jpeg = read("sample.jpg");
        let path = dir.join("s.tar");
        tar_of(
            &path,
            &[
                ("._a.jpg", b"\x00\x05\x16\x07 AppleDouble"),
                ("a.jpg", &jpeg),
                ("a.cls", b"3"),
                ("dir/._b.jpg", b"junk"),
                ("dir/b.jpg", &jpeg),
                ("dir/b.cls", b"4"),
            ],
        );
        let d = WebDataset::open(path.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap();
        assert_eq!(d.keys(), ["a", "dir/b"]);
        let mut s = Sample::default();
        d.read(1, &mut s).unwrap();
        assert_eq!((s.bytes == jpeg, s.labels), (true, vec![4.0]));
    }
}

mod recordio {
    use super::*;

    fn three_records() -> Vec<u8> {
        let mut w = RecordIoWriter::new(Vec::new());
        let mut record = Vec::new();
        for i in 0..3 {
            pack_image(&[i as f32], i, b"\xff\xd8 some jpeg bytes", &mut record);
            w.write_record(&record).unwrap();
        }
        w.into_inner()
    }

    /// Without an index, a file whose first record's magic is flipped, or a
    /// JPEG renamed `.rec`, is an error at offset 0 (it listed 2 of 3
    /// records, or none, before).
    #[test]
    fn a_file_that_does_not_start_with_a_record_is_refused_at_offset_0() {
        let _serial = serial();
        let dir = scratch("rec-start");
        let path = dir.join("data.rec");
        let mut bytes = three_records();
        bytes[0] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let err = RecordIoDataset::open(&path).unwrap_err();
        assert!(matches!(err, DataError::Corrupt { offset: 0, .. }), "{err}");
        std::fs::write(&path, read("sample.jpg")).unwrap();
        let err = RecordIoDataset::open(&path).unwrap_err();
        assert!(matches!(err, DataError::Corrupt { offset: 0, .. }), "{err}");
        // Parts of a file still resynchronise: the whole file's records.
        std::fs::write(&path, three_records()).unwrap();
        let parts: usize = (0..3)
            .map(|p| RecordIoDataset::open_part(&path, 3, p).unwrap().len())
            .sum();
        assert_eq!(parts, 3);
        // An empty file is an empty dataset.
        std::fs::write(&path, b"").unwrap();
        assert_eq!(RecordIoDataset::open(&path).unwrap().len(), 0);
    }

    /// Scanning a file without an index allocates as records are found,
    /// not a slot per 8 bytes of file (which refused a valid 30 GiB file).
    #[test]
    fn scanning_allocates_by_the_records_found() {
        let _serial = serial();
        let dir = scratch("rec-scan");
        let path = dir.join("big.rec");
        let mut w = RecordIoWriter::new(std::fs::File::create(&path).unwrap());
        let mut record = Vec::new();
        let image = vec![7u8; 4 << 20];
        for i in 0..4 {
            pack_image(&[i as f32], i, &image, &mut record);
            w.write_record(&record).unwrap();
        }
        drop(w);
        let (d, peak) = largest(|| RecordIoDataset::open(&path).unwrap());
        assert_eq!(d.len(), 4);
        // 16 MiB of file: the old scan reserved 16 MiB of offsets.
        assert!(peak < 1 << 20, "{peak} bytes at once");
    }
}

mod folders {
    use super::*;
    use tensorprep::train::data::folder::FolderDataset;

    fn photo(dir: &Path, name: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), read("sample.jpg")).unwrap();
    }

    /// A class folder without images, and a root without class folders,
    /// are refused by name (as torchvision's `ImageFolder` refuses them).
    #[test]
    fn empty_classes_and_no_classes_are_refused() {
        let _serial = serial();
        let root = scratch("folder-empty");
        photo(&root.join("cat"), "a.jpg");
        std::fs::create_dir_all(root.join("dog/nested")).unwrap();
        std::fs::write(root.join("dog/notes.txt"), b"no images here").unwrap();
        let err = FolderDataset::open(&root).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("class `dog`") && text.contains("dog"),
            "{text}"
        );
        let flat = scratch("folder-flat");
        photo(&flat, "a.jpg");
        let err = FolderDataset::open(&flat).unwrap_err();
        assert!(err.to_string().contains("no class folders"), "{err}");
    }

    /// One link to its own folder (which listed the image 41 times) and
    /// two (which hung: 2^40 walks) are errors naming the folder; so is a
    /// folder linked twice.
    #[test]
    #[cfg(unix)]
    fn link_cycles_and_repeated_folders_are_refused() {
        let _serial = serial();
        use std::os::unix::fs::symlink;
        let root = scratch("folder-cycle");
        photo(&root.join("cat"), "a.jpg");
        symlink(root.join("cat"), root.join("cat/again")).unwrap();
        let err = FolderDataset::open(&root).unwrap_err();
        assert!(
            err.to_string().contains("reached again through a link"),
            "{err}"
        );
        symlink(root.join("cat"), root.join("cat/twice")).unwrap();
        let start = std::time::Instant::now();
        assert!(FolderDataset::open(&root).is_err());
        assert!(start.elapsed().as_secs() < 10, "no exponential walk");
        // No cycle, but one folder (outside the root) reached by two links:
        // its images would be listed twice.
        let root = scratch("folder-twice");
        let outside = scratch("folder-twice-shared");
        photo(&outside, "a.jpg");
        photo(&root.join("cat"), "b.jpg");
        symlink(&outside, root.join("cat/x")).unwrap();
        symlink(&outside, root.join("cat/y")).unwrap();
        let err = FolderDataset::open(&root).unwrap_err();
        assert!(
            err.to_string().contains("reached again through a link"),
            "{err}"
        );
    }

    /// A class folder whose name is not UTF-8 is opened as it is (the lossy
    /// text was joined back into the path before), its class name lossy.
    #[test]
    #[cfg(unix)]
    fn a_class_folder_that_is_not_utf8_opens() {
        let _serial = serial();
        use std::os::unix::ffi::OsStrExt;
        let root = scratch("folder-latin1");
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9");
        photo(&root.join(name), "a.jpg");
        let d = FolderDataset::open(&root).unwrap();
        assert_eq!(d.classes(), ["caf\u{fffd}"]);
        let mut s = Sample::default();
        d.read(0, &mut s).unwrap();
        assert_eq!(s.bytes, read("sample.jpg"));
    }

    /// A decode error names the file, not only the sample's index.
    #[test]
    fn decode_errors_name_the_file() {
        let _serial = serial();
        let root = scratch("folder-broken");
        photo(&root.join("cat"), "a.jpg");
        std::fs::write(root.join("cat/b.jpg"), &read("sample.jpg")[..500]).unwrap();
        let d = Arc::new(FolderDataset::open(&root).unwrap());
        let mut config = LoaderConfig::new(2, 1, 0);
        config.order = Order::Sequential;
        let err = Loader::new(d, plan(16), config)
            .unwrap()
            .find_map(Result::err)
            .unwrap();
        assert!(matches!(err, LoadError::Decode { index: 1, .. }), "{err}");
        assert!(err.to_string().contains("cat/b.jpg"), "{err}");
        // Through datasets made of others, the file is still the one named.
        use tensorprep::train::data::combine::{Concat, Range};
        let d: Arc<dyn Dataset> = Arc::new(FolderDataset::open(&root).unwrap());
        let both = Concat::new([
            Arc::new(Range::skip(Arc::clone(&d), 1).unwrap()) as Arc<dyn Dataset>,
            d,
        ])
        .unwrap();
        assert!(
            both.describe(0).ends_with("cat/b.jpg"),
            "{}",
            both.describe(0)
        );
        assert!(
            both.describe(2).ends_with("cat/b.jpg"),
            "{}",
            both.describe(2)
        );
        assert!(
            both.describe(1).ends_with("cat/a.jpg"),
            "{}",
            both.describe(1)
        );
    }
}

mod tars {
    use super::*;

    /// A raw 512-byte tar header: `name`, `size`, type `kind`, checksum set.
    fn header(name: &str, size: u64, kind: u8) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..107].copy_from_slice(b"0000644");
        h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
        h[136..147].copy_from_slice(b"00000000000");
        h[156] = kind;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        h
    }

    /// A GNU long name or a pax header claiming 2 GiB (with nothing on
    /// disk) is refused before a byte of it is read (5.2 GB and 3.1 GB
    /// peaks before, and the long-name case then listed no samples).
    #[test]
    fn extended_headers_are_capped_before_reading() {
        let _serial = serial();
        let dir = scratch("tar-extended");
        for kind in [b'L', b'x'] {
            let path = dir.join(format!("bomb-{}.tar", kind as char));
            let mut bytes = header("././@LongLink", 2 << 30, kind).to_vec();
            bytes.extend_from_slice(&[0u8; 1024]);
            std::fs::write(&path, &bytes).unwrap();
            let (got, peak) =
                largest(|| WebDataset::open(path.to_str().unwrap(), WebKeys::CONVENTIONAL));
            let err = got.unwrap_err();
            assert!(err.to_string().contains("extended tar header"), "{err}");
            assert!(peak < 1 << 20, "{peak} bytes at once");
        }
    }

    /// An image member larger than the folder reader's cap (256 MiB) is
    /// refused by name when the shard is opened (a 4 GiB member was read
    /// whole); the shard is a sparse file, so this costs no disk.
    #[test]
    fn members_larger_than_the_cap_are_refused() {
        let _serial = serial();
        let dir = scratch("tar-member");
        let path = dir.join("big.tar");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&header("big.jpg", 4 << 30, b'0')).unwrap();
        f.set_len(512 + (4 << 30) + 1024).unwrap();
        drop(f);
        let err = WebDataset::open(path.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap_err();
        assert!(err.to_string().contains("member `big.jpg`"), "{err}");
    }

    /// Opening shards reads their headers only (it read every byte), and a
    /// dataset of many shards keeps few open (1,282 ImageNet shards ran out
    /// of descriptors): 200 shards read back in a scattered order.
    #[test]
    fn shards_are_seeked_and_opened_lazily() {
        let _serial = serial();
        let dir = scratch("tar-lazy");
        let jpeg = read("sample.jpg");
        for s in 0..200 {
            labels::tar_of(
                &dir.join(format!("s-{s:03}.tar")),
                &[("a.jpg", &jpeg), ("a.cls", format!("{s}").as_bytes())],
            );
        }
        let pattern = format!("{}/s-{{000..199}}.tar", dir.display());
        let d = WebDataset::open(&pattern, WebKeys::CONVENTIONAL).unwrap();
        // Descriptors open now (Linux lists them; elsewhere the reads alone
        // are checked).
        let fds = || {
            cfg!(target_os = "linux").then(|| std::fs::read_dir("/proc/self/fd").unwrap().count())
        };
        let before = fds();
        let mut s = Sample::default();
        for k in 0..200 {
            let i = (k * 7) % 200;
            d.read(i, &mut s).unwrap();
            assert_eq!(s.labels, [i as f32]);
        }
        if let (Some(before), Some(after)) = (before, fds()) {
            assert!(after <= before + 64, "{before} -> {after} descriptors");
        }
    }

    /// A 3 KB prefix times a range of 2^20 (6.2 GB of names before) is
    /// refused before any name is built; a 100 KB prefix too.
    #[test]
    fn brace_patterns_are_bounded_before_expanding() {
        let _serial = serial();
        for prefix in [3_000, 100_000] {
            let pattern = format!("{}{{0..1048575}}.tar", "p".repeat(prefix));
            let (got, peak) = largest(|| expand_braces(&pattern));
            assert!(got.is_err(), "{prefix}-byte prefix");
            assert!(peak < 1 << 20, "{peak} bytes at once");
        }
        assert_eq!(expand_braces("a{0..2}{x,y}").unwrap().len(), 6);
        assert_eq!(expand_braces("{0..1048575}").unwrap().len(), 1 << 20);
    }
}

mod loader {
    use super::*;

    /// Six photos in memory, labelled 0 to 5.
    fn six() -> Arc<dyn Dataset> {
        tensorprep_tests::photo_dataset(vec![read("sample.jpg")], 6)
    }

    /// A short batch's tensor holds exactly its samples (it returned the
    /// whole recycled buffer, stale samples included).
    #[test]
    fn a_short_batch_s_tensor_is_its_samples() {
        let _serial = serial();
        let mut config = LoaderConfig::new(4, 2, 0);
        config.epochs = Some(2);
        let mut loader = Loader::new(six(), plan(16), config).unwrap();
        for epoch in 0..2 {
            let lens: Vec<(usize, usize)> = (&mut loader)
                .map(|b| {
                    let b = b.unwrap();
                    (b.len(), b.tensor().len())
                })
                .collect();
            assert_eq!(lens, [(4, 4 * 3 * 16 * 16), (2, 2 * 3 * 16 * 16)]);
            if epoch == 0 {
                loader = loader.next_epoch().unwrap();
            }
        }
    }

    /// Batch buffers are sized by what an epoch can fill and grown when
    /// used: a batch of 1000 over 6 images takes 6 samples' room (it zeroed
    /// 1000 per buffer up front: 4.7 GB at depth 8); a depth and batch past
    /// the buffer limit are refused with a clear error (24 GB, killed).
    #[test]
    fn batch_buffers_are_what_an_epoch_fills() {
        let _serial = serial();
        let sample = 3 * 224 * 224 * 4;
        let mut config = LoaderConfig::new(1000, 1, 0);
        config.depth = 8;
        config.epochs = Some(1);
        let (batches, peak) = largest(|| {
            Loader::new(six(), plan(224), config.clone())
                .unwrap()
                .map(|b| b.unwrap().len())
                .collect::<Vec<_>>()
        });
        assert_eq!(batches, [6]);
        assert!(peak <= 6 * sample, "{peak} bytes at once");
        let big = Arc::new((100_000usize, |_: usize, _: &mut Sample| Ok(())));
        config.depth = 4096;
        let err = Loader::new(big, plan(224), config).unwrap_err();
        assert!(err.to_string().contains("buffer_limit"), "{err}");
    }

    /// A weighted sampler of 10^12 draws per epoch (which aborted the
    /// process allocating 8 TB for the epoch's order) draws each position
    /// when it is read.
    #[test]
    fn a_huge_weighted_epoch_is_not_materialised() {
        let _serial = serial();
        let mut config = LoaderConfig::new(2, 1, 0);
        config.order =
            Order::Weighted(Weighted::new(vec![1.0; 6], 1_000_000_000_000, true).unwrap());
        let (first, peak) = largest(|| {
            let mut loader = Loader::new(six(), plan(16), config).unwrap();
            assert_eq!(loader.batches(), 500_000_000_000);
            let b = loader.next().unwrap().unwrap();
            b.indices().to_vec()
        });
        assert_eq!(first.len(), 2);
        assert!(peak < 16 << 20, "{peak} bytes at once");
    }

    /// An image that would need more than the decode budget is refused from
    /// its header, naming it, before anything is decoded (an 8192 x 16384
    /// PNG cost 1.46 GB per worker); within the budget it decodes.
    #[test]
    fn the_decode_budget_refuses_large_images_before_decoding() {
        let _serial = serial();
        let (w, h) = (4096u32, 4096u32);
        let mut png = Vec::new();
        {
            let mut e = png::Encoder::new(&mut png, w, h);
            e.set_color(png::ColorType::Rgba);
            e.set_compression(png::Compression::Fast);
            let mut writer = e.write_header().unwrap();
            writer
                .write_image_data(&vec![90u8; (w * h * 4) as usize])
                .unwrap();
        }
        let data = tensorprep_tests::photo_dataset(vec![png], 1);
        let mut config = LoaderConfig::new(1, 1, 0);
        config.epochs = Some(1);
        config.decode_budget = 64 << 20;
        let (err, peak) = largest(|| {
            Loader::new(Arc::clone(&data), plan(16), config.clone())
                .unwrap()
                .next()
                .unwrap()
                .unwrap_err()
        });
        // The decode error names the sample; its cause (the source) the budget.
        let cause = std::error::Error::source(&err).map(ToString::to_string);
        assert!(
            matches!(err, LoadError::Decode { .. })
                && cause.as_ref().is_some_and(|c| c.contains("decode budget")),
            "{err}: {cause:?}"
        );
        assert!(peak < 64 << 20, "{peak} bytes at once");
        config.decode_budget = 512 << 20;
        let batch = Loader::new(data, plan(16), config).unwrap().next().unwrap();
        assert_eq!(batch.unwrap().len(), 1);
    }

    /// A panic on a loader thread outside any sample (here a dataset whose
    /// `len` panics on the read thread) reaches the consumer as an error;
    /// the consumer waited forever before.
    #[test]
    fn a_stage_thread_that_dies_is_an_error_not_a_hang() {
        let _serial = serial();
        struct Treacherous(Arc<dyn Dataset>);
        impl Dataset for Treacherous {
            fn len(&self) -> usize {
                let reading = std::thread::current()
                    .name()
                    .is_some_and(|n| n.starts_with("tp-read"));
                assert!(!reading, "len asked on a read thread");
                self.0.len()
            }
            fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
                self.0.read(index, sample)
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let data = Arc::new(Treacherous(six()));
            let mut loader = Loader::new(data, plan(16), LoaderConfig::new(2, 1, 0)).unwrap();
            let first = loader.next().map(|b| b.map(|_| ()));
            let _ = tx.send(first.map(|r| r.map_err(|e| e.to_string())));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the consumer waited forever");
        let err = got.expect("an item").unwrap_err();
        assert!(
            err.contains("tp-read-0") && err.contains("read thread"),
            "{err}"
        );
    }

    /// Stopped from another thread, a waiting `next()` returns `None`.
    #[test]
    fn a_stopper_ends_the_iteration_from_another_thread() {
        let _serial = serial();
        let slow = Arc::new((8usize, |i: usize, s: &mut Sample| {
            std::thread::sleep(std::time::Duration::from_millis(200));
            s.bytes = read("sample.jpg");
            s.labels = vec![i as f32];
            Ok(())
        }));
        let mut loader = Loader::new(slow, plan(16), LoaderConfig::new(8, 1, 0)).unwrap();
        let stopper = loader.stopper();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            stopper.stop();
        });
        assert!(loader.next().is_none());
        assert!(loader.next().is_none());
    }
}
