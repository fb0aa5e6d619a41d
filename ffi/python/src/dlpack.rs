//! DLPack export: a loader batch's tensor handed to numpy or PyTorch
//! (`numpy.from_dlpack`, `torch.from_dlpack`) without a copy; the batch's
//! buffer goes back to the loader when the consumer frees the tensor.
//!
//! The structs are DLPack's C ABI (`dlpack.h`, versions 0.8 and 1.0): a few
//! plain fields, written here because no crate tracks this PyO3 release.
//! Both capsule kinds are made: `dltensor_versioned` when the consumer asks
//! for DLPack 1.0 (`max_version`), the legacy `dltensor` otherwise.

use std::ffi::{CStr, c_void};

use pyo3::ffi;
use pyo3::prelude::*;
use tensorprep::DType;

/// `kDLCPU`.
pub(crate) const DEVICE_CPU: i32 = 1;

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

/// DLPack 0.8's `DLManagedTensor`.
#[repr(C)]
struct ManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut ManagedTensor)>,
}

#[repr(C)]
struct PackVersion {
    major: u32,
    minor: u32,
}

/// DLPack 1.0's `DLManagedTensorVersioned`.
#[repr(C)]
struct ManagedTensorVersioned {
    version: PackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut ManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DlTensor,
}

const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";

/// What is exported: the elements' address, type and shape (C order), and
/// what keeps them alive (dropped when the consumer is done).
pub(crate) struct Export {
    pub(crate) data: *mut c_void,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<i64>,
    pub(crate) keep: Box<dyn Send>,
}

/// The exported tensor's allocation: the shape array the `DlTensor` points
/// into and the owner, freed together by the deleter.
struct Context {
    shape: Vec<i64>,
    /// C-order strides in elements (given to DLPack 1.0 consumers).
    strides: Vec<i64>,
    _keep: Box<dyn Send>,
}

fn data_type(dtype: DType) -> DlDataType {
    // kDLInt 0, kDLUInt 1, kDLFloat 2.
    let (code, bits) = match dtype {
        DType::F16 => (2, 16),
        DType::U8 => (1, 8),
        DType::I8 => (0, 8),
        _ => (2, 32),
    };
    DlDataType {
        code,
        bits,
        lanes: 1,
    }
}

fn tensor(data: *mut c_void, dtype: DType, context: &mut Context) -> DlTensor {
    DlTensor {
        data,
        device: DlDevice {
            device_type: DEVICE_CPU,
            device_id: 0,
        },
        ndim: context.shape.len() as i32,
        dtype: data_type(dtype),
        shape: context.shape.as_mut_ptr(),
        // NULL strides: C order (DLPack 0.8 and 1.0 both allow it; 1.0
        // consumers want them set, so they are given below).
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    }
}

unsafe extern "C" fn delete_legacy(managed: *mut ManagedTensor) {
    if managed.is_null() {
        return;
    }
    // SAFETY: `managed` is the box `capsule` leaked, passed here once (by
    // the consumer when it is done, or by the capsule's destructor when
    // nobody consumed it); its context is the leaked `Context` box.
    unsafe {
        let managed = Box::from_raw(managed);
        drop(Box::from_raw(managed.manager_ctx.cast::<Context>()));
    }
}

unsafe extern "C" fn delete_versioned(managed: *mut ManagedTensorVersioned) {
    if managed.is_null() {
        return;
    }
    // SAFETY: as in `delete_legacy`, for the versioned struct.
    unsafe {
        let managed = Box::from_raw(managed);
        drop(Box::from_raw(managed.manager_ctx.cast::<Context>()));
    }
}

/// The capsule's destructor: frees the tensor if no consumer took it (a
/// consumer renames the capsule `used_...` and calls the deleter itself).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule being destroyed (the GIL
    // held); the names tell which struct the pointer is, and only an
    // unconsumed capsule still holds its name.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()).cast::<ManagedTensor>();
            delete_legacy(p);
        } else if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr())
                .cast::<ManagedTensorVersioned>();
            delete_versioned(p);
        }
    }
}

/// A DLPack capsule for `export` (versioned when `versioned`).
pub(crate) fn capsule<'py>(
    py: Python<'py>,
    export: Export,
    versioned: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let mut strides = vec![1i64; export.shape.len()];
    for i in (0..strides.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * export.shape[i + 1];
    }
    let mut context = Box::new(Context {
        shape: export.shape,
        strides,
        _keep: export.keep,
    });
    let mut dl = tensor(export.data, export.dtype, &mut context);
    let (pointer, name) = if versioned {
        dl.strides = context.strides.as_mut_ptr();
        let managed = Box::new(ManagedTensorVersioned {
            version: PackVersion { major: 1, minor: 0 },
            manager_ctx: Box::into_raw(context).cast::<c_void>(),
            deleter: Some(delete_versioned),
            flags: 0,
            dl_tensor: dl,
        });
        (Box::into_raw(managed).cast::<c_void>(), VERSIONED)
    } else {
        let managed = Box::new(ManagedTensor {
            dl_tensor: dl,
            manager_ctx: Box::into_raw(context).cast::<c_void>(),
            deleter: Some(delete_legacy),
        });
        (Box::into_raw(managed).cast::<c_void>(), LEGACY)
    };
    // SAFETY: `pointer` is a leaked box of the struct `name` names; the
    // destructor frees it unless a consumer took it. The GIL is held (`py`).
    let raw = unsafe { ffi::PyCapsule_New(pointer, name.as_ptr(), Some(capsule_destructor)) };
    if raw.is_null() {
        // SAFETY: the capsule was not made, so nothing else owns `pointer`.
        unsafe {
            if versioned {
                delete_versioned(pointer.cast());
            } else {
                delete_legacy(pointer.cast());
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `raw` is a new reference to the capsule just made.
    Ok(unsafe { Bound::from_owned_ptr(py, raw) })
}
