//! numpy arrays the plans write into (made here, or the caller's `out=`),
//! and the uint8 arrays Python code returns, copied out.

use half::f16;
use numpy::{
    Element, PyArrayDyn, PyArrayMethods, PyReadwriteArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use tensorprep::{DType, TensorMut};

use crate::{errors, names};

/// A writable, C-contiguous numpy array of one of the tensor element types.
pub(crate) enum OutArray<'py> {
    F32(PyReadwriteArrayDyn<'py, f32>),
    F16(PyReadwriteArrayDyn<'py, f16>),
    U8(PyReadwriteArrayDyn<'py, u8>),
    I8(PyReadwriteArrayDyn<'py, i8>),
}

fn zeros<'py, T: Element>(py: Python<'py>, shape: &[usize]) -> Bound<'py, PyArrayDyn<T>> {
    PyArrayDyn::<T>::zeros(py, shape, false)
}

/// The caller's array as `T`, checked: dtype, shape, C order, writable and
/// not borrowed elsewhere (the input array, another call).
pub(crate) fn checked<'py, T: Element>(
    out: &Bound<'py, PyAny>,
    dtype: DType,
    shape: &[usize],
) -> PyResult<PyReadwriteArrayDyn<'py, T>> {
    let array = out.cast::<PyArrayDyn<T>>().map_err(|_| {
        let found = out
            .getattr("dtype")
            .map(|d| d.to_string())
            .unwrap_or_else(|_| out.get_type().to_string());
        errors::input(format!(
            "out= must be a numpy {} array (found {found})",
            names::dtype_name(dtype)
        ))
    })?;
    if array.shape() != shape {
        return Err(errors::input(format!(
            "out= has shape {:?}; this output needs {shape:?}",
            array.shape()
        )));
    }
    if !array.is_c_contiguous() {
        return Err(errors::input("out= must be C-contiguous"));
    }
    array
        .try_readwrite()
        .map_err(|e| errors::input(format!("out= cannot be written: {e}")))
}

impl<'py> OutArray<'py> {
    /// A new zeroed array of `dtype` and `shape`, and the Python object.
    pub(crate) fn new(
        py: Python<'py>,
        dtype: DType,
        shape: &[usize],
    ) -> PyResult<(Bound<'py, PyAny>, OutArray<'py>)> {
        Ok(match dtype {
            DType::F32 => {
                let a = zeros::<f32>(py, shape);
                (a.clone().into_any(), OutArray::F32(a.readwrite()))
            }
            DType::F16 => {
                let a = zeros::<f16>(py, shape);
                (a.clone().into_any(), OutArray::F16(a.readwrite()))
            }
            DType::U8 => {
                let a = zeros::<u8>(py, shape);
                (a.clone().into_any(), OutArray::U8(a.readwrite()))
            }
            DType::I8 => {
                let a = zeros::<i8>(py, shape);
                (a.clone().into_any(), OutArray::I8(a.readwrite()))
            }
            other => return Err(unknown(other)),
        })
    }

    /// The caller's `out=` array, checked against `dtype` and `shape`.
    pub(crate) fn from_out(
        out: &Bound<'py, PyAny>,
        dtype: DType,
        shape: &[usize],
    ) -> PyResult<OutArray<'py>> {
        Ok(match dtype {
            DType::F32 => OutArray::F32(checked(out, dtype, shape)?),
            DType::F16 => OutArray::F16(checked(out, dtype, shape)?),
            DType::U8 => OutArray::U8(checked(out, dtype, shape)?),
            DType::I8 => OutArray::I8(checked(out, dtype, shape)?),
            other => return Err(unknown(other)),
        })
    }

    /// The elements, for the plan to write.
    pub(crate) fn tensor(&mut self) -> PyResult<TensorMut<'_>> {
        let contiguous = |_| errors::input("the output array is not contiguous");
        Ok(match self {
            OutArray::F32(a) => TensorMut::F32(a.as_slice_mut().map_err(contiguous)?),
            OutArray::F16(a) => TensorMut::F16(a.as_slice_mut().map_err(contiguous)?),
            OutArray::U8(a) => TensorMut::U8(a.as_slice_mut().map_err(contiguous)?),
            OutArray::I8(a) => TensorMut::I8(a.as_slice_mut().map_err(contiguous)?),
        })
    }
}

fn unknown(dtype: DType) -> PyErr {
    errors::input(format!("no numpy array for {dtype:?} tensors"))
}

/// Splits a tensor into `n` consecutive tensors of `len` elements.
pub(crate) fn split(tensor: TensorMut<'_>, len: usize) -> Vec<TensorMut<'_>> {
    let len = len.max(1);
    match tensor {
        TensorMut::F32(t) => t.chunks_mut(len).map(TensorMut::F32).collect(),
        TensorMut::F16(t) => t.chunks_mut(len).map(TensorMut::F16).collect(),
        TensorMut::U8(t) => t.chunks_mut(len).map(TensorMut::U8).collect(),
        TensorMut::I8(t) => t.chunks_mut(len).map(TensorMut::I8).collect(),
        // `OutArray` makes only the four types above.
        _ => Vec::new(),
    }
}

/// A uint8 numpy array's elements in C order (row by row) into `out`, its
/// earlier content replaced: `array`'s memory whole when it is C-contiguous,
/// else (a crop, a flipped or transposed view, a Fortran-ordered array, a
/// broadcast view) element by element. The caller checks the shape first:
/// this copies `array.len()` bytes, reserved fallibly before the copy.
/// Errors say what `array` is, for "... returned an array {error}".
pub(crate) fn copy_u8(array: &Bound<'_, PyUntypedArray>, out: &mut Vec<u8>) -> Result<(), String> {
    let pixels = array
        .cast::<PyArrayDyn<u8>>()
        .map_err(|_| format!("of dtype {} (uint8 only)", array.dtype()))?;
    let pixels = pixels
        .try_readonly()
        .map_err(|e| format!("that cannot be read: {e}"))?;
    out.clear();
    out.try_reserve(array.len())
        .map_err(|_| format!("of {} bytes there is no memory for", array.len()))?;
    // `as_slice` also gives a Fortran-ordered array's memory, which is not
    // row by row: only a C-contiguous one is copied whole.
    match pixels.as_slice().ok().filter(|_| pixels.is_c_contiguous()) {
        Some(packed) => out.extend_from_slice(packed),
        None => out.extend(pixels.as_array().iter().copied()),
    }
    Ok(())
}
