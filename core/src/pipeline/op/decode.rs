//! `Decode`: an encoded file to pixels (JPEG, PNG, WebP). Pixel inputs skip it.

use core::fmt;

use crate::PixelFormat;
use crate::jpeg::{Backend, Orientation};

/// How an encoded image is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decode {
    /// Which decoder.
    pub backend: Backend,
    /// Packed format the decoded pixels are delivered in (Gray8, Rgb8, ...).
    pub format: PixelFormat,
    /// Whether the EXIF orientation is applied.
    pub orientation: Orientation,
    /// Reject truncated or corrupt files (recommended).
    pub strict: bool,
    /// Exact (full-size) decoding, or the faster reduced-size one.
    pub scaling: DecodeScaling,
    /// With libjpeg-turbo, decode only the rows and MCU-aligned columns the
    /// output needs. The pixels are the same as with a full decode; off, or
    /// with `zune-jpeg`, the whole image is decoded.
    pub region_of_interest: bool,
}

impl Decode {
    /// Exact decoding with `backend`, RGB output, orientation as stored, strict,
    /// region-of-interest decoding on (it only changes speed).
    pub const fn exact(backend: Backend) -> Decode {
        Decode {
            backend,
            format: PixelFormat::Rgb8,
            orientation: Orientation::Ignore,
            strict: true,
            scaling: DecodeScaling::Exact,
            region_of_interest: true,
        }
    }
}

/// Full-size or DCT-domain reduced-size decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DecodeScaling {
    /// Decode at full size: the pixels are the decoder's exact output.
    #[default]
    Exact,
    /// When the decode is followed by a resize, decode at 1/2, 1/4 or 1/8 —
    /// the smallest scale that stays at least twice the resize's target on
    /// both sides — and resize from there to the same target. Pillow's
    /// `draft()` mode: much faster on large photos, not bit-exact (see the
    /// README for the measured deviation). Needs libjpeg-turbo.
    Fast,
}

impl fmt::Display for Decode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Decode {:?} {:?}, orientation {:?}, {}{:?}",
            self.backend,
            self.format,
            self.orientation,
            if self.strict { "strict, " } else { "lenient, " },
            self.scaling
        )
    }
}

#[cfg(feature = "alloc")]
mod compile {
    use super::{Decode, DecodeScaling};
    use crate::jpeg::{Backend, DecodeOptions, Scale};
    use crate::pipeline::op::{Compiling, Op, op_error};
    use crate::{Limits, Result};

    impl Decode {
        /// Checks the decode against the build and the ops after it (`rest`),
        /// and records it for encoded inputs (pixel inputs skip it).
        pub(in crate::pipeline) fn compile(&self, cx: &mut Compiling<'_>) -> Result<()> {
            if cx.index != 0 {
                return Err(op_error("pipeline: Decode must be the first op"));
            }
            crate::image::packed_bpp("Decode output", self.format)?;
            if !self.backend.is_available() {
                return Err(op_error(
                    "Decode: the libjpeg-turbo backend needs the `turbojpeg` feature",
                ));
            }
            if self.scaling == DecodeScaling::Fast {
                if self.backend != Backend::LibjpegTurbo {
                    return Err(op_error(
                        "Decode: fast (DCT-scaled) decoding needs the libjpeg-turbo backend",
                    ));
                }
                let next = cx
                    .rest
                    .iter()
                    .find(|op| !matches!(op, Op::ConvertColor { .. }));
                if !matches!(next, Some(Op::Resize(_))) {
                    return Err(op_error(
                        "Decode: fast decoding needs a Resize right after it (it decodes at the resize's scale)",
                    ));
                }
            }
            if cx.encoded {
                cx.format = self.format;
                cx.decode = Some(*self);
            }
            Ok(())
        }

        /// The decoder's options at `scale`.
        pub(in crate::pipeline) fn options(&self, scale: Scale, limits: &Limits) -> DecodeOptions {
            DecodeOptions {
                format: self.format,
                orientation: self.orientation,
                strict: self.strict,
                limits: *limits,
                backend: self.backend,
                scale,
            }
        }
    }
}
