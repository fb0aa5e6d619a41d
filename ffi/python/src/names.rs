//! The names Python code passes for the library's enums (`"libjpeg-turbo"`,
//! `"nv21"`, `"bilinear"`, `"float32"`), each parsed in one place, with the
//! accepted spellings in the message when a name is unknown.

use pyo3::prelude::*;
use tensorprep::jpeg::Backend;
use tensorprep::resize::{Filter, Resample};
use tensorprep::warp::Interpolation;
use tensorprep::{DType, PixelFormat};

use crate::errors;

/// One of `table`'s values by its name (any case).
fn lookup<T: Copy>(what: &str, table: &[(&str, T)], name: &str) -> PyResult<T> {
    table
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let known: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            errors::value(format!(
                "unknown {what} `{name}` (known: {})",
                known.join(", ")
            ))
        })
}

/// A JPEG decoder by name: `"libjpeg-turbo"` (or `"turbojpeg"`, `"pil"`:
/// Pillow's decoder) or `"zune-jpeg"` (or `"zune"`); refused when this build
/// lacks it.
pub(crate) fn decoder(name: &str) -> PyResult<Backend> {
    let backend = lookup(
        "decoder",
        &[
            ("libjpeg-turbo", Backend::LibjpegTurbo),
            ("turbojpeg", Backend::LibjpegTurbo),
            ("pil", Backend::LibjpegTurbo),
            ("zune-jpeg", Backend::Zune),
            ("zune", Backend::Zune),
        ],
        name,
    )?;
    if !Backend::available().any(|b| b == backend) {
        return Err(errors::value(format!(
            "this build has no {} decoder (built in: {})",
            backend.name(),
            available_decoders().join(", ")
        )));
    }
    Ok(backend)
}

/// The decoders this build has.
pub(crate) fn available_decoders() -> Vec<&'static str> {
    Backend::available().map(Backend::name).collect()
}

/// The decoder a plan uses when none is named: libjpeg-turbo when built in
/// (Pillow's), else zune-jpeg.
pub(crate) fn default_decoder() -> Backend {
    Backend::available()
        .find(|&b| b == Backend::LibjpegTurbo)
        .unwrap_or(Backend::Zune)
}

/// A pixel format by name ([`PixelFormat::name`]).
pub(crate) fn pixel_format(name: &str) -> PyResult<PixelFormat> {
    PixelFormat::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = PixelFormat::ALL.iter().map(|f| f.name()).collect();
        errors::value(format!(
            "unknown pixel format `{name}` (known: jpeg for encoded files, {})",
            known.join(", ")
        ))
    })
}

/// numpy's name of an element type.
pub(crate) fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "float32",
        DType::F16 => "float16",
        DType::U8 => "uint8",
        DType::I8 => "int8",
        _ => "unknown",
    }
}

/// An element type by numpy's name.
pub(crate) fn dtype(name: &str) -> PyResult<DType> {
    lookup(
        "dtype",
        &[
            ("float32", DType::F32),
            ("float16", DType::F16),
            ("uint8", DType::U8),
            ("int8", DType::I8),
        ],
        name,
    )
}

/// A resampler by torchvision's / Pillow's interpolation name, or OpenCV's
/// (`"cv2-linear"`, `"cv2-area"`).
pub(crate) fn resample(name: &str) -> PyResult<Resample> {
    lookup(
        "interpolation",
        &[
            ("nearest", Resample::Pillow(Filter::Nearest)),
            ("box", Resample::Pillow(Filter::Box)),
            ("bilinear", Resample::Pillow(Filter::Bilinear)),
            ("hamming", Resample::Pillow(Filter::Hamming)),
            ("bicubic", Resample::Pillow(Filter::Bicubic)),
            ("lanczos", Resample::Pillow(Filter::Lanczos3)),
            ("cv2-linear", Resample::OpenCvLinear),
            ("cv2-area", Resample::OpenCvArea),
        ],
        name,
    )
}

/// A warp's interpolation (`"nearest"`, `"bilinear"`).
pub(crate) fn interpolation(name: &str) -> PyResult<Interpolation> {
    lookup(
        "interpolation (warps take nearest or bilinear)",
        &[
            ("nearest", Interpolation::Nearest),
            ("bilinear", Interpolation::Bilinear),
        ],
        name,
    )
}
