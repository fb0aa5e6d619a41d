//! Detection targets across the boundary: a sample's target as a dict of
//! numpy arrays (torchvision v2's layout: `boxes`, `format`, `canvas_size`,
//! `labels`, `masks`, ...) out of a batch, and the same dict from a Python
//! dataset into a [`Target`]; a batch's boxes collated in the three layouts
//! detection trainers take, their vectors handed to numpy without a copy.

#![forbid(unsafe_code)]

use numpy::{PyArray1, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas, Masks, Target};
use tensorprep::train::Batch;

use crate::errors;

/// `v` as a numpy array of `shape` (the vector becomes the array's memory).
fn array<'py, T: numpy::Element>(
    py: Python<'py>,
    v: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    let flat = PyArray1::from_vec(py, v);
    Ok(flat.reshape(shape)?.into_any())
}

/// A sample's target as a dict: `boxes` float32 `(N, 4)`, `format`,
/// `canvas_size` `(H, W)` (when it has boxes), `labels` int64 `(N,)`, and
/// when present `masks` uint8 `(N, H, W)`, `iscrowd`, `area`, `difficult`,
/// `image_id`.
pub(crate) fn to_dict<'py>(py: Python<'py>, t: &Target) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    if let Some(b) = &t.boxes {
        let flat: Vec<f32> = b.boxes().iter().flatten().copied().collect();
        d.set_item("boxes", array(py, flat, &[b.len(), 4])?)?;
        d.set_item("format", b.format().name())?;
        d.set_item("canvas_size", (b.canvas().height, b.canvas().width))?;
    }
    let n = t.labels.len();
    d.set_item("labels", array(py, t.labels.clone(), &[n])?)?;
    if let Some(m) = &t.masks {
        let c = m.canvas();
        let shape = [m.count(), c.height as usize, c.width as usize];
        d.set_item("masks", array(py, m.data().to_vec(), &shape)?)?;
        if t.boxes.is_none() {
            d.set_item("canvas_size", (c.height, c.width))?;
        }
    }
    if !t.iscrowd.is_empty() {
        d.set_item("iscrowd", array(py, t.iscrowd.clone(), &[t.iscrowd.len()])?)?;
    }
    if !t.area.is_empty() {
        d.set_item("area", array(py, t.area.clone(), &[t.area.len()])?)?;
    }
    if !t.difficult.is_empty() {
        let len = t.difficult.len();
        d.set_item("difficult", array(py, t.difficult.clone(), &[len])?)?;
    }
    if let Some(id) = t.image_id {
        d.set_item("image_id", id)?;
    }
    Ok(d)
}

/// The batch's targets, one dict per sample (`None` for a sample without one).
pub(crate) fn of_batch<'py>(py: Python<'py>, batch: &Batch) -> PyResult<Bound<'py, PyAny>> {
    let list = pyo3::types::PyList::empty(py);
    for t in batch.targets() {
        match t {
            Some(t) => list.append(to_dict(py, t)?)?,
            None => list.append(py.None())?,
        }
    }
    Ok(list.into_any())
}

/// The batch's boxes in `layout`: `"padded"` (`boxes` `(B, room, 4)`,
/// `labels` `(B, room)` padded with -1, `counts` `(B,)`), `"flat"`
/// (Ultralytics' `batch_idx`, `cls`, `bboxes`) or `"ragged"` (`offsets`
/// `(B + 1,)`, `labels`, `boxes`).
pub(crate) fn boxes<'py>(
    py: Python<'py>,
    batch: &Batch,
    layout: &str,
    room: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let b = batch.len();
    match layout.to_ascii_lowercase().as_str() {
        "padded" => {
            let p = batch.padded_boxes(room).map_err(|e| errors::load(&e))?;
            let room = p.room;
            d.set_item("boxes", array(py, p.boxes, &[b, room, 4])?)?;
            d.set_item("labels", array(py, p.labels, &[b, room])?)?;
            d.set_item("counts", array(py, p.counts, &[b])?)?;
        }
        other if room.is_some() => {
            return Err(errors::value(format!(
                "room= is the padded layout's, not the {other} layout's"
            )));
        }
        "flat" => {
            let f = batch.flat_boxes();
            let m = f.labels.len();
            d.set_item("batch_idx", array(py, f.batch_index, &[m])?)?;
            d.set_item("cls", array(py, f.labels, &[m])?)?;
            d.set_item("bboxes", array(py, f.boxes, &[m, 4])?)?;
        }
        "ragged" => {
            let r = batch.ragged_boxes();
            let m = r.labels.len();
            d.set_item("offsets", array(py, r.offsets, &[b + 1])?)?;
            d.set_item("labels", array(py, r.labels, &[m])?)?;
            d.set_item("boxes", array(py, r.boxes, &[m, 4])?)?;
        }
        other => {
            return Err(errors::value(format!(
                "unknown layout `{other}` (padded, flat, ragged)"
            )));
        }
    }
    Ok(d)
}

/// `value` as a numpy array of `T` (numpy converts a list or an array of
/// another dtype; a value it cannot convert is an error). Integers must be
/// exact: a fraction, or a value the integer type cannot hold (a label 1.5,
/// an `iscrowd` of 300), is an error rather than numpy's silent cast.
fn numbers<'py, T: numpy::Element>(
    value: &Bound<'py, PyAny>,
    dtype: &str,
) -> Result<(Vec<T>, Vec<usize>), String> {
    let py = value.py();
    let np = py.import("numpy").map_err(|e| e.to_string())?;
    let a = np
        .call_method1("ascontiguousarray", (value, dtype))
        .map_err(|e| format!("not an array of {dtype}: {e}"))?;
    if dtype != "float32" {
        let given = np
            .call_method1("asarray", (value,))
            .map_err(|e| e.to_string())?;
        let exact = np
            .call_method1("array_equal", (&a, &given))
            .and_then(|e| e.is_truthy())
            .map_err(|e| e.to_string())?;
        if !exact {
            return Err(format!("values {dtype} does not hold exactly"));
        }
    }
    let shape = a
        .cast::<PyUntypedArray>()
        .map_err(|e| e.to_string())?
        .shape()
        .to_vec();
    let a = a
        .cast::<numpy::PyArrayDyn<T>>()
        .map_err(|e| e.to_string())?;
    let v = a.to_vec().map_err(|e| e.to_string())?;
    Ok((v, shape))
}

/// A shape as Python writes it: `(2, 3)`, `(4,)`.
fn tuple(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let sides: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", sides.join(", "))
        }
    }
}

/// A per-instance field: one value per instance, `(N,)`.
fn per_instance<'py, T: numpy::Element>(
    d: &Bound<'py, PyDict>,
    key: &str,
    dtype: &str,
) -> Result<Vec<T>, String> {
    let Some(value) = d.get_item(key).map_err(|e| e.to_string())? else {
        return Ok(Vec::new());
    };
    let (v, shape) = numbers::<T>(&value, dtype).map_err(|e| format!("{key}: {e}"))?;
    if shape.len() != 1 {
        return Err(format!("{key} has shape {}, not (N,)", tuple(&shape)));
    }
    Ok(v)
}

/// The keys a target dict may hold.
const KEYS: [&str; 9] = [
    "boxes",
    "format",
    "canvas_size",
    "labels",
    "masks",
    "iscrowd",
    "area",
    "difficult",
    "image_id",
];

/// A box format given as a name (`"XYXY"`, any case) or as torchvision's
/// `BoundingBoxFormat` (its name).
fn format_of(f: &Bound<'_, PyAny>) -> Result<BoxFormat, String> {
    let name = match f.extract::<String>() {
        Ok(s) => s,
        Err(_) => f
            .getattr("name")
            .and_then(|n| n.extract::<String>())
            .map_err(|_| "format is \"XYXY\", \"XYWH\" or \"CXCYWH\"".to_owned())?,
    };
    name.parse::<BoxFormat>().map_err(|e| e.to_string())
}

/// A target dict (the layout [`to_dict`] gives) as a checked [`Target`];
/// `image_size` is the image's `(height, width)` when the dict gives no
/// `canvas_size`. `Err` says what is wrong.
pub(crate) fn from_dict(
    d: &Bound<'_, PyDict>,
    image_size: impl FnOnce() -> Result<(u32, u32), String>,
) -> Result<Target, String> {
    for key in d.keys() {
        let name = key
            .cast::<PyString>()
            .map(|s| s.to_string())
            .map_err(|_| "a target's keys are strings".to_owned())?;
        if !KEYS.contains(&name.as_str()) {
            return Err(format!(
                "a target with the key {name:?} (known: {})",
                KEYS.join(", ")
            ));
        }
    }
    let item = |key: &str| d.get_item(key).map_err(|e| e.to_string());
    // torchvision's tv_tensors.BoundingBoxes carries its format and canvas:
    // read them where the dict does not say (and refuse a disagreement).
    let boxes_attr = |name: &str| -> Option<Bound<'_, PyAny>> {
        d.get_item("boxes")
            .ok()
            .flatten()
            .and_then(|b| b.getattr(name).ok())
            .filter(|a| !a.is_none())
    };
    let said = item("format")?;
    let carried = boxes_attr("format");
    if let (Some(f), Some(c)) = (&said, &carried)
        && format_of(f)? != format_of(c)?
    {
        return Err(
            "format differs from the boxes' own (tv_tensors.BoundingBoxes.format)".to_owned(),
        );
    }
    let format = match said.or(carried) {
        None => BoxFormat::Xyxy,
        Some(f) => format_of(&f)?,
    };
    let said = item("canvas_size")?;
    let carried = boxes_attr("canvas_size");
    let size_of = |c: &Bound<'_, PyAny>| {
        c.extract::<(u32, u32)>()
            .map_err(|_| "canvas_size is (height, width)".to_owned())
    };
    if let (Some(s), Some(c)) = (&said, &carried)
        && size_of(s)? != size_of(c)?
    {
        return Err(
            "canvas_size differs from the boxes' own (tv_tensors.BoundingBoxes.canvas_size)"
                .to_owned(),
        );
    }
    let (height, width) = match said.or(carried) {
        Some(c) => size_of(&c)?,
        None => image_size()?,
    };
    let canvas = Canvas::new(height, width).map_err(|e| format!("canvas_size: {e}"))?;
    let mut t = Target::default();
    if let Some(b) = item("boxes")? {
        let (v, shape) = numbers::<f32>(&b, "float32").map_err(|e| format!("boxes: {e}"))?;
        if shape.len() != 2 || shape[1] != 4 {
            return Err(format!("boxes has shape {}, not (N, 4)", tuple(&shape)));
        }
        if let Some(i) = v
            .chunks_exact(4)
            .position(|b| b.iter().any(|x| !x.is_finite()))
        {
            return Err(format!("box {i} is not finite"));
        }
        let boxes = v
            .chunks_exact(4)
            .map(|b| [b[0], b[1], b[2], b[3]])
            .collect();
        t.boxes = Some(BoundingBoxes::new(boxes, format, canvas));
    }
    t.labels = per_instance(d, "labels", "int64")?;
    t.iscrowd = per_instance(d, "iscrowd", "uint8")?;
    t.area = per_instance(d, "area", "float32")?;
    t.difficult = per_instance(d, "difficult", "uint8")?;
    if let Some(m) = item("masks")? {
        let (v, shape) = numbers::<u8>(&m, "uint8").map_err(|e| format!("masks: {e}"))?;
        let [n, h, w] = shape[..] else {
            return Err(format!("masks has shape {}, not (N, H, W)", tuple(&shape)));
        };
        if (h, w) != (height as usize, width as usize) {
            return Err(format!(
                "masks are {h}x{w}, the canvas {height}x{width} (height x width)"
            ));
        }
        t.masks = Some(Masks::new(v, n, canvas).map_err(|e| format!("masks: {e}"))?);
    }
    if let Some(id) = item("image_id")? {
        t.image_id = Some(
            id.extract::<i64>()
                .map_err(|_| "image_id is an integer".to_owned())?,
        );
    }
    t.check()
        .map_err(|e| format!("an inconsistent target: {e}"))?;
    Ok(t)
}
