//! The names Python code passes for the library's enums (`"libjpeg-turbo"`,
//! `"nv21"`, `"bilinear"`, `"float32"`), each parsed in one place, with the
//! accepted spellings in the message when a name is unknown.

use pyo3::prelude::*;
use tensorprep::jpeg::Backend;
use tensorprep::pipeline::DecodeScaling;
use tensorprep::resize::{Filter, Resample};
use tensorprep::warp::Interpolation;
use tensorprep::{DType, PixelFormat};

use crate::errors;

/// An enum value's name as Python code gives it: a string, or an enum
/// member whose `.value` is one (torchvision's `InterpolationMode.BICUBIC`).
pub(crate) struct Name(pub(crate) String);

impl Name {
    /// A default argument's name.
    pub(crate) fn new(name: &str) -> Name {
        Name(name.to_owned())
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Name {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Name> {
        if let Ok(s) = obj.extract::<String>() {
            return Ok(Name(s));
        }
        obj.getattr("value")
            .and_then(|v| v.extract::<String>())
            .map(Name)
            .map_err(|_| {
                errors::value(format!(
                    "expected a name (a string), given {}",
                    obj.get_type()
                ))
            })
    }
}

/// The `fast=` argument: `False` / `"exact"` (full size), `True` / `"fast"`
/// (DCT scaling keeping twice the resize's target) or `"draft"` (keeping
/// the target itself, Pillow's `draft()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scaling(pub(crate) DecodeScaling);

const SCALINGS: [(&str, DecodeScaling); 3] = [
    ("exact", DecodeScaling::Exact),
    ("fast", DecodeScaling::Fast),
    ("draft", DecodeScaling::Draft),
];

impl Scaling {
    /// The name `fast=` takes back (`False` and `True` are given as such).
    pub(crate) fn to_object<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        use pyo3::IntoPyObjectExt;
        match self.0 {
            DecodeScaling::Exact => false.into_bound_py_any(py),
            DecodeScaling::Fast => true.into_bound_py_any(py),
            other => SCALINGS
                .iter()
                .find(|(_, s)| *s == other)
                .map_or("exact", |(n, _)| n)
                .into_bound_py_any(py),
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Scaling {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Scaling> {
        if let Ok(b) = obj.extract::<bool>() {
            return Ok(Scaling(if b {
                DecodeScaling::Fast
            } else {
                DecodeScaling::Exact
            }));
        }
        match obj.extract::<String>() {
            Ok(name) => lookup("decode scaling", &SCALINGS, &name).map(Scaling),
            Err(_) => Err(errors::value(format!(
                "fast= takes True, False, \"fast\", \"draft\" or \"exact\", given {}",
                obj.get_type()
            ))),
        }
    }
}

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

/// The decoder named, or when none is: libjpeg-turbo when built in
/// (Pillow's decoder), else zune-jpeg.
pub(crate) fn decoder_or_default(name: Option<&str>) -> PyResult<Backend> {
    match name {
        Some(name) => decoder(name),
        None => Ok(Backend::available()
            .find(|&b| b == Backend::LibjpegTurbo)
            .unwrap_or(Backend::Zune)),
    }
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

/// A resampler by torchvision's / Pillow's interpolation name
/// ([`Filter::from_name`]), OpenCV's (`"cv2-linear"`, `"cv2-area"`) or
/// PyTorch's uint8 tensor kernels (`"torch-bilinear"`, `"torch-bicubic"`,
/// `"torch-nearest"`, `"torch-nearest-exact"`) and
/// its float32 ones (`"torch-float-bilinear"`, `"torch-float-bicubic"`),
/// libyuv's (`"libyuv-bilinear"`) or the `fast_image_resize` crate's, not
/// exact to any Python library (`"fir-"` and a filter name: `"fir-bilinear"`).
pub(crate) fn resample(name: &str) -> PyResult<Resample> {
    if let Some(filter) = Filter::from_name(name) {
        return Ok(Resample::Pillow(filter));
    }
    let lower = name.to_ascii_lowercase();
    if let Some(filter) = lower.strip_prefix("fir-").and_then(Filter::from_name) {
        return Ok(Resample::FastImageResize(filter));
    }
    match lower.as_str() {
        "cv2-linear" => Ok(Resample::OpenCvLinear),
        "cv2-area" => Ok(Resample::OpenCvArea),
        "torch-bilinear" => Ok(Resample::Torch(Filter::Bilinear)),
        "torch-bicubic" => Ok(Resample::Torch(Filter::Bicubic)),
        "torch-nearest" => Ok(Resample::Torch(Filter::Nearest)),
        "torch-nearest-exact" => Ok(Resample::TorchNearestExact),
        "torch-float-bilinear" => Ok(Resample::TorchFloat(Filter::Bilinear)),
        "torch-float-bicubic" => Ok(Resample::TorchFloat(Filter::Bicubic)),
        "libyuv-bilinear" => Ok(Resample::LibyuvBilinear),
        _ => Err(errors::value(format!(
            "unknown interpolation `{name}` (nearest, bilinear, bicubic, box, hamming, \
             lanczos: Pillow's filters; cv2-linear, cv2-area: OpenCV's; torch-bilinear, \
             torch-bicubic, torch-nearest, torch-nearest-exact: PyTorch's on uint8 tensors; torch-float-bilinear, \
             torch-float-bicubic: PyTorch's through float32; libyuv-bilinear; fir-bilinear \
             and the other filters after fir-: fast_image_resize's, not exact)"
        ))),
    }
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
