//! Why a graph was refused.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Why a graph file was refused, or a graph could not be made or run.
#[derive(Debug)]
#[non_exhaustive]
pub enum GraphError {
    /// The bytes do not start with [`super::MAGIC`].
    NotAGraph,
    /// The file is larger than the limit, checked before reading it whole.
    TooLarge {
        /// Bytes in the file.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The protobuf encoding is broken (truncated, bad lengths, bad UTF-8, ...).
    Malformed(String),
    /// The file needs a newer reader than this one.
    NeedsNewerReader {
        /// `min_reader_version` of the file.
        min_reader_version: u32,
        /// [`super::READER_VERSION`].
        reader_version: u32,
    },
    /// The file uses features this reader does not implement.
    MissingFeatures(Vec<String>),
    /// An op this reader does not know (from a newer schema).
    UnknownOp {
        /// Position in the op list.
        index: usize,
        /// The name its writer gave it, if any.
        name: String,
    },
    /// A parameter is missing, out of range or inconsistent.
    Invalid {
        /// Position and name of the op concerned, if it is about one op.
        op: Option<(usize, &'static str)>,
        /// What is wrong.
        message: String,
    },
    /// The ops do not form a valid pipeline.
    Pipeline(crate::Error),
    /// A model has no graph (no sidecar file, no embedded entry).
    NotFound {
        /// Where it was looked for.
        message: String,
    },
    /// The graph's output does not fit the model's input (shape or element type).
    DoesNotFit {
        /// Both shapes.
        message: String,
    },
    /// An importer could not read its source.
    Import {
        /// The source format (`"hf"`, `"tflite"`, ...).
        format: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read or written.
    #[cfg(feature = "std")]
    Io {
        /// The file.
        path: String,
        /// What the operating system reported.
        error: std::io::Error,
    },
}

impl GraphError {
    pub(crate) fn invalid(op: Option<(usize, &'static str)>, message: String) -> GraphError {
        GraphError::Invalid { op, message }
    }

    pub(crate) fn import(format: &'static str, message: impl Into<String>) -> GraphError {
        GraphError::Import {
            format,
            message: message.into(),
        }
    }
}

impl From<crate::Error> for GraphError {
    fn from(e: crate::Error) -> Self {
        GraphError::Pipeline(e)
    }
}

impl From<prost::DecodeError> for GraphError {
    fn from(e: prost::DecodeError) -> Self {
        GraphError::Malformed(alloc::format!("{e}"))
    }
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::NotAGraph => f.write_str(
                "not a tensorprep graph (the file does not start with the graph magic bytes)",
            ),
            GraphError::TooLarge { bytes, limit } => {
                write!(
                    f,
                    "graph file of {bytes} bytes exceeds the {limit}-byte limit"
                )
            }
            GraphError::Malformed(m) => write!(f, "malformed graph: {m}"),
            GraphError::NeedsNewerReader {
                min_reader_version,
                reader_version,
            } => write!(
                f,
                "the graph needs reader version {min_reader_version}; this is tensorprep {} \
                 (reader version {reader_version}): upgrade tensorprep",
                crate::VERSION
            ),
            GraphError::MissingFeatures(names) => write!(
                f,
                "the graph uses features this tensorprep {} does not implement: {}",
                crate::VERSION,
                names.join(", ")
            ),
            GraphError::UnknownOp { index, name } if name.is_empty() => write!(
                f,
                "op {index} is of a kind this reader does not know (written by a newer tensorprep)"
            ),
            GraphError::UnknownOp { index, name } => write!(
                f,
                "op {index} `{name}` is not known to this reader (written by a newer tensorprep)"
            ),
            GraphError::Invalid {
                op: Some((i, name)),
                message,
            } => write!(f, "op {i} ({name}): {message}"),
            GraphError::Invalid { op: None, message } => write!(f, "invalid graph: {message}"),
            GraphError::Pipeline(e) => write!(f, "invalid pipeline: {e}"),
            GraphError::NotFound { message } => f.write_str(message),
            GraphError::DoesNotFit { message } => f.write_str(message),
            GraphError::Import { format, message } => write!(f, "{format} import: {message}"),
            #[cfg(feature = "std")]
            GraphError::Io { path, error } => write!(f, "{path}: {error}"),
        }
    }
}

// The message prints the cause of `Pipeline` and `Io` (the C library, the
// Python package and the CLI show messages alone), so `source()` returns
// none: an error prints its cause or returns it, never both. The cause stays
// in the variant's field.
impl core::error::Error for GraphError {}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;

    #[test]
    fn a_cause_is_printed_or_returned_never_both() {
        let cause = crate::Error::TooManyPixels {
            pixels: 10,
            limit: 5,
        };
        let e = GraphError::Pipeline(cause);
        assert!(e.to_string().ends_with(&cause.to_string()));
        assert!(core::error::Error::source(&e).is_none());
        #[cfg(feature = "std")]
        {
            let e = GraphError::Io {
                path: "model.tpg".into(),
                error: std::io::Error::from(std::io::ErrorKind::NotFound),
            };
            assert!(e.to_string().starts_with("model.tpg: "));
            assert!(e.to_string().len() > "model.tpg: ".len());
            assert!(core::error::Error::source(&e).is_none());
        }
    }
}
