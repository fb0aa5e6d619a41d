//! `ConvertColor`: to a packed colour format. It never runs as a pass of its
//! own: the next op that reads the pixels converts each row as it reads it.

use core::fmt;

use crate::PixelFormat;
use crate::color::YuvRange;

/// The op's name in messages, and the feature a graph file using it lists.
pub(super) const NAMES: (&str, &str) = ("ConvertColor", "op.convert_color");

/// Describes a conversion (the op's fields, as `Op::ConvertColor` holds them).
pub(super) fn describe(
    f: &mut fmt::Formatter<'_>,
    to: PixelFormat,
    range: YuvRange,
) -> fmt::Result {
    write!(f, "ConvertColor to {to:?} ({range:?} YUV)")
}

pub(in crate::pipeline) use compiled::Convert;

mod compiled {
    use crate::arena::Storage;
    use crate::color::{RowConverter, YuvRange};
    use crate::pipeline::op::{Compiling, Step};
    use crate::pipeline::resolve::Resolver;
    use crate::{PixelFormat, Result};

    /// A checked conversion.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(in crate::pipeline) struct Convert {
        pub(in crate::pipeline) to: PixelFormat,
        pub(in crate::pipeline) range: YuvRange,
    }

    impl Convert {
        /// Checks that rows of the current format convert to `to`.
        pub(in crate::pipeline) fn compile(
            to: PixelFormat,
            range: YuvRange,
            cx: &mut Compiling<'_>,
        ) -> Result<()> {
            crate::image::packed_bpp("ConvertColor target", to)?;
            RowConverter::new(cx.format, to, range)?;
            cx.format = to;
            cx.push(Step::Convert(Convert { to, range }))
        }

        /// The next reader converts: nothing is emitted.
        pub(in crate::pipeline) fn resolve<S: Storage>(&self, r: &mut Resolver<'_, S>) {
            r.read.format = self.to;
            r.read.range = self.range;
        }
    }
}

/// The op in graph files (message `ConvertColor`).
#[cfg(feature = "graph")]
pub(crate) mod message {
    use crate::PixelFormat;
    use crate::color::YuvRange;
    use crate::graph::GraphError;
    use crate::graph::convert::{At, PIXEL_FORMATS, YUV_RANGES, from_pb, to_pb};
    use crate::graph::proto as pb;

    pub(crate) fn to_message(to: PixelFormat, range: YuvRange) -> pb::ConvertColor {
        pb::ConvertColor {
            to: to_pb(&PIXEL_FORMATS, to) as i32,
            yuv_range: to_pb(&YUV_RANGES, range) as i32,
        }
    }

    pub(crate) fn from_message(
        c: &pb::ConvertColor,
        at: At,
    ) -> Result<(PixelFormat, YuvRange), GraphError> {
        Ok((
            from_pb(&PIXEL_FORMATS, c.to, "to", at)?,
            from_pb(&YUV_RANGES, c.yuv_range, "yuv_range", at)?,
        ))
    }
}
