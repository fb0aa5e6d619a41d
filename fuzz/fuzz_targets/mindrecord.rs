//! The MindRecord reader on arbitrary files: the input is the data file
//! `fuzz.mindrecord` (its header may name itself, or others, as its set);
//! opened with the first byte picking the options (encoded images, an array
//! image of fixed shape, bytes with shape columns), every row read as a
//! sample and as columns. Every outcome is a value or a typed error;
//! nothing panics, nothing allocates past what the file holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::mindrecord::{MindRecord, Options};
use tensorprep::train::data::{Dataset, Sample};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("tp-fuzz-mindrecord-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fuzz.mindrecord");
    std::fs::write(&path, rest).unwrap();
    let options = match which % 4 {
        0 => Options::default(),
        1 => Options::default().image("image"),
        2 => Options::default()
            .image("gray")
            .shape(["height", "width"])
            .labels(["label", "score"]),
        _ => Options::default().image("gray").shape(["shape"]).bgr(true),
    };
    if let Ok(d) = MindRecord::open_with(&path, &options) {
        let _ = d.fingerprint();
        let mut s = Sample::default();
        for i in 0..d.len() {
            let _ = d.describe(i);
            if d.read(i, &mut s).is_ok() {
                assert!(s.bytes.len() as u64 <= rest.len() as u64);
            }
            let _ = d.columns(i);
        }
    }
});
