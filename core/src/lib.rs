#![doc = include_str!("../../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "alloc")]
mod buffer;
mod error;
mod format;
mod image;
mod rows;
mod tensor;
#[cfg(all(test, feature = "alloc"))]
mod testing;

pub mod color;
pub mod decode;
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

pub use error::{DecodeErrorKind, Error, JpegErrorKind, Result};
pub use format::{PixelFormat, PlaneGeometry};
#[cfg(feature = "alloc")]
pub use image::Image;
pub use image::{ImageView, ImageViewMut, Limits, Plane, PlaneMut, Rect};
#[cfg(feature = "alloc")]
pub use tensor::Tensor;
pub use tensor::{DType, Layout, Quantization, TensorMut};

/// The version of this crate, as written in its manifest.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
