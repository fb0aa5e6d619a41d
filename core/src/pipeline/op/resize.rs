//! `Resize`: to a size given by a rule, with a given library's resampler.
//! The crops that follow it become the window it computes.

use core::fmt;

use crate::resize::Resample;
use crate::size::SizeRule;

/// The op's name in messages, and the feature a graph file using it lists.
pub(super) const NAMES: (&str, &str) = ("Resize", "op.resize");

/// A resize step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Resize {
    /// How the output size follows from the input size (with its rounding rule).
    pub size: SizeRule,
    /// Which library's resampling to reproduce, and its filter.
    pub resample: Resample,
}

impl fmt::Display for Resize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Resize {:?} with {:?}", self.size, self.resample)?;
        if !self.resample.is_exact() {
            // Say so wherever a graph or plan is described.
            f.write_str(" (not exact: fast_image_resize's arithmetic, not a Python library's)")?;
        }
        Ok(())
    }
}

mod compiled {
    use super::Resize;
    use crate::arena::Storage;
    use crate::pipeline::Affine;
    use crate::pipeline::op::{Compiling, Step, Work, packed};
    use crate::pipeline::resolve::{Read, Resolver, Shape, offset};
    use crate::resize::SourceBox;
    use crate::size::SizeRule;
    use crate::{Rect, Result};

    impl Resize {
        /// Resizing needs packed pixels.
        pub(in crate::pipeline) fn compile(&self, cx: &mut Compiling<'_>) -> Result<()> {
            self.resample.check_built()?;
            packed("Resize", cx.format)?;
            cx.push(Step::Resize(*self))
        }

        /// An exact size is fixed whatever the input.
        pub(in crate::pipeline) fn fixed_size(&self) -> Option<(u32, u32)> {
            match self.size {
                SizeRule::Exact { width, height } => Some((width, height)),
                _ => None,
            }
        }

        /// One resampling stage; the crops right after it narrow its window.
        pub(in crate::pipeline) fn resolve<S: Storage>(
            &self,
            r: &mut Resolver<'_, S>,
        ) -> Result<()> {
            let (w, h) = r.size();
            // The size rule sees the full-size image even when decoding is reduced.
            let rule_size = r.logical.take().unwrap_or((w, h));
            let full = self.size.output_size(rule_size.0, rule_size.1)?;
            let mut window = Rect::new(0, 0, full.0, full.1);
            while let Some(crop) = r.next_crop() {
                window = offset(window, crop.rect(window.width, window.height)?);
            }
            // Reduced decoding after crops: the crops' box in the reduced
            // image (the crops already moved the map to its corner).
            let (source, read) = match (r.crop.take(), r.reduced) {
                (Some(c), Some((sx, sy))) => {
                    let at = |v: u32, s: f64, end: u32| (f64::from(v) * s).min(f64::from(end));
                    let b = SourceBox {
                        x0: at(c.x, sx, w) as f32,
                        y0: at(c.y, sy, h) as f32,
                        x1: at(c.x + c.width, sx, w) as f32,
                        y1: at(c.y + c.height, sy, h) as f32,
                    };
                    (b, (f64::from(b.x1 - b.x0), f64::from(b.y1 - b.y0)))
                }
                _ => (SourceBox::full(w, h), (f64::from(w), f64::from(h))),
            };
            let plan =
                r.tables
                    .resize_plan((w, h), source, full, window, self.resample, r.limits)?;
            r.map = r.map.then(&Affine::scale_translate(
                f64::from(full.0) / read.0,
                f64::from(full.1) / read.1,
                -f64::from(window.x),
                -f64::from(window.y),
            ));
            let reads = Read {
                region: offset(r.read.region, plan.input_region()),
                ..r.read
            };
            let out = Shape {
                format: r.read.format,
                width: window.width,
                height: window.height,
            };
            r.read = r.emit(Work::Resize(plan), out, reads)?;
            r.stored = r.read.format;
            Ok(())
        }
    }
}

/// The op in graph files (message `Resize` and its size rules).
#[cfg(feature = "graph")]
pub(crate) mod message {
    use alloc::vec::Vec;

    use super::Resize;
    use crate::graph::GraphError;
    use crate::graph::convert::{At, feature, from_pb, to_pb};
    use crate::graph::proto as pb;
    use crate::resize::{Filter, Resample};
    use crate::size::{Rounding, SizeRule};

    pub(crate) const ROUNDINGS: [(Rounding, pb::Rounding, &str); 3] = [
        (
            Rounding::Truncate,
            pb::Rounding::Truncate,
            "rounding.truncate",
        ),
        (
            Rounding::HalfEven,
            pb::Rounding::HalfEven,
            "rounding.half_even",
        ),
        (
            Rounding::FloorF32,
            pb::Rounding::FloorF32,
            "rounding.floor_f32",
        ),
    ];
    pub(crate) const RESAMPLES: [(Resample, (pb::ResampleFamily, pb::Filter), &str);
        Resample::ALL.len()] = {
        use pb::Filter as F;
        use pb::ResampleFamily::{
            FastImageResize as Fir, Libyuv, Opencv as OpenCv, Pillow, Torch, TorchFloat,
        };
        [
            (
                Resample::Pillow(Filter::Nearest),
                (Pillow, F::Nearest),
                "resample.pillow.nearest",
            ),
            (
                Resample::Pillow(Filter::Box),
                (Pillow, F::Box),
                "resample.pillow.box",
            ),
            (
                Resample::Pillow(Filter::Bilinear),
                (Pillow, F::Bilinear),
                "resample.pillow.bilinear",
            ),
            (
                Resample::Pillow(Filter::Hamming),
                (Pillow, F::Hamming),
                "resample.pillow.hamming",
            ),
            (
                Resample::Pillow(Filter::Bicubic),
                (Pillow, F::Bicubic),
                "resample.pillow.bicubic",
            ),
            (
                Resample::Pillow(Filter::Lanczos3),
                (Pillow, F::Lanczos),
                "resample.pillow.lanczos",
            ),
            (
                Resample::OpenCvLinear,
                (OpenCv, F::Bilinear),
                "resample.opencv.linear",
            ),
            (
                Resample::OpenCvArea,
                (OpenCv, F::Area),
                "resample.opencv.area",
            ),
            (
                Resample::Torch(Filter::Bilinear),
                (Torch, F::Bilinear),
                "resample.torch.bilinear",
            ),
            (
                Resample::Torch(Filter::Bicubic),
                (Torch, F::Bicubic),
                "resample.torch.bicubic",
            ),
            (
                Resample::TorchFloat(Filter::Bilinear),
                (TorchFloat, F::Bilinear),
                "resample.torch_float.bilinear",
            ),
            (
                Resample::TorchFloat(Filter::Bicubic),
                (TorchFloat, F::Bicubic),
                "resample.torch_float.bicubic",
            ),
            (
                Resample::LibyuvBilinear,
                (Libyuv, F::Bilinear),
                "resample.libyuv.bilinear",
            ),
            (
                Resample::Torch(Filter::Nearest),
                (Torch, F::Nearest),
                "resample.torch.nearest",
            ),
            (
                Resample::TorchNearestExact,
                (Torch, F::NearestExact),
                "resample.torch.nearest_exact",
            ),
            (
                Resample::FastImageResize(Filter::Nearest),
                (Fir, F::Nearest),
                "resample.fast_image_resize.nearest",
            ),
            (
                Resample::FastImageResize(Filter::Box),
                (Fir, F::Box),
                "resample.fast_image_resize.box",
            ),
            (
                Resample::FastImageResize(Filter::Bilinear),
                (Fir, F::Bilinear),
                "resample.fast_image_resize.bilinear",
            ),
            (
                Resample::FastImageResize(Filter::Hamming),
                (Fir, F::Hamming),
                "resample.fast_image_resize.hamming",
            ),
            (
                Resample::FastImageResize(Filter::Bicubic),
                (Fir, F::Bicubic),
                "resample.fast_image_resize.bicubic",
            ),
            (
                Resample::FastImageResize(Filter::Lanczos3),
                (Fir, F::Lanczos),
                "resample.fast_image_resize.lanczos",
            ),
        ]
    };
    /// The size rules' features, in `SizeRule` declaration order.
    const SIZE_RULES: [&str; 7] = [
        "size.exact",
        "size.shorter_side",
        "size.longer_side",
        "size.fit",
        "size.multiple",
        "size.keep_ratio",
        "size.detr",
    ];

    impl Resize {
        pub(crate) fn to_message(self) -> pb::Resize {
            let (family, filter) = to_pb(&RESAMPLES, self.resample);
            pb::Resize {
                size: Some(size_to_pb(self.size)),
                family: family as i32,
                filter: filter as i32,
            }
        }

        pub(crate) fn from_message(r: &pb::Resize, at: At) -> Result<Resize, GraphError> {
            let bad = |message: &str| GraphError::invalid(at, message.into());
            let pair = (
                pb::ResampleFamily::try_from(r.family).unwrap_or(pb::ResampleFamily::Unspecified),
                pb::Filter::try_from(r.filter).unwrap_or(pb::Filter::Unspecified),
            );
            if pair.0 == pb::ResampleFamily::Unspecified || pair.1 == pb::Filter::Unspecified {
                return Err(bad("family and filter must both be given"));
            }
            let resample = RESAMPLES
                .iter()
                .find(|row| row.1 == pair)
                .map(|row| row.0)
                .ok_or_else(|| {
                    bad("this filter is not available for this family \
                         (OpenCV: BILINEAR or AREA; PyTorch: BILINEAR, BICUBIC, NEAREST, \
                         NEAREST_EXACT; libyuv: BILINEAR)")
                })?;
            // A graph whose resampler this build leaves out is refused as it loads.
            resample.check_built()?;
            let size = r
                .size
                .as_ref()
                .ok_or_else(|| bad("the size rule is missing"))?;
            Ok(Resize {
                size: size_from_pb(size, at)?,
                resample,
            })
        }

        /// The features a reader needs for this resize.
        pub(crate) fn features(&self, out: &mut Vec<&'static str>) {
            out.push(feature(&RESAMPLES, self.resample));
            let (rule, rounding) = match self.size {
                SizeRule::Exact { .. } => (0, None),
                SizeRule::ShorterSide { rounding, .. } => (1, Some(rounding)),
                SizeRule::LongerSide { rounding, .. } => (2, Some(rounding)),
                SizeRule::Fit { .. } => (3, Some(Rounding::HalfEven)),
                SizeRule::Multiple { .. } => (4, Some(Rounding::HalfEven)),
                SizeRule::KeepRatio { .. } => (5, Some(Rounding::HalfEven)),
                SizeRule::Detr { .. } => (6, None),
            };
            out.push(SIZE_RULES[rule]);
            out.extend(rounding.map(|r| feature(&ROUNDINGS, r)));
        }
    }

    /// Every feature a resize can need.
    pub(crate) fn known_features() -> impl Iterator<Item = &'static str> {
        SIZE_RULES
            .into_iter()
            .chain(ROUNDINGS.iter().map(|r| r.2))
            .chain(RESAMPLES.iter().map(|r| r.2))
    }

    fn size_to_pb(rule: SizeRule) -> pb::resize::Size {
        use pb::resize::Size;
        match rule {
            SizeRule::Exact { width, height } => Size::Exact(pb::SizeExact { width, height }),
            SizeRule::ShorterSide {
                size,
                max_size,
                rounding,
            } => Size::ShorterSide(pb::SizeShorterSide {
                size,
                max_size: max_size.unwrap_or(0),
                rounding: to_pb(&ROUNDINGS, rounding) as i32,
            }),
            SizeRule::LongerSide { size, rounding } => Size::LongerSide(pb::SizeLongerSide {
                size,
                rounding: to_pb(&ROUNDINGS, rounding) as i32,
            }),
            SizeRule::Fit {
                width,
                height,
                upscale,
            } => Size::Fit(pb::SizeFit {
                width,
                height,
                upscale,
                rounding: pb::Rounding::HalfEven as i32,
            }),
            SizeRule::Multiple {
                width,
                height,
                multiple,
                keep_aspect_ratio,
            } => Size::Multiple(pb::SizeMultiple {
                width,
                height,
                multiple,
                keep_aspect_ratio,
            }),
            SizeRule::KeepRatio {
                width,
                height,
                longest,
            } => Size::KeepRatio(pb::SizeKeepRatio {
                width,
                height,
                longest,
            }),
            SizeRule::Detr {
                shortest,
                longest,
                yolos,
            } => Size::Detr(pb::SizeDetr {
                shortest,
                longest: longest.unwrap_or(0),
                yolos,
            }),
        }
    }

    fn size_from_pb(size: &pb::resize::Size, at: At) -> Result<SizeRule, GraphError> {
        use pb::resize::Size;
        let rounding = |raw| from_pb(&ROUNDINGS, raw, "rounding", at);
        Ok(match size {
            Size::Exact(e) => SizeRule::Exact {
                width: e.width,
                height: e.height,
            },
            Size::ShorterSide(s) => SizeRule::ShorterSide {
                size: s.size,
                max_size: (s.max_size != 0).then_some(s.max_size),
                rounding: rounding(s.rounding)?,
            },
            Size::LongerSide(s) => SizeRule::LongerSide {
                size: s.size,
                rounding: rounding(s.rounding)?,
            },
            Size::Fit(f) => {
                if rounding(f.rounding)? != Rounding::HalfEven {
                    return Err(GraphError::invalid(
                        at,
                        "a fit resize rounds half to even in this schema version".into(),
                    ));
                }
                SizeRule::Fit {
                    width: f.width,
                    height: f.height,
                    upscale: f.upscale,
                }
            }
            Size::Multiple(m) => {
                if m.multiple == 0 {
                    return Err(GraphError::invalid(
                        at,
                        "`multiple` must be at least 1".into(),
                    ));
                }
                SizeRule::Multiple {
                    width: m.width,
                    height: m.height,
                    multiple: m.multiple,
                    keep_aspect_ratio: m.keep_aspect_ratio,
                }
            }
            Size::KeepRatio(k) => SizeRule::KeepRatio {
                width: k.width,
                height: k.height,
                longest: k.longest,
            },
            Size::Detr(d) => SizeRule::Detr {
                shortest: d.shortest,
                longest: (d.longest != 0).then_some(d.longest),
                yolos: d.yolos,
            },
        })
    }
}
