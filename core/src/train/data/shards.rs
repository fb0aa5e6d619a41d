//! Many files as one dataset: the paths a pattern names, and a bounded pool
//! of the open ones.
//!
//! A dataset over many files (1,024 TFRecord shards, a RecordIO per class)
//! indexes them one at a time, closing each, and opens a file again when a
//! sample in it is read. A [`FilePool`] keeps at most its budget open
//! ([`DEFAULT_OPEN_FILES`] unless told), closing the least recently read
//! first, so a dataset never runs into the process's descriptor limit (1,024
//! by default on Linux) however many files it spans. A file whose length
//! changed since it was indexed is refused when it is opened again.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{DataError, DataFile, open_file, open_file_at};

/// Files a dataset keeps open at once unless told otherwise: a few per
/// reading thread, well under the usual limit of 1,024 descriptors.
pub const DEFAULT_OPEN_FILES: usize = 64;

/// A dataset's files, each known by its index, opened when read and at
/// most `budget` of them open at once (the least recently read is closed
/// first). A read in flight keeps its file open until it ends, so the
/// descriptors in use are at most the budget plus one per reading thread.
///
/// ```
/// use tensorprep::train::data::shards::FilePool;
///
/// let mut pool = FilePool::new(1);
/// let a = pool.add("../tests/fixtures/sample.jpg".as_ref())?;
/// let b = pool.add("../tests/fixtures/sample_gray.jpg".as_ref())?;
/// pool.get(a)?;
/// pool.get(b)?; // closes `a`
/// assert_eq!(pool.open_count(), 1);
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
#[derive(Debug)]
pub struct FilePool {
    /// The format named when a file changed since it was indexed.
    format: &'static str,
    /// Each file's path, length and version (a remote object's ETag) when
    /// it was indexed.
    files: Vec<(PathBuf, u64, Option<String>)>,
    budget: usize,
    /// The files open now, the most recently read last.
    open: Mutex<Vec<(u32, Arc<DataFile>)>>,
    /// Whether a file is named by a URL (read ahead).
    remote: bool,
}

impl FilePool {
    /// An empty pool keeping at most `budget` files open (at least one).
    pub fn new(budget: usize) -> Self {
        FilePool::for_format("data file", budget)
    }

    /// An empty pool of `format`'s files.
    pub(crate) fn for_format(format: &'static str, budget: usize) -> Self {
        FilePool {
            format,
            files: Vec::new(),
            budget: budget.max(1),
            open: Mutex::new(Vec::new()),
            remote: false,
        }
    }

    /// Adds the file at `path` (not kept open); returns its index. Its
    /// length now is the one every later open must find.
    pub fn add(&mut self, path: &Path) -> Result<u32, DataError> {
        let (file, len) = open_file(path)?;
        self.add_opened(path, &file, len)
    }

    /// Adds a file the caller has just opened (and indexed), of `len`
    /// bytes: every later open must find that length and version.
    pub(crate) fn add_opened(
        &mut self,
        path: &Path,
        file: &DataFile,
        len: u64,
    ) -> Result<u32, DataError> {
        let version = file.version().map(String::from);
        let index = u32::try_from(self.files.len()).map_err(|_| DataError::Invalid {
            what: "more than 2^32 files".into(),
        })?;
        self.files.try_reserve(1).map_err(|_| DataError::Invalid {
            what: "no memory for the file list".into(),
        })?;
        self.files.push((path.to_path_buf(), len, version));
        self.remote |= super::is_url(path);
        Ok(index)
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// File `index`'s path.
    pub fn path(&self, index: u32) -> &Path {
        &self.files[index as usize].0
    }

    /// File `index`'s length.
    pub fn file_len(&self, index: u32) -> u64 {
        self.files[index as usize].1
    }

    /// The files open now.
    pub fn open_count(&self) -> usize {
        self.lock().len()
    }

    /// The most files kept open.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// File `index`, opened if it is not open (closing the least recently
    /// read past the budget).
    ///
    /// The file is opened and its length checked with the pool unlocked, so
    /// threads reading different files do not wait on one another's opens;
    /// if another thread opened the same file meanwhile, its copy is kept
    /// and this one closed. A file closed for the budget while a reader
    /// still holds it stays open until that read ends, and each thread
    /// opening a file holds it before it joins the pool: the descriptors in
    /// use are at most the budget plus one per reading thread.
    pub fn get(&self, index: u32) -> Result<Arc<DataFile>, DataError> {
        if let Some(file) = self.touch(&mut self.lock(), index) {
            return Ok(file);
        }
        let (path, len, version) = &self.files[index as usize];
        let (file, now) = open_file_at(path, version.as_deref().map(|v| (*len, v)))?;
        if now != *len {
            return Err(DataError::corrupt(
                self.format,
                path,
                0,
                alloc::format!("changed since it was indexed ({len} bytes then, {now} now)"),
            ));
        }
        if version.is_some() && file.version() != version.as_deref() {
            return Err(DataError::corrupt(
                self.format,
                path,
                0,
                "changed since it was indexed (another ETag): its records would mix two versions",
            ));
        }
        let file = Arc::new(file);
        let mut open = self.lock();
        if let Some(theirs) = self.touch(&mut open, index) {
            return Ok(theirs);
        }
        // Closed once the lock is released, not while others wait on it.
        let closed = (open.len() >= self.budget).then(|| open.remove(0));
        open.push((index, Arc::clone(&file)));
        drop(open);
        drop(closed);
        Ok(file)
    }

    /// Starts fetching `offset..offset + len` of file `index`, to be read
    /// soon ([`Dataset::fetch_ahead`](super::Dataset::fetch_ahead)), when
    /// the pool holds remote files: opens it if it is closed (a remote
    /// object then, or the node cache filling, is fetched by the hint's
    /// thread, ahead of its read). Errors are left to the read.
    pub(crate) fn fetch_ahead(&self, index: u32, offset: u64, len: u64) {
        if self.remote
            && (index as usize) < self.files.len()
            && let Ok(file) = self.get(index)
        {
            file.fetch_ahead(offset, len);
        }
    }

    /// The open files, locked (a reader that panicked left them whole).
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u32, Arc<DataFile>)>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// File `index` if it is open, marked as the most recently read.
    fn touch(&self, open: &mut Vec<(u32, Arc<DataFile>)>, index: u32) -> Option<Arc<DataFile>> {
        let at = open.iter().position(|(i, _)| *i == index)?;
        let entry = open.remove(at);
        let file = Arc::clone(&entry.1);
        open.push(entry);
        Some(file)
    }
}

/// Which of consecutive files a dataset's item `index` lies in, given the
/// first item of each file (`starts`, ascending from 0): the file and the
/// item's position in it.
pub(crate) fn locate(starts: &[usize], index: usize) -> (u32, usize) {
    let file = starts.partition_point(|&s| s <= index) - 1;
    (file as u32, index - starts[file])
}

/// The files `pattern` names, in order: braces expanded first
/// ([`expand_braces`](super::webdataset::expand_braces): `{a,b}` lists and
/// `{000..099}` ranges), then `*` and `?` in a path's last component
/// matched against its folder's entries (sorted by name; a name starting
/// with a dot only by a pattern starting with one, as the shell does). A
/// wildcard that matches no file is an error naming it; a name without
/// wildcards is kept as it is (opening it tells whether it exists).
///
/// ```
/// use tensorprep::train::data::shards::expand;
///
/// let found = expand("../tests/fixtures/records/folder.{rec,tf*}")?;
/// let names: Vec<_> = found.iter().map(|p| p.file_name().unwrap().to_str().unwrap()).collect();
/// assert_eq!(names, ["folder.rec", "folder.tfindex", "folder.tfrecord"]);
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
pub fn expand(pattern: &str) -> Result<Vec<PathBuf>, DataError> {
    let mut out = Vec::new();
    for name in super::webdataset::expand_braces(pattern)? {
        let path = PathBuf::from(&name);
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if !file_name.contains(['*', '?']) {
            out.push(path);
            continue;
        }
        if super::is_url(&path) {
            return Err(DataError::corrupt(
                "file pattern",
                &path,
                0,
                "a wildcard in a URL (objects are not listed): name them, or use {a,b} lists and {000..099} ranges",
            ));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if dir.to_str().is_some_and(|d| d.contains(['*', '?'])) {
            return Err(DataError::corrupt(
                "file pattern",
                Path::new(pattern),
                0,
                "wildcards in a folder's name (only the file name may hold `*` or `?`)",
            ));
        }
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| DataError::io(&dir, e))? {
            let entry = entry.map_err(|e| DataError::io(&dir, e))?;
            let entry_name = entry.file_name();
            let Some(n) = entry_name.to_str() else {
                // Not UTF-8: matched as far as it reads; one that would
                // match is an error, not a file quietly left out.
                let lossy = entry_name.to_string_lossy();
                if wildcard_match(file_name, &lossy) {
                    return Err(DataError::corrupt(
                        "file pattern",
                        &dir.join(&entry_name),
                        0,
                        "a file name that is not UTF-8 (rename it to match the pattern)",
                    ));
                }
                continue;
            };
            if wildcard_match(file_name, n) && (!n.starts_with('.') || file_name.starts_with('.')) {
                found.push(path.with_file_name(n));
            }
        }
        if found.is_empty() {
            return Err(DataError::corrupt(
                "file pattern",
                &path,
                0,
                "no file matches it",
            ));
        }
        found.sort();
        out.extend(found);
        if out.len() > super::webdataset::MAX_SHARDS {
            return Err(DataError::corrupt(
                "file pattern",
                Path::new(pattern),
                0,
                "names more than 2^20 files",
            ));
        }
    }
    Ok(out)
}

/// Whether `name` matches `pattern` (`*` any run, `?` one character): one
/// pass with a single backtrack point, linear in practice.
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// The paths of a list, each expanded as a pattern (see [`expand`]).
pub fn expand_all<S: AsRef<str>>(patterns: &[S]) -> Result<Vec<PathBuf>, DataError> {
    let mut out = Vec::new();
    for p in patterns {
        out.extend(expand(p.as_ref())?);
    }
    if out.is_empty() {
        return Err(DataError::Invalid {
            what: String::from("an empty list of files"),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_as_the_shell_does() {
        for (p, n, m) in [
            ("*.tfrecord", "a.tfrecord", true),
            ("*.tfrecord", "a.tfrecord.idx", false),
            ("s-??.rec", "s-01.rec", true),
            ("s-??.rec", "s-1.rec", false),
            ("*a*b*", "xxaybz", true),
            ("*a*b", "xxaybz", false),
            ("*", "", true),
        ] {
            assert_eq!(wildcard_match(p, n), m, "{p} {n}");
        }
    }

    #[test]
    fn locate_finds_the_file_and_position() {
        let starts = [0, 3, 3, 5];
        assert_eq!(locate(&starts, 0), (0, 0));
        assert_eq!(locate(&starts, 2), (0, 2));
        assert_eq!(locate(&starts, 3), (2, 0));
        assert_eq!(locate(&starts, 6), (3, 1));
    }
}
