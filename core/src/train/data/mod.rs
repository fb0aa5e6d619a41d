//! Datasets: random access to encoded samples (bytes, labels, id) by index.
//!
//! A [`Dataset`] is `Send + Sync` and reads into a caller's [`Sample`], so
//! worker threads share one dataset and recycle their samples' buffers.
//! Every length a file states is checked against the bytes the file holds
//! before anything is allocated for it.

#![forbid(unsafe_code)]

pub mod celeba;
pub mod cifar;
pub mod coco;
pub mod combine;
mod epoch;
mod error;
pub mod folder;
mod iterable;
pub mod json_target;
pub mod mindrecord;
pub mod mnist;
pub mod recordio;
#[cfg(feature = "remote")]
pub mod remote;
pub mod shards;
mod tar_members;
pub mod tar_stream;
pub mod tf_detection;
pub mod tfrecord;
pub mod voc;
pub mod webdataset;
pub mod yolo;

use alloc::vec::Vec;

pub use coco::Coco;
pub use epoch::ReadEpoch;
pub use error::DataError;
pub use iterable::{
    Interrupter, Iterable, IterableDataset, MAX_CURSORS, SampleStream, StreamOptions,
};
pub use voc::Voc;
pub use yolo::Yolo;

/// The largest sample a dataset reads (256 MiB): an image file, a tar
/// member, a record (header, labels and image). A larger one is an error
/// naming it, before it is read; the loader's read-ahead holds at most this
/// per sample in flight.
pub const MAX_SAMPLE_BYTES: u64 = 256 << 20;

/// One sample: its image (an encoded file, or pixels), its labels, its id
/// (the record's own, or its index).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// The image: an encoded file (JPEG, PNG, WebP), or pixels as
    /// [`content`](Sample::content) says.
    pub bytes: Vec<u8>,
    /// The labels (one for classification; several for multi-label records).
    pub labels: Vec<f32>,
    /// The sample's id.
    pub id: u64,
    /// What [`bytes`](Sample::bytes) holds.
    pub content: Content,
    /// Its detection or segmentation target (boxes, masks, key points), as
    /// annotated on the image as stored; `None` for classification (boxed:
    /// a sample moves through the loader's queues).
    pub target: Option<alloc::boxed::Box<crate::targets::Target>>,
}

/// What a [`Sample`]'s bytes hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Content {
    /// An encoded image file (JPEG, PNG, WebP); its header gives its size.
    #[default]
    Encoded,
    /// Decoded pixels, rows top to bottom with no padding, in an 8-bit
    /// packed `format` (`Gray8`, `Rgb8`, `Bgr8`, `Rgba8`, `Bgra8`):
    /// `width * height * bytes_per_pixel` bytes (CIFAR, MNIST, arrays).
    Pixels {
        /// Columns.
        width: u32,
        /// Rows.
        height: u32,
        /// The layout of one pixel.
        format: crate::PixelFormat,
    },
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

    /// Reads sample `index` for a loader's pass `pass` (its seed, epoch,
    /// shuffle and shard): what a dataset that orders itself needs. The
    /// default reads by index.
    fn read_in(
        &self,
        pass: &ReadEpoch,
        index: usize,
        sample: &mut Sample,
    ) -> Result<(), DataError> {
        let _ = pass;
        self.read(index, sample)
    }

    /// Whether the dataset orders its own samples (a stream through a
    /// shuffle buffer, [`IterableDataset`]): the loader then reads positions
    /// in order, draws no permutation of its own (its shuffle turns the
    /// dataset's on, [`ReadEpoch::shuffle`]) and takes no weights.
    fn orders_itself(&self) -> bool {
        false
    }

    /// The first sample index of each of the dataset's files (ascending
    /// from 0), for a shard-block shuffle ([`Order::Blocks`](crate::train::Order::Blocks));
    /// empty (the default) when it has no files of its own: the shuffle
    /// then cuts it into runs of a fixed length.
    fn blocks(&self) -> Vec<usize> {
        Vec::new()
    }

    /// A loader's run [`ReadEpoch::run`] ended (the loader stopped or was
    /// dropped): a dataset keeping state per run (a stream's cursors)
    /// drops it and stops that run's reads blocked waiting. The default
    /// does nothing.
    fn end_run(&self, run: u64) {
        let _ = run;
    }

    /// A hint that sample `index` will be read soon (the loader's read
    /// stage gives each sample [`LoaderConfig::fetch_ahead`](crate::train::LoaderConfig::fetch_ahead)
    /// positions before it reads it): a dataset on object storage (feature
    /// `remote`) starts fetching its bytes. Never an error: a failed fetch
    /// shows, and is retried, when the sample is read. The default does
    /// nothing.
    fn fetch_ahead(&self, index: usize) {
        let _ = index;
    }

    /// Sample `index` as the dataset knows it, for messages: its file, or
    /// its file and offset, or its shard and key. The default is its index.
    fn describe(&self, index: usize) -> alloc::string::String {
        alloc::format!("sample {index}")
    }

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

/// How many leading bytes of a file [`file_identity`] hashes.
pub(crate) const IDENTITY_BYTES: usize = 4096;

/// A cheap identity of an open data file, for a dataset's fingerprint: its
/// name (not its folder: a moved dataset resumes), its length and a hash of
/// its first [`IDENTITY_BYTES`] bytes (the header and the first records),
/// so that two files of one layout but other contents (MNIST's and
/// Fashion-MNIST's train images) differ.
pub(crate) fn file_identity(
    path: &std::path::Path,
    file: &DataFile,
    size: u64,
) -> Result<u64, DataError> {
    let mut head = [0u8; IDENTITY_BYTES];
    let n = usize::try_from(size).map_or(IDENTITY_BYTES, |s| s.min(IDENTITY_BYTES));
    read_at(file, &mut head[..n], 0).map_err(|e| DataError::io(path, e))?;
    let mut h = crate::Fnv1a64::new();
    if let Some(name) = path.file_name() {
        h.update(name.as_encoded_bytes());
    }
    h.update(&[0]);
    h.update(&size.to_le_bytes());
    h.update(&head[..n]);
    Ok(h.finish())
}

/// Labels travel as `f32`: a label read from a file must be finite, and an
/// integer label one that `f32` holds exactly (every integer up to 2^24,
/// and the larger ones that happen to be exact), so a class index is never
/// rounded into another. What is not is refused, naming the sample, never
/// passed on. The one place this rule lives: every reader (and the Python
/// package) asks it.
pub mod label {
    const NOT_FINITE: &str = "a label that is not a finite number (NaN or infinite)";
    const NOT_EXACT: &str =
        "an integer label that float32 cannot hold exactly (every integer up to 2^24 is)";
    const PAST_RANGE: &str = "a label past float32's range (not a finite number in float32)";

    /// A float label, refused unless finite.
    ///
    /// ```
    /// use tensorprep::train::data::label;
    /// assert_eq!(label::float(0.5), Ok(0.5));
    /// assert!(label::float(f32::NAN).is_err());
    /// ```
    pub fn float(x: f32) -> Result<f32, &'static str> {
        if x.is_finite() {
            Ok(x)
        } else {
            Err(NOT_FINITE)
        }
    }

    /// An integer label, refused unless `f32` holds it exactly.
    ///
    /// ```
    /// use tensorprep::train::data::label;
    /// assert_eq!(label::int(1 << 24), Ok(16_777_216.0));
    /// assert!(label::int((1 << 24) + 1).is_err());
    /// ```
    pub fn int(x: i64) -> Result<f32, &'static str> {
        let f = x as f32;
        if f as f64 as i128 == i128::from(x) {
            Ok(f)
        } else {
            Err(NOT_EXACT)
        }
    }

    /// A float64 label: finite, within `f32`'s range, and, when it is an
    /// integer, one `f32` holds exactly (a fraction is rounded to `f32`, as
    /// every float label is).
    ///
    /// ```
    /// use tensorprep::train::data::label;
    /// assert_eq!(label::f64(16_777_216.0), Ok(16_777_216.0));
    /// assert!(label::f64(16_777_217.0).is_err());
    /// assert_eq!(label::f64(0.1), Ok(0.1f32));
    /// ```
    pub fn f64(x: f64) -> Result<f32, &'static str> {
        if !x.is_finite() {
            return Err(NOT_FINITE);
        }
        let f = x as f32;
        if !f.is_finite() {
            return Err(PAST_RANGE);
        }
        if x.fract() == 0.0 && f64::from(f) != x {
            return Err(NOT_EXACT);
        }
        Ok(f)
    }

    /// A label written as text (`7`, `-1`, `0.25`): an integer is held
    /// exactly, a number finite after rounding to `f32`.
    pub fn text(t: &str) -> Result<f32, &'static str> {
        let t = t.trim();
        if let Ok(i) = t.parse::<i64>() {
            return int(i);
        }
        f64(t.parse().map_err(|_| "a label that is not a number")?)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn labels_are_finite_and_integers_exact() {
            assert_eq!(super::int(16_777_216), Ok(16_777_216.0));
            assert!(super::int(16_777_217).is_err());
            assert!(super::int(i64::MAX).is_err());
            assert_eq!(super::int(1 << 40), Ok((1u64 << 40) as f32));
            assert_eq!(super::text(" 7\n"), Ok(7.0));
            assert_eq!(super::text("-0.25"), Ok(-0.25));
            for bad in [
                "nan",
                "inf",
                "-inf",
                "1e40",
                "",
                "cat",
                "16777217",
                "16777217.0",
            ] {
                assert!(super::text(bad).is_err(), "{bad:?}");
            }
            // float64: 2^24 exact, 2^24 + 1 not (it would round), a
            // fraction rounds, past f32's range or not finite refused.
            assert_eq!(super::f64(16_777_216.0), Ok(16_777_216.0));
            assert_eq!(super::f64(-16_777_216.0), Ok(-16_777_216.0));
            assert!(super::f64(16_777_217.0).is_err());
            assert!(super::f64(-16_777_217.0).is_err());
            assert_eq!(super::f64(2f64.powi(40)), Ok(2f32.powi(40)));
            assert_eq!(super::f64(0.1), Ok(0.1f32));
            for bad in [f64::NAN, f64::INFINITY, 1e39, -1e39] {
                assert!(super::f64(bad).is_err(), "{bad}");
            }
            assert!(super::int(-16_777_217).is_err());
            assert_eq!(super::int(-16_777_216), Ok(-16_777_216.0));
            assert!(super::float(f32::NAN).is_err());
            assert!(super::float(f32::INFINITY).is_err());
        }
    }
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
        DataError::check_index(index, self.0)?;
        // What the closure does not set is an encoded file (a reused
        // sample may hold another dataset's pixels).
        sample.content = Content::Encoded;
        (self.1)(index, sample)
    }
}

/// A dataset's data file: a file on this machine or, with the `remote`
/// feature, an object named by an `s3://` or `http(s)://` URL ([`remote`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum DataFile {
    /// A regular file.
    Local(std::fs::File),
    /// An object on a server, read in blocks.
    #[cfg(feature = "remote")]
    Remote(remote::RemoteFile),
    /// An object read from this node's cache ([`remote::set_cache`]).
    #[cfg(feature = "remote")]
    Cached(remote::CachedFile),
}

impl DataFile {
    /// The version opened, when the file has one: a remote object's ETag.
    /// A pool that opens the file again finds the same one or refuses it.
    pub fn version(&self) -> Option<&str> {
        match self {
            DataFile::Local(_) => None,
            #[cfg(feature = "remote")]
            DataFile::Remote(object) => object.version(),
            #[cfg(feature = "remote")]
            DataFile::Cached(entry) => Some(&entry.version),
        }
    }

    /// Fills `buf` from `offset` without moving a shared cursor (worker
    /// threads read one file at once).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        match self {
            DataFile::Local(file) => read_file_at(file, buf, offset),
            #[cfg(feature = "remote")]
            DataFile::Remote(object) => object.read_at(buf, offset),
            #[cfg(feature = "remote")]
            DataFile::Cached(entry) => read_file_at(&entry.file, buf, offset),
        }
    }

    /// Starts fetching `offset..offset + len` of a remote object, to be
    /// read soon ([`Dataset::fetch_ahead`]); nothing for a file on this
    /// machine or in the node cache.
    pub(crate) fn fetch_ahead(&self, offset: u64, len: u64) {
        #[cfg(feature = "remote")]
        if let DataFile::Remote(object) = self {
            object.fetch_ahead(offset, len);
        }
        let _ = (offset, len);
    }
}

/// A [`DataFile`] of `len` bytes read as a stream from its start
/// (`std::io::Read` and `Seek`, each read one [`DataFile::read_at`]).
pub(crate) struct Reader<'a> {
    file: &'a DataFile,
    len: u64,
    at: u64,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(file: &'a DataFile, len: u64) -> Reader<'a> {
        Reader { file, len, at: 0 }
    }
}

impl std::io::Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = usize::try_from(self.len.saturating_sub(self.at))
            .map_or(buf.len(), |left| left.min(buf.len()));
        self.file.read_at(&mut buf[..n], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for Reader<'_> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let at = match to {
            std::io::SeekFrom::Start(n) => Some(n),
            std::io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            std::io::SeekFrom::Current(d) => self.at.checked_add_signed(d),
        };
        self.at = at.ok_or(std::io::ErrorKind::InvalidInput)?;
        Ok(self.at)
    }
}

/// Whether `path` is a URL (`s3://`, `http://`, `https://`) rather than a
/// file's path.
pub(crate) fn is_url(path: &std::path::Path) -> bool {
    path.to_str().is_some_and(|s| {
        ["s3://", "http://", "https://"]
            .iter()
            .any(|p| s.starts_with(p))
    })
}

/// Opens a data file (a URL with the `remote` feature); what is not a
/// regular file is refused before opening.
pub(crate) fn open_file(path: &std::path::Path) -> Result<(DataFile, u64), DataError> {
    open_file_at(path, None)
}

/// [`open_file`] of a file indexed at length and version `known` (a remote
/// object's ETag): a node's cached copy of that version is opened without
/// asking its server.
pub(crate) fn open_file_at(
    path: &std::path::Path,
    known: Option<(u64, &str)>,
) -> Result<(DataFile, u64), DataError> {
    if is_url(path) {
        #[cfg(feature = "remote")]
        {
            let url = path.to_str().unwrap_or_default();
            return remote::open(url, known).map_err(|e| DataError::io(path, e));
        }
        #[cfg(not(feature = "remote"))]
        let _ = known;
        #[cfg(not(feature = "remote"))]
        return Err(DataError::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "a URL: this build reads files only (the `remote` feature reads s3:// and http(s)://)",
            ),
        ));
    }
    crate::files::open_regular(path)
        .map(|(file, len)| (DataFile::Local(file), len))
        .map_err(|e| DataError::io(path, e))
}

/// Appends `len` bytes of `file` from `offset` to `out`, reserving the room
/// fallibly first (the caller has checked that the file holds them).
pub(crate) fn append_at(
    file: &DataFile,
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
    let (file, len) = open_file(path)?;
    if len > cap {
        return Err(DataError::corrupt(
            format,
            path,
            0,
            alloc::format!("larger than its data file can need ({cap} bytes)"),
        ));
    }
    let mut bytes = Vec::new();
    append_at(&file, path, format, 0, len, &mut bytes)?;
    alloc::string::String::from_utf8(bytes)
        .map_err(|_| DataError::corrupt(format, path, 0, "not UTF-8 text"))
}

/// Reads `buf.len()` bytes of `file` at `offset` without moving a shared
/// cursor: worker threads read one file at once.
pub(crate) fn read_at(file: &DataFile, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    file.read_at(buf, offset)
}

/// [`read_at`] of a regular file.
fn read_file_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
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
