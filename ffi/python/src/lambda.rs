//! `train.Lambda(fn, name=None, size="same")`: a Python function on the
//! decoded uint8 image, run by the loader's decode threads as a core
//! [`CustomOp`] (MindSpore's `PyFunc` in `map`, torchvision's `Lambda`).
//!
//! Each call takes the GIL for the call and the copies in and out of numpy
//! (`Python::attach`); the decoding and the other ops run without it. The
//! function receives the sample's own `numpy.random.Generator`, seeded from
//! the op's key for the sample: its draws do not depend on the worker count.

#![forbid(unsafe_code)]

use std::fmt;

use numpy::{PyArray1, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use tensorprep::ImageView;
use tensorprep::train::{Augment, CustomOp, CustomOpError, CustomSize};

use crate::errors;
use crate::from_python::{message_of, type_name};
use crate::train::PyAugment;

/// Why a Lambda gave no image.
#[derive(Debug)]
enum LambdaError {
    /// The function raised: the exception, and its message with where it
    /// was raised, made with the GIL.
    Raised { message: String, error: PyErr },
    /// It returned what is not an image of the right kind.
    Returned(String),
}

impl fmt::Display for LambdaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LambdaError::Raised { message, .. } => write!(f, "it raised {message}"),
            LambdaError::Returned(what) => write!(f, "it returned {what}"),
        }
    }
}

impl std::error::Error for LambdaError {}

/// The Python exception behind a custom op's error, if a Lambda raised it
/// (chained as the loader error's `__cause__`).
pub(crate) fn raised(error: &CustomOpError) -> Option<&PyErr> {
    match error {
        CustomOpError::Failed { error, .. } => match error.downcast_ref::<LambdaError>()? {
            LambdaError::Raised { error, .. } => Some(error),
            LambdaError::Returned(_) => None,
        },
        _ => None,
    }
}

/// The Python side of one Lambda: the function and numpy's generator
/// classes, looked up once.
struct Function {
    function: Py<PyAny>,
    /// `Generator` and `PCG64`, when the function takes the generator.
    rng: Option<(Py<PyAny>, Py<PyAny>)>,
    /// The size its results must have (the op's).
    size: CustomSize,
}

impl Function {
    /// Calls the function on `image` with the generator seeded from `key`;
    /// its result's pixels into `out`.
    fn call(
        &self,
        image: &ImageView<'_>,
        key: u64,
        out: &mut Vec<u8>,
    ) -> Result<(u32, u32), LambdaError> {
        let (w, h) = (image.width(), image.height());
        let expected = self.size.after((w, h));
        let channels = image.format().bytes_per_pixel().unwrap_or(1);
        // The pass's images are packed; rows are copied one by one all the same.
        let mut pixels = Vec::with_capacity(w as usize * h as usize * channels);
        for y in 0..h {
            pixels.extend_from_slice(image.row(y));
        }
        crate::user_code::run("a Lambda", || {
            Python::attach(|py| {
                let raised = |error: PyErr| LambdaError::Raised {
                    message: message_of(py, &error),
                    error,
                };
                let array = PyArray1::from_vec(py, pixels)
                    .reshape([h as usize, w as usize, channels])
                    .map_err(raised)?;
                let function = self.function.bind(py);
                let result = match &self.rng {
                    // Making the generator costs more than a small image's
                    // copies: only for a function that takes it.
                    Some((generator, pcg64)) => {
                        let rng = pcg64
                            .bind(py)
                            .call1((key,))
                            .and_then(|bits| generator.bind(py).call1((bits,)))
                            .map_err(raised)?;
                        function.call1((array, rng))
                    }
                    None => function.call1((array,)),
                }
                .map_err(raised)?;
                copy_result(&result, channels, expected, out).map_err(LambdaError::Returned)
            })
        })
    }
}

/// `result`, a uint8 array `HxWxC` with the input's `C` (or `HxW` when
/// it is 1; any strides) and the `expected` `(width, height)`, into `out`
/// as packed rows; its width and height. Its shape is checked before
/// anything is copied (a broadcast view can be huge and cost nothing).
fn copy_result(
    result: &Bound<'_, PyAny>,
    channels: usize,
    expected: (u32, u32),
    out: &mut Vec<u8>,
) -> Result<(u32, u32), String> {
    let Ok(array) = result.cast::<PyUntypedArray>() else {
        return Err(format!(
            "a {} (a Lambda returns a uint8 numpy array HxWxC)",
            type_name(result)
        ));
    };
    let shape = array.shape();
    // As numpy prints it: (48, 48, 2).
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_of = format!(
        "({}{})",
        dims.join(", "),
        if dims.len() == 1 { "," } else { "" }
    );
    let (height, width) = match *shape {
        [h, w, c] if c == channels => (h, w),
        [h, w] if channels == 1 => (h, w),
        _ => {
            let gray = if channels == 1 { " or HxW" } else { "" };
            return Err(format!(
                "an array of shape {shape_of} where HxWx{channels}{gray} was expected"
            ));
        }
    };
    let (Ok(w), Ok(h)) = (u32::try_from(width), u32::try_from(height)) else {
        return Err(format!("an array of shape {shape_of}"));
    };
    if w == 0 || h == 0 {
        return Err(format!("an empty array (shape {shape_of})"));
    }
    if (w, h) != expected {
        let (ew, eh) = expected;
        return Err(format!(
            "a {w}x{h} image (shape {shape_of}) where {ew}x{eh} was declared"
        ));
    }
    // Only now, the size known to be the declared one: the copy.
    crate::arrays::copy_u8(array, out).map_err(|e| format!("an array {e}"))?;
    Ok((w, h))
}

/// `train.Lambda(fn, name=None, size="same", rng=True)`: `fn(image, rng)`
/// (`fn(image)` with `rng=False`) on each sample's decoded image (uint8
/// `HxWxC`, C 3 or 1 as the pipeline decodes; `rng` a
/// `numpy.random.Generator` seeded from the sample's key) returning a uint8
/// array with the same C. `size`: `"same"` (the input's) or `(height,
/// width)`: the size every result has.
#[pyfunction(name = "Lambda")]
#[pyo3(signature = (function, name=None, size=None, rng=true),
       text_signature = "(function, name=None, size='same', rng=True)")]
pub(crate) fn lambda(
    py: Python<'_>,
    function: &Bound<'_, PyAny>,
    name: Option<String>,
    size: Option<&Bound<'_, PyAny>>,
    rng: bool,
) -> PyResult<PyAugment> {
    if !function.is_callable() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "Lambda takes a function, not a {}",
            type_name(function)
        )));
    }
    let size = match size {
        None => CustomSize::Same,
        Some(s) if s.extract::<String>().is_ok_and(|s| s == "same") => CustomSize::Same,
        Some(s) => {
            let (height, width) = s
                .extract::<(u32, u32)>()
                .map_err(|_| errors::value("Lambda: size is \"same\" or (height, width)"))?;
            if width == 0 || height == 0 {
                return Err(errors::value("Lambda: size must be at least (1, 1)"));
            }
            CustomSize::Fixed { width, height }
        }
    };
    let name = match name {
        Some(n) => n,
        None => function
            .getattr("__qualname__")
            .or_else(|_| function.getattr("__name__"))
            .and_then(|n| n.extract::<String>())
            .unwrap_or_else(|_| type_name(function)),
    };
    let rng = if rng {
        let random = py.import("numpy.random")?;
        Some((
            random.getattr("Generator")?.unbind(),
            random.getattr("PCG64")?.unbind(),
        ))
    } else {
        None
    };
    let f = Function {
        function: function.clone().unbind(),
        rng,
        size,
    };
    let op = CustomOp::new(&name, move |image, key, out| {
        f.call(image, key, out).map_err(|e| e.into())
    })
    .with_size(size);
    Ok(PyAugment(Augment::Custom(op)))
}
