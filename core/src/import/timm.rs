//! timm `pretrained_cfg`: `transforms_imagenet_eval` made explicit.

use std::format;
use std::vec::Vec;

use super::json::{self, Object};
use super::{
    IMAGENET_MEAN, IMAGENET_STD, decode, finish, graph, resize_then_center_crop, shorter_side,
    three,
};
use crate::finish::Normalize;
use crate::geometry::Placement;
use crate::graph::{Graph, GraphError};
use crate::jpeg::Orientation;
use crate::pipeline::{Op, Pad, PadTo};
use crate::resize::Filter;
use crate::size::SizeRule;
use crate::{DType, Layout, Quantization};

const FORMAT: &str = "timm";

/// A timm model's `pretrained_cfg` (a hub `config.json` holding one under
/// `"pretrained_cfg"` works too), as `resolve_data_config` +
/// `create_transform(is_training=False)` run it on a PIL image.
///
/// Missing keys take `resolve_data_config`'s defaults: `input_size`
/// `[3, 224, 224]`, `interpolation` `"bicubic"`, `crop_pct` 0.875,
/// `crop_mode` `"center"`, ImageNet mean and std. The resize side is
/// `floor(size / crop_pct)`; `center` resizes the shorter side to it
/// (torchvision `Resize(int)`; for a non-square input, timm's
/// `ResizeKeepRatio` covering the size),
/// `squash` resizes both sides, `border` fits the image inside and pads it
/// with the mean colour (`CenterCropOrPad`); then a centre crop with
/// torchvision's rounding. `crop_border_pixels` is refused.
pub fn timm(config: &str) -> Result<Graph, GraphError> {
    let value = json::parse(FORMAT, config)?;
    let outer = Object::new(FORMAT, &value)?;
    let cfg = match outer.get("pretrained_cfg") {
        Some(inner) => Object::new(FORMAT, inner)?,
        None => outer,
    };
    let (height, width) = match cfg.sizes("input_size")?.as_deref() {
        None => (224, 224),
        Some(&[3, h, w]) if h > 0 && w > 0 => (h, w),
        Some(other) => {
            return Err(cfg.error(format!(
                "`input_size` must be [3, height, width], not {other:?}"
            )));
        }
    };
    let interpolation = cfg.str("interpolation")?.unwrap_or("bicubic");
    let filter = Filter::from_name(interpolation)
        .ok_or_else(|| cfg.error(format!("interpolation `{interpolation}` is not supported")))?;
    let crop_pct = cfg.f64("crop_pct")?.unwrap_or(0.875);
    if !(crop_pct > 0.0 && crop_pct <= 4.0) {
        return Err(cfg.error(format!("`crop_pct` {crop_pct} is out of range")));
    }
    let scale = |side: u32| -> Result<u32, GraphError> {
        json::size(
            FORMAT,
            "the resize size",
            (f64::from(side) / crop_pct).floor() as i64,
        )
    };
    let (scale_h, scale_w) = (scale(height)?, scale(width)?);
    if cfg.f64("crop_border_pixels")?.is_some_and(|n| n != 0.0) {
        return Err(cfg.error("`crop_border_pixels` (timm's TrimBorder) is not supported".into()));
    }
    let keep_ratio = |longest| SizeRule::KeepRatio {
        width: scale_w,
        height: scale_h,
        longest,
    };
    // (size rule, filter, padding up to the crop before it).
    let (resize, filter, pad) = match cfg.str("crop_mode")?.unwrap_or("center") {
        "center" if scale_h == scale_w => (shorter_side(scale_h), filter, None),
        // (timm before 1.0.16 built this one bilinear whatever the config said.)
        "center" => (keep_ratio(false), filter, None),
        "squash" => (
            SizeRule::Exact {
                width: scale_w,
                height: scale_h,
            },
            filter,
            None,
        ),
        // Fit inside, then CenterCropOrPad: pad what is short of the crop
        // (left and top floor((crop - side) / 2)) with the mean colour
        // `round(255 * mean)`, crop what is over.
        "border" => {
            let mean = cfg
                .doubles("mean")?
                .unwrap_or(IMAGENET_MEAN.map(f64::from).to_vec());
            let fill: Vec<u8> = mean
                .iter()
                .map(|&m| libm::rint(255.0 * m).clamp(0.0, 255.0) as u8)
                .collect();
            let fill = match fill[..] {
                [v] => [v; 3],
                [r, g, b] => [r, g, b],
                _ => return Err(cfg.error("`mean` needs 1 or 3 values".into())),
            };
            let pad = Pad {
                to: PadTo::AtLeast {
                    width,
                    height,
                    placement: Placement::Center,
                },
                fill,
            };
            (keep_ratio(true), filter, Some(pad))
        }
        other => {
            return Err(cfg.error(format!("crop_mode `{other}` is not supported")));
        }
    };
    let stat = |key: &str, default: [f32; 3]| -> Result<[f32; 3], GraphError> {
        match cfg.floats(key)? {
            Some(v) => three(&v).ok_or_else(|| cfg.error(format!("`{key}` needs 1 or 3 values"))),
            None => Ok(default),
        }
    };
    let mut ops = Vec::from([decode(Orientation::Ignore)]);
    let [resize, crop] = resize_then_center_crop(resize, filter, width, height);
    ops.push(resize);
    ops.extend(pad.map(Op::Pad));
    ops.push(crop);
    ops.extend(finish(
        Normalize {
            mean: stat("mean", IMAGENET_MEAN)?,
            std: stat("std", IMAGENET_STD)?,
            divisor: 255.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        },
        Layout::Chw,
        DType::F32,
        Quantization::IDENTITY,
    ));
    let name = cfg
        .str("architecture")
        .ok()
        .flatten()
        .or(outer.str("architecture").ok().flatten())
        .unwrap_or("model");
    graph(&ops, "input", format!("timm pretrained_cfg of {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::Rounding;
    use std::string::ToString;

    #[test]
    fn crop_pct_sets_the_resize_side_by_floor() {
        let g = timm(r#"{"pretrained_cfg": {"input_size": [3, 224, 224], "crop_pct": 0.9, "interpolation": "bicubic"}}"#).unwrap();
        let resize = g.pipeline.ops().iter().find_map(|op| match op {
            Op::Resize(r) => Some(*r),
            _ => None,
        });
        // floor(224 / 0.9) = 248
        assert_eq!(
            resize.map(|r| r.size),
            Some(SizeRule::ShorterSide {
                size: 248,
                max_size: None,
                rounding: Rounding::Truncate
            })
        );
        assert_eq!(g.output.shape, Some([3, 224, 224]));
        let squash =
            timm(r#"{"input_size": [3, 256, 320], "crop_mode": "squash", "crop_pct": 1.0}"#)
                .unwrap();
        assert_eq!(squash.output.shape, Some([3, 256, 320]));
    }

    #[test]
    fn border_and_non_square_center_keep_the_ratio() {
        let ops = |config: &str| timm(config).unwrap().pipeline.ops().to_vec();
        let border = ops(r#"{"crop_mode": "border", "crop_pct": 0.9, "mean": [0.5, 0.25, 0.75]}"#);
        assert!(border.contains(&Op::Resize(crate::pipeline::Resize {
            size: SizeRule::KeepRatio {
                width: 248,
                height: 248,
                longest: true
            },
            resample: crate::resize::Resample::Pillow(Filter::Bicubic),
        })));
        // round(127.5) = 128 (half to even), round(63.75) = 64, round(191.25) = 191.
        assert!(border.contains(&Op::Pad(Pad {
            to: PadTo::AtLeast {
                width: 224,
                height: 224,
                placement: Placement::Center
            },
            fill: [128, 64, 191],
        })));
        let center = ops(r#"{"input_size": [3, 224, 256], "interpolation": "bicubic"}"#);
        assert!(center.contains(&Op::Resize(crate::pipeline::Resize {
            size: SizeRule::KeepRatio {
                width: 292,
                height: 256,
                longest: false
            },
            resample: crate::resize::Resample::Pillow(Filter::Bicubic),
        })));
    }

    #[test]
    fn unsupported_modes_are_named() {
        for (config, needle) in [
            (r#"{"crop_mode": "diagonal"}"#, "diagonal"),
            (r#"{"crop_border_pixels": 2}"#, "TrimBorder"),
            (r#"{"interpolation": "random"}"#, "random"),
            (r#"{"input_size": [1, 224, 224]}"#, "input_size"),
            (r#"{"crop_pct": 0}"#, "crop_pct"),
        ] {
            let e = timm(config).unwrap_err().to_string();
            assert!(e.contains(needle), "{config}: {e}");
        }
    }
}
