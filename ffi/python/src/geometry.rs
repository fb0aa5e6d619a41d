//! `Geometry`: what a run did to the image's coordinates, and the way back.

use numpy::{PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use tensorprep::pipeline;

use crate::errors;

/// How one run mapped the image to the tensor: sizes, scale, offset and the
/// affine map; `to_source` / `to_source_boxes` map model coordinates (points,
/// detections) back to the photo.
///
/// >>> tensor, g = plan.run("photo.jpg")
/// >>> g.to_source_boxes(boxes)      # (N, 4) x0, y0, x1, y1 in the photo
#[pyclass(frozen, module = "tensorprep", name = "Geometry")]
#[derive(Clone, Copy)]
pub(crate) struct PyGeometry(pub(crate) pipeline::Geometry);

/// An (N, k) float64 array from any array-like.
fn float_rows<'py>(
    obj: &Bound<'py, PyAny>,
    k: usize,
    what: &str,
) -> PyResult<PyReadonlyArray2<'py, f64>> {
    let numpy = obj.py().import("numpy")?;
    let a = numpy.call_method1("asarray", (obj, "float64"))?;
    let a = numpy.call_method1("ascontiguousarray", (a,))?;
    let a = a
        .call_method1("reshape", ((-1i64, k as i64),))
        .map_err(|_| errors::input(format!("{what} must be an array of shape (N, {k})")))?;
    Ok(a.cast_into::<PyArray2<f64>>()?.readonly())
}

#[pymethods]
// `to_source` is the Rust API's name; Python methods take `&self`.
#[allow(clippy::wrong_self_convention)]
impl PyGeometry {
    /// The input image's (width, height), after decoding and EXIF orientation.
    #[getter]
    fn input_size(&self) -> (u32, u32) {
        self.0.input
    }

    /// The tensor's spatial (width, height).
    #[getter]
    fn output_size(&self) -> (u32, u32) {
        self.0.output
    }

    /// Output pixels per input pixel along the output's x and y.
    #[getter]
    fn scale(&self) -> (f64, f64) {
        self.0.scale()
    }

    /// Where the input's origin lands in the output (a letterbox's left and
    /// top padding; negative after a crop).
    #[getter]
    fn offset(&self) -> (f64, f64) {
        self.0.offset()
    }

    /// The input-to-output affine map as a 2x3 matrix (rows `[a, b, c]`,
    /// `[d, e, f]`: `x' = a x + b y + c`).
    #[getter]
    fn matrix(&self) -> [[f64; 3]; 2] {
        let m = self.0.to_output.m;
        [[m[0], m[1], m[2]], [m[3], m[4], m[5]]]
    }

    /// Maps output (model) coordinates to the input image: a point `(x, y)`
    /// gives a tuple; an array of shape (N, 2) gives an (N, 2) array.
    fn to_source<'py>(&self, py: Python<'py>, points: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        if let Ok((x, y)) = points.extract::<(f64, f64)>() {
            return Ok(self
                .0
                .to_source((x, y))
                .into_pyobject(py)?
                .into_any()
                .unbind());
        }
        let a = float_rows(points, 2, "points")?;
        let n = a.shape()[0];
        let src = a.as_slice()?;
        let mut out = Vec::with_capacity(n * 2);
        for p in src.chunks_exact(2) {
            let (x, y) = self.0.to_source((p[0], p[1]));
            out.extend([x, y]);
        }
        Ok(numpy::PyArray1::from_vec(py, out)
            .reshape([n, 2])?
            .into_any()
            .unbind())
    }

    /// Maps boxes `[x0, y0, x1, y1]` (an (N, 4) array-like) from output
    /// coordinates to the input image, clamped to it: an (N, 4) float64 array.
    fn to_source_boxes<'py>(
        &self,
        boxes: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let py = boxes.py();
        let a = float_rows(boxes, 4, "boxes")?;
        let n = a.shape()[0];
        let mut out = Vec::with_capacity(n * 4);
        for b in a.as_slice()?.chunks_exact(4) {
            out.extend(self.0.to_source_box([b[0], b[1], b[2], b[3]]));
        }
        numpy::PyArray1::from_vec(py, out).reshape([n, 4])
    }

    fn __repr__(&self) -> String {
        let g = &self.0;
        let (sx, sy) = g.scale();
        let (ox, oy) = g.offset();
        format!(
            "Geometry(input_size={:?}, output_size={:?}, scale=({sx:.6}, {sy:.6}), offset=({ox:.3}, {oy:.3}))",
            g.input, g.output
        )
    }
}
