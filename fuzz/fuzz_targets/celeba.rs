//! CelebA's annotation parser on arbitrary text: the bytes are cut at the
//! first four 0xff bytes into the split file and the identity, attribute
//! and box files (the landmark file is the box file's text again), and
//! parsed with every target asked for, then with each alone, in every
//! split. Every outcome is a dataset whose labels are what its rows hold,
//! or a typed error; nothing panics, nothing allocates past the text.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::Dataset;
use tensorprep::train::data::celeba::{AttrValues, CelebA, CelebAOptions, Split, Target};

const FILES: [&str; 4] = [
    "list_eval_partition.txt",
    "identity_CelebA.txt",
    "list_attr_celeba.txt",
    "list_bbox_celeba.txt",
];

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(5, |&b| b == 0xff);
    let texts: Vec<String> = (0..4)
        .map(|_| String::from_utf8_lossy(parts.next().unwrap_or(b"")).into_owned())
        .collect();
    let text_of = |name: &str| {
        let at = FILES.iter().position(|f| *f == name).unwrap_or(3);
        Ok((PathBuf::from(name), texts[at].clone()))
    };
    let all = [
        Target::Attr,
        Target::Identity,
        Target::Bbox,
        Target::Landmarks,
    ];
    for split in [Split::Train, Split::Valid, Split::Test, Split::All] {
        for targets in [&all[..], &all[..1], &all[1..2], &all[2..3], &all[3..]] {
            for values in [AttrValues::ZeroOne, AttrValues::Signed] {
                let options = CelebAOptions::new(split)
                    .targets(targets)
                    .attr_values(values);
                if let Ok(d) = CelebA::parse("img".into(), &options, text_of) {
                    let _ = d.fingerprint();
                    for i in 0..d.len() {
                        let labels = d.labels(i);
                        assert!(labels.iter().all(|v| v.is_finite()));
                        assert!(!d.names()[i].contains('/'));
                    }
                }
            }
        }
    }
});
