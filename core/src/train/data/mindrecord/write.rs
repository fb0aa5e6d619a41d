//! Writing MindRecord: MindSpore's data files and the SQLite index file
//! beside each, with MindSpore's ImageNet-conversion schema
//! `{file_name: string, label: int32, data: bytes}`, so that
//! `mindspore.dataset.MindDataset` reads every sample back with its exact
//! bytes and label.
//!
//! The layout is the one MindSpore's `FileWriter` writes when given every
//! row in one `write_raw_data` call:
//!
//! - a data file starts with an 8-byte little-endian length and the JSON
//!   header (schema, index fields, page table, `shard_addresses`, ...),
//!   padded to `header_size`; page `p` starts at `header_size + p * page_size`;
//! - the rows are cut into row groups, each as many consecutive rows as fit
//!   one page (their `data` and their other columns alike); each group's
//!   `data` fills one blob page (an 8-byte little-endian length, then the
//!   bytes, per row), and the blob pages come first;
//! - the other columns, one MessagePack map per row (an 8-byte
//!   little-endian length, then the map), fill the raw pages that follow,
//!   a group never split across two raw pages;
//! - the index file `<data file>.db` holds one row per sample: where its
//!   raw and blob bytes are, and its `file_name` and `label` (MindSpore's
//!   table layout, which its readers query).
//!
//! With several shards, shard `i` is `<path><i>` (`i` zero-padded to the
//! width of the last one, as MindSpore names them) and the samples are cut
//! into consecutive runs of `len / shards`, the first `len % shards` shards
//! taking one more (MindSpore gives the extra ones to shards it picks at
//! random), so reading the shards in order gives the samples in order.
//!
//! Sizes: a page must hold the largest sample (MindSpore refuses a row
//! larger than a page). Unless chosen, the page size is 4 MiB, or the
//! smallest power of two that holds the largest sample when that is larger
//! (up to MindSpore's largest page, 256 MiB: a larger sample is refused,
//! naming it), or, for a set whose fullest data file holds less, the
//! smallest power of two that holds all of it (at least MindSpore's smallest
//! page, 32 KiB). The header is MindSpore's smallest (16 KiB), or the
//! smallest power of two that holds it (up to 128 MiB). MindSpore's own
//! defaults (16 MiB header, 32 MiB pages) would make a small dataset's files
//! mostly padding (every blob page is padded to its full size, since the raw
//! pages follow); at 4 MiB a page wastes less than one sample's bytes at its
//! end, and the header takes some 200 bytes per page.
//!
//! Every file is written under a temporary name beside its target and
//! renamed into place once all of them are complete: an error while
//! writing leaves no partial file and the old files as they were. Existing
//! files are refused, as MindSpore's `FileWriter` refuses them, unless
//! [`WriteOptions::overwrite()`]. Replacing a set is not one atomic step
//! (a set is several files), but a reader never sees old and new files as
//! one set: every member of the old set (the data files the old headers'
//! `shard_addresses` name beside `path`, `path` followed by digits, and
//! their `.db` files) is removed first, then the new index files are
//! renamed in, then the new data files. A failure part way (or a crash)
//! leaves a set with a member missing, which readers refuse (each data
//! file's header names every member), never a mixed one; write it again.
//!
//! ```
//! use tensorprep::train::data::mindrecord::write::{Row, WriteOptions, write};
//!
//! let dir = std::env::temp_dir().join(format!("tensorprep-mr-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let images: [&[u8]; 2] = [b"\xff\xd8 a JPEG", b"\x89PNG a PNG"];
//! let rows = [
//!     Row::new("cat/1.jpg", 0, images[0].len() as u64),
//!     Row::new("dog/7.png", 1, images[1].len() as u64),
//! ];
//! let written = write(&dir.join("data.mindrecord"), &rows, &WriteOptions::default(), |i, bytes| {
//!     bytes.extend_from_slice(images[i]);
//!     Ok(())
//! })?;
//! assert_eq!(written.files, [dir.join("data.mindrecord")]);
//! assert!(dir.join("data.mindrecord.db").is_file());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;

use crate::files;
use crate::train::data::DataError;
use crate::train::data::folder::FolderDataset;

pub use super::{MAX_HEADER_SIZE, MAX_PAGE_SIZE, MIN_HEADER_SIZE, MIN_PAGE_SIZE};
/// The page size chosen unless a sample needs more.
pub const DEFAULT_PAGE_SIZE: u64 = 4 << 20;
/// MindSpore's most data files in one set.
pub const MAX_SHARDS: usize = 1000;

/// The column holding each sample's bytes (the schema's one blob field).
pub const DATA_COLUMN: &str = "data";
/// The column holding each sample's name.
pub const FILE_NAME_COLUMN: &str = "file_name";
/// The column holding each sample's class.
pub const LABEL_COLUMN: &str = "label";

/// The schema's description in the header.
const SCHEMA_DESC: &str = "img_schema";
/// The 8-byte length before every row and before the header.
const LEN_BYTES: u64 = 8;

/// One sample to write: its name, its class and the length of its bytes
/// (known before they are read, so that the pages and the header are laid
/// out first).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Row {
    /// The `file_name` column (a path relative to the packed folder).
    pub file_name: String,
    /// The `label` column.
    pub label: i32,
    /// The byte length of the `data` column.
    pub len: u64,
}

impl Row {
    /// A row of `len` bytes named `file_name`, of class `label`.
    pub fn new(file_name: impl Into<String>, label: i32, len: u64) -> Row {
        Row {
            file_name: file_name.into(),
            label,
            len,
        }
    }
}

/// How a MindRecord set is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Data files (1 to [`MAX_SHARDS`]).
    pub shards: usize,
    /// The page size (a multiple of 4 from [`MIN_PAGE_SIZE`] to
    /// [`MAX_PAGE_SIZE`]); `None` chooses it (see the module docs).
    pub page_size: Option<u64>,
    /// The header size (a multiple of 4 from [`MIN_HEADER_SIZE`] to
    /// [`MAX_HEADER_SIZE`]); `None` chooses the smallest that holds it.
    pub header_size: Option<u64>,
    /// Replace existing files (refused otherwise, naming the first).
    pub overwrite: bool,
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions {
            shards: 1,
            page_size: None,
            header_size: None,
            overwrite: false,
        }
    }
}

impl WriteOptions {
    /// With `shards` data files.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = shards;
        self
    }

    /// With pages of `bytes`.
    pub fn page_size(mut self, bytes: u64) -> Self {
        self.page_size = Some(bytes);
        self
    }

    /// With a header of `bytes`.
    pub fn header_size(mut self, bytes: u64) -> Self {
        self.header_size = Some(bytes);
        self
    }

    /// Replacing existing files, or not.
    pub fn overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }
}

/// What [`write()`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Written {
    /// The data files, in `shard_addresses` order (each with its `.db`).
    pub files: Vec<PathBuf>,
    /// The header size chosen.
    pub header_size: u64,
    /// The page size chosen.
    pub page_size: u64,
}

/// The data files of a set of `shards` written to `path`, as MindSpore's
/// `FileWriter` names them: `path` itself for one, else `path` followed by
/// the shard's number, zero-padded to the width of the last one
/// (`data.mindrecord0` ... `data.mindrecord9`, `data.mindrecord00` ... for
/// 11 and more).
pub fn data_files(path: &Path, shards: usize) -> Vec<PathBuf> {
    if shards <= 1 {
        return std::vec![path.to_path_buf()];
    }
    let width = (shards - 1).to_string().len();
    (0..shards)
        .map(|i| {
            let mut name = path.as_os_str().to_os_string();
            name.push(std::format!("{i:0width$}"));
            PathBuf::from(name)
        })
        .collect()
}

/// The index file beside a data file: `<data file>.db`.
pub fn index_file(data_file: &Path) -> PathBuf {
    super::index::path_of(data_file)
}

/// Packs an image folder: each file's path relative to `root` (with `/`
/// between folders) is its `file_name`, its class its `label`, its bytes
/// its `data`, in the folder's order. `folder` is `root` opened.
pub fn pack_folder(
    root: &Path,
    folder: &FolderDataset,
    path: &Path,
    options: &WriteOptions,
) -> Result<Written, DataError> {
    let mut rows = Vec::with_capacity(folder.files().len());
    for (file, label) in folder.files() {
        let name = relative_name(root, file)?;
        let label = i32::try_from(*label).map_err(|_| DataError::Invalid {
            what: std::format!("{}: class {label} past int32", file.display()),
        })?;
        let len = std::fs::metadata(file)
            .map_err(|e| DataError::io(file, e))?
            .len();
        rows.push(Row::new(name, label, len));
    }
    let mut sample = super::super::Sample::default();
    write(path, &rows, options, |i, bytes| {
        crate::train::data::Dataset::read(folder, i, &mut sample)?;
        bytes.extend_from_slice(&sample.bytes);
        Ok(())
    })
}

/// `file` relative to `root`, its folders joined by `/`; UTF-8 only (the
/// column is a JSON string in MindSpore).
fn relative_name(root: &Path, file: &Path) -> Result<String, DataError> {
    let relative = file.strip_prefix(root).unwrap_or(file);
    let mut name = String::new();
    for part in relative.iter() {
        let part = part.to_str().ok_or_else(|| DataError::Invalid {
            what: std::format!(
                "{}: the name is not UTF-8 (MindRecord's file_name is text)",
                file.display()
            ),
        })?;
        if !name.is_empty() {
            name.push('/');
        }
        name.push_str(part);
    }
    Ok(name)
}

/// Writes `rows` as a MindRecord set at `path` (see the module docs):
/// `read(i, bytes)` appends row `i`'s bytes to the empty `bytes`, which must
/// then be `rows[i].len` long. Rows are read once each, in order.
pub fn write(
    path: &Path,
    rows: &[Row],
    options: &WriteOptions,
    mut read: impl FnMut(usize, &mut Vec<u8>) -> Result<(), DataError>,
) -> Result<Written, DataError> {
    let invalid = |what: String| DataError::Invalid { what };
    if options.shards == 0 || options.shards > MAX_SHARDS {
        return Err(invalid(std::format!(
            "{} MindRecord shards: 1 to {MAX_SHARDS}",
            options.shards
        )));
    }
    let targets = data_files(path, options.shards);
    let names = targets
        .iter()
        .map(|t| {
            t.file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string)
                .ok_or_else(|| {
                    invalid(std::format!(
                        "{}: a MindRecord file's name must be UTF-8 text",
                        t.display()
                    ))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let layout = Layout::plan(rows, options, &names)?;
    if !options.overwrite {
        for target in targets.iter().flat_map(|t| [t.clone(), index_file(t)]) {
            if std::fs::symlink_metadata(&target).is_ok() {
                return Err(DataError::io(
                    &target,
                    io::Error::new(io::ErrorKind::AlreadyExists, "exists: not replaced"),
                ));
            }
        }
    }
    let old = if options.overwrite {
        old_members(path, &targets)
    } else {
        Vec::new()
    };
    let mut done = Temporaries::default();
    let mut bytes = Vec::new();
    let mut scratch = Vec::new();
    for (shard, target) in layout.shards.iter().zip(&targets) {
        let data_target = files::write_target(target).map_err(|e| DataError::io(target, e))?;
        let (tmp, file) =
            files::temporary_beside(&data_target).map_err(|e| DataError::io(target, e))?;
        done.0.push((tmp.clone(), data_target.clone()));
        let header = layout.header_json(shard);
        write_data_file(&file, &header, &layout, shard, rows, &mut bytes, &mut read)
            .map_err(|e| e.or_io(target))?;
        let db = index_file(target);
        let db_target = files::write_target(&db).map_err(|e| DataError::io(&db, e))?;
        let (db_tmp, db_file) =
            files::temporary_beside(&db_target).map_err(|e| DataError::io(&db, e))?;
        drop(db_file);
        done.0.push((db_tmp.clone(), db_target));
        write_index(&db_tmp, shard, rows, &names[shard.id], &mut scratch)
            .map_err(|e| DataError::io(&db, io::Error::other(e)))?;
    }
    done.replace(&old)?;
    Ok(Written {
        files: targets,
        header_size: layout.header_size,
        page_size: layout.page_size,
    })
}

/// An error from filling a data file: a dataset's own (already naming its
/// file), or an I/O error on the data file.
enum FillError {
    Data(DataError),
    Io(io::Error),
}

impl FillError {
    fn or_io(self, path: &Path) -> DataError {
        match self {
            FillError::Data(e) => e,
            FillError::Io(e) => DataError::io(path, e),
        }
    }
}

impl From<DataError> for FillError {
    fn from(e: DataError) -> FillError {
        FillError::Data(e)
    }
}

impl From<io::Error> for FillError {
    fn from(e: io::Error) -> FillError {
        FillError::Io(e)
    }
}

/// Temporary files written so far, each with the file it replaces: removed
/// on drop unless renamed into place.
#[derive(Default)]
struct Temporaries(Vec<(PathBuf, PathBuf)>);

impl Temporaries {
    /// Removes the old set's files `old`, then renames the temporary index
    /// files over their targets, then the data files; on a failure the
    /// temporary files not yet renamed are removed (by drop).
    fn replace(mut self, old: &[PathBuf]) -> Result<(), DataError> {
        for member in old {
            match std::fs::remove_file(member) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(DataError::io(member, e));
                }
                _ => {}
            }
        }
        let is_index = |target: &Path| target.extension().is_some_and(|e| e == "db");
        let mut pending = core::mem::take(&mut self.0);
        pending.sort_by_key(|(_, target)| !is_index(target));
        for (k, (tmp, target)) in pending.iter().enumerate() {
            let renamed = File::open(tmp).and_then(|file| files::replace_with(tmp, &file, target));
            if let Err(e) = renamed {
                self.0.extend_from_slice(&pending[k..]);
                return Err(DataError::io(target, e));
            }
        }
        Ok(())
    }
}

/// The files of the set a write to `path` replaces, data files first, then
/// index files: the new set's names and, from each existing one's header,
/// the members its `shard_addresses` name that lie beside `path` and are
/// named as a set at `path` is (`path`'s name, or it followed by digits),
/// each through a symbolic link to the file it points to. A file whose
/// header cannot be read counts alone.
fn old_members(path: &Path, targets: &[PathBuf]) -> Vec<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new(""));
    let base = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let is_member = |name: &str| {
        name.strip_prefix(base)
            .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
    };
    let mut data: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        let p = files::write_target(&p).unwrap_or(p);
        if !data.contains(&p) {
            data.push(p);
        }
    };
    for target in targets {
        add(target.clone());
        let Ok((file, len)) = crate::train::data::open_file(target) else {
            continue;
        };
        let Ok(header) = super::header::Header::read(&file, target, len) else {
            continue;
        };
        for address in &header.shard_addresses {
            let name = Path::new(address).file_name().and_then(|n| n.to_str());
            if let Some(name) = name.filter(|n| is_member(n)) {
                add(dir.join(name));
            }
        }
    }
    let index = data.iter().map(|d| {
        let db = index_file(d);
        files::write_target(&db).unwrap_or(db)
    });
    let mut all: Vec<PathBuf> = index.collect();
    all.splice(0..0, data.iter().cloned());
    all
}

impl Drop for Temporaries {
    fn drop(&mut self) {
        for (tmp, _) in &self.0 {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Where every row goes: the page and header sizes, and per shard its row
/// groups and raw pages.
struct Layout {
    header_size: u64,
    page_size: u64,
    shards: Vec<ShardLayout>,
    /// Every data file's name, in order (`shard_addresses`).
    addresses: Vec<String>,
}

struct ShardLayout {
    id: usize,
    /// The row groups (indices into all rows), one blob page each.
    groups: Vec<Range<usize>>,
    /// The bytes each group takes on its blob page.
    blob_used: Vec<u64>,
    /// The raw pages: each the groups it holds (by group index) and their
    /// byte offsets, and its used bytes.
    raw_pages: Vec<RawPage>,
}

struct RawPage {
    groups: Vec<(usize, u64)>,
    used: u64,
}

impl Layout {
    fn plan(rows: &[Row], options: &WriteOptions, names: &[String]) -> Result<Layout, DataError> {
        let invalid = |what: String| DataError::Invalid { what };
        let mut scratch = Vec::new();
        let mut raw_lens = Vec::with_capacity(rows.len());
        let mut largest: Option<(u64, usize)> = None;
        for (i, row) in rows.iter().enumerate() {
            raw_row(row, &mut scratch);
            let raw = LEN_BYTES + scratch.len() as u64;
            raw_lens.push(raw);
            let need = raw.max(row.len.saturating_add(LEN_BYTES));
            if largest.is_none_or(|(l, _)| need > l) {
                largest = Some((need, i));
            }
        }
        let too_large = |size: u64, i: usize, page: u64| {
            invalid(std::format!(
                "{}: {size} bytes with its length do not fit a MindRecord page of {page} bytes \
                 (MindSpore's pages hold whole samples, at most {MAX_PAGE_SIZE} bytes)",
                rows[i].file_name
            ))
        };
        let shards = options.shards;
        let (each, extra) = (rows.len() / shards, rows.len() % shards);
        let runs: Vec<Range<usize>> = (0..shards)
            .scan(0, |start, id| {
                let run = *start..*start + each + usize::from(id < extra);
                *start = run.end;
                Some(run)
            })
            .collect();
        // The most data bytes a data file holds: a smaller set needs no
        // larger page than that.
        let fullest = runs
            .iter()
            .map(|run| {
                rows[run.clone()]
                    .iter()
                    .map(|r| r.len.saturating_add(LEN_BYTES))
                    .fold(0u64, u64::saturating_add)
            })
            .max()
            .unwrap_or(0);
        let page_size = match options.page_size {
            Some(p) => {
                if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&p) || p % 4 != 0 {
                    return Err(invalid(std::format!(
                        "MindRecord page size {p}: a multiple of 4 from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}"
                    )));
                }
                if let Some((need, i)) = largest.filter(|&(need, _)| need > p) {
                    return Err(too_large(need, i, p));
                }
                p
            }
            None => match largest {
                Some((need, i)) if need > MAX_PAGE_SIZE => {
                    return Err(too_large(need, i, MAX_PAGE_SIZE));
                }
                Some((need, _)) => need
                    .next_power_of_two()
                    .max(fullest.next_power_of_two().min(DEFAULT_PAGE_SIZE))
                    .max(MIN_PAGE_SIZE),
                None => MIN_PAGE_SIZE,
            },
        };
        let layouts = runs
            .into_iter()
            .enumerate()
            .map(|(id, run)| ShardLayout::cut(id, run, rows, &raw_lens, page_size))
            .collect();
        let mut layout = Layout {
            header_size: options.header_size.unwrap_or(MIN_HEADER_SIZE),
            page_size,
            shards: layouts,
            addresses: names.to_vec(),
        };
        let needed = |layout: &Layout| {
            layout
                .shards
                .iter()
                .map(|s| LEN_BYTES + layout.header_json(s).len() as u64)
                .max()
                .unwrap_or(0)
        };
        match options.header_size {
            Some(h) => {
                if !(MIN_HEADER_SIZE..=MAX_HEADER_SIZE).contains(&h) || h % 4 != 0 {
                    return Err(invalid(std::format!(
                        "MindRecord header size {h}: a multiple of 4 from {MIN_HEADER_SIZE} to {MAX_HEADER_SIZE}"
                    )));
                }
                let need = needed(&layout);
                if need > h {
                    return Err(invalid(std::format!(
                        "the MindRecord header takes {need} bytes, more than its {h}"
                    )));
                }
            }
            None => loop {
                // The header states its own size: grow until it holds itself.
                let need = needed(&layout);
                if need <= layout.header_size {
                    break;
                }
                layout.header_size = need.next_power_of_two();
                if layout.header_size > MAX_HEADER_SIZE {
                    return Err(invalid(std::format!(
                        "the MindRecord header would take {need} bytes, more than MindSpore's \
                         {MAX_HEADER_SIZE}: write more shards, or larger pages"
                    )));
                }
            },
        }
        Ok(layout)
    }

    /// Shard `shard`'s header: the JSON MindSpore writes, keys in its order.
    fn header_json(&self, shard: &ShardLayout) -> String {
        use core::fmt::Write as _;
        let mut j = String::new();
        let _ = write!(
            j,
            "{{\"header_size\":{},\"index_fields\":[{{\"index_field\":{},\"schema_id\":0}},\
             {{\"index_field\":{},\"schema_id\":0}}],\"page\":[",
            self.header_size,
            quoted(FILE_NAME_COLUMN),
            quoted(LABEL_COLUMN)
        );
        let mut first = true;
        let mut page = |j: &mut String,
                        (id, kind, type_id, rows, used): (
            usize,
            &str,
            usize,
            Range<usize>,
            u64,
        ),
                        groups: &[(usize, u64)]| {
            if !first {
                j.push(',');
            }
            first = false;
            let _ = write!(
                j,
                "{{\"end_row_id\":{},\"page_id\":{id},\"page_size\":{used},\"page_type\":\"{kind}\",\
                 \"page_type_id\":{type_id},\"row_group_ids\":[",
                rows.end
            );
            for (k, (group, offset)) in groups.iter().enumerate() {
                let comma = if k > 0 { "," } else { "" };
                let _ = write!(j, "{comma}{{\"id\":{group},\"offset\":{offset}}}");
            }
            let _ = write!(
                j,
                "],\"shard_id\":{},\"start_row_id\":{}}}",
                shard.id, rows.start
            );
        };
        let first_row = shard.groups.first().map_or(0, |g| g.start);
        for (g, group) in shard.groups.iter().enumerate() {
            let rows = group.start - first_row..group.end - first_row;
            // MindSpore lists one row group, id 0 at offset 0, on every blob page.
            page(
                &mut j,
                (g, "BLOB_DATA", g, rows, shard.blob_used[g]),
                &[(0, 0)],
            );
        }
        let blob_pages = shard.groups.len();
        for (k, raw) in shard.raw_pages.iter().enumerate() {
            // MindSpore numbers its first raw page 0 and each next one
            // after the previous raw page's page id (not its type id).
            let type_id = if k == 0 { 0 } else { blob_pages + k };
            page(
                &mut j,
                (blob_pages + k, "RAW_DATA", type_id, 0..0, raw.used),
                &raw.groups,
            );
        }
        let _ = write!(
            j,
            "],\"page_size\":{},\"compression_size\":0,\"schema\":[{{\"blob_fields\":[{}],\
             \"desc\":{},\"schema\":{{{}:{{\"type\":\"bytes\"}},{}:{{\"type\":\"string\"}},\
             {}:{{\"type\":\"int32\"}}}}}}],\"shard_addresses\":[",
            self.page_size,
            quoted(DATA_COLUMN),
            quoted(SCHEMA_DESC),
            quoted(DATA_COLUMN),
            quoted(FILE_NAME_COLUMN),
            quoted(LABEL_COLUMN)
        );
        for (k, name) in self.addresses.iter().enumerate() {
            if k > 0 {
                j.push(',');
            }
            j.push_str(&quoted(name));
        }
        let _ = write!(
            j,
            "],\"shard_id\":{},\"statistics\":null,\"version\":\"3.0\"}}",
            shard.id
        );
        j
    }
}

impl ShardLayout {
    /// Cuts `rows` into row groups as MindSpore does: a group ends before
    /// the row whose data or raw bytes would overflow a page; then the
    /// groups' raw bytes into raw pages, a group never split.
    fn cut(
        id: usize,
        rows: Range<usize>,
        all: &[Row],
        raw_lens: &[u64],
        page_size: u64,
    ) -> ShardLayout {
        let mut groups: Vec<Range<usize>> = Vec::new();
        let mut blob_used: Vec<u64> = Vec::new();
        let mut raw = 0u64;
        for i in rows {
            let (b, r) = (all[i].len + LEN_BYTES, raw_lens[i]);
            match (groups.last_mut(), blob_used.last_mut()) {
                (Some(g), Some(blob)) if *blob + b <= page_size && raw + r <= page_size => {
                    g.end = i + 1;
                    *blob += b;
                    raw += r;
                }
                _ => {
                    groups.push(i..i + 1);
                    blob_used.push(b);
                    raw = r;
                }
            }
        }
        let mut raw_pages: Vec<RawPage> = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            let size: u64 = raw_lens[group.clone()].iter().sum();
            match raw_pages.last_mut() {
                Some(page) if page.used + size <= page_size => {
                    page.groups.push((g, page.used));
                    page.used += size;
                }
                _ => raw_pages.push(RawPage {
                    groups: std::vec![(g, 0)],
                    used: size,
                }),
            }
        }
        ShardLayout {
            id,
            groups,
            blob_used,
            raw_pages,
        }
    }
}

/// A JSON string literal.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Row `row`'s raw columns as MindSpore stores them: a MessagePack map of
/// its non-blob columns, keys in name order (nlohmann's JSON object order).
fn raw_row(row: &Row, out: &mut Vec<u8>) {
    out.clear();
    // Writing to a Vec cannot fail.
    let _ = rmp::encode::write_map_len(out, 2);
    let _ = rmp::encode::write_str(out, FILE_NAME_COLUMN);
    let _ = rmp::encode::write_str(out, &row.file_name);
    let _ = rmp::encode::write_str(out, LABEL_COLUMN);
    let _ = rmp::encode::write_sint(out, i64::from(row.label));
}

/// Appends a row's bytes to an empty buffer.
type ReadRow<'a> = dyn FnMut(usize, &mut Vec<u8>) -> Result<(), DataError> + 'a;

/// Writes one data file: the header, then the blob pages, then the raw
/// pages, each page but the last padded to the page size; flushed and synced.
fn write_data_file(
    file: &File,
    header: &str,
    layout: &Layout,
    shard: &ShardLayout,
    rows: &[Row],
    bytes: &mut Vec<u8>,
    read: &mut ReadRow<'_>,
) -> Result<(), FillError> {
    let mut w = BufWriter::with_capacity(1 << 20, file);
    w.write_all(&(header.len() as u64).to_le_bytes())?;
    w.write_all(header.as_bytes())?;
    let mut at = LEN_BYTES + header.len() as u64;
    let mut page_start = layout.header_size;
    let pad_to = |w: &mut BufWriter<&File>, at: &mut u64, to: u64| -> io::Result<()> {
        io::copy(&mut io::repeat(0).take(to - *at), w)?;
        *at = to;
        Ok(())
    };
    let mut scratch = Vec::new();
    for group in &shard.groups {
        pad_to(&mut w, &mut at, page_start)?;
        for i in group.clone() {
            bytes.clear();
            read(i, bytes)?;
            if bytes.len() as u64 != rows[i].len {
                return Err(FillError::Data(DataError::Invalid {
                    what: std::format!(
                        "{}: {} bytes read, {} when the MindRecord was laid out (did it change?)",
                        rows[i].file_name,
                        bytes.len(),
                        rows[i].len
                    ),
                }));
            }
            w.write_all(&(rows[i].len).to_le_bytes())?;
            w.write_all(bytes)?;
            at += LEN_BYTES + rows[i].len;
        }
        page_start += layout.page_size;
    }
    for raw in &shard.raw_pages {
        pad_to(&mut w, &mut at, page_start)?;
        for &(g, _) in &raw.groups {
            for row in &rows[shard.groups[g].clone()] {
                raw_row(row, &mut scratch);
                w.write_all(&(scratch.len() as u64).to_le_bytes())?;
                w.write_all(&scratch)?;
                at += LEN_BYTES + scratch.len() as u64;
            }
        }
        page_start += layout.page_size;
    }
    w.flush()?;
    drop(w);
    file.sync_all()?;
    Ok(())
}

/// MindSpore's index table for this schema: the row's place in the raw and
/// blob pages, then each index field (`file_name`, `label`) with its
/// `INC_<k>` column.
const CREATE_INDEXES: &str = "CREATE TABLE INDEXES(  ROW_ID               INT  NOT NULL, \
     PAGE_ID_RAW          INT  NOT NULL, PAGE_OFFSET_RAW      INT  NOT NULL, \
     PAGE_OFFSET_RAW_END  INT  NOT NULL, ROW_GROUP_ID         INT  NOT NULL, \
     PAGE_ID_BLOB         INT  NOT NULL, PAGE_OFFSET_BLOB     INT  NOT NULL, \
     PAGE_OFFSET_BLOB_END INT  NOT NULL,INC_0 INT, file_name_0 TEXT,INC_1 INT, label_0 INTEGER, \
     PRIMARY KEY(ROW_ID,INC_0,INC_1));";

/// Writes the index file of one data file into `db` (an empty file).
fn write_index(
    db: &Path,
    shard: &ShardLayout,
    rows: &[Row],
    name: &str,
    scratch: &mut Vec<u8>,
) -> Result<(), rusqlite::Error> {
    let mut conn = rusqlite::Connection::open(db)?;
    let tx = conn.transaction()?;
    tx.execute_batch(CREATE_INDEXES)?;
    tx.execute_batch("CREATE TABLE SHARD_NAME(NAME TEXT NOT NULL);")?;
    tx.execute("INSERT INTO SHARD_NAME VALUES(?1)", [name])?;
    {
        let mut insert = tx
            .prepare("INSERT INTO INDEXES VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9, 0, ?10)")?;
        let first_row = shard.groups.first().map_or(0, |g| g.start);
        let blob_pages = shard.groups.len();
        for (k, raw) in shard.raw_pages.iter().enumerate() {
            for &(g, offset) in &raw.groups {
                let mut raw_at = offset;
                let mut blob_at = 0u64;
                for i in shard.groups[g].clone() {
                    raw_row(&rows[i], scratch);
                    let raw_end = raw_at + LEN_BYTES + scratch.len() as u64;
                    let blob_end = blob_at + LEN_BYTES + rows[i].len;
                    insert.execute(rusqlite::params![
                        (i - first_row) as i64,
                        (blob_pages + k) as i64,
                        raw_at as i64,
                        raw_end as i64,
                        g as i64,
                        g as i64,
                        blob_at as i64,
                        blob_end as i64,
                        rows[i].file_name,
                        rows[i].label,
                    ])?;
                    raw_at = raw_end;
                    blob_at = blob_end;
                }
            }
        }
    }
    tx.commit()?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(())
}
