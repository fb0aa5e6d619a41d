//! How a loader runs ([`LoaderConfig`]): its threads, buffers, order,
//! limits and callbacks, and their check.

use alloc::string::String;
use alloc::sync::Arc;
use core::fmt;

use super::super::{Order, Shard};
use super::{BatchMut, Callbacks, LoadError};

/// What to do with a sample that cannot be read or decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OnError {
    /// End the epoch with the error (the default).
    #[default]
    Fail,
    /// Leave the sample out of its batch and count it.
    Skip,
}

/// How a loader runs. Every field has its default in
/// [`LoaderConfig::default`], from the `DEFAULT_*` constants.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LoaderConfig {
    /// Samples per batch (per shard).
    pub batch_size: usize,
    /// Decode + augment threads (the heavy stage).
    pub workers: usize,
    /// Read threads (raise for slow or remote storage).
    pub read_workers: usize,
    /// Collate threads.
    pub collate_workers: usize,
    /// Read samples waiting for a decode thread (read ahead;
    /// [`LoaderConfig::default_prefetch`] by default).
    pub prefetch: usize,
    /// How many samples before reading one the read stage tells the
    /// dataset it comes ([`Dataset::fetch_ahead`](super::super::data::Dataset::fetch_ahead)):
    /// a dataset on object storage fetches it meanwhile. 0: no hints
    /// ([`LoaderConfig::DEFAULT_FETCH_AHEAD`] by default).
    pub fetch_ahead: usize,
    /// Batch buffers in circulation (the memory bound), at least
    /// `collate_workers + 1`: one being filled, the rest ready or held
    /// ([`LoaderConfig::DEFAULT_DEPTH`] by default).
    pub depth: usize,
    /// The run's seed: each epoch's order and every augmentation draw come
    /// from it (with the epoch and the sample index).
    pub seed: u64,
    /// Each epoch's order.
    pub order: Order,
    /// This process's shard.
    pub shard: Shard,
    /// Leave out a last batch shorter than `batch_size`.
    pub drop_last_batch: bool,
    /// Labels per sample (a batch holds `samples x label_width` of them;
    /// 0: none). Every sample must have this many: one with another count
    /// is [`LoadError::LabelCount`], never padded or cut. `None` (the
    /// default): the label count of the dataset's first sample (index 0,
    /// or the first of the next 15 that reads; 1 if none does); 1 for a
    /// stream ([`Dataset::orders_itself`](crate::train::data::Dataset::orders_itself)),
    /// which is not read ahead of its pass.
    pub label_width: Option<usize>,
    /// Deliver batches in order (default), or each as soon as it is done
    /// (a slow sample then holds up its own batch only; which batch comes
    /// next depends on timing, so resume is exact only when ordered).
    pub ordered: bool,
    /// Failing samples.
    pub on_error: OnError,
    /// Epochs the stream runs (counted from 0; threads stop after the last
    /// instead of reading ahead into one nobody asks for); `None`: until
    /// the loader is dropped.
    pub epochs: Option<u32>,
    /// Run on each batch by the collate threads once its samples are in
    /// (MindSpore's `per_batch_map`: batch-level ops such as Mixup).
    pub per_batch: Option<PerBatch>,
    /// Called at each epoch's and step's beginning and end, on the
    /// consumer's thread as batches are handed out (MindSpore's
    /// `DSCallback`s); they may change the augmentation from the next epoch
    /// on ([`Callback`](super::Callback)).
    pub callbacks: Callbacks,
    /// For a plan whose output size varies (no final crop or resize): the
    /// largest sample shape accepted (a sample larger in any dimension is
    /// an error naming it). Each batch is padded with zeros to its largest sample, its
    /// shape [`Batch::shape`](super::Batch::shape), each sample's own
    /// [`Batch::sample_shapes`](super::Batch::sample_shapes).
    pub max_shape: Option<[usize; 3]>,
    /// Pad each batch's height and width up to a multiple of this
    /// (torchvision's `GeneralizedRCNNTransform(size_divisible=32)`; 1, the
    /// default: to the batch's largest sample exactly). Each image stays at
    /// the top left of its slot, the padding bottom and right is 0 in the
    /// output's element type (after normalization, as torchvision pads),
    /// and [`Batch::image_sizes`](super::Batch::image_sizes) gives each
    /// image's own size. The batch buffers hold `max_shape` (or a fixed
    /// output's shape) rounded up the same way, counted in `buffer_limit`;
    /// a fixed output size that is not a multiple is padded too.
    pub size_divisible: usize,
    /// The most bytes the batch buffers may take together (`depth` buffers
    /// of a batch each, a batch never larger than an epoch): a
    /// configuration past it is refused when the loader starts
    /// ([`LoaderConfig::DEFAULT_BUFFER_LIMIT`] by default).
    pub buffer_limit: u64,
    /// The most bytes one sample's decode and augmentation may take (each
    /// decode thread's working memory): a sample whose image would need
    /// more is an error naming it ([`TrainState::with_decode_budget`](super::super::TrainState::with_decode_budget);
    /// [`LoaderConfig::DEFAULT_DECODE_BUDGET`] by default).
    pub decode_budget: u64,
}

/// A function run on every collated batch ([`LoaderConfig::per_batch`]);
/// an `Err` (or a panic) fails the batch with [`LoadError::PerBatch`].
///
/// ```
/// use tensorprep::train::{BatchMut, LoaderConfig, PerBatch};
///
/// // One-hot labels are the caller's; here: shift every label by one.
/// let mut config = LoaderConfig::new(8, 2, 0);
/// config.per_batch = Some(PerBatch::new(|b: &mut BatchMut<'_>| {
///     b.labels.iter_mut().for_each(|l| *l += 1.0);
///     Ok(())
/// }));
/// ```
#[derive(Clone)]
#[allow(clippy::type_complexity)]
pub struct PerBatch(pub(super) Arc<dyn Fn(&mut BatchMut<'_>) -> Result<(), String> + Send + Sync>);

impl PerBatch {
    /// Wraps `f`.
    pub fn new(
        f: impl Fn(&mut BatchMut<'_>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        PerBatch(Arc::new(f))
    }
}

impl fmt::Debug for PerBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PerBatch(..)")
    }
}

impl PartialEq for PerBatch {
    /// The same function (not merely an equal one).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The defaults, here alone: [`LoaderConfig::default`] and
/// [`LoaderConfig::new`] are made of them, and the Python `Loader` and the
/// CLI read theirs from [`LoaderConfig::default`].
impl LoaderConfig {
    /// [`LoaderConfig::batch_size`]'s default: 64, a common per-device batch
    /// for ImageNet-sized images (torchvision's reference recipes use 32 to
    /// 128); 3 x 224 x 224 float32 samples make a 38.5 MB batch.
    pub const DEFAULT_BATCH_SIZE: usize = 64;
    /// [`LoaderConfig::workers`]'s default: 2 decode threads, enough to keep
    /// a small model fed without taking a shared machine's every CPU
    /// ([`autotune`](super::super::autotune) chooses from measurements).
    pub const DEFAULT_WORKERS: usize = 2;
    /// [`LoaderConfig::read_workers`]'s default: 1. Reading a local file
    /// takes a small part of decoding it, so one reader feeds many decode
    /// threads; raise it for slow or remote storage.
    pub const DEFAULT_READ_WORKERS: usize = 1;
    /// [`LoaderConfig::collate_workers`]'s default: 1. Collating moves no
    /// sample (each is decoded into its slot) unless samples are skipped or
    /// padded, so one thread keeps up.
    pub const DEFAULT_COLLATE_WORKERS: usize = 1;
    /// [`LoaderConfig::depth`]'s default: 3 batch buffers, the fewest that
    /// keep every stage busy with one collate thread: one being decoded
    /// into, one collated or waiting, one held by the training step. A
    /// fourth lets the decoders run a batch further ahead of a consumer
    /// whose steps vary in length, at the cost of one more batch of memory
    /// (38.5 MB at the default batch size; 154 MB at 256): raise it when the
    /// training step's time varies (the decoders then wait for a free
    /// buffer while a long step holds one).
    pub const DEFAULT_DEPTH: usize = 3;
    /// [`LoaderConfig::fetch_ahead`]'s default: 256 samples, at 2,000
    /// images/s about 130 ms ahead, several round trips to a distant
    /// server; what a remote dataset fetches ahead is bounded by its block
    /// cache (half of it in flight), and a local dataset ignores the hints.
    pub const DEFAULT_FETCH_AHEAD: usize = 256;
    /// [`LoaderConfig::seed`]'s default: 0.
    pub const DEFAULT_SEED: u64 = 0;
    /// [`LoaderConfig::buffer_limit`]'s default: 8 GiB, past any batch a
    /// single device trains on, short of what a mistyped batch size or
    /// shape would take.
    pub const DEFAULT_BUFFER_LIMIT: u64 = 8 << 30;
    /// [`LoaderConfig::decode_budget`]'s default: 1 GiB, an image of about
    /// 89 megapixels ([`TrainState::BYTES_PER_PIXEL`](super::super::TrainState::BYTES_PER_PIXEL) each):
    /// every photo a camera takes, not a decompression bomb.
    pub const DEFAULT_DECODE_BUDGET: u64 = 1 << 30;

    /// [`LoaderConfig::prefetch`]'s default for `workers` decode threads:
    /// two samples per decode thread, so that none waits while the reader
    /// fetches the next, and two more for a read slower than the rest.
    pub const fn default_prefetch(workers: usize) -> usize {
        workers.saturating_mul(2).saturating_add(2)
    }

    /// `batch_size` samples per batch, `workers` decode threads, shuffled by
    /// `seed`; the rest [`LoaderConfig::default`]'s (with the read-ahead of
    /// [`LoaderConfig::default_prefetch`] for `workers`).
    pub fn new(batch_size: usize, workers: usize, seed: u64) -> LoaderConfig {
        LoaderConfig {
            batch_size,
            workers,
            prefetch: LoaderConfig::default_prefetch(workers),
            seed,
            ..LoaderConfig::default()
        }
    }

    /// Samples per step over all shards.
    pub(super) fn global_batch(&self) -> u64 {
        self.batch_size as u64 * u64::from(self.shard.count())
    }

    pub(super) fn check(&self) -> Result<(), LoadError> {
        let threads = |n: usize| (1..=1024).contains(&n);
        if self.batch_size == 0 || self.batch_size > 1 << 20 {
            return Err(LoadError::Config("batch size must be 1 to 2^20"));
        }
        if !threads(self.workers) || !threads(self.read_workers) || !threads(self.collate_workers) {
            return Err(LoadError::Config(
                "each stage needs 1 to 1024 threads (workers, read_workers, collate_workers)",
            ));
        }
        if self.prefetch == 0 || self.prefetch > 1 << 16 {
            return Err(LoadError::Config("prefetch must be 1 to 65536 samples"));
        }
        if self.depth <= self.collate_workers || self.depth > 4096 {
            return Err(LoadError::Config(
                "depth must exceed collate_workers and be at most 4096 batches",
            ));
        }
        if self.size_divisible == 0 || self.size_divisible > 1 << 16 {
            return Err(LoadError::Config("size_divisible must be 1 to 65536"));
        }
        if self.decode_budget == 0 {
            return Err(LoadError::Config("decode_budget must be at least 1 byte"));
        }
        Ok(())
    }
}

impl Default for LoaderConfig {
    /// The `DEFAULT_*` constants: [`LoaderConfig::DEFAULT_BATCH_SIZE`]
    /// samples per batch, [`LoaderConfig::DEFAULT_WORKERS`] decode threads,
    /// one read and one collate thread, [`LoaderConfig::DEFAULT_DEPTH`]
    /// batch buffers; shuffled by seed 0, one shard, ordered, failing on
    /// errors, no last epoch, the default memory limits.
    fn default() -> LoaderConfig {
        LoaderConfig {
            batch_size: LoaderConfig::DEFAULT_BATCH_SIZE,
            workers: LoaderConfig::DEFAULT_WORKERS,
            read_workers: LoaderConfig::DEFAULT_READ_WORKERS,
            collate_workers: LoaderConfig::DEFAULT_COLLATE_WORKERS,
            prefetch: LoaderConfig::default_prefetch(LoaderConfig::DEFAULT_WORKERS),
            fetch_ahead: LoaderConfig::DEFAULT_FETCH_AHEAD,
            depth: LoaderConfig::DEFAULT_DEPTH,
            seed: LoaderConfig::DEFAULT_SEED,
            order: Order::Shuffled,
            shard: Shard::ALL,
            drop_last_batch: false,
            label_width: None,
            ordered: true,
            on_error: OnError::Fail,
            epochs: None,
            per_batch: None,
            callbacks: Callbacks::default(),
            max_shape: None,
            size_divisible: 1,
            buffer_limit: LoaderConfig::DEFAULT_BUFFER_LIMIT,
            decode_budget: LoaderConfig::DEFAULT_DECODE_BUDGET,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults make a configuration the loader accepts, and `new`
    /// differs from them only in what it is given (and the read-ahead that
    /// follows the decode threads).
    #[test]
    fn the_defaults_are_one_valid_configuration() {
        let d = LoaderConfig::default();
        assert!(d.check().is_ok());
        assert_eq!(d.depth, LoaderConfig::DEFAULT_DEPTH);
        assert_eq!(d.prefetch, 2 * LoaderConfig::DEFAULT_WORKERS + 2);
        let n = LoaderConfig::new(8, 5, 7);
        assert!(n.check().is_ok());
        let expected = LoaderConfig {
            batch_size: 8,
            workers: 5,
            prefetch: 12,
            seed: 7,
            ..LoaderConfig::default()
        };
        assert_eq!(n, expected);
        assert_ne!(n, d);
    }
}
