//! The CIFAR-10/100 readers on arbitrary files: the first byte picks the
//! dataset and how the rest is cut into its files (CIFAR-10's five training
//! batches, or CIFAR-100's train.bin); every sample read is 32 x 32 RGB
//! pixels with labels in range, or a typed error. Nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::PixelFormat;
use tensorprep::train::data::cifar::{Cifar10, Cifar100, Cifar100Label, Split};
use tensorprep::train::data::{Content, Dataset, Sample};

fn read_all(d: &dyn Dataset, classes: f32) {
    let _ = d.fingerprint();
    let mut s = Sample::default();
    for i in 0..d.len() {
        let _ = d.describe(i);
        if d.read(i, &mut s).is_ok() {
            assert_eq!(s.bytes.len(), 3072);
            assert_eq!(
                s.content,
                Content::Pixels {
                    width: 32,
                    height: 32,
                    format: PixelFormat::Rgb8
                }
            );
            assert!(s.labels.iter().all(|&l| (0.0..classes).contains(&l)));
        }
    }
    assert!(d.read(d.len(), &mut s).is_err());
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("tp-fuzz-cifar-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    if which % 2 == 0 {
        // Five batches: the rest cut at points the first byte moves.
        let step = rest.len() / 5 + usize::from(which / 2);
        for k in 0..5 {
            let part = rest
                .get(k * step..((k + 1) * step).min(rest.len()))
                .unwrap_or(&[]);
            std::fs::write(dir.join(format!("data_batch_{}.bin", k + 1)), part).unwrap();
        }
        if let Ok(d) = Cifar10::open(&dir, Split::Train) {
            read_all(&d, 10.0);
        }
    } else {
        std::fs::write(dir.join("train.bin"), rest).unwrap();
        for label in [
            Cifar100Label::Fine,
            Cifar100Label::Coarse,
            Cifar100Label::Both,
        ] {
            if let Ok(d) = Cifar100::open(&dir, Split::Train, label) {
                read_all(&d, 100.0);
            }
        }
    }
});
