//! A caller's own op on the decoded 8-bit image ([`CustomOp`]): the hook
//! Python's `train.Lambda` (MindSpore's `PyFunc`, torchvision's `Lambda`)
//! runs through, open to Rust code too. It runs in the image pass between
//! the drawn ops, with a key of its own for its randomness; it cannot be
//! fused, saved in a graph or in a loader's state.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use super::Drawing;
use super::unit::{At, Augmentation, Nested, Targets};
use super::{Drawn, invalid};
use crate::ImageView;

/// The error a custom op's function returns (any error type; a `String`
/// converts with `.into()`).
pub type BoxError = Box<dyn core::error::Error + Send + Sync>;

/// A custom op's function: the image (8-bit packed rows in the pipeline's
/// decode format: RGB8, BGR8 or Gray8), the key of this op for this sample,
/// and the buffer to write the result into (packed rows, same format; its
/// earlier content is scratch: clear it). Returns the result's width and
/// height.
pub type CustomFn =
    dyn Fn(&ImageView<'_>, u64, &mut Vec<u8>) -> Result<(u32, u32), BoxError> + Send + Sync;

/// What size a custom op leaves: the plan draws the ops after it for that
/// size, and refuses a result of another ([`CustomOpError::Size`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CustomSize {
    /// The size of the image it is given.
    Same,
    /// Always this size.
    Fixed {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
}

impl CustomSize {
    /// The size after the op, given the size before.
    pub const fn after(self, before: (u32, u32)) -> (u32, u32) {
        match self {
            CustomSize::Same => before,
            CustomSize::Fixed { width, height } => (width, height),
        }
    }
}

/// A caller's function on the decoded 8-bit image, one step of a training
/// pipeline ([`Augment::Custom`](super::Augment::Custom)).
///
/// It gets the sample's image and a key of its own: a pure function of
/// (seed, epoch, sample index) and the op's position in the pipeline, so
/// a function that seeds its randomness from the key gives the same
/// tensors on any number of workers and after a resume. It counts against
/// the worker's decode budget like any image of the pass. Two ops are equal
/// when they share one function (clones of one op).
///
/// ```
/// use tensorprep::train::{Augment, CustomOp, SampleKey, TrainPipeline, TrainState};
/// use tensorprep::TensorMut;
///
/// // Inverts every pixel.
/// let invert = CustomOp::new("invert", |image, _key, out| {
///     out.clear();
///     for row in 0..image.height() {
///         out.extend(image.row(row).iter().map(|v| 255 - v));
///     }
///     Ok((image.width(), image.height()))
/// });
/// assert_eq!(Augment::Custom(invert.clone()).to_string(), "Lambda(invert)");
/// let mut pipeline = TrainPipeline::imagenet_train();
/// pipeline.augments.push(Augment::Custom(invert));
/// let plan = pipeline.compile()?;
/// let jpeg = std::fs::read("../tests/fixtures/sample.jpg").unwrap();
/// let mut tensor = vec![0f32; 3 * 224 * 224];
/// plan.run(&mut TrainState::new(), SampleKey::new(7, 0, 0), &jpeg, TensorMut::F32(&mut tensor))?;
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone)]
pub struct CustomOp {
    name: Arc<str>,
    size: CustomSize,
    function: Arc<CustomFn>,
}

impl CustomOp {
    /// The op `name` (what describers print: `Lambda(name)`) running
    /// `function`, which keeps the image's size.
    pub fn new(
        name: &str,
        function: impl Fn(&ImageView<'_>, u64, &mut Vec<u8>) -> Result<(u32, u32), BoxError>
        + Send
        + Sync
        + 'static,
    ) -> CustomOp {
        CustomOp {
            name: Arc::from(name),
            size: CustomSize::Same,
            function: Arc::new(function),
        }
    }

    /// The same op, declared to leave images of `size`.
    pub fn with_size(self, size: CustomSize) -> CustomOp {
        CustomOp { size, ..self }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The size it leaves.
    pub fn size(&self) -> CustomSize {
        self.size
    }

    /// Runs the function on `image` with `key`, its result in `out`; checks
    /// the result's size against the declared one and `out`'s length
    /// against the size (`channels` bytes a pixel).
    pub(crate) fn run(
        &self,
        image: &ImageView<'_>,
        key: u64,
        out: &mut Vec<u8>,
    ) -> Result<(u32, u32), CustomOpError> {
        let (width, height) =
            (self.function)(image, key, out).map_err(|error| CustomOpError::Failed {
                op: self.name.clone(),
                error,
            })?;
        let expected = self.size.after((image.width(), image.height()));
        if (width, height) != expected {
            return Err(CustomOpError::Size {
                op: self.name.clone(),
                expected,
                found: (width, height),
            });
        }
        let channels = image.format().bytes_per_pixel().unwrap_or(1) as u64;
        let needed = u64::from(width) * u64::from(height) * channels;
        if out.len() as u64 != needed {
            return Err(CustomOpError::Length {
                op: self.name.clone(),
                size: (width, height),
                len: out.len(),
                needed,
            });
        }
        Ok((width, height))
    }
}

impl PartialEq for CustomOp {
    fn eq(&self, other: &CustomOp) -> bool {
        Arc::ptr_eq(&self.function, &other.function)
            && self.name == other.name
            && self.size == other.size
    }
}

impl fmt::Debug for CustomOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lambda({})", self.name)?;
        match self.size {
            CustomSize::Same => Ok(()),
            CustomSize::Fixed { width, height } => write!(f, " to {width}x{height}"),
        }
    }
}

impl fmt::Display for CustomOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Why a custom op gave no image for a sample (the loader reports it as
/// [`LoadError::Custom`](crate::train::LoadError::Custom), naming the
/// sample; [`TrainPlan::run`](crate::train::TrainPlan::run) returns
/// [`Error::CustomOp`](crate::Error::CustomOp) and leaves this in the state:
/// [`TrainState::take_custom_error`](crate::train::TrainState::take_custom_error)).
#[derive(Debug)]
#[non_exhaustive]
pub enum CustomOpError {
    /// The function returned an error (the source).
    Failed {
        /// The op's name.
        op: Arc<str>,
        /// What it returned.
        error: BoxError,
    },
    /// It returned an image of another size than it declares.
    Size {
        /// The op's name.
        op: Arc<str>,
        /// The declared size (width, height).
        expected: (u32, u32),
        /// The size returned.
        found: (u32, u32),
    },
    /// It returned a buffer whose length is not width x height x channels.
    Length {
        /// The op's name.
        op: Arc<str>,
        /// The size returned (width, height).
        size: (u32, u32),
        /// The buffer's length.
        len: usize,
        /// The length the size needs.
        needed: u64,
    },
}

impl CustomOpError {
    /// The op's name.
    pub fn op(&self) -> &str {
        match self {
            CustomOpError::Failed { op, .. }
            | CustomOpError::Size { op, .. }
            | CustomOpError::Length { op, .. } => op,
        }
    }
}

impl fmt::Display for CustomOpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CustomOpError::Failed { op, .. } => write!(f, "Lambda({op}) failed"),
            CustomOpError::Size {
                op,
                expected,
                found,
            } => write!(
                f,
                "Lambda({op}) returned a {}x{} image where {}x{} was declared",
                found.0, found.1, expected.0, expected.1
            ),
            CustomOpError::Length {
                op,
                size,
                len,
                needed,
            } => write!(
                f,
                "Lambda({op}) returned {len} bytes for a {}x{} image, which has {needed}",
                size.0, size.1
            ),
        }
    }
}

impl core::error::Error for CustomOpError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            CustomOpError::Failed { error, .. } => Some(&**error),
            _ => None,
        }
    }
}

/// A pipeline holding a custom op cannot be saved (in a graph file, a
/// loader's state): the function is the caller's code, not data.
/// [`TrainPipeline::check_saveable`](crate::train::TrainPipeline::check_saveable)
/// returns it, naming the op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotSaveable {
    /// The op's name.
    pub op: Arc<str>,
}

impl fmt::Display for NotSaveable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Lambda({}) runs the caller's own code: a pipeline holding it cannot be saved \
             (in a graph or a loader's state)",
            self.op
        )
    }
}

impl core::error::Error for NotSaveable {}

impl Augmentation for CustomOp {
    fn check(&self) -> crate::Result<()> {
        match self.size {
            CustomSize::Fixed { width, height } if width == 0 || height == 0 => {
                Err(invalid("Lambda", "a declared size must be at least 1 x 1"))
            }
            CustomSize::Fixed { .. } | CustomSize::Same => Ok(()),
        }
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> crate::Result<(u32, u32)> {
        let mut d = at.draws();
        let key = u64::from(d.next_u32()) << 32 | u64::from(d.next_u32());
        ops.push(Drawn::Custom {
            position: at.position,
            key,
        })?;
        Ok(self.size.after(size))
    }

    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        match self.size {
            CustomSize::Same => before,
            CustomSize::Fixed { width, height } => Some((width, height)),
        }
    }

    fn draws_image_ops(&self) -> bool {
        true
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Refused("a custom op does not say what it does to targets")
    }
}
