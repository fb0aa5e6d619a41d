//! `tensorprep.train.Loader`: the training loader from Python. Batches come
//! out as numpy arrays or torch tensors that share the batch's buffer
//! (DLPack); the buffer returns to the loader when the array is freed.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::{PyTraverseError, PyVisit};
use tensorprep::train::{
    Batch, Blocks, Callback, LoadError, Loader, LoaderConfig, LoaderState, OnError, Order,
    PipelineChange, RunContext, Shard, Stopper, TrainPlan, Weighted,
};
use tensorprep::{DType, Tensor};

use crate::dlpack::{self, Export};
use crate::mix::{self, PyMixup, Targets};
use crate::recipes::Recipes;
use crate::train::{PyDataset, PyTrainPipeline};
use crate::{errors, names};

/// The loader's defaults: the library's (`LoaderConfig::default()`), in
/// one place. The Python `Loader`'s signature shows
/// them (through `loader_defaults()`), and every argument left out here
/// keeps its value.
fn defaults() -> LoaderConfig {
    LoaderConfig::default()
}

/// The loader's defaults (`tensorprep::train::LoaderConfig`'s): `workers`,
/// `read_workers`, `collate_workers`, `depth`, `decode_budget`,
/// `buffer_limit` (bytes), `seed`, `fetch_ahead`; and the shard-block
/// shuffle's (`Blocks`'): `block_samples`, `block_window`.
#[pyfunction]
fn loader_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let c = defaults();
    let d = PyDict::new(py);
    d.set_item("workers", c.workers)?;
    d.set_item("read_workers", c.read_workers)?;
    d.set_item("collate_workers", c.collate_workers)?;
    d.set_item("depth", c.depth)?;
    d.set_item("decode_budget", c.decode_budget)?;
    d.set_item("buffer_limit", c.buffer_limit)?;
    d.set_item("seed", c.seed)?;
    d.set_item("fetch_ahead", c.fetch_ahead)?;
    d.set_item("block_samples", Blocks::DEFAULT_SAMPLES)?;
    d.set_item("block_window", Blocks::DEFAULT_WINDOW)?;
    Ok(d)
}

/// A batch's tensor as a DLPack producer (`numpy.from_dlpack(t)`,
/// `torch.from_dlpack(t)`): the consumer's array shares the batch's memory
/// and keeps the batch until it is freed.
#[pyclass(frozen, module = "tensorprep.train", name = "BatchTensor")]
pub(crate) struct BatchTensor {
    owner: Arc<Owned>,
    data: usize,
    dtype: DType,
    shape: Vec<i64>,
}

/// The batch, kept alive by every array made from it (its buffer goes back
/// to the loader when the last one is freed). Its targets are read through
/// it; its tensor only through the pointer the arrays were given.
struct Owned {
    batch: Batch,
}

#[pymethods]
impl BatchTensor {
    /// The DLPack capsule (DLPack 1.0 when `max_version` allows it).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = stream; // CPU memory: no stream to synchronize.
        if let Some(device) = dl_device
            && device != (dlpack::DEVICE_CPU, 0)
        {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "a batch lives in CPU memory (device (1, 0))",
            ));
        }
        if copy == Some(true) {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "BatchTensor exports without copying; copy the consumer's array instead",
            ));
        }
        let export = Export {
            data: self.data as *mut std::ffi::c_void,
            dtype: self.dtype,
            shape: self.shape.clone(),
            keep: Box::new(Arc::clone(&self.owner)),
        };
        dlpack::capsule(py, export, max_version.is_some_and(|(major, _)| major >= 1))
    }

    /// `(kDLCPU, 0)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (dlpack::DEVICE_CPU, 0)
    }

    /// The shape (N, C, H, W) or (N, H, W, C).
    #[getter]
    fn shape(&self) -> Vec<i64> {
        self.shape.clone()
    }

    /// The numpy dtype name.
    #[getter]
    fn dtype(&self) -> &'static str {
        names::dtype_name(self.dtype)
    }

    /// Each sample's target as the pipeline moved it, in sample order: a
    /// dict (`boxes` float32 (N, 4), `format`, `canvas_size` (H, W),
    /// `labels` int64 (N,), and when present `masks` uint8 (N, H, W),
    /// `semantic` uint8 (H, W), `keypoints` float32 (N, K, 3), `flip_index`,
    /// `iscrowd`, `area`, `difficult`, `image_id`, `upright`, `mask_fill`),
    /// or `None` for a sample without one.
    #[getter]
    fn targets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::targets::of_batch(py, &self.owner.batch)
    }

    /// The batch's boxes and labels collated, as numpy arrays: `"padded"`
    /// (`boxes` (B, room, 4), `labels` (B, room) padded with -1, `counts`
    /// (B,); `room` None: the batch's largest count, and a sample with more
    /// is a `DataError` naming it), `"flat"` (Ultralytics' `batch_idx`,
    /// `cls` (M,), `bboxes` (M, 4)) or `"ragged"` (`offsets` (B + 1,),
    /// `labels` (M,), `boxes` (M, 4)). Each box in its sample's format.
    /// Each image's own `(height, width)` before padding, in sample order
    /// (torchvision's `ImageList.image_sizes`): its pixels are the top left
    /// of its place in the tensor, the rest (bottom and right) padding.
    #[getter]
    fn image_sizes(&self) -> Vec<(usize, usize)> {
        self.owner
            .batch
            .image_sizes()
            .map(|[h, w]| (h, w))
            .collect()
    }

    #[pyo3(signature = (layout="padded", room=None))]
    fn boxes<'py>(
        &self,
        py: Python<'py>,
        layout: &str,
        room: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        crate::targets::boxes(py, &self.owner.batch, layout, room)
    }
}

/// The training loader: batches of a training pipeline's tensors from a
/// dataset, made by worker threads (the GIL released), in order, the same
/// for any number of workers, resumable exactly. See `tensorprep.train.Loader`
/// (the Python class wrapping this one) for the arguments.
///
/// Any Python thread may call it: a thread waiting for a batch holds the
/// running loader (its lock, taken only with the GIL released), and
/// `close` from another thread stops that wait through the loader's
/// [`Stopper`] before taking the loader to join its threads.
#[pyclass(frozen, module = "tensorprep.train", name = "_Loader")]
pub(crate) struct PyLoader {
    dataset: Arc<dyn tensorprep::train::data::Dataset>,
    plan: Arc<TrainPlan>,
    config: LoaderConfig,
    running: Mutex<Running>,
    /// Stops the running loader (replaced with it; taken by `close`).
    stopper: Mutex<Option<Stopper>>,
    /// With a `Mixup`: each mixed batch's soft targets (classes per row).
    mixed: Option<(Targets, usize)>,
    /// The exception a Python callback raised last (the loader's error's
    /// `__cause__`).
    raised: Raised,
    /// The thread inside the loader (waiting for a batch, or running its
    /// callbacks): a callback calling its own loader is refused instead of
    /// waiting for itself.
    holder: Mutex<Option<ThreadId>>,
    /// The Python callbacks (also in `config`), for the garbage collector:
    /// a callback holding its loader is a cycle it must see.
    callbacks: Vec<Arc<PyCallback>>,
    /// The Python pipelines set by callbacks or loaded, for `state_dict`.
    recipes: Arc<Recipes>,
}

/// Where a Python callback's exception waits for the loader's error.
type Raised = Arc<Mutex<Option<PyErr>>>;

/// What a loader callback is told (`tensorprep.train.RunContext`): the
/// point (`"epoch_begin"`, `"epoch_end"`, `"step_begin"`, `"step_end"`),
/// `epoch`, `step` (over the run) and `step_in_epoch`, counted from 0
/// (MindSpore's `cur_epoch_num`, `cur_step_num`, `cur_step_num_in_epoch`:
/// one more), and `set_pipeline` to change the augmentation from the next
/// epoch on.
#[pyclass(frozen, module = "tensorprep.train", name = "RunContext")]
pub(crate) struct PyRunContext {
    /// The callback's point.
    #[pyo3(get)]
    point: &'static str,
    /// The epoch (from 0).
    #[pyo3(get)]
    epoch: u32,
    /// The step over the run (from 0): epoch x batches per epoch + step_in_epoch.
    #[pyo3(get)]
    step: u64,
    /// The step in the epoch (from 0; `epoch_end`: the epoch's batch count).
    #[pyo3(get)]
    step_in_epoch: u64,
    plan: Arc<TrainPlan>,
    change: Mutex<Option<PyTrainPipeline>>,
}

#[pymethods]
impl PyRunContext {
    /// MindSpore's epoch number (from 1).
    #[getter]
    fn cur_epoch_num(&self) -> u64 {
        u64::from(self.epoch) + 1
    }

    /// MindSpore's step number over the run (from 1).
    #[getter]
    fn cur_step_num(&self) -> u64 {
        self.step + 1
    }

    /// MindSpore's step number in the epoch (from 1).
    #[getter]
    fn cur_step_num_in_epoch(&self) -> u64 {
        self.step_in_epoch + 1
    }

    /// Augment with `pipeline` from the next epoch on (every sample of epoch
    /// `epoch + 1` and later, for any worker count, and after a resume: the
    /// change is in `state_dict()`). Its output must have the loader's
    /// shape, dtype and layout, else `ValueError`. A later call in the same
    /// epoch replaces it.
    fn set_pipeline(&self, pipeline: &PyTrainPipeline) -> PyResult<()> {
        let from = self
            .epoch
            .checked_add(1)
            .ok_or_else(|| errors::value("no epoch follows 2^32 - 1"))?;
        let change = PipelineChange::new(from, pipeline.pipeline.clone())
            .map_err(|e| errors::value(tensorprep::error::report(&e)))?;
        change
            .fits(&self.plan)
            .map_err(|e| errors::value(e.to_string()))?;
        *lock(&self.change) = Some(pipeline.clone());
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "RunContext(point={:?}, epoch={}, step={}, step_in_epoch={})",
            self.point, self.epoch, self.step, self.step_in_epoch
        )
    }
}

/// A Python callback object: its methods for the four points (each
/// `name` or MindSpore's `ds_name`), called with a `RunContext`.
struct PyCallback {
    /// `epoch_begin`, `epoch_end`, `step_begin`, `step_end`.
    methods: [Option<Py<PyAny>>; 4],
    plan: Arc<TrainPlan>,
    raised: Raised,
    recipes: Arc<Recipes>,
}

/// The points' method names, in `PyCallback::methods`' order.
const POINTS: [&str; 4] = ["epoch_begin", "epoch_end", "step_begin", "step_end"];

impl PyCallback {
    fn new(
        object: &Bound<'_, PyAny>,
        plan: &Arc<TrainPlan>,
        raised: &Raised,
        recipes: &Arc<Recipes>,
    ) -> PyResult<Self> {
        let mut methods: [Option<Py<PyAny>>; 4] = Default::default();
        for (slot, name) in methods.iter_mut().zip(POINTS) {
            let plain = object.getattr_opt(name)?;
            let prefixed = object.getattr_opt(format!("ds_{name}"))?;
            if plain.is_some() && prefixed.is_some() {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "a loader callback has both {name} and ds_{name}: give one"
                )));
            }
            *slot = plain.or(prefixed).map(Bound::unbind);
        }
        if methods.iter().all(Option::is_none) {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "a loader callback needs one of epoch_begin, epoch_end, step_begin, step_end \
                 (or MindSpore's ds_ names)",
            ));
        }
        Ok(PyCallback {
            methods,
            plan: Arc::clone(plan),
            raised: Arc::clone(raised),
            recipes: Arc::clone(recipes),
        })
    }

    /// Calls method `at` with the context; its exception is kept for the
    /// loader's error, a pipeline it set is passed on.
    fn call(&self, at: usize, ctx: &mut RunContext<'_>) -> Result<(), String> {
        let Some(method) = &self.methods[at] else {
            return Ok(());
        };
        Python::attach(|py| {
            let context = PyRunContext {
                point: POINTS[at],
                epoch: ctx.epoch,
                step: ctx.step,
                step_in_epoch: ctx.step_in_epoch,
                plan: Arc::clone(&self.plan),
                change: Mutex::new(None),
            };
            let called = Py::new(py, context).and_then(|context| {
                method.call1(py, (context.clone_ref(py),))?;
                Ok(context)
            });
            let context = called.map_err(|e| {
                let message = e.to_string();
                *lock(&self.raised) = Some(e);
                message
            })?;
            let change = lock(&context.get().change).take();
            match change {
                Some(p) => {
                    self.recipes.remember(&p);
                    ctx.set_pipeline(p.pipeline).map_err(|e| e.to_string())
                }
                None => Ok(()),
            }
        })
    }
}

impl Callback for PyCallback {
    fn epoch_begin(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.call(0, ctx)
    }
    fn epoch_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.call(1, ctx)
    }
    fn step_begin(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.call(2, ctx)
    }
    fn step_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.call(3, ctx)
    }
}

/// The loader and where its epoch is.
struct Running {
    /// `None` once closed (or when a restart failed).
    loader: Option<Loader>,
    /// The current epoch is over: its batches all delivered, a batch that
    /// failed (the error ends the epoch), or the loader closed.
    exhausted: bool,
}

/// Why a call on the loader failed (turned into the exception with the GIL).
enum Failed {
    Closed,
    Load(LoadError),
}

impl From<LoadError> for Failed {
    fn from(e: LoadError) -> Failed {
        Failed::Load(e)
    }
}

fn raise(e: Failed, raised: &Raised) -> PyErr {
    match e {
        Failed::Closed => errors::LoaderError::new_err("the loader is closed"),
        Failed::Load(e @ LoadError::Callback { .. }) => {
            let error = errors::load(&e);
            // The callback's own exception, with its traceback.
            if let Some(cause) = lock(raised).take() {
                Python::attach(|py| error.set_cause(py, Some(cause)));
            }
            error
        }
        Failed::Load(e) => errors::load(&e),
    }
}

/// The loader's batch transform for `mix`, once every way it could fail
/// mid-epoch is ruled out here: a batch of one shape (a pipeline ending in
/// a fixed size; `max_shape` is then unused), float32, always an even
/// number of samples (no short batch from `skip_errors`, no odd last
/// batch), and the soft targets of the batches in circulation within
/// `buffer_limit` together with the batch buffers.
fn mix_batches(
    m: &PyMixup,
    plan: &TrainPlan,
    config: &LoaderConfig,
    dataset_len: usize,
    targets: Targets,
) -> PyResult<tensorprep::train::PerBatch> {
    let sample = plan.output_shape().ok_or_else(|| {
        errors::value("Mixup needs batches of one sample shape (a pipeline ending in a fixed size)")
    })?;
    if plan.dtype() != DType::F32 {
        return Err(errors::value(format!(
            "Mixup mixes float32 batches; the pipeline's dtype is {}",
            names::dtype_name(plan.dtype())
        )));
    }
    let batch_size = config.batch_size;
    if batch_size % 2 == 1 {
        return Err(errors::value(format!(
            "Mixup pairs sample i with sample n - 1 - i: batch_size must be even, not {batch_size}"
        )));
    }
    if config.on_error == OnError::Skip {
        return Err(errors::value(
            "Mixup needs an even number of samples per batch: skip_errors=True would leave a \
             batch one sample short for each sample skipped",
        ));
    }
    let samples = config.shard.samples(config.order.epoch_len(dataset_len));
    let last = samples % batch_size;
    if !config.drop_last_batch && last % 2 == 1 {
        return Err(errors::value(format!(
            "Mixup pairs sample i with sample n - 1 - i: the epoch's last batch would hold {last} \
             samples (odd); pass drop_last=True"
        )));
    }
    // The batch buffers and, for each, the soft targets waiting for the
    // consumer: depth x batch size x (sample bytes + 4 x num_classes).
    let per_sample = sample
        .iter()
        .fold(1u64, |n, &d| n.saturating_mul(d as u64))
        .saturating_add(m.0.num_classes as u64)
        .saturating_mul(4);
    let largest = (batch_size as u64).min(samples.max(1) as u64);
    let needed = per_sample
        .saturating_mul(largest)
        .saturating_mul(config.depth as u64);
    if needed > config.buffer_limit {
        return Err(errors::load(&LoadError::OverBudget {
            what: "the batch buffers and Mixup's soft targets (depth x batch size x (sample bytes + 4 x num_classes))",
            needed,
            limit_name: "buffer_limit",
            limit: config.buffer_limit,
        }));
    }
    let shard = (config.shard.index(), config.shard.count());
    Ok(mix::per_batch(
        m.0,
        config.seed,
        shard,
        sample,
        plan.layout(),
        targets,
    ))
}

fn load<T>(r: Result<T, LoadError>) -> PyResult<T> {
    r.map_err(|e| errors::load(&e))
}

/// `m` locked, whatever a panic left in it (the state stays consistent:
/// each field is replaced whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Running {
    fn loader(&mut self) -> Result<&mut Loader, Failed> {
        self.loader.as_mut().ok_or(Failed::Closed)
    }
}

impl PyLoader {
    /// `f` on the running loader, with the GIL released while waiting for
    /// it and while `f` runs (never hold the lock and wait for the GIL: a
    /// thread waiting for a batch holds the lock without the GIL).
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Running) -> Result<T, Failed> + Send,
    ) -> PyResult<T> {
        self.not_from_a_callback()?;
        py.detach(|| {
            let mut running = lock(&self.running);
            // The holder is this thread while `f` runs, and no one after,
            // even if `f` panics.
            struct Held<'a>(&'a Mutex<Option<ThreadId>>);
            impl Drop for Held<'_> {
                fn drop(&mut self) {
                    *lock(self.0) = None;
                }
            }
            *lock(&self.holder) = Some(std::thread::current().id());
            let _held = Held(&self.holder);
            f(&mut running)
        })
        .map_err(|e| raise(e, &self.raised))
    }

    /// Refuses a call from one of this loader's callbacks (it runs inside
    /// the loader: the call would wait for itself).
    /// From the Python code its threads run (a dataset's `__getitem__`, a
    /// `Lambda`), every call is refused: the loader may be waiting for
    /// the calling thread.
    fn not_from_a_callback(&self) -> PyResult<()> {
        crate::user_code::refuse_loader_call()?;
        if *lock(&self.holder) == Some(std::thread::current().id()) {
            return Err(errors::LoaderError::new_err(
                "a loader callback cannot call its loader (it runs inside the loader's next \
                 batch): use the RunContext it is given",
            ));
        }
        Ok(())
    }

    /// Makes `loader` the running one, at its epoch's start or middle.
    fn install(&self, running: &mut Running, loader: Loader) {
        *lock(&self.stopper) = Some(loader.stopper());
        running.loader = Some(loader);
        running.exhausted = false;
    }

    /// Restarts the threads at `state` with the pipeline `changes` (the old
    /// ones are joined first).
    fn restart(
        &self,
        running: &mut Running,
        state: LoaderState,
        changes: Vec<PipelineChange>,
    ) -> Result<(), Failed> {
        drop(running.loader.take());
        if let Some((targets, _)) = &self.mixed {
            targets.clear();
        }
        let (dataset, plan, config) = (
            Arc::clone(&self.dataset),
            Arc::clone(&self.plan),
            self.config.clone(),
        );
        let loader = Loader::resume_with_changes(dataset, plan, config, state, changes)?;
        self.install(running, loader);
        Ok(())
    }
}

impl Drop for PyLoader {
    /// Stops and joins the threads with the GIL released: a read thread of
    /// a Python dataset (`FromPython`) may be waiting for it to finish its
    /// call, and joining it while holding the GIL would never end.
    fn drop(&mut self) {
        let running = self
            .running
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(loader) = running.loader.take() {
            Python::attach(|py| py.detach(move || drop(loader)));
        }
    }
}

#[pymethods]
impl PyLoader {
    /// The callbacks' methods, each held once (by this loader's callbacks):
    /// a callback that references the loader is a cycle `gc` frees (its
    /// objects cleared, this loader dropped and its threads joined).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for callback in &self.callbacks {
            for method in callback.methods.iter().flatten() {
                visit.call(method)?;
            }
        }
        Ok(())
    }

    #[new]
    #[pyo3(signature = (dataset, pipeline, batch_size, workers=None, seed=None, *, shard=None, shuffle=true,
                        weights=None, replacement=true, num_samples=None, drop_last=false,
                        skip_errors=false, prefetch=None, depth=None, read_workers=None, epochs=None,
                        max_shape=None, decode_budget=None, buffer_limit=None, mix=None,
                        label_width=None, callbacks=None, size_divisible=1, blocks=None,
                        fetch_ahead=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        dataset: &PyDataset,
        pipeline: &PyTrainPipeline,
        batch_size: usize,
        workers: Option<usize>,
        seed: Option<u64>,
        shard: Option<(u32, u32, bool)>,
        shuffle: bool,
        weights: Option<Vec<f64>>,
        replacement: bool,
        num_samples: Option<usize>,
        drop_last: bool,
        skip_errors: bool,
        prefetch: Option<usize>,
        depth: Option<usize>,
        read_workers: Option<usize>,
        epochs: Option<u32>,
        max_shape: Option<[usize; 3]>,
        decode_budget: Option<u64>,
        buffer_limit: Option<u64>,
        mix: Option<&PyMixup>,
        label_width: Option<usize>,
        callbacks: Option<&Bound<'_, PyAny>>,
        size_divisible: usize,
        blocks: Option<(usize, usize)>,
        fetch_ahead: Option<usize>,
    ) -> PyResult<PyLoader> {
        let plan = Arc::new(pipeline.pipeline.compile().map_err(|e| errors::core(&e))?);
        // Every argument left out keeps the library's default.
        let mut config = defaults();
        config.batch_size = batch_size;
        if let Some(w) = workers {
            config.workers = w;
            // The read-ahead follows the workers unless given.
            config.prefetch = LoaderConfig::default_prefetch(w);
        }
        if let Some(s) = seed {
            config.seed = s;
        }
        config.shard = match shard {
            Some((index, count, drop_last)) => {
                Shard::new(count, index, drop_last).map_err(|e| errors::value(e.to_string()))?
            }
            None => Shard::ALL,
        };
        config.order = match (weights, blocks) {
            (Some(_), Some(_)) => {
                return Err(errors::value(
                    "weights and the shard-block shuffle are two orders: give one",
                ));
            }
            (Some(w), None) => {
                let n = num_samples.unwrap_or(w.len());
                Order::Weighted(Weighted::new(w, n, replacement).map_err(|e| errors::core(&e))?)
            }
            (None, Some((samples, window))) if shuffle => {
                Order::Blocks(Blocks::new(samples, window).map_err(|e| errors::core(&e))?)
            }
            (None, Some(_)) => {
                return Err(errors::value(
                    "the shard-block shuffle is a shuffle: give it with shuffle=True",
                ));
            }
            (None, None) if shuffle => Order::Shuffled,
            (None, None) => Order::Sequential,
        };
        if let Some(n) = fetch_ahead {
            config.fetch_ahead = n;
        }
        config.drop_last_batch = drop_last;
        config.on_error = if skip_errors {
            OnError::Skip
        } else {
            OnError::Fail
        };
        if let Some(p) = prefetch {
            config.prefetch = p;
        }
        if let Some(d) = depth {
            config.depth = d;
        }
        if let Some(r) = read_workers {
            config.read_workers = r;
        }
        config.epochs = epochs;
        config.max_shape = max_shape;
        config.size_divisible = size_divisible;
        if let Some(bytes) = decode_budget {
            config.decode_budget = bytes;
        }
        if let Some(bytes) = buffer_limit {
            config.buffer_limit = bytes;
        }
        config.label_width = label_width;
        let dataset = dataset.dataset();
        let mixed = match mix {
            Some(m) => {
                let targets = Targets::default();
                config.per_batch = Some(mix_batches(
                    m,
                    &plan,
                    &config,
                    dataset.len(),
                    targets.clone(),
                )?);
                Some((targets, m.0.num_classes))
            }
            None => None,
        };
        let raised = Raised::default();
        let recipes = Arc::new(Recipes::default());
        let mut python_callbacks = Vec::new();
        if let Some(list) = callbacks {
            for cb in list.try_iter()? {
                let cb = Arc::new(PyCallback::new(&cb?, &plan, &raised, &recipes)?);
                config.callbacks.push(Arc::clone(&cb) as Arc<dyn Callback>);
                python_callbacks.push(cb);
            }
        }
        let (d, p, c) = (Arc::clone(&dataset), Arc::clone(&plan), config.clone());
        let loader = load(py.detach(move || Loader::new(d, p, c)))?;
        let width = loader.label_width();
        if mixed.is_some() && width != 1 {
            // Dropping the loader stops and joins its threads.
            py.detach(move || drop(loader));
            return Err(errors::value(format!(
                "MixUp/CutMix mix one class index per sample: this dataset's samples have {width} \
                 labels each"
            )));
        }
        Ok(PyLoader {
            dataset,
            plan,
            config,
            stopper: Mutex::new(Some(loader.stopper())),
            mixed,
            raised,
            holder: Mutex::new(None),
            callbacks: python_callbacks,
            recipes,
            running: Mutex::new(Running {
                loader: Some(loader),
                exhausted: false,
            }),
        })
    }

    /// The next batch of this epoch as `(BatchTensor, labels, indices,
    /// epoch, number, pixel_mask)`, or `None` at its end (the GIL is
    /// released while waiting). A batch that fails raises its error and ends
    /// the epoch; `close` (from any thread) ends it too. `pixel_mask` is
    /// `None` unless `mask` asks for it (iteration does not: it would fill
    /// samples x height x width bytes per batch for nothing).
    #[pyo3(signature = (mask=false))]
    fn next_batch<'py>(&self, py: Python<'py>, mask: bool) -> PyResult<Option<Bound<'py, PyAny>>> {
        let next = self.with(py, |running| {
            if running.exhausted {
                return Ok(None);
            }
            let next = running.loader()?.next();
            if !matches!(next, Some(Ok(_))) {
                running.exhausted = true;
            }
            next.transpose().map_err(Failed::Load)
        })?;
        let Some(mut batch) = next else {
            return Ok(None);
        };
        let len = batch.len();
        let [_, a, b, c] = batch.shape();
        let labels = match &self.mixed {
            // (batch,) for one label per sample (a class index), else
            // (batch, label width).
            None => {
                let width = batch.label_width();
                let flat = numpy::PyArray1::from_vec(py, batch.labels().to_vec());
                match width {
                    1 => flat.into_any(),
                    _ => numpy::PyArrayMethods::reshape(&flat, [len, width])?.into_any(),
                }
            }
            Some((targets, classes)) => {
                let soft = targets.take(batch.epoch, batch.number).ok_or_else(|| {
                    errors::LoaderError::new_err("a mixed batch came without its soft targets")
                })?;
                let soft = numpy::PyArray1::from_vec(py, soft);
                numpy::PyArrayMethods::reshape(&soft, [len, *classes])?.into_any()
            }
        };
        let indices = batch.indices()[..len].to_vec();
        let mask = if mask {
            let [_, mh, mw] = batch.pixel_mask_shape();
            let mut m = vec![0u8; len * mh * mw];
            load(batch.pixel_mask(&mut m))?;
            let m = numpy::PyArray1::from_vec(py, m);
            Some(numpy::PyArrayMethods::reshape(&m, [len, mh, mw])?)
        } else {
            None
        };
        let dtype = self.plan.dtype();
        let data = match batch.tensor_mut() {
            Tensor::F32(v) => v.as_mut_ptr() as usize,
            Tensor::F16(v) => v.as_mut_ptr() as usize,
            Tensor::U8(v) => v.as_mut_ptr() as usize,
            Tensor::I8(v) => v.as_mut_ptr() as usize,
            _ => {
                return Err(errors::LoaderError::new_err(
                    "a batch of an unknown element type",
                ));
            }
        };
        let (epoch, number) = (batch.epoch, batch.number);
        let tensor = BatchTensor {
            owner: Arc::new(Owned { batch }),
            data,
            dtype,
            shape: [len, a, b, c].iter().map(|&d| d as i64).collect(),
        };
        let out = (
            Py::new(py, tensor)?,
            labels,
            numpy::PyArray1::from_vec(py, indices),
            epoch,
            number,
            mask,
        );
        Ok(Some(out.into_pyobject(py)?.into_any()))
    }

    /// Moves to the next epoch (its first batches are already being made
    /// when this one was read to its end; after a partial or failed epoch
    /// the threads restart at the next one's start).
    fn next_epoch(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |running| {
            let loader = running.loader.take().ok_or(Failed::Closed)?;
            match loader.next_epoch() {
                Ok(next) => {
                    self.install(running, next);
                    Ok(())
                }
                // A callback at the epoch's end failed, or no epoch
                // follows: the loader stays as it was (its state intact).
                Err(e) => {
                    if let Some(loader) = e.loader {
                        running.loader = Some(*loader);
                    }
                    Err(e.error.into())
                }
            }
        })
    }

    /// Whether this epoch is over: its batches all delivered, ended by a
    /// batch that failed, or the loader closed.
    #[getter]
    fn exhausted(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |running| Ok(running.exhausted))
    }

    /// Where the loader is: `seed`, `epoch`, `batches` (delivered in this
    /// epoch), `global_batch`, `dataset_len`, `fingerprint`, `label_width`
    /// (the labels per sample it runs with: a resume keeps them); and, once
    /// a callback changed the pipeline, `pipelines`: `[(from_epoch,
    /// Pipeline), ...]` and their `changes_hash`. Picklable.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, changes) = self.with(py, |running| {
            let loader = running.loader()?;
            Ok((loader.state(), loader.pipeline_changes().to_vec()))
        })?;
        let d = PyDict::new(py);
        d.set_item("seed", s.seed)?;
        d.set_item("epoch", s.epoch)?;
        d.set_item("batches", s.batches)?;
        d.set_item("global_batch", s.global_batch)?;
        d.set_item("dataset_len", s.dataset_len)?;
        d.set_item("fingerprint", s.fingerprint)?;
        d.set_item("label_width", s.label_width)?;
        if !changes.is_empty() {
            d.set_item("changes_hash", s.changes_hash)?;
            let list = changes
                .iter()
                .map(|c| {
                    let p = self.recipes.python(c.pipeline());
                    Ok((c.from_epoch(), Py::new(py, p)?))
                })
                .collect::<PyResult<Vec<_>>>()?;
            d.set_item("pipelines", list)?;
        }
        Ok(d)
    }

    /// Continues exactly where `state` (from `state_dict`) was: the next
    /// batch is the one that followed, with any worker count, with the
    /// state's pipelines and labels per sample. A state for another
    /// dataset, seed, global batch or label width, or whose pipelines do
    /// not match its `changes_hash`, is refused with the loader left
    /// running as it was.
    fn load_state_dict(&self, py: Python<'_>, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let get = |k: &str| -> PyResult<u64> {
            state
                .get_item(k)?
                .ok_or_else(|| errors::value(format!("the state has no `{k}`")))?
                .extract()
        };
        let mut s = LoaderState::new(
            get("seed")?,
            u32::try_from(get("epoch")?).map_err(|_| errors::value("epoch out of range"))?,
            get("batches")?,
            get("global_batch")?,
            get("dataset_len")?,
            get("fingerprint")?,
        );
        // Absent (or None) in a state of an older version: not pinned.
        s.label_width = state
            .get_item("label_width")?
            .map(|w| w.extract::<Option<u32>>())
            .transpose()?
            .flatten();
        // A state without `pipelines` (one saved before any change, or by
        // an older version) has no changes.
        let (mut changes, mut given) = (Vec::new(), Vec::new());
        if let Some(list) = state.get_item("pipelines")? {
            for item in list.try_iter()? {
                let (from, p): (u32, PyRef<'_, PyTrainPipeline>) = item?.extract()?;
                let change = PipelineChange::new(from, p.pipeline.clone())
                    .and_then(|c| c.fits(&self.plan).map(|()| c))
                    .map_err(|e| errors::value(tensorprep::error::report(&e)))?;
                changes.push(change);
                given.push(p.clone());
            }
        }
        // The state records the changes it was saved with.
        s.changes =
            u32::try_from(changes.len()).map_err(|_| errors::value("too many pipelines"))?;
        s.changes_hash = PipelineChange::hash_all(&changes);
        if let Some(hash) = state.get_item("changes_hash")?
            && hash.extract::<u64>()? != s.changes_hash
        {
            return Err(errors::load(&LoadError::Resume(
                "the state's pipelines are not the ones its changes_hash records",
            )));
        }
        self.with(py, |running| {
            running.loader()?.check_state_with(&s, &changes)?;
            self.restart(running, s, changes)
        })?;
        // Its pipelines come back from `state_dict` as they were given.
        given.iter().for_each(|p| self.recipes.remember(p));
        Ok(())
    }

    /// Restarts at the beginning of `epoch` (as `DistributedSampler.set_epoch`),
    /// with the pipeline changes and the labels per sample it runs with.
    fn set_epoch(&self, py: Python<'_>, epoch: u32) -> PyResult<()> {
        self.with(py, |running| {
            let loader = running.loader()?;
            let (mut s, changes) = (loader.state(), loader.pipeline_changes().to_vec());
            s.epoch = epoch;
            s.batches = 0;
            self.restart(running, s, changes)
        })
    }

    /// The epoch being delivered.
    #[getter]
    fn epoch(&self, py: Python<'_>) -> PyResult<u32> {
        self.with(py, |running| Ok(running.loader()?.epoch()))
    }

    /// Batches per epoch (for this shard).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |running| Ok(running.loader()?.batches() as usize))
    }

    /// Stops and joins the worker threads (also done when the loader is
    /// garbage-collected). From another thread, it ends an iteration in
    /// progress there: a wait for a batch, and every later one, gives
    /// `None` (the end of the epoch).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.not_from_a_callback()?;
        py.detach(|| {
            if let Some(stopper) = lock(&self.stopper).take() {
                stopper.stop();
            }
            // The waiting thread, if any, lets go of the loader once stopped.
            let old = {
                let mut running = lock(&self.running);
                running.exhausted = true;
                running.loader.take()
            };
            drop(old);
        });
        Ok(())
    }
}

/// `(rank, world_size)` from the launcher's environment: torchrun's `RANK`
/// and `WORLD_SIZE`, else Open MPI's, MPICH's or Horovod's; `(0, 1)` when
/// none is set. An inconsistent pair is an error naming it. `environ`: a
/// mapping to read instead of `os.environ`.
#[pyfunction]
#[pyo3(signature = (environ=None))]
fn shard_from_env(environ: Option<&Bound<'_, PyAny>>) -> PyResult<(u32, u32)> {
    let shard = match environ {
        None => Shard::from_env(false),
        Some(env) => Shard::from_vars(
            |name| {
                env.get_item(name)
                    .ok()
                    .and_then(|v| v.extract::<String>().ok())
            },
            false,
        ),
    }
    .map_err(|e| errors::value(e.to_string()))?;
    Ok((shard.index(), shard.count()))
}

/// Registers the loader classes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BatchTensor>()?;
    m.add_class::<PyLoader>()?;
    m.add_class::<PyRunContext>()?;
    m.add_function(wrap_pyfunction!(shard_from_env, m)?)?;
    m.add_function(wrap_pyfunction!(loader_defaults, m)?)?;
    Ok(())
}
