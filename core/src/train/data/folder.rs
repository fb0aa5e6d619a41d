//! An image folder: a sub-folder per class, as torchvision's `ImageFolder`
//! reads one.
//!
//! Classes are the sub-folders' names, sorted; class `i` is label `i`. Each
//! class's images are found by walking its folder (links followed), the
//! folders in sorted order and the files of each in sorted order, keeping
//! the files a [`FileFilter`] accepts: by default, as torchvision's
//! `ImageFolder`, those whose name ends (in lower case) with one of
//! [`IMG_EXTENSIONS`]; other files (a `.txt`, a `Thumbs.db`) are ignored.
//! The decoder reads JPEG, PNG and WebP: a `.bmp` or `.tif` sample is an
//! error when it is read, not a file silently left out.

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use std::path::{Path, PathBuf};

use super::{DataError, Dataset, Sample};

/// torchvision's `IMG_EXTENSIONS`: the endings of the files an image
/// folder takes by default (compared with the file name in lower case).
pub const IMG_EXTENSIONS: [&str; 9] = [
    ".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp",
];

/// The largest image file read: [`super::MAX_SAMPLE_BYTES`].
pub const MAX_FILE_BYTES: u64 = super::MAX_SAMPLE_BYTES;

/// Which files of a class folder are samples: torchvision's `extensions`
/// or its `is_valid_file` (one or the other, as torchvision requires).
///
/// ```
/// use std::path::Path;
/// use tensorprep::train::data::folder::FileFilter;
///
/// let default = FileFilter::default();
/// assert!(default.accepts(Path::new("cat/1.JPG")));
/// assert!(!default.accepts(Path::new("cat/notes.txt")));
/// let pngs = FileFilter::extensions(&[".png"]);
/// assert!(!pngs.accepts(Path::new("cat/1.jpg")));
/// let no_hidden = FileFilter::valid_file(|p: &Path| {
///     !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
/// });
/// assert!(!no_hidden.accepts(Path::new("cat/.DS_Store")));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum FileFilter {
    /// Files whose name, in lower case, ends with one of these
    /// (torchvision's `extensions`: give them with their dot, in lower
    /// case).
    Extensions(Vec<String>),
    /// Files whose path the function accepts (torchvision's
    /// `is_valid_file`).
    Valid(Arc<dyn Fn(&Path) -> bool + Send + Sync>),
}

impl Default for FileFilter {
    /// [`IMG_EXTENSIONS`].
    fn default() -> Self {
        FileFilter::extensions(&IMG_EXTENSIONS)
    }
}

impl core::fmt::Debug for FileFilter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FileFilter::Extensions(e) => f.debug_tuple("Extensions").field(e).finish(),
            FileFilter::Valid(_) => f.write_str("Valid(..)"),
        }
    }
}

impl FileFilter {
    /// Files ending with one of `extensions`.
    pub fn extensions(extensions: &[&str]) -> Self {
        FileFilter::Extensions(extensions.iter().map(|e| e.to_string()).collect())
    }

    /// Files `valid` accepts.
    pub fn valid_file(valid: impl Fn(&Path) -> bool + Send + Sync + 'static) -> Self {
        FileFilter::Valid(Arc::new(valid))
    }

    /// Whether the file at `path` is a sample.
    pub fn accepts(&self, path: &Path) -> bool {
        match self {
            FileFilter::Extensions(extensions) => {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().to_lowercase())
                    .unwrap_or_default();
                extensions.iter().any(|e| name.ends_with(e.as_str()))
            }
            FileFilter::Valid(valid) => valid(path),
        }
    }

    /// What it accepts, for messages.
    fn describe(&self) -> String {
        match self {
            FileFilter::Extensions(e) => alloc::format!("supported extensions: {}", e.join(", ")),
            FileFilter::Valid(_) => "no file is accepted by is_valid_file".into(),
        }
    }
}

/// A folder of class folders of images.
#[derive(Clone, Debug)]
pub struct FolderDataset {
    classes: Vec<String>,
    files: Vec<(PathBuf, u32)>,
}

impl FolderDataset {
    /// Lists `root`'s classes and images (no image is read yet), the files
    /// [`FileFilter::default`] accepts ([`IMG_EXTENSIONS`]).
    pub fn open(root: impl AsRef<Path>) -> Result<FolderDataset, DataError> {
        FolderDataset::open_filtered(root, &FileFilter::default())
    }

    /// Lists `root`'s classes and the files `filter` accepts.
    ///
    /// Refused, naming the folder, as torchvision refuses them: a root
    /// without class folders, and a class folder without images. Refused
    /// too: a folder reached twice through links (a cycle, or two links to
    /// one folder), which would list its images again and again. A class
    /// folder's name that is not UTF-8 is opened as it is; its class name
    /// is its lossy text.
    pub fn open_filtered(
        root: impl AsRef<Path>,
        filter: &FileFilter,
    ) -> Result<FolderDataset, DataError> {
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
            walk(&dir, filter, &mut dirs, &mut seen, 0)?;
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
                    alloc::format!("class `{name}` has no image files ({})", filter.describe()),
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
    filter: &FileFilter,
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
        } else if path.is_file() && filter.accepts(&path) {
            names.push(path);
        }
    }
    names.sort();
    subdirs.sort();
    out.push((dir.to_path_buf(), names));
    for sub in subdirs {
        walk(&sub, filter, out, seen, depth + 1)?;
    }
    Ok(())
}

/// Reads the file at `path` whole into `out` (cleared first, its memory
/// reused: one read of the length `fstat` gives, no allocation once `out`
/// is as large as the file), at most [`MAX_FILE_BYTES`] whatever the file
/// claims to be (it may have changed since it was listed); a larger one is
/// an error of `format` naming it.
pub(crate) fn read_whole(
    path: &Path,
    format: &'static str,
    out: &mut Vec<u8>,
) -> Result<(), DataError> {
    crate::files::read_capped_into(path, MAX_FILE_BYTES, out).map_err(|e| match e {
        crate::files::ReadError::TooLarge { .. } => {
            DataError::corrupt(format, path, MAX_FILE_BYTES, "larger than 256 MiB")
        }
        crate::files::ReadError::Io(e) => DataError::io(path, e),
    })
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
        read_whole(path, FORMAT, &mut sample.bytes)?;
        sample.content = super::Content::Encoded;
        sample.labels.clear();
        sample.labels.push(*label as f32);
        sample.id = index as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch root with class folders holding these (empty) files.
    fn tree(tag: &str, classes: &[(&str, &[&str])]) -> PathBuf {
        let root = std::env::temp_dir().join(alloc::format!(
            "tp-folder-filter-{}-{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        for (class, files) in classes {
            std::fs::create_dir_all(root.join(class)).unwrap();
            for f in *files {
                std::fs::write(root.join(class).join(f), b"x").unwrap();
            }
        }
        root
    }

    fn names(d: &FolderDataset) -> Vec<(String, u32)> {
        d.files()
            .iter()
            .map(|(p, l)| (p.file_name().unwrap().to_string_lossy().into_owned(), *l))
            .collect()
    }

    fn owned(v: &[(&str, u32)]) -> Vec<(String, u32)> {
        v.iter().map(|(n, l)| (n.to_string(), *l)).collect()
    }

    #[test]
    fn by_default_torchvision_s_image_extensions_in_any_case() {
        let root = tree(
            "default",
            &[
                (
                    "cat",
                    &["a.jpg", "b.PNG", "c.bmp", "notes.txt", "Thumbs.db"],
                ),
                ("dog", &["d.TIFF", "e.webp", "f.jpg.txt"]),
            ],
        );
        let d = FolderDataset::open(&root).unwrap();
        let expected = [
            ("a.jpg", 0),
            ("b.PNG", 0),
            ("c.bmp", 0),
            ("d.TIFF", 1),
            ("e.webp", 1),
        ];
        assert_eq!(names(&d), owned(&expected));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn extensions_and_is_valid_file_choose_the_samples() {
        let root = tree(
            "chosen",
            &[
                ("cat", &["a.jpg", "b.png", "n.txt"]),
                ("dog", &["c.png", "m.txt"]),
            ],
        );
        let png = FolderDataset::open_filtered(&root, &FileFilter::extensions(&[".png"])).unwrap();
        assert_eq!(names(&png), owned(&[("b.png", 0), ("c.png", 1)]));
        let not_b = FileFilter::valid_file(|p: &Path| {
            p.file_name().is_none_or(|n| n != "b.png") && p.to_string_lossy().contains(".")
        });
        let d = FolderDataset::open_filtered(&root, &not_b).unwrap();
        let expected = [("a.jpg", 0), ("n.txt", 0), ("c.png", 1), ("m.txt", 1)];
        assert_eq!(names(&d), owned(&expected));
        // As torchvision compares them: the extension as given, with the
        // file name in lower case.
        let upper = FolderDataset::open_filtered(&root, &FileFilter::extensions(&[".PNG"]));
        assert!(upper.is_err());
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_class_with_no_valid_file_is_an_error_naming_it() {
        let root = tree("empty", &[("cat", &["a.jpg"]), ("dog", &["notes.txt"])]);
        let err = FolderDataset::open(&root).unwrap_err().to_string();
        assert!(err.contains("class `dog` has no image files"), "{err}");
        assert!(err.contains(".jpg, .jpeg, .png"), "{err}");
        let none = FileFilter::valid_file(|_: &Path| false);
        let err = FolderDataset::open_filtered(&root, &none)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("class `cat`") && err.contains("is_valid_file"),
            "{err}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
