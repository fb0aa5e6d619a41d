//! Batches of images of different sizes, padded to multiples of 32,
//! allocate nothing per batch in steady state: the padding moves each
//! sample within its batch's buffer through one scratch made once, and the
//! sizes are read from the shapes the batch already keeps. One test in this
//! binary: the allocation count is process-wide.

use std::sync::Arc;

use tensorprep::finish::{ChannelOrder, Normalize};
use tensorprep::pipeline::Op;
use tensorprep::train::data::{Content, DataError, Dataset, Sample};
use tensorprep::train::{Loader, LoaderConfig, TrainPipeline};
use tensorprep::{DType, Layout, PixelFormat, Quantization};
use tensorprep_tests::{CountingAllocator, extra_epoch_allocations, process_allocations};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// 40 RGB pixel samples of three sizes in turn (none a multiple of 32:
/// every batch is padded), labelled by index.
fn dataset() -> Arc<dyn Dataset> {
    let sizes = [(45u32, 70u32), (61, 33), (17, 97)];
    let images: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&(h, w)| (0..h * w * 3).map(|k| (1 + k % 250) as u8).collect())
        .collect();
    Arc::new((40, move |i: usize, s: &mut Sample| {
        let (h, w) = sizes[i % 3];
        s.bytes.clear();
        s.bytes.extend_from_slice(&images[i % 3]);
        s.content = Content::Pixels {
            width: w,
            height: h,
            format: PixelFormat::Rgb8,
        };
        s.labels.clear();
        s.labels.push(i as f32);
        s.id = i as u64;
        Ok::<(), DataError>(())
    }))
}

/// Runs `epochs` epochs of 40 samples in batches of 2, each padded to
/// multiples of 32, reading every batch's image sizes; the allocations of
/// the whole run, start and shutdown included.
fn run(epochs: u32, data: Arc<dyn Dataset>) -> usize {
    let mut p = TrainPipeline::imagenet_train();
    p.augments.clear();
    p.finish = Op::finish(
        Normalize::IMAGENET,
        Layout::Chw,
        ChannelOrder::Rgb,
        DType::F32,
        Quantization::IDENTITY,
    );
    let plan = Arc::new(p.compile().unwrap());
    let mut config = LoaderConfig::new(2, 2, 9);
    config.collate_workers = 2;
    config.epochs = Some(epochs);
    config.max_shape = Some([3, 64, 100]);
    config.size_divisible = 32;
    process_allocations(|| {
        let mut loader = Loader::new(Arc::clone(&data), plan, config).unwrap();
        for epoch in 0..epochs {
            let mut samples = 0;
            for b in &mut loader {
                let b = b.unwrap();
                let [n, _, h, w] = b.shape();
                assert!(h % 32 == 0 && w % 32 == 0, "{:?}", b.shape());
                let mut area = 0;
                for [ih, iw] in b.image_sizes() {
                    assert!(ih <= h && iw <= w);
                    area += ih * iw;
                }
                assert!(area < n * h * w, "a batch of two sizes has padding");
                samples += n;
            }
            assert_eq!(samples, 40);
            if epoch + 1 < epochs {
                loader = loader.next_epoch().unwrap();
            }
        }
    })
}

/// Two more epochs (40 more padded batches) cost each epoch's order (3
/// allocations: the permutation, this shard's indices, their shared
/// handle), nothing per batch.
#[test]
fn padded_batches_allocate_nothing_in_steady_state() {
    let data = dataset();
    let extra = extra_epoch_allocations(|epochs| run(epochs, Arc::clone(&data)), 2, 4);
    assert!(
        (0..=6).contains(&extra),
        "2 more epochs of padded batches: {extra} more allocations (40 batches)"
    );
}
