//! A batch as the consumer holds it ([`Batch`]) and as a per-batch function
//! sees it ([`BatchMut`]), over the recycled storage of one batch buffer.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::LoadError;
use super::queue::Pool;
use crate::Tensor;
use crate::targets::Target;
use alloc::boxed::Box;

/// A collated batch as a [`PerBatch`](super::PerBatch) function sees it.
#[non_exhaustive]
pub struct BatchMut<'a> {
    /// The epoch.
    pub epoch: u32,
    /// The batch's number within the epoch.
    pub number: u64,
    /// The samples in the batch (the tensor holds `len` samples first).
    pub len: usize,
    /// The batch tensor (N x sample shape, room for a full batch).
    pub tensor: &'a mut Tensor,
    /// Every sample's labels, `label_width` each, sample after sample
    /// (`len x label_width`).
    pub labels: &'a mut [f32],
    /// Labels per sample ([`LoaderConfig::label_width`](super::LoaderConfig::label_width)).
    pub label_width: usize,
    /// Each sample's index in the dataset.
    pub indices: &'a [u64],
}

/// One batch: the tensors of its samples, their labels and indices. Its
/// buffer returns to the loader when it is dropped.
pub struct Batch {
    /// The epoch.
    pub epoch: u32,
    /// The batch's number within the epoch (for this shard).
    pub number: u64,
    pub(super) buffers: Option<BatchBuffer>,
    /// The pool the buffers return to.
    pub(super) home: Arc<Pool<BatchBuffer>>,
    /// Batches handed out and not yet dropped (the loader's count).
    pub(super) held: Arc<AtomicUsize>,
}

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("epoch", &self.epoch)
            .field("number", &self.number)
            .field("len", &self.len())
            .field("skipped", &self.skipped())
            .finish()
    }
}

/// One batch buffer: a batch's tensor, labels, indices and shapes, recycled
/// (`depth` of them circulate).
#[derive(Debug)]
pub(super) struct BatchBuffer {
    pub(super) tensor: Tensor,
    /// Every sample's labels, `label_width` each, in slot order.
    pub(super) labels: Vec<f32>,
    /// Labels per sample (the loader's).
    pub(super) label_width: usize,
    pub(super) indices: Vec<u64>,
    /// Each sample's shape.
    pub(super) shapes: Vec<[usize; 3]>,
    /// Each sample's target, moved with its image (`None` for
    /// classification samples).
    pub(super) targets: Vec<Option<Box<Target>>>,
    /// The batch's: samples, then the (largest) sample shape.
    pub(super) shape: [usize; 4],
    /// The plan's layout: where height and width are in a sample shape.
    pub(super) layout: crate::Layout,
    /// Samples filled (a batch with skipped samples, or the last, is short).
    pub(super) len: usize,
    /// Slots left empty by skipped samples.
    pub(super) skipped: usize,
}

impl Batch {
    /// The batch's tensor: [`Batch::shape`] (N x C x H x W for a CHW plan),
    /// in the plan's element type: exactly the batch's samples (a short
    /// batch's tensor is short too).
    pub fn tensor(&self) -> &Tensor {
        &self.buffers().tensor
    }

    /// The batch's tensor, writable: a batch is its holder's alone until it
    /// is dropped (a caller may normalize or mix it in place).
    pub fn tensor_mut(&mut self) -> &mut Tensor {
        &mut self
            .buffers
            .as_mut()
            .expect("a batch holds its buffers until dropped")
            .tensor
    }

    /// The samples in the batch.
    pub fn len(&self) -> usize {
        self.buffers().len
    }

    /// Whether the batch holds no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every sample's labels, [`Batch::label_width`] each, sample after
    /// sample (row-major `len x label_width`): one per sample, a class
    /// index, for classification; CelebA's 40 attributes, a box's four
    /// numbers, a record's several labels otherwise.
    ///
    /// ```no_run
    /// # fn f(batch: &tensorprep::train::Batch) {
    /// let width = batch.label_width();
    /// for (i, labels) in batch.labels().chunks_exact(width.max(1)).enumerate() {
    ///     println!("sample {}: {labels:?}", batch.indices()[i]);
    /// }
    /// # }
    /// ```
    pub fn labels(&self) -> &[f32] {
        &self.buffers().labels
    }

    /// Labels per sample: the loader's
    /// [`LoaderConfig::label_width`](super::LoaderConfig::label_width),
    /// the same for every batch (0: the samples have none).
    pub fn label_width(&self) -> usize {
        self.buffers().label_width
    }

    /// Each sample's index in the dataset.
    pub fn indices(&self) -> &[u64] {
        &self.buffers().indices
    }

    /// The tensor's shape: samples, then the sample shape (for a plan
    /// whose output size varies, the batch's largest, its height and width
    /// rounded up to [`LoaderConfig::size_divisible`](super::LoaderConfig::size_divisible),
    /// each sample at the top left of its place, padded bottom and right
    /// with zeros).
    pub fn shape(&self) -> [usize; 4] {
        self.buffers().shape
    }

    /// Each sample's own shape (before padding).
    pub fn sample_shapes(&self) -> &[[usize; 3]] {
        &self.buffers().shapes
    }

    /// Each image's own `[height, width]` before padding, in sample order
    /// (torchvision's `ImageList.image_sizes`): its pixels are rows
    /// `0..height` and columns `0..width` of its place in the tensor, the
    /// rest padding.
    ///
    /// ```no_run
    /// # fn f(batch: &tensorprep::train::Batch) {
    /// for [h, w] in batch.image_sizes() {
    ///     println!("{h} x {w} in a {:?} batch", batch.shape());
    /// }
    /// # }
    /// ```
    pub fn image_sizes(&self) -> impl ExactSizeIterator<Item = [usize; 2]> + '_ {
        let layout = self.buffers().layout;
        self.sample_shapes()
            .iter()
            .map(move |s| spatial(layout, *s))
    }

    /// The shape of [`Batch::pixel_mask`]: samples, height, width (of the
    /// padded tensor).
    pub fn pixel_mask_shape(&self) -> [usize; 3] {
        let b = self.buffers();
        let [h, w] = spatial(b.layout, [b.shape[1], b.shape[2], b.shape[3]]);
        [b.len, h, w]
    }

    /// Which pixels of the padded tensor are image (1) and which padding
    /// (0), per sample: the `pixel_mask` DETR-style models take beside
    /// `pixel_values` when a batch holds images of different sizes (each
    /// sample sits at the top left of its slot, as transformers pads it).
    /// All ones for a plan of fixed output size. `out` holds
    /// [`Batch::pixel_mask_shape`]'s elements.
    ///
    /// ```no_run
    /// # fn f(batch: &tensorprep::train::Batch) -> Result<(), tensorprep::train::LoadError> {
    /// let [n, h, w] = batch.pixel_mask_shape();
    /// let mut mask = vec![0u8; n * h * w];
    /// batch.pixel_mask(&mut mask)?;
    /// # Ok(()) }
    /// ```
    pub fn pixel_mask(&self, out: &mut [u8]) -> Result<(), LoadError> {
        let [n, h, w] = self.pixel_mask_shape();
        if out.len() != n * h * w {
            return Err(LoadError::BufferLength {
                expected: n * h * w,
                actual: out.len(),
            });
        }
        if h * w == 0 {
            return Ok(());
        }
        let layout = self.buffers().layout;
        for (mask, shape) in out.chunks_exact_mut(h * w).zip(self.sample_shapes()) {
            let [sh, sw] = spatial(layout, *shape);
            for (y, row) in mask.chunks_exact_mut(w).enumerate() {
                let inside = if y < sh { sw.min(w) } else { 0 };
                row[..inside].fill(1);
                row[inside..].fill(0);
            }
        }
        Ok(())
    }

    /// Samples left out of this batch ([`OnError::Skip`](super::OnError::Skip)).
    pub fn skipped(&self) -> usize {
        self.buffers().skipped
    }

    pub(super) fn buffers(&self) -> &BatchBuffer {
        self.buffers
            .as_ref()
            .expect("a batch holds its buffers until dropped")
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(b) = self.buffers.take() {
            self.held.fetch_sub(1, Ordering::SeqCst);
            self.home.put(b);
        }
    }
}

/// Sets a tensor's length to `len` elements (zeros where it grows, its
/// room kept where it shrinks); `false` when there is no memory for it.
pub(super) fn resize(t: &mut Tensor, len: usize) -> bool {
    macro_rules! each {
        ($($v:ident),*) => {
            match t {
                $(Tensor::$v(v) => {
                    if len > v.len() && v.try_reserve_exact(len - v.len()).is_err() {
                        return false;
                    }
                    v.resize(len, Default::default());
                })*
            }
        };
    }
    each!(F32, F16, U8, I8);
    true
}

/// Height and width of a sample `shape` laid out as `layout`.
pub(super) fn spatial(layout: crate::Layout, shape: [usize; 3]) -> [usize; 2] {
    let [_, h, w] = layout.channels_height_width(shape);
    [h, w]
}
