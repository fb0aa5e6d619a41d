//! `_native.mindrecord`: a MindRecord set (MindSpore's format) as a dataset.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use tensorprep::train::data::Dataset;
use tensorprep::train::data::mindrecord::{MindRecord, Options};

use crate::errors;
use crate::train::PyDataset;

/// One label column's name, or several.
#[derive(FromPyObject)]
pub(crate) enum Names {
    One(String),
    Many(Vec<String>),
}

impl Names {
    fn into_vec(self) -> Vec<String> {
        match self {
            Names::One(n) => vec![n],
            Names::Many(v) => v,
        }
    }
}

/// A MindRecord set, opened from any one of its data files (the others
/// found through its header): the `image` column (encoded bytes, or pixels
/// of an int array or of bytes with their shape in the `shape` columns),
/// the `label` column(s) (numbers; `None` for none), in
/// `MindDataset(shuffle=False)`'s order.
#[pyfunction]
#[pyo3(signature = (path, image="data", label=Some(Names::One("label".to_owned())), *, shape=None, bgr=false),
       text_signature = "(path, image='data', label='label', *, shape=None, bgr=False)")]
pub(crate) fn mindrecord(
    py: Python<'_>,
    path: PathBuf,
    image: &str,
    label: Option<Names>,
    shape: Option<Vec<String>>,
    bgr: bool,
) -> PyResult<PyDataset> {
    let options = Options::default()
        .image(image)
        .labels(label.map(Names::into_vec).unwrap_or_default())
        .shape(shape.unwrap_or_default())
        .bgr(bgr);
    let d = py
        .detach(|| MindRecord::open_with(&path, &options))
        .map_err(|e| errors::data(&e))?;
    let d: Arc<dyn Dataset> = Arc::new(d);
    Ok(PyDataset::new(d, format!("MindRecord({})", path.display())))
}
