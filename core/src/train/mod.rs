//! Training mode (feature `train`): the preprocessing a model is trained
//! with, from the same ops and plans it runs with on the device.
//!
//! - [`SampleKey`] and [`Draws`]: counter-based randomness keyed by (seed,
//!   epoch, sample index, op position), the same for any thread count.
//! - [`Augment`]: the random ops (torchvision's `RandomResizedCrop`,
//!   `RandomCrop`, flips, `RandomApply`, `RandomChoice`). Each becomes
//!   ordinary ops per sample, fused by the plan compiler.
//! - [`TrainPipeline`] / [`TrainPlan`]: decode, augment, finish.
//! - [`data`]: datasets (image folders, MXNet RecordIO, TFRecord, WebDataset,
//!   closures).
//! - [`Order`], [`Shard`], [`epoch_indices`]: each epoch's order and each
//!   process's part of it (`DistributedSampler` semantics).

mod augment;
pub mod data;
mod loader;
mod plan;
mod rng;
mod sampler;
mod stage;

pub use augment::{Augment, RandomCrop, RandomResizedCrop};
pub use loader::{Batch, LoadError, Loader, LoaderConfig, LoaderState, OnError};
pub use plan::{MAX_AUGMENTS, TrainPipeline, TrainPlan, TrainState};
pub use rng::{Draws, SampleKey};
pub use sampler::{Order, Shard, Weighted, epoch_indices, permutation};
