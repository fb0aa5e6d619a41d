//! The idx reader (MNIST, Fashion-MNIST, KMNIST) on arbitrary files: the
//! first two bytes give the length of the images file, the rest is cut into
//! the images and labels files. A header that states more than the file
//! holds is refused at open; every sample read is gray pixels of the stated
//! size with a label below 10, or a typed error. Nothing panics, nothing
//! allocates past what the file holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorprep::PixelFormat;
use tensorprep::train::data::cifar::Split;
use tensorprep::train::data::mnist::{Mnist, Variant};
use tensorprep::train::data::{Content, Dataset, Sample};

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let cut = usize::from(u16::from_le_bytes(*head)).min(rest.len());
    let (images, labels) = rest.split_at(cut);
    let dir = std::env::temp_dir().join(format!("tp-fuzz-mnist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("train-images-idx3-ubyte"), images).unwrap();
    std::fs::write(dir.join("train-labels-idx1-ubyte"), labels).unwrap();
    let Ok(d) = Mnist::open(&dir, Variant::Mnist, Split::Train) else {
        return;
    };
    let (w, h) = d.size();
    assert!(16 + d.len() as u64 * u64::from(w) * u64::from(h) == images.len() as u64);
    let _ = d.fingerprint();
    let mut s = Sample::default();
    for i in 0..d.len() {
        let _ = d.describe(i);
        if d.read(i, &mut s).is_ok() {
            assert_eq!(s.bytes.len() as u64, u64::from(w) * u64::from(h));
            assert_eq!(
                s.content,
                Content::Pixels {
                    width: w,
                    height: h,
                    format: PixelFormat::Gray8
                }
            );
            assert!(s.labels.len() == 1 && (0.0..10.0).contains(&s.labels[0]));
        }
    }
    assert!(d.read(d.len(), &mut s).is_err());
});
