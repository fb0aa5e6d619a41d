//! The record readers on arbitrary files: the first byte picks MXNet
//! RecordIO (walked, read, split into parts), TFRecord (walked, read with
//! the conventional keys and with others) or a WebDataset tar shard. Every outcome is a sample or a
//! typed error; nothing panics, nothing allocates past what the file holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::recordio::RecordIoDataset;
use tensorprep::train::data::tfrecord::{Keys, TfRecordDataset};
use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
use tensorprep::train::data::{Dataset, Sample};

fn read_all(d: &dyn Dataset) {
    let _ = d.fingerprint();
    let mut s = Sample::default();
    for i in 0..d.len() {
        if d.read(i, &mut s).is_ok() {
            assert!(s.bytes.len() <= 1 << 20);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let path = std::env::temp_dir().join(format!("tp-fuzz-records-{}", std::process::id()));
    std::fs::write(&path, rest).unwrap();
    if which % 3 == 2 {
        if let Ok(d) = WebDataset::open(path.to_str().unwrap(), WebKeys::CONVENTIONAL) {
            read_all(&d);
        }
    } else if which % 3 == 0 {
        if let Ok(d) = RecordIoDataset::open(&path) {
            read_all(&d);
        }
        // Parts resynchronise on the magic: a crafted file can hold it inside
        // a record's data (a writer never does), so a part may find a false
        // head and fail, as dmlc's reader does; it must fail with an error.
        for part in 0..3 {
            if let Ok(p) = RecordIoDataset::open_part(&path, 3, part) {
                read_all(&p);
            }
        }
    } else {
        for keys in [
            Keys::CONVENTIONAL,
            Keys {
                image: "jpeg",
                label: "label",
            },
        ] {
            if let Ok(d) = TfRecordDataset::open(&path, keys) {
                read_all(&d);
            }
        }
    }
});
