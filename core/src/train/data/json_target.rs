//! A sample's detection target written as JSON: the `.json` member of a
//! WebDataset sample ([`WebDataset::open_with_targets`](super::webdataset::WebDataset::open_with_targets)).
//!
//! One of two shapes, an object either way (other keys are ignored):
//!
//! - tensorprep's, torchvision's target dict as JSON:
//!   `{"boxes": [[x1, y1, x2, y2], ...], "format": "XYXY", "labels": [3, ...]}`
//!   with `format` one of `XYXY`, `XYWH`, `CXCYWH` (required: there is no
//!   safe default), in pixels of the image as stored; optional per-object
//!   lists `iscrowd` (0 or 1), `area`, `difficult` (0 or 1), and
//!   `keypoints`, `[N, K, 3]` (`x, y, visibility` with COCO's visibility 0,
//!   1 or 2) or `[N, K, 2]`;
//! - COCO's annotations of one image:
//!   `{"annotations": [{"bbox": [x, y, w, h], "category_id": 3, "iscrowd": 0, "area": 120.5}, ...]}`,
//!   boxes XYWH, labels the raw `category_id`, `iscrowd` 0 when absent,
//!   `area` given by every annotation or by none.
//!
//! Both may give `image_id` (an integer) and `height` and `width`, which
//! must then be the image's own (its header's stored size, the canvas the
//! boxes lie on). Refused, with what is wrong: JSON that does not parse (its
//! line and column), both `boxes` and `annotations` or neither, a list whose
//! length is not the boxes', a box that is not four finite numbers (float32
//! included), a negative width or height (XYWH, CXCYWH) or a maximum below
//! its minimum (XYXY), a label that is not an integer, a flag other than 0
//! or 1, a negative area, key points of uneven count or a visibility other
//! than 0, 1, 2.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde::Deserialize;

use crate::targets::{BoundingBoxes, BoxFormat, Canvas, InstanceKeyPoints, KeyPoints, Target};

/// The largest target member read (4 MiB; a line of JSON per object).
pub const MAX_TARGET_BYTES: u64 = 4 << 20;

#[derive(Deserialize)]
struct File {
    boxes: Option<Vec<[f64; 4]>>,
    format: Option<String>,
    labels: Option<Vec<i64>>,
    iscrowd: Option<Vec<i64>>,
    area: Option<Vec<f64>>,
    difficult: Option<Vec<i64>>,
    keypoints: Option<Vec<Vec<Vec<f64>>>>,
    annotations: Option<Vec<Annotation>>,
    image_id: Option<i64>,
    height: Option<u32>,
    width: Option<u32>,
}

#[derive(Deserialize)]
struct Annotation {
    bbox: [f64; 4],
    category_id: i64,
    #[serde(default)]
    iscrowd: i64,
    area: Option<f64>,
}

/// The per-object fields, as read.
struct Objects {
    boxes: Vec<[f64; 4]>,
    format: BoxFormat,
    labels: Vec<i64>,
    iscrowd: Vec<i64>,
    area: Vec<f64>,
    difficult: Vec<i64>,
}

/// Parses `json` into a target on `canvas` (the image's stored size).
///
/// ```
/// use tensorprep::targets::{BoxFormat, Canvas};
/// use tensorprep::train::data::json_target::parse;
///
/// let t = parse(br#"{"boxes": [[1, 2, 3, 4]], "format": "XYWH", "labels": [7]}"#, Canvas::new(10, 20)?)
///     .map_err(|e| tensorprep::train::data::DataError::Invalid { what: e })?;
/// assert_eq!(t.boxes.as_ref().unwrap().boxes(), &[[1.0, 2.0, 3.0, 4.0]]);
/// assert_eq!(t.boxes.as_ref().unwrap().format(), BoxFormat::Xywh);
/// assert_eq!(t.labels, [7]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse(json: &[u8], canvas: Canvas) -> Result<Target, String> {
    let file: File = serde_json::from_slice(json)
        .map_err(|e| alloc::format!("line {} column {}: {e}", e.line(), e.column()))?;
    for (key, stated, actual) in [
        ("height", file.height, canvas.height),
        ("width", file.width, canvas.width),
    ] {
        if let Some(v) = stated
            && v != actual
        {
            return Err(alloc::format!(
                "`{key}` is {v}, the image's header says {actual}"
            ));
        }
    }
    let objects = match (file.boxes, file.annotations) {
        (Some(_), Some(_)) => return Err("both `boxes` and `annotations`".into()),
        (None, None) => return Err("neither `boxes` nor `annotations`".into()),
        (Some(boxes), None) => {
            let format = match file.format.as_deref() {
                Some("XYXY") => BoxFormat::Xyxy,
                Some("XYWH") => BoxFormat::Xywh,
                Some("CXCYWH") => BoxFormat::Cxcywh,
                Some(other) => {
                    return Err(alloc::format!(
                        "`format` {other:?}: not XYXY, XYWH or CXCYWH"
                    ));
                }
                None => return Err("`boxes` without their `format`".into()),
            };
            let labels = file.labels.ok_or("`boxes` without `labels`")?;
            Objects {
                boxes,
                format,
                labels,
                iscrowd: file.iscrowd.unwrap_or_default(),
                area: file.area.unwrap_or_default(),
                difficult: file.difficult.unwrap_or_default(),
            }
        }
        (None, Some(annotations)) => {
            if file.labels.is_some() || file.format.is_some() {
                return Err(
                    "`labels` or `format` beside `annotations` (COCO's are in each)".into(),
                );
            }
            let given = annotations.iter().filter(|a| a.area.is_some()).count();
            if given != 0 && given != annotations.len() {
                return Err(alloc::format!(
                    "`area` in {given} of {} annotations: in every one or none",
                    annotations.len()
                ));
            }
            Objects {
                boxes: annotations.iter().map(|a| a.bbox).collect(),
                format: BoxFormat::Xywh,
                labels: annotations.iter().map(|a| a.category_id).collect(),
                iscrowd: annotations.iter().map(|a| a.iscrowd).collect(),
                area: annotations.iter().filter_map(|a| a.area).collect(),
                difficult: file.difficult.unwrap_or_default(),
            }
        }
    };
    let n = objects.boxes.len();
    for (key, len, optional) in [
        ("labels", objects.labels.len(), false),
        ("iscrowd", objects.iscrowd.len(), true),
        ("area", objects.area.len(), true),
        ("difficult", objects.difficult.len(), true),
    ] {
        if len != n && !(optional && len == 0) {
            return Err(alloc::format!(
                "`{key}` holds {len} values for {n} boxes: one per object"
            ));
        }
    }
    let mut boxes = Vec::with_capacity(n);
    for (i, b) in objects.boxes.iter().enumerate() {
        let f = b.map(|v| v as f32);
        if !f.iter().all(|v| v.is_finite()) {
            return Err(alloc::format!(
                "box {i}: {b:?} is not four finite float32 numbers"
            ));
        }
        let bad = match objects.format {
            BoxFormat::Xyxy => f[2] < f[0] || f[3] < f[1],
            _ => f[2] < 0.0 || f[3] < 0.0,
        };
        if bad {
            return Err(alloc::format!(
                "box {i}: {b:?} has a negative size ({})",
                objects.format.name()
            ));
        }
        boxes.push(f);
    }
    let flags = |key: &str, values: &[i64]| {
        values
            .iter()
            .map(|&v| match v {
                0 | 1 => Ok(v as u8),
                _ => Err(alloc::format!("`{key}`: {v}, not 0 or 1")),
            })
            .collect::<Result<Vec<u8>, String>>()
    };
    let mut area = Vec::with_capacity(objects.area.len());
    for &a in &objects.area {
        let f = a as f32;
        if !f.is_finite() || f < 0.0 {
            return Err(alloc::format!("`area`: {a}, not a finite size at least 0"));
        }
        area.push(f);
    }
    let keypoints = match file.keypoints {
        None => None,
        Some(k) => Some(keypoints(&k, n, canvas)?),
    };
    let target = Target {
        image_id: file.image_id,
        boxes: Some(BoundingBoxes::new(boxes, objects.format, canvas)),
        labels: objects.labels,
        iscrowd: flags("iscrowd", &objects.iscrowd)?,
        area,
        difficult: flags("difficult", &objects.difficult)?,
        keypoints,
        ..Target::default()
    };
    target.check().map_err(|e| e.to_string())?;
    Ok(target)
}

/// `[N, K, 3]` or `[N, K, 2]` key points.
fn keypoints(k: &[Vec<Vec<f64>>], n: usize, canvas: Canvas) -> Result<InstanceKeyPoints, String> {
    if k.len() != n {
        return Err(alloc::format!(
            "`keypoints` holds {} instances for {n} boxes: one per object",
            k.len()
        ));
    }
    let per = k.first().map_or(0, Vec::len);
    if per == 0 && n > 0 {
        return Err("`keypoints`: instances of no points".into());
    }
    let dims = k.first().and_then(|p| p.first()).map_or(3, Vec::len);
    if dims != 2 && dims != 3 {
        return Err(alloc::format!(
            "`keypoints`: points of {dims} numbers, not [x, y, visibility] or [x, y]"
        ));
    }
    let mut points = Vec::with_capacity(n * per);
    let mut visibility = Vec::new();
    for (i, instance) in k.iter().enumerate() {
        if instance.len() != per {
            return Err(alloc::format!(
                "`keypoints` instance {i}: {} points, the first has {per}",
                instance.len()
            ));
        }
        for p in instance {
            if p.len() != dims {
                return Err(alloc::format!(
                    "`keypoints` instance {i}: a point of {} numbers, the first has {dims}",
                    p.len()
                ));
            }
            let (x, y) = (p[0] as f32, p[1] as f32);
            if !x.is_finite() || !y.is_finite() {
                return Err(alloc::format!(
                    "`keypoints` instance {i}: a point that is not finite"
                ));
            }
            points.push([x, y]);
            if dims == 3 {
                let v = p[2];
                if v != 0.0 && v != 1.0 && v != 2.0 {
                    return Err(alloc::format!(
                        "`keypoints` instance {i}: visibility {v}, not 0, 1 or 2"
                    ));
                }
                visibility.push(v as u8);
            }
        }
    }
    InstanceKeyPoints::new(KeyPoints::new(points, canvas), per, visibility, Vec::new())
        .map_err(|e| alloc::format!("`keypoints`: {e}"))
}
