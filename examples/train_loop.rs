//! The data side of a training loop: a dataset, torchvision's ImageNet
//! training transform, the loader (this process's shard from the launcher's
//! variables), two epochs, a checkpoint mid-epoch and an exact resume from
//! it with another worker count.
//!
//! ```text
//! cargo run --release --example train_loop
//! ```

use std::sync::Arc;

use tensorprep::Fnv1a64;
use tensorprep::train::data::recordio::RecordIoDataset;
use tensorprep::train::{Loader, LoaderConfig, Shard, TrainPipeline};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Any folder, .rec, .tfrecord or WebDataset shards: here im2rec's six
    // images (`tensorprep records pack DIR -o data.rec` makes one).
    let data = Arc::new(RecordIoDataset::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/records/folder.rec"
    ))?);
    let plan = Arc::new(TrainPipeline::imagenet_train().compile()?);
    let mut config = LoaderConfig::new(2, 2, 42);
    // Under torchrun (or MPI, Horovod): this rank's part of every epoch.
    config.shard = Shard::from_env(false)?;
    config.epochs = Some(2);
    let mut loader = Loader::new(data.clone(), plan.clone(), config.clone())?;
    let mut checkpoint = None;
    let mut after_checkpoint = Vec::new();
    for epoch in 0..2 {
        // `while let`, not `for`: the loop asks the loader for its state.
        while let Some(batch) = loader.next() {
            let batch = batch?;
            // Here the model trains on batch.tensor() (N x 3 x 224 x 224
            // float32) and batch.labels().
            let mut hash = Fnv1a64::new();
            hash.update_elements(batch.tensor(), 0, batch.tensor().len());
            println!(
                "epoch {} batch {}: {} images, labels {:?}, tensor {:016x}",
                batch.epoch,
                batch.number,
                batch.len(),
                batch.labels(),
                hash.finish()
            );
            if checkpoint.is_some() {
                after_checkpoint.push(hash.finish());
            }
            if epoch == 1 && batch.number == 0 {
                // Saved with the model: small, plain data.
                checkpoint = Some(loader.state());
            }
        }
        if epoch == 0 {
            loader = loader.next_epoch()?;
        }
    }
    // After a restart, possibly with another worker count: the very next
    // batches, byte for byte.
    config.workers = 1;
    let state = checkpoint.expect("epoch 1 has a batch 0");
    let mut resumed = Vec::new();
    for batch in Loader::resume(data, plan, config, state)? {
        let batch = batch?;
        let mut hash = Fnv1a64::new();
        hash.update_elements(batch.tensor(), 0, batch.tensor().len());
        resumed.push(hash.finish());
    }
    assert_eq!(resumed, after_checkpoint);
    println!(
        "resumed at epoch {} after batch {}: the same {} batches",
        state.epoch,
        state.batches - 1,
        resumed.len()
    );
    Ok(())
}
