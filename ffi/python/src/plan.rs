//! `Plan`: a compiled graph run on files, bytes, numpy images and frames,
//! into new numpy arrays or the caller's, one at a time or a batch over
//! threads, without the GIL.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyList;
use tensorprep::graph::Graph;
use tensorprep::pipeline::{Geometry, Input, InputDesc, Plan, PlanState};
use tensorprep::{DType, Layout, Limits, PixelFormat, TensorMut};

use crate::arrays::{self, OutArray};
use crate::geometry::PyGeometry;
use crate::input::{self, Held, Item};
use crate::{errors, names};

/// Pixel plans kept per (format, width, height), most recent first.
const PIXEL_PLANS: usize = 16;

/// What a pixel plan is compiled for: format, width, height.
type PixelKey = (PixelFormat, u32, u32);

/// A compiled graph. Immutable and shared: any number of Python threads may
/// call one plan at once (each call takes its own scratch state).
///
/// Call it on one input: encoded bytes (JPEG, PNG, WebP; `bytes`,
/// `bytearray`, `memoryview` or a 1-D uint8 array), a path, a numpy uint8
/// image `(H, W)` / `(H, W, C)` (RGB, or the pixel format the plan was
/// compiled for, or `format=`), a PIL image (RGB, RGBA or L), or a frame's
/// planes `(Y, UV)` (NV21, or NV12) / `(Y, U, V)` (I420). It returns a new
/// numpy array, or writes into `out=` (same dtype and shape, C-contiguous)
/// and returns it.
///
/// >>> plan = tensorprep.Graph.preset("imagenet-eval").compile("jpeg")
/// >>> plan("photo.jpg").shape
/// (3, 224, 224)
/// >>> batch = plan.batch(paths, threads=4)        # (N, 3, 224, 224)
/// >>> tensor, geometry = plan.run("photo.jpg")    # and the way back
#[pyclass(frozen, module = "tensorprep", name = "Plan")]
pub(crate) struct PyPlan {
    /// The graph as given (pickling compiles it again with `options`).
    source: Graph,
    options: Options,
    graph: Graph,
    limits: Limits,
    /// The pixel format it was compiled for; `None`: encoded files.
    format: Option<PixelFormat>,
    /// The plan for encoded files (when the graph decodes).
    encoded: Option<Arc<Plan>>,
    pixels: Mutex<Vec<(PixelKey, Arc<Plan>)>>,
    states: Mutex<Vec<PlanState>>,
    dtype: DType,
    layout: Layout,
}

/// How a plan is compiled (the keyword arguments of `Graph.compile`).
#[derive(Clone)]
pub(crate) struct Options {
    pub(crate) input: String,
    pub(crate) decoder: Option<String>,
    pub(crate) exif: Option<bool>,
    pub(crate) lenient: bool,
    pub(crate) fast: crate::names::Scaling,
    pub(crate) region: bool,
    pub(crate) yuv_range: Option<String>,
    pub(crate) max_pixels: Option<u64>,
}

/// A library error from a run, with the input's position in a batch.
struct RunError {
    index: Option<usize>,
    error: PyErrLater,
}

/// An error made without the GIL, raised with it.
enum PyErrLater {
    Core(tensorprep::Error),
    Graph(tensorprep::graph::GraphError),
    Read(input::ReadFailure),
    Input(String),
}

impl RunError {
    fn into_py(self) -> PyErr {
        let e = match self.error {
            PyErrLater::Core(e) => errors::core(&e),
            PyErrLater::Graph(e) => errors::graph(&e),
            PyErrLater::Read(e) => e.into_py(),
            PyErrLater::Input(m) => errors::input(m),
        };
        match self.index {
            None => e,
            Some(i) => Python::attach(|py| {
                let message = format!("input {i}: {}", e.value(py));
                PyErr::from_type(e.get_type(py), message)
            }),
        }
    }
}

impl From<tensorprep::Error> for RunError {
    fn from(e: tensorprep::Error) -> Self {
        RunError {
            index: None,
            error: PyErrLater::Core(e),
        }
    }
}

/// An input ready to run: its plan and its output shape.
struct Ready {
    plan: Arc<Plan>,
    shape: [usize; 3],
}

impl PyPlan {
    pub(crate) fn new(source: &Graph, options: Options) -> PyResult<PyPlan> {
        let mut graph = source.clone();
        let mut limits = Limits::DEFAULT;
        if let Some(p) = options.max_pixels {
            limits.max_pixels = p;
        }
        if let Some(range) = options.yuv_range.as_deref() {
            graph.input.yuv_range = match range.to_ascii_lowercase().as_str() {
                "full" => tensorprep::color::YuvRange::Full,
                "limited" => tensorprep::color::YuvRange::Limited,
                other => {
                    return Err(errors::value(format!(
                        "unknown yuv_range `{other}` (full, limited)"
                    )));
                }
            };
        }
        let backend = names::decoder_or_default(options.decoder.as_deref())?;
        graph.pipeline.map_decode(|d| {
            d.backend = backend;
            if let Some(apply) = options.exif {
                d.orientation = if apply {
                    tensorprep::jpeg::Orientation::Apply
                } else {
                    tensorprep::jpeg::Orientation::Ignore
                };
            }
            if options.lenient {
                d.strict = false;
            }
            d.scaling = options.fast.0;
            d.region_of_interest = options.region;
        });
        let kind = options.input.to_ascii_lowercase();
        let (format, encoded) = match kind.as_str() {
            "jpeg" | "encoded" | "png" | "webp" | "image" | "file" => {
                let plan = graph
                    .compile_with_limits(InputDesc::Encoded, &limits)
                    .map_err(|e| errors::graph(&e))?;
                (None, Some(Arc::new(plan)))
            }
            name => (Some(names::pixel_format(name)?), None),
        };
        // The output's type and layout are the graph's, whatever the input.
        let (dtype, layout) = (graph.output.dtype, graph.output.layout);
        Ok(PyPlan {
            source: source.clone(),
            options,
            graph,
            limits,
            format,
            encoded,
            pixels: Mutex::new(Vec::new()),
            states: Mutex::new(Vec::new()),
            dtype,
            layout,
        })
    }

    /// Runs `f` with a scratch state from the pool (a new one if all are
    /// taken), and returns the state to it.
    fn with_state<R>(&self, f: impl FnOnce(&mut PlanState) -> R) -> R {
        let taken = self.states.lock().ok().and_then(|mut s| s.pop());
        let mut state = taken.unwrap_or_default();
        let r = f(&mut state);
        if let Ok(mut s) = self.states.lock() {
            s.push(state);
        }
        r
    }

    /// The plan for pixels of this format and size (compiled on first use).
    fn pixel_plan(&self, view: &tensorprep::ImageView<'_>) -> Result<Arc<Plan>, RunError> {
        let key = (view.format(), view.width(), view.height());
        let poisoned = || RunError {
            index: None,
            error: PyErrLater::Input("a plan's cache was poisoned by a panic".into()),
        };
        {
            let mut cache = self.pixels.lock().map_err(|_| poisoned())?;
            if let Some(at) = cache.iter().position(|(k, _)| *k == key) {
                let entry = cache.remove(at);
                let plan = Arc::clone(&entry.1);
                cache.insert(0, entry);
                return Ok(plan);
            }
        }
        let plan = self
            .graph
            .compile_with_limits(InputDesc::pixels(key.0, key.1, key.2), &self.limits)
            .map_err(|e| RunError {
                index: None,
                error: PyErrLater::Graph(e),
            })?;
        let plan = Arc::new(plan);
        let mut cache = self.pixels.lock().map_err(|_| poisoned())?;
        cache.insert(0, (key, Arc::clone(&plan)));
        cache.truncate(PIXEL_PLANS);
        Ok(plan)
    }

    /// Reads a path's file and finds the plan and output shape (no GIL).
    fn prepare(&self, item: &mut Item<'_>) -> Result<Ready, RunError> {
        if let Item::Path(path) = item {
            let bytes = input::read(path).map_err(|e| RunError {
                index: None,
                error: PyErrLater::Read(e),
            })?;
            *item = Item::Read(bytes);
        }
        match item {
            Item::Pixels(view) => {
                let plan = self.pixel_plan(view)?;
                let shape = plan.output_shape().ok_or_else(|| RunError {
                    index: None,
                    error: PyErrLater::Input("the plan has no output shape".into()),
                })?;
                Ok(Ready { plan, shape })
            }
            Item::Encoded(_) | Item::Read(_) => {
                let plan = self.encoded.clone().ok_or_else(|| RunError {
                    index: None,
                    error: PyErrLater::Input(format!(
                        "this plan was compiled for {} pixels, given an encoded file \
                         (compile(\"jpeg\") for files)",
                        self.format.map_or("raw", PixelFormat::name)
                    )),
                })?;
                let shape = match plan.output_shape() {
                    Some(s) => s,
                    None => {
                        let bytes = encoded(item);
                        self.with_state(|s| plan.output_shape_for(s, Input::Encoded(bytes)))?
                    }
                };
                Ok(Ready { plan, shape })
            }
            Item::Path(_) => unreachable!("read above"),
        }
    }

    /// Runs a prepared input into `out` (no GIL).
    fn execute(
        &self,
        item: &Item<'_>,
        ready: &Ready,
        out: TensorMut<'_>,
    ) -> Result<Geometry, RunError> {
        let input = match item {
            Item::Pixels(view) => Input::Pixels(*view),
            other => Input::Encoded(encoded(other)),
        };
        Ok(self.with_state(|s| ready.plan.run(s, input, out))?)
    }

    /// One input through the plan: the array and the geometry.
    fn run_one<'py>(
        &self,
        py: Python<'py>,
        obj: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        format: Option<&str>,
    ) -> PyResult<(Bound<'py, PyAny>, PyGeometry)> {
        let format = format.map(names::pixel_format).transpose()?;
        let held = input::hold(obj, format)?;
        let mut item = held.item(self.format)?;
        let ready = py
            .detach(|| self.prepare(&mut item))
            .map_err(RunError::into_py)?;
        let shape = ready.shape;
        let (array, mut target) = match out {
            Some(o) => (o.clone(), OutArray::from_out(o, self.dtype, &shape)?),
            None => OutArray::new(py, self.dtype, &shape)?,
        };
        let tensor = target.tensor()?;
        let geometry = py
            .detach(|| self.execute(&item, &ready, tensor))
            .map_err(RunError::into_py)?;
        Ok((array, PyGeometry(geometry)))
    }
}

fn encoded<'a>(item: &'a Item<'_>) -> &'a [u8] {
    match item {
        Item::Encoded(b) => b,
        Item::Read(v) => v,
        _ => &[],
    }
}

/// Runs `f(i)` for `i` in `0..n` on `threads` scoped threads (each takes the
/// next index), stopping early after a failure; the first failure by index.
fn parallel(
    threads: usize,
    n: usize,
    f: impl Fn(usize) -> Result<(), RunError> + Sync,
) -> Result<(), RunError> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let first: Mutex<Option<(usize, RunError)>> = Mutex::new(None);
    let work = || {
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            if let Err(mut e) = f(i) {
                e.index = Some(i);
                failed.store(true, Ordering::Relaxed);
                if let Ok(mut slot) = first.lock()
                    && slot.as_ref().is_none_or(|(j, _)| i < *j)
                {
                    *slot = Some((i, e));
                }
            }
        }
    };
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    match first.into_inner().ok().flatten() {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

#[pymethods]
impl PyPlan {
    /// Runs the plan on one input and returns the tensor (a new array, or
    /// `out`). `format` names the pixel format of a numpy image when it is
    /// not the plan's (`"bgr"` for OpenCV's arrays).
    #[pyo3(signature = (input, *, out=None, format=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        format: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.run_one(py, input, out, format)?.0)
    }

    /// Runs the plan on one input: `(tensor, Geometry)`, the geometry mapping
    /// model coordinates back to the image (`geometry.to_source_boxes`).
    #[pyo3(signature = (input, *, out=None, format=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        format: Option<&str>,
    ) -> PyResult<(Bound<'py, PyAny>, PyGeometry)> {
        self.run_one(py, input, out, format)
    }

    /// Runs the plan on every input, on `threads` threads (default: one per
    /// core) with the GIL released, into one `(N, ...)` array (new, or
    /// `out`). Every output must have the same shape. Files are read by the
    /// threads too. With `return_geometry=True` returns `(array, [Geometry])`.
    #[pyo3(signature = (inputs, *, threads=None, out=None, format=None, return_geometry=false))]
    fn batch<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        threads: Option<usize>,
        out: Option<&Bound<'py, PyAny>>,
        format: Option<&str>,
        return_geometry: bool,
    ) -> PyResult<Py<PyAny>> {
        let format = format.map(names::pixel_format).transpose()?;
        let held = inputs
            .try_iter()?
            .map(|i| input::hold(&i?, format))
            .collect::<PyResult<Vec<Held<'_>>>>()?;
        if held.is_empty() {
            return Err(errors::input("plan.batch: no inputs"));
        }
        let items = held
            .iter()
            .map(|h| h.item(self.format))
            .collect::<PyResult<Vec<Item<'_>>>>()?;
        let threads = match threads {
            Some(0) | None => std::thread::available_parallelism().map_or(1, |n| n.get()),
            Some(t) if t > 1024 => return Err(errors::value("threads: at most 1024")),
            Some(t) => t,
        };
        let n = items.len();
        // Read files and find each input's plan and shape.
        let slots: Vec<Mutex<(Item<'_>, Option<Ready>)>> =
            items.into_iter().map(|i| Mutex::new((i, None))).collect();
        py.detach(|| {
            parallel(threads, n, |i| {
                let mut slot = slots[i].lock().map_err(|_| RunError {
                    index: None,
                    error: PyErrLater::Input("poisoned".into()),
                })?;
                let ready = self.prepare(&mut slot.0)?;
                slot.1 = Some(ready);
                Ok(())
            })
        })
        .map_err(RunError::into_py)?;
        let slots: Vec<(Item<'_>, Ready)> = slots
            .into_iter()
            .filter_map(|m| m.into_inner().ok())
            .filter_map(|(i, r)| Some((i, r?)))
            .collect();
        let shape = slots[0].1.shape;
        if let Some((i, (_, r))) = slots
            .iter()
            .enumerate()
            .find(|(_, (_, r))| r.shape != shape)
        {
            return Err(errors::input(format!(
                "plan.batch: input 0 gives a {shape:?} tensor, input {i} a {:?} one (run \
                 inputs of varying output size one at a time)",
                r.shape
            )));
        }
        let full = [n, shape[0], shape[1], shape[2]];
        let (array, mut target) = match out {
            Some(o) => (o.clone(), OutArray::from_out(o, self.dtype, &full)?),
            None => OutArray::new(py, self.dtype, &full)?,
        };
        let per = shape.iter().product::<usize>();
        let chunks: Vec<Mutex<Option<TensorMut<'_>>>> = arrays::split(target.tensor()?, per)
            .into_iter()
            .map(|c| Mutex::new(Some(c)))
            .collect();
        let geometries: Vec<Mutex<Option<Geometry>>> = (0..n).map(|_| Mutex::new(None)).collect();
        py.detach(|| {
            parallel(threads, n, |i| {
                let chunk = chunks[i].lock().ok().and_then(|mut c| c.take());
                let Some(chunk) = chunk else {
                    return Err(RunError {
                        index: None,
                        error: PyErrLater::Input("an output slice was taken twice".into()),
                    });
                };
                let (item, ready) = &slots[i];
                let g = self.execute(item, ready, chunk)?;
                if let Ok(mut slot) = geometries[i].lock() {
                    *slot = Some(g);
                }
                Ok(())
            })
        })
        .map_err(RunError::into_py)?;
        if !return_geometry {
            return Ok(array.unbind());
        }
        let list = PyList::empty(py);
        for g in geometries {
            if let Some(g) = g.into_inner().ok().flatten() {
                list.append(PyGeometry(g))?;
            }
        }
        Ok((array, list).into_pyobject(py)?.into_any().unbind())
    }

    /// The output's shape, or `None` when it depends on the image (no final
    /// crop or resize to a fixed size).
    #[getter]
    fn output_shape(&self) -> Option<(usize, usize, usize)> {
        self.graph.output.shape.map(|s| (s[0], s[1], s[2]))
    }

    /// The output's numpy dtype name (`"float32"`, `"float16"`, `"uint8"`, `"int8"`).
    #[getter]
    fn dtype(&self) -> &'static str {
        names::dtype_name(self.dtype)
    }

    /// `"chw"` or `"hwc"`.
    #[getter]
    fn layout(&self) -> &'static str {
        match self.layout {
            Layout::Hwc => "hwc",
            _ => "chw",
        }
    }

    /// What it was compiled for: `"jpeg"` (encoded files) or a pixel format.
    #[getter]
    fn input(&self) -> &'static str {
        self.format.map_or("jpeg", PixelFormat::name)
    }

    /// The JPEG decoder it uses (`None` when it does not decode).
    #[getter]
    fn decoder(&self) -> Option<&'static str> {
        self.graph.pipeline.decoder().map(|b| b.name())
    }

    /// The graph it was compiled from (with the compile options applied).
    #[getter]
    fn graph(&self) -> crate::graph::PyGraph {
        crate::graph::PyGraph {
            graph: self.graph.clone(),
        }
    }

    /// Pickled as its graph's bytes and the compile options (a plan sent to
    /// another process, such as a PyTorch `DataLoader` worker, is compiled
    /// there again).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let o = &self.options;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("decoder", o.decoder.clone())?;
        kwargs.set_item("exif", o.exif)?;
        kwargs.set_item("lenient", o.lenient)?;
        kwargs.set_item("fast", o.fast.to_object(py)?)?;
        kwargs.set_item("region", o.region)?;
        kwargs.set_item("yuv_range", o.yuv_range.clone())?;
        kwargs.set_item("max_pixels", o.max_pixels)?;
        let graph = crate::graph::PyGraph {
            graph: self.source.clone(),
        };
        let rebuild = py.import("tensorprep")?.getattr("_compiled")?;
        (rebuild, (graph, o.input.clone(), kwargs))
            .into_pyobject(py)
            .map(|t| t.into_any())
    }

    fn __repr__(&self) -> String {
        let shape = self
            .graph
            .output
            .shape
            .map_or("per image".to_owned(), |s| format!("{s:?}"));
        format!(
            "Plan(input={:?}, decoder={:?}, output {} {} {}, {} ops)",
            self.input(),
            self.decoder().unwrap_or("none"),
            shape,
            self.dtype(),
            self.layout(),
            self.graph.pipeline.ops().len()
        )
    }
}
