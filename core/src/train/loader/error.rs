//! Why a loader failed ([`LoadError`]), one variant per cause: a sample, a
//! worker, the per-batch function, the configuration, the resume state,
//! memory, a thread that could not start, or the caller's use.
//!
//! A variant with an underlying error (a read's, a decode's, a thread
//! spawn's) returns it from [`source`](std::error::Error::source) and does
//! not repeat it in its own message: print the chain to see both.

use alloc::string::String;
use core::fmt;

use super::super::data::DataError;

/// A sample that failed, or a loader that cannot run.
///
/// The cause of a failed sample is its `source()`: a message for people
/// names the sample and then the cause, as [`crate::error::report`] writes
/// it.
///
/// ```
/// use tensorprep::train::LoadError;
///
/// fn message(e: &LoadError) -> String {
///     tensorprep::error::report(e)
/// }
/// # let _ = message;
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading sample `index` failed (the cause is the source).
    Read {
        /// The sample's index in the dataset.
        index: u64,
        /// Why.
        error: DataError,
    },
    /// Decoding or augmenting sample `index` failed (the cause is the
    /// source).
    Decode {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`](super::super::data::Dataset::describe)).
        sample: String,
        /// Why.
        error: crate::Error,
    },
    /// A custom op (`train.Lambda`) failed on sample `index` (the cause is
    /// the source).
    Custom {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`](super::super::data::Dataset::describe)).
        sample: String,
        /// Why: the op's error, naming it.
        error: crate::train::CustomOpError,
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
    /// A sample has a label that is not a finite number.
    Label {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`](super::super::data::Dataset::describe)).
        sample: String,
    },
    /// A sample has another number of labels than the loader's label width
    /// ([`LoaderConfig::label_width`](super::LoaderConfig::label_width)):
    /// never padded or cut.
    LabelCount {
        /// The sample's index in the dataset.
        index: u64,
        /// The sample as its dataset names it ([`Dataset::describe`](super::super::data::Dataset::describe)).
        sample: String,
        /// The loader's label width.
        expected: usize,
        /// The sample's labels.
        found: usize,
    },
    /// Skipping errors, none of the dataset's first `tried` samples reads,
    /// so the labels per sample cannot be found from them: set
    /// [`LoaderConfig::label_width`](super::LoaderConfig::label_width).
    /// The first one's read error is the source (none when it panicked).
    LabelWidth {
        /// The samples tried, from index 0.
        tried: usize,
        /// Why the first did not read.
        error: Option<DataError>,
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
    /// The configuration cannot run: a value out of its range, or a plan
    /// and a configuration that do not fit together.
    Config(&'static str),
    /// The resume state does not fit this loader: another dataset, seed or
    /// global batch ([`Loader::check_state`](super::Loader::check_state)).
    Resume(&'static str),
    /// The configuration needs more memory than a limit allows: `needed`
    /// bytes for `what`, over `limit` bytes of the limit named `limit_name`.
    OverBudget {
        /// What takes the memory.
        what: &'static str,
        /// The bytes it needs (`u64::MAX`: more than that).
        needed: u64,
        /// The limit's name (`buffer_limit`, ...).
        limit_name: &'static str,
        /// The limit, in bytes.
        limit: u64,
    },
    /// An allocation failed: no memory for `what`.
    OutOfMemory(&'static str),
    /// A stage's thread could not be started (the cause is the source).
    Spawn {
        /// The thread's name (`tp-decode-3`, ...).
        thread: String,
        /// Why.
        error: std::io::Error,
    },
    /// Every batch buffer is held by the caller: a batch must be dropped
    /// before the next can be made.
    BuffersHeld {
        /// The batch buffers ([`LoaderConfig::depth`](super::LoaderConfig::depth)).
        depth: usize,
    },
    /// No epoch follows: the stream ends after its configured epochs
    /// ([`LoaderConfig::epochs`](super::LoaderConfig::epochs)), or at epoch
    /// 2^32 - 1.
    NoMoreEpochs {
        /// The configured epochs (`None`: unbounded, at the last number).
        epochs: Option<u32>,
    },
    /// A loader callback failed (returned an error or panicked) at `point`
    /// ([`Callback`](super::Callback)).
    Callback {
        /// The method (`epoch_begin`, `epoch_end`, `step_begin`, `step_end`).
        point: &'static str,
        /// The epoch.
        epoch: u32,
        /// The step in the epoch.
        step_in_epoch: u64,
        /// What it said.
        message: String,
    },
    /// A pipeline cannot augment the loader's epochs from `from_epoch` on
    /// ([`RunContext::set_pipeline`](super::RunContext::set_pipeline), a
    /// resume's [`PipelineChange`](super::PipelineChange)s): it does not
    /// compile (the cause is the source), or its output differs from the
    /// loader's.
    Pipeline {
        /// The first epoch it was to augment.
        from_epoch: u32,
        /// Why.
        message: String,
        /// The compile error, if that was why.
        error: Option<crate::Error>,
    },
    /// A caller's buffer has the wrong length ([`Batch::pixel_mask`](super::Batch::pixel_mask)).
    BufferLength {
        /// The elements it must hold.
        expected: usize,
        /// The elements it holds.
        actual: usize,
    },
    /// A sample has more boxes than a padded layout holds
    /// ([`Batch::padded_boxes`](super::Batch::padded_boxes)): never cut short.
    TooManyBoxes {
        /// The sample's index in the dataset.
        index: u64,
        /// Its boxes.
        count: usize,
        /// The boxes the layout holds per sample.
        room: usize,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Read { index, .. } => write!(f, "sample {index}"),
            LoadError::Decode { index, sample, .. } | LoadError::Custom { index, sample, .. } => {
                write!(f, "{sample} (sample {index})")
            }
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
                "{sample} (sample {index}): a label that is not a finite number"
            ),
            LoadError::LabelCount {
                index,
                sample,
                expected,
                found,
            } => write!(
                f,
                "{sample} (sample {index}): {found} labels, not the loader's {expected} (its \
                 label width: the first sample's count, or label_width)"
            ),
            LoadError::LabelWidth { tried, .. } => write!(
                f,
                "loader: none of the dataset's first {tried} samples reads, so its labels per \
                 sample are unknown (set label_width)"
            ),
            LoadError::PerBatch {
                epoch,
                number,
                message,
            } => write!(
                f,
                "epoch {epoch}, batch {number}: the per-batch function failed: {message}"
            ),
            LoadError::Config(what) | LoadError::Resume(what) => write!(f, "loader: {what}"),
            LoadError::OverBudget {
                what,
                needed,
                limit_name,
                limit,
            } => write!(
                f,
                "loader: {what} need {needed} bytes, over {limit_name} ({limit} bytes)"
            ),
            LoadError::OutOfMemory(what) => write!(f, "loader: no memory for {what}"),
            LoadError::Spawn { thread, .. } => write!(f, "loader: cannot start thread {thread}"),
            LoadError::BuffersHeld { depth } => write!(
                f,
                "loader: every batch buffer ({depth}) is held by the caller: drop batches \
                 before asking for more (or raise depth)"
            ),
            LoadError::NoMoreEpochs { epochs: Some(n) } => {
                write!(f, "loader: no epoch after the configured {n}")
            }
            LoadError::NoMoreEpochs { epochs: None } => {
                write!(f, "loader: no epoch after 2^32 - 1")
            }
            LoadError::Callback {
                point,
                epoch,
                step_in_epoch,
                message,
            } => write!(
                f,
                "epoch {epoch}, step {step_in_epoch}: the loader callback's {point} failed: {message}"
            ),
            LoadError::Pipeline {
                from_epoch,
                message,
                ..
            } => write!(f, "loader: the pipeline from epoch {from_epoch}: {message}"),
            LoadError::BufferLength { expected, actual } => write!(
                f,
                "loader: the caller's buffer holds {actual} elements, not the {expected} \
                 (samples x height x width) it must"
            ),
            LoadError::TooManyBoxes { index, count, room } => write!(
                f,
                "loader: sample {index} has {count} boxes, more than the {room} the padded \
                 layout holds per sample (give more room, or none for the batch's largest)"
            ),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Read { error, .. }
            | LoadError::LabelWidth {
                error: Some(error), ..
            } => Some(error),
            LoadError::Decode { error, .. } => Some(error),
            LoadError::Custom { error, .. } => Some(error),
            LoadError::Spawn { error, .. } => Some(error),
            LoadError::Pipeline {
                error: Some(error), ..
            } => Some(error),
            _ => None,
        }
    }
}

impl LoadError {
    /// Sample `index`'s decode-and-augment error: [`LoadError::Custom`] with
    /// the custom op's error when one failed (taken from the worker's
    /// `state`), else [`LoadError::Decode`].
    pub(crate) fn decoding(
        index: u64,
        sample: String,
        error: crate::Error,
        state: &mut crate::train::TrainState,
    ) -> LoadError {
        match (error, state.take_custom_error()) {
            (crate::Error::CustomOp { .. }, Some(error)) => LoadError::Custom {
                index,
                sample,
                error,
            },
            (error, _) => LoadError::Decode {
                index,
                sample,
                error,
            },
        }
    }
}

/// Why [`Loader::next_epoch`](super::Loader::next_epoch) did not move on,
/// with the loader when it is still whole (at the epoch it was at, its
/// state intact). Reads as its [`LoadError`]; `?` turns it into one.
#[derive(Debug)]
#[non_exhaustive]
pub struct NextEpochError {
    /// Why.
    pub error: LoadError,
    /// The loader, where it was: no epoch follows, or a callback at the
    /// epoch's end failed. `None` when the threads' restart at the next
    /// epoch failed (the old ones were already stopped).
    pub loader: Option<alloc::boxed::Box<super::Loader>>,
}

impl fmt::Display for NextEpochError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for NextEpochError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl From<NextEpochError> for LoadError {
    fn from(e: NextEpochError) -> LoadError {
        e.error
    }
}
