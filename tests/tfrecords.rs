//! TFRecord: files written by the independent `tfrecord` writer from PyPI
//! (made by `fixtures/make_tfrecord_fixtures.py`) read back exactly, with
//! and without DALI's index; our writer makes the same bytes; a checksum
//! that does not match is an error, never a skipped record.

use tensorprep::train::data::tfrecord::{
    Feature, Keys, TfRecordDataset, TfRecordWriter, encode_example,
};
use tensorprep::train::data::{DataError, Dataset, Sample};
use tensorprep_tests::{fixture, folder_list, read};

#[test]
fn examples_read_back_as_the_original_files() {
    let walked =
        TfRecordDataset::open(fixture("records/folder.tfrecord"), Keys::CONVENTIONAL).unwrap();
    let indexed = TfRecordDataset::open_with_index(
        fixture("records/folder.tfrecord"),
        fixture("records/folder.tfindex"),
        Keys::CONVENTIONAL,
    )
    .unwrap();
    assert_eq!(walked.records(), indexed.records());
    let mut sample = Sample::default();
    for (i, (_, label, path)) in folder_list().iter().enumerate() {
        indexed.read(i, &mut sample).unwrap();
        assert_eq!(
            sample.bytes,
            read(&format!("records/folder/{path}")),
            "{path}"
        );
        assert_eq!(sample.labels, [*label]);
    }
    // Other keys, a float list of labels.
    let multi = TfRecordDataset::open(
        fixture("records/multi.tfrecord"),
        Keys {
            image: "jpeg",
            label: "label",
        },
    )
    .unwrap();
    let payloads: [&[u8]; 3] = [b"\xff\xd8 first", b"\x89PNG second", b"RIFF third"];
    for (i, payload) in payloads.iter().enumerate() {
        multi.read(i, &mut sample).unwrap();
        assert_eq!(sample.bytes, *payload);
        assert_eq!(sample.labels, [0.5 + i as f32, -1.0]);
    }
}

#[test]
fn our_writer_makes_the_reference_bytes() {
    let mut w = TfRecordWriter::new(Vec::new());
    let mut example = Vec::new();
    for (_, label, path) in folder_list() {
        let image = read(&format!("records/folder/{path}"));
        encode_example(
            &[
                ("image/encoded", Feature::Bytes(&[&image])),
                ("image/class/label", Feature::Int64(&[label as i64])),
            ],
            &mut example,
        );
        w.write_record(&example).unwrap();
    }
    assert!(w.into_inner() == read("records/folder.tfrecord"));
    let mut w = TfRecordWriter::new(Vec::new());
    for (i, payload) in [&b"\xff\xd8 first"[..], b"\x89PNG second", b"RIFF third"]
        .iter()
        .enumerate()
    {
        encode_example(
            &[
                ("jpeg", Feature::Bytes(&[payload])),
                ("label", Feature::Float(&[0.5 + i as f32, -1.0])),
                ("id", Feature::Int64(&[1000 + i as i64])),
            ],
            &mut example,
        );
        w.write_record(&example).unwrap();
    }
    assert!(w.into_inner() == read("records/multi.tfrecord"));
}

/// Unpacked repeated numbers (older writers) read as packed ones do.
#[test]
fn unpacked_labels_read_too() {
    // Example { features { feature { "l": int64_list { value: 4 value: 5 } } ,
    //                      feature { "i": bytes_list { value: "xy" } } } }, unpacked ints.
    let int_list = [0x08, 4, 0x08, 5]; // field 1 varint, twice
    let mut feature = vec![0x1a, int_list.len() as u8];
    feature.extend_from_slice(&int_list);
    let entry = |name: &[u8], feature: &[u8]| {
        let mut e = vec![0x0a, name.len() as u8];
        e.extend_from_slice(name);
        e.push(0x12);
        e.push(feature.len() as u8);
        e.extend_from_slice(feature);
        let mut f = vec![0x0a, e.len() as u8];
        f.extend_from_slice(&e);
        f
    };
    let bytes_feature = [0x0a, 4, 0x0a, 2, b'x', b'y'];
    let mut features = entry(b"l", &feature);
    features.extend(entry(b"i", &bytes_feature));
    let mut example = vec![0x0a, features.len() as u8];
    example.extend_from_slice(&features);
    let mut w = TfRecordWriter::new(Vec::new());
    w.write_record(&example).unwrap();
    let p = std::env::temp_dir().join(format!("tp-unpacked-{}.tfrecord", std::process::id()));
    std::fs::write(&p, w.into_inner()).unwrap();
    let d = TfRecordDataset::open(
        &p,
        Keys {
            image: "i",
            label: "l",
        },
    )
    .unwrap();
    let mut s = Sample::default();
    d.read(0, &mut s).unwrap();
    assert_eq!(
        (s.bytes.as_slice(), s.labels.as_slice()),
        (&b"xy"[..], &[4.0, 5.0][..])
    );
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn broken_tfrecords_are_typed_errors() {
    let good = read("records/multi.tfrecord");
    let keys = Keys {
        image: "jpeg",
        label: "label",
    };
    let write = |name: &str, bytes: &[u8]| {
        let p = std::env::temp_dir().join(format!("tp-tfr-{}-{name}.tfrecord", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    };
    // Every cut is an error at the walk (never a panic, never a short read).
    for cut in 1..good.len() {
        let p = write("cut", &good[..cut]);
        if let Ok(d) = TfRecordDataset::open(&p, keys) {
            // A cut on a record boundary leaves whole records only.
            let mut s = Sample::default();
            for i in 0..d.len() {
                d.read(i, &mut s).unwrap();
            }
        }
        std::fs::remove_file(&p).unwrap();
    }
    // A flipped data byte: the checksum names the record, not skipped.
    let mut bad = good.clone();
    bad[20] ^= 0x40;
    let p = write("crc", &bad);
    let d = TfRecordDataset::open(&p, keys).unwrap();
    let err = d.read(0, &mut Sample::default()).unwrap_err();
    assert!(matches!(err, DataError::Corrupt { offset: 0, .. }), "{err}");
    assert!(err.to_string().contains("checksum"), "{err}");
    // A length of 2^40 with a valid checksum: refused, nothing allocated.
    let len = (1u64 << 40).to_le_bytes();
    let mut huge = len.to_vec();
    huge.extend_from_slice(&tensorprep::train::data::tfrecord::masked_crc32c(&len).to_le_bytes());
    huge.extend_from_slice(&[0; 64]);
    let err = TfRecordDataset::open(write("huge", &huge), keys).unwrap_err();
    assert!(err.to_string().contains("1099511627776 bytes"), "{err}");
    // Missing keys are named.
    let d = TfRecordDataset::open(fixture("records/multi.tfrecord"), Keys::CONVENTIONAL).unwrap();
    let err = d.read(0, &mut Sample::default()).unwrap_err();
    assert!(err.to_string().contains("no label feature"), "{err}");
}
