//! `Normalize`, `Layout` and `Cast`: the finish ops, run together as the one
//! pass that writes the tensor ([`crate::finish::Finisher`]).

use core::fmt;

use crate::finish::{ChannelOrder, Normalize};
use crate::{DType, Layout, Quantization};

/// Describes `Op::Normalize`.
pub(super) fn describe_normalize(f: &mut fmt::Formatter<'_>, n: &Normalize) -> fmt::Result {
    write!(
        f,
        "Normalize (v / {} - {:?}) / {:?}",
        n.divisor, n.mean, n.std
    )
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

#[cfg(feature = "alloc")]
pub(in crate::pipeline) use compiled::FinishParts;

#[cfg(feature = "alloc")]
mod compiled {
    use crate::finish::{ChannelOrder, FinishSpec, Finisher, Normalize};
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
                    "pipeline: one Normalize, before Cast (quantization follows normalization)",
                ));
            }
            Ok(())
        }

        pub(in crate::pipeline) fn layout(&mut self, l: Layout, order: ChannelOrder) -> Result<()> {
            if self.layout.replace((l, order)).is_some() {
                return Err(op_error("pipeline: more than one Layout op"));
            }
            Ok(())
        }

        pub(in crate::pipeline) fn cast(&mut self, dtype: DType, q: Quantization) -> Result<()> {
            if self.cast.replace((dtype, q)).is_some() {
                return Err(op_error("pipeline: more than one Cast op"));
            }
            Ok(())
        }

        /// The finish pass for pixels of `format` (a Layout and a Cast are required).
        pub(in crate::pipeline) fn finisher(&self, format: PixelFormat) -> Result<Finisher> {
            packed("the finish pass (Normalize/Layout/Cast)", format)?;
            let (layout, order) = self.layout.ok_or(op_error(
                "pipeline: a Layout op (CHW or HWC, channel order) is required",
            ))?;
            let (dtype, quantization) = self.cast.ok_or(op_error(
                "pipeline: a Cast op (output element type) is required",
            ))?;
            if order == ChannelOrder::Gray && format != PixelFormat::Gray8 {
                return Err(op_error(
                    "Layout: one gray channel needs Gray8 pixels (add ConvertColor to Gray8)",
                ));
            }
            Finisher::new(&FinishSpec {
                normalize: self.normalize.unwrap_or(Normalize::RAW),
                order,
                layout,
                dtype,
                quantization,
            })
        }
    }
}
