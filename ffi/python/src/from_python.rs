//! `train.FromPython(obj)`: a map-style Python dataset (`__len__` and
//! `__getitem__(i)` returning `(image, label)`, as PyTorch's `Dataset`s do,
//! or `(image, target)` with a detection target dict) as a [`Dataset`] the
//! loader's read threads call.
//!
//! Each read takes the GIL only for the call and the copy into the sample's
//! recycled buffers (`Python::attach`); everything else the loader does runs
//! without it. The object's length is read once, when the dataset is made.

#![forbid(unsafe_code)]

use std::fmt;

use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PyTuple};
use tensorprep::PixelFormat;
use tensorprep::decode::ImageDecoder;
use tensorprep::jpeg::DecodeOptions;
use tensorprep::train::data::{Content, DataError, Dataset, MAX_SAMPLE_BYTES, Sample};

use crate::train::{PyDataset, labels_of};

/// What a map-style dataset's samples come from, for messages.
const GETITEM: &str = "__getitem__";

/// A Python object read by index.
struct FromPython {
    object: Py<PyAny>,
    /// `len(object)`, read once.
    len: usize,
    /// The object's type, `module.QualName`: the samples' names and the
    /// fingerprint (its `repr` could be the whole dataset's).
    kind: String,
}

/// Why a Python dataset gave no sample; `call` is what was called
/// (`__getitem__`, `the iterator`).
#[derive(Debug)]
pub(crate) enum SampleError {
    /// The call raised: the exception, and its message with where it was
    /// raised, made with the GIL.
    Raised {
        call: &'static str,
        message: String,
        error: PyErr,
    },
    /// The call returned what is not `(image, label)`.
    Returned { call: &'static str, what: String },
}

impl SampleError {
    /// `error`, raised by `call`, with its message made now (with the GIL).
    pub(crate) fn raised(py: Python<'_>, call: &'static str, error: PyErr) -> SampleError {
        let message = message_of(py, &error);
        SampleError::Raised {
            call,
            message,
            error,
        }
    }
}

impl fmt::Display for SampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleError::Raised { call, message, .. } => write!(f, "{call} raised {message}"),
            SampleError::Returned { call, what } => write!(f, "{call} returned {what}"),
        }
    }
}

impl std::error::Error for SampleError {}

/// The Python exception behind a loader's read error, if a Python dataset
/// raised it (for `errors::load` to chain it as the `__cause__`).
pub(crate) fn raised(error: &DataError) -> Option<&PyErr> {
    match error {
        DataError::External { error, .. } => match error.downcast_ref::<SampleError>()? {
            SampleError::Raised { error, .. } => Some(error),
            SampleError::Returned { .. } => None,
        },
        _ => None,
    }
}

/// `Type: message (file:line in function)`: the traceback's last line and
/// its innermost frame.
pub(crate) fn message_of(py: Python<'_>, error: &PyErr) -> String {
    let mut message = error.to_string();
    let mut tb = error.traceback(py).map(Bound::into_any);
    let mut last = None;
    while let Some(t) = tb {
        tb = t.getattr("tb_next").ok().filter(|n| !n.is_none());
        last = Some(t);
    }
    let at = last.and_then(|t| {
        let line: u32 = t.getattr("tb_lineno").ok()?.extract().ok()?;
        let code = t.getattr("tb_frame").ok()?.getattr("f_code").ok()?;
        let file: String = code.getattr("co_filename").ok()?.extract().ok()?;
        let function: String = code.getattr("co_name").ok()?.extract().ok()?;
        Some(format!(" ({file}:{line} in {function})"))
    });
    message.extend(at);
    message
}

/// The name of `value`'s type (`str`, `list`, `PIL.Image.Image`).
pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    let kind = value.get_type();
    match (kind.module(), kind.qualname()) {
        (Ok(m), Ok(q)) if m != "builtins" => format!("{m}.{q}"),
        (_, Ok(q)) => q.to_string(),
        _ => "?".to_owned(),
    }
}

/// `bytes` into the sample's buffer (its room reserved fallibly first).
fn copy_bytes(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    check_size(bytes.len())?;
    out.clear();
    out.try_reserve(bytes.len())
        .map_err(|_| "an image there is no memory for".to_owned())?;
    out.extend_from_slice(bytes);
    Ok(())
}

fn check_size(bytes: usize) -> Result<(), String> {
    if bytes as u64 > MAX_SAMPLE_BYTES {
        return Err(format!(
            "an image of {bytes} bytes (the largest sample is {MAX_SAMPLE_BYTES})"
        ));
    }
    Ok(())
}

/// An image: encoded bytes, or a uint8 array `HxW` / `HxWxC` (C 1, 3, 4;
/// any strides) copied row by row into packed pixels.
fn read_image(image: &Bound<'_, PyAny>, sample: &mut Sample) -> Result<(), String> {
    if let Ok(b) = image.cast::<PyBytes>() {
        copy_bytes(b.as_bytes(), &mut sample.bytes)?;
        sample.content = Content::Encoded;
        return Ok(());
    }
    if image.is_instance_of::<PyByteArray>() || image.is_instance_of::<PyMemoryView>() {
        // A memoryview's length counts its items, `nbytes` its bytes.
        let nbytes = match image.getattr("nbytes") {
            Ok(n) => n.extract::<usize>(),
            Err(_) => image.len(),
        }
        .map_err(|e| format!("an image whose size cannot be read: {e}"))?;
        check_size(nbytes)?;
        let copy = image
            .py()
            .get_type::<PyBytes>()
            .call1((image,))
            .map_err(|e| format!("an image buffer that cannot be read: {e}"))?;
        let copy = copy.cast::<PyBytes>().map_err(|e| e.to_string())?;
        copy_bytes(copy.as_bytes(), &mut sample.bytes)?;
        sample.content = Content::Encoded;
        return Ok(());
    }
    let Ok(array) = image.cast::<PyUntypedArray>() else {
        let kind = type_name(image);
        let hint = if kind.starts_with("PIL.") {
            "; a dataset of PIL images: FromPython(from_torch_dataset(dataset))"
        } else {
            ""
        };
        return Err(format!(
            "an image of type {kind} (an image is encoded bytes: bytes, bytearray, memoryview; \
             or a uint8 numpy array HxW or HxWxC){hint}"
        ));
    };
    let shape = array.shape();
    let (height, width, channels) = match *shape {
        [h, w] => (h, w, 1),
        [h, w, c] => (h, w, c),
        _ => return Err(format!("an image array of shape {shape:?} (HxW or HxWxC)")),
    };
    let format = PixelFormat::of_channels(channels, false).ok_or_else(|| {
        format!("an image array of shape {shape:?}: C is 1 (gray), 3 (RGB) or 4 (RGBA)")
    })?;
    let (Ok(w), Ok(h)) = (u32::try_from(width), u32::try_from(height)) else {
        return Err(format!("an image array of shape {shape:?}"));
    };
    if w == 0 || h == 0 {
        return Err(format!("an empty image array (shape {shape:?})"));
    }
    check_size(array.len())?;
    crate::arrays::copy_u8(array, &mut sample.bytes).map_err(|e| format!("an image array {e}"))?;
    sample.content = Content::Pixels {
        width: w,
        height: h,
        format,
    };
    Ok(())
}

/// `(image, label)` (a tuple or a list of two) into `sample`.
pub(crate) fn read_item(item: &Bound<'_, PyAny>, sample: &mut Sample) -> Result<(), String> {
    let (pair, len) = if let Ok(t) = item.cast::<PyTuple>() {
        (
            (t.len() == 2).then(|| (t.get_item(0), t.get_item(1))),
            Some(t.len()),
        )
    } else if let Ok(l) = item.cast::<PyList>() {
        (
            (l.len() == 2).then(|| (l.get_item(0), l.get_item(1))),
            Some(l.len()),
        )
    } else {
        (None, None)
    };
    let Some((Ok(image), Ok(label))) = pair else {
        let of = len.map(|n| format!(" of {n}")).unwrap_or_default();
        return Err(format!(
            "a {}{of} where (image, label) was expected",
            type_name(item)
        ));
    };
    read_image(&image, sample)?;
    sample.labels.clear();
    if let Ok(target) = label.cast::<PyDict>() {
        // A detection sample: its target, and no class labels.
        let t = crate::targets::from_dict(target, || image_size(sample))
            .map_err(|e| format!("a bad target: {e}"))?;
        sample.target = Some(Box::new(t));
        return Ok(());
    }
    sample.target = None;
    let labels = labels_of(&label).map_err(|e| format!("a bad label: {e}"))?;
    sample.labels.extend_from_slice(&labels);
    Ok(())
}

/// The sample's image size `(height, width)`: the array's, or what the
/// encoded file's headers say (as stored: before any EXIF rotation).
fn image_size(sample: &Sample) -> Result<(u32, u32), String> {
    match sample.content {
        Content::Pixels { width, height, .. } => Ok((height, width)),
        _ => {
            let mut decoder = ImageDecoder::new(DecodeOptions::default());
            let info = decoder.read_info(&sample.bytes).map_err(|e| {
                format!("an image whose size cannot be read for the target's canvas_size ({e}); give canvas_size")
            })?;
            Ok((info.stored_height, info.stored_width))
        }
    }
}

impl FromPython {
    fn failed(&self, index: usize, error: SampleError) -> DataError {
        DataError::External {
            sample: self.describe(index),
            error: Box::new(error),
        }
    }
}

impl crate::user_code::Holds for FromPython {
    fn traverse(&self, visit: &pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.object)
    }
}

impl Dataset for FromPython {
    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        DataError::check_index(index, self.len)?;
        crate::user_code::run("a FromPython dataset's __getitem__", || {
            Python::attach(|py| {
                let item =
                    self.object.bind(py).get_item(index).map_err(|error| {
                        self.failed(index, SampleError::raised(py, GETITEM, error))
                    })?;
                read_item(&item, sample).map_err(|what| {
                    self.failed(
                        index,
                        SampleError::Returned {
                            call: GETITEM,
                            what,
                        },
                    )
                })
            })
        })?;
        sample.id = index as u64;
        Ok(())
    }

    fn describe(&self, index: usize) -> String {
        format!("{}[{index}]", self.kind)
    }

    /// The length and the type's name: a resume needs the same dataset
    /// (the same samples in the same order), which only the user can vouch
    /// for.
    fn fingerprint(&self) -> u64 {
        let mut h = tensorprep::Fnv1a64::new();
        h.update(b"FromPython");
        h.update(self.kind.as_bytes());
        h.update(&(self.len as u64).to_le_bytes());
        h.finish()
    }
}

/// A map-style Python dataset: `len(obj)` read now, `obj[i]` on the
/// loader's read threads returning `(image, label)`.
#[pyfunction]
pub(crate) fn from_python(object: &Bound<'_, PyAny>) -> PyResult<PyDataset> {
    let len = object.len()?;
    let kind = type_name(object);
    let what = format!("FromPython({kind})");
    let dataset = FromPython {
        object: object.clone().unbind(),
        len,
        kind,
    };
    let dataset = std::sync::Arc::new(dataset);
    let holds = std::sync::Arc::clone(&dataset) as std::sync::Arc<dyn crate::user_code::Holds>;
    let dataset: std::sync::Arc<dyn Dataset> = dataset;
    Ok(PyDataset::holding(dataset, what, holds))
}

/// What a sample's bytes hold, for Python: `"encoded"` or `"pixels"`, and
/// the pixels' `(width, height, format)`.
type ContentOf = (&'static str, Option<(u32, u32, String)>);

/// Sample `index` of `dataset` as the loader sees it: `("encoded", None)`
/// or `("pixels", (width, height, format))` (for tests of what a dataset
/// produces before the loader consumes it).
#[pyfunction]
pub(crate) fn sample_content(
    py: Python<'_>,
    dataset: &PyDataset,
    index: usize,
) -> PyResult<ContentOf> {
    let dataset = dataset.dataset();
    let mut sample = Sample::default();
    py.detach(|| dataset.read(index, &mut sample))
        .map_err(|e| crate::errors::data(&e))?;
    Ok(match sample.content {
        Content::Pixels {
            width,
            height,
            format,
        } => ("pixels", Some((width, height, format!("{format:?}")))),
        _ => ("encoded", None),
    })
}
