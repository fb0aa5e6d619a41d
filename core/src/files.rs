//! Opening the files users name (models, graphs, records, images): what is
//! not a regular file is refused before it is opened, since a FIFO would
//! block the open and a device (`/dev/zero`) never end; and reads are capped
//! whatever length the file system reports.
//!
//! Writing them ([`write_atomically`]): a uniquely named temporary file
//! beside the target, flushed and synced, then renamed over it. A full disk
//! or any other error leaves no partial file and the old file as it was; a
//! target reached through a symbolic link is written where the link points;
//! an existing target's permissions (and owner and group, where the user may
//! set them) are kept.

#![forbid(unsafe_code)]

use core::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::vec::Vec;

/// Opens `path` if it is a regular file; returns it and its length.
///
/// The type is checked on the opened descriptor (`fstat`), not on the path
/// beforehand, so a file swapped for a FIFO between a check and the open
/// cannot block a reader: on Unix the open itself does not wait
/// (`O_NONBLOCK`, which changes nothing for reading a regular file).
///
/// ```
/// let err = tensorprep::files::open_regular("/dev/zero".as_ref()).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// ```
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    open_regular_with(path, OpenOptions::new().read(true))
}

/// [`open_regular`] with other `options` (writing, creating): whatever
/// `path` is, the open does not wait, and what is not a regular file is
/// refused.
pub(crate) fn open_regular_with(path: &Path, options: &mut OpenOptions) -> io::Result<(File, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    // Elsewhere the path is checked first (a file about to be created is
    // not there yet).
    #[cfg(not(unix))]
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(not_regular());
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    Ok((file, meta.len()))
}

fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a directory, device or FIFO): refused",
    )
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

// `Io` is the system's error itself (its message is this one's), so its
// source is the system error's own, not the error again.
impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => e.source(),
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
    let mut bytes = Vec::new();
    read_capped_into(path, limit, &mut bytes)?;
    Ok(bytes)
}

/// [`read_capped`] into `out` (cleared first), reusing its memory: with
/// room for the length `fstat` reports, the file is read in one call (and
/// one more that finds its end), with no allocation once `out` is as large
/// as the files it reads. A file that grew since is read on up to the cap.
///
/// ```
/// use tensorprep::files::read_capped_into;
///
/// let mut bytes = Vec::new();
/// read_capped_into("../tests/fixtures/sample.jpg".as_ref(), 1 << 20, &mut bytes)?;
/// assert_eq!(&bytes[..2], [0xff, 0xd8]);
/// # Ok::<(), tensorprep::files::ReadError>(())
/// ```
pub fn read_capped_into(path: &Path, limit: u64, out: &mut Vec<u8>) -> Result<(), ReadError> {
    let (mut file, len) = open_regular(path).map_err(ReadError::Io)?;
    if len > limit {
        return Err(ReadError::TooLarge {
            bytes: len,
            limit,
            grew: false,
        });
    }
    out.clear();
    // The length and one byte more: the read that finds the end then
    // needs no more room (`len <= limit`, which the caller could allocate).
    // A buffer too small grows to the next power of two (at most twice the
    // file, never past the cap): a reused buffer then stops growing after
    // its first file instead of at every file a few bytes longer, which
    // would be an allocation now and then, at any epoch.
    let room = usize::try_from(len + 1)
        .ok()
        .filter(|&n| {
            let cap = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
            n <= out.capacity()
                || out
                    .try_reserve_exact(n.checked_next_power_of_two().unwrap_or(n).min(cap).max(n))
                    .is_ok()
        })
        .ok_or_else(|| ReadError::Io(io::ErrorKind::OutOfMemory.into()))?;
    out.resize(room, 0);
    let mut filled = 0;
    while filled < room {
        match file.read(&mut out[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                out.clear();
                return Err(ReadError::Io(e));
            }
        }
    }
    out.truncate(filled);
    if filled == room {
        // Longer than it was: the rest, up to the cap.
        let rest = (limit + 1).saturating_sub(filled as u64);
        if let Err(e) = file.take(rest).read_to_end(out) {
            out.clear();
            return Err(ReadError::Io(e));
        }
    }
    if out.len() as u64 > limit {
        let bytes = out.len() as u64;
        out.clear();
        return Err(ReadError::TooLarge {
            bytes,
            limit,
            grew: true,
        });
    }
    Ok(())
}

/// Temporary names are unique per process and call, so two writes (or a
/// leftover file) never share one.
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Creates a fresh temporary file beside `target` (never an existing one).
pub fn temporary_beside(target: &Path) -> io::Result<(PathBuf, File)> {
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty());
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp_name = std::format!(".{name}.{}.{n}.tensorprep-tmp", std::process::id());
        let tmp = dir.map_or_else(|| PathBuf::from(&tmp_name), |d| d.join(&tmp_name));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The file a write to `path` replaces: through a symbolic link, the file it
/// points to (the link is kept).
pub fn write_target(path: &Path) -> io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path),
        _ => Ok(path.to_path_buf()),
    }
}

/// Moves the finished temporary file `tmp` over `target`, giving it the
/// target's mode, and its owner and group where the user may.
pub fn replace_with(tmp: &Path, file: &File, target: &Path) -> io::Result<()> {
    if let Ok(meta) = std::fs::metadata(target) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // Only root (or the owner, for a group it belongs to) may: otherwise
            // the new file keeps the writer's, as `cp` does.
            let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
        }
        file.set_permissions(meta.permissions())?;
    }
    std::fs::rename(tmp, target)
}

/// Writes `path` with what `fill` writes, atomically (see the module docs).
/// On an error the temporary file is removed and the old file is left.
///
/// ```
/// let path = std::env::temp_dir().join(format!("tensorprep-doc-{}.txt", std::process::id()));
/// tensorprep::files::write_atomically(&path, |w| std::io::Write::write_all(w, b"graph"))?;
/// assert_eq!(std::fs::read(&path)?, b"graph");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<&File>) -> io::Result<()>,
) -> io::Result<()> {
    let target = write_target(path)?;
    let (tmp, file) = temporary_beside(&target)?;
    let result = finish(&file, fill).and_then(|()| replace_with(&tmp, &file, &target));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Fills the file, then flushes and syncs it: every write error surfaces.
fn finish(
    file: &File,
    fill: impl FnOnce(&mut BufWriter<&File>) -> io::Result<()>,
) -> io::Result<()> {
    let mut w = BufWriter::new(file);
    fill(&mut w)?;
    w.flush()?;
    drop(w);
    file.sync_all()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::string::{String, ToString};
    use std::vec;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(std::format!(
            "tensorprep-atomic-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failing_write_leaves_the_old_file_and_no_temporary() {
        let dir = scratch("fail");
        let path = dir.join("model.onnx");
        std::fs::write(&path, b"old model").unwrap();
        // A write that fails part way (as a full disk does).
        let err = write_atomically(&path, |w| {
            w.write_all(b"new mod")?;
            Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device",
            ))
        })
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
        assert_eq!(std::fs::read(&path).unwrap(), b"old model");
        assert_eq!(entries(&dir), ["model.onnx"]);
        // A leftover temporary name does not collide, and is not deleted.
        std::fs::write(dir.join(".model.onnx.tensorprep-tmp"), b"someone's").unwrap();
        write_atomically(&path, |w| w.write_all(b"new model")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new model");
        assert_eq!(entries(&dir), [".model.onnx.tensorprep-tmp", "model.onnx"]);
    }

    #[test]
    fn links_are_followed_and_permissions_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("link");
        let target = dir.join("real.tpp");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.join("link.tpp");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomically(&link, |w| w.write_all(b"new")).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn concurrent_writes_to_one_target_use_their_own_temporaries() {
        let dir = scratch("threads");
        let path = dir.join("graph.tpp");
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let path = &path;
                s.spawn(move || write_atomically(path, |w| w.write_all(&vec![t; 4096])).unwrap());
            }
        });
        // One writer's whole file, never a mix, and no temporary left.
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() == 4096 && bytes.iter().all(|&b| b == bytes[0]));
        assert_eq!(entries(&dir), ["graph.tpp"]);
    }

    /// A path swapped between a regular file and a FIFO (with no writer)
    /// as fast as possible: every open returns promptly, the FIFO refused.
    /// (A type check on the path before the open blocked forever when the
    /// swap fell between the two.)
    #[test]
    fn a_file_swapped_for_a_fifo_never_blocks_the_open() {
        use std::sync::atomic::AtomicBool;
        use std::sync::{Arc, mpsc};
        let dir = scratch("fifo");
        let (file, fifo, path) = (dir.join("file"), dir.join("fifo"), dir.join("image.jpg"));
        std::fs::write(&file, b"jpeg").unwrap();
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, file, fifo, path) =
                (Arc::clone(&stop), file.clone(), fifo.clone(), path.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for from in [&file, &fifo] {
                        let _ = std::fs::remove_file(&path);
                        let _ = std::fs::hard_link(from, &path);
                    }
                }
            })
        };
        let (done, finished) = mpsc::channel();
        let opener = std::thread::spawn(move || {
            // At least 20,000 opens, and on until both kinds were met (the
            // swapper may be scheduled rarely on a loaded machine), for at
            // most 20 seconds.
            let (mut files, mut refused) = (0, 0);
            let start = std::time::Instant::now();
            for n in 0.. {
                match open_regular(&path) {
                    Ok(_) => files += 1,
                    Err(e) if e.kind() == io::ErrorKind::InvalidInput => refused += 1,
                    Err(_) => {} // between the remove and the link
                }
                let met = files > 0 && refused > 0;
                if (n >= 20_000 && met) || start.elapsed().as_secs() >= 20 {
                    break;
                }
            }
            let _ = done.send((files, refused));
        });
        let result = finished.recv_timeout(std::time::Duration::from_secs(60));
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        let (files, refused) = result.expect("an open blocked on the FIFO");
        opener.join().unwrap();
        assert!(files > 0 && refused > 0, "{files} files, {refused} FIFOs");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_flush_error_is_reported() {
        // /dev/full accepts the open and fails every write: what a full disk does.
        let file = OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("Linux has /dev/full");
        let err = finish(&file, |w| w.write_all(&[0u8; 100])).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    }
}
