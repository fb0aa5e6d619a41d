//! Turns images into model-ready tensors, with the numbers the model was trained
//! with: bit-identical to Pillow/torchvision (and to OpenCV, PyTorch or libyuv where a
//! model used them), written straight into the inference engine's input buffer.
//!
//! # Where to start
//!
//! - **Pipelines and plans**: [`pipeline::Pipeline`] is an ordered list of
//!   [`pipeline::Op`]s (decode, colour, resize, crop, pad, flip, rotate, normalize,
//!   layout, cast), every parameter explicit, with presets for the common
//!   evaluations; [`pipeline::Plan`] is a pipeline compiled once for one kind of input
//!   (image files, or camera frames of one format and size), then run per image with a
//!   [`pipeline::PlanState`], fused and without allocating. [`pipeline::Source`] pulls
//!   inputs from files, buffers or a camera callback; [`pipeline::Plan::run_batch`]
//!   fills an N-image batch ([`run_batch_parallel`][run-batch-parallel] with feature
//!   `parallel`).
//! - **Eager ops**, each into a caller buffer: [`decode::ImageDecoder`] (JPEG, PNG and
//!   WebP as Pillow's `Image.open(f).convert(mode)`), [`jpeg`], [`resize`], [`color`],
//!   [`geometry`], [`finish`] (normalize, layout and cast in one pass), [`adjust`]
//!   and [`warp`] (the augmentations' kernels).
//! - **Devices without an allocator**: [`pipeline::ArenaPlan`] runs the same plans for
//!   camera frames with every table and buffer in caller memory ([`arena::Arena`], the
//!   size reported by [`pipeline::ArenaPlan::bytes_needed`]).
//! - **Graphs** (feature `graph`): [`graph::Graph`] is a pipeline saved beside or
//!   inside the model, with self-tests the device reruns; the importers
//!   ([`import`][import], feature `import`) make graphs from Hugging Face, timm,
//!   torchvision, Ultralytics, TFLite and MindSpore files.
//! - **Training** (feature `train`): [`train`][train] has datasets
//!   ([`train::data`][train-data]: folders, RecordIO, TFRecord, WebDataset), the
//!   random augmentations ([`train::Augment`][train-augment], torchvision's), training
//!   plans ([`train::TrainPipeline`][train-pipeline]) and the [`train::Loader`][train-loader]:
//!   threads, ordered and bounded batches, an exact resume from a small state.
//! - **Errors**: [`Error`], every failure typed, with a message that says what to do.
//!
//! ```
//! use tensorprep::TensorMut;
//! use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
//!
//! // torchvision's ImageNet eval transform, compiled once for image files.
//! let plan = Pipeline::imagenet_eval().compile(InputDesc::Encoded)?;
//! let mut state = PlanState::new(); // one per thread
//! let mut tensor = vec![0f32; plan.output_len().unwrap()]; // the engine's input
//! let fixtures = "tests/fixtures"; // the repository's sample images
//! # let fixtures = "../tests/fixtures"; // doctests run from core/
//! for file in ["sample.jpg", "formats/rgb8.png", "formats/sample_lossy.webp"] {
//!     let bytes = std::fs::read(format!("{fixtures}/{file}")).unwrap();
//!     let geometry = plan.run(&mut state, Input::Encoded(&bytes), TensorMut::F32(&mut tensor))?;
//!     let (x, y) = geometry.to_source((112.0, 112.0)); // the crop centre, in the photo
//!     assert!(x > 0.0 && y > 0.0);
//! }
//! # Ok::<(), tensorprep::Error>(())
//! ```
//!
//! # Features
//!
//! The core is `no_std`. Without features it converts, crops, resizes and runs plans
//! in caller memory; `alloc` adds owned images, JPEG and PNG decoding and heap plans;
//! `std` (default) adds runtime SIMD detection and file sources; `webp` (default) WebP
//! decoding; `graph` (default) graph files; `import` the importers; `train` the
//! training loader; `parallel` batches over threads; `turbojpeg` the libjpeg-turbo
//! decoder (needs `cmake` and `nasm`). Items that need a feature say so.
//!
//! The project's README and its `docs/` directory have the guides for C, Python, the
//! command line, training and embedded use, and the measured parity and speed.
//!
#![cfg_attr(
    feature = "parallel",
    doc = "[run-batch-parallel]: pipeline::Plan::run_batch_parallel"
)]
#![cfg_attr(
    not(feature = "parallel"),
    doc = "[run-batch-parallel]: https://docs.rs/tensorprep/latest/tensorprep/pipeline/struct.Plan.html#method.run_batch_parallel"
)]
#![cfg_attr(feature = "import", doc = "[import]: mod@import")]
#![cfg_attr(
    not(feature = "import"),
    doc = "[import]: https://docs.rs/tensorprep/latest/tensorprep/import/index.html"
)]
#![cfg_attr(feature = "train", doc = "[train]: mod@train")]
#![cfg_attr(feature = "train", doc = "[train-data]: train::data")]
#![cfg_attr(feature = "train", doc = "[train-augment]: train::Augment")]
#![cfg_attr(feature = "train", doc = "[train-pipeline]: train::TrainPipeline")]
#![cfg_attr(feature = "train", doc = "[train-loader]: train::Loader")]
#![cfg_attr(
    not(feature = "train"),
    doc = "[train]: https://docs.rs/tensorprep/latest/tensorprep/train/index.html"
)]
#![cfg_attr(
    not(feature = "train"),
    doc = "[train-data]: https://docs.rs/tensorprep/latest/tensorprep/train/data/index.html"
)]
#![cfg_attr(
    not(feature = "train"),
    doc = "[train-augment]: https://docs.rs/tensorprep/latest/tensorprep/train/enum.Augment.html"
)]
#![cfg_attr(
    not(feature = "train"),
    doc = "[train-pipeline]: https://docs.rs/tensorprep/latest/tensorprep/train/struct.TrainPipeline.html"
)]
#![cfg_attr(
    not(feature = "train"),
    doc = "[train-loader]: https://docs.rs/tensorprep/latest/tensorprep/train/struct.Loader.html"
)]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "alloc")]
mod buffer;
pub mod error;
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
#[cfg(feature = "alloc")]
pub mod functional;
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
#[cfg(feature = "alloc")]
pub mod targets;
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
