//! The node-local cache of remote objects: each object fetched once per
//! node into a folder, then read as a local file by every process there.
//!
//! Set with [`set_cache`], or from the environment at the first remote
//! open: `TENSORPREP_CACHE_DIR` (the folder; no cache without it) and
//! `TENSORPREP_CACHE_BYTES` (the budget, [`DEFAULT_CACHE_BYTES`] when not
//! given).
//!
//! - **One entry per object version**: its file is named by a hash of the
//!   URL and of the ETag it was opened at (an object without an ETag is not
//!   cached: nothing would tell a new version from the old). A dataset
//!   reopening an object at the version it indexed finds the entry without
//!   asking the server.
//! - **Fetched once per node**: a process fetching an entry holds an
//!   exclusive lock on the entry's `.lock` file; another process (a rank on
//!   the same node) waits on it, then finds the entry. The object is
//!   written to a temporary file (ranged GETs of [`FETCH_BYTES`], each of
//!   the version opened), synced, then renamed into place: a reader never
//!   sees a partial entry.
//! - **In use, never removed**: a reader holds a shared lock on the entry
//!   while it has it open. Making room removes the least recently opened
//!   entries whose exclusive lock it can take at once, and skips the others.
//!   When the budget cannot be met that way, the object is not cached and
//!   is read from the server in blocks, as without a cache.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use super::RemoteFile;
use crate::files::{open_regular, open_regular_with};

/// The budget when `TENSORPREP_CACHE_BYTES` is not given: 16 GiB.
pub const DEFAULT_CACHE_BYTES: u64 = 16 << 30;

/// The bytes of one request while an object is fetched into the cache:
/// 64 MiB.
pub const FETCH_BYTES: u64 = 64 << 20;

/// A cache folder and its budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cache {
    dir: PathBuf,
    budget: u64,
}

/// `None` until the first remote open reads the environment (or
/// [`set_cache`] sets it); then `Some(None)` for no cache.
static CACHE: Mutex<Option<Option<Cache>>> = Mutex::new(None);

/// Sets this process's cache: objects fetched into `dir` (made if missing),
/// at most `budget` bytes there; `None` for none. Datasets opened after
/// this use it.
pub fn set_cache(dir: Option<&Path>, budget: u64) -> io::Result<()> {
    let cache = match dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            Some(Cache {
                dir: d.to_path_buf(),
                budget,
            })
        }
        None => None,
    };
    *CACHE.lock().unwrap_or_else(|e| e.into_inner()) = Some(cache);
    Ok(())
}

/// This process's cache, read from the environment the first time.
pub(crate) fn cache() -> io::Result<Option<Cache>> {
    let mut slot = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = slot.as_ref() {
        return Ok(c.clone());
    }
    let dir = std::env::var_os("TENSORPREP_CACHE_DIR").filter(|d| !d.is_empty());
    let budget = match std::env::var("TENSORPREP_CACHE_BYTES") {
        Ok(b) => b.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                alloc::format!("TENSORPREP_CACHE_BYTES={b:?}: a number of bytes"),
            )
        })?,
        Err(_) => DEFAULT_CACHE_BYTES,
    };
    let cache = match dir {
        Some(d) => {
            let dir = PathBuf::from(d);
            std::fs::create_dir_all(&dir)?;
            Some(Cache { dir, budget })
        }
        None => None,
    };
    *slot = Some(cache.clone());
    Ok(cache)
}

/// An entry open for reading: its file, with the shared lock that keeps it
/// from being removed while it is read.
#[derive(Debug)]
pub struct CachedFile {
    pub(crate) file: File,
    pub(crate) version: String,
}

impl Cache {
    /// The entry of `url` at `version`: its file's path.
    fn entry(&self, url: &str, version: &str) -> PathBuf {
        let hash = |s: &str| {
            let mut h = crate::Fnv1a64::new();
            h.update(s.as_bytes());
            h.finish()
        };
        self.dir
            .join(alloc::format!("{:016x}-{:016x}", hash(url), hash(version)))
    }

    /// The entry of `url` at `version` if this node has it: no request.
    pub(crate) fn find(&self, url: &str, version: &str, len: u64) -> Option<CachedFile> {
        open_entry(&self.entry(url, version), len, version)
    }

    /// `object`'s entry, fetched first if this node does not have it;
    /// `None` when the object cannot be cached (no ETag, or no room within
    /// the budget).
    pub(crate) fn open(&self, object: &RemoteFile) -> io::Result<Option<CachedFile>> {
        let Some(version) = object.version() else {
            return Ok(None);
        };
        let path = self.entry(object.url(), version);
        if let Some(f) = open_entry(&path, object.len(), version) {
            return Ok(Some(f));
        }
        // One fetcher per entry on this node: the others wait, then read.
        let (lock, _) = open_regular_with(
            &path.with_extension("lock"),
            OpenOptions::new().create(true).truncate(false).write(true),
        )?;
        lock.lock()?;
        if let Some(f) = open_entry(&path, object.len(), version) {
            return Ok(Some(f));
        }
        if !self.make_room(object.len())? {
            return Ok(None);
        }
        let part = path.with_extension(alloc::format!("part{}", std::process::id()));
        let fetched = fetch_into(object, &part).and_then(|()| std::fs::rename(&part, &path));
        if let Err(e) = fetched {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
        drop(lock);
        Ok(open_entry(&path, object.len(), version))
    }

    /// Removes entries not in use, least recently opened first, until
    /// `need` more bytes fit the budget: whether they do.
    fn make_room(&self, need: u64) -> io::Result<bool> {
        if need > self.budget {
            return Ok(false);
        }
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for e in std::fs::read_dir(&self.dir)? {
            let e = e?;
            let path = e.path();
            if path.extension().is_some() {
                continue; // a .lock or a .part file
            }
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_file() {
                let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                entries.push((used, meta.len(), path));
            }
        }
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        entries.sort();
        for (_, len, path) in entries {
            if total + need <= self.budget {
                break;
            }
            let Ok((file, _)) = open_regular(&path) else {
                continue;
            };
            // In use (a reader's shared lock): kept.
            if file.try_lock().is_ok() && std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
        Ok(total + need <= self.budget)
    }
}

/// The entry at `path` opened with its shared lock, if it is there whole
/// (`len` bytes) and a regular file (anything else put there, a FIFO, is
/// neither waited on nor read); marked as just used.
fn open_entry(path: &Path, len: u64, version: &str) -> Option<CachedFile> {
    let (file, _) = open_regular(path).ok()?;
    file.lock_shared().ok()?;
    // Removed between the open and the lock: the open file still holds
    // every byte, so it is read as it is.
    if file.metadata().ok()?.len() != len {
        return None;
    }
    let _ = open_regular_with(path, OpenOptions::new().write(true))
        .and_then(|(w, _)| w.set_modified(SystemTime::now()));
    Some(CachedFile {
        file,
        version: version.to_string(),
    })
}

/// Writes `object` into `path` (a new file), synced.
fn fetch_into(object: &RemoteFile, path: &Path) -> io::Result<()> {
    let (mut out, _) = open_regular_with(
        path,
        OpenOptions::new().create(true).truncate(true).write(true),
    )?;
    let mut at = 0;
    while at < object.len() {
        let end = (at + FETCH_BYTES).min(object.len());
        out.write_all(&object.fetch(at..end)?)?;
        at = end;
    }
    out.sync_all()
}
