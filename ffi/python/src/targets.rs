//! Detection targets across the boundary: a sample's target as a dict of
//! numpy arrays (torchvision v2's layout: `boxes`, `format`, `canvas_size`,
//! `labels`, `masks`, ...) out of a batch, and the same dict from a Python
//! dataset into a [`Target`]; a batch's boxes collated in the three layouts
//! detection trainers take, their vectors handed to numpy without a copy.

#![forbid(unsafe_code)]

use numpy::{PyArray1, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use tensorprep::targets::{
    BoundingBoxes, BoxFormat, Canvas, InstanceKeyPoints, KeyPoints, Masks, Target,
};
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
/// `canvas_size` `(H, W)` (the canvas of its boxes, masks or key points),
/// `labels` int64 `(N,)`, and when present `masks` uint8 `(N, H, W)`,
/// `semantic` uint8 `(H, W)`, `keypoints` float32 `(N, K, 3)` (x, y,
/// visibility; `(N, K, 2)` when the points have no visibility),
/// `flip_index` int64 `(K,)`, `iscrowd`, `area`, `difficult`, `image_id`,
/// `upright` `True` for a target on the upright image (EXIF orientation
/// applied: YOLO's) rather than on the pixels as stored, and `mask_fill`
/// (what pads and warps bring into masks) when it is not 0.
///
/// A target holding polygons (`train.COCO(masks="polygons")`) gives them as
/// `masks`, rasterised on its canvas.
pub(crate) fn to_dict<'py>(py: Python<'py>, t: &Target) -> PyResult<Bound<'py, PyDict>> {
    let rasterized;
    let t = if t.polygons.is_some() {
        let mut copy = t.clone();
        copy.rasterize_polygons()
            .map_err(|e| crate::errors::core(&e))?;
        rasterized = copy;
        &rasterized
    } else {
        t
    };
    let d = PyDict::new(py);
    if let Some(b) = &t.boxes {
        let flat: Vec<f32> = b.boxes().iter().flatten().copied().collect();
        d.set_item("boxes", array(py, flat, &[b.len(), 4])?)?;
        d.set_item("format", b.format().name())?;
    }
    let canvas = (t.boxes.as_ref().map(BoundingBoxes::canvas))
        .or(t.masks.as_ref().map(Masks::canvas))
        .or(t.semantic.as_ref().map(Masks::canvas))
        .or(t.keypoints.as_ref().map(|k| k.points.canvas()));
    if let Some(c) = canvas {
        d.set_item("canvas_size", (c.height, c.width))?;
    }
    let n = t.labels.len();
    d.set_item("labels", array(py, t.labels.clone(), &[n])?)?;
    if let Some(m) = &t.masks {
        let c = m.canvas();
        let shape = [m.count(), c.height as usize, c.width as usize];
        d.set_item("masks", array(py, m.data().to_vec(), &shape)?)?;
    }
    if let Some(m) = &t.semantic {
        let c = m.canvas();
        let shape = [c.height as usize, c.width as usize];
        d.set_item("semantic", array(py, m.data().to_vec(), &shape)?)?;
    }
    if let Some(k) = &t.keypoints {
        let visible = !k.visibility.is_empty();
        let columns = if visible { 3 } else { 2 };
        let mut flat = Vec::with_capacity(k.points.len() * columns);
        for (i, p) in k.points.points().iter().enumerate() {
            flat.extend_from_slice(p);
            if let Some(&v) = k.visibility.get(i) {
                flat.push(f32::from(v));
            }
        }
        let shape = [k.instances(), k.per_instance, columns];
        d.set_item("keypoints", array(py, flat, &shape)?)?;
        if !k.flip_index.is_empty() {
            let index: Vec<i64> = k.flip_index.iter().map(|&i| i64::from(i)).collect();
            d.set_item("flip_index", array(py, index, &[k.per_instance])?)?;
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
    if t.upright {
        d.set_item("upright", true)?;
    }
    if t.mask_fill != 0 {
        d.set_item("mask_fill", t.mask_fill)?;
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
const KEYS: [&str; 15] = [
    "boxes",
    "format",
    "canvas_size",
    "labels",
    "masks",
    "semantic",
    "keypoints",
    "visibility",
    "flip_index",
    "iscrowd",
    "area",
    "difficult",
    "image_id",
    "upright",
    "mask_fill",
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
    if let Some(m) = item("semantic")? {
        let (v, shape) = numbers::<u8>(&m, "uint8").map_err(|e| format!("semantic: {e}"))?;
        let [h, w] = shape[..] else {
            return Err(format!("semantic has shape {}, not (H, W)", tuple(&shape)));
        };
        if (h, w) != (height as usize, width as usize) {
            return Err(format!(
                "the semantic mask is {h}x{w}, the canvas {height}x{width} (height x width)"
            ));
        }
        t.semantic = Some(Masks::new(v, 1, canvas).map_err(|e| format!("semantic: {e}"))?);
    }
    t.keypoints = keypoints(d, canvas)?;
    if let Some(id) = item("image_id")? {
        t.image_id = Some(
            id.extract::<i64>()
                .map_err(|_| "image_id is an integer".to_owned())?,
        );
    }
    if let Some(u) = item("upright")? {
        t.upright = u
            .extract::<bool>()
            .map_err(|_| "upright is True or False".to_owned())?;
    }
    if let Some(f) = item("mask_fill")? {
        t.mask_fill = f
            .extract::<u8>()
            .map_err(|_| "mask_fill is an integer from 0 to 255".to_owned())?;
    }
    t.check()
        .map_err(|e| format!("an inconsistent target: {e}"))?;
    Ok(t)
}

/// The dict's `keypoints`, `(N, K, 3)` (x, y, visibility) or `(N, K, 2)`
/// with an optional `visibility` `(N, K)`, and its `flip_index` `(K,)`.
fn keypoints(d: &Bound<'_, PyDict>, canvas: Canvas) -> Result<Option<InstanceKeyPoints>, String> {
    let item = |key: &str| d.get_item(key).map_err(|e| e.to_string());
    let Some(k) = item("keypoints")? else {
        for key in ["visibility", "flip_index"] {
            if item(key)?.is_some() {
                return Err(format!("{key} without keypoints"));
            }
        }
        return Ok(None);
    };
    let (v, shape) = numbers::<f32>(&k, "float32").map_err(|e| format!("keypoints: {e}"))?;
    let [n, per, columns @ (2 | 3)] = shape[..] else {
        return Err(format!(
            "keypoints has shape {}, not (N, K, 3) or (N, K, 2)",
            tuple(&shape)
        ));
    };
    let mut points = Vec::with_capacity(n * per);
    let mut visibility = Vec::new();
    for (i, p) in v.chunks_exact(columns).enumerate() {
        if !(p[0].is_finite() && p[1].is_finite()) {
            return Err(format!(
                "key point {} of instance {} is not finite",
                i % per,
                i / per
            ));
        }
        points.push([p[0], p[1]]);
        if let Some(&vis) = p.get(2) {
            if !((0.0..=255.0).contains(&vis) && vis.fract() == 0.0) {
                return Err(format!(
                    "key point {} of instance {}: visibility {vis} is not an integer from 0 to 255",
                    i % per,
                    i / per
                ));
            }
            visibility.push(vis as u8);
        }
    }
    if let Some(given) = item("visibility")? {
        if columns == 3 {
            return Err("visibility given twice: keypoints (N, K, 3) hold it".to_owned());
        }
        let (vis, vshape) =
            numbers::<u8>(&given, "uint8").map_err(|e| format!("visibility: {e}"))?;
        if vshape[..] != [n, per] {
            return Err(format!(
                "visibility has shape {}, not (N, K) = {}",
                tuple(&vshape),
                tuple(&[n, per])
            ));
        }
        visibility = vis;
    }
    let flip_index = match item("flip_index")? {
        None => Vec::new(),
        Some(f) => {
            let (index, fshape) =
                numbers::<i64>(&f, "int64").map_err(|e| format!("flip_index: {e}"))?;
            if fshape[..] != [per] {
                return Err(format!(
                    "flip_index has shape {}, not (K,) = ({per},)",
                    tuple(&fshape)
                ));
            }
            index
                .iter()
                .map(|&i| u16::try_from(i).ok().filter(|&i| usize::from(i) < per))
                .collect::<Option<Vec<u16>>>()
                .ok_or_else(|| format!("flip_index holds a value outside 0..{per}"))?
        }
    };
    InstanceKeyPoints::new(KeyPoints::new(points, canvas), per, visibility, flip_index)
        .map(Some)
        .map_err(|e| format!("keypoints: {e}"))
}
