//! `_native.mindrecord`: a MindRecord set (MindSpore's format) as a dataset.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{PyArray1, PyArrayMethods as _};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use tensorprep::train::data::mindrecord::{MindRecord, Options, Value};

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
    Ok(PyDataset::mindrecord(
        Arc::new(d),
        format!("MindRecord({})", path.display()),
    ))
}

/// Row `index`'s every column as a dict (`Dataset.columns`).
pub(crate) fn columns<'py>(
    py: Python<'py>,
    records: &MindRecord,
    index: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let values = py
        .detach(|| records.columns(index))
        .map_err(|e| errors::data(&e))?;
    let out = PyDict::new(py);
    for (name, value) in values {
        let v = match value {
            Value::Int(i) => i.into_pyobject(py)?.into_any(),
            Value::Float32(x) => f64::from(x).into_pyobject(py)?.into_any(),
            Value::Float64(x) => x.into_pyobject(py)?.into_any(),
            Value::String(t) => t.into_pyobject(py)?.into_any(),
            Value::Bytes(b) => PyBytes::new(py, &b).into_any(),
            Value::Int32s(v, shape) => PyArray1::from_vec(py, v).reshape(shape)?.into_any(),
            Value::Int64s(v, shape) => PyArray1::from_vec(py, v).reshape(shape)?.into_any(),
            Value::Float32s(v, shape) => PyArray1::from_vec(py, v).reshape(shape)?.into_any(),
            Value::Float64s(v, shape) => PyArray1::from_vec(py, v).reshape(shape)?.into_any(),
            other => {
                return Err(errors::value(format!(
                    "column `{name}`: a value this version cannot give Python ({other:?})"
                )));
            }
        };
        out.set_item(name, v)?;
    }
    Ok(out)
}
