//! Why a loader failed ([`LoadError`]): a sample, a worker, the per-batch
//! function, or the configuration.

use alloc::string::String;
use core::fmt;

use super::super::data::DataError;

/// A sample that failed, or a loader that cannot run.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading sample `index` failed.
    Read {
        /// The sample's index in the dataset.
        index: u64,
        /// Why.
        error: DataError,
    },
    /// Decoding or augmenting sample `index` failed.
    Decode {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`](super::super::data::Dataset::describe)).
        sample: String,
        /// Why.
        error: crate::Error,
    },
    /// A worker panicked on sample `index`.
    Panic {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`](super::super::data::Dataset::describe)).
        sample: String,
        /// The panic's message.
        message: String,
    },
    /// A stage's thread failed outside any one sample (its plumbing, or a
    /// dataset's `len`): the stream cannot go on.
    Worker {
        /// The thread's name (`tp-read-0`, ...).
        thread: String,
        /// The panic's message.
        message: String,
    },
    /// A sample has no label, or one that is not a finite number.
    Label {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`](super::super::data::Dataset::describe)).
        sample: String,
    },
    /// The per-batch function failed (or panicked) on a batch.
    PerBatch {
        /// The batch's epoch.
        epoch: u32,
        /// The batch's number within the epoch.
        number: u64,
        /// What it said.
        message: String,
    },
    /// The configuration or the resume state does not fit.
    Config(&'static str),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Read { index, error } => write!(f, "sample {index}: {error}"),
            LoadError::Decode {
                index,
                sample,
                error,
            } => write!(f, "{sample} (sample {index}): {error}"),
            LoadError::Panic {
                index,
                sample,
                message,
            } => write!(f, "{sample} (sample {index}): a worker panicked: {message}"),
            LoadError::Worker { thread, message } => {
                write!(f, "loader thread {thread} failed: {message}")
            }
            LoadError::Label { index, sample } => write!(
                f,
                "{sample} (sample {index}): no label, or one that is not a finite number"
            ),
            LoadError::PerBatch {
                epoch,
                number,
                message,
            } => write!(
                f,
                "epoch {epoch}, batch {number}: the per-batch function failed: {message}"
            ),
            LoadError::Config(what) => write!(f, "loader: {what}"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Read { error, .. } => Some(error),
            LoadError::Decode { error, .. } => Some(error),
            _ => None,
        }
    }
}
