//! `tensorprep.train`'s datasets, augmentations and pipelines.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use tensorprep::cpu::Simd;
use tensorprep::finish::{ChannelOrder, FinishSpec, Finisher, Normalize};
use tensorprep::geometry::Flip;
use tensorprep::pipeline::{CenterCrop, CropRounding, Decode, DecodeScaling, Op, Resize};
use tensorprep::size::{Rounding, SizeRule};
use tensorprep::targets::{BoxFormat, TargetOp};
use tensorprep::train::data::combine::Source;
use tensorprep::train::data::{self, Dataset, Sample};
use tensorprep::train::{
    AugMix, Augment, AutoAugment, AutoAugmentPolicy, ColorJitter, EraseValue, FixedSizeCrop,
    GaussianBlur, RandAugment, RandomAffine, RandomApply, RandomChoice, RandomCrop, RandomErasing,
    RandomFlip, RandomIoUCrop, RandomOrder, RandomPerspective, RandomPhotometricDistort,
    RandomResizedCrop, RandomRotation, RandomShortestSize, RandomZoomOut, ScaleJitter,
    TrainPipeline, TrivialAugmentWide,
};
use tensorprep::{Layout, Quantization};

use crate::graph::PyGraph;
use crate::names::Name;
use crate::{errors, names, recipes};

/// A dataset: samples (an encoded image and its labels) by index.
///
/// Made by `ImageFolder`, `RecordIO`, `TFRecord`, `WebDataset`, `Samples`,
/// `COCO`, `VOC`, `YOLO`, ...; `take`, `skip`, `+` (concatenation) and
/// `cache` make datasets of others. `dataset[i]` reads one sample:
/// `(bytes, labels)`, or `(bytes, target)` with a detection target.
#[pyclass(frozen, module = "tensorprep.train", name = "Dataset")]
pub(crate) struct PyDataset {
    source: Source,
    what: String,
    classes: Option<Vec<String>>,
    /// A MindRecord set's every column, for `columns(i)`.
    records: Option<Arc<data::mindrecord::MindRecord>>,
    /// The Python objects behind the samples (the garbage collector's view
    /// of a dataset holding its loader): the user's object, held by the
    /// Rust dataset made here; `parents`: the datasets holding them that
    /// this one is made of.
    python: Option<Arc<dyn crate::user_code::Holds>>,
    parents: Vec<Py<PyDataset>>,
}

/// The longest description a dataset keeps (a longer one keeps its start and
/// end): a chain of `+` or `take` then costs the same at every step.
const WHAT_MAX: usize = 160;

/// `what`, shortened to about [`WHAT_MAX`] bytes around a " ... ".
fn describe(what: String) -> String {
    if what.len() <= WHAT_MAX {
        return what;
    }
    let mut head = WHAT_MAX / 2;
    while !what.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = what.len() - WHAT_MAX / 2;
    while !what.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{} ... {}", &what[..head], &what[tail..])
}

impl PyDataset {
    pub(crate) fn new(source: impl Into<Source>, what: String) -> PyDataset {
        PyDataset {
            source: source.into(),
            what: describe(what),
            classes: None,
            records: None,
            python: None,
            parents: Vec::new(),
        }
    }

    /// A dataset whose Rust part holds Python objects (`FromPython`).
    pub(crate) fn holding(
        source: impl Into<Source>,
        what: String,
        python: Arc<dyn crate::user_code::Holds>,
    ) -> PyDataset {
        PyDataset {
            python: Some(python),
            ..PyDataset::new(source, what)
        }
    }

    /// A dataset made of `parts`: the datasets among them (and under them)
    /// whose Rust part holds Python objects are kept, for the garbage
    /// collector (those only, not the chain: a chain of 100,000 `+` stays
    /// flat).
    fn of(mut self, parts: &[&Bound<'_, PyDataset>]) -> PyDataset {
        let py = parts.first().map(|p| p.py());
        for part in parts {
            let inner = part.get();
            if inner.python.is_some() {
                self.parents.push((*part).clone().unbind());
            }
            if let Some(py) = py {
                self.parents
                    .extend(inner.parents.iter().map(|p| p.clone_ref(py)));
            }
        }
        self
    }

    /// A MindRecord set, whose `columns(i)` gives every column.
    pub(crate) fn mindrecord(
        records: Arc<data::mindrecord::MindRecord>,
        what: String,
    ) -> PyDataset {
        let d: Arc<dyn Dataset> = Arc::clone(&records) as Arc<dyn Dataset>;
        PyDataset {
            records: Some(records),
            ..PyDataset::new(d, what)
        }
    }

    /// `index` (negative from the end) as a position in `0..len`.
    fn position(&self, index: isize) -> PyResult<usize> {
        let len = self.dataset().len() as isize;
        let i = if index < 0 { index + len } else { index };
        if !(0..len).contains(&i) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "index {index} out of range for a dataset of {len}"
            )));
        }
        Ok(i as usize)
    }

    /// Names the dataset's classes (its `classes`).
    pub(crate) fn set_classes(&mut self, classes: Vec<String>) {
        self.classes = Some(classes);
    }

    /// The dataset, for a loader.
    pub(crate) fn dataset(&self) -> Arc<dyn Dataset> {
        self.source.dataset()
    }
}

pub(crate) fn data_result<T>(r: Result<T, data::DataError>) -> PyResult<T> {
    r.map_err(|e| errors::data(&e))
}

/// A sample's label: a number float32 holds (an integer exactly), or a
/// sequence of them; `Err` says what is wrong with it.
pub(crate) fn labels_of(label: &Bound<'_, PyAny>) -> Result<Vec<f32>, String> {
    if label.is_instance_of::<PyString>() || label.is_instance_of::<PyBytes>() {
        return Err("a label is a number or a sequence of numbers".into());
    }
    if let Ok(one) = number(label) {
        return one.map(|l| vec![l]);
    }
    let Ok(items) = label.try_iter() else {
        return Err("a label is a number or a sequence of numbers".into());
    };
    let mut labels = Vec::new();
    for (j, item) in items.enumerate() {
        let item = item.map_err(|e| e.to_string())?;
        let l = number(&item)
            .map_err(|()| format!("label {j}: not a number"))?
            .map_err(|e| format!("label {j}: {e}"))?;
        labels.push(l);
    }
    Ok(labels)
}

/// A number as float32: `Err(())` for what is not a number, `Ok(Err(_))`
/// for a number float32 cannot stand for (NaN, an infinity, a float past
/// float32's range, an integer it would round). The rule is core's
/// (`data::label`); this only converts the Python value.
fn number(value: &Bound<'_, PyAny>) -> Result<Result<f32, String>, ()> {
    // Integers (Python's, numpy's: whatever has `__index__`), not floats.
    if !value.is_instance_of::<PyFloat>() {
        match value.extract::<i64>() {
            Ok(int) => {
                return Ok(data::label::int(int)
                    .map_err(|e| format!("the integer label {int} is not exact in float32: {e}")));
            }
            Err(_) if value.is_instance_of::<PyInt>() => {
                return Ok(Err(format!(
                    "the integer label {value} is not exact in float32: beyond 64 bits"
                )));
            }
            Err(_) => {}
        }
    }
    let Ok(x) = value.extract::<f64>() else {
        return Err(());
    };
    Ok(data::label::f64(x).map_err(|e| format!("the label {x} is refused: {e}")))
}

#[pymethods]
impl PyDataset {
    /// torchvision's `ImageFolder`: one subdirectory per class (sorted
    /// names), its image files the samples (sorted), the label the class's
    /// position. The files taken: those ending with one of `extensions`
    /// (torchvision's `IMG_EXTENSIONS` by default) or those
    /// `is_valid_file(path)` accepts; not both, as torchvision.
    #[staticmethod]
    #[pyo3(signature = (root, extensions=None, is_valid_file=None))]
    fn image_folder(
        py: Python<'_>,
        root: PathBuf,
        extensions: Option<Vec<String>>,
        is_valid_file: Option<Py<PyAny>>,
    ) -> PyResult<PyDataset> {
        use data::folder::FileFilter;
        let failed = Arc::new(std::sync::Mutex::new(None::<PyErr>));
        let filter = match (extensions, is_valid_file) {
            (Some(_), Some(_)) => {
                return Err(errors::value(
                    "ImageFolder: extensions and is_valid_file cannot both be given",
                ));
            }
            (Some(e), None) => FileFilter::Extensions(e),
            (None, Some(valid)) => {
                let failed = Arc::clone(&failed);
                // A Python exception stops the listing's use of Python and
                // is raised once the listing returns.
                FileFilter::valid_file(move |path: &std::path::Path| {
                    Python::attach(|py| {
                        let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                        if failed.is_some() {
                            return false;
                        }
                        let r = valid.call1(py, (path.as_os_str(),));
                        match r.and_then(|r| r.bind(py).is_truthy()) {
                            Ok(keep) => keep,
                            Err(e) => {
                                *failed = Some(e);
                                false
                            }
                        }
                    })
                })
            }
            (None, None) => FileFilter::default(),
        };
        let d = py.detach(|| data::folder::FolderDataset::open_filtered(&root, &filter));
        if let Some(e) = failed.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Err(e);
        }
        let d = data_result(d)?;
        let classes = d.classes().to_vec();
        let d: Arc<dyn Dataset> = Arc::new(d);
        let mut ds = PyDataset::new(d, format!("ImageFolder({})", root.display()));
        ds.classes = Some(classes);
        Ok(ds)
    }

    /// MXNet RecordIO (`.rec`, with its `.idx` beside it or `index`; read
    /// whole when there is none), as `im2rec` writes it.
    #[staticmethod]
    #[pyo3(signature = (path, index=None))]
    fn recordio(py: Python<'_>, path: PathBuf, index: Option<PathBuf>) -> PyResult<PyDataset> {
        let d = py.detach(|| match &index {
            Some(idx) => data::recordio::RecordIoDataset::open_with_index(&path, idx),
            None => data::recordio::RecordIoDataset::open(&path),
        });
        let d: Arc<dyn Dataset> = Arc::new(data_result(d)?);
        Ok(PyDataset::new(d, format!("RecordIO({})", path.display())))
    }

    /// TFRecord files of `tf.train.Example`s (CRC-32C checked), the image
    /// and label read by their feature names; `index`: DALI's `tfrecord2idx`;
    /// `targets="object_detection"`: a detection target from the TF Object
    /// Detection API's keys instead of the label (`masks`: its PNG masks).
    #[staticmethod]
    #[pyo3(signature = (path, index=None, *, image_key="image/encoded", label_key="image/class/label", targets=None, masks=false))]
    fn tfrecord(
        py: Python<'_>,
        path: PathBuf,
        index: Option<PathBuf>,
        image_key: &str,
        label_key: &str,
        targets: Option<&str>,
        masks: bool,
    ) -> PyResult<PyDataset> {
        let labels = crate::shards::tfrecord_labels(targets, masks)?;
        let keys = data::tfrecord::Keys {
            image: image_key,
            label: label_key,
        };
        let d = py.detach(|| {
            match &index {
                Some(idx) => data::tfrecord::TfRecordDataset::open_with_index(&path, idx, keys),
                None => data::tfrecord::TfRecordDataset::open(&path, keys),
            }
            .map(|d| d.with_labels(labels))
        });
        let d: Arc<dyn Dataset> = Arc::new(data_result(d)?);
        Ok(PyDataset::new(d, format!("TFRecord({})", path.display())))
    }

    /// WebDataset tar shards (`"shards-{000000..000099}.tar"`): the image by
    /// its extension (the first of `image_keys` present), the label `.cls`;
    /// `target_key`: the extension of each sample's JSON detection target
    /// (`"json"`; `tensorprep::train::data::json_target`'s schema).
    #[staticmethod]
    #[pyo3(signature = (pattern, *, image_keys=None, label_key="cls", target_key=None))]
    fn webdataset(
        py: Python<'_>,
        pattern: &str,
        image_keys: Option<Vec<String>>,
        label_key: &str,
        target_key: Option<&str>,
    ) -> PyResult<PyDataset> {
        let image_keys = image_keys.unwrap_or_else(|| {
            data::webdataset::WebKeys::CONVENTIONAL
                .image
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        });
        let image: Vec<&str> = image_keys.iter().map(String::as_str).collect();
        let keys = data::webdataset::WebKeys {
            image: &image,
            label: label_key,
        };
        let d = py.detach(|| match target_key {
            Some(t) => data::webdataset::WebDataset::open_with_targets(pattern, keys, t),
            None => data::webdataset::WebDataset::open(pattern, keys),
        });
        let d: Arc<dyn Dataset> = Arc::new(data_result(d)?);
        Ok(PyDataset::new(d, format!("WebDataset({pattern})")))
    }

    /// Samples in memory: a sequence of `(encoded_bytes, label)` pairs (the
    /// label a number or a sequence of numbers, each one float32 holds: NaN,
    /// infinities and integers float32 would round, past 2^24, are refused).
    #[staticmethod]
    fn samples(items: &Bound<'_, PyAny>) -> PyResult<PyDataset> {
        let mut samples = Vec::new();
        for (i, item) in items.try_iter()?.enumerate() {
            let item = item?;
            let (bytes, label): (Vec<u8>, Bound<'_, PyAny>) = item
                .extract()
                .map_err(|_| errors::value(format!("sample {i}: expected (bytes, label)")))?;
            let labels =
                labels_of(&label).map_err(|e| errors::value(format!("sample {i}: {e}")))?;
            samples.push(Sample {
                bytes,
                labels,
                id: i as u64,
                ..Sample::default()
            });
        }
        let n = samples.len();
        Ok(PyDataset::new(
            data::combine::InMemory::new(samples),
            format!("Samples({n})"),
        ))
    }

    /// The first `n` samples (a `take` of a `take` or `skip` is one range of
    /// the dataset under them).
    fn take(slf: &Bound<'_, Self>, n: usize) -> PyResult<PyDataset> {
        let this = slf.get();
        let range = data_result(data::combine::Range::take(this.source.clone(), n))?;
        Ok(PyDataset::new(range, format!("{}.take({n})", this.what)).of(&[slf]))
    }

    /// All but the first `n` samples.
    fn skip(slf: &Bound<'_, Self>, n: usize) -> PyResult<PyDataset> {
        let this = slf.get();
        let range = data_result(data::combine::Range::skip(this.source.clone(), n))?;
        Ok(PyDataset::new(range, format!("{}.skip({n})", this.what)).of(&[slf]))
    }

    /// The samples' encoded bytes kept in memory once read, up to `budget`
    /// bytes (the rest read each time).
    fn cache(slf: &Bound<'_, Self>, budget: u64) -> PyResult<PyDataset> {
        let this = slf.get();
        let cache = data_result(data::combine::Cache::new(this.source.clone(), budget))?;
        Ok(PyDataset::new(cache, format!("{}.cache({budget})", this.what)).of(&[slf]))
    }

    /// This dataset's samples, then `other`'s (one flat concatenation of
    /// their parts: `a + b + c` is one of three).
    fn __add__(slf: &Bound<'_, Self>, other: &Bound<'_, PyDataset>) -> PyResult<PyDataset> {
        let (this, that) = (slf.get(), other.get());
        let parts = [this.source.clone(), that.source.clone()];
        let c = data_result(data::combine::Concat::new(parts))?;
        Ok(PyDataset::new(c, format!("{} + {}", this.what, that.what)).of(&[slf, other]))
    }

    /// What it holds of Python's, each object once: the user's object (in
    /// the Rust dataset made with it) or the datasets it is made of.
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Some(python) = &self.python {
            python.traverse(&visit)?;
        }
        for parent in &self.parents {
            visit.call(parent)?;
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.dataset().len()
    }

    /// Every column of sample `index` of a MindRecord set (MindDataset's
    /// `columns_list`), by name: `int`, `float`, `str` and `bytes` for
    /// scalars, numpy arrays of the schema's dtype and the row's shape for
    /// arrays. A `TypeError` for other datasets.
    fn columns<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyDict>> {
        let Some(records) = &self.records else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{} has no columns beside its image and labels (a MindRecord set has)",
                self.what
            )));
        };
        let i = self.position(index)?;
        crate::mindrecord::columns(py, records, i)
    }

    /// Sample `index`: `(image, labels)`, or `(image, target)` for a sample
    /// with a detection target (COCO, VOC, YOLO, a `FromPython` dataset of
    /// target dicts): the target as a dict (`BatchTensor.targets`' layout).
    /// `image` is the encoded file's `bytes`, or for a dataset of pixels
    /// (CIFAR, MNIST, arrays) a uint8 numpy array: height x width for gray,
    /// height x width x channels (in the sample's channel order) otherwise.
    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyTuple>> {
        let i = self.position(index)?;
        let dataset = self.dataset();
        let mut s = Sample::default();
        data_result(py.detach(|| dataset.read(i, &mut s)))?;
        let labels = match &s.target {
            Some(t) => crate::targets::to_dict(py, t)?.into_any(),
            None => PyList::new(py, &s.labels)?.into_any(),
        };
        let image = match s.content {
            data::Content::Pixels {
                width,
                height,
                format,
            } => {
                let (h, w) = (height as usize, width as usize);
                let channels = format.bytes_per_pixel().unwrap_or(1);
                use numpy::PyArrayMethods as _;
                let pixels = numpy::PyArray1::from_vec(py, s.bytes);
                if channels == 1 {
                    pixels.reshape([h, w])?.into_any()
                } else {
                    pixels.reshape([h, w, channels])?.into_any()
                }
            }
            _ => PyBytes::new(py, &s.bytes).into_any(),
        };
        PyTuple::new(py, [image, labels])
    }

    /// The class names, for an `ImageFolder` (`None` otherwise).
    #[getter]
    fn classes(&self) -> Option<Vec<String>> {
        self.classes.clone()
    }

    /// A hash of the dataset's layout: a saved loader state resumes only on
    /// the dataset it came from.
    #[getter]
    fn fingerprint(&self) -> u64 {
        self.dataset().fingerprint()
    }

    fn __repr__(&self) -> String {
        format!("{} ({} samples)", self.what, self.dataset().len())
    }
}

/// One step of a training pipeline (made by `RandomResizedCrop`,
/// `ColorJitter`, `RandAugment`, ...: torchvision's names and defaults).
/// Its `__dict__` holds `_recipe`, the call that made it (set by the
/// constructors' wrappers, `tensorprep._recipes`): it pickles as that call.
#[pyclass(frozen, dict, module = "tensorprep.train", name = "Augment")]
#[derive(Clone)]
pub(crate) struct PyAugment(pub(crate) Augment);

#[pymethods]
impl PyAugment {
    /// `augment(image, target=None, *, seed=None)`: the augmentation drawn
    /// once (key `seed`, a fresh one when `None`) on a uint8 RGB image
    /// (numpy `(H, W, 3)` or PIL); the image of the same kind, or with a
    /// target dict `(image, target)` (see `tensorprep._call`).
    #[pyo3(signature = (image, target=None, *, seed=None))]
    fn __call__<'py>(
        slf: &Bound<'py, Self>,
        image: &Bound<'py, PyAny>,
        target: Option<&Bound<'py, PyAny>>,
        seed: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::call::from_python(slf.as_any(), image, target, seed)
    }

    fn __repr__(&self) -> String {
        self.0.to_string()
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        match slf.getattr_opt("_recipe")? {
            Some(recipe) => Ok((recipe, PyTuple::empty(py))),
            None => recipes::reduce(py, None, &slf.get().0.to_string()),
        }
    }
}

/// `(width, height)` from torchvision's `size`: an int, or `(h, w)`.
fn size_of(size: &Bound<'_, PyAny>) -> PyResult<(u32, u32)> {
    if let Ok(s) = size.extract::<u32>() {
        return Ok((s, s));
    }
    let v: Vec<u32> = size
        .extract()
        .map_err(|_| errors::value("size is an int or (height, width)"))?;
    match v.as_slice() {
        [s] => Ok((*s, *s)),
        [h, w] => Ok((*w, *h)),
        _ => Err(errors::value("size is an int or (height, width)")),
    }
}

/// A `(min, max)` range from torchvision's forms: `x` gives `(-x, x)` (or
/// `(centre - x, centre + x)` for jitter factors), a pair is itself.
fn range(value: &Bound<'_, PyAny>, centre: f64) -> PyResult<(f64, f64)> {
    if let Ok(x) = value.extract::<f64>() {
        return Ok((
            (centre - x).max(if centre > 0.0 { 0.0 } else { f64::MIN }),
            centre + x,
        ));
    }
    value
        .extract::<(f64, f64)>()
        .map_err(|_| errors::value("a range is a number or (min, max)"))
}

fn fill_of(fill: Option<&Bound<'_, PyAny>>) -> PyResult<[u8; 3]> {
    let Some(fill) = fill else { return Ok([0; 3]) };
    if let Ok(v) = fill.extract::<u8>() {
        return Ok([v; 3]);
    }
    fill.extract::<[u8; 3]>()
        .map_err(|_| errors::value("fill is a 0-255 int or (r, g, b)"))
}

fn augments(list: &Bound<'_, PyAny>) -> PyResult<Vec<Augment>> {
    list.try_iter()?
        .map(|a| Ok(a?.cast::<PyAugment>()?.get().0.clone()))
        .collect()
}

/// torchvision's `RandomResizedCrop(size, scale, ratio, interpolation)`.
#[pyfunction(name = "RandomResizedCrop")]
#[pyo3(signature = (size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=Name::new("bilinear")),
       text_signature = "(size, scale=(0.08, 1.0), ratio=(0.75, 1.3333333333333333), interpolation='bilinear')")]
fn random_resized_crop(
    size: &Bound<'_, PyAny>,
    scale: (f64, f64),
    ratio: (f64, f64),
    interpolation: Name,
) -> PyResult<PyAugment> {
    let (w, h) = size_of(size)?;
    let mut c = RandomResizedCrop::new(w, h);
    c.scale = scale;
    c.ratio = ratio;
    c.resample = names::resample(&interpolation.0)?;
    Ok(PyAugment(Augment::RandomResizedCrop(c)))
}

/// torchvision's `RandomCrop(size, padding, pad_if_needed, fill)` (constant padding).
#[pyfunction(name = "RandomCrop")]
#[pyo3(signature = (size, padding=None, pad_if_needed=false, fill=None))]
fn random_crop(
    size: &Bound<'_, PyAny>,
    padding: Option<&Bound<'_, PyAny>>,
    pad_if_needed: bool,
    fill: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let (w, h) = size_of(size)?;
    let mut c = RandomCrop::new(w, h);
    if let Some(p) = padding {
        c.padding = if let Ok(v) = p.extract::<u32>() {
            [v; 4]
        } else {
            match p.extract::<Vec<u32>>()?.as_slice() {
                [lr, tb] => [*lr, *tb, *lr, *tb],
                [l, t, r, b] => [*l, *t, *r, *b],
                _ => return Err(errors::value("padding is an int, (lr, tb) or (l, t, r, b)")),
            }
        };
    }
    c.pad_if_needed = pad_if_needed;
    c.fill = fill_of(fill)?;
    Ok(PyAugment(Augment::RandomCrop(c)))
}

/// torchvision's `RandomHorizontalFlip(p)`.
#[pyfunction(name = "RandomHorizontalFlip")]
#[pyo3(signature = (p=0.5))]
fn random_horizontal_flip(p: f64) -> PyAugment {
    PyAugment(Augment::RandomFlip(RandomFlip::new(Flip::Horizontal, p)))
}

/// torchvision's `RandomVerticalFlip(p)`.
#[pyfunction(name = "RandomVerticalFlip")]
#[pyo3(signature = (p=0.5))]
fn random_vertical_flip(p: f64) -> PyAugment {
    PyAugment(Augment::RandomFlip(RandomFlip::new(Flip::Vertical, p)))
}

/// torchvision's `Resize(size, interpolation, max_size)`: an int resizes the
/// shorter side (the longer truncated, as torchvision does), `(h, w)` exactly.
#[pyfunction(name = "Resize")]
#[pyo3(signature = (size, interpolation=Name::new("bilinear"), max_size=None),
       text_signature = "(size, interpolation='bilinear', max_size=None)")]
fn resize(
    size: &Bound<'_, PyAny>,
    interpolation: Name,
    max_size: Option<u32>,
) -> PyResult<PyAugment> {
    let rule = if let Ok(s) = size.extract::<u32>() {
        SizeRule::ShorterSide {
            size: s,
            max_size,
            rounding: Rounding::Truncate,
        }
    } else {
        let (width, height) = size_of(size)?;
        SizeRule::Exact { width, height }
    };
    Ok(PyAugment(Augment::Op(Op::Resize(Resize {
        size: rule,
        resample: names::resample(&interpolation.0)?,
    }))))
}

/// torchvision's `CenterCrop(size)` (offsets rounded half to even).
#[pyfunction(name = "CenterCrop")]
fn center_crop(size: &Bound<'_, PyAny>) -> PyResult<PyAugment> {
    let (width, height) = size_of(size)?;
    Ok(PyAugment(Augment::Op(Op::CenterCrop(CenterCrop {
        width,
        height,
        rounding: CropRounding::HalfEven,
    }))))
}

/// torchvision's `ColorJitter(brightness, contrast, saturation, hue)` (the
/// four in a random order per sample, as torchvision draws them).
#[pyfunction(name = "ColorJitter")]
#[pyo3(signature = (brightness=None, contrast=None, saturation=None, hue=None))]
fn color_jitter(
    brightness: Option<&Bound<'_, PyAny>>,
    contrast: Option<&Bound<'_, PyAny>>,
    saturation: Option<&Bound<'_, PyAny>>,
    hue: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let factor = |v: Option<&Bound<'_, PyAny>>| -> PyResult<Option<(f64, f64)>> {
        v.map(|v| range(v, 1.0))
            .transpose()
            .map(|r| r.filter(|&(a, b)| !(a == 1.0 && b == 1.0)))
    };
    let mut j = ColorJitter::new(0.0, 0.0, 0.0, 0.0);
    j.brightness = factor(brightness)?;
    j.contrast = factor(contrast)?;
    j.saturation = factor(saturation)?;
    j.hue = hue
        .map(|v| range(v, 0.0))
        .transpose()?
        .filter(|&(a, b)| !(a == 0.0 && b == 0.0));
    Ok(PyAugment(Augment::ColorJitter(j)))
}

/// torchvision's `GaussianBlur(kernel_size, sigma)`.
#[pyfunction(name = "GaussianBlur")]
#[pyo3(signature = (kernel_size, sigma=None))]
fn gaussian_blur(
    kernel_size: &Bound<'_, PyAny>,
    sigma: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let (kw, kh) = size_of(kernel_size)?;
    let (kw, kh) = (kh, kw); // torchvision's kernel_size is (kx, ky)
    let mut g = GaussianBlur::new(
        u16::try_from(kw).map_err(|_| errors::value("kernel_size too large"))?,
        u16::try_from(kh).map_err(|_| errors::value("kernel_size too large"))?,
    );
    g.sigma = match sigma {
        None => (0.1, 2.0),
        Some(s) => match s.extract::<f64>() {
            Ok(x) => (x, x),
            Err(_) => s.extract()?,
        },
    };
    Ok(PyAugment(Augment::GaussianBlur(g)))
}

/// torchvision's `RandomRotation(degrees, interpolation, expand, center, fill)`.
#[pyfunction(name = "RandomRotation")]
#[pyo3(signature = (degrees, interpolation=Name::new("nearest"), expand=false, center=None, fill=None),
       text_signature = "(degrees, interpolation='nearest', expand=False, center=None, fill=None)")]
fn random_rotation(
    degrees: &Bound<'_, PyAny>,
    interpolation: Name,
    expand: bool,
    center: Option<(f64, f64)>,
    fill: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let (min, max) = range(degrees, 0.0)?;
    let mut r = RandomRotation::new(min, max);
    r.interpolation = names::interpolation(&interpolation.0)?;
    r.expand = expand;
    r.center = center;
    r.fill = fill_of(fill)?;
    Ok(PyAugment(Augment::RandomRotation(r)))
}

/// torchvision's `RandomAffine(degrees, translate, scale, shear, interpolation, fill, center)`.
#[pyfunction(name = "RandomAffine")]
#[pyo3(signature = (degrees, translate=None, scale=None, shear=None, interpolation=Name::new("nearest"), fill=None, center=None),
       text_signature = "(degrees, translate=None, scale=None, shear=None, interpolation='nearest', fill=None, center=None)")]
#[allow(clippy::too_many_arguments)]
fn random_affine(
    degrees: &Bound<'_, PyAny>,
    translate: Option<(f64, f64)>,
    scale: Option<(f64, f64)>,
    shear: Option<&Bound<'_, PyAny>>,
    interpolation: Name,
    fill: Option<&Bound<'_, PyAny>>,
    center: Option<(f64, f64)>,
) -> PyResult<PyAugment> {
    let (min, max) = range(degrees, 0.0)?;
    let mut a = RandomAffine::new(min, max);
    a.translate = translate;
    a.scale = scale;
    a.shear = match shear {
        None => None,
        Some(s) => Some(if let Ok(x) = s.extract::<f64>() {
            [-x, x, 0.0, 0.0]
        } else {
            match s.extract::<Vec<f64>>()?.as_slice() {
                [a, b] => [*a, *b, 0.0, 0.0],
                [a, b, c, d] => [*a, *b, *c, *d],
                _ => return Err(errors::value("shear is a number, 2 or 4 numbers")),
            }
        }),
    };
    a.interpolation = names::interpolation(&interpolation.0)?;
    a.fill = fill_of(fill)?;
    a.center = center;
    Ok(PyAugment(Augment::RandomAffine(a)))
}

/// torchvision's `RandomPerspective(distortion_scale, p, interpolation, fill)`.
#[pyfunction(name = "RandomPerspective")]
#[pyo3(signature = (distortion_scale=0.5, p=0.5, interpolation=Name::new("bilinear"), fill=None),
       text_signature = "(distortion_scale=0.5, p=0.5, interpolation='bilinear', fill=None)")]
fn random_perspective(
    distortion_scale: f64,
    p: f64,
    interpolation: Name,
    fill: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let mut r = RandomPerspective::new(distortion_scale, p);
    r.interpolation = names::interpolation(&interpolation.0)?;
    r.fill = fill_of(fill)?;
    Ok(PyAugment(Augment::RandomPerspective(r)))
}

/// `augment` with its parameters checked now (the library's own check, run
/// by compiling a pipeline of it alone), as torchvision's constructors
/// check theirs.
fn checked(augment: Augment) -> PyResult<PyAugment> {
    let mut p = TrainPipeline::imagenet_train();
    p.augments = vec![augment];
    p.compile().map_err(|e| errors::value(e.to_string()))?;
    let augment = p
        .augments
        .pop()
        .ok_or_else(|| errors::value("no augmentation"))?;
    Ok(PyAugment(augment))
}

/// torchvision v2's `RandomIoUCrop(min_scale, max_scale, min_aspect_ratio,
/// max_aspect_ratio, sampler_options, trials)`, SSD's crop (the sample needs
/// boxes; follow it with `SanitizeBoundingBoxes`). `max_rounds`: the rounds
/// drawn before the sample is left as it is (torchvision draws without end).
#[pyfunction(name = "RandomIoUCrop")]
#[pyo3(signature = (min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                    sampler_options=None, trials=40, *, max_rounds=100),
       text_signature = "(min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0, \
                         sampler_options=None, trials=40, *, max_rounds=100)")]
#[allow(clippy::too_many_arguments)]
fn random_iou_crop(
    min_scale: f64,
    max_scale: f64,
    min_aspect_ratio: f64,
    max_aspect_ratio: f64,
    sampler_options: Option<Vec<f64>>,
    trials: u32,
    max_rounds: u32,
) -> PyResult<PyAugment> {
    let mut c = RandomIoUCrop::new();
    c.min_scale = min_scale;
    c.max_scale = max_scale;
    c.min_aspect_ratio = min_aspect_ratio;
    c.max_aspect_ratio = max_aspect_ratio;
    if let Some(options) = sampler_options {
        c.sampler_options = options;
    }
    c.trials = trials;
    c.max_rounds = max_rounds;
    checked(Augment::RandomIoUCrop(c))
}

/// torchvision v2's `RandomZoomOut(fill, side_range, p)`.
#[pyfunction(name = "RandomZoomOut")]
#[pyo3(signature = (fill=None, side_range=(1.0, 4.0), p=0.5),
       text_signature = "(fill=0, side_range=(1.0, 4.0), p=0.5)")]
fn random_zoom_out(
    fill: Option<&Bound<'_, PyAny>>,
    side_range: (f64, f64),
    p: f64,
) -> PyResult<PyAugment> {
    let mut z = RandomZoomOut::new(fill_of(fill)?);
    z.side_range = side_range;
    z.p = p;
    checked(Augment::RandomZoomOut(z))
}

/// torchvision v2's `ScaleJitter(target_size, scale_range, interpolation,
/// antialias)`; `target_size` is `(height, width)`. `antialias` is accepted
/// for torchvision's signature: resizing is Pillow's, antialiased as
/// torchvision's is on PIL images whatever it says.
#[pyfunction(name = "ScaleJitter")]
#[pyo3(signature = (target_size, scale_range=(0.1, 2.0), interpolation=Name::new("bilinear"), antialias=Some(true)),
       text_signature = "(target_size, scale_range=(0.1, 2.0), interpolation='bilinear', antialias=True)")]
fn scale_jitter(
    target_size: (u32, u32),
    scale_range: (f64, f64),
    interpolation: Name,
    antialias: Option<bool>,
) -> PyResult<PyAugment> {
    let _ = antialias;
    let (height, width) = target_size;
    let mut j = ScaleJitter::new(width, height);
    j.scale_range = scale_range;
    j.resample = names::resample(&interpolation.0)?;
    checked(Augment::ScaleJitter(j))
}

/// torchvision v2's `RandomShortestSize(min_size, max_size, interpolation,
/// antialias)`: `min_size` an int or a sequence drawn from. `antialias` as
/// in `ScaleJitter`.
#[pyfunction(name = "RandomShortestSize")]
#[pyo3(signature = (min_size, max_size=None, interpolation=Name::new("bilinear"), antialias=Some(true)),
       text_signature = "(min_size, max_size=None, interpolation='bilinear', antialias=True)")]
fn random_shortest_size(
    min_size: &Bound<'_, PyAny>,
    max_size: Option<u32>,
    interpolation: Name,
    antialias: Option<bool>,
) -> PyResult<PyAugment> {
    let _ = antialias;
    let sizes = match min_size.extract::<u32>() {
        Ok(s) => vec![s],
        Err(_) => min_size
            .extract::<Vec<u32>>()
            .map_err(|_| errors::value("min_size is an int or a sequence of ints"))?,
    };
    let mut r = RandomShortestSize::new(sizes, max_size);
    r.resample = names::resample(&interpolation.0)?;
    checked(Augment::RandomShortestSize(r))
}

/// The `FixedSizeCrop(size, fill, padding_mode)` of torchvision's
/// detection references (constant padding only): `size` an int or
/// `(height, width)`.
#[pyfunction(name = "FixedSizeCrop")]
#[pyo3(signature = (size, fill=None, padding_mode="constant"),
       text_signature = "(size, fill=0, padding_mode='constant')")]
fn fixed_size_crop(
    size: &Bound<'_, PyAny>,
    fill: Option<&Bound<'_, PyAny>>,
    padding_mode: &str,
) -> PyResult<PyAugment> {
    if padding_mode != "constant" {
        return Err(errors::value(format!(
            "FixedSizeCrop: padding_mode {padding_mode:?} is not supported (constant is)"
        )));
    }
    let (width, height) = size_of(size)?;
    let mut c = FixedSizeCrop::new(width, height);
    c.fill = fill_of(fill)?;
    checked(Augment::FixedSizeCrop(c))
}

/// torchvision v2's `RandomPhotometricDistort(brightness, contrast,
/// saturation, hue, p)`, SSD's colour distortion.
#[pyfunction(name = "RandomPhotometricDistort")]
#[pyo3(signature = (brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05), p=0.5),
       text_signature = "(brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05), p=0.5)")]
fn random_photometric_distort(
    brightness: (f64, f64),
    contrast: (f64, f64),
    saturation: (f64, f64),
    hue: (f64, f64),
    p: f64,
) -> PyResult<PyAugment> {
    let mut d = RandomPhotometricDistort::new();
    d.brightness = brightness;
    d.contrast = contrast;
    d.saturation = saturation;
    d.hue = hue;
    d.p = p;
    checked(Augment::RandomPhotometricDistort(d))
}

/// torchvision v2's `ClampBoundingBoxes()`: the boxes into their canvas.
#[pyfunction(name = "ClampBoundingBoxes")]
fn clamp_bounding_boxes() -> PyAugment {
    PyAugment(Augment::Target(TargetOp::Clamp))
}

/// torchvision v2's `SanitizeBoundingBoxes(min_size, min_area)`: drops the
/// instances whose boxes are degenerate, smaller or outside, with every
/// per-instance field of the target (labels, masks, `iscrowd`, `area`, ...).
#[pyfunction(name = "SanitizeBoundingBoxes")]
#[pyo3(signature = (min_size=1.0, min_area=1.0))]
fn sanitize_bounding_boxes(min_size: f64, min_area: f64) -> PyResult<PyAugment> {
    checked(Augment::Target(TargetOp::Sanitize { min_size, min_area }))
}

/// torchvision v2's `ConvertBoundingBoxFormat(format)`: `"XYXY"`, `"XYWH"`
/// or `"CXCYWH"` (any case, or a `BoundingBoxFormat`).
#[pyfunction(name = "ConvertBoundingBoxFormat")]
fn convert_bounding_box_format(format: Name) -> PyResult<PyAugment> {
    let format: BoxFormat = format
        .0
        .parse()
        .map_err(|e: tensorprep::Error| errors::value(e.to_string()))?;
    Ok(PyAugment(Augment::Target(TargetOp::ConvertFormat(format))))
}

/// torchvision's `RandomGrayscale(p)` (three equal channels).
#[pyfunction(name = "RandomGrayscale")]
#[pyo3(signature = (p=0.1))]
fn random_grayscale(p: f64) -> PyAugment {
    PyAugment(Augment::random_grayscale(p))
}

/// torchvision's `RandomInvert(p)`.
#[pyfunction(name = "RandomInvert")]
#[pyo3(signature = (p=0.5))]
fn random_invert(p: f64) -> PyAugment {
    PyAugment(Augment::random_invert(p))
}

/// torchvision's `RandomPosterize(bits, p)`.
#[pyfunction(name = "RandomPosterize")]
#[pyo3(signature = (bits, p=0.5))]
fn random_posterize(bits: u8, p: f64) -> PyAugment {
    PyAugment(Augment::random_posterize(bits, p))
}

/// torchvision's `RandomSolarize(threshold, p)`.
#[pyfunction(name = "RandomSolarize")]
#[pyo3(signature = (threshold, p=0.5))]
fn random_solarize(threshold: f64, p: f64) -> PyAugment {
    PyAugment(Augment::random_solarize(threshold, p))
}

/// torchvision's `RandomAdjustSharpness(sharpness_factor, p)`.
#[pyfunction(name = "RandomAdjustSharpness")]
#[pyo3(signature = (sharpness_factor, p=0.5))]
fn random_adjust_sharpness(sharpness_factor: f32, p: f64) -> PyAugment {
    PyAugment(Augment::random_adjust_sharpness(sharpness_factor, p))
}

/// torchvision's `RandomAutocontrast(p)`.
#[pyfunction(name = "RandomAutocontrast")]
#[pyo3(signature = (p=0.5))]
fn random_autocontrast(p: f64) -> PyAugment {
    PyAugment(Augment::random_autocontrast(p))
}

/// torchvision's `RandomEqualize(p)`.
#[pyfunction(name = "RandomEqualize")]
#[pyo3(signature = (p=0.5))]
fn random_equalize(p: f64) -> PyAugment {
    PyAugment(Augment::random_equalize(p))
}

/// torchvision's `AutoAugment(policy, interpolation, fill)`: `"imagenet"`,
/// `"cifar10"` or `"svhn"`.
#[pyfunction(name = "AutoAugment")]
#[pyo3(signature = (policy="imagenet", interpolation=Name::new("nearest"), fill=None),
       text_signature = "(policy='imagenet', interpolation='nearest', fill=None)")]
fn auto_augment(
    policy: &str,
    interpolation: Name,
    fill: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let policy = match policy.to_ascii_lowercase().as_str() {
        "imagenet" => AutoAugmentPolicy::ImageNet,
        "cifar10" => AutoAugmentPolicy::Cifar10,
        "svhn" => AutoAugmentPolicy::Svhn,
        other => {
            return Err(errors::value(format!(
                "unknown policy `{other}` (imagenet, cifar10, svhn)"
            )));
        }
    };
    let mut a = AutoAugment::new(policy);
    a.interpolation = names::interpolation(&interpolation.0)?;
    a.fill = fill_of(fill)?;
    Ok(PyAugment(Augment::AutoAugment(a)))
}

/// torchvision's `RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation, fill)`.
#[pyfunction(name = "RandAugment")]
#[pyo3(signature = (num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=Name::new("nearest"), fill=None),
       text_signature = "(num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation='nearest', fill=None)")]
fn rand_augment(
    num_ops: u32,
    magnitude: u32,
    num_magnitude_bins: u32,
    interpolation: Name,
    fill: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let mut a = RandAugment::new(num_ops, magnitude);
    a.num_magnitude_bins = num_magnitude_bins;
    a.interpolation = names::interpolation(&interpolation.0)?;
    a.fill = fill_of(fill)?;
    Ok(PyAugment(Augment::RandAugment(a)))
}

/// torchvision's `TrivialAugmentWide(num_magnitude_bins, interpolation, fill)`.
#[pyfunction(name = "TrivialAugmentWide")]
#[pyo3(signature = (num_magnitude_bins=31, interpolation=Name::new("nearest"), fill=None),
       text_signature = "(num_magnitude_bins=31, interpolation='nearest', fill=None)")]
fn trivial_augment_wide(
    num_magnitude_bins: u32,
    interpolation: Name,
    fill: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let mut a = TrivialAugmentWide::new();
    a.num_magnitude_bins = num_magnitude_bins;
    a.interpolation = names::interpolation(&interpolation.0)?;
    a.fill = fill_of(fill)?;
    Ok(PyAugment(Augment::TrivialAugmentWide(a)))
}

/// torchvision's `AugMix(severity, mixture_width, chain_depth, alpha, all_ops, interpolation, fill)`.
#[pyfunction(name = "AugMix")]
#[pyo3(signature = (severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=true, interpolation=Name::new("bilinear"), fill=None),
       text_signature = "(severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True, interpolation='bilinear', fill=None)")]
#[allow(clippy::too_many_arguments)]
fn aug_mix(
    severity: u32,
    mixture_width: u32,
    chain_depth: i32,
    alpha: f64,
    all_ops: bool,
    interpolation: Name,
    fill: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyAugment> {
    let mut a = AugMix::new();
    a.severity = severity;
    a.mixture_width = mixture_width;
    // torchvision's -1: a depth drawn from 1-3 per chain (0 here).
    a.chain_depth = u32::try_from(chain_depth).unwrap_or(0);
    a.alpha = alpha;
    a.all_ops = all_ops;
    a.interpolation = names::interpolation(&interpolation.0)?;
    a.fill = fill_of(fill)?;
    Ok(PyAugment(Augment::AugMix(a)))
}

/// torchvision's `RandomApply(transforms, p)`.
#[pyfunction(name = "RandomApply")]
#[pyo3(signature = (transforms, p=0.5))]
fn random_apply(transforms: &Bound<'_, PyAny>, p: f64) -> PyResult<PyAugment> {
    Ok(PyAugment(Augment::RandomApply(RandomApply::new(
        p,
        augments(transforms)?,
    ))))
}

/// torchvision's `RandomChoice(transforms, p)` (`p`: weights, or equal).
#[pyfunction(name = "RandomChoice")]
#[pyo3(signature = (transforms, p=None))]
fn random_choice(transforms: &Bound<'_, PyAny>, p: Option<Vec<f64>>) -> PyResult<PyAugment> {
    Ok(PyAugment(Augment::RandomChoice(RandomChoice::new(
        p.unwrap_or_default(),
        augments(transforms)?,
    ))))
}

/// torchvision's `RandomOrder(transforms)`.
#[pyfunction(name = "RandomOrder")]
fn random_order(transforms: &Bound<'_, PyAny>) -> PyResult<PyAugment> {
    Ok(PyAugment(Augment::RandomOrder(RandomOrder(augments(
        transforms,
    )?))))
}

/// torchvision's `RandomErasing(p, scale, ratio, value)` on the finished
/// tensor (`value`: a number, one per channel, or `"random"`).
#[pyclass(frozen, module = "tensorprep.train", name = "RandomErasing")]
#[derive(Clone, Copy)]
pub(crate) struct PyErasing(RandomErasing);

#[pymethods]
impl PyErasing {
    #[new]
    #[pyo3(signature = (p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=None),
           text_signature = "(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=None)")]
    fn new(
        p: f64,
        scale: (f64, f64),
        ratio: (f64, f64),
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyErasing> {
        let mut e = RandomErasing::new(p);
        e.scale = scale;
        e.ratio = ratio;
        e.value = match value {
            None => EraseValue::Same(0.0),
            Some(v) if v.extract::<String>().is_ok_and(|s| s == "random") => EraseValue::Random,
            Some(v) => match v.extract::<f32>() {
                Ok(x) => EraseValue::Same(x),
                Err(_) => EraseValue::PerChannel(v.extract()?),
            },
        };
        Ok(PyErasing(e))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let e = slf.get().0;
        let value = match e.value {
            EraseValue::Same(x) => x.into_pyobject(py)?.into_any(),
            EraseValue::PerChannel(v) => v.into_pyobject(py)?.into_any(),
            EraseValue::Random => "random".into_pyobject(py)?.into_any(),
            other => return Err(errors::value(format!("cannot pickle the value {other:?}"))),
        };
        let args = (e.p, e.scale, e.ratio, value).into_pyobject(py)?;
        Ok((slf.get_type().into_any(), args))
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.0)
    }
}

/// torchvision's `ToTensor()` in a pipeline's list: the augmentations
/// before it run on 8-bit pixels, the steps after it (`Normalize`,
/// `RandomErasing`) on the float tensor. Without a `Normalize` after it,
/// the values are 0-1 (torchvision's meaning).
#[pyclass(frozen, module = "tensorprep.train", name = "ToTensor")]
#[derive(Clone, Copy)]
pub(crate) struct PyToTensor;

#[pymethods]
impl PyToTensor {
    #[new]
    fn new() -> PyToTensor {
        PyToTensor
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        Ok((slf.get_type().into_any(), PyTuple::empty(slf.py())))
    }

    fn __repr__(&self) -> &'static str {
        "ToTensor()"
    }
}

/// torchvision's `Normalize(mean, std)` in a pipeline's list, after
/// `ToTensor`: `(x - mean) / std` per channel, in 0-1 units (one value or
/// three). `inplace` is accepted for torchvision's signature and changes
/// nothing (the tensor is written once).
#[pyclass(frozen, module = "tensorprep.train", name = "Normalize")]
#[derive(Clone, Copy)]
pub(crate) struct PyNormalize {
    mean: [f32; 3],
    std: [f32; 3],
}

/// Three channel values from one or three numbers.
fn per_channel(name: &str, values: Vec<f32>) -> PyResult<[f32; 3]> {
    match values.as_slice() {
        [v] => Ok([*v; 3]),
        [r, g, b] => Ok([*r, *g, *b]),
        _ => Err(errors::value(format!(
            "Normalize: {name} has one value or three (RGB), not {}",
            values.len()
        ))),
    }
}

#[pymethods]
impl PyNormalize {
    #[new]
    #[pyo3(signature = (mean, std, inplace=false))]
    fn new(mean: Vec<f32>, std: Vec<f32>, inplace: bool) -> PyResult<PyNormalize> {
        let _ = inplace;
        let (mean, std) = (per_channel("mean", mean)?, per_channel("std", std)?);
        // The library's own check of a normalization (finite, std non-zero,
        // no 8-bit value overflowing), run by building its finish step.
        let spec = FinishSpec {
            normalize: Normalize {
                mean,
                std,
                ..Normalize::IMAGENET
            },
            ..FinishSpec::imagenet()
        };
        Finisher::with_simd(&spec, Simd::Scalar)
            .map_err(|e| errors::value(format!("Normalize: {e}")))?;
        Ok(PyNormalize { mean, std })
    }

    /// The per-channel mean.
    #[getter]
    fn mean(&self) -> (f32, f32, f32) {
        (self.mean[0], self.mean[1], self.mean[2])
    }

    /// The per-channel standard deviation.
    #[getter]
    fn std(&self) -> (f32, f32, f32) {
        (self.std[0], self.std[1], self.std[2])
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let n = slf.get();
        let args = (n.mean.to_vec(), n.std.to_vec()).into_pyobject(slf.py())?;
        Ok((slf.get_type().into_any(), args))
    }

    fn __repr__(&self) -> String {
        format!("Normalize(mean={:?}, std={:?})", self.mean, self.std)
    }
}

/// A pipeline's list as torchvision writes it: augmentations, then
/// optionally `ToTensor`, `Normalize` and `RandomErasing`, in an order the
/// pipeline runs as written or refused.
struct Steps {
    augments: Vec<Augment>,
    /// `ToTensor` was in the list.
    tensor: bool,
    normalize: Option<PyNormalize>,
    erasing: Vec<RandomErasing>,
}

impl Steps {
    fn parse(list: &Bound<'_, PyAny>) -> PyResult<Steps> {
        let mut steps = Steps {
            augments: Vec::new(),
            tensor: false,
            normalize: None,
            erasing: Vec::new(),
        };
        for item in list.try_iter()? {
            let item = item?;
            if let Ok(a) = item.cast::<PyAugment>() {
                // A box-only op (ClampBoundingBoxes, SanitizeBoundingBoxes,
                // ConvertBoundingBoxFormat) may follow ToTensor, as in
                // torchvision's detection recipes: it touches no pixel, so
                // running it before the tensor is made is the same.
                if steps.tensor && !matches!(a.get().0, Augment::Target(_)) {
                    return Err(errors::value(format!(
                        "{:?} after ToTensor: augmentations run on 8-bit pixels before the \
                         tensor is made (as torchvision's PIL transforms do); move it before ToTensor",
                        a.get().0
                    )));
                }
                steps.augments.push(a.get().0.clone());
            } else if item.cast::<PyToTensor>().is_ok() {
                if steps.tensor {
                    return Err(errors::value("ToTensor twice in the list"));
                }
                steps.tensor = true;
            } else if let Ok(n) = item.cast::<PyNormalize>() {
                if !steps.tensor {
                    return Err(errors::value(
                        "Normalize before ToTensor (torchvision normalizes tensors): put ToTensor() first",
                    ));
                }
                if steps.normalize.is_some() {
                    return Err(errors::value("Normalize twice in the list"));
                }
                if !steps.erasing.is_empty() {
                    return Err(errors::value(
                        "RandomErasing before Normalize: the erased values are written in the \
                         normalized tensor; put RandomErasing after Normalize",
                    ));
                }
                steps.normalize = Some(*n.get());
            } else if let Ok(e) = item.cast::<PyErasing>() {
                if !steps.tensor {
                    return Err(errors::value(
                        "RandomErasing before ToTensor (torchvision erases tensors): put it after ToTensor",
                    ));
                }
                steps.erasing.push(e.get().0);
            } else {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "a pipeline's list takes tensorprep.train's augmentations, ToTensor, Normalize \
                     and RandomErasing, not {}",
                    item.get_type()
                )));
            }
        }
        Ok(steps)
    }
}

/// A training pipeline: decode, the augmentations (drawn per sample from
/// the loader's seed, the epoch and the sample's index: the same tensors on
/// any number of workers), then `ToTensor` + `Normalize` into float32 CHW.
///
/// >>> from tensorprep import train
/// >>> p = train.Pipeline([train.RandomResizedCrop(224), train.RandomHorizontalFlip(),
/// ...                     train.ToTensor(), train.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
/// ...                     train.RandomErasing(0.25)])
/// >>> p = train.Pipeline.preset("imagenet-train")
#[pyclass(frozen, module = "tensorprep.train", name = "Pipeline")]
#[derive(Clone)]
pub(crate) struct PyTrainPipeline {
    pub(crate) pipeline: TrainPipeline,
    /// The call that made it (it pickles as that call); `None` for one the
    /// loader gave back without knowing it.
    pub(crate) recipe: Option<recipes::Recipe>,
}

#[pymethods]
impl PyTrainPipeline {
    /// `augments`: the augmentations in order, as torchvision's `Compose`
    /// list: `ToTensor()`, `Normalize(mean, std)` and `RandomErasing` may
    /// close it, in that order (an augmentation after `ToTensor`, or
    /// `RandomErasing` before `Normalize`, is refused rather than
    /// reordered). `mean` / `std` in 0-1 units: `None` takes the list's
    /// `Normalize`, else 0 and 1 when the list has `ToTensor` (values 0-1,
    /// torchvision's meaning), else ImageNet's; giving them beside a
    /// `Normalize` in the list is refused. `dtype` `"float32"`,
    /// `"float16"`, `"uint8"` (values 0-255, no normalization: give mean 0
    /// and std 1/255) or `"int8"`; `layout` `"chw"` or `"hwc"`; `decoder`
    /// as in `Graph.compile`; `fast`: DCT-scaled decoding of each drawn
    /// crop (`True`/`"fast"` or `"draft"`, as in `Graph.compile`); `exif`:
    /// apply the EXIF orientation; `erasing`: `RandomErasing`s on the
    /// finished tensor (or in the list, after `ToTensor`).
    #[new]
    #[pyo3(signature = (augments, *, mean=None, std=None, dtype="float32", layout="chw",
                        decoder=None, fast=names::Scaling(DecodeScaling::Exact), exif=false,
                        erasing=None),
           text_signature = "(augments, *, mean=None, std=None, dtype='float32', layout='chw', \
                             decoder=None, fast=False, exif=False, erasing=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        augments: &Bound<'_, PyAny>,
        mean: Option<(f32, f32, f32)>,
        std: Option<(f32, f32, f32)>,
        dtype: &str,
        layout: &str,
        decoder: Option<&str>,
        fast: names::Scaling,
        exif: bool,
        erasing: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTrainPipeline> {
        // The arguments as given (the lists read once), kept in the recipe.
        let py = augments.py();
        let augments = recipes::tuple(augments)?;
        let erasing = erasing.map(recipes::tuple).transpose()?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("mean", mean)?;
        kwargs.set_item("std", std)?;
        kwargs.set_item("dtype", dtype)?;
        kwargs.set_item("layout", layout)?;
        kwargs.set_item("decoder", decoder)?;
        kwargs.set_item("fast", fast.to_object(py)?)?;
        kwargs.set_item("exif", exif)?;
        kwargs.set_item("erasing", &erasing)?;
        let backend = names::decoder_or_default(decoder)?;
        let mut decode = Decode::exact(backend);
        decode.scaling = fast.0;
        if exif {
            decode.orientation = tensorprep::jpeg::Orientation::Apply;
        }
        let layout = match layout.to_ascii_lowercase().as_str() {
            "chw" => Layout::Chw,
            "hwc" => Layout::Hwc,
            other => {
                return Err(errors::value(format!(
                    "unknown layout `{other}` (chw, hwc)"
                )));
            }
        };
        let steps = Steps::parse(&augments)?;
        let mut normalize = Normalize::IMAGENET;
        match (steps.normalize, mean.is_some() || std.is_some()) {
            (Some(_), true) => {
                return Err(errors::value(
                    "mean= / std= beside a Normalize in the list: give one of them",
                ));
            }
            (Some(n), false) => (normalize.mean, normalize.std) = (n.mean, n.std),
            (None, _) if steps.tensor => (normalize.mean, normalize.std) = ([0.0; 3], [1.0; 3]),
            (None, _) => {}
        }
        if let Some(m) = mean {
            normalize.mean = [m.0, m.1, m.2];
        }
        if let Some(s) = std {
            normalize.std = [s.0, s.1, s.2];
        }
        let finish = Op::finish(
            normalize,
            layout,
            ChannelOrder::Rgb,
            names::dtype(dtype)?,
            Quantization::IDENTITY,
        );
        let mut pipeline = TrainPipeline::new(decode, steps.augments, finish);
        pipeline.erasing = steps.erasing;
        if let Some(list) = &erasing {
            for e in list {
                pipeline.erasing.push(e.cast::<PyErasing>()?.get().0);
            }
        }
        pipeline.compile().map_err(|e| errors::core(&e))?;
        let make = py.get_type::<PyTrainPipeline>();
        let recipe = recipes::recipe(make.as_any(), &PyTuple::new(py, [augments])?, Some(&kwargs))?;
        Ok(PyTrainPipeline {
            pipeline,
            recipe: Some(recipe),
        })
    }

    /// A preset: `"imagenet-train"` (RandomResizedCrop(224) + flip),
    /// `"imagenet-autoaugment"`, `"imagenet-randaugment"`,
    /// `"imagenet-trivialaugment"`, `"imagenet-augmix"` (torchvision's
    /// classification reference recipes).
    #[staticmethod]
    #[pyo3(signature = (name, *, decoder=None))]
    fn preset(py: Python<'_>, name: &str, decoder: Option<&str>) -> PyResult<PyTrainPipeline> {
        let mut pipeline = TrainPipeline::preset(name).ok_or_else(|| {
            errors::value(format!(
                "no training preset `{name}` (known: {})",
                TrainPipeline::PRESETS.join(", ")
            ))
        })?;
        pipeline.decode.backend = names::decoder_or_default(decoder)?;
        let recipe = Self::static_recipe(py, "preset", (name,).into_pyobject(py)?, decoder)?;
        Ok(PyTrainPipeline {
            pipeline,
            recipe: Some(recipe),
        })
    }

    /// An inference graph without random ops (a validation loader's
    /// pipeline: `Graph.preset("imagenet-eval")`); `decoder` as in
    /// `Graph.compile` (libjpeg-turbo by default when built in).
    #[staticmethod]
    #[pyo3(signature = (graph, *, decoder=None))]
    fn from_graph(
        py: Python<'_>,
        graph: &PyGraph,
        decoder: Option<&str>,
    ) -> PyResult<PyTrainPipeline> {
        let mut pipeline =
            TrainPipeline::from_pipeline(&graph.graph.pipeline).map_err(|e| errors::core(&e))?;
        pipeline.decode.backend = names::decoder_or_default(decoder)?;
        let graph = PyGraph {
            graph: graph.graph.clone(),
        };
        let recipe = Self::static_recipe(py, "from_graph", (graph,).into_pyobject(py)?, decoder)?;
        Ok(PyTrainPipeline {
            pipeline,
            recipe: Some(recipe),
        })
    }

    /// The training presets' names.
    #[staticmethod]
    fn presets() -> Vec<&'static str> {
        TrainPipeline::PRESETS.to_vec()
    }

    /// The output's shape per sample (`None` when it varies).
    #[getter]
    fn output_shape(&self) -> PyResult<Option<(usize, usize, usize)>> {
        let plan = self.pipeline.compile().map_err(|e| errors::core(&e))?;
        Ok(plan.output_shape().map(|s| (s[0], s[1], s[2])))
    }

    /// `pipeline(image, target=None, *, seed=None)`: the pipeline run once
    /// (key `seed`, a fresh one when `None`) on a uint8 RGB image (numpy
    /// `(H, W, 3)` or PIL), giving its tensor as a numpy array, or with a
    /// target dict `(tensor, target)` (see `tensorprep._call`).
    #[pyo3(signature = (image, target=None, *, seed=None))]
    fn __call__<'py>(
        slf: &Bound<'py, Self>,
        image: &Bound<'py, PyAny>,
        target: Option<&Bound<'py, PyAny>>,
        seed: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::call::from_python(slf.as_any(), image, target, seed)
    }

    fn __eq__(&self, other: &PyTrainPipeline) -> bool {
        self.pipeline == other.pipeline
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        recipes::reduce(py, self.recipe.as_ref(), "this Pipeline")
    }

    fn __repr__(&self) -> String {
        let p = &self.pipeline;
        let mut s = format!("Pipeline(\n  {}\n", Op::Decode(p.decode));
        for a in &p.augments {
            s += &format!("  {a}\n");
        }
        for op in &p.finish {
            s += &format!("  {op}\n");
        }
        for e in &p.erasing {
            s += &format!("  {e:?}\n");
        }
        s + ")"
    }
}

impl PyTrainPipeline {
    /// The recipe `Pipeline.<method>(*args, decoder=decoder)`.
    fn static_recipe<'py>(
        py: Python<'py>,
        method: &str,
        args: Bound<'py, PyTuple>,
        decoder: Option<&str>,
    ) -> PyResult<recipes::Recipe> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("decoder", decoder)?;
        let make = py.get_type::<PyTrainPipeline>().getattr(method)?;
        recipes::recipe(&make, &args, Some(&kwargs))
    }
}

/// Registers the training classes and the augmentation constructors (and
/// their names, `AUGMENTATIONS`).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDataset>()?;
    m.add_class::<PyAugment>()?;
    m.add_class::<PyErasing>()?;
    m.add_class::<PyTrainPipeline>()?;
    m.add_class::<PyToTensor>()?;
    m.add_class::<PyNormalize>()?;
    let mut names = Vec::new();
    for f in [
        wrap_pyfunction!(random_resized_crop, m)?,
        wrap_pyfunction!(random_crop, m)?,
        wrap_pyfunction!(random_horizontal_flip, m)?,
        wrap_pyfunction!(random_vertical_flip, m)?,
        wrap_pyfunction!(resize, m)?,
        wrap_pyfunction!(center_crop, m)?,
        wrap_pyfunction!(color_jitter, m)?,
        wrap_pyfunction!(gaussian_blur, m)?,
        wrap_pyfunction!(random_rotation, m)?,
        wrap_pyfunction!(random_affine, m)?,
        wrap_pyfunction!(random_perspective, m)?,
        wrap_pyfunction!(random_grayscale, m)?,
        wrap_pyfunction!(random_invert, m)?,
        wrap_pyfunction!(random_posterize, m)?,
        wrap_pyfunction!(random_solarize, m)?,
        wrap_pyfunction!(random_adjust_sharpness, m)?,
        wrap_pyfunction!(random_autocontrast, m)?,
        wrap_pyfunction!(random_equalize, m)?,
        wrap_pyfunction!(auto_augment, m)?,
        wrap_pyfunction!(rand_augment, m)?,
        wrap_pyfunction!(trivial_augment_wide, m)?,
        wrap_pyfunction!(aug_mix, m)?,
        wrap_pyfunction!(random_apply, m)?,
        wrap_pyfunction!(random_choice, m)?,
        wrap_pyfunction!(random_order, m)?,
        wrap_pyfunction!(random_iou_crop, m)?,
        wrap_pyfunction!(random_zoom_out, m)?,
        wrap_pyfunction!(scale_jitter, m)?,
        wrap_pyfunction!(random_shortest_size, m)?,
        wrap_pyfunction!(fixed_size_crop, m)?,
        wrap_pyfunction!(random_photometric_distort, m)?,
        wrap_pyfunction!(clamp_bounding_boxes, m)?,
        wrap_pyfunction!(sanitize_bounding_boxes, m)?,
        wrap_pyfunction!(convert_bounding_box_format, m)?,
    ] {
        names.push(f.getattr("__name__")?.extract::<String>()?);
        m.add_function(f)?;
    }
    // The constructors' names: `from_torchvision` finds a transform's
    // counterpart here and calls it with the transform's attributes named
    // by the constructor's parameters.
    m.add("AUGMENTATIONS", PyTuple::new(m.py(), names)?)?;
    Ok(())
}
