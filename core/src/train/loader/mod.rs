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
//!   `depth x min(batch_size, samples per epoch) x (sample bytes + 4 x label_width)`
//!   (the batch buffers, each grown when first used; refused at start past
//!   [`LoaderConfig::buffer_limit`]; a sample's bytes are its fixed shape's
//!   or [`LoaderConfig::max_shape`]'s, height and width rounded up to
//!   [`LoaderConfig::size_divisible`], a sample past `max_shape` in any
//!   dimension an error naming it)
//!   `+ workers x decode_budget` (each decode thread's working memory; an
//!   image needing more is refused from its header, naming it:
//!   [`LoaderConfig::decode_budget`])
//!   `+ (prefetch + read_workers + workers) x the largest encoded sample`
//!   (samples read ahead; each at most
//!   [`MAX_SAMPLE_BYTES`](super::data::MAX_SAMPLE_BYTES), 256 MiB)
//!   `+ the epoch's order` (8 bytes per dataset sample when shuffled; a
//!   weighted order costs its weights, however many it draws; a stream,
//!   [`IterableDataset`](super::data::IterableDataset), orders itself
//!   through its shuffle buffer of `buffer` samples per epoch being read).
//! - **Images of different sizes** (a plan without a final crop or resize,
//!   detection's `multiscale`): each at the top left of its place, padded
//!   bottom and right with zeros to the batch's largest height and width,
//!   rounded up to [`LoaderConfig::size_divisible`] (torchvision's
//!   `GeneralizedRCNNTransform` batching), in place in the batch buffer;
//!   [`Batch::image_sizes`] gives each image's own size.
//! - **Ordered**: batches hold the epoch's samples in order and come out in
//!   order ([`LoaderConfig::ordered`]` = false` hands out each batch as soon
//!   as it is done instead).
//! - **Same output for any worker count**: every draw is keyed by (seed,
//!   epoch, sample index), so tensors do not depend on who made them.
//! - **Errors**: a sample that fails (or a worker that panics) ends the epoch
//!   with a [`LoadError`] naming the sample; [`OnError::Skip`] counts and
//!   skips it instead (the batch is then short).
//! - **Exact resume**: [`Loader::state`] is (seed, epoch, batches delivered,
//!   global batch, dataset length and fingerprint, the pipeline changes'
//!   count and hash, the label width); [`Loader::resume`] continues with the
//!   very next batch, with any worker count, and with another shard count
//!   that keeps the global batch (each step covers the same stretch of the
//!   epoch's order: shard `r` of `n` takes positions `r + n * j`).
//! - **Callbacks** ([`LoaderConfig::callbacks`], MindSpore's `DSCallback`):
//!   at each epoch's and step's beginning and end, on the consumer's thread
//!   as batches are handed out (the training loop's order, the same for any
//!   worker count). A callback may change the training pipeline from the
//!   next epoch on ([`RunContext::set_pipeline`]); the changes are part of
//!   the loader's state ([`Loader::pipeline_changes`],
//!   [`Loader::resume_with_changes`]). The threads read ahead into the next
//!   epoch with the pipeline they run; when the next epoch's pipeline is
//!   another, [`Loader::next_epoch`] restarts them at its start with it
//!   (the work ahead is dropped: the stream drains at that one boundary).
//! - **Shutdown**: dropping the loader stops and joins every thread promptly
//!   (a thread finishes the sample it is on).
//!
//! The code, one concern a module: `config` (the configuration and its
//! defaults), `state` (the resume state), `callbacks` (the callbacks and
//! the pipeline changes they make), `error`, `batch` (a batch as its
//! holder sees it), `labels` (the label width and each sample's check),
//! `stream` (the stream's epoch arithmetic), `stages` (the
//! three thread bodies), `slots` (the slot writer the decode threads share),
//! `padding` (closing a batch's holes, padding varying shapes) and `queue`
//! (the bounded queues and pools between the stages); this module, the
//! [`Loader`] that starts and joins them.

mod batch;
mod callbacks;
mod config;
mod error;
mod labels;
mod padding;
mod queue;
mod slots;
mod stages;
mod state;
mod stream;
mod targets;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::JoinHandle;

pub use batch::{Batch, BatchMut};
pub use callbacks::{Callback, CallbackPoint, Callbacks, PipelineChange, RunContext};
pub use config::{LoaderConfig, OnError, PerBatch};
pub use error::{LoadError, NextEpochError};
pub use state::LoaderState;
pub use targets::{FlatBoxes, PaddedBoxes, RaggedBoxes};

/// The label width a loader of a dataset runs with (autotune counts it).
pub(crate) use labels::width as label_width;

use super::data::{Dataset, ReadEpoch, Sample};
use super::sampler::EpochOrder;
use super::{Order, TrainPlan};
use crate::Tensor;
use batch::BatchBuffer;
use callbacks::{CallbackPoint as At, Schedule};
use queue::{Pool, Queue, lock};
use slots::{Open, OpenBatches};
use stages::{Collated, Read, Stage, collate_stage, decode_stage, read_stage, run_stage};
use stream::Stream;

/// What the stages share.
struct Shared {
    dataset: Arc<dyn Dataset>,
    /// The plan the threads run (the first epoch's; a later epoch with
    /// another restarts them).
    plan: Arc<TrainPlan>,
    config: LoaderConfig,
    /// Elements per batch slot: the sample shape's, or `max_shape`'s, each
    /// with its height and width rounded up to `size_divisible`.
    sample_len: usize,
    /// Elements a sample is run into (at the start of its slot): the
    /// fixed output's, or the whole slot for a varying one.
    run_len: usize,
    /// The sample shape, or `max_shape` (not rounded).
    shape: [usize; 3],
    /// The plan's output size varies (each sample's shape is its own,
    /// within `shape`).
    variable: bool,
    /// Batches are padded: the output size varies, or a fixed one is
    /// rounded up to [`LoaderConfig::size_divisible`].
    padded: bool,
    /// Labels per sample (fixed before the threads start).
    label_width: usize,
    /// The dataset's fingerprint (computed once).
    fingerprint: u64,
    /// How the stream divides into epochs and batches.
    stream: Stream,
    /// This start's number among all loaders' ([`ReadEpoch::run`]).
    run: u64,
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
    buffers: Arc<Pool<BatchBuffer>>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The loader's pass over `epoch` ([`Dataset::read_in`]).
    fn pass(&self, epoch: u32) -> ReadEpoch {
        let c = &self.config;
        let first = if epoch == self.stream.epoch {
            self.stream.position
        } else {
            0
        };
        let shuffle = c.order == Order::Shuffled;
        ReadEpoch::new(
            c.seed,
            epoch,
            shuffle,
            c.shard,
            first,
            self.stream.per_epoch,
        )
        .in_run(self.run)
    }

    /// `epoch`'s order for this shard.
    fn order(&self, epoch: u32) -> Arc<EpochOrder> {
        let mut orders = self.orders.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, o)) = orders.iter().find(|(e, _)| *e == epoch) {
            return Arc::clone(o);
        }
        let c = &self.config;
        // A dataset that orders itself is read position by position.
        let order = if self.dataset.orders_itself() {
            &Order::Sequential
        } else {
            &c.order
        };
        let blocks = match order {
            Order::Blocks(_) => self.dataset.blocks(),
            _ => Vec::new(),
        };
        let o = Arc::new(EpochOrder::new(
            order,
            c.seed,
            c.shard,
            epoch,
            self.dataset.len(),
            &blocks,
        ));
        if orders.len() >= 2 {
            orders.remove(0);
        }
        orders.push((epoch, Arc::clone(&o)));
        o
    }
}

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
    /// The pipelines over the epochs.
    schedule: Schedule,
    /// The callbacks' progress in this epoch: `epoch_begin` called, a
    /// delivered step's `step_end` not yet called, `epoch_end` called.
    begun: bool,
    step_open: bool,
    ended: bool,
}

impl fmt::Debug for Loader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loader")
            .field("epoch", &self.epoch)
            .field("delivered", &self.delivered)
            .field("batches", &self.shared.stream.batches)
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
        let state = LoaderState::new(
            config.seed,
            0,
            0,
            config.global_batch(),
            dataset.len() as u64,
            fingerprint,
        );
        let schedule = Schedule::new(plan, Vec::new())?;
        Loader::start(dataset, schedule, config, state, fingerprint)
    }

    /// A loader continuing at `state` (saved by [`Loader::state`]): the
    /// next batch is the one that followed, byte for byte, whatever the
    /// worker count. A state whose loader had pipeline changes is refused
    /// ([`LoadError::Resume`]): resume it with them,
    /// [`Loader::resume_with_changes`].
    pub fn resume(
        dataset: Arc<dyn Dataset>,
        plan: Arc<TrainPlan>,
        config: LoaderConfig,
        state: LoaderState,
    ) -> Result<Loader, LoadError> {
        Loader::resume_with_changes(dataset, plan, config, state, Vec::new())
    }

    /// [`Loader::resume`] with the pipeline changes the callbacks had made
    /// ([`Loader::pipeline_changes`], saved beside the state): each epoch
    /// is augmented as it was, with any worker count. `plan` is the first
    /// pipeline's, the one the loader was made with. Changes other than
    /// the state's (by count or [`PipelineChange::hash_all`]) are refused
    /// ([`LoadError::Resume`]).
    pub fn resume_with_changes(
        dataset: Arc<dyn Dataset>,
        plan: Arc<TrainPlan>,
        config: LoaderConfig,
        state: LoaderState,
        changes: Vec<PipelineChange>,
    ) -> Result<Loader, LoadError> {
        let fingerprint = dataset.fingerprint();
        let schedule = Schedule::new(plan, changes)?;
        Loader::start(dataset, schedule, config, state, fingerprint)
    }

    /// [`Loader::resume`] with the dataset's fingerprint already taken (it
    /// reads the whole index, or every sample of one in memory: once per
    /// loader).
    fn start(
        dataset: Arc<dyn Dataset>,
        schedule: Schedule,
        config: LoaderConfig,
        state: LoaderState,
        fingerprint: u64,
    ) -> Result<Loader, LoadError> {
        let changes = &schedule.changes;
        let changes = (
            u32::try_from(changes.len()).unwrap_or(u32::MAX),
            PipelineChange::hash_all(changes),
        );
        state.fits(dataset.len() as u64, fingerprint, &config, changes)?;
        config.check()?;
        // Every pipeline of the schedule has the first one's output.
        let plan = Arc::clone(&schedule.first);
        let (shape, variable) = match (plan.output_shape(), config.max_shape) {
            (Some(shape), _) => (shape, false),
            (None, Some(max)) => (max, true),
            (None, None) => {
                return Err(LoadError::Config(
                    "the plan's output size varies: set max_shape (batches are then padded to their largest sample)",
                ));
            }
        };
        // Each slot holds the largest sample padded to `size_divisible`: a
        // batch padded in place never outgrows its buffer.
        let slot = padding::divisible(plan.layout(), shape, config.size_divisible)
            .ok_or(LoadError::Config("max_shape must hold 1 to 2^31 elements"))?;
        let sample_len = slot
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .filter(|&n| n > 0 && n <= 1 << 31)
            .ok_or(LoadError::Config("max_shape must hold 1 to 2^31 elements"))?;
        let padded = variable || slot != shape;
        let b = config.batch_size as u64;
        if dataset.orders_itself() && matches!(config.order, Order::Weighted(_)) {
            return Err(LoadError::Config(
                "the dataset orders its own samples (a stream): weights do not apply",
            ));
        }
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
                    .map_err(|_| LoadError::Resume("the state's epoch is past 2^32"))?,
                state.batches % n,
            ),
        };
        let plan = Arc::clone(schedule.plan(epoch));
        // The threads stop before an epoch known to have another plan
        // (`next_epoch` restarts them there with it) instead of reading
        // and decoding ahead into it for nothing.
        let change = schedule.next_change(epoch);
        let end = match (config.epochs, change) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let stream = Stream {
            epoch,
            position: done * b,
            per_epoch,
            batches,
            batch_size: b,
            end,
        };
        // The labels per sample the state's loader ran with are not looked
        // for again (a resume keeps the batches' shape).
        let label_width = match (config.label_width, state.label_width) {
            (None, Some(pinned)) => pinned as usize,
            _ => labels::width(&*dataset, &config)?,
        };
        // The batch buffers: `depth` of them, each of a batch at most (never
        // more than an epoch holds), within the limit; each grows to its
        // batch when first used, not before. Their labels count too.
        let largest = (config.batch_size as u64).min(per_epoch.max(1));
        let needed = (sample_len as u64)
            .saturating_mul(plan.dtype().size() as u64)
            .saturating_add((label_width as u64).saturating_mul(4))
            .saturating_mul(largest)
            .saturating_mul(config.depth as u64);
        if needed > config.buffer_limit {
            return Err(LoadError::OverBudget {
                what: "the batch buffers (depth x batch size x sample and label bytes)",
                needed,
                limit_name: "buffer_limit",
                limit: config.buffer_limit,
            });
        }
        // Read samples in flight: the read queue's, one per read and per
        // decode thread.
        let reading = config.prefetch + config.read_workers + config.workers;
        let buffers = Arc::new(Pool::new(config.depth));
        for _ in 0..config.depth {
            let tensor = Tensor::try_zeros(plan.dtype(), 0)
                .map_err(|_| LoadError::OutOfMemory("the batch buffers"))?;
            let mut labels = Vec::new();
            labels
                .try_reserve_exact(largest as usize * label_width)
                .map_err(|_| LoadError::OutOfMemory("the batch buffers' labels"))?;
            buffers.put(BatchBuffer {
                tensor,
                labels,
                label_width,
                indices: Vec::with_capacity(config.batch_size),
                shapes: Vec::with_capacity(config.batch_size),
                targets: Vec::with_capacity(config.batch_size),
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
            run_len: if variable {
                sample_len
            } else {
                shape.iter().product()
            },
            shape,
            variable,
            padded,
            label_width,
            fingerprint,
            stream,
            run: {
                static RUNS: AtomicU64 = AtomicU64::new(1);
                RUNS.fetch_add(1, Ordering::Relaxed)
            },
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
            schedule,
            // A resume in an epoch's middle continues its callbacks there.
            begun: done > 0,
            step_open: false,
            ended: false,
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
                let named = thread.clone();
                let handle = std::thread::Builder::new()
                    .name(thread.clone())
                    .spawn(move || run_stage(&shared, stage, named))
                    // The threads started so far are joined by the drop.
                    .map_err(|error| LoadError::Spawn { thread, error })?;
                loader.threads.push(handle);
            }
        }
        Ok(loader)
    }

    /// Where the loader is: the batches delivered so far.
    /// The pipeline changes' count and hash and the label width are
    /// pinned in it.
    pub fn state(&self) -> LoaderState {
        let s = &self.shared;
        let changes = &self.schedule.changes;
        let mut state = LoaderState::new(
            s.config.seed,
            self.epoch,
            self.delivered,
            s.config.global_batch(),
            s.dataset.len() as u64,
            s.fingerprint,
        );
        state.changes = u32::try_from(changes.len()).unwrap_or(u32::MAX);
        state.changes_hash = PipelineChange::hash_all(changes);
        state.label_width = u32::try_from(s.label_width).ok();
        state
    }

    /// Whether [`Loader::resume_with_changes`] with this loader's dataset,
    /// configuration and pipeline changes would accept `state` (checked
    /// without stopping or starting any thread): the same dataset (length
    /// and fingerprint), seed, global batch, pipeline changes, and the
    /// configured label width (if any) equal to the state's.
    pub fn check_state(&self, state: &LoaderState) -> Result<(), LoadError> {
        self.check_state_with(state, &self.schedule.changes)
    }

    /// [`Loader::check_state`] for a resume with the pipeline `changes`
    /// instead of this loader's.
    pub fn check_state_with(
        &self,
        state: &LoaderState,
        changes: &[PipelineChange],
    ) -> Result<(), LoadError> {
        let s = &self.shared;
        let changes = (
            u32::try_from(changes.len()).unwrap_or(u32::MAX),
            PipelineChange::hash_all(changes),
        );
        state.fits(s.dataset.len() as u64, s.fingerprint, &s.config, changes)
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

    /// The pipeline changes the callbacks made (in epoch order; at most one
    /// per epoch): keep them with [`Loader::state`] and give them to
    /// [`Loader::resume_with_changes`].
    pub fn pipeline_changes(&self) -> &[PipelineChange] {
        &self.schedule.changes
    }

    /// Batches in an epoch (for this shard).
    pub fn batches(&self) -> u64 {
        self.shared.stream.batches
    }

    /// The epoch being delivered.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Labels per sample in every batch ([`Batch::label_width`]): the
    /// configured [`LoaderConfig::label_width`], the resumed state's, or
    /// the count of the dataset's first sample that reads.
    pub fn label_width(&self) -> usize {
        self.shared.label_width
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
    /// threads go on (its first batches are already under way) unless the
    /// callbacks changed its pipeline; after a partial or failed one, or
    /// with another pipeline, they are restarted at the next epoch's start.
    /// A whole epoch's `step_end` and `epoch_end` callbacks not called yet
    /// (its end not asked for by `next()`) are called first.
    ///
    /// When it cannot move on (no epoch follows, or a callback failed) the
    /// error gives the loader back, where it was: its state can still be
    /// saved, and a callback's failure once reported, `next_epoch` again
    /// restarts the threads at the next epoch. Only a restart that fails
    /// (its threads already stopped) loses it.
    pub fn next_epoch(mut self) -> Result<Loader, NextEpochError> {
        let kept = |error, loader| NextEpochError {
            error,
            loader: Some(alloc::boxed::Box::new(loader)),
        };
        let Some(epoch) = self.epoch.checked_add(1) else {
            return Err(kept(LoadError::NoMoreEpochs { epochs: None }, self));
        };
        if let Some(end) = self.shared.config.epochs.filter(|&end| epoch >= end) {
            return Err(kept(LoadError::NoMoreEpochs { epochs: Some(end) }, self));
        }
        let whole = !self.failed && self.delivered == self.shared.stream.batches;
        if whole && let Err(e) = self.end_epoch() {
            return Err(kept(e, self));
        }
        let same_plan = Arc::ptr_eq(self.schedule.plan(epoch), &self.shared.plan);
        // The threads may have been told to stop before this epoch (a
        // change planned for it when they started, since taken back).
        let running = self.shared.stream.end.is_none_or(|end| epoch < end);
        if whole && same_plan && running {
            self.epoch = epoch;
            self.delivered = 0;
            (self.begun, self.step_open, self.ended) = (false, false, false);
            return Ok(self);
        }
        let (dataset, schedule, config) = (
            Arc::clone(&self.shared.dataset),
            self.schedule.clone(),
            self.shared.config.clone(),
        );
        // The same labels as before (pinned in the state, not looked for
        // again).
        let mut state = self.state();
        state.epoch = epoch;
        state.batches = 0;
        drop(self);
        Loader::start(dataset, schedule, config, state, state.fingerprint).map_err(|error| {
            NextEpochError {
                error,
                loader: None,
            }
        })
    }
}

impl Loader {
    /// Calls `point` of the callbacks for step `step_in_epoch` of this
    /// epoch; a failure fails the loader's epoch.
    fn call(&mut self, point: At, step_in_epoch: u64) -> Result<(), LoadError> {
        if self.shared.config.callbacks.is_empty() {
            return Ok(());
        }
        let step = u64::from(self.epoch)
            .saturating_mul(self.shared.stream.batches)
            .saturating_add(step_in_epoch);
        let shared = Arc::clone(&self.shared);
        callbacks::run(
            &shared.config.callbacks,
            &mut self.schedule,
            point,
            self.epoch,
            (step, step_in_epoch),
        )
        .inspect_err(|_| self.failed = true)
    }

    /// The last step's `step_end` and the epoch's `epoch_end`, once each.
    fn end_epoch(&mut self) -> Result<(), LoadError> {
        if self.step_open {
            self.step_open = false;
            self.call(At::StepEnd, self.delivered - 1)?;
        }
        if !self.ended {
            self.ended = true;
            self.call(At::EpochEnd, self.delivered)?;
        }
        Ok(())
    }

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
        if self.failed || past {
            return None;
        }
        if !self.begun {
            self.begun = true;
            if let Err(e) = self.call(At::EpochBegin, 0) {
                return Some(Err(e));
            }
        }
        if self.delivered >= self.shared.stream.batches {
            return self.end_epoch().err().map(Err);
        }
        if self.step_open {
            self.step_open = false;
            if let Err(e) = self.call(At::StepEnd, self.delivered - 1) {
                return Some(Err(e));
            }
        }
        if self.held.load(Ordering::SeqCst) >= self.shared.config.depth {
            self.failed = true;
            return Some(Err(LoadError::BuffersHeld {
                depth: self.shared.config.depth,
            }));
        }
        if let Err(e) = self.call(At::StepBegin, self.delivered) {
            return Some(Err(e));
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
                self.step_open = true;
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
        // A stream's reads of this run, blocked or filling, stop.
        self.dataset.end_run(self.run);
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
        let here = std::thread::current().id();
        for t in self.threads.drain(..) {
            // A loader dropped on one of its own threads (its dataset's or a
            // custom op's code held the last reference to it; in Python, a
            // collection run inside `__getitem__`): that thread cannot join
            // itself. It sees the stop once that code returns and ends; its
            // handle is let go.
            if t.thread().id() != here {
                let _ = t.join();
            }
        }
    }
}

// Loaders move between threads (a training loop may run on any).
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Loader>();
    assert_send::<Batch>();
};
