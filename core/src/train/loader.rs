//! The loader: batches of a training plan's tensors from a dataset, made by
//! three stages of worker threads, delivered in order, memory bounded,
//! resumable exactly.
//!
//! - **Stages**, each on its own named threads with its own parallelism,
//!   joined by bounded queues that keep the stream's order:
//!   **read** (`tp-read-N`: the dataset's bytes and labels, into recycled
//!   samples), **decode + augment** (`tp-decode-N`: the plan, straight into
//!   the sample's slot of its batch buffer: no copy) and **collate**
//!   (`tp-collate-N`: a batch whose samples are all done is made whole,
//!   skipped samples' holes closed, and handed on in order).
//! - **Across epochs**: the threads run from epoch to epoch (the next
//!   epoch's first samples are read while this one's last batches are
//!   consumed) until [`LoaderConfig::epochs`] or the loader is dropped.
//! - **Bounded**: the read queue holds at most [`LoaderConfig::prefetch`]
//!   samples and `depth` batch buffers circulate; a [`Batch`] handed out
//!   returns its buffer when dropped. Nothing is allocated per batch in
//!   steady state beyond the decoder's own. The loader's peak memory is at
//!   most
//!
//!   `depth x min(batch_size, samples per epoch) x sample bytes`
//!   (the batch buffers, each grown when first used; refused at start past
//!   [`LoaderConfig::buffer_limit`])
//!   `+ workers x decode_budget` (each decode thread's working memory; an
//!   image needing more is refused from its header, naming it:
//!   [`LoaderConfig::decode_budget`])
//!   `+ (prefetch + read_workers + workers) x the largest encoded sample`
//!   (samples read ahead; each at most
//!   [`MAX_SAMPLE_BYTES`](super::data::MAX_SAMPLE_BYTES), 256 MiB)
//!   `+ the epoch's order` (8 bytes per dataset sample when shuffled; a
//!   weighted order costs its weights, however many it draws).
//! - **Ordered**: batches hold the epoch's samples in order and come out in
//!   order ([`LoaderConfig::ordered`]` = false` hands out each batch as soon
//!   as it is done instead).
//! - **Same output for any worker count**: every draw is keyed by (seed,
//!   epoch, sample index), so tensors do not depend on who made them.
//! - **Errors**: a sample that fails (or a worker that panics) ends the epoch
//!   with a [`LoadError`] naming the sample; [`OnError::Skip`] counts and
//!   skips it instead (the batch is then short).
//! - **Exact resume**: [`Loader::state`] is (seed, epoch, batches delivered,
//!   global batch, dataset length and fingerprint); [`Loader::resume`] continues with the
//!   very next batch, with any worker count, and with another shard count
//!   that keeps the global batch (each step covers the same stretch of the
//!   epoch's order: shard `r` of `n` takes positions `r + n * j`).
//! - **Shutdown**: dropping the loader stops and joins every thread promptly
//!   (a thread finishes the sample it is on).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::JoinHandle;

use super::data::{DataError, Dataset, Sample};
use super::sampler::EpochOrder;
use super::stage::{Pool, Queue, lock};
use super::{Order, SampleKey, Shard, TrainPlan, TrainState};
use crate::{Tensor, TensorMut};

/// What to do with a sample that cannot be read or decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OnError {
    /// End the epoch with the error (the default).
    #[default]
    Fail,
    /// Leave the sample out of its batch and count it.
    Skip,
}

/// How a loader runs.
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
    /// Read samples waiting for a decode thread (read ahead).
    pub prefetch: usize,
    /// Batch buffers in circulation (the memory bound), at least
    /// `collate_workers + 1`: one being filled, the rest ready or held.
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
    /// Called (on a read thread) when the loader starts reading an epoch
    /// (or resumes in one): MindSpore's epoch-begin callback. The step
    /// callback is [`LoaderConfig::per_batch`], which sees every batch.
    pub on_epoch: Option<OnEpoch>,
    /// For a plan whose output size varies (no final crop or resize): the
    /// largest sample shape accepted (a larger sample is an error naming
    /// it). Each batch is padded with zeros to its largest sample, its
    /// shape [`Batch::shape`], each sample's own [`Batch::sample_shapes`].
    pub max_shape: Option<[usize; 3]>,
    /// The most bytes the batch buffers may take together (`depth` buffers
    /// of a batch each, a batch never larger than an epoch): a
    /// configuration past it is refused when the loader starts
    /// ([`LoaderConfig::DEFAULT_BUFFER_LIMIT`] by default).
    pub buffer_limit: u64,
    /// The most bytes one sample's decode and augmentation may take (each
    /// decode thread's working memory): a sample whose image would need
    /// more is an error naming it ([`TrainState::with_decode_budget`];
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
pub struct PerBatch(Arc<dyn Fn(&mut BatchMut<'_>) -> Result<(), String> + Send + Sync>);

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

/// A function called with each epoch's number as the loader starts reading
/// it ([`LoaderConfig::on_epoch`]).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use tensorprep::train::{LoaderConfig, OnEpoch};
///
/// let started = Arc::new(AtomicU32::new(0));
/// let seen = Arc::clone(&started);
/// let mut config = LoaderConfig::new(8, 2, 0);
/// config.on_epoch = Some(OnEpoch::new(move |epoch| seen.store(epoch, Ordering::SeqCst)));
/// ```
#[derive(Clone)]
pub struct OnEpoch(Arc<dyn Fn(u32) + Send + Sync>);

impl OnEpoch {
    /// Wraps `f`.
    pub fn new(f: impl Fn(u32) + Send + Sync + 'static) -> Self {
        OnEpoch(Arc::new(f))
    }
}

impl fmt::Debug for OnEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OnEpoch(..)")
    }
}

impl PartialEq for OnEpoch {
    /// The same function (not merely an equal one).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A collated batch as a [`PerBatch`] function sees it.
#[non_exhaustive]
pub struct BatchMut<'a> {
    /// The epoch.
    pub epoch: u32,
    /// The batch's number within the epoch.
    pub number: u64,
    /// The samples in the batch (the tensor holds `len` samples first).
    pub len: usize,
    /// The batch tensor (N x sample shape, room for a full batch).
    pub tensor: &'a mut Tensor,
    /// Each sample's first label.
    pub labels: &'a mut [f32],
    /// Each sample's index in the dataset.
    pub indices: &'a [u64],
}

impl LoaderConfig {
    /// [`LoaderConfig::buffer_limit`]'s default: 8 GiB.
    pub const DEFAULT_BUFFER_LIMIT: u64 = 8 << 30;
    /// [`LoaderConfig::decode_budget`]'s default: 1 GiB, an image of about
    /// 89 megapixels ([`TrainState::BYTES_PER_PIXEL`] each).
    pub const DEFAULT_DECODE_BUDGET: u64 = 1 << 30;

    /// `batch_size` samples per batch, `workers` decode threads (one read
    /// and one collate thread), shuffled by `seed`, one shard, ordered,
    /// failing on errors, no last epoch, the default memory limits.
    pub fn new(batch_size: usize, workers: usize, seed: u64) -> LoaderConfig {
        LoaderConfig {
            batch_size,
            workers,
            read_workers: 1,
            collate_workers: 1,
            prefetch: 2 * workers + 2,
            depth: 3,
            seed,
            order: Order::Shuffled,
            shard: Shard::ALL,
            drop_last_batch: false,
            ordered: true,
            on_error: OnError::Fail,
            epochs: None,
            per_batch: None,
            on_epoch: None,
            max_shape: None,
            buffer_limit: LoaderConfig::DEFAULT_BUFFER_LIMIT,
            decode_budget: LoaderConfig::DEFAULT_DECODE_BUDGET,
        }
    }

    /// Samples per step over all shards.
    fn global_batch(&self) -> u64 {
        self.batch_size as u64 * u64::from(self.shard.count())
    }

    fn check(&self) -> Result<(), LoadError> {
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
        if self.decode_budget == 0 {
            return Err(LoadError::Config("decode_budget must be at least 1 byte"));
        }
        Ok(())
    }
}

/// Where a loader is: enough to continue exactly (small, `Copy`; store it
/// with the model's checkpoint, as [`LoaderState::to_bytes`] or its fields).
///
/// ```
/// use tensorprep::train::LoaderState;
///
/// let state = LoaderState { seed: 7, epoch: 3, batches: 120, global_batch: 256,
///                           dataset_len: 1_281_167, fingerprint: 0x1234 };
/// let saved = state.to_bytes();
/// assert_eq!(LoaderState::from_bytes(&saved), Some(state));
/// assert_eq!(LoaderState::from_bytes(&saved[..10]), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoaderState {
    /// The draws' seed.
    pub seed: u64,
    /// The epoch being delivered.
    pub epoch: u32,
    /// Batches of it already delivered (by each shard: training steps).
    pub batches: u64,
    /// Samples per step over all shards (batch size x shard count). A
    /// resume may change the shard count and the batch size if it keeps
    /// this: each step covers the same stretch of the epoch's order.
    pub global_batch: u64,
    /// The dataset's length (a different dataset is refused on resume).
    pub dataset_len: u64,
    /// The dataset's [`Dataset::fingerprint`] (another dataset of the same
    /// length is refused on resume too).
    pub fingerprint: u64,
}

impl LoaderState {
    /// The bytes [`LoaderState::to_bytes`] writes.
    pub const BYTES: usize = 48;
    const MAGIC: [u8; 4] = *b"TPL1";

    /// A fixed little-endian layout: a 4-byte tag, then the fields.
    pub fn to_bytes(&self) -> [u8; LoaderState::BYTES] {
        let mut b = [0u8; LoaderState::BYTES];
        b[..4].copy_from_slice(&LoaderState::MAGIC);
        b[4..8].copy_from_slice(&self.epoch.to_le_bytes());
        for (i, v) in [
            self.seed,
            self.batches,
            self.global_batch,
            self.dataset_len,
            self.fingerprint,
        ]
        .iter()
        .enumerate()
        {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// Whether a loader over a dataset of `len` samples and `fingerprint`,
    /// configured by `config`, can continue at this state.
    fn fits(&self, len: u64, fingerprint: u64, config: &LoaderConfig) -> Result<(), LoadError> {
        if self.dataset_len != len {
            return Err(LoadError::Config(
                "the state is for a dataset of another length",
            ));
        }
        if self.fingerprint != fingerprint {
            return Err(LoadError::Config(
                "the state is for another dataset (its fingerprint differs)",
            ));
        }
        if self.seed != config.seed {
            return Err(LoadError::Config("the state is for another seed"));
        }
        if self.global_batch != config.global_batch() {
            return Err(LoadError::Config(
                "the state is for another global batch (batch size x shard count)",
            ));
        }
        Ok(())
    }

    /// Reads what [`LoaderState::to_bytes`] wrote (`None` for anything else).
    pub fn from_bytes(b: &[u8]) -> Option<LoaderState> {
        if b.len() != LoaderState::BYTES || b[..4] != LoaderState::MAGIC {
            return None;
        }
        let word = |i: usize| {
            Some(u64::from_le_bytes(
                b[8 + 8 * i..16 + 8 * i].try_into().ok()?,
            ))
        };
        Some(LoaderState {
            epoch: u32::from_le_bytes(b[4..8].try_into().ok()?),
            seed: word(0)?,
            batches: word(1)?,
            global_batch: word(2)?,
            dataset_len: word(3)?,
            fingerprint: word(4)?,
        })
    }
}

/// A sample that failed, or a loader that cannot run.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading sample `index` failed.
    Read {
        /// The sample's index in the dataset.
        index: u64,
        /// Why.
        error: DataError,
    },
    /// Decoding or augmenting sample `index` failed.
    Decode {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`]).
        sample: String,
        /// Why.
        error: crate::Error,
    },
    /// A worker panicked on sample `index`.
    Panic {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`]).
        sample: String,
        /// The panic's message.
        message: String,
    },
    /// A stage's thread failed outside any one sample (its plumbing, or a
    /// dataset's `len`): the stream cannot go on.
    Worker {
        /// The thread's name (`tp-read-0`, ...).
        thread: String,
        /// The panic's message.
        message: String,
    },
    /// A sample has no label, or one that is not a finite number.
    Label {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`]).
        sample: String,
    },
    /// The per-batch function failed (or panicked) on a batch.
    PerBatch {
        /// The batch's epoch.
        epoch: u32,
        /// The batch's number within the epoch.
        number: u64,
        /// What it said.
        message: String,
    },
    /// The configuration or the resume state does not fit.
    Config(&'static str),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Read { index, error } => write!(f, "sample {index}: {error}"),
            LoadError::Decode {
                index,
                sample,
                error,
            } => write!(f, "{sample} (sample {index}): {error}"),
            LoadError::Panic {
                index,
                sample,
                message,
            } => write!(f, "{sample} (sample {index}): a worker panicked: {message}"),
            LoadError::Worker { thread, message } => {
                write!(f, "loader thread {thread} failed: {message}")
            }
            LoadError::Label { index, sample } => write!(
                f,
                "{sample} (sample {index}): no label, or one that is not a finite number"
            ),
            LoadError::PerBatch {
                epoch,
                number,
                message,
            } => write!(
                f,
                "epoch {epoch}, batch {number}: the per-batch function failed: {message}"
            ),
            LoadError::Config(what) => write!(f, "loader: {what}"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Read { error, .. } => Some(error),
            LoadError::Decode { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// One batch: the tensors of its samples, their labels and indices. Its
/// buffer returns to the loader when it is dropped.
pub struct Batch {
    /// The epoch.
    pub epoch: u32,
    /// The batch's number within the epoch (for this shard).
    pub number: u64,
    buffers: Option<Buffers>,
    home: Arc<Pool<Buffers>>,
    held: Arc<AtomicUsize>,
}

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("epoch", &self.epoch)
            .field("number", &self.number)
            .field("len", &self.len())
            .field("skipped", &self.skipped())
            .finish()
    }
}

/// A batch's storage, recycled.
#[derive(Debug)]
struct Buffers {
    tensor: Tensor,
    labels: Vec<f32>,
    indices: Vec<u64>,
    /// Each sample's shape.
    shapes: Vec<[usize; 3]>,
    /// The batch's: samples, then the (largest) sample shape.
    shape: [usize; 4],
    /// The plan's layout: where height and width are in a sample shape.
    layout: crate::Layout,
    /// Samples filled (a batch with skipped samples, or the last, is short).
    len: usize,
    skipped: usize,
}

impl Batch {
    /// The batch's tensor: [`Batch::shape`] (N x C x H x W for a CHW plan),
    /// in the plan's element type: exactly the batch's samples (a short
    /// batch's tensor is short too).
    pub fn tensor(&self) -> &Tensor {
        &self.buffers().tensor
    }

    /// The batch's tensor, writable: a batch is its holder's alone until it
    /// is dropped (a caller may normalize or mix it in place).
    pub fn tensor_mut(&mut self) -> &mut Tensor {
        &mut self
            .buffers
            .as_mut()
            .expect("a batch holds its buffers until dropped")
            .tensor
    }

    /// The samples in the batch.
    pub fn len(&self) -> usize {
        self.buffers().len
    }

    /// Whether the batch holds no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each sample's first label.
    pub fn labels(&self) -> &[f32] {
        &self.buffers().labels
    }

    /// Each sample's index in the dataset.
    pub fn indices(&self) -> &[u64] {
        &self.buffers().indices
    }

    /// The tensor's shape: samples, then the sample shape (for a plan
    /// whose output size varies, the batch's largest, the others padded
    /// with zeros).
    pub fn shape(&self) -> [usize; 4] {
        self.buffers().shape
    }

    /// Each sample's own shape (before padding).
    pub fn sample_shapes(&self) -> &[[usize; 3]] {
        &self.buffers().shapes
    }

    /// The shape of [`Batch::pixel_mask`]: samples, height, width (of the
    /// padded tensor).
    pub fn pixel_mask_shape(&self) -> [usize; 3] {
        let b = self.buffers();
        let [h, w] = spatial(b.layout, [b.shape[1], b.shape[2], b.shape[3]]);
        [b.len, h, w]
    }

    /// Which pixels of the padded tensor are image (1) and which padding
    /// (0), per sample: the `pixel_mask` DETR-style models take beside
    /// `pixel_values` when a batch holds images of different sizes (each
    /// sample sits at the top left of its slot, as transformers pads it).
    /// All ones for a plan of fixed output size. `out` holds
    /// [`Batch::pixel_mask_shape`]'s elements.
    ///
    /// ```no_run
    /// # fn f(batch: &tensorprep::train::Batch) -> Result<(), tensorprep::train::LoadError> {
    /// let [n, h, w] = batch.pixel_mask_shape();
    /// let mut mask = vec![0u8; n * h * w];
    /// batch.pixel_mask(&mut mask)?;
    /// # Ok(()) }
    /// ```
    pub fn pixel_mask(&self, out: &mut [u8]) -> Result<(), LoadError> {
        let [n, h, w] = self.pixel_mask_shape();
        if out.len() != n * h * w {
            return Err(LoadError::Config(
                "pixel_mask: the buffer must hold samples x height x width bytes",
            ));
        }
        if h * w == 0 {
            return Ok(());
        }
        let layout = self.buffers().layout;
        for (mask, shape) in out.chunks_exact_mut(h * w).zip(self.sample_shapes()) {
            let [sh, sw] = spatial(layout, *shape);
            for (y, row) in mask.chunks_exact_mut(w).enumerate() {
                let inside = if y < sh { sw.min(w) } else { 0 };
                row[..inside].fill(1);
                row[inside..].fill(0);
            }
        }
        Ok(())
    }

    /// Samples left out of this batch ([`OnError::Skip`]).
    pub fn skipped(&self) -> usize {
        self.buffers().skipped
    }

    fn buffers(&self) -> &Buffers {
        self.buffers
            .as_ref()
            .expect("a batch holds its buffers until dropped")
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(b) = self.buffers.take() {
            self.held.fetch_sub(1, Ordering::SeqCst);
            self.home.put(b);
        }
    }
}

/// A read sample on its way to the decoders.
struct Read {
    epoch: u32,
    index: u64,
    sample: Result<Sample, LoadError>,
}

/// A collated batch on its way to the consumer.
struct Collated {
    epoch: u32,
    number: u64,
    buffers: Result<Buffers, (LoadError, Buffers)>,
}

/// Where the stream starts and how epochs divide it.
#[derive(Clone, Copy)]
struct Layout {
    /// The epoch of stream item 0.
    epoch: u32,
    /// The epoch position of stream item 0.
    position: u64,
    /// Positions used per epoch (a dropped last batch's are not).
    per_epoch: u64,
    /// Batches per epoch.
    batches: u64,
    batch_size: u64,
    /// The first epoch not run.
    end: Option<u32>,
}

impl Layout {
    /// (epoch, position) of stream item `n`, `None` past the last epoch.
    fn item(&self, n: u64) -> Option<(u32, u64)> {
        if self.per_epoch == 0 {
            return None;
        }
        let at = self.position + n;
        let epoch = u64::from(self.epoch) + at / self.per_epoch;
        let epoch = u32::try_from(epoch).ok()?;
        self.end.is_none_or(|end| epoch < end).then_some(())?;
        Some((epoch, at % self.per_epoch))
    }

    /// (stream batch, slot in it) of stream item `n`.
    fn slot(&self, n: u64) -> (u64, usize) {
        let at = self.position + n;
        let (epochs, position) = (at / self.per_epoch, at % self.per_epoch);
        let batch = epochs * self.batches + position / self.batch_size;
        (
            batch - self.position / self.batch_size,
            (position % self.batch_size) as usize,
        )
    }

    /// (epoch, number, samples) of stream batch `n`.
    fn batch(&self, n: u64) -> Option<(u32, u64, usize)> {
        if self.batches == 0 {
            return None;
        }
        let first = self.position / self.batch_size + n;
        let epoch = u32::try_from(u64::from(self.epoch) + first / self.batches).ok()?;
        self.end.is_none_or(|end| epoch < end).then_some(())?;
        let number = first % self.batches;
        let start = number * self.batch_size;
        let len = self.batch_size.min(self.per_epoch - start);
        Some((epoch, number, len as usize))
    }
}

/// What the stages share.
struct Shared {
    dataset: Arc<dyn Dataset>,
    plan: Arc<TrainPlan>,
    config: LoaderConfig,
    /// Elements per batch slot: the sample shape's, or `max_shape`'s.
    sample_len: usize,
    /// The sample shape, or `max_shape`.
    shape: [usize; 3],
    /// The plan's output size varies: batches are padded.
    variable: bool,
    /// The dataset's fingerprint (computed once).
    fingerprint: u64,
    layout: Layout,
    /// The last epochs' orders (readers fetch one when they cross into it).
    orders: Mutex<Vec<(u32, Arc<EpochOrder>)>>,
    /// A stage thread's failure outside any sample: handed to the consumer
    /// once the stream has stopped.
    fatal: Mutex<Option<LoadError>>,
    /// The next stream item to read.
    next_read: AtomicU64,
    /// Batches whose samples are being decoded (at most `depth`).
    open: Mutex<OpenBatches>,
    /// Signalled when a batch opens (or the opening thread gives up).
    opened: Condvar,
    stop: AtomicBool,
    read: Queue<Read>,
    /// Batches whose samples are all done, to collate.
    assembled: Queue<Open>,
    collated: Queue<Collated>,
    samples: Pool<Sample>,
    buffers: Arc<Pool<Buffers>>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// `epoch`'s order for this shard.
    fn order(&self, epoch: u32) -> Arc<EpochOrder> {
        let mut orders = self.orders.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, o)) = orders.iter().find(|(e, _)| *e == epoch) {
            return Arc::clone(o);
        }
        let c = &self.config;
        let o = Arc::new(EpochOrder::new(
            &c.order,
            c.seed,
            c.shard,
            epoch,
            self.dataset.len(),
        ));
        if orders.len() >= 2 {
            orders.remove(0);
        }
        orders.push((epoch, Arc::clone(&o)));
        o
    }
}

/// A stage's thread body.
type Stage = fn(&Shared);

/// Batches of one epoch at a time (an iterator of `Result<Batch,
/// LoadError>`); [`Loader::next_epoch`] moves on to the next, whose first
/// samples are already on their way.
///
/// ```
/// use std::sync::Arc;
/// use tensorprep::train::data::recordio::RecordIoDataset;
/// use tensorprep::train::{Loader, LoaderConfig, TrainPipeline};
///
/// // im2rec's six images, torchvision's ImageNet training transform.
/// let data = Arc::new(RecordIoDataset::open("../tests/fixtures/records/folder.rec")?);
/// let plan = Arc::new(TrainPipeline::imagenet_train().compile()?);
/// let mut config = LoaderConfig::new(4, 2, 7);
/// config.epochs = Some(2);
/// let mut loader = Loader::new(data, plan, config)?;
/// for epoch in 0..2 {
///     let mut samples = 0;
///     for batch in &mut loader {
///         let batch = batch?;
///         assert_eq!(batch.epoch, epoch);
///         // N x C x H x W: batches of 4, then the epoch's last 2.
///         assert_eq!(batch.tensor().len(), batch.len() * 3 * 224 * 224);
///         samples += batch.len();
///     }
///     assert_eq!(samples, 6);
///     if epoch == 0 {
///         loader = loader.next_epoch()?;
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Loader {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    epoch: u32,
    delivered: u64,
    /// Batches handed out and not yet dropped.
    held: Arc<AtomicUsize>,
    /// Unordered: the next epoch's batches done before this one's last.
    ahead: Vec<Collated>,
    failed: bool,
}

impl fmt::Debug for Loader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loader")
            .field("epoch", &self.epoch)
            .field("delivered", &self.delivered)
            .field("batches", &self.shared.layout.batches)
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl Loader {
    /// A loader delivering epoch 0 of `dataset` through `plan`.
    pub fn new(
        dataset: Arc<dyn Dataset>,
        plan: Arc<TrainPlan>,
        config: LoaderConfig,
    ) -> Result<Loader, LoadError> {
        let fingerprint = dataset.fingerprint();
        let state = LoaderState {
            seed: config.seed,
            epoch: 0,
            batches: 0,
            global_batch: config.global_batch(),
            dataset_len: dataset.len() as u64,
            fingerprint,
        };
        Loader::start(dataset, plan, config, state, fingerprint)
    }

    /// A loader continuing at `state` (saved by [`Loader::state`]): the
    /// next batch is the one that followed, byte for byte, whatever the
    /// worker count.
    pub fn resume(
        dataset: Arc<dyn Dataset>,
        plan: Arc<TrainPlan>,
        config: LoaderConfig,
        state: LoaderState,
    ) -> Result<Loader, LoadError> {
        let fingerprint = dataset.fingerprint();
        Loader::start(dataset, plan, config, state, fingerprint)
    }

    /// [`Loader::resume`] with the dataset's fingerprint already taken (it
    /// reads the whole index, or every sample of one in memory: once per
    /// loader).
    fn start(
        dataset: Arc<dyn Dataset>,
        plan: Arc<TrainPlan>,
        config: LoaderConfig,
        state: LoaderState,
        fingerprint: u64,
    ) -> Result<Loader, LoadError> {
        state.fits(dataset.len() as u64, fingerprint, &config)?;
        config.check()?;
        let (shape, variable) = match (plan.output_shape(), config.max_shape) {
            (Some(shape), _) => (shape, false),
            (None, Some(max)) => (max, true),
            (None, None) => {
                return Err(LoadError::Config(
                    "the plan's output size varies: set max_shape (batches are then padded to their largest sample)",
                ));
            }
        };
        let sample_len = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .filter(|&n| n > 0 && n <= 1 << 31)
            .ok_or(LoadError::Config("max_shape must hold 1 to 2^31 elements"))?;
        let b = config.batch_size as u64;
        if let Order::Weighted(w) = &config.order
            && w.weights.len() != dataset.len()
        {
            return Err(LoadError::Config(
                "the sampler's weights are not one per dataset sample",
            ));
        }
        let samples = config.shard.samples(config.order.epoch_len(dataset.len())) as u64;
        let batches = if config.drop_last_batch {
            samples / b
        } else {
            samples.div_ceil(b)
        };
        let per_epoch = if config.drop_last_batch {
            batches * b
        } else {
            samples
        };
        // A state at an epoch's end continues with the next epoch's start.
        let (epoch, done) = match batches {
            0 => (state.epoch, 0),
            n => (
                u32::try_from(u64::from(state.epoch) + state.batches / n)
                    .map_err(|_| LoadError::Config("the state's epoch is past 2^32"))?,
                state.batches % n,
            ),
        };
        let layout = Layout {
            epoch,
            position: done * b,
            per_epoch,
            batches,
            batch_size: b,
            end: config.epochs,
        };
        // The batch buffers: `depth` of them, each of a batch at most (never
        // more than an epoch holds), within the limit; each grows to its
        // batch when first used, not before.
        let largest = (config.batch_size as u64).min(per_epoch.max(1));
        u64::try_from(sample_len)
            .ok()
            .and_then(|n| n.checked_mul(largest * plan.dtype().size() as u64))
            .and_then(|n| n.checked_mul(config.depth as u64))
            .filter(|&n| n <= config.buffer_limit)
            .ok_or(LoadError::Config(
                "the batch buffers (depth x batch size x sample bytes) exceed buffer_limit: \
                 lower depth or batch_size, or raise buffer_limit",
            ))?;
        // Read samples in flight: the read queue's, one per read and per
        // decode thread.
        let reading = config.prefetch + config.read_workers + config.workers;
        let buffers = Arc::new(Pool::new(config.depth));
        for _ in 0..config.depth {
            let tensor = Tensor::try_zeros(plan.dtype(), 0)
                .map_err(|_| LoadError::Config("no memory for the batch buffers"))?;
            buffers.put(Buffers {
                tensor,
                labels: Vec::with_capacity(config.batch_size),
                indices: Vec::with_capacity(config.batch_size),
                shapes: Vec::with_capacity(config.batch_size),
                shape: [0, shape[0], shape[1], shape[2]],
                layout: plan.layout(),
                len: 0,
                skipped: 0,
            });
        }
        let samples = Pool::new(reading);
        (0..reading).for_each(|_| samples.put(Sample::default()));
        let shared = Arc::new(Shared {
            dataset,
            plan,
            config: config.clone(),
            sample_len,
            shape,
            variable,
            fingerprint,
            layout,
            orders: Mutex::new(Vec::with_capacity(2)),
            fatal: Mutex::new(None),
            next_read: AtomicU64::new(0),
            open: Mutex::new(OpenBatches {
                list: Vec::with_capacity(config.depth),
                next: 0,
                opening: false,
            }),
            opened: Condvar::new(),
            stop: AtomicBool::new(false),
            read: Queue::new(config.prefetch, true),
            assembled: Queue::new(config.depth, config.ordered),
            collated: Queue::new(config.depth, config.ordered),
            samples,
            buffers,
        });
        let mut loader = Loader {
            shared,
            threads: Vec::new(),
            epoch,
            delivered: done,
            held: Arc::new(AtomicUsize::new(0)),
            ahead: Vec::with_capacity(config.depth),
            failed: false,
        };
        let stages: [(&str, usize, Stage); 3] = [
            ("read", config.read_workers, read_stage),
            ("decode", config.workers, decode_stage),
            ("collate", config.collate_workers, collate_stage),
        ];
        for (name, count, stage) in stages {
            for i in 0..count {
                let shared = Arc::clone(&loader.shared);
                let thread = alloc::format!("tp-{name}-{i}");
                let handle = std::thread::Builder::new()
                    .name(thread.clone())
                    .spawn(move || run_stage(&shared, stage, thread))
                    // The threads started so far are joined by the drop.
                    .map_err(|_| LoadError::Config("cannot start a worker thread"))?;
                loader.threads.push(handle);
            }
        }
        Ok(loader)
    }

    /// Where the loader is: the batches delivered so far.
    pub fn state(&self) -> LoaderState {
        LoaderState {
            seed: self.shared.config.seed,
            epoch: self.epoch,
            batches: self.delivered,
            global_batch: self.shared.config.global_batch(),
            dataset_len: self.shared.dataset.len() as u64,
            fingerprint: self.shared.fingerprint,
        }
    }

    /// Whether [`Loader::resume`] with this loader's dataset and
    /// configuration would accept `state` (checked without stopping or
    /// starting any thread): the same dataset (length and fingerprint), seed
    /// and global batch.
    pub fn check_state(&self, state: &LoaderState) -> Result<(), LoadError> {
        let s = &self.shared;
        state.fits(s.dataset.len() as u64, s.fingerprint, &s.config)
    }

    /// A handle that stops this loader from another thread: the batch being
    /// waited for, and every later one, is `None` (the iteration ends); the
    /// threads finish the samples they are on and are joined when the
    /// loader is dropped.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tensorprep::train::data::recordio::RecordIoDataset;
    /// use tensorprep::train::{Loader, LoaderConfig, TrainPipeline};
    ///
    /// let data = Arc::new(RecordIoDataset::open("../tests/fixtures/records/folder.rec")?);
    /// let plan = Arc::new(TrainPipeline::imagenet_train().compile()?);
    /// let mut loader = Loader::new(data, plan, LoaderConfig::new(2, 1, 0))?;
    /// let stopper = loader.stopper();
    /// std::thread::spawn(move || stopper.stop()).join().unwrap();
    /// assert!(loader.next().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.shared))
    }

    /// Batches in an epoch (for this shard).
    pub fn batches(&self) -> u64 {
        self.shared.layout.batches
    }

    /// The epoch being delivered.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// What waits between the stages: read samples, batches done and not
    /// collated, collated batches not taken: where the stream is starved
    /// or backed up.
    pub fn occupancy(&self) -> [usize; 3] {
        let s = &self.shared;
        [
            s.read.occupancy(),
            s.assembled.occupancy(),
            s.collated.occupancy(),
        ]
    }

    /// The loader moved on to the next epoch. After a whole epoch the
    /// threads go on (its first batches are already under way); after a
    /// partial or failed one they are restarted at the next epoch's start.
    pub fn next_epoch(mut self) -> Result<Loader, LoadError> {
        let epoch = self
            .epoch
            .checked_add(1)
            .ok_or(LoadError::Config("no epoch after 2^32 - 1"))?;
        if self.shared.config.epochs.is_some_and(|end| epoch >= end) {
            return Err(LoadError::Config("past the configured epochs"));
        }
        if !self.failed && self.delivered == self.shared.layout.batches {
            self.epoch = epoch;
            self.delivered = 0;
            return Ok(self);
        }
        let (dataset, plan, config) = (
            Arc::clone(&self.shared.dataset),
            Arc::clone(&self.shared.plan),
            self.shared.config.clone(),
        );
        let mut state = self.state();
        state.epoch = epoch;
        state.batches = 0;
        drop(self);
        Loader::start(dataset, plan, config, state, state.fingerprint)
    }
}

impl Loader {
    /// The next collated batch of this epoch: the next in order, or
    /// (unordered) the first done, a later epoch's set aside meanwhile.
    fn next_collated(&mut self) -> Option<Collated> {
        if let Some(at) = self.ahead.iter().position(|c| c.epoch == self.epoch) {
            return Some(self.ahead.swap_remove(at));
        }
        loop {
            let (_, c) = self.shared.collated.take()?;
            if c.epoch == self.epoch {
                debug_assert!(!self.shared.config.ordered || c.number == self.delivered);
                return Some(c);
            }
            // At most `depth` batches exist: the room is reserved.
            self.ahead.push(c);
        }
    }
}

impl Iterator for Loader {
    type Item = Result<Batch, LoadError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Past the configured epochs (a state resumed there, `Some(0)`):
        // the stream has nothing for this epoch.
        let past = self
            .shared
            .config
            .epochs
            .is_some_and(|end| self.epoch >= end);
        if self.failed || past || self.delivered >= self.shared.layout.batches {
            return None;
        }
        if self.held.load(Ordering::SeqCst) >= self.shared.config.depth {
            self.failed = true;
            return Some(Err(LoadError::Config(
                "every batch buffer is held by the caller: drop batches before asking for more (or raise depth)",
            )));
        }
        let Some(c) = self.next_collated() else {
            // Stopped: by a failed stage thread (its error), or by a
            // [`Stopper`] or a drop (the end).
            self.failed = true;
            return lock(&self.shared.fatal).take().map(Err);
        };
        self.delivered += 1;
        match c.buffers {
            Ok(buffers) => {
                self.held.fetch_add(1, Ordering::SeqCst);
                Some(Ok(Batch {
                    epoch: c.epoch,
                    number: c.number,
                    buffers: Some(buffers),
                    home: Arc::clone(&self.shared.buffers),
                    held: Arc::clone(&self.held),
                }))
            }
            Err((error, buffers)) => {
                self.shared.buffers.put(buffers);
                self.failed = true;
                Some(Err(error))
            }
        }
    }
}

/// Stops a [`Loader`] from another thread ([`Loader::stopper`]).
#[derive(Clone)]
pub struct Stopper(Arc<Shared>);

impl fmt::Debug for Stopper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Stopper(..)")
    }
}

impl Stopper {
    /// Stops the loader: its iteration ends (a waiting `next()` returns
    /// `None`), its threads stop after the sample they are on.
    pub fn stop(&self) {
        self.0.shut_down();
    }
}

impl Shared {
    /// Stops every stage and wakes every waiter.
    fn shut_down(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.read.close();
        self.assembled.close();
        self.collated.close();
        self.buffers.close();
        // Threads waiting for their batch to open see the stop.
        drop(lock(&self.open));
        self.opened.notify_all();
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.shared.shut_down();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The message of a caught panic.
fn panic_message(panic: &(dyn core::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| String::from(*s))
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Runs `f`, turning a panic into [`LoadError::Panic`] for `index`.
fn guard<T>(
    s: &Shared,
    index: u64,
    f: impl FnOnce() -> Result<T, LoadError>,
) -> Result<T, LoadError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic_message(&*panic);
        let sample = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.dataset.describe(index as usize)
        }))
        .unwrap_or_else(|_| alloc::format!("sample {index}"));
        Err(LoadError::Panic {
            index,
            sample,
            message,
        })
    })
}

/// Runs a stage's body on its thread. A panic outside the per-sample
/// guards (the plumbing, a dataset's `len`) stops the stream and reaches
/// the consumer as [`LoadError::Worker`] instead of leaving it waiting.
fn run_stage(s: &Shared, stage: Stage, thread: String) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| stage(s))) {
        let message = panic_message(&*panic);
        lock(&s.fatal).get_or_insert(LoadError::Worker { thread, message });
        s.shut_down();
    }
}

/// Read: stream items in turn, each sample's bytes and labels.
fn read_stage(s: &Shared) {
    let mut order: Option<(u32, Arc<EpochOrder>)> = None;
    while !s.stopped() {
        let n = s.next_read.fetch_add(1, Ordering::SeqCst);
        let Some((epoch, position)) = s.layout.item(n) else {
            return;
        };
        if order.as_ref().is_none_or(|(e, _)| *e != epoch) {
            order = Some((epoch, s.order(epoch)));
        }
        let index = order
            .as_ref()
            .expect("fetched above")
            .1
            .index(position as usize);
        // The one item that starts an epoch (or the resumed stream) calls
        // the epoch callback; its panic fails that sample.
        let hook = match &s.config.on_epoch {
            Some(hook) if position == 0 || n == 0 => guard(s, index, || {
                (hook.0)(epoch);
                Ok(())
            }),
            _ => Ok(()),
        };
        let mut sample = s.samples.try_take().unwrap_or_default();
        let sample = match hook.and_then(|()| {
            guard(s, index, || {
                s.dataset
                    .read(index as usize, &mut sample)
                    .map_err(|error| LoadError::Read { index, error })
            })
        }) {
            Ok(()) => Ok(sample),
            Err(e) => {
                s.samples.put(sample);
                Err(e)
            }
        };
        if !s.read.put(
            n,
            Read {
                epoch,
                index,
                sample,
            },
        ) {
            return;
        }
    }
}

/// Decode + augment: each read sample through the plan, straight into its
/// slot of its batch's buffer.
fn decode_stage(s: &Shared) {
    let budget = s.config.decode_budget;
    let mut state = TrainState::with_decode_budget(budget);
    while let Some((n, read)) = s.read.take() {
        let Read {
            epoch,
            index,
            sample,
        } = read;
        let (batch, slot) = s.layout.slot(n);
        let Some(base) = s.open_batch(batch) else {
            return;
        };
        let mut label = f32::NAN;
        let done: Result<[usize; 3], LoadError> = sample.and_then(|sample| {
            label = match sample.labels.first() {
                Some(l) if l.is_finite() => *l,
                _ => {
                    s.samples.put(sample);
                    let sample = s.dataset.describe(index as usize);
                    return Err(LoadError::Label { index, sample });
                }
            };
            let key = SampleKey::new(s.config.seed, epoch, index);
            // SAFETY: `base` points at the tensor of the open batch `batch`,
            // which stays open (its buffer neither dropped nor reallocated)
            // until this sample is finished below; `slot` is this stream
            // item's alone, and `(slot + 1) * sample_len` is within the
            // tensor (`open_batch` sized it to the batch's slots); nothing else
            // refers to these elements until the batch is finished.
            let out = unsafe { base.slice(slot * s.sample_len, s.sample_len) };
            let done = guard(s, index, || {
                let shape = if s.variable {
                    s.plan.run_any_size(&mut state, key, &sample.bytes, out)
                } else {
                    s.plan
                        .run(&mut state, key, &sample.bytes, out)
                        .map(|_| s.shape)
                };
                shape.map_err(|error| LoadError::Decode {
                    index,
                    sample: s.dataset.describe(index as usize),
                    error,
                })
            });
            s.samples.put(sample);
            if matches!(done, Err(LoadError::Panic { .. })) {
                state = TrainState::with_decode_budget(budget); // its scratch may be half-written
            }
            done
        });
        if !s.finish_sample(batch, slot, index, label, done) {
            return;
        }
    }
}

/// Collate: finished batches in turn, made whole (skipped samples' holes
/// closed) and handed to the consumer.
fn collate_stage(s: &Shared) {
    // Padding's scratch: one sample, made on the first padded batch.
    let mut scratch: Option<Tensor> = None;
    while let Some((n, open)) = s.assembled.take() {
        let Open {
            epoch,
            number,
            len,
            mut buffers,
            failed,
            ..
        } = open;
        let buffers = match failed {
            Some(e) if s.config.on_error == OnError::Fail => Err((e, buffers)),
            _ => {
                buffers.close_holes(len, s.sample_len);
                let padded = if s.variable {
                    buffers.pad(s.sample_len, &mut scratch)
                } else {
                    buffers.shape = [buffers.len, s.shape[0], s.shape[1], s.shape[2]];
                    Ok(())
                };
                let mapped = padded.and_then(|()| match &s.config.per_batch {
                    None => Ok(()),
                    Some(f) => per_batch(f, epoch, number, &mut buffers),
                });
                match mapped {
                    Ok(()) => Ok(buffers),
                    Err(e) => Err((e, buffers)),
                }
            }
        };
        if !s.collated.put(
            n,
            Collated {
                epoch,
                number,
                buffers,
            },
        ) {
            return;
        }
    }
}

/// Runs a batch's [`PerBatch`] function, a panic caught as an error.
fn per_batch(f: &PerBatch, epoch: u32, number: u64, b: &mut Buffers) -> Result<(), LoadError> {
    let failed = |message| LoadError::PerBatch {
        epoch,
        number,
        message,
    };
    let mut view = BatchMut {
        epoch,
        number,
        len: b.len,
        tensor: &mut b.tensor,
        labels: &mut b.labels,
        indices: &b.indices,
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (f.0)(&mut view)))
        .map_err(|panic| failed(panic_message(&*panic)))?
        .map_err(failed)
}

impl Buffers {
    /// Pads a batch of samples of varying shapes (each at the start of its
    /// slot of `stride` elements) to its largest, zeros around each, the
    /// samples then one after the other; sets the batch's shape.
    fn pad(&mut self, stride: usize, scratch: &mut Option<Tensor>) -> Result<(), LoadError> {
        let mut max = [0usize; 3];
        for s in &self.shapes {
            for (m, d) in max.iter_mut().zip(s) {
                *m = (*m).max(*d);
            }
        }
        self.shape = [self.len, max[0], max[1], max[2]];
        let padded = max.iter().product::<usize>();
        if scratch.is_none() {
            let t = Tensor::try_zeros(self.tensor.dtype(), stride)
                .map_err(|_| LoadError::Config("no memory for padding"))?;
            *scratch = Some(t);
        }
        let scratch = scratch.as_mut().expect("made above");
        // Sample i moves from slot i to [i * padded, (i + 1) * padded),
        // which ends before slot i + 1 starts: in order, through the
        // scratch, nothing is overwritten before it is read.
        for (i, shape) in self.shapes.iter().enumerate() {
            macro_rules! each {
                ($($v:ident),*) => {
                    match (&mut self.tensor, &mut *scratch) {
                        $((Tensor::$v(t), Tensor::$v(tmp)) => {
                            pad_one(t, tmp, i * stride, i * padded, *shape, max)
                        })*
                        _ => unreachable!("the scratch has the batch's element type"),
                    }
                };
            }
            each!(F32, F16, U8, I8);
        }
        resize(&mut self.tensor, self.len * padded);
        Ok(())
    }

    /// Moves the filled samples of a batch of `len` slots together, in slot
    /// order (a failed sample's slot keeps the index `u64::MAX`), and
    /// counts the holes.
    fn close_holes(&mut self, len: usize, sample_len: usize) {
        let mut filled = 0;
        for slot in 0..len {
            if self.indices[slot] == u64::MAX {
                continue;
            }
            if filled != slot {
                let (from, to) = (slot * sample_len, filled * sample_len);
                match &mut self.tensor {
                    Tensor::F32(v) => v.copy_within(from..from + sample_len, to),
                    Tensor::F16(v) => v.copy_within(from..from + sample_len, to),
                    Tensor::U8(v) => v.copy_within(from..from + sample_len, to),
                    Tensor::I8(v) => v.copy_within(from..from + sample_len, to),
                }
                self.indices[filled] = self.indices[slot];
                self.labels[filled] = self.labels[slot];
                self.shapes[filled] = self.shapes[slot];
            }
            filled += 1;
        }
        self.indices.truncate(filled);
        self.labels.truncate(filled);
        self.shapes.truncate(filled);
        self.skipped = len - filled;
        self.len = filled;
        resize(&mut self.tensor, filled * sample_len);
    }
}

/// Sets a tensor's length to `len` elements (zeros where it grows, its
/// room kept where it shrinks); `false` when there is no memory for it.
fn resize(t: &mut Tensor, len: usize) -> bool {
    macro_rules! each {
        ($($v:ident),*) => {
            match t {
                $(Tensor::$v(v) => {
                    if len > v.len() && v.try_reserve_exact(len - v.len()).is_err() {
                        return false;
                    }
                    v.resize(len, Default::default());
                })*
            }
        };
    }
    each!(F32, F16, U8, I8);
    true
}

/// Height and width of a sample `shape` laid out as `layout`.
fn spatial(layout: crate::Layout, [a, b, c]: [usize; 3]) -> [usize; 2] {
    match layout {
        crate::Layout::Chw => [b, c],
        crate::Layout::Hwc => [a, b],
    }
}

/// Moves the sample of `shape` at `from` (its elements in a row) to `to`,
/// laid out in `max` with zeros around it, through `tmp`.
fn pad_one<T: Copy + Default>(
    t: &mut [T],
    tmp: &mut [T],
    from: usize,
    to: usize,
    shape: [usize; 3],
    max: [usize; 3],
) {
    let len = shape.iter().product::<usize>();
    tmp[..len].copy_from_slice(&t[from..from + len]);
    let padded = max.iter().product::<usize>();
    t[to..to + padded].fill(T::default());
    let row = shape[2];
    for a in 0..shape[0] {
        for b in 0..shape[1] {
            let src = (a * shape[1] + b) * row;
            let dst = to + (a * max[1] + b) * max[2];
            t[dst..dst + row].copy_from_slice(&tmp[src..src + row]);
        }
    }
}

/// The start of a batch buffer's tensor, for writing samples into their
/// slots from the decode threads.
#[derive(Clone, Copy)]
enum Base {
    F32(*mut f32),
    F16(*mut half::f16),
    U8(*mut u8),
    I8(*mut i8),
}

// SAFETY: a `Base` is only dereferenced through `Base::slice`, whose
// callers hold the open batch's exclusive claim on the slot (see there).
unsafe impl Send for Base {}

impl Base {
    fn of(t: &mut Tensor) -> Base {
        match t {
            Tensor::F32(v) => Base::F32(v.as_mut_ptr()),
            Tensor::F16(v) => Base::F16(v.as_mut_ptr()),
            Tensor::U8(v) => Base::U8(v.as_mut_ptr()),
            Tensor::I8(v) => Base::I8(v.as_mut_ptr()),
        }
    }

    /// Elements `at..at + len` of the tensor.
    ///
    /// # Safety
    /// The tensor `self` came from is alive and not reallocated while the
    /// slice lives, `at + len` is within it, and no other reference to those
    /// elements exists meanwhile.
    unsafe fn slice<'a>(self, at: usize, len: usize) -> TensorMut<'a> {
        use core::slice::from_raw_parts_mut as part;
        // SAFETY: as the caller guarantees.
        unsafe {
            match self {
                Base::F32(p) => TensorMut::F32(part(p.add(at), len)),
                Base::F16(p) => TensorMut::F16(part(p.add(at), len)),
                Base::U8(p) => TensorMut::U8(part(p.add(at), len)),
                Base::I8(p) => TensorMut::I8(part(p.add(at), len)),
            }
        }
    }
}

/// The batches being filled, and the next stream batch to open.
struct OpenBatches {
    list: Vec<Open>,
    next: u64,
    /// A thread is waiting for a buffer to open `next`.
    opening: bool,
}

/// A batch whose samples are being decoded into its buffer.
struct Open {
    /// The stream batch number.
    batch: u64,
    epoch: u32,
    number: u64,
    /// Samples (slots) in the batch.
    len: usize,
    /// Slots not finished yet.
    remaining: usize,
    buffers: Buffers,
    base: Base,
    /// The first failed sample's error.
    failed: Option<LoadError>,
}

impl Shared {
    /// The slot base of stream batch `batch`, opening the batches up to it
    /// if they are not open yet; `None` once stopped.
    ///
    /// Batches are opened in order, each with a free batch buffer, by one
    /// thread at a time (the others wait for their batch to open): so the
    /// earliest batch always gets the next free buffer. (A later batch
    /// taking the last buffer while an earlier one waits would stall the
    /// ordered collate for good; so would a thread waiting for a buffer
    /// for a batch another thread has opened meanwhile.)
    fn open_batch(&self, batch: u64) -> Option<Base> {
        let mut open = lock(&self.open);
        loop {
            if self.stopped() {
                return None;
            }
            if batch < open.next {
                // Open until its last sample is finished, and this thread
                // holds one of its samples.
                return open.list.iter().find(|o| o.batch == batch).map(|o| o.base);
            }
            if open.opening {
                open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // This thread opens the next batch: it waits for a buffer
            // outside the lock (the open batches finish meanwhile, and the
            // consumer frees their buffers).
            open.opening = true;
            drop(open);
            let buffers = self.buffers.take();
            open = lock(&self.open);
            open.opening = false;
            self.opened.notify_all();
            let mut buffers = buffers?;
            let next = open.next;
            let Some((epoch, number, len)) = self.layout.batch(next) else {
                self.buffers.put(buffers);
                return None;
            };
            buffers.labels.clear();
            buffers.labels.resize(len, f32::NAN);
            buffers.indices.clear();
            buffers.indices.resize(len, u64::MAX);
            buffers.shapes.clear();
            buffers.shapes.resize(len, [0; 3]);
            // The buffer holds this batch's slots: grown (and zeroed) only
            // where it never held as many.
            if !resize(&mut buffers.tensor, len * self.sample_len) {
                self.buffers.put(buffers);
                lock(&self.fatal).get_or_insert(LoadError::Config(
                    "no memory for a batch buffer (lower depth or batch_size)",
                ));
                drop(open);
                self.shut_down();
                return None;
            }
            let base = Base::of(&mut buffers.tensor);
            open.list.push(Open {
                batch: next,
                epoch,
                number,
                len,
                remaining: len,
                buffers,
                base,
                failed: None,
            });
            open.next += 1;
        }
    }

    /// Records slot `slot` of stream batch `batch` as finished; the last
    /// sample of a batch sends it on to collate. `false` once stopped.
    fn finish_sample(
        &self,
        batch: u64,
        slot: usize,
        index: u64,
        label: f32,
        done: Result<[usize; 3], LoadError>,
    ) -> bool {
        let finished = {
            let mut open = lock(&self.open);
            let at = open
                .list
                .iter()
                .position(|o| o.batch == batch)
                .expect("a batch stays open until its last sample finishes");
            let o = &mut open.list[at];
            match done {
                Ok(shape) => {
                    o.buffers.labels[slot] = label;
                    o.buffers.indices[slot] = index;
                    o.buffers.shapes[slot] = shape;
                }
                Err(e) => {
                    o.failed.get_or_insert(e);
                }
            }
            o.remaining -= 1;
            (o.remaining == 0).then(|| open.list.swap_remove(at))
        };
        finished.is_none_or(|o| self.assembled.put(batch, o))
    }
}

// Loaders move between threads (a training loop may run on any).
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Loader>();
    assert_send::<Batch>();
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The slot writer: decode threads write their samples' disjoint slots
    /// of one batch buffer through [`Base`] at once, the buffer then read
    /// whole. Run under Miri (`cargo +nightly miri test -p tensorprep
    /// --features train --lib train::`): no data race, no access outside
    /// the buffer.
    #[test]
    fn threads_write_their_own_slots_of_one_buffer() {
        let (slots, len) = (4usize, 6usize);
        let mut tensor = Tensor::try_zeros(crate::DType::F32, 0).unwrap();
        assert!(resize(&mut tensor, slots * len));
        let base = Base::of(&mut tensor);
        std::thread::scope(|scope| {
            for slot in 0..slots {
                scope.spawn(move || {
                    // SAFETY: each thread writes its own slot `slot` of the
                    // tensor, which outlives the scope and is not resized
                    // or read meanwhile.
                    let out = unsafe { base.slice(slot * len, len) };
                    let TensorMut::F32(v) = out else {
                        unreachable!("a float tensor")
                    };
                    for (i, x) in v.iter_mut().enumerate() {
                        *x = (slot * 10 + i) as f32;
                    }
                });
            }
        });
        let Tensor::F32(v) = &tensor else {
            unreachable!("a float tensor")
        };
        for (k, x) in v.iter().enumerate() {
            assert_eq!(*x, ((k / len) * 10 + k % len) as f32);
        }
        // A short batch keeps its room and drops the rest.
        assert!(resize(&mut tensor, len));
        assert_eq!(tensor.len(), len);
    }

    /// Stream items and batches map onto epochs, from a resumed position,
    /// up to the last epoch.
    #[test]
    fn the_stream_divides_into_epochs() {
        // 10 samples in batches of 4: 3 batches (4, 4, 2); resumed after
        // batch 1 of epoch 2; 4 epochs in all.
        let l = Layout {
            epoch: 2,
            position: 4,
            per_epoch: 10,
            batches: 3,
            batch_size: 4,
            end: Some(4),
        };
        assert_eq!(l.item(0), Some((2, 4)));
        assert_eq!(l.item(5), Some((2, 9)));
        assert_eq!(l.item(6), Some((3, 0)));
        assert_eq!(l.item(15), Some((3, 9)));
        assert_eq!(l.item(16), None);
        assert_eq!(l.slot(0), (0, 0));
        assert_eq!(l.slot(5), (1, 1));
        assert_eq!(l.slot(6), (2, 0));
        assert_eq!(l.slot(15), (4, 1));
        assert_eq!(l.batch(0), Some((2, 1, 4)));
        assert_eq!(l.batch(1), Some((2, 2, 2)));
        assert_eq!(l.batch(2), Some((3, 0, 4)));
        assert_eq!(l.batch(4), Some((3, 2, 2)));
        assert_eq!(l.batch(5), None);
        let empty = Layout {
            per_epoch: 0,
            batches: 0,
            ..l
        };
        assert_eq!((empty.item(0), empty.batch(0)), (None, None));
    }
}
