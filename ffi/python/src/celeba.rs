//! `tensorprep.train.CelebA`: torchvision's CelebA as a `Dataset`.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use tensorprep::train::data::Dataset;
use tensorprep::train::data::celeba::{AttrValues, CelebA, CelebAOptions, Layout, Split, Target};

use crate::errors;
use crate::train::{PyDataset, data_result};

/// CelebA under `root` (torchvision's layout, `root/celeba/...`; or
/// MindSpore's with `layout="mindspore"`): the images of `split` with the
/// targets `target_types` concatenated into each sample's labels.
#[pyfunction]
#[pyo3(signature = (root, split="train", target_types=None, *, signed=false, layout="torchvision"))]
pub(crate) fn celeba(
    py: Python<'_>,
    root: PathBuf,
    split: &str,
    target_types: Option<Vec<String>>,
    signed: bool,
    layout: &str,
) -> PyResult<PyDataset> {
    let split_value = Split::from_name(split).ok_or_else(|| {
        errors::value(format!(
            "Unknown value '{split}' for argument split. Valid values are {{train, valid, test, all}}."
        ))
    })?;
    let target_types = target_types.unwrap_or_else(|| vec!["attr".to_owned()]);
    let targets = target_types
        .iter()
        .map(|t| {
            Target::from_name(t).ok_or_else(|| {
                errors::value(format!(
                    "Target type \"{t}\" is not recognized (attr, identity, bbox, landmarks)."
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let layout = match layout {
        "torchvision" => Layout::Torchvision,
        "mindspore" => Layout::MindSpore,
        other => {
            return Err(errors::value(format!(
                "layout {other:?}: \"torchvision\" or \"mindspore\""
            )));
        }
    };
    let options = CelebAOptions::new(split_value)
        .targets(&targets)
        .attr_values(if signed {
            AttrValues::Signed
        } else {
            AttrValues::ZeroOne
        })
        .layout(layout);
    let d = data_result(py.detach(|| CelebA::open(&root, &options)))?;
    let d: Arc<dyn Dataset> = Arc::new(d);
    Ok(PyDataset::new(
        d,
        format!(
            "CelebA({}, split={split}, target_type={})",
            root.display(),
            target_types.join(",")
        ),
    ))
}
