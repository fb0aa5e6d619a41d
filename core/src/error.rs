//! The one error type of the crate.

use core::fmt;

use crate::PixelFormat;
use crate::decode::ImageFormat;
use crate::jpeg::{Backend, JpegFeature};

/// Result alias used by every fallible function of the crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Everything that can go wrong, as small `Copy` values that carry numbers.
///
/// Every op checks its inputs and returns one of these instead of panicking,
/// whatever the caller passes (including hostile JPEG bytes).
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Width or height is zero or above [`crate::Limits::MAX_DIMENSION`].
    InvalidDimensions {
        /// Requested width.
        width: u64,
        /// Requested height.
        height: u64,
    },
    /// The image has more pixels than the configured limit allows.
    TooManyPixels {
        /// Pixels the image would have.
        pixels: u64,
        /// The limit in force.
        limit: u64,
    },
    /// An allocation would exceed the configured limit (or `usize`).
    AllocationTooLarge {
        /// Bytes that would be allocated.
        bytes: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The buffers a plan needs for one input (the decoded image and the
    /// intermediate images alive at once) total more than the limit.
    PlanTooLarge {
        /// Bytes in all.
        bytes: u64,
        /// The limit in force ([`crate::Limits::max_alloc_bytes`]).
        limit: u64,
    },
    /// A training sample's image needs more working memory than the
    /// worker's budget ([`crate::train::LoaderConfig::decode_budget`]).
    OverBudget {
        /// Bytes the image is counted to need.
        bytes: u64,
        /// The budget.
        limit: u64,
    },
    /// A training pipeline's custom op (`train.Lambda`) at `position` failed
    /// or returned an image that does not fit; the worker's state keeps why
    /// ([`crate::train::TrainState::take_custom_error`]).
    CustomOp {
        /// The op's position in the pipeline (ops numbered in order).
        position: u32,
    },
    /// The system could not provide memory the limits allow (an address-space
    /// limit, a full machine): the call failed instead of aborting.
    OutOfMemory {
        /// Bytes asked for.
        bytes: u64,
    },
    /// The caller's memory for a plan built without an allocator
    /// ([`crate::arena::Arena`]) is smaller than the plan needs.
    ArenaTooSmall {
        /// Bytes needed up to and including the request that failed.
        needed: u64,
        /// Bytes of the arena.
        available: u64,
    },
    /// A row stride is smaller than the bytes of one row.
    StrideTooSmall {
        /// Index of the plane (0 for packed formats).
        plane: u8,
        /// The stride given.
        stride: usize,
        /// The smallest valid stride.
        min: usize,
    },
    /// A row stride so large that the rows it spaces out would end past the
    /// end of the address space: no buffer can hold them.
    StrideTooLarge {
        /// Index of the plane (0 for packed formats).
        plane: u8,
        /// The stride given.
        stride: usize,
        /// The plane's rows.
        rows: usize,
    },
    /// A pixel or tensor buffer is shorter than its shape needs.
    BufferTooSmall {
        /// Index of the plane (0 for packed formats and tensors).
        plane: u8,
        /// Length given.
        len: usize,
        /// Length needed.
        needed: usize,
    },
    /// A tensor buffer does not have the number of elements the output needs.
    TensorSize {
        /// Elements given.
        len: usize,
        /// Elements needed.
        needed: usize,
    },
    /// The number of planes given does not match the pixel format.
    WrongPlaneCount {
        /// The format.
        format: PixelFormat,
        /// Planes given.
        given: u8,
    },
    /// An op does not accept this pixel format.
    UnsupportedFormat {
        /// Name of the op.
        op: &'static str,
        /// The format given.
        format: PixelFormat,
    },
    /// Source and destination formats must agree for this op.
    FormatMismatch {
        /// Format the op expected.
        expected: PixelFormat,
        /// Format given.
        found: PixelFormat,
    },
    /// The destination has the wrong size for this op.
    SizeMismatch {
        /// Width and height the op needs.
        expected: (u32, u32),
        /// Width and height given.
        found: (u32, u32),
    },
    /// A rectangle does not lie inside the image.
    RectOutOfBounds {
        /// The rectangle.
        rect: crate::Rect,
        /// Image width.
        width: u32,
        /// Image height.
        height: u32,
    },
    /// A crop of a chroma-subsampled image must start on a chroma sample: even
    /// coordinates for YUV 4:2:0, an even column for YUV 4:2:2.
    UnalignedCrop {
        /// The rectangle.
        rect: crate::Rect,
    },
    /// A parameter is out of range, or does not fit with the others.
    InvalidParameter {
        /// The parameter, or the op or type it belongs to when the reason
        /// names several (`"RandomAffine"`, `"shard"`, `"sigma"`).
        name: &'static str,
        /// What is wrong with it ("scale must be positive, min <= max").
        reason: &'static str,
    },
    /// A kernel path was asked for that this CPU (or, without `std`, the
    /// target the crate was compiled for) does not have.
    UnsupportedCpu {
        /// The path asked for.
        requested: crate::cpu::Simd,
    },
    /// The input is of another kind than the plan or op takes (encoded bytes
    /// given to a plan compiled for raw pixels, or the reverse).
    WrongInputKind {
        /// What takes the input ("this plan", "a plan in caller memory").
        op: &'static str,
        /// The kind it takes.
        expected: InputKind,
        /// The kind given.
        found: InputKind,
    },
    /// A tensor's element type differs from the one the output was set up for.
    DTypeMismatch {
        /// The element type of the finish spec.
        expected: crate::DType,
        /// The element type of the tensor given.
        found: crate::DType,
    },
    /// The JPEG could not be decoded.
    Jpeg {
        /// What kind of failure.
        kind: JpegErrorKind,
    },
    /// The bytes are in no format this build decodes (`found` names the format
    /// when its signature is known: "GIF is not supported").
    UnsupportedImageFormat {
        /// The format recognised from the leading bytes, if any.
        found: Option<ImageFormat>,
    },
    /// An op, resampler, pixel format or image format that this build of the
    /// library leaves out: `feature` is the Cargo feature that builds it.
    NotBuilt {
        /// What was asked for ("libyuv's bilinear resize", "WebP decoding").
        what: &'static str,
        /// The Cargo feature of `tensorprep` (and of the C library) that builds it.
        feature: &'static str,
    },
    /// The PNG could not be decoded.
    Png {
        /// What kind of failure.
        kind: DecodeErrorKind,
    },
    /// The WebP could not be decoded.
    WebP {
        /// What kind of failure.
        kind: DecodeErrorKind,
    },
    /// A valid JPEG that uses a coding feature the chosen decoder lacks; the
    /// message names the decoder that has it, if any ([`Error::missing_decoder`]
    /// when this build leaves that one out).
    JpegFeature {
        /// The feature.
        feature: JpegFeature,
        /// The decoder that was asked to decode it.
        backend: Backend,
    },
    /// A JPEG scan with fewer restart markers than its restart interval
    /// requires (strict mode; libjpeg-turbo refuses it too, zune-jpeg alone
    /// would decode it with shifted blocks).
    JpegRestartMarkers {
        /// The scan, counting from 1.
        scan: u32,
        /// Restart markers found in its coded data.
        found: u32,
        /// Restart markers its MCU count and restart interval require.
        expected: u32,
    },
    /// A JPEG with more scans than [`crate::jpeg::MAX_SCANS`]: refused before
    /// decoding (each scan can cost a pass over the whole image).
    TooManyScans {
        /// Start-of-scan markers in the file.
        scans: u32,
        /// The limit.
        limit: u32,
    },
    /// The header claims more pixels than the file's data could possibly
    /// describe (a truncated file, or a crafted header meant to make the
    /// decoder allocate): refused before any pixel buffer is allocated.
    ImplausibleSize {
        /// The format.
        format: ImageFormat,
        /// Width the header claims.
        width: u32,
        /// Height the header claims.
        height: u32,
        /// Bytes of coded data the file holds.
        data_bytes: u64,
        /// The most pixels that much data can fill in this format.
        max_pixels: u64,
    },
    /// Reading an input failed (a pipeline source).
    #[cfg(feature = "std")]
    Io {
        /// What the operating system reported.
        kind: std::io::ErrorKind,
    },
}

/// What a plan or op is given to read ([`Error::WrongInputKind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputKind {
    /// Raw pixels of a known format and size.
    Pixels,
    /// The bytes of an encoded file (JPEG, PNG, WebP).
    Encoded,
}

impl fmt::Display for InputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputKind::Pixels => "raw pixels",
            InputKind::Encoded => "encoded bytes",
        })
    }
}

/// Why a JPEG (`JpegErrorKind`) was rejected.
pub type JpegErrorKind = DecodeErrorKind;

/// Why an encoded image (JPEG, PNG, WebP) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The data ends before the image does (strict mode).
    Truncated,
    /// The headers or the coded data are corrupt (for JPEG: or not a JPEG at all).
    Corrupt,
    /// A valid file that uses a feature the decoder lacks.
    Unsupported,
    /// A colour space or component count that cannot be turned into the requested format.
    UnsupportedColorSpace,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::InvalidDimensions { width, height } => write!(
                f,
                "invalid image dimensions {width}x{height} (each side must be 1..={})",
                crate::Limits::MAX_DIMENSION
            ),
            Error::TooManyPixels { pixels, limit } => {
                write!(
                    f,
                    "image has {pixels} pixels, more than the limit of {limit}"
                )
            }
            Error::AllocationTooLarge { bytes, limit } => {
                write!(f, "refusing to allocate {bytes} bytes (limit {limit})")
            }
            Error::PlanTooLarge { bytes, limit } => write!(
                f,
                "the plan needs {bytes} bytes of image buffers for this input (the decoded \
                 image and the intermediate ones alive at once), more than the limit of {limit}"
            ),
            Error::ArenaTooSmall { needed, available } => write!(
                f,
                "the arena holds {available} bytes but the plan needs at least {needed} \
                 (ask the plan's bytes_needed for the exact size)"
            ),
            Error::OutOfMemory { bytes } => {
                write!(f, "the system could not allocate {bytes} bytes")
            }
            Error::OverBudget { bytes, limit } => write!(
                f,
                "the image needs about {bytes} bytes to decode and augment, more than the \
                 decode budget of {limit} (raise the loader's decode_budget)"
            ),
            Error::CustomOp { position } => write!(
                f,
                "the custom op (Lambda) at position {position} failed (TrainState::take_custom_error says why)"
            ),
            Error::StrideTooSmall { plane, stride, min } => write!(
                f,
                "plane {plane}: row stride {stride} is smaller than one row ({min} bytes)"
            ),
            Error::StrideTooLarge {
                plane,
                stride,
                rows,
            } => write!(
                f,
                "plane {plane}: row stride {stride} is too large: {rows} rows that far apart do not fit in the address space"
            ),
            Error::BufferTooSmall { plane, len, needed } => write!(
                f,
                "plane {plane}: buffer holds {len} elements but the shape needs {needed}"
            ),
            Error::TensorSize { len, needed } => write!(
                f,
                "tensor buffer has {len} elements but the output needs exactly {needed}"
            ),
            Error::WrongPlaneCount { format, given } => write!(
                f,
                "{format:?} needs {} plane(s), {given} given",
                format.plane_count()
            ),
            Error::UnsupportedFormat { op, format } => {
                write!(f, "{op} does not support pixel format {format:?}")
            }
            Error::FormatMismatch { expected, found } => {
                write!(f, "expected pixel format {expected:?}, found {found:?}")
            }
            Error::SizeMismatch { expected, found } => write!(
                f,
                "destination is {}x{} but must be {}x{}",
                found.0, found.1, expected.0, expected.1
            ),
            Error::RectOutOfBounds {
                rect,
                width,
                height,
            } => write!(
                f,
                "rectangle {}x{} at ({}, {}) does not fit in a {width}x{height} image",
                rect.width, rect.height, rect.x, rect.y
            ),
            Error::UnalignedCrop { rect } => write!(
                f,
                "crop at ({}, {}) of a chroma-subsampled image must start on a chroma sample \
                 (even x and y for YUV 4:2:0, even x for YUV 4:2:2)",
                rect.x, rect.y
            ),
            Error::InvalidParameter { name, reason } => write!(f, "{name}: {reason}"),
            Error::UnsupportedCpu { requested } => write!(
                f,
                "the {requested} kernels were asked for, but this CPU does not have {requested} \
                 (Simd::available lists the paths it has)"
            ),
            Error::WrongInputKind {
                op,
                expected,
                found,
            } => write!(f, "{op} takes {expected}, given {found}"),
            Error::DTypeMismatch { expected, found } => write!(
                f,
                "the tensor holds {found:?} elements but the output was set up for {expected:?}"
            ),
            Error::Jpeg { kind } => kind.describe(f, "JPEG"),
            Error::UnsupportedImageFormat { found } => {
                let supported = crate::decode::SupportedList;
                match found {
                    Some(format) => {
                        write!(f, "{format} is not supported; this build reads {supported}")
                    }
                    None => write!(
                        f,
                        "not an image file this build reads (no {supported} signature at the start)"
                    ),
                }
            }
            Error::NotBuilt { what, feature } => write!(
                f,
                "{what} is not built into this library (Cargo feature `{feature}`)"
            ),
            Error::Png { kind } => kind.describe(f, "PNG"),
            Error::WebP { kind } => kind.describe(f, "WebP"),
            Error::JpegFeature { feature, backend } => {
                write!(f, "the JPEG uses {feature}, which ")?;
                match feature.decoded_by() {
                    Some(b) if b != backend && b.is_available() => write!(
                        f,
                        "{} does not decode; {} does (Decode backend LibjpegTurbo, CLI `--decoder libjpeg-turbo`)",
                        backend.name(),
                        b.name()
                    ),
                    Some(b) if b != backend => write!(
                        f,
                        "{} does not decode; {} does, but this build leaves it out",
                        backend.name(),
                        b.name()
                    ),
                    _ => f.write_str("no decoder of tensorprep reads"),
                }
            }
            Error::JpegRestartMarkers {
                scan,
                found,
                expected,
            } => write!(
                f,
                "JPEG data is corrupt: scan {scan} has {found} restart markers where its restart interval needs {expected}"
            ),
            Error::TooManyScans { scans, limit } => write!(
                f,
                "the JPEG has {scans} scans; at most {limit} are decoded (progressive files \
                 have about 10): refused as a likely decompression bomb"
            ),
            Error::ImplausibleSize {
                format,
                width,
                height,
                data_bytes,
                max_pixels,
            } => write!(
                f,
                "the {format} header claims {width}x{height} pixels, but its {data_bytes} bytes of \
                 coded data can describe at most {max_pixels} (truncated or crafted file)"
            ),
            #[cfg(feature = "std")]
            Error::Io { kind } => write!(f, "reading the input failed: {kind}"),
        }
    }
}

impl DecodeErrorKind {
    fn describe(self, f: &mut fmt::Formatter<'_>, format: &str) -> fmt::Result {
        match self {
            DecodeErrorKind::Truncated => write!(f, "{format} data ends before the image does"),
            DecodeErrorKind::Corrupt => write!(f, "{format} data is corrupt"),
            DecodeErrorKind::Unsupported => {
                write!(
                    f,
                    "the {format} uses a feature this decoder does not support"
                )
            }
            DecodeErrorKind::UnsupportedColorSpace => write!(
                f,
                "the {format}'s colour space cannot be converted to the requested format"
            ),
        }
    }
}

// `Debug` prints the message, so that `fn main() -> Result<(), tensorprep::Error>`
// and `unwrap()` say what went wrong ("Error: PNG data is corrupt"), not only
// which variant it was.
impl Error {
    /// The JPEG decoder this build leaves out that would have decoded the
    /// input, when that is why it failed ([`Error::JpegFeature`]).
    ///
    /// The message says so without naming a Cargo feature: the feature that
    /// builds libjpeg-turbo in depends on the crate being built (`turbojpeg`
    /// here, in the C library and in the Python package; `libjpeg-turbo` in
    /// the CLI), so each front end adds its own build hint when this is `Some`.
    ///
    /// ```
    /// use tensorprep::Error;
    /// use tensorprep::jpeg::{Backend, JpegFeature};
    ///
    /// let err = Error::JpegFeature {
    ///     feature: JpegFeature::ArithmeticCoding,
    ///     backend: Backend::Zune,
    /// };
    /// let lacking = (!Backend::LibjpegTurbo.is_available()).then_some(Backend::LibjpegTurbo);
    /// assert_eq!(err.missing_decoder(), lacking);
    /// ```
    pub fn missing_decoder(&self) -> Option<Backend> {
        match self {
            Error::JpegFeature { feature, backend } => feature
                .decoded_by()
                .filter(|b| b != backend && !b.is_available()),
            _ => None,
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl core::error::Error for Error {}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use alloc::string::ToString;

    use super::*;
    use crate::DType;
    use crate::cpu::Simd;

    #[test]
    fn messages_name_what_is_wrong() {
        let e = Error::InvalidParameter {
            name: "RandomAffine",
            reason: "scale must be positive, min <= max",
        };
        assert_eq!(
            e.to_string(),
            "RandomAffine: scale must be positive, min <= max"
        );
        let e = Error::WrongInputKind {
            op: "this plan",
            expected: InputKind::Pixels,
            found: InputKind::Encoded,
        };
        assert_eq!(
            e.to_string(),
            "this plan takes raw pixels, given encoded bytes"
        );
        let e = Error::DTypeMismatch {
            expected: DType::F32,
            found: DType::U8,
        };
        assert_eq!(
            e.to_string(),
            "the tensor holds U8 elements but the output was set up for F32"
        );
        let e = Error::UnsupportedCpu {
            requested: Simd::Avx2,
        };
        assert!(e.to_string().starts_with("the AVX2 kernels were asked for"));
    }
}

/// An error's message, then each of its causes (its
/// [`source`](core::error::Error::source) chain), `: `-separated: what a
/// command line or a Python exception shows.
///
/// ```
/// # #[cfg(feature = "preview")] {
/// use tensorprep::train::PreviewError;
/// let cause = tensorprep::Error::InvalidParameter { name: "divisor", reason: "must be positive" };
/// let e = PreviewError::Plan(cause);
/// assert_eq!(tensorprep::error::report(&e), format!("{e}: {cause}"));
/// # }
/// ```
#[cfg(feature = "alloc")]
pub fn report(e: &dyn core::error::Error) -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::ToString::to_string(e);
    let mut cause = e.source();
    while let Some(c) = cause {
        // Writing to a String cannot fail.
        let _ = write!(s, ": {c}");
        cause = c.source();
    }
    s
}
