//! MXNet RecordIO: files written by MXNet's own `im2rec` and
//! `MXIndexedRecordIO` (made by `fixtures/make_recordio_fixtures.py`) read
//! back exactly, our writer reproduces them byte for byte, parts split a
//! file with every record in exactly one, and broken files are typed errors.

use std::path::PathBuf;

use tensorprep::train::data::recordio::{RecordIoDataset, RecordIoWriter, pack_image};
use tensorprep::train::data::{DataError, Dataset, Sample};
use tensorprep_tests::{fixture, folder_list, read};

#[test]
fn im2rec_records_read_back_as_the_original_files() {
    let data = RecordIoDataset::open(fixture("records/folder.rec")).unwrap();
    let list = folder_list();
    assert_eq!(data.len(), 6);
    let mut sample = Sample::default();
    for (i, (index, label, path)) in list.iter().enumerate() {
        data.read(i, &mut sample).unwrap();
        assert_eq!(
            sample.bytes,
            read(&format!("records/folder/{path}")),
            "{path}"
        );
        assert_eq!(sample.labels, [*label]);
        assert_eq!(sample.id, *index);
    }
    // Without the index, one walk over the headers finds the same records.
    let scanned = std::env::temp_dir().join(format!("tp-noidx-{}.rec", std::process::id()));
    std::fs::copy(fixture("records/folder.rec"), &scanned).unwrap();
    let walked = RecordIoDataset::open(&scanned).unwrap();
    assert_eq!(walked.offsets(), data.offsets());
    std::fs::remove_file(&scanned).unwrap();
}

#[test]
fn our_writer_makes_mxnet_s_bytes() {
    // im2rec's file, from its list.
    let mut rec = RecordIoWriter::new(Vec::new());
    let mut record = Vec::new();
    let mut idx = String::new();
    for (index, label, path) in folder_list() {
        pack_image(
            &[label],
            index,
            &read(&format!("records/folder/{path}")),
            &mut record,
        );
        let at = rec.write_record(&record).unwrap();
        idx.push_str(&format!("{index}\t{at}\n"));
    }
    assert!(rec.into_inner() == read("records/folder.rec"));
    assert_eq!(idx, String::from_utf8(read("records/folder.idx")).unwrap());
    // Multi-label headers and payloads holding the magic (written in parts).
    let multi = RecordIoDataset::open(fixture("records/multi.rec")).unwrap();
    let want: [(&[f32], &[u8]); 3] = [
        (&[1.5, 2.5], b"abcd\x0a\x23\xd7\xceefgh\x0a\x23\xd7\xceij"),
        (&[7.0, 8.0, 9.0], b"\x0a\x23\xd7\xcetail"),
        (&[3.0], b"no magic here, 27 bytes.."),
    ];
    let mut rec = RecordIoWriter::new(Vec::new());
    let mut sample = Sample::default();
    for (i, (labels, payload)) in want.iter().enumerate() {
        multi.read(i, &mut sample).unwrap();
        assert_eq!(
            (sample.labels.as_slice(), sample.bytes.as_slice()),
            (*labels, *payload)
        );
        assert_eq!(sample.id, 100 + i as u64);
        pack_image(labels, 100 + i as u64, payload, &mut record);
        rec.write_record(&record).unwrap();
    }
    assert!(rec.into_inner() == read("records/multi.rec"));
}

/// dmlc's `InputSplit`: byte ranges resynchronised on the magic give every
/// record to exactly one part, in order, for any part count.
#[test]
fn parts_hold_every_record_once() {
    for file in ["records/folder.rec", "records/multi.rec"] {
        let all = RecordIoDataset::open(fixture(file)).unwrap();
        for parts in 1..=8 {
            let mut offsets = Vec::new();
            for part in 0..parts {
                let p = RecordIoDataset::open_part(fixture(file), parts, part).unwrap();
                offsets.extend_from_slice(p.offsets());
            }
            assert_eq!(offsets, all.offsets(), "{file} in {parts} parts");
        }
    }
}

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tp-rec-{}-{name}.rec", std::process::id()));
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Truncated, mutated and crafted files: typed errors naming the file and
/// the offset; a length the file cannot hold allocates nothing for it.
#[test]
fn broken_record_files_are_typed_errors() {
    let good = read("records/multi.rec");
    // Every cut: the walk or the read says where the file is broken.
    for cut in 1..good.len() {
        let p = scratch("cut", &good[..cut]);
        if let Ok(d) = RecordIoDataset::open(&p) {
            let mut s = Sample::default();
            for i in 0..d.len() {
                let _ = d.read(i, &mut s);
            }
        }
        std::fs::remove_file(&p).unwrap();
    }
    let p = scratch("cut-mid", &good[..good.len() - 6]);
    let err = RecordIoDataset::open(&p).unwrap_err();
    assert!(matches!(err, DataError::Corrupt { .. }), "{err}");
    assert!(
        err.to_string().contains("past the end of the file"),
        "{err}"
    );
    // A bad magic, and a length of 2^29 - 1 in a 40-byte file.
    let mut bad = good.clone();
    bad[0] ^= 1;
    let p = scratch("magic", &bad);
    let err = RecordIoDataset::open_with_index(&p, fixture("records/multi.idx"))
        .map(|d| d.read(0, &mut Sample::default()))
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("magic"), "{err}");
    let mut huge = 0xced7_230au32.to_le_bytes().to_vec();
    huge.extend_from_slice(&((1u32 << 29) - 1).to_le_bytes());
    huge.extend_from_slice(&[0; 32]);
    let p = scratch("huge", &huge);
    let err = RecordIoDataset::open(&p).unwrap_err();
    assert!(
        err.to_string().contains("536870911 bytes runs past"),
        "{err}"
    );
    // An index pointing past the file, and a label count past the record.
    let idx = std::env::temp_dir().join(format!("tp-rec-{}.idx", std::process::id()));
    std::fs::write(&idx, "0\t0\n1\t4096\n").unwrap();
    let err = RecordIoDataset::open_with_index(fixture("records/multi.rec"), &idx).unwrap_err();
    assert!(err.to_string().contains("offset 4096"), "{err}");
    let mut record = Vec::new();
    pack_image(&[1.0, 2.0], 1, b"x", &mut record);
    record[0] = 200; // 200 labels claimed
    let mut rec = RecordIoWriter::new(Vec::new());
    rec.write_record(&record).unwrap();
    let p = scratch("labels", &rec.into_inner());
    let err = RecordIoDataset::open(&p)
        .unwrap()
        .read(0, &mut Sample::default())
        .unwrap_err();
    assert!(err.to_string().contains("label count"), "{err}");
    assert!(matches!(
        RecordIoDataset::open(&p)
            .unwrap()
            .read(5, &mut Sample::default()),
        Err(DataError::OutOfRange { index: 5, len: 1 })
    ));
}

/// torchvision's `ImageFolder` order: classes sorted (label = position),
/// each class's folders walked in sorted order, files sorted, image
/// extensions only (any case).
#[test]
fn an_image_folder_lists_like_torchvision() {
    use tensorprep::train::data::folder::FolderDataset;
    let root = std::env::temp_dir().join(format!("tp-folder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (path, bytes) in [
        ("b_dog/2.png", &b"png"[..]),
        ("b_dog/1.JPG", b"jpg"),
        ("a_cat/z.webp", b"webp"),
        ("a_cat/sub/a.jpeg", b"jpeg"),
        ("a_cat/notes.txt", b"text"),
        ("a_cat/m.jpg", b"m"),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    std::fs::write(root.join("stray.jpg"), b"not in a class").unwrap();
    let d = FolderDataset::open(&root).unwrap();
    assert_eq!(d.classes(), ["a_cat", "b_dog"]);
    let names: Vec<String> = d
        .files()
        .iter()
        .map(|(p, l)| format!("{l} {}", p.strip_prefix(&root).unwrap().display()))
        .collect();
    assert_eq!(
        names,
        [
            "0 a_cat/m.jpg",
            "0 a_cat/z.webp",
            "0 a_cat/sub/a.jpeg",
            "1 b_dog/1.JPG",
            "1 b_dog/2.png"
        ]
    );
    let mut s = Sample::default();
    d.read(2, &mut s).unwrap();
    assert_eq!(
        (s.bytes.as_slice(), s.labels.as_slice()),
        (&b"jpeg"[..], &[0.0][..])
    );
    // The fixtures' folder gives im2rec's images with its labels.
    let folder = FolderDataset::open(fixture("records/folder")).unwrap();
    assert_eq!(folder.len(), 6);
    for (path, label) in folder.files() {
        let name = path
            .strip_prefix(fixture("records/folder"))
            .unwrap()
            .display()
            .to_string();
        let (_, want, _) = folder_list()
            .into_iter()
            .find(|(_, _, p)| *p == name)
            .unwrap();
        assert_eq!(*label as f32, want, "{name}");
    }
    // The fingerprint follows the names and classes, not the folder's place.
    let moved = root.with_extension("moved");
    let _ = std::fs::remove_dir_all(&moved);
    std::fs::rename(&root, &moved).unwrap();
    let there = FolderDataset::open(&moved).unwrap();
    assert_eq!(there.fingerprint(), d.fingerprint());
    std::fs::rename(moved.join("b_dog/2.png"), moved.join("b_dog/3.png")).unwrap();
    let renamed = FolderDataset::open(&moved).unwrap();
    assert_eq!(renamed.len(), d.len());
    assert_ne!(renamed.fingerprint(), d.fingerprint());
    assert_ne!(folder.fingerprint(), d.fingerprint());
    std::fs::remove_dir_all(&moved).unwrap();
}

/// Shards written by the `webdataset` package (ShardWriter) read back as
/// its own reader yields them: members grouped by key, the image and the
/// `cls` label of each, an extra `json` member ignored.
#[test]
fn webdataset_shards_read_back() {
    use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
    let pattern = format!("{}/shard-{{0..1}}.tar", fixture("records").display());
    let d = WebDataset::open(&pattern, WebKeys::CONVENTIONAL).unwrap();
    assert_eq!(d.len(), 6);
    let mut s = Sample::default();
    for (i, (_, label, path)) in folder_list().iter().enumerate() {
        d.read(i, &mut s).unwrap();
        assert_eq!(d.keys()[i], format!("sample{i:04}"));
        assert_eq!(s.bytes, read(&format!("records/folder/{path}")), "{path}");
        assert_eq!(s.labels, [*label]);
    }
    // A shard cut inside a member, and a pattern naming no file: errors.
    let cut = std::env::temp_dir().join(format!("tp-wds-{}.tar", std::process::id()));
    let bytes = read("records/shard-0.tar");
    for at in [700, 1500, 3000] {
        std::fs::write(&cut, &bytes[..at]).unwrap();
        assert!(
            WebDataset::open(cut.to_str().unwrap(), WebKeys::CONVENTIONAL).is_err(),
            "cut at {at}"
        );
    }
    std::fs::remove_file(&cut).unwrap();
    assert!(matches!(
        WebDataset::open("/nonexistent/shard-{0..3}.tar", WebKeys::CONVENTIONAL),
        Err(DataError::Io { .. })
    ));
}
