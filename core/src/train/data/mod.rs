//! Datasets: random access to encoded samples (bytes, labels, id) by index.
//!
//! A [`Dataset`] is `Send + Sync` and reads into a caller's [`Sample`], so
//! worker threads share one dataset and recycle their samples' buffers.
//! Every length a file states is checked against the bytes the file holds
//! before anything is allocated for it.

pub mod combine;
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

    /// A hash of what the dataset holds, cheap to compute (its layout: the
    /// files' records, names and labels; not every byte), so that a
    /// [`LoaderState`](crate::train::LoaderState) resumes only on the
    /// dataset it was saved from, wherever that lies on disk. The default
    /// knows only the length.
    fn fingerprint(&self) -> u64 {
        let mut h = crate::Fnv1a64::new();
        h.update(&(self.len() as u64).to_le_bytes());
        h.finish()
    }
}

/// Hashes `values` (as little-endian u64s) after a name: the fingerprints'
/// one way of mixing.
pub(crate) fn fingerprint_of(name: &str, values: impl Iterator<Item = u64>) -> u64 {
    let mut h = crate::Fnv1a64::new();
    h.update(name.as_bytes());
    for v in values {
        h.update(&v.to_le_bytes());
    }
    h.finish()
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

/// Opens a data file; what is not a regular file is refused before opening.
pub(crate) fn open_file(path: &std::path::Path) -> Result<(std::fs::File, u64), DataError> {
    crate::files::open_regular(path).map_err(|e| DataError::io(path, e))
}

/// Appends `len` bytes of `file` from `offset` to `out`, reserving the room
/// fallibly first (the caller has checked that the file holds them).
pub(crate) fn append_at(
    file: &std::fs::File,
    path: &std::path::Path,
    format: &'static str,
    offset: u64,
    len: u64,
    out: &mut Vec<u8>,
) -> Result<(), DataError> {
    let at = out.len();
    let len = usize::try_from(len)
        .ok()
        .filter(|&n| out.try_reserve(n).is_ok())
        .ok_or_else(|| DataError::corrupt(format, path, offset, "no memory for the record"))?;
    out.resize(at + len, 0);
    read_at(file, &mut out[at..], offset).map_err(|e| DataError::io(path, e))
}

/// Reads a text index of at most `cap` bytes (what the data file it
/// indexes can need: a larger one is refused before it is read whole).
pub(crate) fn read_index(
    path: &std::path::Path,
    format: &'static str,
    cap: u64,
) -> Result<alloc::string::String, DataError> {
    use std::io::Read;
    let (file, _) = open_file(path)?;
    let mut text = alloc::string::String::new();
    file.take(cap + 1)
        .read_to_string(&mut text)
        .map_err(|e| DataError::io(path, e))?;
    if text.len() as u64 > cap {
        return Err(DataError::corrupt(
            format,
            path,
            0,
            alloc::format!("larger than its data file can need ({cap} bytes)"),
        ));
    }
    Ok(text)
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
