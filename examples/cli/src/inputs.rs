//! What `run` and `bench` read: files given by name, and the image files
//! found in directories (by their first bytes, not their names).

use std::io::Read;
use std::path::{Path, PathBuf};

use tensorprep::decode::ImageFormat;

/// One input file, and the path its output takes under an output directory.
pub(crate) struct InputFile {
    pub(crate) path: PathBuf,
    /// The file name without its last extension plus `.npy` for a file given
    /// by name; for a file found in a directory, its path relative to it, so
    /// renamed (subdirectories kept, so that `cat/1.jpg` and `dog/1.jpg` do
    /// not collide).
    pub(crate) out_name: PathBuf,
}

/// The largest input file read (any format), whatever the file system says
/// its length is.
pub(crate) const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Reads a regular file, at most `limit` bytes (errors do not repeat the
/// path): `tensorprep::files::read_capped`, which refuses devices, FIFOs and
/// directories before opening them and stops at the cap whatever `stat`
/// says.
pub(crate) fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    tensorprep::files::read_capped(path, limit).map_err(|e| e.to_string())
}

/// The file name without its last extension, then `.npy`: `photo.v1.jpg`
/// gives `photo.v1.npy` (not `photo.npy`).
fn npy_name(path: &Path) -> std::ffi::OsString {
    let mut name = path.file_stem().unwrap_or(path.as_os_str()).to_owned();
    name.push(".npy");
    name
}

/// The image format `path` starts with, if any (reads 16 bytes).
fn sniff(path: &Path) -> Option<ImageFormat> {
    let mut head = [0u8; 16];
    let mut file = std::fs::File::open(path).ok()?;
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return None,
        }
    }
    ImageFormat::sniff(&head[..n])
}

/// Every input the arguments name: files as given, and the image files in
/// each directory, recursively, sorted by path. Files in a directory whose
/// first bytes are no known image format are left out and counted; images
/// in a format this build does not read are kept, so that the run names them.
pub(crate) fn collect(args: &[PathBuf]) -> Result<(Vec<InputFile>, usize), String> {
    let mut files = Vec::new();
    let mut skipped = 0;
    for arg in args {
        if arg.is_dir() {
            let mut found = Vec::new();
            walk(arg, &mut found)?;
            found.sort();
            for path in found {
                if sniff(&path).is_none() {
                    skipped += 1;
                    continue;
                }
                let rel = path.strip_prefix(arg).unwrap_or(&path);
                let out_name = rel.with_file_name(npy_name(rel));
                files.push(InputFile { path, out_name });
            }
        } else {
            files.push(InputFile {
                path: arg.clone(),
                out_name: PathBuf::from(npy_name(arg)),
            });
        }
    }
    Ok((files, skipped))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        if kind.is_dir() {
            walk(&entry.path(), out)?;
        } else if kind.is_file() || (kind.is_symlink() && entry.path().is_file()) {
            // Symbolic links to files count; links to directories are not
            // followed (they could loop).
            out.push(entry.path());
        }
    }
    Ok(())
}
