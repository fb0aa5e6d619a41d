//! What can go wrong reading a dataset.

use alloc::string::String;
use core::fmt;

/// A dataset could not be read: every case names the file and where.
#[derive(Debug)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be opened or read.
    Io {
        /// The file.
        path: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// The file's structure is broken at `offset` (a bad magic number, a
    /// length past the end, a bad checksum, a malformed header or index).
    Corrupt {
        /// The format ("RecordIO", "RecordIO index", ...).
        format: &'static str,
        /// The file.
        path: String,
        /// The byte offset (or, for text indexes, the line) of the problem.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// Datasets that do not fit together (a zip of unequal lengths, a range
    /// outside its dataset).
    Invalid {
        /// What does not fit.
        what: String,
    },
    /// The code behind a dataset (a Python object's `__getitem__`, a
    /// callback) failed to give a sample, or gave what is not one.
    External {
        /// The sample, as the dataset names it.
        sample: String,
        /// What the code raised or what is wrong with what it gave.
        error: alloc::boxed::Box<dyn core::error::Error + Send + Sync>,
    },
    /// A stream ended before its epoch did: a short epoch would be silent
    /// wrong data ([`IterableDataset`](super::IterableDataset)).
    StreamEnded {
        /// The stream.
        stream: String,
        /// The epoch position asked for.
        position: u64,
        /// Samples the stream gave.
        samples: u64,
        /// Samples the epoch has.
        epoch_len: u64,
    },
    /// A stream whose bytes are read once (standard input, a FIFO) was
    /// given no length: counting it would consume them.
    LengthNeeded {
        /// The stream.
        stream: String,
    },
    /// A combination that cannot keep the order of a dataset that orders
    /// itself (a filter, a cache or a zip of a stream; a concatenation of a
    /// stream with datasets read by index).
    OrdersItself {
        /// The combination ("filter", "cache", "zip", "concatenation").
        combination: &'static str,
        /// The dataset that orders itself.
        dataset: String,
    },
    /// A sample index past the end.
    OutOfRange {
        /// The index asked for.
        index: usize,
        /// The number of samples.
        len: usize,
    },
}

impl DataError {
    /// `Ok` when `index` names one of `len` samples, [`DataError::OutOfRange`]
    /// otherwise: the check that opens a [`Dataset::read`](super::Dataset::read).
    ///
    /// ```
    /// use tensorprep::train::data::DataError;
    ///
    /// assert!(DataError::check_index(2, 3).is_ok());
    /// assert!(matches!(
    ///     DataError::check_index(3, 3),
    ///     Err(DataError::OutOfRange { index: 3, len: 3 })
    /// ));
    /// ```
    pub fn check_index(index: usize, len: usize) -> Result<(), DataError> {
        if index < len {
            Ok(())
        } else {
            Err(DataError::OutOfRange { index, len })
        }
    }

    pub(crate) fn io(path: &std::path::Path, error: std::io::Error) -> DataError {
        DataError::Io {
            path: path.display().to_string(),
            error,
        }
    }

    pub(crate) fn corrupt(
        format: &'static str,
        path: &std::path::Path,
        offset: u64,
        what: impl Into<String>,
    ) -> DataError {
        DataError::Corrupt {
            format,
            path: path.display().to_string(),
            offset,
            what: what.into(),
        }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataError::Io { path, error } => write!(f, "{path}: {error}"),
            DataError::Corrupt {
                format,
                path,
                offset,
                what,
            } => write!(f, "{path}: not a valid {format} file at {offset}: {what}"),
            DataError::Invalid { what } => write!(f, "dataset: {what}"),
            DataError::External { sample, error } => write!(f, "{sample}: {error}"),
            DataError::StreamEnded {
                stream,
                position,
                samples,
                epoch_len,
            } => write!(
                f,
                "{stream} position {position}: the stream ended after {samples} samples, the epoch has {epoch_len}"
            ),
            DataError::OutOfRange { index, len } => {
                write!(f, "sample {index} asked of a dataset of {len}")
            }
            DataError::OrdersItself {
                combination,
                dataset,
            } => write!(
                f,
                "a {combination} of {dataset} cannot keep its order (a stream's order is its shuffle buffer's): give the loader the stream itself"
            ),
            DataError::LengthNeeded { stream } => write!(
                f,
                "{stream} is read as its writer writes it (standard input, a FIFO): give its length (samples per epoch), counting would consume it"
            ),
        }
    }
}

// The messages of `Io` and `External` print their cause after the path or
// the sample, so `source()` returns none (an error prints its cause or
// returns it, never both); the cause stays in the variant's field.
impl std::error::Error for DataError {}

use alloc::string::ToString;
