//! A WebDataset sample's JSON target: arbitrary bytes parsed on a fixed
//! canvas, then a sample of a two-member tar shard (an image and the
//! input as its `.json`) read. Every outcome is a target that checks
//! (finite boxes of the format it names, flags 0 or 1, key points grouped)
//! or a typed error; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::targets::Canvas;
use tensorprep::train::data::json_target::parse;
use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
use tensorprep::train::data::{Dataset, Sample};

const JPEG: &[u8] = include_bytes!("../../tests/fixtures/sample_gray.jpg");

/// A ustar member header for `name` of `size` bytes, checksummed.
fn header(name: &str, size: usize) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(b"0000644");
    h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    h
}

fn member(tar: &mut Vec<u8>, name: &str, data: &[u8]) {
    tar.extend_from_slice(&header(name, data.len()));
    tar.extend_from_slice(data);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
}

fuzz_target!(|data: &[u8]| {
    let canvas = Canvas::new(151, 227).unwrap();
    if let Ok(t) = parse(data, canvas) {
        t.check().expect("a target parsed is consistent");
        let b = t.boxes.as_ref().expect("boxes");
        assert!(b.boxes().iter().flatten().all(|v| v.is_finite()));
        assert!(t.iscrowd.iter().chain(&t.difficult).all(|&v| v <= 1));
        assert!(t.area.iter().all(|a| a.is_finite() && *a >= 0.0));
    }
    let mut tar = Vec::new();
    member(&mut tar, "a.jpg", JPEG);
    member(&mut tar, "a.json", data);
    tar.resize(tar.len() + 1024, 0);
    let path = std::env::temp_dir().join(format!("tp-fuzz-json-{}.tar", std::process::id()));
    std::fs::write(&path, &tar).unwrap();
    let d = WebDataset::open_with_targets(path.to_str().unwrap(), WebKeys::CONVENTIONAL, "json")
        .expect("the shard is well formed");
    let mut s = Sample::default();
    let read = d.read(0, &mut s);
    assert_eq!(read.is_ok(), parse(data, canvas).is_ok());
});
