//! The WebDataset opener on arbitrary tar shards (ustar, GNU long names,
//! pax headers, sparse and special members, truncation): every outcome is a
//! dataset whose samples read back or a typed error; nothing panics, hangs,
//! or allocates past the caps (an extended header's claimed size is checked
//! before it is read, a member's against the file and the member cap).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::webdataset::{MAX_MEMBER_BYTES, WebDataset, WebKeys};
use tensorprep::train::data::{Dataset, Sample};

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("tp-fuzz-wds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Two shards: the input, and the input's second half (a pattern of two).
    let half = data.len() / 2;
    std::fs::write(dir.join("s-0.tar"), data).unwrap();
    std::fs::write(dir.join("s-1.tar"), &data[half..]).unwrap();
    for pattern in ["s-0.tar", "s-{0..1}.tar"] {
        let pattern = format!("{}/{pattern}", dir.display());
        let Ok(d) = WebDataset::open(&pattern, WebKeys::CONVENTIONAL) else {
            continue;
        };
        assert_eq!(d.keys().len(), d.len());
        let _ = d.fingerprint();
        let mut s = Sample::default();
        for i in 0..d.len() {
            if d.read(i, &mut s).is_ok() {
                assert!(s.bytes.len() as u64 <= MAX_MEMBER_BYTES.min(data.len() as u64));
                assert!(s.labels.iter().all(|l| l.is_finite()));
            }
            let _ = d.describe(i);
        }
    }
});
