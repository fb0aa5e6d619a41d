//! Opening the files users name (models, graphs, records, images): what is
//! not a regular file is refused before it is opened, since a FIFO would
//! block the open and a device (`/dev/zero`) never end.

use std::fs::File;
use std::io;
use std::path::Path;

/// Opens `path` if it is a regular file; returns it and its length.
pub(crate) fn open_regular(path: &Path) -> io::Result<(File, u64)> {
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
