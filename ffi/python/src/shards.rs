//! TFRecord and RecordIO datasets over many files (a list, or patterns with
//! `*`, `?` and braces), opened within a descriptor budget.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tensorprep::train::data::recordio::RecordIoDataset;
use tensorprep::train::data::shards::expand_all;
use tensorprep::train::data::tfrecord::{DetectionOptions, Keys, Labels, TfRecordDataset};
use tensorprep::train::data::{DataError, Dataset};

use crate::errors;
use crate::train::{PyDataset, data_result};

fn what(kind: &str, paths: &[String]) -> String {
    match paths {
        [one] => format!("{kind}({one})"),
        many => format!("{kind}([{} ...], {} patterns)", many[0], many.len()),
    }
}

fn budget(open_files: usize) -> PyResult<usize> {
    if open_files == 0 {
        return Err(errors::value("open_files: at least 1"));
    }
    Ok(open_files)
}

/// TFRecord files (`paths`, each a file or a pattern) as one dataset, at
/// most `open_files` of them open at once.
#[pyfunction]
#[pyo3(signature = (paths, *, image_key="image/encoded", label_key="image/class/label", open_files=64, targets=None, masks=false))]
pub(crate) fn tfrecord_files(
    py: Python<'_>,
    paths: Vec<String>,
    image_key: &str,
    label_key: &str,
    open_files: usize,
    targets: Option<&str>,
    masks: bool,
) -> PyResult<PyDataset> {
    let open_files = budget(open_files)?;
    let labels = tfrecord_labels(targets, masks)?;
    let keys = Keys {
        image: image_key,
        label: label_key,
    };
    let d = py.detach(|| -> Result<TfRecordDataset, DataError> {
        TfRecordDataset::open_many(&expand_all(&paths)?, keys, open_files)
            .map(|d| d.with_labels(labels))
    });
    let d: Arc<dyn Dataset> = Arc::new(data_result(d)?);
    Ok(PyDataset::new(d, what("TFRecord", &paths)))
}

/// What a TFRecord's labels are read as: `targets=None` the numbers under
/// the label key, `"object_detection"` a detection target from the TF
/// Object Detection API's keys (`masks`: its PNG instance masks too).
pub(crate) fn tfrecord_labels(targets: Option<&str>, masks: bool) -> PyResult<Labels> {
    match targets {
        None if masks => Err(PyValueError::new_err(
            "masks=True reads detection masks: give targets=\"object_detection\"",
        )),
        None => Ok(Labels::Classification),
        Some("object_detection") => Ok(Labels::ObjectDetection(DetectionOptions { masks })),
        Some(other) => Err(PyValueError::new_err(format!(
            "targets={other:?}: None or \"object_detection\""
        ))),
    }
}

/// RecordIO files (`paths`, each a file or a pattern; each with its `.idx`
/// beside it when there is one) as one dataset, at most `open_files` of
/// them open at once.
#[pyfunction]
#[pyo3(signature = (paths, *, open_files=64))]
pub(crate) fn recordio_files(
    py: Python<'_>,
    paths: Vec<String>,
    open_files: usize,
) -> PyResult<PyDataset> {
    let open_files = budget(open_files)?;
    let d = py.detach(|| -> Result<RecordIoDataset, DataError> {
        RecordIoDataset::open_many(&expand_all(&paths)?, open_files)
    });
    let d: Arc<dyn Dataset> = Arc::new(data_result(d)?);
    Ok(PyDataset::new(d, what("RecordIO", &paths)))
}
