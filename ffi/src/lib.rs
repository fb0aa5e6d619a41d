//! C API for tensorprep.
//!
//! Placeholder: the exported surface (opaque handles, result codes, panic
//! boundary, cbindgen-generated header in `include/`) arrives with the C API
//! issue. Until then this crate only re-exports the version string so the
//! workspace layout is final.
#![forbid(unsafe_code)]

/// Version of the tensorprep core this C API wraps.
pub const VERSION: &str = tensorprep::VERSION;
