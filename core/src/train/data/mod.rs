//! Datasets: random access to encoded samples (bytes, labels, id) by index.
//!
//! A [`Dataset`] is `Send + Sync` and reads into a caller's [`Sample`], so
//! worker threads share one dataset and recycle their samples' buffers.
//! Every length a file states is checked against the bytes the file holds
//! before anything is allocated for it.

mod error;
pub mod folder;
pub mod recordio;
pub mod tfrecord;
pub mod webdataset;

use alloc::vec::Vec;

pub use error::DataError;

/// One sample: its encoded image, its labels, its id (the record's own, or
/// its index).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// The encoded image (JPEG, PNG, WebP).
    pub bytes: Vec<u8>,
    /// The labels (one for classification; several for multi-label records).
    pub labels: Vec<f32>,
    /// The sample's id.
    pub id: u64,
}

/// Samples by index.
///
/// ```
/// use tensorprep::train::data::{Dataset, Sample};
///
/// // A closure over samples in memory is a dataset too.
/// let images = vec![(vec![1u8, 2, 3], 0.0f32), (vec![4, 5], 1.0)];
/// let dataset = (images.len(), |i: usize, s: &mut Sample| {
///     s.bytes.clear();
///     s.bytes.extend_from_slice(&images[i].0);
///     s.labels.clear();
///     s.labels.push(images[i].1);
///     s.id = i as u64;
///     Ok(())
/// });
/// let mut sample = Sample::default();
/// dataset.read(1, &mut sample)?;
/// assert_eq!((sample.bytes.as_slice(), sample.labels[0]), (&[4u8, 5][..], 1.0));
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
pub trait Dataset: Send + Sync {
    /// The number of samples.
    fn len(&self) -> usize;

    /// Whether there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads sample `index` into `sample`, reusing its buffers.
    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError>;
}

/// A length and a function reading sample `i`: a dataset from a closure.
impl<F> Dataset for (usize, F)
where
    F: Fn(usize, &mut Sample) -> Result<(), DataError> + Send + Sync,
{
    fn len(&self) -> usize {
        self.0
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        if index >= self.0 {
            return Err(DataError::OutOfRange { index, len: self.0 });
        }
        (self.1)(index, sample)
    }
}

/// Reads `buf.len()` bytes of `file` at `offset` without moving a shared
/// cursor: worker threads read one file at once.
pub(crate) fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                file,
                &mut buf[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}
