//! `Decode`: an encoded file to pixels (JPEG, PNG, WebP). Pixel inputs skip it.

use core::fmt;

use crate::PixelFormat;
use crate::jpeg::{Backend, Orientation};

/// The op's name in messages, and the feature a graph file using it lists.
pub(super) const NAMES: (&str, &str) = ("Decode", "op.decode");

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
///
/// The reduced modes decode a JPEG at 1/2, 1/4 or 1/8 of its size when a
/// resize follows (after crops, if any), then resize from there to the same
/// target: much faster on large photos, not bit-exact (docs/speed.md, "Pipelines", gives
/// the measured deviation). They need libjpeg-turbo. At 1/8, progressive files
/// skip the scans such a decode never reads, so damage confined to those
/// scans is not reported (as in Pillow, which ignores libjpeg's warnings).
///
/// ```
/// use tensorprep::pipeline::DecodeScaling;
/// assert_eq!(DecodeScaling::Fast.reducing_gap(), Some(2));
/// assert_eq!(DecodeScaling::Draft.reducing_gap(), Some(1));
/// assert_eq!(DecodeScaling::Exact.reducing_gap(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum DecodeScaling {
    /// Decode at full size: the pixels are the decoder's exact output.
    #[default]
    Exact,
    /// The smallest scale that stays at least twice the resize's target on
    /// both sides (Pillow's `thumbnail()`, whose `reducing_gap` is 2).
    Fast,
    /// The smallest scale that still covers the resize's target on both
    /// sides: Pillow's `draft(mode, target)`. Faster than [`Self::Fast`]
    /// (at 1/8 on photos 8x the target), with a further resize of less
    /// than 2x left to smooth the DCT scaling.
    Draft,
}

impl DecodeScaling {
    /// How many times the resize's target the reduced decode keeps on both
    /// sides at least; `None` for the exact mode.
    pub const fn reducing_gap(self) -> Option<u32> {
        match self {
            DecodeScaling::Exact => None,
            DecodeScaling::Fast => Some(2),
            DecodeScaling::Draft => Some(1),
        }
    }
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
                return Err(op_error("pipeline", "Decode must be the first op"));
            }
            crate::image::packed_bpp("Decode output", self.format)?;
            if !self.backend.is_available() {
                return Err(op_error(
                    "Decode",
                    "the libjpeg-turbo backend is not in this build",
                ));
            }
            if self.scaling != DecodeScaling::Exact {
                if self.backend != Backend::LibjpegTurbo {
                    return Err(op_error(
                        "Decode",
                        "reduced-size (fast or draft, DCT-scaled) decoding needs the libjpeg-turbo backend",
                    ));
                }
                // Colour conversions and crops may come first: the scale
                // follows what the resize reads.
                let next = cx.rest.iter().find(|op| {
                    !matches!(
                        op,
                        Op::ConvertColor { .. } | Op::Crop(_) | Op::CenterCrop(_)
                    )
                });
                if !matches!(next, Some(Op::Resize(_))) {
                    return Err(op_error(
                        "Decode",
                        "reduced-size (fast or draft) decoding needs a Resize right after it, or after crops (it decodes at the resize's scale)",
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
        #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
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

/// The op in graph files (`proto/tensorprep.proto`, message `Decode`).
#[cfg(feature = "graph")]
pub(crate) mod message {
    use alloc::vec::Vec;

    use super::{Decode, DecodeScaling};
    use crate::graph::GraphError;
    use crate::graph::convert::{At, PIXEL_FORMATS, feature, from_pb, to_pb};
    use crate::graph::proto as pb;
    use crate::jpeg::{Backend, Orientation};

    pub(crate) const DECODERS: [(Backend, pb::Decoder); 2] = [
        (Backend::Zune, pb::Decoder::ZuneJpeg),
        (Backend::LibjpegTurbo, pb::Decoder::LibjpegTurbo),
    ];
    pub(crate) const ORIENTATIONS: [(Orientation, pb::Orientation); 2] = [
        (Orientation::Ignore, pb::Orientation::Ignore),
        (Orientation::Apply, pb::Orientation::Apply),
    ];
    pub(crate) const SCALINGS: [(DecodeScaling, pb::DecodeScaling, &str); 3] = [
        (
            DecodeScaling::Exact,
            pb::DecodeScaling::Exact,
            "decode.exact",
        ),
        (DecodeScaling::Fast, pb::DecodeScaling::Fast, "decode.fast"),
        (
            DecodeScaling::Draft,
            pb::DecodeScaling::Draft,
            "decode.draft",
        ),
    ];

    impl Decode {
        pub(crate) fn to_message(self) -> pb::Decode {
            pb::Decode {
                decoder: to_pb(&DECODERS, self.backend) as i32,
                format: to_pb(&PIXEL_FORMATS, self.format) as i32,
                orientation: to_pb(&ORIENTATIONS, self.orientation) as i32,
                lenient: !self.strict,
                scaling: to_pb(&SCALINGS, self.scaling) as i32,
                full_decode: !self.region_of_interest,
            }
        }

        pub(crate) fn from_message(d: &pb::Decode, at: At) -> Result<Decode, GraphError> {
            Ok(Decode {
                backend: from_pb(&DECODERS, d.decoder, "decoder", at)?,
                format: from_pb(&PIXEL_FORMATS, d.format, "format", at)?,
                orientation: from_pb(&ORIENTATIONS, d.orientation, "orientation", at)?,
                strict: !d.lenient,
                scaling: from_pb(&SCALINGS, d.scaling, "scaling", at)?,
                region_of_interest: !d.full_decode,
            })
        }

        /// The features a reader needs for this decode.
        pub(crate) fn features(&self, out: &mut Vec<&'static str>) {
            out.push(feature(&SCALINGS, self.scaling));
        }
    }

    /// Every feature a decode can need.
    pub(crate) fn known_features() -> impl Iterator<Item = &'static str> {
        SCALINGS.iter().map(|r| r.2)
    }
}
