//! Opening the files users name (models, graphs, records, images): what is
//! not a regular file is refused before it is opened, since a FIFO would
//! block the open and a device (`/dev/zero`) never end; and reads are capped
//! whatever length the file system reports.

use core::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::vec::Vec;

/// Opens `path` if it is a regular file; returns it and its length.
///
/// ```
/// let err = tensorprep::files::open_regular("/dev/zero".as_ref()).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// ```
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a directory, device or FIFO): refused",
        ));
    }
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    Ok((file, len))
}

/// Why [`read_capped`] read nothing.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// Not a regular file, or the system refused.
    Io(io::Error),
    /// Longer than the cap: as the file system reports it (`grew: false`),
    /// or past the cap while it was read (`grew: true`).
    TooLarge {
        /// The length found (at least `limit + 1` when it grew).
        bytes: u64,
        /// The cap.
        limit: u64,
        /// The file grew while it was read.
        grew: bool,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::TooLarge {
                bytes,
                limit,
                grew: false,
            } => write!(f, "{bytes} bytes is more than the {limit}-byte limit"),
            ReadError::TooLarge { limit, .. } => write!(
                f,
                "more than the {limit}-byte limit (the file grew while it was read)"
            ),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            ReadError::TooLarge { .. } => None,
        }
    }
}

/// Reads a whole regular file of at most `limit` bytes: what is not a
/// regular file is refused before it is opened, a longer one before it is
/// read, and the read stops past the cap whatever `stat` said.
///
/// ```
/// use tensorprep::files::{ReadError, read_capped};
///
/// let jpeg = read_capped("../tests/fixtures/sample.jpg".as_ref(), 1 << 20)?;
/// assert_eq!(&jpeg[..2], [0xff, 0xd8]);
/// let small = read_capped("../tests/fixtures/sample.jpg".as_ref(), 100);
/// assert!(matches!(small, Err(ReadError::TooLarge { limit: 100, grew: false, .. })));
/// # Ok::<(), ReadError>(())
/// ```
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let (file, len) = open_regular(path).map_err(ReadError::Io)?;
    if len > limit {
        return Err(ReadError::TooLarge {
            bytes: len,
            limit,
            grew: false,
        });
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(len as usize)
        .map_err(|_| ReadError::Io(io::ErrorKind::OutOfMemory.into()))?;
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            bytes: bytes.len() as u64,
            limit,
            grew: true,
        });
    }
    Ok(bytes)
}
