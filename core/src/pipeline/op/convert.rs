//! `ConvertColor`: to a packed colour format. It never runs as a pass of its
//! own: the next op that reads the pixels converts each row as it reads it.

use core::fmt;

use crate::PixelFormat;
use crate::color::YuvRange;

/// Describes a conversion (the op's fields, as `Op::ConvertColor` holds them).
pub(super) fn describe(
    f: &mut fmt::Formatter<'_>,
    to: PixelFormat,
    range: YuvRange,
) -> fmt::Result {
    write!(f, "ConvertColor to {to:?} ({range:?} YUV)")
}

#[cfg(feature = "alloc")]
pub(in crate::pipeline) use compiled::Convert;

#[cfg(feature = "alloc")]
mod compiled {
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
            cx.steps.push(Step::Convert(Convert { to, range }));
            Ok(())
        }

        /// The next reader converts: nothing is emitted.
        pub(in crate::pipeline) fn resolve(&self, r: &mut Resolver<'_>) {
            r.read.format = self.to;
            r.read.range = self.range;
        }
    }
}
