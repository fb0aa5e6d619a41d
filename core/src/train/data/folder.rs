//! An image folder: a sub-folder per class, as torchvision's `ImageFolder`
//! reads one.
//!
//! Classes are the sub-folders' names, sorted; class `i` is label `i`. Each
//! class's images are found by walking its folder (links followed), the
//! folders in sorted order and the files of each in sorted order, keeping
//! the files whose extension (any case) names a format the decoder reads:
//! `.jpg`, `.jpeg`, `.png`, `.webp`.

use alloc::string::String;
use alloc::vec::Vec;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{DataError, Dataset, Sample};

/// Extensions of the files an image folder holds (compared in lower case).
pub const EXTENSIONS: [&str; 4] = ["jpg", "jpeg", "png", "webp"];

/// The largest image file read (256 MiB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// A folder of class folders of images.
#[derive(Clone, Debug)]
pub struct FolderDataset {
    classes: Vec<String>,
    files: Vec<(PathBuf, u32)>,
}

impl FolderDataset {
    /// Lists `root`'s classes and images (no image is read yet).
    pub fn open(root: impl AsRef<Path>) -> Result<FolderDataset, DataError> {
        let root = root.as_ref();
        let mut classes: Vec<String> = Vec::new();
        for entry in std::fs::read_dir(root).map_err(|e| DataError::io(root, e))? {
            let entry = entry.map_err(|e| DataError::io(root, e))?;
            if entry.path().is_dir() {
                classes.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        classes.sort();
        let mut files = Vec::new();
        for (label, class) in classes.iter().enumerate() {
            let mut dirs = Vec::new();
            walk(&root.join(class), &mut dirs, 0)?;
            dirs.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
            for (_, names) in dirs {
                files.extend(names.into_iter().map(|p| (p, label as u32)));
            }
        }
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

/// Deepest folder nesting followed (links can make cycles).
const MAX_DEPTH: usize = 64;

/// Collects `dir` and its sub-folders with their image files (sorted).
fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<PathBuf>)>, depth: usize) -> Result<(), DataError> {
    if depth > MAX_DEPTH {
        return Err(DataError::corrupt(
            "image folder",
            dir,
            depth as u64,
            "folders nested deeper than 64 (a link cycle?)",
        ));
    }
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
    out.push((dir.to_path_buf(), names));
    for sub in subdirs {
        walk(&sub, out, depth + 1)?;
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
                "image folder",
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
