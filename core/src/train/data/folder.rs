//! An image folder: a sub-folder per class, as torchvision's `ImageFolder`
//! reads one.
//!
//! Classes are the sub-folders' names, sorted; class `i` is label `i`. Each
//! class's images are found by walking its folder (links followed), the
//! folders in sorted order and the files of each in sorted order, keeping
//! the files whose extension (any case) names a format the decoder reads:
//! `.jpg`, `.jpeg`, `.png`, `.webp`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{DataError, Dataset, Sample};

/// Extensions of the files an image folder holds (compared in lower case).
pub const EXTENSIONS: [&str; 4] = ["jpg", "jpeg", "png", "webp"];

/// The largest image file read: [`super::MAX_SAMPLE_BYTES`].
pub const MAX_FILE_BYTES: u64 = super::MAX_SAMPLE_BYTES;

/// A folder of class folders of images.
#[derive(Clone, Debug)]
pub struct FolderDataset {
    classes: Vec<String>,
    files: Vec<(PathBuf, u32)>,
}

impl FolderDataset {
    /// Lists `root`'s classes and images (no image is read yet).
    ///
    /// Refused, naming the folder, as torchvision refuses them: a root
    /// without class folders, and a class folder without images. Refused
    /// too: a folder reached twice through links (a cycle, or two links to
    /// one folder), which would list its images again and again. A class
    /// folder's name that is not UTF-8 is opened as it is; its class name
    /// is its lossy text.
    pub fn open(root: impl AsRef<Path>) -> Result<FolderDataset, DataError> {
        let root = root.as_ref();
        let mut classes: Vec<(String, std::ffi::OsString)> = Vec::new();
        for entry in std::fs::read_dir(root).map_err(|e| DataError::io(root, e))? {
            let entry = entry.map_err(|e| DataError::io(root, e))?;
            if entry.path().is_dir() {
                let name = entry.file_name();
                classes.push((name.to_string_lossy().into_owned(), name));
            }
        }
        if classes.is_empty() {
            return Err(DataError::corrupt(
                FORMAT,
                root,
                0,
                "no class folders: expected one sub-folder per class, holding its images \
                 (root/<class>/<image>.jpg)",
            ));
        }
        classes.sort_by(|a, b| a.1.cmp(&b.1));
        let mut files = Vec::new();
        let mut seen = Visited::default();
        for (label, (name, dir_name)) in classes.iter().enumerate() {
            let dir = root.join(dir_name);
            let mut dirs = Vec::new();
            walk(&dir, &mut dirs, &mut seen, 0)?;
            dirs.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
            let before = files.len();
            for (_, names) in dirs {
                files.extend(names.into_iter().map(|p| (p, label as u32)));
            }
            if files.len() == before {
                return Err(DataError::corrupt(
                    FORMAT,
                    &dir,
                    0,
                    alloc::format!(
                        "class `{name}` has no image files ({})",
                        EXTENSIONS.map(|e| alloc::format!(".{e}")).join(", ")
                    ),
                ));
            }
        }
        let classes = classes.into_iter().map(|(name, _)| name).collect();
        Ok(FolderDataset { classes, files })
    }

    /// The class names; label `i` is `classes()[i]`.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// Each image's path and label, in the dataset's order.
    pub fn files(&self) -> &[(PathBuf, u32)] {
        &self.files
    }
}

const FORMAT: &str = "image folder";

/// Deepest folder nesting followed.
const MAX_DEPTH: usize = 64;

/// The folders walked so far, by identity (device and inode on Unix), with
/// the path each was first reached by.
#[derive(Default)]
struct Visited(std::collections::HashMap<(u64, u64), PathBuf>);

impl Visited {
    /// Records `dir`; a folder already walked is an error naming both paths.
    fn enter(&mut self, dir: &Path) -> Result<(), DataError> {
        let id = identity(dir)?;
        if let Some(first) = self.0.get(&id) {
            return Err(DataError::corrupt(
                FORMAT,
                dir,
                0,
                alloc::format!(
                    "the folder {} is reached again through a link (a cycle, or two links to one \
                     folder): its images would be listed twice",
                    first.display()
                ),
            ));
        }
        self.0.insert(id, dir.to_path_buf());
        Ok(())
    }
}

/// A folder's identity: its device and inode.
#[cfg(unix)]
fn identity(dir: &Path) -> Result<(u64, u64), DataError> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).map_err(|e| DataError::io(dir, e))?;
    Ok((m.dev(), m.ino()))
}

/// A folder's identity: a hash of its canonical path.
#[cfg(not(unix))]
fn identity(dir: &Path) -> Result<(u64, u64), DataError> {
    let canonical = std::fs::canonicalize(dir).map_err(|e| DataError::io(dir, e))?;
    let mut h = crate::Fnv1a64::new();
    h.update(canonical.as_os_str().as_encoded_bytes());
    Ok((0, h.finish()))
}

/// Collects `dir` and its sub-folders with their image files (sorted).
fn walk(
    dir: &Path,
    out: &mut Vec<(PathBuf, Vec<PathBuf>)>,
    seen: &mut Visited,
    depth: usize,
) -> Result<(), DataError> {
    if depth > MAX_DEPTH {
        return Err(DataError::corrupt(
            FORMAT,
            dir,
            depth as u64,
            "folders nested deeper than 64",
        ));
    }
    seen.enter(dir)?;
    let mut names = Vec::new();
    let mut subdirs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))? {
        let path = entry.map_err(|e| DataError::io(dir, e))?.path();
        if path.is_dir() {
            subdirs.push(path);
        } else if path.is_file() && has_image_extension(&path) {
            names.push(path);
        }
    }
    names.sort();
    subdirs.sort();
    out.push((dir.to_path_buf(), names));
    for sub in subdirs {
        walk(&sub, out, seen, depth + 1)?;
    }
    Ok(())
}

fn has_image_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

impl Dataset for FolderDataset {
    /// The classes, and each file's name and class (not where the folder is).
    fn fingerprint(&self) -> u64 {
        let mut h = crate::Fnv1a64::new();
        h.update(b"folder");
        for c in &self.classes {
            h.update(c.as_bytes());
            h.update(&[0]);
        }
        for (path, label) in &self.files {
            let name = path
                .file_name()
                .map(|n| n.as_encoded_bytes())
                .unwrap_or(&[]);
            h.update(name);
            h.update(&label.to_le_bytes());
        }
        h.finish()
    }

    fn len(&self) -> usize {
        self.files.len()
    }

    fn describe(&self, index: usize) -> String {
        match self.files.get(index) {
            Some((path, _)) => path.display().to_string(),
            None => alloc::format!("sample {index}"),
        }
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        let (path, label) = self.files.get(index).ok_or(DataError::OutOfRange {
            index,
            len: self.files.len(),
        })?;
        let (file, _) = super::open_file(path)?;
        sample.bytes.clear();
        // Read capped whatever the file claims to be (it may have changed).
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut sample.bytes)
            .map_err(|e| DataError::io(path, e))?;
        if sample.bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(DataError::corrupt(
                FORMAT,
                path,
                MAX_FILE_BYTES,
                "larger than 256 MiB",
            ));
        }
        sample.labels.clear();
        sample.labels.push(*label as f32);
        sample.id = index as u64;
        Ok(())
    }
}
