//! `Graph`: a preprocessing graph from a preset, a file, a model or an
//! importer; saved, embedded, verified, compiled into a `Plan`.

use std::io::Write;
use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use tensorprep::graph::{Graph, OnnxEmbedding};
use tensorprep::import;
use tensorprep::pipeline::Op;

use crate::plan::{Options, PyPlan};
use crate::{errors, names};

/// A preprocessing graph: the ops with every parameter explicit, what it
/// accepts, the tensor it produces, where it came from and its self-tests.
///
/// >>> g = tensorprep.Graph.preset("imagenet-eval")
/// >>> g = tensorprep.Graph.from_hugging_face("preprocessor_config.json")
/// >>> g = tensorprep.Graph.for_model("model.onnx")   # sidecar or embedded
/// >>> plan = g.compile("jpeg", decoder="libjpeg-turbo")
#[pyclass(module = "tensorprep", name = "Graph")]
#[derive(Clone)]
pub(crate) struct PyGraph {
    pub(crate) graph: Graph,
}

/// The torchvision backend's variant that the installed torchvision runs on
/// this CPU ([`import::HfBackend::for_torchvision`]), or the default where
/// torch or torchvision cannot be imported.
fn installed_torchvision_variant(py: Python<'_>) -> import::HfBackend {
    let facts = || -> PyResult<(String, String, String)> {
        let version = py
            .import("torchvision")?
            .getattr("__version__")?
            .extract()?;
        let capability = py
            .import("torch.backends.cpu")?
            .call_method0("get_cpu_capability")?
            .extract()?;
        let machine = py.import("platform")?.call_method0("machine")?.extract()?;
        Ok((version, capability, machine))
    };
    match facts() {
        Ok((version, capability, machine)) => {
            import::HfBackend::for_torchvision(&version, &capability, &machine)
        }
        Err(_) => import::HfBackend::default(),
    }
}

fn graph_result(r: Result<Graph, tensorprep::graph::GraphError>) -> PyResult<PyGraph> {
    r.map(|graph| PyGraph { graph })
        .map_err(|e| errors::graph(&e))
}

/// An importer's JSON configuration: a dict, JSON text, a file, or a
/// directory holding `file_name` (a checkpoint's folder).
fn config_text(
    config: &Bound<'_, PyAny>,
    file_name: &str,
    format: &'static str,
) -> PyResult<String> {
    let py = config.py();
    // A processor object (`to_dict`) or a timm model (`pretrained_cfg`).
    for (attribute, call) in [("to_dict", true), ("pretrained_cfg", false)] {
        if !config.is_instance_of::<PyDict>() && config.hasattr(attribute)? {
            let value = config.getattr(attribute)?;
            let dict = if call { value.call0()? } else { value };
            return config_text(&dict, file_name, format);
        }
    }
    if config.is_instance_of::<PyDict>() {
        let json = py.import("json")?;
        return json.call_method1("dumps", (config,))?.extract();
    }
    if let Ok(s) = config.cast::<PyString>() {
        let text: String = s.extract()?;
        if text.trim_start().starts_with('{') {
            return Ok(text);
        }
    }
    let path: PathBuf = config.extract().map_err(|_| {
        errors::value(format!(
            "a configuration is a dict, JSON text or a path to {file_name}; given {}",
            config.get_type()
        ))
    })?;
    let path = if path.is_dir() {
        path.join(file_name)
    } else {
        path
    };
    import::read_config(&path, format).map_err(|e| errors::graph(&e))
}

/// Writes `path` through [`tensorprep::files::write_atomically`] (a unique
/// temporary file, synced and renamed; links followed, permissions kept).
fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> std::io::Result<()>,
) -> PyResult<()> {
    tensorprep::files::write_atomically(path, fill)
        .map_err(|e| errors::io(e.kind(), format!("{}: {e}", path.display())))
}

#[pymethods]
impl PyGraph {
    /// A built-in graph: `"imagenet-eval"`, `"imagenet-eval-nhwc-u8"`,
    /// `"yolo-letterbox-640"`, or a torchvision weights name
    /// (`"ResNet50_Weights.IMAGENET1K_V2"`).
    #[staticmethod]
    fn preset(name: &str) -> PyResult<PyGraph> {
        if tensorprep::pipeline::Pipeline::preset(name).is_none()
            && import::torchvision_names().any(|n| n == name)
        {
            return graph_result(import::torchvision(name));
        }
        graph_result(Graph::preset(name))
    }

    /// The names `preset` takes (the torchvision weights names too with
    /// `torchvision=True`).
    #[staticmethod]
    #[pyo3(signature = (torchvision=false))]
    fn presets(torchvision: bool) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = tensorprep::pipeline::Pipeline::PRESETS.to_vec();
        if torchvision {
            names.extend(import::torchvision_names());
        }
        names
    }

    /// Loads a graph: a `.tpp` file's path, or its bytes. The file is
    /// checked whole (magic bytes, checksum, every parameter) first.
    #[staticmethod]
    fn load(source: &Bound<'_, PyAny>) -> PyResult<PyGraph> {
        if let Ok(bytes) = source.extract::<&[u8]>() {
            return graph_result(Graph::decode(bytes));
        }
        let path: PathBuf = source.extract()?;
        graph_result(Graph::load(path))
    }

    /// The graph of a model: its sidecar (`model.tpp` beside `model.onnx`)
    /// or the graph embedded in the ONNX model (the weights are skipped, not
    /// read); a `.tpp` path is loaded as it is.
    #[staticmethod]
    fn for_model(path: PathBuf) -> PyResult<PyGraph> {
        graph_result(Graph::for_model(path))
    }

    /// A Hugging Face image processor's configuration (`preprocessor_config.json`):
    /// the processor itself, a dict (`processor.to_dict()`), JSON text, the
    /// file, or the checkpoint's directory.
    ///
    /// `backend` is transformers' `"torchvision"` or `"pil"`, or
    /// `"torchvision-float32"`: the torchvision backend where torchvision
    /// resizes BILINEAR through float32 (AVX-512 CPUs up to torch 2.8, ARM up
    /// to torch 2.11, x86 CPUs without AVX2); `"torchvision"` resizes on uint8,
    /// as current torch does elsewhere. Without it, a processor object's own
    /// backend (`processor.backend`) is reproduced, and any other configuration
    /// as `AutoImageProcessor` loads it by default (torchvision); for the
    /// torchvision backend, in the variant the installed torchvision runs on
    /// this CPU (by its version, `torch.backends.cpu.get_cpu_capability()` and
    /// `platform.machine()`), or `"torchvision"` when torch is not installed.
    /// The backends differ in the resize (PyTorch's on tensors, Pillow's on
    /// PIL images) and in the normalize arithmetic.
    #[staticmethod]
    #[pyo3(signature = (config, *, backend=None))]
    fn from_hugging_face(config: &Bound<'_, PyAny>, backend: Option<&str>) -> PyResult<PyGraph> {
        let own = match backend {
            Some(_) => None,
            None if config.hasattr("to_dict")? && config.hasattr("backend")? => {
                Some(config.getattr("backend")?.extract::<String>()?)
            }
            None => None,
        };
        let by_name = |name: &str| {
            import::HfBackend::from_name(name).ok_or_else(|| {
                errors::value(format!(
                    "unknown backend `{name}` (transformers' \"torchvision\" or \"pil\", \
                     or \"torchvision-float32\")"
                ))
            })
        };
        let backend = match (backend, own.as_deref()) {
            (Some(name), _) => by_name(name)?,
            (None, Some(name)) if !name.eq_ignore_ascii_case("torchvision") => by_name(name)?,
            (None, _) => installed_torchvision_variant(config.py()),
        };
        graph_result(import::hugging_face_with(
            &config_text(config, "preprocessor_config.json", "hf")?,
            backend,
        ))
    }

    /// A timm model's `pretrained_cfg`: the model itself, the dict
    /// (`model.pretrained_cfg`), or a hub `config.json` holding one (text,
    /// file or directory).
    #[staticmethod]
    fn from_timm(config: &Bound<'_, PyAny>) -> PyResult<PyGraph> {
        graph_result(import::timm(&config_text(config, "config.json", "timm")?))
    }

    /// A torchvision weights' eval transform: its name
    /// (`"ResNet50_Weights.IMAGENET1K_V2"`) or the weights enum itself.
    #[staticmethod]
    fn torchvision(weights: &Bound<'_, PyAny>) -> PyResult<PyGraph> {
        let name = weights.str()?.to_string();
        graph_result(import::torchvision(&name))
    }

    /// Any importer by name, as `tensorprep convert --from` takes it:
    /// `"hf"` (`"hf:pil"`, `"hf:torchvision"`, `"hf:torchvision-float32"`), `"timm"`, `"ultralytics"`, `"tflite"`, `"mindir"` (these read
    /// `source`), `"torchvision:WEIGHTS"`, `"preset:NAME"`. Adds the
    /// self-tests (a synthetic picture, a JPEG and a PNG with their outputs)
    /// unless `self_tests=False`; `name` sets the model input's name.
    #[staticmethod]
    #[pyo3(signature = (from_, source=None, *, name=None, self_tests=true))]
    fn convert(
        from_: &str,
        source: Option<PathBuf>,
        name: Option<String>,
        self_tests: bool,
    ) -> PyResult<PyGraph> {
        let mut g = graph_result(import::convert(from_, source.as_deref()))?;
        if let Some(n) = name {
            g.graph.output.name = n;
        }
        if self_tests {
            g.graph.add_self_tests().map_err(|e| errors::graph(&e))?;
        }
        Ok(g)
    }

    /// Adds the self-test vectors (`verify` reruns them on the device).
    fn add_self_tests(&mut self) -> PyResult<()> {
        self.graph.add_self_tests().map_err(|e| errors::graph(&e))
    }

    /// Reruns the self-tests (JPEG ones once per decoder this build has):
    /// a list of reports, each `passed`, `levels` and a sentence (`str`).
    /// A graph without self-tests gives an empty list.
    fn verify(&self, py: Python<'_>) -> PyResult<Vec<SelfTestReport>> {
        let reports = py
            .detach(|| self.graph.verify())
            .map_err(|e| errors::graph(&e))?;
        Ok(reports
            .into_iter()
            .map(|r| SelfTestReport {
                passed: r.passed(),
                levels: r.levels(),
                text: r.to_string(),
            })
            .collect())
    }

    /// Writes the graph file (`.tpp`), through a temporary file renamed into place.
    fn save(&self, path: PathBuf) -> PyResult<()> {
        let bytes = self.graph.encode();
        write_atomically(&path, |w| w.write_all(&bytes))
    }

    /// The graph file's bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.graph.encode())
    }

    /// Stores the graph inside an ONNX model (`metadata_props`), copying every
    /// other byte; writes `out` (default: replaces the model, through a
    /// temporary file). Refuses a graph whose output does not fit the
    /// model's input unless `force=True`.
    #[pyo3(signature = (model, out=None, *, force=false))]
    fn embed(
        &self,
        py: Python<'_>,
        model: PathBuf,
        out: Option<PathBuf>,
        force: bool,
    ) -> PyResult<()> {
        let at = |e: tensorprep::graph::GraphError| errors::graph(&e);
        let inputs = tensorprep::graph::onnx_file_inputs(&model).map_err(at)?;
        if let Err(e) = self.graph.check_fits(&inputs)
            && !force
        {
            return Err(errors::graph(&e));
        }
        let embedding = OnnxEmbedding::new(&model, &self.graph).map_err(at)?;
        let out = out.unwrap_or_else(|| model.clone());
        py.detach(|| write_atomically(&out, |w| embedding.write_to(w).map(drop)))
    }

    /// Compiles the graph into a `Plan`.
    ///
    /// - `input`: `"jpeg"` for encoded files (JPEG, PNG, WebP: the format
    ///   comes from the bytes), or a pixel format (`"rgb"`, `"bgr"`,
    ///   `"rgba"`, `"gray"`, `"nv21"`, `"nv12"`, `"i420"`, `"yuyv"`, ...) for
    ///   numpy images and frames (converted inside the first pass). A
    ///   `"jpeg"` plan takes numpy images too (RGB by default).
    /// - `decoder`: `"libjpeg-turbo"` (Pillow's decoder: Pillow's pixels
    ///   exactly; the default when built in) or `"zune-jpeg"`.
    /// - `exif`: apply (`True`) or ignore (`False`) the EXIF orientation
    ///   (default: the graph's choice).
    /// - `lenient`: decode truncated or corrupt files as far as they go.
    /// - `fast`: DCT-scaled decoding, not bit-exact: `True` (or `"fast"`)
    ///   keeps at least twice the resize's target (Pillow's `thumbnail`),
    ///   `"draft"` the target itself (Pillow's `draft`; faster still).
    /// - `region`: decode only the part of the JPEG the output needs (same
    ///   pixels; default on).
    /// - `yuv_range`: `"full"` or `"limited"` for YUV frames.
    /// - `max_pixels`: refuse larger images.
    #[pyo3(signature = (input="jpeg", *, decoder=None, exif=None, lenient=false, fast=crate::names::Scaling(tensorprep::pipeline::DecodeScaling::Exact),
                        region=true, yuv_range=None, max_pixels=None))]
    #[allow(clippy::too_many_arguments)]
    fn compile(
        &self,
        input: &str,
        decoder: Option<String>,
        exif: Option<bool>,
        lenient: bool,
        fast: crate::names::Scaling,
        region: bool,
        yuv_range: Option<String>,
        max_pixels: Option<u64>,
    ) -> PyResult<PyPlan> {
        PyPlan::new(
            &self.graph,
            Options {
                input: input.to_owned(),
                decoder,
                exif,
                lenient,
                fast,
                region,
                yuv_range,
                max_pixels,
            },
        )
    }

    /// Each op, as `inspect` prints it.
    #[getter]
    fn ops(&self) -> Vec<String> {
        self.graph
            .pipeline
            .ops()
            .iter()
            .map(Op::to_string)
            .collect()
    }

    /// The output's shape, or `None` when it depends on the image.
    #[getter]
    fn output_shape(&self) -> Option<(usize, usize, usize)> {
        self.graph.output.shape.map(|s| (s[0], s[1], s[2]))
    }

    /// The model input's name (`"pixel_values"`, `"images"`; may be empty).
    #[getter]
    fn get_output_name(&self) -> String {
        self.graph.output.name.clone()
    }

    #[setter]
    fn set_output_name(&mut self, name: String) {
        self.graph.output.name = name;
    }

    /// The output's numpy dtype name.
    #[getter]
    fn dtype(&self) -> &'static str {
        names::dtype_name(self.graph.output.dtype)
    }

    /// Whether it takes encoded files (it starts with a Decode op).
    #[getter]
    fn accepts_jpeg(&self) -> bool {
        self.graph.input.accepts_jpeg
    }

    /// Where it came from: `(producer, source)`.
    #[getter]
    fn provenance(&self) -> (String, String) {
        let p = &self.graph.provenance;
        (p.producer.clone(), p.source.clone())
    }

    /// The self-test vectors it holds.
    #[getter]
    fn self_tests(&self) -> usize {
        self.graph.self_tests.len()
    }

    /// The features a reader must implement to run it.
    #[getter]
    fn required_features(&self) -> Vec<&'static str> {
        self.graph.required_features()
    }

    fn __eq__(&self, other: &PyGraph) -> bool {
        self.graph == other.graph
    }

    /// Pickled as the graph file's bytes.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let load = py.get_type::<PyGraph>().getattr("load")?;
        let bytes = pyo3::types::PyBytes::new(py, &self.graph.encode());
        (load, (bytes,)).into_pyobject(py).map(|t| t.into_any())
    }

    fn __repr__(&self) -> String {
        let mut s = String::from("Graph(\n");
        let p = &self.graph.provenance;
        if !p.source.is_empty() {
            s += &format!("  from: {}\n", p.source);
        }
        for (k, op) in self.graph.pipeline.ops().iter().enumerate() {
            s += &format!("  {k:>2}. {op}\n");
        }
        let o = &self.graph.output;
        let shape = o.shape.map_or("per image".to_owned(), |s| format!("{s:?}"));
        s += &format!(
            "  output: {:?} {shape} {} {:?}\n)",
            o.name,
            names::dtype_name(o.dtype),
            o.layout
        );
        s
    }
}

/// One self-test's outcome: `passed`, the largest difference in levels, and
/// a sentence saying what it means (`str(report)`).
#[pyclass(frozen, module = "tensorprep", name = "SelfTestReport")]
pub(crate) struct SelfTestReport {
    #[pyo3(get)]
    passed: bool,
    #[pyo3(get)]
    levels: f32,
    text: String,
}

#[pymethods]
impl SelfTestReport {
    fn __str__(&self) -> String {
        self.text.clone()
    }

    fn __repr__(&self) -> String {
        format!("SelfTestReport({:?})", self.text)
    }

    fn __bool__(&self) -> bool {
        self.passed
    }
}
