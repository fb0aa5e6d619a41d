//! torchvision's classification weight presets (`ImageClassification`).

use std::format;
use std::string::ToString;
use std::vec::Vec;

use super::torchvision_table::TABLE;
use super::{decode, finish, graph, resize_then_center_crop, shorter_side};
use crate::finish::Normalize;
use crate::graph::{Graph, GraphError};
use crate::jpeg::Orientation;
use crate::{DType, Layout, Quantization};

/// The weights names [`torchvision`] knows, such as `ResNet50_Weights.IMAGENET1K_V2`.
pub fn torchvision_names() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|row| row.0)
}

/// The eval transform of a torchvision weights preset on a PIL image, by its
/// name: `ResNet50_Weights.IMAGENET1K_V2` (case-insensitive; the
/// `_Weights` part may be left out, and `.DEFAULT` or no suffix picks the
/// newest `IMAGENET1K` weights).
///
/// `Resize(resize_size, interpolation, antialias=True)` (shorter side, long
/// side truncated), `CenterCrop(crop_size)` (offsets rounded half to even),
/// `/ 255`, `Normalize(mean, std)`; RGB, CHW, float32. The table is generated
/// from torchvision itself (`tools/torchvision_table.py`).
///
/// ```
/// let g = tensorprep::import::torchvision("resnet50")?; // ResNet50_Weights.IMAGENET1K_V2
/// assert_eq!(g.output.shape, Some([3, 224, 224]));
/// # Ok::<(), tensorprep::graph::GraphError>(())
/// ```
pub fn torchvision(name: &str) -> Result<Graph, GraphError> {
    let wanted = name.to_ascii_lowercase().replace("_weights", "");
    let (model, tag) = match wanted.split_once('.') {
        Some((m, "default")) | Some((m, "")) => (m.to_string(), None),
        Some((m, t)) => (m.to_string(), Some(t.to_string())),
        None => (wanted.clone(), None),
    };
    let matches: Vec<_> = TABLE
        .iter()
        .filter(|row| {
            let lower = row.0.to_ascii_lowercase().replace("_weights", "");
            let (m, t) = lower.split_once('.').unwrap_or((&lower, ""));
            m == model && tag.as_deref().is_none_or(|tag| t == tag)
        })
        .collect();
    // The default: the last IMAGENET1K_V* (torchvision's DEFAULT is the newest).
    let row = matches
        .iter()
        .rev()
        .find(|row| tag.is_some() || row.0.contains(".IMAGENET1K_V"))
        .or(matches.last())
        .ok_or_else(|| {
            GraphError::import(
                "torchvision",
                format!(
                    "no weights named `{name}` (`tensorprep presets --torchvision` lists them)"
                ),
            )
        })?;
    let &(full, resize, crop, filter, mean, std) = *row;
    let mut ops = Vec::from([decode(Orientation::Ignore)]);
    ops.extend(resize_then_center_crop(
        shorter_side(resize),
        filter,
        crop,
        crop,
    ));
    ops.extend(finish(
        Normalize {
            mean,
            std,
            divisor: 255.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        },
        Layout::Chw,
        DType::F32,
        Quantization::IDENTITY,
    ));
    graph(&ops, "input", format!("torchvision {full}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{Op, Resize};
    use crate::resize::Filter;
    use crate::resize::Resample;
    use crate::size::SizeRule;

    #[test]
    fn names_resolve_to_the_documented_presets() {
        let shape = |n: &str| torchvision(n).unwrap();
        let v2 = shape("ResNet50_Weights.IMAGENET1K_V2");
        assert_eq!(
            v2.provenance.source,
            "torchvision ResNet50_Weights.IMAGENET1K_V2"
        );
        assert!(v2.pipeline.ops().iter().any(|op| matches!(
            op,
            Op::Resize(Resize {
                size: SizeRule::ShorterSide { size: 232, .. },
                ..
            })
        )));
        assert_eq!(shape("resnet50").provenance.source, v2.provenance.source);
        assert_eq!(
            shape("resnet50.default").provenance.source,
            v2.provenance.source
        );
        let v1 = shape("resnet50_weights.imagenet1k_v1");
        assert!(v1.pipeline.ops().iter().any(|op| matches!(
            op,
            Op::Resize(Resize {
                size: SizeRule::ShorterSide { size: 256, .. },
                ..
            })
        )));
        let b3 = shape("EfficientNet_B3_Weights.IMAGENET1K_V1");
        assert_eq!(b3.output.shape, Some([3, 300, 300]));
        assert!(b3.pipeline.ops().iter().any(|op| matches!(
            op,
            Op::Resize(Resize {
                resample: Resample::Pillow(Filter::Bicubic),
                ..
            })
        )));
        assert!(torchvision("resnet51").is_err());
        assert!(torchvision_names().count() > 100);
    }
}
