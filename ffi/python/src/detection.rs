//! `tensorprep.train.COCO`, `VOC` and `YOLO`: the detection readers as
//! datasets, their options under the Rust names (`Categories`, `Crowd`,
//! `VocCoordinates` as snake-case strings). A sample's `ds[i]` is
//! `(image bytes, target dict)` ([`crate::targets::to_dict`]).

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use tensorprep::train::data::Dataset;
use tensorprep::train::data::coco::{Categories, Coco, CocoOptions, Crowd, MaskMode};
use tensorprep::train::data::voc::{VOC_CLASSES, Voc, VocCoordinates, VocOptions};
use tensorprep::train::data::yolo::{Yolo, YoloOptions};

use crate::errors;
use crate::train::{PyDataset, data_result};

/// `name` among `choices` (`(name, value)`), or a `ValueError` naming the
/// argument and the choices.
fn choose<T: Copy>(argument: &str, name: &str, choices: &[(&str, T)]) -> PyResult<T> {
    choices
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let known: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            errors::value(format!("{argument}={name:?}: one of {}", known.join(", ")))
        })
}

/// `masks=`: `False`, `True` (decoded as pixels) or a mode's name.
#[derive(FromPyObject)]
pub(crate) enum MasksArg {
    Flag(bool),
    Name(String),
}

impl MasksArg {
    fn mode(&self) -> PyResult<MaskMode> {
        match self {
            MasksArg::Flag(false) => Ok(MaskMode::Off),
            MasksArg::Flag(true) => Ok(MaskMode::Pixels),
            MasksArg::Name(name) => choose(
                "masks",
                name,
                &[
                    ("pixels", MaskMode::Pixels),
                    ("polygons", MaskMode::Polygons),
                ],
            ),
        }
    }
}

/// COCO instances: the images of `images_dir` listed by `annotation_file`
/// (`instances_*.json`), in the file's order, each with its objects.
#[pyfunction]
// The Python signature's keyword arguments, one per option.
#[allow(clippy::too_many_arguments)]
#[pyo3(
    signature = (images_dir, annotation_file, masks=MasksArg::Flag(false), *, categories="raw", crowd="keep", keep_empty=true, keypoints=false),
    text_signature = "(images_dir, annotation_file, masks=False, *, categories=\"raw\", crowd=\"keep\", keep_empty=True, keypoints=False)"
)]
pub(crate) fn coco(
    py: Python<'_>,
    images_dir: PathBuf,
    annotation_file: PathBuf,
    masks: MasksArg,
    categories: &str,
    crowd: &str,
    keep_empty: bool,
    keypoints: bool,
) -> PyResult<PyDataset> {
    let options = CocoOptions {
        masks: masks.mode()?,
        categories: choose(
            "categories",
            categories,
            &[
                ("raw", Categories::Raw),
                ("contiguous_from_0", Categories::ContiguousFrom0),
                ("contiguous_from_1", Categories::ContiguousFrom1),
            ],
        )?,
        crowd: choose(
            "crowd",
            crowd,
            &[("keep", Crowd::Keep), ("drop", Crowd::Drop)],
        )?,
        keep_empty,
        keypoints,
    };
    let d = data_result(py.detach(|| Coco::open(&images_dir, &annotation_file, options)))?;
    let names = d.categories().iter().map(|(_, n)| n.clone()).collect();
    let d: Arc<dyn Dataset> = Arc::new(d);
    let mut ds = PyDataset::new(
        d,
        format!(
            "COCO({}, {})",
            images_dir.display(),
            annotation_file.display()
        ),
    );
    ds.set_classes(names);
    Ok(ds)
}

/// Pascal VOC detection under `root` (torchvision's `VOCDetection` root,
/// holding `VOCdevkit/`, or the `VOCdevkit` folder itself).
#[pyfunction]
#[pyo3(signature = (root, year="2012", image_set="train", *, keep_difficult=true, coordinates="as_stored", first_label=0))]
pub(crate) fn voc(
    py: Python<'_>,
    root: PathBuf,
    year: &str,
    image_set: &str,
    keep_difficult: bool,
    coordinates: &str,
    first_label: i64,
) -> PyResult<PyDataset> {
    let options = VocOptions {
        keep_difficult,
        coordinates: choose(
            "coordinates",
            coordinates,
            &[
                ("as_stored", VocCoordinates::AsStored),
                ("zero_based", VocCoordinates::ZeroBased),
            ],
        )?,
        first_label,
    };
    let devkit = root.join("VOCdevkit");
    let base = if devkit.is_dir() {
        devkit
    } else {
        root.clone()
    };
    let d = data_result(py.detach(|| Voc::open(&base, year, image_set, options)))?;
    let d: Arc<dyn Dataset> = Arc::new(d);
    let mut ds = PyDataset::new(
        d,
        format!(
            "VOC({}, year={year}, image_set={image_set})",
            root.display()
        ),
    );
    ds.set_classes(VOC_CLASSES.iter().map(|c| (*c).to_owned()).collect());
    Ok(ds)
}

/// A YOLO split in Ultralytics' layout: `root/images/{split}` with
/// `root/labels/{split}`; `classes`: the dataset YAML's `nc` (a class id
/// at or past it is refused).
#[pyfunction]
#[pyo3(signature = (root, split="train", *, classes=None))]
pub(crate) fn yolo(
    py: Python<'_>,
    root: PathBuf,
    split: &str,
    classes: Option<u32>,
) -> PyResult<PyDataset> {
    let options = YoloOptions { classes };
    let d = data_result(py.detach(|| Yolo::open(&root, split, options)))?;
    let d: Arc<dyn Dataset> = Arc::new(d);
    Ok(PyDataset::new(
        d,
        format!("YOLO({}, split={split})", root.display()),
    ))
}

/// Registers the readers.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(coco, m)?)?;
    m.add_function(wrap_pyfunction!(voc, m)?)?;
    m.add_function(wrap_pyfunction!(yolo, m)?)?;
    Ok(())
}
