//! Turns images into model-ready tensors, with the numbers the model was trained
//! with: bit-identical to Pillow/torchvision (and to OpenCV where a model used it),
//! written straight into the inference engine's input buffer.
//!
//! Where to start:
//!
//! - [`pipeline::Pipeline`]: an ordered list of [`pipeline::Op`]s (decode, colour,
//!   resize, crop, pad, flip, rotate, normalize, layout, cast), every parameter
//!   explicit; presets for the common evaluations.
//! - [`pipeline::Plan`]: a pipeline compiled once for one kind of input (image files,
//!   or camera frames of one format and size), then run per image with a
//!   [`pipeline::PlanState`], fused and without allocating.
//! - [`pipeline::ArenaPlan`]: the same plans for camera frames on a device
//!   without an allocator, every table and buffer in caller memory
//!   ([`arena::Arena`], the size reported by [`pipeline::ArenaPlan::bytes_needed`]).
//! - [`decode::ImageDecoder`]: JPEG, PNG and WebP decoding as Pillow's
//!   `Image.open(f).convert(mode)`, the format found from the bytes.
//! - [`graph::Graph`] (feature `graph`): a pipeline saved beside or inside the model,
//!   with self-tests the device reruns; `import` (feature `import`) makes graphs
//!   from Hugging Face, timm, torchvision, Ultralytics, TFLite and MindSpore files.
//! - [`Error`]: every failure, typed, with a message that says what to do.
//!
//! ```
//! use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
//! use tensorprep::TensorMut;
//!
//! // torchvision's ImageNet eval transform, compiled once for image files.
//! let plan = Pipeline::imagenet_eval().compile(InputDesc::Encoded)?;
//! let mut state = PlanState::new(); // one per thread
//! let mut tensor = vec![0f32; plan.output_len().unwrap()]; // the engine's input
//! for file in ["sample.jpg", "formats/rgb8.png", "formats/sample_lossy.webp"] {
//!     let bytes = std::fs::read(format!("../tests/fixtures/{file}")).unwrap();
//!     let geometry = plan.run(&mut state, Input::Encoded(&bytes), TensorMut::F32(&mut tensor))?;
//!     let (x, y) = geometry.to_source((112.0, 112.0)); // the crop centre, in the photo
//!     assert!(x > 0.0 && y > 0.0);
//! }
//! # Ok::<(), tensorprep::Error>(())
//! ```
//!
//! Eager ops write into caller buffers: [`resize`], [`color`], [`geometry`],
//! [`finish`] (normalize, layout, cast in one pass), [`jpeg`] and [`decode`].
//! The core is `no_std`: without `alloc` it converts, crops, resizes and runs
//! plans in caller memory; `alloc` adds owned images, decoding and heap plans;
//! `std` (default) adds
//! runtime SIMD detection, WebP and file sources. The project's
//! README (the repository's front page) has the measured parity and speed.
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

// The README's Rust examples run as doctests too.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "alloc")]
mod buffer;
mod error;
mod format;
mod image;
mod math;
mod rows;
mod tensor;
#[cfg(all(test, feature = "alloc"))]
mod testing;

pub mod adjust;
pub mod arena;
pub mod color;
pub mod cpu;
pub mod decode;
#[cfg(feature = "std")]
pub mod files;
pub mod finish;
pub mod geometry;
#[cfg(feature = "graph")]
pub mod graph;
#[cfg(feature = "import")]
pub mod import;
pub mod jpeg;
#[cfg(feature = "std")]
pub mod npy;
pub mod pipeline;
pub mod resize;
pub mod size;
#[cfg(feature = "train")]
pub mod train;
pub mod warp;

pub use error::{DecodeErrorKind, Error, InputKind, JpegErrorKind, Result};
pub use format::{PixelFormat, PlaneGeometry};
#[cfg(feature = "alloc")]
pub use image::Image;
pub use image::{ImageView, ImageViewMut, Limits, Plane, PlaneMut, Rect};
#[cfg(feature = "alloc")]
pub use tensor::Tensor;
pub use tensor::{DType, Fnv1a64, Layout, Quantization, TensorMut};

/// The version of this crate, as written in its manifest.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
