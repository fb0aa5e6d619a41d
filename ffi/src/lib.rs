//! The C API of tensorprep: `libtensorprep.so` / `libtensorprep.a` with the
//! header `include/tensorprep.h` (generated from this crate by a pinned
//! cbindgen: `cargo run --manifest-path tools/headergen/Cargo.toml`) and the
//! C++ wrapper `include/tensorprep.hpp`.
//!
//! Conventions, as in rustls-ffi:
//! - Opaque handles (`tp_graph`, `tp_plan`, `tp_run_state`) made by a
//!   `_new`/`_load`/`_from_*` function and released with their `_free`.
//! - Every fallible function returns a `tp_result`; 0 is success. The message
//!   of the last failure on the calling thread is copied out by
//!   `tp_last_error_message`.
//! - Outputs are written only on success. Every pointer is checked for NULL
//!   and alignment, every length against what is needed, and a buffer a call
//!   writes may not overlap one it reads.
//! - Every function runs inside a panic boundary: a bug in tensorprep
//!   returns `TP_RESULT_PANIC` instead of unwinding into C or aborting the
//!   process. (The library must therefore be built with `panic = "unwind"`,
//!   which this crate checks at compile time.)
//! - Enum-typed arguments are `uint32_t` and checked: an unknown value is
//!   `TP_RESULT_INVALID_PARAMETER`, never undefined behaviour.
//!
//! Threads: a graph and a compiled plan are immutable and may be shared by
//! any number of threads; a run state belongs to one thread at a time. The
//! last-error message is per thread.

// The C names (`tp_graph`, `tp_result`) are the API.
#![allow(non_camel_case_types)]

#[cfg(panic = "abort")]
compile_error!(
    "tensorprep-ffi turns panics into TP_RESULT_PANIC and needs panic = \"unwind\"; \
     an aborting build would take the host process down on a decoder bug"
);

mod args;
mod boundary;
mod geometry;
mod graph;
mod ops;
mod plan;
mod result;
mod types;

#[cfg(test)]
mod tests;

pub use boundary::tp_last_error_message;
pub use geometry::{tp_geometry_to_source_boxes, tp_geometry_to_source_point};
pub use graph::{
    tp_graph, tp_graph_describe, tp_graph_for_model, tp_graph_free, tp_graph_from_bytes,
    tp_graph_from_hugging_face, tp_graph_from_hugging_face_backend, tp_graph_from_preset,
    tp_graph_from_timm, tp_graph_info, tp_graph_load, tp_graph_output_name, tp_graph_verify,
};
pub use ops::{
    TP_DECODE_APPLY_EXIF_ORIENTATION, TP_DECODE_LENIENT, tp_convert_color, tp_crop,
    tp_decode_options, tp_finish, tp_finish_spec, tp_flip, tp_image_decode, tp_image_read_info,
    tp_jpeg_decode, tp_jpeg_read_info, tp_pad, tp_resize, tp_resize_f32, tp_rotate,
};
pub use plan::{
    TP_PLAN_APPLY_EXIF_ORIENTATION, TP_PLAN_IGNORE_EXIF_ORIENTATION, TP_PLAN_LENIENT,
    tp_input_desc, tp_input_kind, tp_plan, tp_plan_free, tp_plan_new, tp_plan_new_ex,
    tp_plan_options, tp_plan_options_ex, tp_plan_output_info, tp_plan_output_info_for_jpeg,
    tp_plan_run_batch_jpeg, tp_plan_run_batch_pixels, tp_plan_run_jpeg, tp_plan_run_pixels,
    tp_run_state, tp_run_state_free, tp_run_state_new,
};
pub use result::{tp_result, tp_result_name};
pub use types::{
    tp_bytes, tp_channel_order, tp_decoder, tp_dtype, tp_flip_axis, tp_float_image,
    tp_float_image_mut, tp_geometry, tp_hf_backend, tp_image, tp_image_format, tp_image_info,
    tp_image_mut, tp_jpeg_info, tp_layout, tp_pixel_format, tp_placement, tp_plane, tp_plane_mut,
    tp_rect, tp_resample, tp_rotation, tp_tensor_info, tp_yuv_range,
};

/// The major version of the header (compile time; `tp_version()` gives the library's).
pub const TP_VERSION_MAJOR: u32 = 0;
/// The minor version of the header. Before 1.0 each minor version is its own ABI.
pub const TP_VERSION_MINOR: u32 = 1;
/// The patch version of the header.
pub const TP_VERSION_PATCH: u32 = 0;
/// `MAJOR * 10000 + MINOR * 100 + PATCH`, for `#if TP_VERSION_NUMBER >= 100`.
pub const TP_VERSION_NUMBER: u32 =
    TP_VERSION_MAJOR * 10000 + TP_VERSION_MINOR * 100 + TP_VERSION_PATCH;

/// The library's version, `"MAJOR.MINOR.PATCH"`.
///
/// # Safety
///
/// None: the call takes no arguments. The string is static; the caller must
/// not free or modify it.
#[unsafe(no_mangle)]
pub extern "C" fn tp_version() -> *const std::ffi::c_char {
    const VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
    ) {
        Ok(v) => v,
        Err(_) => panic!("the version has no NUL inside"),
    };
    // A constant: nothing here can panic at run time, but every export is
    // inside the boundary all the same.
    boundary::boundary_value(VERSION, || VERSION).as_ptr()
}
