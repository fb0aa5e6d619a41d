//! `Normalize`, `Layout` and `Cast`: the finish ops, run together as the one
//! pass that writes the tensor ([`crate::finish::Finisher`]).

use core::fmt;

use crate::finish::{ChannelOrder, Normalize};
use crate::{DType, Layout, Quantization};

/// The ops' names in messages, and the features graph files using them list.
pub(super) const NORMALIZE_NAMES: (&str, &str) = ("Normalize", "op.normalize");
pub(super) const LAYOUT_NAMES: (&str, &str) = ("Layout", "op.layout");
pub(super) const CAST_NAMES: (&str, &str) = ("Cast", "op.cast");

/// Describes `Op::Normalize`.
pub(super) fn describe_normalize(f: &mut fmt::Formatter<'_>, n: &Normalize) -> fmt::Result {
    let (op, by) = if n.std_reciprocal {
        ("*", "1 / ")
    } else {
        ("/", "")
    };
    write!(
        f,
        "Normalize (v / {} - {:?}) {op} {by}{:?}",
        n.divisor, n.mean, n.std
    )?;
    if n.second_std != [1.0; 3] {
        write!(f, " / {:?}", n.second_std)?;
    }
    Ok(())
}

/// Describes `Op::Layout`.
pub(super) fn describe_layout(
    f: &mut fmt::Formatter<'_>,
    layout: Layout,
    order: ChannelOrder,
) -> fmt::Result {
    write!(f, "Layout {layout:?} {order:?}")
}

/// Describes `Op::Cast`.
pub(super) fn describe_cast(
    f: &mut fmt::Formatter<'_>,
    dtype: DType,
    q: &Quantization,
) -> fmt::Result {
    write!(
        f,
        "Cast {dtype:?} (scale {}, zero point {})",
        q.scale, q.zero_point
    )
}

pub(in crate::pipeline) use compiled::FinishParts;

mod compiled {
    use crate::finish::{ChannelOrder, FinishSpec, Normalize};
    use crate::pipeline::op::{op_error, packed};
    use crate::{DType, Layout, PixelFormat, Quantization, Result};

    /// The finish ops met so far (each at most once).
    #[derive(Clone, Copy, Debug, Default)]
    pub(in crate::pipeline) struct FinishParts {
        normalize: Option<Normalize>,
        layout: Option<(Layout, ChannelOrder)>,
        cast: Option<(DType, Quantization)>,
    }

    impl FinishParts {
        /// Whether any finish op was met (pixel ops must all come before).
        pub(in crate::pipeline) fn started(&self) -> bool {
            self.normalize.is_some() || self.layout.is_some() || self.cast.is_some()
        }

        pub(in crate::pipeline) fn normalize(&mut self, n: Normalize) -> Result<()> {
            if self.normalize.replace(n).is_some() || self.cast.is_some() {
                return Err(op_error(
                    "pipeline",
                    "one Normalize, before Cast (quantization follows normalization)",
                ));
            }
            Ok(())
        }

        pub(in crate::pipeline) fn layout(&mut self, l: Layout, order: ChannelOrder) -> Result<()> {
            if self.layout.replace((l, order)).is_some() {
                return Err(op_error("pipeline", "more than one Layout op"));
            }
            Ok(())
        }

        pub(in crate::pipeline) fn cast(&mut self, dtype: DType, q: Quantization) -> Result<()> {
            if self.cast.replace((dtype, q)).is_some() {
                return Err(op_error("pipeline", "more than one Cast op"));
            }
            Ok(())
        }

        /// The finish pass for pixels of `format` (a Layout and a Cast are
        /// required), checked: its tables are built by [`Finisher::new`].
        pub(in crate::pipeline) fn spec(&self, format: PixelFormat) -> Result<FinishSpec> {
            packed("the finish pass (Normalize/Layout/Cast)", format)?;
            let (layout, order) = self.layout.ok_or(op_error(
                "pipeline",
                "a Layout op (CHW or HWC, channel order) is required",
            ))?;
            let (dtype, quantization) = self.cast.ok_or(op_error(
                "pipeline",
                "a Cast op (output element type) is required",
            ))?;
            if order == ChannelOrder::Gray && format != PixelFormat::Gray8 {
                return Err(op_error(
                    "Layout",
                    "one gray channel needs Gray8 pixels (add ConvertColor to Gray8)",
                ));
            }
            let spec = FinishSpec {
                normalize: self.normalize.unwrap_or(Normalize::RAW),
                order,
                layout,
                dtype,
                quantization,
            };
            spec.check()?;
            Ok(spec)
        }
    }
}

/// The ops in graph files (messages `Normalize`, `Layout` and `Cast`).
#[cfg(feature = "graph")]
pub(crate) mod message {
    use alloc::format;
    use alloc::vec::Vec;

    use crate::finish::{ChannelOrder, Normalize};
    use crate::graph::GraphError;
    use crate::graph::convert::{At, DTYPES, LAYOUTS, ORDERS, feature, from_pb, to_pb};
    use crate::graph::proto as pb;
    use crate::{DType, Layout, Quantization};

    pub(crate) fn normalize_to_message(n: &Normalize) -> pb::Normalize {
        let (domain, divisor) = if n.divisor == 255.0 {
            (pb::ValueDomain::Unit, 0.0)
        } else if n.divisor == 1.0 {
            (pb::ValueDomain::Byte, 0.0)
        } else {
            (pb::ValueDomain::Custom, n.divisor)
        };
        pb::Normalize {
            mean: n.mean.to_vec(),
            std: n.std.to_vec(),
            domain: domain as i32,
            divisor,
            std_reciprocal: n.std_reciprocal,
            second_std: if n.second_std == [1.0; 3] {
                Vec::new()
            } else {
                n.second_std.to_vec()
            },
        }
    }

    pub(crate) fn normalize_from_message(
        n: &pb::Normalize,
        at: At,
    ) -> Result<Normalize, GraphError> {
        let bad = |message: &str| GraphError::invalid(at, message.into());
        let three = |v: &[f32], what: &str| match *v {
            [x] => Ok([x; 3]),
            [a, b, c] => Ok([a, b, c]),
            _ => Err(bad(&format!(
                "{what} must have 1 or 3 values, not {}",
                v.len()
            ))),
        };
        let divisor = match pb::ValueDomain::try_from(n.domain) {
            Ok(pb::ValueDomain::Unit) => 255.0,
            Ok(pb::ValueDomain::Byte) => 1.0,
            Ok(pb::ValueDomain::Custom) => n.divisor,
            _ => return Err(bad("the value domain (0-1, 0-255 or custom) must be given")),
        };
        let normalize = Normalize {
            mean: three(&n.mean, "mean")?,
            std: three(&n.std, "std")?,
            divisor,
            std_reciprocal: n.std_reciprocal,
            second_std: match n.second_std[..] {
                [] => [1.0; 3],
                _ => three(&n.second_std, "second_std")?,
            },
        };
        let valid = divisor.is_finite()
            && divisor > 0.0
            && normalize.mean.iter().all(|m| m.is_finite())
            && normalize
                .std
                .iter()
                .chain(&normalize.second_std)
                .all(|s| s.is_finite() && *s != 0.0);
        if !valid {
            return Err(bad(
                "mean must be finite, std finite and non-zero, divisor finite and positive",
            ));
        }
        Ok(normalize)
    }

    pub(crate) fn layout_to_message(layout: Layout, order: ChannelOrder) -> pb::Layout {
        pb::Layout {
            layout: to_pb(&LAYOUTS, layout) as i32,
            order: to_pb(&ORDERS, order) as i32,
        }
    }

    pub(crate) fn layout_from_message(
        l: &pb::Layout,
        at: At,
    ) -> Result<(Layout, ChannelOrder), GraphError> {
        Ok((
            from_pb(&LAYOUTS, l.layout, "layout", at)?,
            from_pb(&ORDERS, l.order, "order", at)?,
        ))
    }

    pub(crate) fn cast_to_message(dtype: DType, q: &Quantization) -> pb::Cast {
        pb::Cast {
            dtype: to_pb(&DTYPES, dtype) as i32,
            scale: q.scale,
            zero_point: q.zero_point,
        }
    }

    pub(crate) fn cast_from_message(
        c: &pb::Cast,
        at: At,
    ) -> Result<(DType, Quantization), GraphError> {
        if !(c.scale.is_finite() && c.scale > 0.0) {
            return Err(GraphError::invalid(
                at,
                "scale must be finite and positive (1 for none)".into(),
            ));
        }
        Ok((
            from_pb(&DTYPES, c.dtype, "dtype", at)?,
            Quantization {
                scale: c.scale,
                zero_point: c.zero_point,
            },
        ))
    }

    /// The feature a reader needs for this normalize, if any.
    pub(crate) fn normalize_features(n: &Normalize, out: &mut Vec<&'static str>) {
        if n.std_reciprocal {
            out.push(STD_RECIPROCAL);
        }
        if n.second_std != [1.0; 3] {
            out.push(SECOND_STD);
        }
    }

    const STD_RECIPROCAL: &str = "normalize.std_reciprocal";
    const SECOND_STD: &str = "normalize.second_std";

    /// The features a reader needs for a cast to `dtype`.
    pub(crate) fn cast_features(dtype: DType, out: &mut Vec<&'static str>) {
        out.push(feature(&DTYPES, dtype));
    }

    /// Every feature a cast can need.
    pub(crate) fn known_features() -> impl Iterator<Item = &'static str> {
        DTYPES
            .iter()
            .map(|r| r.2)
            .chain([STD_RECIPROCAL, SECOND_STD])
    }
}
