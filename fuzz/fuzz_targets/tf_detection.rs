//! TFRecord examples read with the TensorFlow Object Detection API's keys:
//! the input is one `tf.train.Example` (framed here with valid checksums,
//! so the parser sees it), read with and without masks. Every outcome is a
//! target that checks (finite XYXY boxes, masks of 0 and 1, one entry per
//! object) or a typed error naming the record; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::tfrecord::{
    DetectionOptions, Keys, Labels, TfRecordDataset, TfRecordWriter,
};
use tensorprep::train::data::{Dataset, Sample};

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("tp-fuzz-tfod-{}", std::process::id()));
    let mut w = TfRecordWriter::new(Vec::new());
    w.write_record(data).unwrap();
    std::fs::write(&path, w.into_inner()).unwrap();
    for masks in [false, true] {
        let Ok(d) = TfRecordDataset::open(&path, Keys::CONVENTIONAL) else {
            return;
        };
        let d = d.with_labels(Labels::ObjectDetection(DetectionOptions { masks }));
        let mut s = Sample::default();
        if d.read(0, &mut s).is_ok() {
            let t = s.target.as_ref().expect("a detection sample has a target");
            t.check().expect("a target read is consistent");
            let b = t.boxes.as_ref().expect("boxes");
            assert!(b.boxes().iter().flatten().all(|v| v.is_finite()));
            assert!(b.boxes().iter().all(|x| x[0] <= x[2] && x[1] <= x[3]));
            assert!(s.bytes.len() <= data.len());
            match &t.masks {
                Some(m) => {
                    assert!(masks);
                    assert_eq!(m.count(), b.len());
                    assert!(m.data().iter().all(|&v| v <= 1));
                }
                None => assert!(!masks),
            }
        }
    }
});
