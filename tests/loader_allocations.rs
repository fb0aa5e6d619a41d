//! The loader allocates nothing per batch in steady state beyond the
//! decoder's own, on all its threads together. One test in this binary: the
//! count is process-wide, so nothing else may run beside it.

use std::sync::Arc;

use tensorprep::pipeline::{Op, Resize};
use tensorprep::resize::{Filter, Resample};
use tensorprep::size::SizeRule;
use tensorprep::train::{Augment, Loader, LoaderConfig, TrainPipeline};
use tensorprep_tests::{CountingAllocator, decoding_allocations, process_allocations, read};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Runs `epochs` epochs of 40 samples in batches of 2 (20 batches each),
/// through 2 read, 2 decode and 2 collate threads; the allocations of the
/// whole run, start and shutdown included.
fn run(epochs: u32, photo: &[u8]) -> usize {
    let dataset = tensorprep_tests::photo_dataset(vec![photo.to_vec()], 40);
    // A fixed resize and a random flip: the workers' plan caches settle
    // after the first samples (random crop sizes would keep growing their
    // tables now and then, which the single-thread test in train.rs covers).
    let mut pipeline = TrainPipeline::imagenet_train();
    pipeline.augments[0] = Augment::Op(Op::Resize(Resize {
        size: SizeRule::Exact {
            width: 64,
            height: 48,
        },
        resample: Resample::Pillow(Filter::Bilinear),
    }));
    let plan = Arc::new(pipeline.compile().unwrap());
    let mut config = LoaderConfig::new(2, 2, 9);
    config.read_workers = 2;
    config.collate_workers = 2;
    config.epochs = Some(epochs);
    process_allocations(|| {
        let mut loader = Loader::new(dataset, plan, config).unwrap();
        for epoch in 0..epochs {
            assert_eq!((&mut loader).map(|b| b.unwrap().len()).sum::<usize>(), 40);
            if epoch + 1 < epochs {
                loader = loader.next_epoch().unwrap();
            }
        }
    })
}

/// Two more epochs (40 more batches, 80 more samples) cost the decoder's
/// allocations for 80 samples plus each epoch's order, nothing per batch.
#[test]
fn batches_allocate_nothing_beyond_the_decoder_in_steady_state() {
    let photo = read("sample.jpg");
    let two = run(2, &photo);
    let four = run(4, &photo);
    let decoding = decoding_allocations(std::iter::repeat_n(photo.as_slice(), 80));
    let extra = four as i64 - two as i64 - decoding as i64;
    // Each epoch's order: the permutation, this shard's indices and their
    // shared handle (3 per epoch).
    assert!(
        (0..=6).contains(&extra),
        "2 more epochs: {} allocations, {decoding} of them the decoder's: {extra} more (40 batches)",
        four - two
    );
}
