//! The result codes every fallible function returns, and the mapping from the
//! core's errors to them.

use std::ffi::{CStr, c_char};
use std::string::String;

use tensorprep::graph::GraphError;
use tensorprep::{DecodeErrorKind, Error, JpegErrorKind};

/// What a call did. `TP_RESULT_OK` is 0; every other value is an error whose
/// message `tp_last_error_message` returns.
///
/// Values are grouped by hundreds (the API itself, images and tensors, JPEG,
/// graphs, other image formats) and are never reused: a code removed in a later version leaves a
/// hole.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_result {
    /// Success.
    Ok = 0,
    /// A bug in tensorprep panicked; the call was abandoned and its outputs
    /// left unwritten. The library stays usable.
    Panic = 1,
    /// A required pointer was NULL.
    NullParameter = 2,
    /// An argument is out of range: an unknown enum value or flag bit, a
    /// misaligned or overlapping buffer, a value the op refuses.
    InvalidParameter = 3,
    /// This build of the library leaves out the feature the call needs
    /// (the message names the Cargo feature).
    NotBuilt = 4,
    /// A string argument is not valid UTF-8.
    InvalidUtf8 = 5,
    /// Reading a file failed.
    Io = 6,
    /// A graph's self-test produced a different tensor than the one recorded.
    SelfTestFailed = 7,
    /// A `tp_run_state` was used by two calls at once (two threads): the
    /// second is refused. Give each thread its own state.
    StateBusy = 8,
    /// An error this version of the C API has no code for; the message says what.
    Other = 99,

    /// Width or height is zero or above 262 144.
    InvalidDimensions = 100,
    /// The image has more pixels than the limit allows.
    TooManyPixels = 101,
    /// An allocation would exceed the limit.
    AllocationTooLarge = 102,
    /// A row stride is smaller than one row of pixels.
    StrideTooSmall = 103,
    /// A pixel buffer, tensor buffer or message buffer is shorter than needed.
    BufferTooSmall = 104,
    /// A tensor buffer does not hold the number of elements the output needs.
    TensorSize = 105,
    /// The number of planes does not match the pixel format.
    WrongPlaneCount = 106,
    /// The op does not accept this pixel format.
    UnsupportedFormat = 107,
    /// Source and destination formats must agree (or the plan was compiled
    /// for another format).
    FormatMismatch = 108,
    /// The destination (or the plan's input) has another size.
    SizeMismatch = 109,
    /// A rectangle does not lie inside the image.
    RectOutOfBounds = 110,
    /// A crop of a chroma-subsampled image must start on a chroma sample
    /// (even x and y for YUV 4:2:0, even x for YUV 4:2:2).
    UnalignedCrop = 111,
    /// The system could not provide memory the limits allow; nothing was aborted.
    OutOfMemory = 112,
    /// The buffers a plan needs for one input total more than the limit.
    PlanTooLarge = 113,
    /// The memory given for a plan built without an allocator is too small.
    ArenaTooSmall = 114,

    /// The data ends before the image does.
    JpegTruncated = 200,
    /// Not a JPEG, or its headers or entropy-coded data are corrupt.
    JpegCorrupt = 201,
    /// A valid JPEG using a feature the decoder lacks (arithmetic coding, 12-bit...).
    JpegUnsupported = 202,
    /// A colour space that cannot be turned into the requested format.
    JpegUnsupportedColorSpace = 203,
    /// A JPEG with more scans than the decoders accept (256): a likely
    /// decompression bomb.
    JpegTooManyScans = 204,

    /// The bytes are not a tensorprep graph (no magic bytes).
    GraphNotAGraph = 300,
    /// The graph file is larger than 4 MiB.
    GraphTooLarge = 301,
    /// The graph's encoding is broken (truncated, bad checksum, bad lengths).
    GraphMalformed = 302,
    /// The graph needs a newer tensorprep.
    GraphNeedsNewerReader = 303,
    /// The graph uses features this tensorprep does not implement.
    GraphMissingFeatures = 304,
    /// The graph has an op this tensorprep does not know.
    GraphUnknownOp = 305,
    /// A parameter of the graph is missing, out of range or inconsistent.
    GraphInvalid = 306,
    /// An importer could not read its configuration.
    GraphImport = 307,
    /// No preset has this name.
    UnknownPreset = 308,
    /// The model holds no graph (no sidecar file, no embedded entry): apps
    /// fall back to a preset on this code.
    GraphNotFound = 309,
    /// The graph's output does not fit the model's input (shape or type).
    GraphDoesNotFit = 310,

    /// The bytes are in no image format this build decodes (the message
    /// names the format found, if any, and the formats supported).
    UnsupportedImageFormat = 400,
    /// A PNG or WebP file ends before the image does (the message names the format).
    ImageTruncated = 401,
    /// A PNG or WebP file is corrupt.
    ImageCorrupt = 402,
    /// A PNG or WebP file uses a feature the decoder lacks.
    ImageUnsupported = 403,
    /// The header claims more pixels than the file's data can describe (a
    /// truncated or crafted file), refused before allocating.
    ImplausibleSize = 404,
}

/// Every result code with its name, in numeric order.
pub(crate) const RESULTS: &[(tp_result, &CStr)] = {
    use tp_result::*;
    &[
        (Ok, c"TP_RESULT_OK"),
        (Panic, c"TP_RESULT_PANIC"),
        (NullParameter, c"TP_RESULT_NULL_PARAMETER"),
        (InvalidParameter, c"TP_RESULT_INVALID_PARAMETER"),
        (NotBuilt, c"TP_RESULT_NOT_BUILT"),
        (InvalidUtf8, c"TP_RESULT_INVALID_UTF8"),
        (Io, c"TP_RESULT_IO"),
        (SelfTestFailed, c"TP_RESULT_SELF_TEST_FAILED"),
        (StateBusy, c"TP_RESULT_STATE_BUSY"),
        (Other, c"TP_RESULT_OTHER"),
        (InvalidDimensions, c"TP_RESULT_INVALID_DIMENSIONS"),
        (TooManyPixels, c"TP_RESULT_TOO_MANY_PIXELS"),
        (AllocationTooLarge, c"TP_RESULT_ALLOCATION_TOO_LARGE"),
        (StrideTooSmall, c"TP_RESULT_STRIDE_TOO_SMALL"),
        (BufferTooSmall, c"TP_RESULT_BUFFER_TOO_SMALL"),
        (TensorSize, c"TP_RESULT_TENSOR_SIZE"),
        (WrongPlaneCount, c"TP_RESULT_WRONG_PLANE_COUNT"),
        (UnsupportedFormat, c"TP_RESULT_UNSUPPORTED_FORMAT"),
        (FormatMismatch, c"TP_RESULT_FORMAT_MISMATCH"),
        (SizeMismatch, c"TP_RESULT_SIZE_MISMATCH"),
        (RectOutOfBounds, c"TP_RESULT_RECT_OUT_OF_BOUNDS"),
        (UnalignedCrop, c"TP_RESULT_UNALIGNED_CROP"),
        (OutOfMemory, c"TP_RESULT_OUT_OF_MEMORY"),
        (PlanTooLarge, c"TP_RESULT_PLAN_TOO_LARGE"),
        (ArenaTooSmall, c"TP_RESULT_ARENA_TOO_SMALL"),
        (JpegTruncated, c"TP_RESULT_JPEG_TRUNCATED"),
        (JpegCorrupt, c"TP_RESULT_JPEG_CORRUPT"),
        (JpegUnsupported, c"TP_RESULT_JPEG_UNSUPPORTED"),
        (
            JpegUnsupportedColorSpace,
            c"TP_RESULT_JPEG_UNSUPPORTED_COLOR_SPACE",
        ),
        (JpegTooManyScans, c"TP_RESULT_JPEG_TOO_MANY_SCANS"),
        (GraphNotAGraph, c"TP_RESULT_GRAPH_NOT_A_GRAPH"),
        (GraphTooLarge, c"TP_RESULT_GRAPH_TOO_LARGE"),
        (GraphMalformed, c"TP_RESULT_GRAPH_MALFORMED"),
        (GraphNeedsNewerReader, c"TP_RESULT_GRAPH_NEEDS_NEWER_READER"),
        (GraphMissingFeatures, c"TP_RESULT_GRAPH_MISSING_FEATURES"),
        (GraphUnknownOp, c"TP_RESULT_GRAPH_UNKNOWN_OP"),
        (GraphInvalid, c"TP_RESULT_GRAPH_INVALID"),
        (GraphImport, c"TP_RESULT_GRAPH_IMPORT"),
        (UnknownPreset, c"TP_RESULT_UNKNOWN_PRESET"),
        (GraphNotFound, c"TP_RESULT_GRAPH_NOT_FOUND"),
        (GraphDoesNotFit, c"TP_RESULT_GRAPH_DOES_NOT_FIT"),
        (
            UnsupportedImageFormat,
            c"TP_RESULT_UNSUPPORTED_IMAGE_FORMAT",
        ),
        (ImageTruncated, c"TP_RESULT_IMAGE_TRUNCATED"),
        (ImageCorrupt, c"TP_RESULT_IMAGE_CORRUPT"),
        (ImageUnsupported, c"TP_RESULT_IMAGE_UNSUPPORTED"),
        (ImplausibleSize, c"TP_RESULT_IMPLAUSIBLE_SIZE"),
    ]
};

/// A failed call: its code and the message `tp_last_error_message` returns.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: tp_result,
    pub(crate) message: String,
}

/// What the exported functions' bodies return.
pub(crate) type Result<T> = core::result::Result<T, Failure>;

impl Failure {
    pub(crate) fn new(code: tp_result, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A NULL `name`.
    pub(crate) fn null(name: &str) -> Failure {
        Failure::new(tp_result::NullParameter, format!("`{name}` is NULL"))
    }

    /// An argument out of range.
    pub(crate) fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(tp_result::InvalidParameter, message)
    }
}

/// The code of a core error.
fn code_of(e: &Error) -> tp_result {
    use tp_result as R;
    match e {
        Error::InvalidDimensions { .. } => R::InvalidDimensions,
        Error::TooManyPixels { .. } => R::TooManyPixels,
        Error::AllocationTooLarge { .. } => R::AllocationTooLarge,
        Error::StrideTooSmall { .. } => R::StrideTooSmall,
        Error::BufferTooSmall { .. } | Error::StrideTooLarge { .. } => R::BufferTooSmall,
        Error::TensorSize { .. } => R::TensorSize,
        Error::WrongPlaneCount { .. } => R::WrongPlaneCount,
        Error::UnsupportedFormat { .. } => R::UnsupportedFormat,
        Error::FormatMismatch { .. } => R::FormatMismatch,
        Error::SizeMismatch { .. } => R::SizeMismatch,
        Error::RectOutOfBounds { .. } => R::RectOutOfBounds,
        Error::UnalignedCrop { .. } => R::UnalignedCrop,
        Error::OutOfMemory { .. } => R::OutOfMemory,
        Error::PlanTooLarge { .. } => R::PlanTooLarge,
        Error::ArenaTooSmall { .. } => R::ArenaTooSmall,
        // The C API had no codes of their own for these: they were
        // `InvalidParameter` before they were told apart, and stay so.
        Error::InvalidParameter { .. }
        | Error::UnsupportedCpu { .. }
        | Error::WrongInputKind { .. }
        | Error::DTypeMismatch { .. } => R::InvalidParameter,
        Error::Jpeg { kind } => match kind {
            JpegErrorKind::Truncated => R::JpegTruncated,
            JpegErrorKind::Corrupt => R::JpegCorrupt,
            JpegErrorKind::Unsupported => R::JpegUnsupported,
            JpegErrorKind::UnsupportedColorSpace => R::JpegUnsupportedColorSpace,
            _ => R::Other,
        },
        Error::JpegFeature { .. } => R::JpegUnsupported,
        Error::TooManyScans { .. } => R::JpegTooManyScans,
        Error::JpegRestartMarkers { .. } => R::JpegCorrupt,
        Error::UnsupportedImageFormat { .. } => R::UnsupportedImageFormat,
        Error::Png { kind } | Error::WebP { kind } => match kind {
            DecodeErrorKind::Truncated => R::ImageTruncated,
            DecodeErrorKind::Corrupt => R::ImageCorrupt,
            DecodeErrorKind::Unsupported | DecodeErrorKind::UnsupportedColorSpace => {
                R::ImageUnsupported
            }
            _ => R::Other,
        },
        Error::ImplausibleSize { .. } => R::ImplausibleSize,
        Error::Io { .. } => R::Io,
        Error::NotBuilt { .. } => R::NotBuilt,
        _ => R::Other,
    }
}

/// The C library's build hint, after a message whose error needs the JPEG
/// decoder this build leaves out ([`Error::missing_decoder`]).
const BUILD_WITH_TURBOJPEG: &str =
    "; build libtensorprep with the Cargo feature `turbojpeg` (needs cmake and nasm)";

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let hint = if e.missing_decoder().is_some() {
            BUILD_WITH_TURBOJPEG
        } else {
            ""
        };
        Failure::new(code_of(&e), format!("{e}{hint}"))
    }
}

impl From<GraphError> for Failure {
    fn from(e: GraphError) -> Failure {
        use tp_result as R;
        let code = match &e {
            GraphError::NotAGraph => R::GraphNotAGraph,
            GraphError::TooLarge { .. } => R::GraphTooLarge,
            GraphError::Malformed(_) => R::GraphMalformed,
            GraphError::NeedsNewerReader { .. } => R::GraphNeedsNewerReader,
            GraphError::MissingFeatures(_) => R::GraphMissingFeatures,
            GraphError::UnknownOp { .. } => R::GraphUnknownOp,
            GraphError::Invalid { .. } => R::GraphInvalid,
            GraphError::Pipeline(core) => code_of(core),
            GraphError::Import { .. } => R::GraphImport,
            GraphError::NotFound { .. } => R::GraphNotFound,
            GraphError::DoesNotFit { .. } => R::GraphDoesNotFit,
            GraphError::Io { .. } => R::Io,
            _ => R::Other,
        };
        let hint = match &e {
            GraphError::Pipeline(core) if core.missing_decoder().is_some() => BUILD_WITH_TURBOJPEG,
            _ => "",
        };
        Failure::new(code, format!("{e}{hint}"))
    }
}

/// The name of a result code (`"TP_RESULT_JPEG_CORRUPT"`), or
/// `"TP_RESULT_UNKNOWN"` for a value that is not one.
///
/// # Safety
///
/// None: any value may be passed. The returned string is static; the caller
/// must not free it.
#[unsafe(no_mangle)]
pub extern "C" fn tp_result_name(result: u32) -> *const c_char {
    let name = || {
        RESULTS
            .iter()
            .find(|(r, _)| *r as u32 == result)
            .map_or(c"TP_RESULT_UNKNOWN", |(_, name)| name)
    };
    crate::boundary::boundary_value(c"TP_RESULT_UNKNOWN", name).as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_header_spelling() {
        // cbindgen spells `tp_result::JpegCorrupt` TP_RESULT_JPEG_CORRUPT.
        for &(r, name) in RESULTS {
            let debug = format!("{r:?}");
            let mut snake = String::from("TP_RESULT");
            for c in debug.chars() {
                if c.is_uppercase() {
                    snake.push('_');
                }
                snake.push(c.to_ascii_uppercase());
            }
            assert_eq!(name.to_str().unwrap(), snake);
        }
    }

    #[test]
    fn every_code_is_named_once() {
        let mut codes: Vec<u32> = RESULTS.iter().map(|(r, _)| *r as u32).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), RESULTS.len(), "a code listed twice");
        // SAFETY: tp_result_name returns a static NUL-terminated string.
        let unknown = unsafe { CStr::from_ptr(tp_result_name(12345)) };
        assert_eq!(unknown, c"TP_RESULT_UNKNOWN");
    }
}
