//! Training mode (feature `train`): the preprocessing a model is trained
//! with, from the same ops and plans it runs with on the device.
//!
//! - [`SampleKey`] and [`Draws`]: counter-based randomness keyed by (seed,
//!   epoch, sample index, op position), the same for any thread count.
//! - [`Augment`]: the random ops (torchvision's `RandomResizedCrop`,
//!   `RandomCrop`, flips, `RandomApply`, `RandomChoice`). Each becomes
//!   ordinary ops per sample, fused by the plan compiler; [`CustomOp`] runs
//!   the caller's own function on the 8-bit image (Python's `Lambda`).
//! - [`TrainPipeline`] / [`TrainPlan`]: decode, augment, finish.
//! - [`data`]: datasets (image folders, MXNet RecordIO, TFRecord, WebDataset,
//!   closures, samples in memory) and datasets made of others
//!   ([`data::combine`]: range, concat, zip, filter, cache).
//! - [`Order`], [`Shard`], [`epoch_indices`]: each epoch's order (sequential,
//!   shuffled, weighted) and each process's part of it (`DistributedSampler`
//!   semantics).
//! - [`Loader`]: read, decode + augment and collate stages on their own
//!   threads, ordered, bounded, resumable; [`autotune`] picks its threads and
//!   buffers within a CPU and a memory budget.
//! - `Preview` (feature `preview`): a PNG grid of samples as the model
//!   sees them, each with its draws written under it.

mod augment;
mod autotune;
pub mod data;
mod erase;
mod loader;
mod mix;
mod plan;
#[cfg(feature = "preview")]
mod preview;
mod rng;
mod sampler;

pub use augment::{
    AugMix, AugMixStep, Augment, AutoAugment, AutoAugmentPolicy, ColorJitter, Drawn, GaussianBlur,
    ImageOp, PolicyOp, RandAugment, RandomAdjustment, RandomAffine, RandomApply, RandomChoice,
    RandomCrop, RandomFlip, RandomOrder, RandomPerspective, RandomResizedCrop, RandomRotation,
    RandomSelectSubpolicy, SPACE_OPS, Space, Subpolicy, TrivialAugmentWide, move_target,
};
pub use augment::{BoxError, CustomFn, CustomOp, CustomOpError, CustomSize, NotSaveable};
pub use augment::{
    FixedSizeCrop, RandomIoUCrop, RandomPhotometricDistort, RandomShortestSize, RandomZoomOut,
    ScaleJitter,
};
pub use autotune::{Budget, Tuned, autotune};
pub use erase::{EraseValue, RandomErasing, erase};
pub use loader::{
    Batch, BatchMut, Callback, CallbackPoint, Callbacks, FlatBoxes, LoadError, Loader,
    LoaderConfig, LoaderState, NextEpochError, OnError, PaddedBoxes, PerBatch, PipelineChange,
    RaggedBoxes, RunContext, Stopper,
};
pub use mix::{BatchShape, MixDraws, MixMode, MixScratch, Mixup};
pub use plan::{MAX_AUGMENTS, TrainPipeline, TrainPlan, TrainState};
#[cfg(feature = "preview")]
pub use preview::{Grid, MAX_BYTES, MAX_SAMPLES, Preview, PreviewError, denormalize};
pub use rng::{Draws, SampleKey};
pub use sampler::{Blocks, Order, Shard, Weighted, epoch_indices, epoch_indices_of, permutation};
