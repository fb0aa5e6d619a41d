//! `resize_float`: float32 images (depth maps, HDR, a model's float output)
//! resized with Pillow's `F` arithmetic or PyTorch's float `interpolate`.

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use tensorprep::DType;
use tensorprep::resize::{FloatResizer, FloatView, FloatViewMut, SourceBox};

use crate::errors;
use crate::names::{self, Name};

/// Resizes a float32 image, `(H, W)` or `(H, W, C)` (C up to 16), to
/// `size = (width, height)`, returning a new array (or writing `out`, a
/// C-contiguous float32 array of the output's shape).
///
/// `method`: a Pillow filter (`"nearest"`, `"box"`, `"bilinear"`,
/// `"hamming"`, `"bicubic"`, `"lanczos"`), as Pillow resizes `F` images
/// channel by channel, or `"torch-float-bilinear"` / `"torch-float-bicubic"`,
/// as `torch.nn.functional.interpolate(..., antialias=True)` on a float
/// tensor. `box = (x0, y0, x1, y1)`: Pillow's `box=` (PyTorch's methods take
/// only an integral one, a crop). Values are resampled as they are: negative,
/// above 1 or not finite.
#[pyfunction]
#[pyo3(signature = (image, size, method=Name::new("bilinear"), *, r#box=None, out=None),
       text_signature = "(image, size, method='bilinear', *, box=None, out=None)")]
pub(crate) fn resize_float<'py>(
    py: Python<'py>,
    image: &Bound<'py, PyAny>,
    size: (u32, u32),
    method: Name,
    r#box: Option<(f32, f32, f32, f32)>,
    out: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let resample = names::resample(&method.0)?;
    let numpy = py.import("numpy")?;
    let src = numpy.call_method1("ascontiguousarray", (image,))?;
    let src = src.cast_into::<PyArrayDyn<f32>>().map_err(|_| {
        errors::input(format!(
            "resize_float takes numpy float32 arrays (H, W) or (H, W, C); given dtype {}",
            image
                .getattr("dtype")
                .map_or_else(|_| "?".into(), |d| d.to_string())
        ))
    })?;
    let shape = src.shape().to_vec();
    let (height, width, channels) = match shape[..] {
        [h, w] => (h, w, 1),
        [h, w, c] => (h, w, c),
        _ => {
            return Err(errors::input(format!(
                "an image array is (H, W) or (H, W, C); given {} dimensions",
                shape.len()
            )));
        }
    };
    let (dw, dh) = size;
    let mut out_shape = vec![dh as usize, dw as usize];
    if shape.len() == 3 {
        out_shape.push(channels);
    }
    let out = match out {
        Some(o) => o,
        None => {
            let len = u64::from(dw) * u64::from(dh) * channels as u64;
            tensorprep::Limits::DEFAULT
                .check_alloc(len.saturating_mul(4))
                .map_err(|e| errors::core(&e))?;
            PyArrayDyn::<f32>::zeros(py, out_shape.as_slice(), false).into_any()
        }
    };
    let mut dst = crate::arrays::checked::<f32>(&out, DType::F32, &out_shape)?;
    let src = src
        .try_readonly()
        .map_err(|e| errors::input(e.to_string()))?;
    let input = src.as_slice().map_err(|e| errors::input(e.to_string()))?;
    let output = dst
        .as_slice_mut()
        .map_err(|e| errors::input(e.to_string()))?;
    let dims = |n: usize| u32::try_from(n).map_err(|_| errors::input("the image is too large"));
    let (w, h) = (dims(width)?, dims(height)?);
    py.detach(|| {
        let view = FloatView::new(input, w, h, channels)?;
        let mut target = FloatViewMut::new(output, dw, dh, channels)?;
        let source_box = match r#box {
            Some((x0, y0, x1, y1)) => SourceBox { x0, y0, x1, y1 },
            None => SourceBox::full(w, h),
        };
        FloatResizer::new().resize_box(&view, source_box, &mut target, resample)
    })
    .map_err(|e| errors::core(&e))?;
    Ok(out)
}
