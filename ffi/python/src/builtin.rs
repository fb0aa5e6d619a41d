//! The built-in datasets: CIFAR-10/100 (the binary version, read in Rust;
//! the Python version is unpickled by `train.py` and handed over through
//! [`pixels`]) and MNIST's idx family. Each returns a `Dataset` of pixel
//! samples.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use tensorprep::train::data::Dataset;
use tensorprep::train::data::cifar::{Cifar10, Cifar100, Cifar100Label, Split};
use tensorprep::train::data::combine::InMemory;
use tensorprep::train::data::mnist::{Mnist, Variant};

use crate::errors;
use crate::train::PyDataset;

fn split(train: bool) -> Split {
    if train { Split::Train } else { Split::Test }
}

/// CIFAR-10's binary version under `root` (`cifar-10-batches-bin/`).
#[pyfunction]
#[pyo3(signature = (root, train=true))]
pub(crate) fn cifar10(py: Python<'_>, root: PathBuf, train: bool) -> PyResult<PyDataset> {
    let d = py
        .detach(|| Cifar10::open(&root, split(train)))
        .map_err(|e| errors::data(&e))?;
    let d: Arc<dyn Dataset> = Arc::new(d);
    Ok(PyDataset::new(
        d,
        format!("CIFAR10({}, train={})", root.display(), py_bool(train)),
    ))
}

/// CIFAR-100's binary version under `root` (`cifar-100-binary/`); `label`
/// is "fine" (torchvision's), "coarse" or "both" (coarse then fine, as
/// MindSpore's columns).
#[pyfunction]
#[pyo3(signature = (root, train=true, label="fine"))]
pub(crate) fn cifar100(
    py: Python<'_>,
    root: PathBuf,
    train: bool,
    label: &str,
) -> PyResult<PyDataset> {
    let choice = cifar100_label(label)?;
    let d = py
        .detach(|| Cifar100::open(&root, split(train), choice))
        .map_err(|e| errors::data(&e))?;
    let d: Arc<dyn Dataset> = Arc::new(d);
    Ok(PyDataset::new(
        d,
        format!("CIFAR100({}, train={})", root.display(), py_bool(train)),
    ))
}

fn cifar100_label(label: &str) -> PyResult<Cifar100Label> {
    Ok(match label {
        "fine" => Cifar100Label::Fine,
        "coarse" => Cifar100Label::Coarse,
        "both" => Cifar100Label::Both,
        other => {
            return Err(errors::value(format!(
                "label must be 'fine', 'coarse' or 'both', not {other:?}"
            )));
        }
    })
}

/// An idx dataset under `root` as torchvision lays it out: `variant` is
/// "MNIST", "FashionMNIST" or "KMNIST" (the folder holding `raw/`).
#[pyfunction]
#[pyo3(signature = (root, variant="MNIST", train=true))]
pub(crate) fn mnist(
    py: Python<'_>,
    root: PathBuf,
    variant: &str,
    train: bool,
) -> PyResult<PyDataset> {
    let v = match variant {
        "MNIST" => Variant::Mnist,
        "FashionMNIST" => Variant::Fashion,
        "KMNIST" => Variant::Kmnist,
        other => {
            return Err(errors::value(format!(
                "variant must be 'MNIST', 'FashionMNIST' or 'KMNIST', not {other:?}"
            )));
        }
    };
    let d = py
        .detach(|| Mnist::open(&root, v, split(train)))
        .map_err(|e| errors::data(&e))?;
    let d: Arc<dyn Dataset> = Arc::new(d);
    Ok(PyDataset::new(
        d,
        format!("{variant}({}, train={})", root.display(), py_bool(train)),
    ))
}

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// CIFAR's Python version, unpickled by `train.py`: per batch file, its
/// path, its `data` rows (uint8, 3072 planar bytes per image) and its label
/// lists (CIFAR-10: `labels`; CIFAR-100: `coarse_labels`, `fine_labels`).
/// Core's `samples_from_rows` checks and converts them as the binary
/// version's records; `label` is `None` for CIFAR-10, else CIFAR-100's
/// choice ("fine", "coarse" or "both").
#[pyfunction]
#[pyo3(signature = (batches, label, what))]
pub(crate) fn cifar_pickled(
    batches: Vec<(PathBuf, Bound<'_, pyo3::types::PyBytes>, Vec<Vec<i64>>)>,
    label: Option<&str>,
    what: String,
) -> PyResult<PyDataset> {
    use tensorprep::train::data::cifar::{CIFAR10_CLASSES, CIFAR100_CLASSES, samples_from_rows};
    let (classes, choice) = match label {
        None => (CIFAR10_CLASSES, None),
        Some(l) => (CIFAR100_CLASSES, Some(cifar100_label(l)?)),
    };
    let mut samples = Vec::new();
    for (path, rows, columns) in &batches {
        let columns: Vec<&[i64]> = columns.iter().map(Vec::as_slice).collect();
        let first = samples.len() as u64;
        let mut part = samples_from_rows(path, rows.as_bytes(), &columns, classes, first)
            .map_err(|e| errors::data(&e))?;
        if let Some(choice) = choice {
            for s in &mut part {
                let [coarse, fine] = [s.labels[0], s.labels[1]];
                s.labels.clear();
                match choice {
                    Cifar100Label::Coarse => s.labels.push(coarse),
                    Cifar100Label::Both => s.labels.extend([coarse, fine]),
                    _ => s.labels.push(fine),
                }
            }
        }
        samples.append(&mut part);
    }
    Ok(PyDataset::new(InMemory::new(samples), what))
}

/// Registers the built-in datasets' functions.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cifar10, m)?)?;
    m.add_function(wrap_pyfunction!(cifar100, m)?)?;
    m.add_function(wrap_pyfunction!(mnist, m)?)?;
    m.add_function(wrap_pyfunction!(cifar_pickled, m)?)?;
    Ok(())
}
