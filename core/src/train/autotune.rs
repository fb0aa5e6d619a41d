//! Autotune (opt-in): the loader's per-stage threads, read-ahead and batch
//! buffers chosen from measurements, within a CPU and a memory budget that
//! are hard caps.
//!
//! 1. **Costs**: a few samples spread over the dataset are read and run
//!    through the plan on the calling thread: the time per sample of each
//!    stage, the encoded size, the decoded size.
//! 2. **Threads**: decode threads fill the CPU budget; read threads keep
//!    them fed (reads mostly wait on storage: at most 4 per CPU of the
//!    budget).
//! 3. **Memory**: batch buffers, read-ahead samples and each decode thread's
//!    images are counted; read-ahead, then batch buffers, then decode
//!    threads are cut until the total fits the budget, or it is an error
//!    naming the least it needs. What is left is shared out as each decode
//!    thread's [`LoaderConfig::decode_budget`], which the loader enforces
//!    (a larger image than any measured is refused, naming it, instead of
//!    overrunning the budget), as it enforces the batch buffers'
//!    [`LoaderConfig::buffer_limit`]. The read-ahead is the one estimate:
//!    the largest encoded file measured, per sample in flight.
//! 4. **Occupancy**: a short trial run samples the read queue: starved
//!    decoders (a read queue mostly empty) get another read thread, within
//!    the budget.
//!
//! The result is a plain [`LoaderConfig`]: print it ([`Tuned`]'s `Display`)
//! and pin it to skip tuning next time.

#![forbid(unsafe_code)]

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use std::time::{Duration, Instant};

use super::data::{Dataset, Sample};
use super::{LoadError, Loader, LoaderConfig, SampleKey, TrainPlan, TrainState};
use crate::Tensor;

/// Hard caps for [`autotune`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Budget {
    /// CPUs the loader may keep busy: decode threads are at most this.
    pub cpus: usize,
    /// Bytes the loader may hold (batch buffers, read-ahead, decoders'
    /// images).
    pub memory: u64,
}

impl Budget {
    /// `cpus` CPUs and `memory` bytes.
    pub fn new(cpus: usize, memory: u64) -> Budget {
        Budget { cpus, memory }
    }

    /// Every CPU of this machine and `memory` bytes.
    pub fn machine(memory: u64) -> Budget {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        Budget { cpus, memory }
    }
}

/// What [`autotune`] measured and chose.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Tuned {
    /// The configuration to run (and to pin).
    pub config: LoaderConfig,
    /// Seconds to read one sample (median of those measured).
    pub read_seconds: f64,
    /// Seconds to decode and augment one sample (median).
    pub decode_seconds: f64,
    /// The loader's memory by the estimate the budget was checked with.
    pub memory: u64,
    /// The budget.
    pub budget: Budget,
}

impl fmt::Display for Tuned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(
            f,
            "--workers {} --read-workers {} --collate-workers {} --prefetch {} --depth {} \
             --decode-budget {} (per sample: read {:.3} ms, decode + augment {:.3} ms; memory at most {} of {} MB: \
             batch buffers and a decode budget of {} MB per worker enforced, read-ahead \
             estimated from the files measured; CPUs {})",
            c.workers,
            c.read_workers,
            c.collate_workers,
            c.prefetch,
            c.depth,
            c.decode_budget >> 20,
            self.read_seconds * 1e3,
            self.decode_seconds * 1e3,
            self.memory.div_ceil(1 << 20),
            self.budget.memory >> 20,
            c.decode_budget >> 20,
            self.budget.cpus,
        )
    }
}

/// Per-sample costs measured on the calling thread.
struct Costs {
    read: f64,
    decode: f64,
    /// Largest encoded sample seen, bytes.
    encoded: u64,
    /// What the largest image seen is counted to need
    /// ([`TrainState::BYTES_PER_PIXEL`] per pixel).
    decoded: u64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Runs a few samples spread over `dataset` through `plan` (whose output
/// holds `sample_len` elements) on this thread.
fn measure(
    dataset: &dyn Dataset,
    plan: &TrainPlan,
    seed: u64,
    sample_len: usize,
) -> Result<Costs, LoadError> {
    let len = dataset.len();
    let count = len.min(16);
    let mut out = Tensor::try_zeros(plan.dtype(), sample_len)
        .map_err(|_| LoadError::OutOfMemory("a sample"))?;
    let (mut reads, mut decodes) = (Vec::new(), Vec::new());
    let (mut encoded, mut decoded) = (0u64, 0u64);
    let mut state = TrainState::new();
    let mut sample = Sample::default();
    for k in 0..count {
        let index = (k * len / count) as u64;
        let t = Instant::now();
        dataset
            .read(index as usize, &mut sample)
            .map_err(|error| LoadError::Read { index, error })?;
        reads.push(t.elapsed().as_secs_f64());
        encoded = encoded.max(sample.bytes.len() as u64);
        let t = Instant::now();
        let key = SampleKey::new(seed, 0, index);
        let geometry = sample
            .input()
            .and_then(|input| plan.run_input(&mut state, key, input, out.as_mut()))
            .map_err(|error| {
                LoadError::decoding(index, dataset.describe(index as usize), error, &mut state)
            })?;
        decodes.push(t.elapsed().as_secs_f64());
        let (w, h) = geometry.input;
        decoded = decoded.max(u64::from(w) * u64::from(h) * TrainState::BYTES_PER_PIXEL);
    }
    Ok(Costs {
        read: median(reads),
        decode: median(decodes),
        encoded,
        decoded,
    })
}

/// The loader's memory for `config`: batch buffers, read-ahead samples,
/// and each decode thread's budget.
fn memory(config: &LoaderConfig, sample_bytes: u64, costs: &Costs) -> u64 {
    let batch = config.batch_size as u64 * sample_bytes;
    let reading = (config.prefetch + config.read_workers + config.workers) as u64 * costs.encoded;
    let decoding = config.workers as u64 * config.decode_budget;
    config.depth as u64 * batch + reading + decoding
}

/// A configuration for `dataset` through `plan` from `base` (its batch
/// size, order, shard and the rest are kept), tuned within `budget`.
///
/// ```
/// use std::sync::Arc;
/// use tensorprep::train::data::recordio::RecordIoDataset;
/// use tensorprep::train::{Budget, LoaderConfig, TrainPipeline, autotune};
///
/// let data = Arc::new(RecordIoDataset::open("../tests/fixtures/records/folder.rec")?);
/// let plan = Arc::new(TrainPipeline::imagenet_train().compile()?);
/// let tuned = autotune(data, plan, LoaderConfig::new(4, 1, 7), Budget::new(2, 256 << 20))?;
/// assert!(tuned.config.workers <= 2 && tuned.memory <= 256 << 20);
/// println!("{tuned}"); // the flags to pin it with
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn autotune(
    dataset: Arc<dyn Dataset>,
    plan: Arc<TrainPlan>,
    base: LoaderConfig,
    budget: Budget,
) -> Result<Tuned, LoadError> {
    if budget.cpus == 0 || budget.cpus > 1024 {
        return Err(LoadError::Config(
            "autotune: the CPU budget must be 1 to 1024",
        ));
    }
    if dataset.is_empty() {
        return Err(LoadError::Config("autotune: the dataset is empty"));
    }
    let shape = plan.output_shape().ok_or(LoadError::Config(
        "batches need a plan whose output size is fixed",
    ))?;
    let sample_len = shape.iter().product::<usize>();
    let costs = measure(dataset.as_ref(), &plan, base.seed, sample_len)?;
    // A batch slot's bytes: the sample's, and its labels' (4 each).
    let labels = super::loader::label_width(dataset.as_ref(), &base)? as u64;
    let sample_bytes = (sample_len * plan.dtype().size()) as u64 + 4 * labels;
    let (read, decode) = (costs.read.max(1e-9), costs.decode.max(1e-9));
    let cpus = budget.cpus;
    // Decode threads: the budget (the CPU-bound stage). Reading mostly
    // waits on storage; a reader busy on the CPU only shares it.
    let mut workers = cpus;
    let readers_for =
        |workers: usize| ((workers as f64 * read / decode).ceil() as usize).clamp(1, 4 * cpus);
    let mut config = base;
    config.workers = workers;
    config.read_workers = readers_for(workers);
    config.collate_workers = 1;
    config.prefetch = 2 * workers + config.read_workers;
    config.depth = LoaderConfig::DEFAULT_DEPTH;
    config.decode_budget = costs.decoded.max(1);
    // Cut to the memory budget: read-ahead, batch buffers, decode threads.
    while memory(&config, sample_bytes, &costs) > budget.memory {
        if config.prefetch > workers {
            config.prefetch = workers.max(1);
        } else if config.depth > 2 {
            config.depth = 2;
        } else if workers > 1 {
            workers -= 1;
            config.workers = workers;
            config.read_workers = readers_for(workers);
            config.prefetch = workers;
        } else {
            return Err(LoadError::OverBudget {
                what: "autotune: one decode thread and two batch buffers",
                needed: memory(&config, sample_bytes, &costs),
                limit_name: "the memory budget",
                limit: budget.memory,
            });
        }
    }
    // Occupancy: a short trial (with the decode budget it would run with);
    // starved decoders get another reader.
    for _ in 0..3 {
        let mut trial = config.clone();
        share_out(&mut trial, &budget, sample_bytes, &costs);
        if config.read_workers >= 4 * cpus || !starved(&dataset, &plan, &trial)? {
            break;
        }
        let mut more = config.clone();
        more.read_workers += 1;
        more.prefetch += 1;
        if memory(&more, sample_bytes, &costs) > budget.memory {
            break;
        }
        config = more;
    }
    share_out(&mut config, &budget, sample_bytes, &costs);
    config.buffer_limit = config.depth as u64 * config.batch_size as u64 * sample_bytes;
    Ok(Tuned {
        memory: memory(&config, sample_bytes, &costs),
        config,
        read_seconds: costs.read,
        decode_seconds: costs.decode,
        budget,
    })
}

/// Gives each decode thread what its measured images need and an equal
/// share of what the budget leaves (room for larger images than those
/// measured, enforced by the loader).
fn share_out(config: &mut LoaderConfig, budget: &Budget, sample_bytes: u64, costs: &Costs) {
    config.decode_budget = costs.decoded.max(1);
    let spare = budget
        .memory
        .saturating_sub(memory(config, sample_bytes, costs));
    config.decode_budget += spare / config.workers as u64;
}

/// Runs `config` for a few batches (at most about a second) and says
/// whether the read queue was mostly empty: decoders waiting on reads.
fn starved(
    dataset: &Arc<dyn Dataset>,
    plan: &Arc<TrainPlan>,
    config: &LoaderConfig,
) -> Result<bool, LoadError> {
    let mut trial = config.clone();
    trial.epochs = Some(1);
    let mut loader = Loader::new(Arc::clone(dataset), Arc::clone(plan), trial)?;
    let start = Instant::now();
    let (mut filled, mut samples) = (0usize, 0usize);
    // Sampled while the epoch goes on (at its end the queue empties
    // whatever the readers' pace; a dataset of a few batches says nothing).
    let enough = loader.batches().min(8).saturating_sub(1);
    let mut batches = 0;
    while batches < enough && start.elapsed() < Duration::from_secs(1) {
        match loader.next() {
            Some(batch) => drop(batch?),
            None => break,
        }
        batches += 1;
        filled += loader.occupancy()[0];
        samples += 1;
    }
    // Mostly empty: under a quarter full on average, over at least 3 batches.
    Ok(samples >= 3 && filled * 4 < samples * config.prefetch)
}
