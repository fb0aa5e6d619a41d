//! What a plan is given from Python: encoded bytes, a path, a numpy image, or
//! a frame's planes; read while the GIL is held ([`Held`]), then borrowed as
//! the library's input without it ([`Item`]).

use std::path::PathBuf;

use numpy::{PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PyTuple};
use tensorprep::{ImageView, PixelFormat, Plane};

use crate::errors;

/// The largest encoded file a plan reads (1 GiB), checked before reading.
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 30;

/// An input with the Python objects it borrows from kept alive.
pub(crate) enum Held<'py> {
    /// Encoded bytes, borrowed (immutable).
    Bytes(Bound<'py, PyBytes>),
    /// Encoded bytes copied from a mutable buffer (`bytearray`, `memoryview`).
    Owned(Vec<u8>),
    /// A file to read.
    Path(PathBuf),
    /// An image's planes (one array, or Y + UV, or Y + U + V), read-only
    /// borrowed, and the format if the caller named one.
    Planes(Vec<PyReadonlyArrayDyn<'py, u8>>, Option<PixelFormat>),
}

/// Reads a Python object as an input.
pub(crate) fn hold<'py>(
    obj: &Bound<'py, PyAny>,
    format: Option<PixelFormat>,
) -> PyResult<Held<'py>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Held::Bytes(b.clone()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Held::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyMemoryView>() {
        let bytes = obj.call_method0("tobytes")?;
        return Ok(Held::Bytes(bytes.cast_into::<PyBytes>()?));
    }
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        let planes = obj
            .try_iter()?
            .map(|p| array(&p?))
            .collect::<PyResult<Vec<_>>>()?;
        if !(2..=3).contains(&planes.len()) {
            return Err(errors::input(format!(
                "a frame's planes are (Y, UV) or (Y, U, V); given {}",
                planes.len()
            )));
        }
        return Ok(Held::Planes(planes, format));
    }
    if let Ok(a) = obj.cast::<PyArrayDyn<u8>>() {
        // A 1-D uint8 array is a file's bytes (`np.fromfile`).
        if a.ndim() == 1 {
            return Ok(Held::Owned(a.to_vec()?));
        }
        return Ok(Held::Planes(vec![array(obj)?], format));
    }
    // A PIL image: its pixels, in the modes a plan reads.
    if obj.hasattr("getbands")? && obj.hasattr("mode")? {
        let mode: String = obj.getattr("mode")?.extract()?;
        let format = match mode.as_str() {
            "RGB" => PixelFormat::Rgb8,
            "RGBA" => PixelFormat::Rgba8,
            "L" => PixelFormat::Gray8,
            other => {
                return Err(errors::input(format!(
                    "a PIL image in mode {other}: convert(\"RGB\") (or \"L\") it first"
                )));
            }
        };
        return Ok(Held::Planes(vec![array(obj)?], Some(format)));
    }
    if obj.hasattr("__array_interface__")? || obj.hasattr("__array__")? {
        return Ok(Held::Planes(vec![array(obj)?], format));
    }
    if let Ok(path) = obj.extract::<PathBuf>() {
        return Ok(Held::Path(path));
    }
    Err(errors::input(format!(
        "a plan takes encoded bytes, a path, a numpy uint8 image (H, W[, C]), a PIL \
         image or a frame's planes (Y, UV) / (Y, U, V); given {}",
        obj.get_type()
    )))
}

/// A uint8 array whose rows are each contiguous (other layouts are copied).
fn array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<PyReadonlyArrayDyn<'py, u8>> {
    let rows_contiguous = |a: &Bound<'py, PyArrayDyn<u8>>| {
        let s = a.strides();
        let shape = a.shape();
        match a.ndim() {
            2 => s[1] == 1 && s[0] >= shape[1] as isize,
            3 => s[2] == 1 && s[1] == shape[2] as isize && s[0] >= (shape[1] * shape[2]) as isize,
            _ => false,
        }
    };
    if let Ok(a) = obj.cast::<PyArrayDyn<u8>>()
        && rows_contiguous(a)
    {
        return a.try_readonly().map_err(|e| errors::input(e.to_string()));
    }
    let numpy = obj.py().import("numpy")?;
    let copy = numpy.call_method1("ascontiguousarray", (obj,))?;
    let copy = copy.cast_into::<PyArrayDyn<u8>>().map_err(|_| {
        errors::input(format!(
            "images are numpy uint8 arrays (H, W) or (H, W, C); given dtype {}",
            obj.getattr("dtype")
                .map_or_else(|_| "?".into(), |d| d.to_string())
        ))
    })?;
    if !(2..=3).contains(&copy.ndim()) {
        return Err(errors::input(format!(
            "an image array is (H, W) or (H, W, C); given {} dimensions",
            copy.ndim()
        )));
    }
    copy.try_readonly()
        .map_err(|e| errors::input(e.to_string()))
}

/// An input borrowed for running (no Python object touched).
pub(crate) enum Item<'a> {
    /// Encoded bytes.
    Encoded(&'a [u8]),
    /// Encoded bytes read from a file.
    Read(Vec<u8>),
    /// A file not read yet.
    Path(PathBuf),
    /// Pixels.
    Pixels(ImageView<'a>),
}

/// One plane's rows: `height` rows of `row` bytes, `stride` apart.
fn rows<'a>(a: &'a PyReadonlyArrayDyn<'_, u8>) -> (Plane<'a>, usize, usize) {
    let shape = a.shape();
    let (height, row) = (shape[0], shape[1..].iter().product::<usize>());
    let stride = a.strides()[0] as usize;
    let len = if height == 0 || row == 0 {
        0
    } else {
        (height - 1) * stride + row
    };
    // SAFETY: `hold` kept only arrays whose strides are positive with
    // contiguous rows, so the `len` bytes from the first element are the
    // array's rows and the gaps between them, all inside its buffer; the
    // read-only borrow `a` (numpy's borrow flag) outlives the slice.
    let data = unsafe { std::slice::from_raw_parts(a.data().cast_const(), len) };
    (Plane::new(data, stride), height, row)
}

/// The format of an image of `channels` bytes per pixel (or `planes`
/// planes) when the caller named none: the plan's, else by the shape.
fn infer(
    planes: usize,
    ndim: usize,
    channels: usize,
    declared: Option<PixelFormat>,
) -> PyResult<PixelFormat> {
    if let Some(f) = declared {
        return Ok(f);
    }
    Ok(match (planes, ndim, channels) {
        (2, _, _) => PixelFormat::Nv21,
        (3, _, _) => PixelFormat::I420,
        (1, 2, _) | (1, 3, 1) => PixelFormat::Gray8,
        (1, 3, 3) => PixelFormat::Rgb8,
        (1, 3, 4) => PixelFormat::Rgba8,
        _ => {
            return Err(errors::input(format!(
                "an image (H, W, {channels}): give its pixel format (format=...)"
            )));
        }
    })
}

impl Held<'_> {
    /// The input to run, `format` the plan's pixel format (if it was
    /// compiled for one).
    pub(crate) fn item(&self, plan_format: Option<PixelFormat>) -> PyResult<Item<'_>> {
        let (arrays, declared) = match self {
            Held::Bytes(b) => return Ok(Item::Encoded(b.as_bytes())),
            Held::Owned(v) => return Ok(Item::Encoded(v)),
            Held::Path(p) => return Ok(Item::Path(p.clone())),
            Held::Planes(arrays, f) => (arrays, f.or(plan_format)),
        };
        let first = &arrays[0];
        let channels = first.shape().get(2).copied().unwrap_or(1);
        let format = infer(arrays.len(), first.ndim(), channels, declared)?;
        let view = if arrays.len() == 1 {
            let (plane, height, row) = rows(first);
            let (width, height) = match format {
                // One buffer: Y rows, then the chroma rows (Android's layout).
                PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420 => {
                    if first.ndim() != 2 || height % 3 != 0 {
                        return Err(errors::input(format!(
                            "a {} frame in one array is (H * 3 / 2, W) bytes; given {:?}",
                            format.name(),
                            first.shape()
                        )));
                    }
                    (row, height / 3 * 2)
                }
                _ => {
                    let bpp = match format {
                        PixelFormat::Yuyv
                        | PixelFormat::Uyvy
                        | PixelFormat::Rgb565Le
                        | PixelFormat::Rgb565Be => 2,
                        f => f.bytes_per_pixel().unwrap_or(1),
                    };
                    if channels != bpp && !(bpp == 1 && first.ndim() == 2) {
                        return Err(errors::input(format!(
                            "a {} image is (H, W, {bpp}) bytes; given {:?}",
                            format.name(),
                            first.shape()
                        )));
                    }
                    (row / bpp, height)
                }
            };
            let (w, h) = (dim(width)?, dim(height)?);
            if format == PixelFormat::I420 {
                i420_in_one(plane, w, h)?
            } else {
                ImageView::with_stride(format, w, h, plane.data, plane.stride)
                    .map_err(|e| crate::errors::core(&e))?
            }
        } else {
            if arrays.len() != format.plane_count() {
                return Err(errors::input(format!(
                    "{} has {} planes; given {}",
                    format.name(),
                    format.plane_count(),
                    arrays.len()
                )));
            }
            let planes: Vec<_> = arrays.iter().map(rows).collect();
            let (_, height, width) = planes[0];
            let planes: Vec<Plane<'_>> = planes.into_iter().map(|(p, _, _)| p).collect();
            ImageView::from_planes(format, dim(width)?, dim(height)?, &planes)
                .map_err(|e| crate::errors::core(&e))?
        };
        Ok(Item::Pixels(view))
    }
}

/// An I420 frame in one contiguous buffer: Y, then U and V at half size.
fn i420_in_one(plane: Plane<'_>, width: u32, height: u32) -> PyResult<ImageView<'_>> {
    let (w, h) = (width as usize, height as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    if plane.stride != w {
        return Err(errors::input(
            "an I420 frame in one array must be contiguous",
        ));
    }
    let data = plane.data;
    let need = w * h + 2 * cw * ch;
    if data.len() < need {
        return Err(errors::input(format!(
            "an I420 frame of {width}x{height} needs {need} bytes; given {}",
            data.len()
        )));
    }
    let (y, rest) = data.split_at(w * h);
    let (u, v) = rest.split_at(cw * ch);
    ImageView::from_planes(
        PixelFormat::I420,
        width,
        height,
        &[Plane::new(y, w), Plane::new(u, cw), Plane::new(v, cw)],
    )
    .map_err(|e| crate::errors::core(&e))
}

fn dim(n: usize) -> PyResult<u32> {
    u32::try_from(n).map_err(|_| errors::input(format!("an image dimension of {n} pixels")))
}

/// Reads `path` whole (a regular file of at most [`MAX_FILE_BYTES`]).
pub(crate) fn read(path: &std::path::Path) -> Result<Vec<u8>, ReadFailure> {
    tensorprep::files::read_capped(path, MAX_FILE_BYTES).map_err(|e| match e {
        tensorprep::files::ReadError::Io(error) => ReadFailure::Io(path.to_owned(), error),
        other => ReadFailure::TooLarge(format!("{}: {other}", path.display())),
    })
}

/// Why a file was not read.
pub(crate) enum ReadFailure {
    Io(PathBuf, std::io::Error),
    TooLarge(String),
}

impl ReadFailure {
    pub(crate) fn into_py(self) -> PyErr {
        match self {
            // FileNotFoundError, PermissionError, ... with the path.
            ReadFailure::Io(path, e) => errors::io(e.kind(), format!("{}: {e}", path.display())),
            ReadFailure::TooLarge(m) => errors::LimitError::new_err(m),
        }
    }
}
