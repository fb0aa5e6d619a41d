//! `train.FromIterable(fn)`: an iterable Python dataset (a generator
//! factory: `fn()` returns an iterator of `(image, label)`, as
//! `FromPython`'s items) as an [`Iterable`] read through
//! [`IterableDataset`]'s shuffle buffer.
//!
//! `fn` is called at the start of each epoch (and again for a resumed or
//! re-read one); each item is taken on a loader's read thread holding the
//! GIL only for the call and the copy into the sample's recycled buffers.

#![forbid(unsafe_code)]

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyIterator;
use tensorprep::train::data::{
    DataError, Dataset, Iterable, IterableDataset, Sample, SampleStream, StreamOptions,
};

use crate::from_python::{SampleError, read_item, type_name};
use crate::train::PyDataset;

/// What is called for each item, for messages.
const ITERATOR: &str = "the iterator";

/// What runs a `FromIterable`'s Python code, for the refusal of a loader call.
const ITERATING: &str = "a FromIterable dataset's function or iterator";

/// A Python callable returning a fresh iterator each time it is called.
struct FromIterable {
    factory: Py<PyAny>,
    /// `FromIterable(module.name)`: the stream's name in messages.
    what: String,
    /// The callable's `module.QualName`, for the fingerprint.
    kind: String,
}

/// One iterator of the factory's.
struct PyStream {
    iterator: Py<PyIterator>,
    what: String,
    /// Items taken so far.
    taken: u64,
}

impl PyStream {
    fn failed(&self, error: SampleError) -> DataError {
        DataError::External {
            sample: format!("{} item {}", self.what, self.taken),
            error: Box::new(error),
        }
    }
}

impl SampleStream for PyStream {
    fn next(&mut self, sample: &mut Sample) -> Result<bool, DataError> {
        crate::user_code::run(ITERATING, || {
            Python::attach(|py| {
                let item = match self.iterator.bind(py).clone().next() {
                    None => return Ok(false),
                    Some(Err(error)) => {
                        return Err(self.failed(SampleError::raised(py, ITERATOR, error)));
                    }
                    Some(Ok(item)) => item,
                };
                read_item(&item, sample).map_err(|what| {
                    self.failed(SampleError::Returned {
                        call: ITERATOR,
                        what,
                    })
                })?;
                self.taken += 1;
                Ok(true)
            })
        })
    }
}

impl crate::user_code::Holds for FromIterable {
    fn traverse(&self, visit: &pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.factory)
    }
}

impl Iterable for FromIterable {
    fn open(&self, _epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
        crate::user_code::run(ITERATING, || {
            Python::attach(|py| {
                let failed = |error| DataError::External {
                    sample: self.what.clone(),
                    error: Box::new(SampleError::raised(py, "calling it", error)),
                };
                let made = self.factory.bind(py).call0().map_err(failed)?;
                let iterator = made.try_iter().map_err(failed)?;
                Ok(Box::new(PyStream {
                    iterator: iterator.unbind(),
                    what: self.what.clone(),
                    taken: 0,
                }) as Box<dyn SampleStream>)
            })
        })
    }

    fn describe(&self) -> String {
        self.what.clone()
    }

    /// The callable's name: a resume needs the same stream, which only the
    /// user can vouch for (the length and buffer are mixed in by the dataset).
    fn fingerprint(&self) -> u64 {
        let mut h = tensorprep::Fnv1a64::new();
        h.update(b"FromIterable");
        h.update(self.kind.as_bytes());
        h.finish()
    }
}

/// An iterable Python dataset: `fn()` returns an iterator of `(image,
/// label)`; `length` samples per epoch (`None`: counted now by iterating
/// once), a shuffle buffer of `buffer` samples (`None`: the library's
/// default) of at most `max_buffer_bytes`.
#[pyfunction]
#[pyo3(signature = (factory, length=None, buffer=None, max_buffer_bytes=None))]
pub(crate) fn from_iterable(
    factory: &Bound<'_, PyAny>,
    length: Option<usize>,
    buffer: Option<usize>,
    max_buffer_bytes: Option<u64>,
) -> PyResult<PyDataset> {
    let buffer = buffer.unwrap_or(StreamOptions::DEFAULT_BUFFER);
    if !factory.is_callable() {
        return Err(crate::errors::value(format!(
            "FromIterable takes a function returning an iterator (a generator function), not a {}; \
             for an iterator made once, wrap it: FromIterable(lambda: iter(items)) re-reads `items` each epoch",
            type_name(factory)
        )));
    }
    let name = factory
        .getattr("__qualname__")
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| type_name(factory));
    let module = factory
        .getattr("__module__")
        .and_then(|n| n.extract::<String>())
        .unwrap_or_default();
    let kind = if module.is_empty() {
        name
    } else {
        format!("{module}.{name}")
    };
    let what = format!("FromIterable({kind})");
    let source = Arc::new(FromIterable {
        factory: factory.clone().unbind(),
        what: what.clone(),
        kind,
    });
    let mut options = StreamOptions::new(length).buffer(buffer);
    if let Some(bytes) = max_buffer_bytes {
        options = options.max_buffer_bytes(bytes);
    }
    let holds = Arc::clone(&source) as Arc<dyn crate::user_code::Holds>;
    let dataset = IterableDataset::new(source, options).map_err(|e| crate::errors::data(&e))?;
    let dataset: Arc<dyn Dataset> = Arc::new(dataset);
    Ok(PyDataset::holding(dataset, what, holds))
}
