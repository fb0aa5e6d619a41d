//! The exception classes, one per error family, and the mapping of the
//! library's errors onto them. The message is the library's own.

use pyo3::exceptions::{PyException, PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::{PyErr, create_exception};
use tensorprep::Error as CoreError;
use tensorprep::graph::GraphError as CoreGraphError;
use tensorprep::train::LoadError;
use tensorprep::train::data::DataError as CoreDataError;

create_exception!(
    tensorprep,
    Error,
    PyException,
    "The base class of every error tensorprep raises (catch it to catch them all)."
);
create_exception!(
    tensorprep,
    DecodeError,
    Error,
    "An encoded image that cannot be decoded: truncated, corrupt, a format or a \
     feature this build does not read, or a header claiming more pixels than its data holds."
);
create_exception!(
    tensorprep,
    InputError,
    Error,
    "An input or an output that does not fit: wrong shape, size, pixel format, \
     plane count, a short or read-only `out=` array, a parameter out of range."
);
create_exception!(
    tensorprep,
    LimitError,
    Error,
    "A size over the limits (pixels, bytes, plan size), refused before allocating."
);
create_exception!(
    tensorprep,
    GraphError,
    Error,
    "A graph file, model or importer configuration that cannot be used: not a \
     graph, malformed, a newer schema, an unknown op, a graph that does not fit the model."
);
create_exception!(
    tensorprep,
    DataError,
    Error,
    "A dataset that cannot be opened or a record that cannot be read: a missing \
     file, a corrupt RecordIO/TFRecord/tar record, a bad label."
);
create_exception!(
    tensorprep,
    LoaderError,
    Error,
    "The training loader cannot go on: a bad configuration or resume state, a \
     worker that panicked, a per-batch function that failed."
);

/// Registers the classes in the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("DecodeError", py.get_type::<DecodeError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("LimitError", py.get_type::<LimitError>())?;
    m.add("GraphError", py.get_type::<GraphError>())?;
    m.add("DataError", py.get_type::<DataError>())?;
    m.add("LoaderError", py.get_type::<LoaderError>())?;
    Ok(())
}

/// A library error as the exception of its family.
pub(crate) fn core(e: &CoreError) -> PyErr {
    let message = match e.missing_decoder() {
        // Only a wheel built without the default feature lacks libjpeg-turbo.
        Some(_) => format!(
            "{e}; build the wheel with tensorprep-python's Cargo feature `turbojpeg` \
             (pyproject.toml's default; needs cmake and nasm)"
        ),
        None => e.to_string(),
    };
    match e {
        CoreError::Jpeg { .. }
        | CoreError::Png { .. }
        | CoreError::WebP { .. }
        | CoreError::JpegFeature { .. }
        | CoreError::JpegRestartMarkers { .. }
        | CoreError::TooManyScans { .. }
        | CoreError::UnsupportedImageFormat { .. }
        | CoreError::ImplausibleSize { .. } => DecodeError::new_err(message),
        CoreError::TooManyPixels { .. }
        | CoreError::AllocationTooLarge { .. }
        | CoreError::PlanTooLarge { .. }
        | CoreError::ArenaTooSmall { .. }
        | CoreError::OverBudget { .. } => LimitError::new_err(message),
        CoreError::OutOfMemory { .. } => PyMemoryError::new_err(message),
        CoreError::Io { .. } => PyOSError::new_err(message),
        _ => InputError::new_err(message),
    }
}

/// A graph error as the exception of its family (a pipeline error inside it
/// as the core error's).
pub(crate) fn graph(e: &CoreGraphError) -> PyErr {
    match e {
        CoreGraphError::Pipeline(inner) => core(inner),
        CoreGraphError::Io { error, .. } => io(error.kind(), e.to_string()),
        _ => GraphError::new_err(e.to_string()),
    }
}

/// An I/O failure as Python's class for its kind (`FileNotFoundError`,
/// `PermissionError`, ...), with `message`.
pub(crate) fn io(kind: std::io::ErrorKind, message: String) -> PyErr {
    PyErr::from(std::io::Error::new(kind, message))
}

/// A dataset error (a Python dataset's exception chained as its
/// `__cause__`, with its traceback).
pub(crate) fn data(e: &CoreDataError) -> PyErr {
    caused(DataError::new_err(e.to_string()), e)
}

/// `error` with the exception a Python dataset raised for `cause` as its
/// `__cause__`, if one did.
fn caused(error: PyErr, cause: &CoreDataError) -> PyErr {
    if let Some(raised) = crate::from_python::raised(cause) {
        Python::attach(|py| error.set_cause(py, Some(raised.clone_ref(py))));
    }
    error
}

/// A loader error: a sample's read or decode error as its family's (the
/// message names the sample, then the cause), the rest as [`LoaderError`].
pub(crate) fn load(e: &LoadError) -> PyErr {
    // The cause (a read's, a decode's, a thread spawn's) is the source.
    let message = tensorprep::error::report(e);
    match e {
        LoadError::Read { error, .. }
        | LoadError::LabelWidth {
            error: Some(error), ..
        } => caused(DataError::new_err(message), error),
        LoadError::LabelWidth { .. } => DataError::new_err(message),
        LoadError::Label { .. } | LoadError::LabelCount { .. } => DataError::new_err(message),
        // A sample's boxes that do not fit the padded layout: the sample's
        // data, named by its index.
        LoadError::TooManyBoxes { .. } => DataError::new_err(message),
        LoadError::Decode { error, .. } => {
            let class = core(error);
            Python::attach(|py| PyErr::from_type(class.get_type(py), message))
        }
        // A Lambda that raised: its exception is the cause; a result that
        // does not fit is an input error.
        LoadError::Custom { error, .. } => match crate::lambda::raised(error) {
            Some(raised) => {
                let e = LoaderError::new_err(message);
                Python::attach(|py| e.set_cause(py, Some(raised.clone_ref(py))));
                e
            }
            None => InputError::new_err(message),
        },
        _ => LoaderError::new_err(message),
    }
}

/// A bad argument (Python's `ValueError`, also an [`InputError`]'s base is not:
/// arguments are the caller's code, inputs are data).
pub(crate) fn value(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

/// An input that does not fit.
pub(crate) fn input(message: impl Into<String>) -> PyErr {
    InputError::new_err(message.into())
}
