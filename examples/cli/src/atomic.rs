//! Every file the CLI writes goes through here: a uniquely named temporary
//! file beside the target, flushed and synced, then renamed over it. A full
//! disk or any other error is reported and leaves no partial file, and the
//! old file (a model, a graph) stays as it was. A target reached through a
//! symbolic link is written where the link points; an existing target's
//! permissions (and owner and group, where the user may set them) are
//! kept, and a read-only one is replaced only when asked to (`--force`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

// The write itself is the library's (`tensorprep::files`), shared with the
// Python package; this module adds the CLI's read-only rule and messages.
pub(crate) use tensorprep::files::{replace_with as replace, temporary_beside as temporary};

/// Whether a read-only file may be replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadOnly {
    /// Refused, naming the flag that overrides it.
    Refuse,
    /// Replaced (`--force`), keeping its read-only mode.
    Replace,
}

impl ReadOnly {
    pub(crate) fn forced(force: bool) -> ReadOnly {
        if force {
            ReadOnly::Replace
        } else {
            ReadOnly::Refuse
        }
    }
}

/// The file a write to `path` replaces: through a link, the file it points
/// to (the link is kept). A read-only target is refused unless `read_only`
/// says to replace it.
pub(crate) fn target(path: &Path, read_only: ReadOnly) -> Result<PathBuf, String> {
    let target = tensorprep::files::write_target(path)
        .map_err(|e| format!("cannot follow {}: {e}", path.display()))?;
    if let Ok(meta) = std::fs::metadata(&target)
        && meta.permissions().readonly()
        && read_only == ReadOnly::Refuse
    {
        return Err(format!(
            "{} is read-only: not replaced (--force replaces it, keeping its mode)",
            path.display()
        ));
    }
    Ok(target)
}

/// Writes `path` with what `fill` writes, atomically (see the module docs).
pub(crate) fn write(
    path: &Path,
    read_only: ReadOnly,
    fill: impl FnOnce(&mut BufWriter<&File>) -> io::Result<()>,
) -> Result<(), String> {
    let target = target(path, read_only)?;
    tensorprep::files::write_atomically(&target, fill).map_err(|e| {
        let kept = if target.exists() {
            format!(" ({} left unchanged)", path.display())
        } else {
            String::new()
        };
        format!("cannot write {}: {e}{kept}", path.display())
    })
}

/// Writes `bytes` to `path` atomically.
pub(crate) fn write_bytes(path: &Path, read_only: ReadOnly, bytes: &[u8]) -> Result<(), String> {
    write(path, read_only, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tensorprep-atomic-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
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
        let err = write(&path, ReadOnly::Refuse, |w| {
            w.write_all(b"new mod")?;
            Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device",
            ))
        })
        .unwrap_err();
        assert!(
            err.contains("no space left") && err.contains("left unchanged"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"old model");
        assert_eq!(entries(&dir), ["model.onnx"]);
        // A leftover temporary name does not collide, and is not deleted.
        std::fs::write(dir.join(".model.onnx.tensorprep-tmp"), b"someone's").unwrap();
        write_bytes(&path, ReadOnly::Refuse, b"new model").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new model");
        assert_eq!(entries(&dir), [".model.onnx.tensorprep-tmp", "model.onnx"]);
    }

    #[test]
    fn read_only_files_are_replaced_only_when_forced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("readonly");
        let path = dir.join("model.onnx");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let err = write_bytes(&path, ReadOnly::Refuse, b"new").unwrap_err();
        assert!(
            err.contains("read-only") && err.contains("--force"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(entries(&dir), ["model.onnx"]);
        write_bytes(&path, ReadOnly::Replace, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o444, "the mode is kept");
    }
}
