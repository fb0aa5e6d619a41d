//! Ultralytics YOLO models exported to ONNX: their `metadata_props`.

use std::format;
use std::string::String;
use std::vec::Vec;

use super::{decode, decoder, finish, graph, resize_then_center_crop, shorter_side};
use crate::finish::Normalize;
use crate::graph::{Graph, GraphError};
use crate::jpeg::Orientation;
use crate::pipeline::{Op, Pipeline};
use crate::resize::Filter;
use crate::{DType, Layout, Quantization};

const FORMAT: &str = "ultralytics";

/// `"[640, 640]"` or `"640"` → (height, width).
fn parse_imgsz(v: &str) -> Option<(u32, u32)> {
    let inner = v
        .trim()
        .trim_start_matches(['[', '('])
        .trim_end_matches([']', ')']);
    let sides: Vec<u32> = inner
        .split(',')
        .map(|s| s.trim().parse().ok().filter(|&n: &u32| n > 0))
        .collect::<Option<_>>()?;
    match sides[..] {
        [s] => Some((s, s)),
        [h, w] => Some((h, w)),
        _ => None,
    }
}

/// The preprocessing of an Ultralytics model exported to ONNX, from the
/// model's `metadata_props` (read them with
/// [`graph::onnx::metadata_props`](crate::graph::onnx::metadata_props) or
/// [`graph::onnx_file_metadata_props`](crate::graph::onnx_file_metadata_props)).
///
/// Detection, segmentation, pose and OBB models get the predictor's
/// `LetterBox(imgsz, auto=False)`: fit inside `imgsz` keeping the aspect
/// ratio (sides rounded half to even, OpenCV `INTER_LINEAR`), centred on a
/// canvas of 114 (odd padding to the right and bottom), RGB, `/ 255`, CHW;
/// float16 if the export used `half=True`. Classification models get
/// `classify_transforms(imgsz)`: torchvision `Resize` of the shorter side
/// (Pillow bilinear), `CenterCrop`, `ToTensor`. Images are decoded with EXIF
/// orientation applied, as `cv2.imread` does.
pub fn ultralytics(metadata: &[(String, String)]) -> Result<Graph, GraphError> {
    let get = |k: &str| {
        metadata
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let bad = |m: String| GraphError::import(FORMAT, m);
    let imgsz = get("imgsz")
        .ok_or_else(|| bad("no `imgsz` metadata entry: not an Ultralytics export".into()))?;
    let (height, width) =
        parse_imgsz(imgsz).ok_or_else(|| bad(format!("`imgsz` {imgsz:?} is not a size")))?;
    if let Some(c) = get("channels").filter(|c| c.trim() != "3") {
        return Err(bad(format!("{c}-channel models are not supported")));
    }
    let half = get("args").is_some_and(|a| a.replace(' ', "").contains("'half':True"));
    let task = get("task").unwrap_or("detect");
    let dtype = if half { DType::F16 } else { DType::F32 };
    let mut ops: Vec<Op> = match task {
        // The predictor's LetterBox is the preset's, decoded as cv2.imread does.
        "detect" | "segment" | "pose" | "obb" => {
            let mut p = Pipeline::yolo_letterbox(width, height);
            p.map_decode(|d| *d = decoder(Orientation::Apply));
            p.ops().to_vec()
        }
        "classify" if width == height => {
            let mut ops = Vec::from([decode(Orientation::Apply)]);
            ops.extend(resize_then_center_crop(
                shorter_side(width),
                Filter::Bilinear,
                width,
                height,
            ));
            ops.extend(finish(
                Normalize::UNIT,
                Layout::Chw,
                dtype,
                Quantization::IDENTITY,
            ));
            ops
        }
        other => {
            return Err(bad(format!(
                "task `{other}` with imgsz {imgsz} is not supported"
            )));
        }
    };
    for op in &mut ops {
        if let Op::Cast { dtype: d, .. } = op {
            *d = dtype;
        }
    }
    graph(
        &ops,
        "images",
        format!("ultralytics {task} export, imgsz {imgsz}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn meta(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn detection_exports_letterbox_and_half_switches_the_dtype() {
        let g = ultralytics(&meta(&[
            ("stride", "32"),
            ("task", "detect"),
            ("imgsz", "[480, 640]"),
        ]))
        .unwrap();
        assert_eq!(g.output.shape, Some([3, 480, 640]));
        assert_eq!(g.output.dtype, DType::F32);
        let h = ultralytics(&meta(&[
            ("imgsz", "[640, 640]"),
            ("args", "{'batch': 1, 'half': True, 'int8': False}"),
        ]))
        .unwrap();
        assert_eq!(h.output.dtype, DType::F16);
        let c = ultralytics(&meta(&[("imgsz", "[224, 224]"), ("task", "classify")])).unwrap();
        assert_eq!(c.output.shape, Some([3, 224, 224]));
    }

    #[test]
    fn other_models_are_refused() {
        assert!(ultralytics(&meta(&[("producer", "pytorch")])).is_err());
        assert!(ultralytics(&meta(&[("imgsz", "[a, b]")])).is_err());
        assert!(ultralytics(&meta(&[("imgsz", "640"), ("channels", "1")])).is_err());
        assert!(ultralytics(&meta(&[("imgsz", "640"), ("task", "track")])).is_err());
    }
}
