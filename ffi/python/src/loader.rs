//! `tensorprep.train.Loader`: the training loader from Python. Batches come
//! out as numpy arrays or torch tensors that share the batch's buffer
//! (DLPack); the buffer returns to the loader when the array is freed.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tensorprep::train::{
    Batch, Loader, LoaderConfig, LoaderState, OnError, Order, Shard, TrainPlan, Weighted,
};
use tensorprep::{DType, Tensor};

use crate::dlpack::{self, Export};
use crate::train::{PyDataset, PyTrainPipeline};
use crate::{errors, names};

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
/// to the loader when the last one is freed).
struct Owned {
    _batch: Batch,
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
}

/// The training loader: batches of a training pipeline's tensors from a
/// dataset, made by worker threads (the GIL released), in order, the same
/// for any number of workers, resumable exactly. See `tensorprep.train.Loader`
/// (the Python class wrapping this one) for the arguments.
#[pyclass(module = "tensorprep.train", name = "_Loader")]
pub(crate) struct PyLoader {
    dataset: Arc<dyn tensorprep::train::data::Dataset>,
    plan: Arc<TrainPlan>,
    config: LoaderConfig,
    inner: Option<Loader>,
    /// The current epoch's batches are all delivered.
    exhausted: bool,
}

fn load<T>(r: Result<T, tensorprep::train::LoadError>) -> PyResult<T> {
    r.map_err(|e| errors::load(&e))
}

impl PyLoader {
    fn loader(&mut self) -> PyResult<&mut Loader> {
        self.inner
            .as_mut()
            .ok_or_else(|| errors::LoaderError::new_err("the loader is closed"))
    }

    /// Restarts the threads at `state` (the old ones are joined first).
    fn restart(&mut self, py: Python<'_>, state: LoaderState) -> PyResult<()> {
        let old = self.inner.take();
        let (dataset, plan, config) = (
            Arc::clone(&self.dataset),
            Arc::clone(&self.plan),
            self.config.clone(),
        );
        let loader = py.detach(move || {
            drop(old);
            Loader::resume(dataset, plan, config, state)
        });
        self.inner = Some(load(loader)?);
        self.exhausted = false;
        Ok(())
    }
}

#[pymethods]
impl PyLoader {
    #[new]
    #[pyo3(signature = (dataset, pipeline, batch_size, workers, seed, *, shard=None, shuffle=true,
                        weights=None, replacement=true, num_samples=None, drop_last=false,
                        skip_errors=false, prefetch=None, depth=4, read_workers=1, epochs=None,
                        max_shape=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        dataset: &PyDataset,
        pipeline: &PyTrainPipeline,
        batch_size: usize,
        workers: usize,
        seed: u64,
        shard: Option<(u32, u32, bool)>,
        shuffle: bool,
        weights: Option<Vec<f64>>,
        replacement: bool,
        num_samples: Option<usize>,
        drop_last: bool,
        skip_errors: bool,
        prefetch: Option<usize>,
        depth: usize,
        read_workers: usize,
        epochs: Option<u32>,
        max_shape: Option<[usize; 3]>,
    ) -> PyResult<PyLoader> {
        let plan = Arc::new(pipeline.pipeline.compile().map_err(|e| errors::core(&e))?);
        let mut config = LoaderConfig::new(batch_size, workers, seed);
        config.shard = match shard {
            Some((index, count, drop_last)) => {
                Shard::new(count, index, drop_last).map_err(|e| errors::value(e.to_string()))?
            }
            None => Shard::ALL,
        };
        config.order = match weights {
            Some(w) => {
                let n = num_samples.unwrap_or(w.len());
                Order::Weighted(Weighted::new(w, n, replacement).map_err(|e| errors::core(&e))?)
            }
            None if shuffle => Order::Shuffled,
            None => Order::Sequential,
        };
        config.drop_last_batch = drop_last;
        config.on_error = if skip_errors {
            OnError::Skip
        } else {
            OnError::Fail
        };
        if let Some(p) = prefetch {
            config.prefetch = p;
        }
        config.depth = depth;
        config.read_workers = read_workers;
        config.epochs = epochs;
        config.max_shape = max_shape;
        let dataset = dataset.dataset();
        let (d, p, c) = (Arc::clone(&dataset), Arc::clone(&plan), config.clone());
        let inner = load(py.detach(move || Loader::new(d, p, c)))?;
        Ok(PyLoader {
            dataset,
            plan,
            config,
            inner: Some(inner),
            exhausted: false,
        })
    }

    /// The next batch of this epoch as `(BatchTensor, labels, indices,
    /// epoch, number, pixel_mask)`, or `None` at its end (the GIL is
    /// released while waiting). `pixel_mask` is `None` unless `mask` asks for
    /// it (iteration does not: it would fill samples x height x width bytes
    /// per batch for nothing).
    #[pyo3(signature = (mask=false))]
    fn next_batch<'py>(
        &mut self,
        py: Python<'py>,
        mask: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.exhausted {
            return Ok(None);
        }
        let loader = self.loader()?;
        let next = py.detach(|| loader.next());
        let Some(batch) = next else {
            self.exhausted = true;
            return Ok(None);
        };
        let mut batch = load(batch)?;
        let len = batch.len();
        let [_, a, b, c] = batch.shape();
        let labels = batch.labels()[..len].to_vec();
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
            owner: Arc::new(Owned { _batch: batch }),
            data,
            dtype,
            shape: [len, a, b, c].iter().map(|&d| d as i64).collect(),
        };
        let out = (
            Py::new(py, tensor)?,
            numpy::PyArray1::from_vec(py, labels),
            numpy::PyArray1::from_vec(py, indices),
            epoch,
            number,
            mask,
        );
        Ok(Some(out.into_pyobject(py)?.into_any()))
    }

    /// Moves to the next epoch (its first batches are already being made
    /// when this one was read to its end).
    fn next_epoch(&mut self, py: Python<'_>) -> PyResult<()> {
        let loader = self
            .inner
            .take()
            .ok_or_else(|| errors::LoaderError::new_err("the loader is closed"))?;
        let next = py.detach(move || loader.next_epoch());
        self.inner = Some(load(next)?);
        self.exhausted = false;
        Ok(())
    }

    /// Whether this epoch's batches have all been delivered.
    #[getter]
    fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// Where the loader is: `seed`, `epoch`, `batches` (delivered in this
    /// epoch), `global_batch`, `dataset_len`, `fingerprint`.
    fn state_dict<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.loader()?.state();
        let d = PyDict::new(py);
        d.set_item("seed", s.seed)?;
        d.set_item("epoch", s.epoch)?;
        d.set_item("batches", s.batches)?;
        d.set_item("global_batch", s.global_batch)?;
        d.set_item("dataset_len", s.dataset_len)?;
        d.set_item("fingerprint", s.fingerprint)?;
        Ok(d)
    }

    /// Continues exactly where `state` (from `state_dict`) was: the next
    /// batch is the one that followed, with any worker count.
    fn load_state_dict(&mut self, py: Python<'_>, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let get = |k: &str| -> PyResult<u64> {
            state
                .get_item(k)?
                .ok_or_else(|| errors::value(format!("the state has no `{k}`")))?
                .extract()
        };
        let s = LoaderState {
            seed: get("seed")?,
            epoch: u32::try_from(get("epoch")?).map_err(|_| errors::value("epoch out of range"))?,
            batches: get("batches")?,
            global_batch: get("global_batch")?,
            dataset_len: get("dataset_len")?,
            fingerprint: get("fingerprint")?,
        };
        self.restart(py, s)
    }

    /// Restarts at the beginning of `epoch` (as `DistributedSampler.set_epoch`).
    fn set_epoch(&mut self, py: Python<'_>, epoch: u32) -> PyResult<()> {
        let mut s = self.loader()?.state();
        s.epoch = epoch;
        s.batches = 0;
        self.restart(py, s)
    }

    /// The epoch being delivered.
    #[getter]
    fn epoch(&mut self) -> PyResult<u32> {
        Ok(self.loader()?.epoch())
    }

    /// Batches per epoch (for this shard).
    fn __len__(&mut self) -> PyResult<usize> {
        Ok(self.loader()?.batches() as usize)
    }

    /// Stops and joins the worker threads (also done when the loader is
    /// garbage-collected).
    fn close(&mut self, py: Python<'_>) {
        let old = self.inner.take();
        py.detach(move || drop(old));
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
    m.add_function(wrap_pyfunction!(shard_from_env, m)?)?;
    Ok(())
}
