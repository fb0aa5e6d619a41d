//! The loader: batches of a training plan's tensors from a dataset, made by
//! worker threads, delivered in order, memory bounded, resumable exactly.
//!
//! - **Workers** take whole batches (the next batch number from a shared
//!   counter), read each sample, decode and augment it straight into its
//!   place in a batch buffer (no collate copy), and hand the batch on.
//! - **Bounded**: `depth` batch buffers circulate. A worker waits for a free
//!   one; a [`Batch`] handed out returns its buffer when dropped. Nothing is
//!   allocated per batch in steady state beyond the decoder's own.
//! - **Ordered**: batches come out in order (the consumer holds early ones;
//!   at most `depth` exist); [`LoaderConfig::ordered`]` = false` hands them
//!   out as they finish.
//! - **Same output for any worker count**: every draw is keyed by (seed,
//!   epoch, sample index), so batches do not depend on who made them.
//! - **Errors**: a sample that fails (or a worker that panics) ends the epoch
//!   with a [`LoadError`] naming the sample; [`OnError::Skip`] counts and
//!   skips it instead (the batch is then short).
//! - **Exact resume**: [`Loader::state`] is (seed, epoch, batches delivered,
//!   global batch, dataset length); [`Loader::resume`] continues with the
//!   very next batch, with any worker count, and with another shard count
//!   that keeps the global batch (each step covers the same stretch of the
//!   epoch's order: shard `r` of `n` takes positions `r + n * j`).
//! - **Shutdown**: dropping the loader stops and joins every worker promptly.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::Duration;

use super::data::{DataError, Dataset, Sample};
use super::{Order, SampleKey, Shard, TrainPlan, TrainState, epoch_indices};
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoaderConfig {
    /// Samples per batch (per shard).
    pub batch_size: usize,
    /// Worker threads.
    pub workers: usize,
    /// Batch buffers in circulation (the memory bound), at least `workers + 1`.
    pub depth: usize,
    /// Each epoch's order.
    pub order: Order,
    /// This process's shard.
    pub shard: Shard,
    /// Leave out a last batch shorter than `batch_size`.
    pub drop_last_batch: bool,
    /// Deliver batches in order (default) or as they are done.
    pub ordered: bool,
    /// Failing samples.
    pub on_error: OnError,
}

impl LoaderConfig {
    /// `batch_size` samples per batch, `workers` threads, shuffled by
    /// `seed`, one shard, ordered, failing on errors.
    pub fn new(batch_size: usize, workers: usize, seed: u64) -> LoaderConfig {
        LoaderConfig {
            batch_size,
            workers,
            depth: workers + 2,
            order: Order::Shuffled { seed },
            shard: Shard::ALL,
            drop_last_batch: false,
            ordered: true,
            on_error: OnError::Fail,
        }
    }

    /// Samples per step over all shards.
    fn global_batch(&self) -> u64 {
        self.batch_size as u64 * u64::from(self.shard.count.max(1))
    }

    fn seed(&self) -> u64 {
        match self.order {
            Order::Shuffled { seed } => seed,
            Order::Sequential => 0,
        }
    }
}

/// Where a loader is: enough to continue exactly (small, `Copy`; store it
/// with the model's checkpoint).
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
        /// Why.
        error: crate::Error,
    },
    /// A worker panicked on sample `index`.
    Panic {
        /// The sample's index in the dataset.
        index: u64,
        /// The panic's message.
        message: String,
    },
    /// The configuration or the resume state does not fit.
    Config(&'static str),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Read { index, error } => write!(f, "sample {index}: {error}"),
            LoadError::Decode { index, error } => write!(f, "sample {index}: {error}"),
            LoadError::Panic { index, message } => {
                write!(f, "sample {index}: a worker panicked: {message}")
            }
            LoadError::Config(what) => write!(f, "loader: {what}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// One batch: the tensors of its samples, their labels and indices. Its
/// buffer returns to the loader when it is dropped.
#[derive(Debug)]
pub struct Batch {
    /// The epoch.
    pub epoch: u32,
    /// The batch's number within the epoch (for this shard).
    pub number: u64,
    buffers: Option<Buffers>,
    home: SyncSender<Buffers>,
    held: Arc<AtomicUsize>,
}

/// A batch's storage, recycled.
#[derive(Debug)]
struct Buffers {
    tensor: Tensor,
    labels: Vec<f32>,
    indices: Vec<u64>,
    /// Samples filled (a batch with skipped samples, or the last, is short).
    len: usize,
    skipped: usize,
}

impl Batch {
    /// The batch's tensor: `len()` samples of the plan's output shape, one
    /// after the other (N x C x H x W for a CHW plan), in its element type.
    pub fn tensor(&self) -> &Tensor {
        &self.buffers().tensor
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
            // The loader may be gone: the buffer is then freed.
            let _ = self.home.try_send(b);
        }
    }
}

/// What workers share.
struct Shared {
    dataset: Arc<dyn Dataset>,
    plan: Arc<TrainPlan>,
    config: LoaderConfig,
    sample_len: usize,
    epoch: u32,
    indices: Vec<u64>,
    batches: u64,
    next: AtomicUsize,
    stop: AtomicBool,
    free: Mutex<Receiver<Buffers>>,
}

type Done = (u64, Result<Buffers, (LoadError, Buffers)>);

/// Batches of one epoch, made by worker threads (an iterator of
/// `Result<Batch, LoadError>`); the next epoch is [`Loader::next_epoch`].
///
/// ```
/// use std::sync::Arc;
/// use tensorprep::train::data::recordio::RecordIoDataset;
/// use tensorprep::train::{Loader, LoaderConfig, TrainPipeline};
///
/// // im2rec's six images, torchvision's ImageNet training transform.
/// let data = Arc::new(RecordIoDataset::open("../tests/fixtures/records/folder.rec")?);
/// let plan = Arc::new(TrainPipeline::imagenet_train().compile()?);
/// let mut samples = 0;
/// for batch in Loader::new(data, plan, LoaderConfig::new(4, 2, 7))? {
///     let batch = batch?;
///     assert_eq!(batch.tensor().len(), 4 * 3 * 224 * 224); // N x C x H x W
///     samples += batch.len();
/// }
/// assert_eq!(samples, 6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Loader {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    done: Receiver<Done>,
    home: SyncSender<Buffers>,
    /// Batches finished early, waiting for their turn (ordered mode): a
    /// ring, batch `n` in slot `n % len` (at most `depth` are ever ahead).
    waiting: Vec<Option<Result<Buffers, (LoadError, Buffers)>>>,
    delivered: u64,
    /// Batches handed out and not yet dropped.
    held: Arc<AtomicUsize>,
    depth: usize,
    failed: bool,
}

impl fmt::Debug for Loader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loader")
            .field("epoch", &self.shared.epoch)
            .field("delivered", &self.delivered)
            .field("batches", &self.shared.batches)
            .field("workers", &self.workers.len())
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
        let state = LoaderState {
            seed: config.seed(),
            epoch: 0,
            batches: 0,
            global_batch: config.global_batch(),
            dataset_len: dataset.len() as u64,
        };
        Loader::resume(dataset, plan, config, state)
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
        if state.dataset_len != dataset.len() as u64 {
            return Err(LoadError::Config(
                "the state is for a dataset of another length",
            ));
        }
        if state.seed != config.seed() {
            return Err(LoadError::Config("the state is for another seed"));
        }
        if state.global_batch != config.global_batch() {
            return Err(LoadError::Config(
                "the state is for another global batch (batch size x shard count)",
            ));
        }
        if config.batch_size == 0 || config.workers == 0 || config.workers > 1024 {
            return Err(LoadError::Config(
                "batch size and workers (1 to 1024) must be positive",
            ));
        }
        let shape = plan.output_shape().ok_or(LoadError::Config(
            "batches need a plan whose output size is fixed",
        ))?;
        let sample_len = shape.iter().product::<usize>();
        let depth = config.depth.max(config.workers + 1);
        if depth > 4096 {
            return Err(LoadError::Config("depth above 4096 batches"));
        }
        let mut indices = Vec::new();
        epoch_indices(
            config.order,
            config.shard,
            state.epoch,
            dataset.len(),
            &mut indices,
        );
        let batches = if config.drop_last_batch {
            indices.len() / config.batch_size
        } else {
            indices.len().div_ceil(config.batch_size)
        } as u64;
        let (home, free) = mpsc::sync_channel(depth);
        for _ in 0..depth {
            let tensor = Tensor::try_zeros(plan.dtype(), sample_len * config.batch_size)
                .map_err(|_| LoadError::Config("no memory for the batch buffers"))?;
            let b = Buffers {
                tensor,
                labels: Vec::with_capacity(config.batch_size),
                indices: Vec::with_capacity(config.batch_size),
                len: 0,
                skipped: 0,
            };
            home.try_send(b).expect("room for every buffer");
        }
        let shared = Arc::new(Shared {
            dataset,
            plan,
            config,
            sample_len,
            epoch: state.epoch,
            indices,
            batches,
            next: AtomicUsize::new(state.batches as usize),
            stop: AtomicBool::new(false),
            free: Mutex::new(free),
        });
        let (done_tx, done) = mpsc::sync_channel(depth);
        let mut workers = Vec::with_capacity(config.workers);
        for w in 0..config.workers {
            let shared = Arc::clone(&shared);
            let done_tx = done_tx.clone();
            let handle = std::thread::Builder::new()
                .name(alloc::format!("tensorprep-loader-{w}"))
                .spawn(move || work(&shared, &done_tx))
                .map_err(|_| LoadError::Config("cannot start a worker thread"))?;
            workers.push(handle);
        }
        let mut waiting = Vec::new();
        waiting.resize_with(depth, || None);
        Ok(Loader {
            shared,
            workers,
            done,
            home,
            waiting,
            delivered: state.batches,
            held: Arc::new(AtomicUsize::new(0)),
            depth,
            failed: false,
        })
    }

    /// Where the loader is: the batches delivered so far.
    pub fn state(&self) -> LoaderState {
        LoaderState {
            seed: self.shared.config.seed(),
            epoch: self.shared.epoch,
            batches: self.delivered,
            global_batch: self.shared.config.global_batch(),
            dataset_len: self.shared.dataset.len() as u64,
        }
    }

    /// Batches in the epoch (for this shard).
    pub fn batches(&self) -> u64 {
        self.shared.batches
    }

    /// A loader for the next epoch, its workers started (this one's joined).
    pub fn next_epoch(self) -> Result<Loader, LoadError> {
        let (dataset, plan, config) = (
            Arc::clone(&self.shared.dataset),
            Arc::clone(&self.shared.plan),
            self.shared.config,
        );
        let mut state = self.state();
        state.epoch += 1;
        state.batches = 0;
        drop(self);
        Loader::resume(dataset, plan, config, state)
    }

    fn deliver(
        &mut self,
        number: u64,
        result: Result<Buffers, (LoadError, Buffers)>,
    ) -> Result<Batch, LoadError> {
        self.delivered += 1;
        match result {
            Ok(buffers) => {
                self.held.fetch_add(1, Ordering::SeqCst);
                Ok(Batch {
                    epoch: self.shared.epoch,
                    number,
                    buffers: Some(buffers),
                    home: self.home.clone(),
                    held: Arc::clone(&self.held),
                })
            }
            Err((error, buffers)) => {
                let _ = self.home.try_send(buffers);
                self.failed = true;
                Err(error)
            }
        }
    }
}

impl Iterator for Loader {
    type Item = Result<Batch, LoadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.delivered >= self.shared.batches {
            return None;
        }
        if self.held.load(Ordering::SeqCst) >= self.depth {
            self.failed = true;
            return Some(Err(LoadError::Config(
                "every batch buffer is held by the caller: drop batches before asking for more (or raise depth)",
            )));
        }
        let ring = self.waiting.len() as u64;
        loop {
            if self.shared.config.ordered {
                let slot = (self.delivered % ring) as usize;
                if let Some(result) = self.waiting[slot].take() {
                    let number = self.delivered;
                    return Some(self.deliver(number, result));
                }
            }
            let (number, result) = self.done.recv().ok()?;
            if !self.shared.config.ordered {
                return Some(self.deliver(number, result));
            }
            self.waiting[(number % ring) as usize] = Some(result);
        }
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Workers blocked on a full result queue wake when it is drained.
        while self.done.try_recv().is_ok() {}
        for w in self.workers.drain(..) {
            // Drain again: a worker may have sent while others were joined.
            while self.done.try_recv().is_ok() {}
            let _ = w.join();
        }
    }
}

/// A worker: takes batch numbers until none is left or the loader stops.
fn work(shared: &Shared, done: &SyncSender<Done>) {
    let mut state = TrainState::new();
    let mut sample = Sample::default();
    loop {
        // A free buffer first, then a batch number: the smallest batch not
        // yet made always goes to a worker that can make it (so ordered
        // delivery never waits on a batch whose worker waits for a buffer).
        let mut buffers = loop {
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let free = shared.free.lock().unwrap_or_else(|e| e.into_inner());
            match free.recv_timeout(Duration::from_millis(5)) {
                Ok(b) => break b,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        let number = shared.next.fetch_add(1, Ordering::SeqCst) as u64;
        if number >= shared.batches || shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let result = fill(shared, number, &mut buffers, &mut state, &mut sample);
        let item = match result {
            Ok(()) => (number, Ok(buffers)),
            Err(e) => (number, Err((e, buffers))),
        };
        // Waits while the queue is full; the consumer gone ends the worker.
        let mut item = Some(item);
        loop {
            match done.try_send(item.take().expect("held")) {
                Ok(()) => break,
                Err(mpsc::TrySendError::Full(back)) => {
                    if shared.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    item = Some(back);
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(mpsc::TrySendError::Disconnected(_)) => return,
            }
        }
    }
}

/// Makes batch `number` into `b`.
fn fill(
    shared: &Shared,
    number: u64,
    b: &mut Buffers,
    state: &mut TrainState,
    sample: &mut Sample,
) -> Result<(), LoadError> {
    let size = shared.config.batch_size;
    let start = number as usize * size;
    let end = (start + size).min(shared.indices.len());
    b.labels.clear();
    b.indices.clear();
    b.len = 0;
    b.skipped = 0;
    for &index in &shared.indices[start..end] {
        // A dropped loader stops between samples, not at the batch's end.
        if shared.stop.load(Ordering::SeqCst) {
            return Err(LoadError::Config("stopped"));
        }
        let key = SampleKey::new(shared.config.seed(), shared.epoch, index);
        let at = b.len * shared.sample_len;
        let out = slice(&mut b.tensor, at, shared.sample_len);
        let one = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            shared
                .dataset
                .read(index as usize, sample)
                .map_err(|error| LoadError::Read { index, error })?;
            shared
                .plan
                .run(state, key, &sample.bytes, out)
                .map_err(|error| LoadError::Decode { index, error })?;
            Ok::<(), LoadError>(())
        }))
        .unwrap_or_else(|panic| {
            *state = TrainState::new(); // its scratch may be half-written
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| String::from(*s))
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(LoadError::Panic { index, message })
        });
        match one {
            Ok(()) => {
                b.labels
                    .push(sample.labels.first().copied().unwrap_or(f32::NAN));
                b.indices.push(index);
                b.len += 1;
            }
            Err(_) if shared.config.on_error == OnError::Skip => b.skipped += 1,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sample `len` elements from element `at` of the batch tensor.
fn slice(t: &mut Tensor, at: usize, len: usize) -> TensorMut<'_> {
    match t {
        Tensor::F32(v) => TensorMut::F32(&mut v[at..at + len]),
        Tensor::F16(v) => TensorMut::F16(&mut v[at..at + len]),
        Tensor::U8(v) => TensorMut::U8(&mut v[at..at + len]),
        Tensor::I8(v) => TensorMut::I8(&mut v[at..at + len]),
    }
}

// Loaders move between threads (a training loop may run on any).
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Loader>();
    assert_send::<Batch>();
};
