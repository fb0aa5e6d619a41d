//! MindRecord, MindSpore's own record format, read without its SQLite
//! index.
//!
//! - A set is one to 1,000 data files (`data.mindrecord`, or
//!   `data.mindrecord0`, `data.mindrecord1`, ...), each with an SQLite index
//!   beside it (`.db`) that this reader does not need. With the feature
//!   `mindrecord-index`, an index present is checked against the page table
//!   (the rows' places must agree) and a disagreement is an error naming it.
//! - A data file starts with its header: an 8-byte little-endian length,
//!   then that many bytes of JSON: the schema, the blob fields, the page
//!   table, the set's `shard_addresses` (file names, in set order) and the
//!   file's `shard_id`. Page `p` starts at `header_size + p * page_size`.
//! - A row is split in two. Its scalar columns (strings and numbers) are a
//!   MessagePack map in a raw page, after an 8-byte little-endian length.
//!   Its bytes and array columns are its blob, in a blob page after an
//!   8-byte little-endian length: one blob field as is, several each after
//!   its 8-byte big-endian length, in name order. When the schema has an
//!   int32 or int64 array, such arrays are compressed: a 4-byte big-endian
//!   count, a 2-bit width code per value (1, 2, 4 or 8 bytes), then the
//!   values little-endian.
//! - A raw page lists its row groups: (the id of a blob page, the offset of
//!   that group's first raw row). The blob page gives the group's row ids.
//!
//! Each data file is indexed and closed in turn when the set is opened;
//! reading opens them again through a [`FilePool`], at most
//! [`Options::open_files`] at once, so a set of 1,000 files reads under a
//! low descriptor limit.
//!
//! Rows come in `MindDataset(files, shuffle=False)`'s order: the files in
//! `shard_addresses` order, each file's rows by row id.
//!
//! The image column ([`Options::image`], `data` by default) is a `bytes`
//! column holding an encoded file ([`Content::Encoded`]), or pixels
//! ([`Content::Pixels`]): an int32/int64 array column with values 0 to 255
//! whose schema shape is `[height, width]` or `[height, width, channels]`,
//! or either kind of column with the shape read per row from other columns
//! ([`Options::shape`]). The label columns ([`Options::labels`], `label` by
//! default) are numeric scalars or arrays, held exactly by `f32`.
//! [`MindRecord::columns`] reads every column of a row.

mod header;
#[cfg(feature = "mindrecord-index")]
mod index;
mod row;
#[cfg(feature = "mindrecord-write")]
pub mod write;

use super::DataFile;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::Path;

pub use header::{Column, Kind, MAX_HEADER_SIZE, MAX_PAGE_SIZE, MIN_HEADER_SIZE, MIN_PAGE_SIZE};
pub use row::Value;

use super::shards::{DEFAULT_OPEN_FILES, FilePool};
use super::{Content, DataError, Dataset, Sample, append_at, label, open_file, read_at};
use crate::PixelFormat;
use header::Header;

const FORMAT: &str = "MindRecord";

/// How a [`MindRecord`] makes samples of its rows.
///
/// ```
/// use tensorprep::train::data::mindrecord::Options;
///
/// // Raw gray or RGB pixels in a bytes column `image`, their size in the
/// // scalar columns `height` and `width` (and `channels`, when present).
/// let options = Options::default().image("image").shape(["height", "width"]);
/// assert_eq!(options.labels, ["label"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// The image column (`data`: MindSpore's ImageNet conversion's name).
    pub image: String,
    /// The label columns, their values in this order (none for no labels).
    pub labels: Vec<String>,
    /// Where an image's pixel shape is read, when the schema does not fix
    /// it: one int array column (`[height, width]` or `[height, width,
    /// channels]`), or two or three scalar columns (height, width,
    /// channels). Empty: a bytes image is an encoded file, an array image
    /// takes the schema's shape.
    pub shape: Vec<String>,
    /// Three- and four-channel pixels are BGR(A) (OpenCV's order), not RGB(A).
    pub bgr: bool,
    /// The most data files kept open while reading ([`FilePool`]'s budget;
    /// [`DEFAULT_OPEN_FILES`] by default). A set has up to 1,000 of them.
    pub open_files: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            image: "data".into(),
            labels: alloc::vec!["label".into()],
            shape: Vec::new(),
            bgr: false,
            open_files: DEFAULT_OPEN_FILES,
        }
    }
}

impl Options {
    /// The image column.
    pub fn image(mut self, name: &str) -> Self {
        self.image = name.into();
        self
    }

    /// The label columns.
    pub fn labels<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.labels = names.into_iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// The shape columns (see [`Options::shape`](Options#structfield.shape)).
    pub fn shape<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.shape = names.into_iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// Whether three- and four-channel pixels are BGR(A).
    pub fn bgr(mut self, bgr: bool) -> Self {
        self.bgr = bgr;
        self
    }

    /// The most data files kept open while reading.
    pub fn open_files(mut self, files: usize) -> Self {
        self.open_files = files;
        self
    }
}

/// Where a row's halves lie.
#[derive(Clone, Copy, Debug)]
struct Row {
    file: u32,
    id: u64,
    /// The MessagePack map's offset and length.
    raw: u64,
    raw_len: u64,
    /// The blob's offset and length.
    blob: u64,
    blob_len: u64,
}

/// Where the image's pixel shape comes from.
#[derive(Clone, Debug)]
enum Shape {
    /// An encoded file: its own header says.
    Encoded,
    /// The schema's fixed shape.
    Fixed(u32, u32, u8),
    /// An int array column of the row.
    Array(usize),
    /// Scalar columns of the row.
    Scalars(Vec<usize>),
}

/// A MindRecord set as a [`Dataset`], opened from any one of its data files.
#[derive(Debug)]
pub struct MindRecord {
    /// The data files in set order, opened when read.
    files: FilePool,
    rows: Vec<Row>,
    columns: Vec<Column>,
    blob_columns: Vec<usize>,
    compressed: bool,
    image: usize,
    shape: Shape,
    labels: Vec<usize>,
    bgr: bool,
    fingerprint: u64,
}

/// Where a set's file named `address` in a header lies, for a set found
/// in `dir`: a relative address below `dir` as MindSpore 2.x joins it; an
/// absolute one (older MindSpore wrote them) by its file name in `dir`, so
/// a moved set reads and no file outside the set's folder is opened; `None`
/// for an address with `..` or no file name.
fn address_in(dir: &Path, address: &str) -> Option<std::path::PathBuf> {
    use std::path::Component;
    let written = Path::new(address);
    if written.is_absolute() {
        return written.file_name().map(|name| dir.join(name));
    }
    let below = written
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    (below && written.file_name().is_some()).then(|| dir.join(written))
}

impl MindRecord {
    /// Opens the set `path` belongs to with the default [`Options`].
    pub fn open(path: impl AsRef<Path>) -> Result<MindRecord, DataError> {
        MindRecord::open_with(path, &Options::default())
    }

    /// Opens the set `path` belongs to: its other files are found through
    /// the header's `shard_addresses`, in `path`'s folder (an absolute
    /// address by its file name; one with `..` refused), every header and page
    /// table checked, every row's place read and checked against its page.
    pub fn open_with(path: impl AsRef<Path>, options: &Options) -> Result<MindRecord, DataError> {
        let path = path.as_ref();
        let first = {
            let (file, len) = open_file(path)?;
            Header::read(&file, path, len)?
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        // Each data file is indexed and closed before the next is opened.
        let mut files = FilePool::for_format(FORMAT, options.open_files);
        let mut rows = Vec::new();
        for (k, address) in first.shard_addresses.iter().enumerate() {
            let p = address_in(dir, address).ok_or_else(|| {
                DataError::corrupt(
                    FORMAT,
                    path,
                    0,
                    alloc::format!(
                        "its set names `{address}`, which is not a file beside it \
                         (a `..` or a root is refused: a set is read from its own folder)"
                    ),
                )
            })?;
            let (file, len) = open_file(&p)?;
            let header = Header::read(&file, &p, len)?;
            if header.shard_id != k as u64
                || header.columns != first.columns
                || header.blob_columns != first.blob_columns
                || header.shard_addresses.len() != first.shard_addresses.len()
            {
                return Err(DataError::corrupt(
                    FORMAT,
                    &p,
                    0,
                    alloc::format!(
                        "not shard {k} of {}'s set (another shard id, schema or set)",
                        path.display()
                    ),
                ));
            }
            let from = rows.len();
            index_file(&file, &p, &header, k as u32, &mut rows)?;
            #[cfg(feature = "mindrecord-index")]
            index::check(&p, &header, &rows[from..])?;
            #[cfg(not(feature = "mindrecord-index"))]
            let _ = from;
            files.add_opened(&p, &file, len)?;
        }
        let columns = first.columns;
        let find = |name: &str| {
            columns
                .iter()
                .position(|c| c.name == name)
                .ok_or_else(|| DataError::Invalid {
                    what: alloc::format!(
                        "{}: no column `{name}` (the columns: {})",
                        path.display(),
                        columns
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })
        };
        let invalid = |what: String| DataError::Invalid {
            what: alloc::format!("{}: {what}", path.display()),
        };
        let image = find(&options.image)?;
        let labels = options
            .labels
            .iter()
            .map(|l| find(l))
            .collect::<Result<Vec<_>, _>>()?;
        for &l in &labels {
            if matches!(columns[l].kind, Kind::String | Kind::Bytes) {
                return Err(invalid(alloc::format!(
                    "the label column `{}` is {}, not numbers",
                    columns[l].name,
                    columns[l].kind.name()
                )));
            }
        }
        let c = &columns[image];
        let array = matches!(c.kind, Kind::Int32 | Kind::Int64) && c.shape.is_some();
        if c.kind != Kind::Bytes && !array {
            return Err(invalid(alloc::format!(
                "the image column `{}` is {}, neither bytes nor an int array",
                c.name,
                c.kind.name()
            )));
        }
        let shape = match options.shape.as_slice() {
            [] if !array => Shape::Encoded,
            [] => {
                let s = c.shape.as_deref().unwrap_or(&[]);
                match *s {
                    [h, w] if h > 0 && w > 0 => fixed(h, w, 1),
                    [h, w, ch] if h > 0 && w > 0 && ch > 0 => fixed(h, w, ch),
                    _ => None,
                }
                .ok_or_else(|| {
                    invalid(alloc::format!(
                        "the image column `{}` has the shape {s:?}: name the columns holding its shape",
                        c.name
                    ))
                })?
            }
            [one] => {
                let i = find(one)?;
                if !matches!(columns[i].kind, Kind::Int32 | Kind::Int64)
                    || columns[i].shape.is_none()
                {
                    return Err(invalid(alloc::format!(
                        "the shape column `{one}` is not an int array"
                    )));
                }
                Shape::Array(i)
            }
            names if names.len() <= 3 => {
                let idx = names
                    .iter()
                    .map(|n| find(n))
                    .collect::<Result<Vec<_>, _>>()?;
                for &i in &idx {
                    if !matches!(columns[i].kind, Kind::Int32 | Kind::Int64)
                        || columns[i].shape.is_some()
                    {
                        return Err(invalid(alloc::format!(
                            "the shape column `{}` is not an int scalar",
                            columns[i].name
                        )));
                    }
                }
                Shape::Scalars(idx)
            }
            _ => return Err(invalid("a shape of more than three columns".into())),
        };
        let fingerprint = {
            let mut names = crate::Fnv1a64::new();
            for col in &columns {
                names.update(col.name.as_bytes());
                names.update(col.kind.name().as_bytes());
            }
            let choice = super::fingerprint_of(
                &options.image,
                options
                    .labels
                    .iter()
                    .map(|l| super::fingerprint_of(l, core::iter::empty())),
            );
            let per_row = rows
                .iter()
                .flat_map(|r| [u64::from(r.file), r.id, r.raw_len, r.blob_len]);
            super::fingerprint_of(
                "mindrecord",
                [names.finish(), choice, files.len() as u64]
                    .into_iter()
                    .chain(per_row),
            )
        };
        Ok(MindRecord {
            files,
            rows,
            blob_columns: first.blob_columns,
            compressed: first.compressed,
            columns,
            image,
            shape,
            labels,
            bgr: options.bgr,
            fingerprint,
        })
    }

    /// The schema's columns, in name order.
    pub fn schema(&self) -> &[Column] {
        &self.columns
    }

    /// The set's data files, in set order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        (0..self.files.len() as u32).map(|k| self.files.path(k))
    }

    /// The data files with the open ones.
    pub fn pool(&self) -> &FilePool {
        &self.files
    }

    /// Every column of row `index`, in name order.
    ///
    /// ```no_run
    /// use tensorprep::train::data::mindrecord::{MindRecord, Value};
    ///
    /// let set = MindRecord::open("train.mindrecord0")?;
    /// for (name, value) in set.columns(0)? {
    ///     if let Value::String(s) = value {
    ///         println!("{name}: {s}");
    ///     }
    /// }
    /// # Ok::<(), tensorprep::train::data::DataError>(())
    /// ```
    pub fn columns(&self, index: usize) -> Result<Vec<(String, Value)>, DataError> {
        let row = self.row(index)?;
        let mut values: Vec<Option<Value>> = alloc::vec![None; self.columns.len()];
        let mut raw = Vec::new();
        self.read_raw(row, &mut raw)?;
        row::scalars(&raw, |key, v| {
            if let Some(i) = self.columns.iter().position(|c| c.name == key && !c.blob) {
                values[i] = Some(row::scalar_value(&self.columns[i], v)?);
            }
            Ok(())
        })
        .map_err(|e| self.bad(row, row.raw, e))?;
        let mut blob = Vec::new();
        self.read_blob(row, &mut blob)?;
        for (k, &i) in self.blob_columns.iter().enumerate() {
            let range = row::blob_field(&blob, k, self.blob_columns.len())
                .map_err(|e| self.bad(row, row.blob, e))?;
            let field = &blob[range];
            let c = &self.columns[i];
            values[i] = Some(if c.kind == Kind::Bytes {
                Value::Bytes(field.to_vec())
            } else {
                row::array_value(c, self.compressed, field)
                    .map_err(|e| self.bad(row, row.blob, e))?
            });
        }
        self.columns
            .iter()
            .zip(values)
            .map(|(c, v)| {
                v.map(|v| (c.name.clone(), v)).ok_or_else(|| {
                    self.bad(
                        row,
                        row.raw,
                        alloc::format!("no value for column `{}`", c.name),
                    )
                })
            })
            .collect()
    }

    fn row(&self, index: usize) -> Result<&Row, DataError> {
        DataError::check_index(index, self.rows.len())?;
        Ok(&self.rows[index])
    }

    fn bad(&self, row: &Row, offset: u64, what: impl Into<String>) -> DataError {
        let what = what.into();
        DataError::corrupt(
            FORMAT,
            self.files.path(row.file),
            offset,
            alloc::format!("row {}: {what}", row.id),
        )
    }

    fn read_raw(&self, row: &Row, raw: &mut Vec<u8>) -> Result<(), DataError> {
        let file = self.files.get(row.file)?;
        raw.clear();
        append_at(
            &file,
            self.files.path(row.file),
            FORMAT,
            row.raw,
            row.raw_len,
            raw,
        )
    }

    fn read_blob(&self, row: &Row, out: &mut Vec<u8>) -> Result<(), DataError> {
        if row.blob_len > super::MAX_SAMPLE_BYTES {
            return Err(self.bad(
                row,
                row.blob,
                alloc::format!(
                    "a blob of {} bytes (more than the samples' cap, {})",
                    row.blob_len,
                    super::MAX_SAMPLE_BYTES
                ),
            ));
        }
        let file = self.files.get(row.file)?;
        out.clear();
        append_at(
            &file,
            self.files.path(row.file),
            FORMAT,
            row.blob,
            row.blob_len,
            out,
        )
    }

    /// The row's scalar columns `wanted` (by column index), as numbers.
    fn numbers(&self, row: &Row, raw: &[u8], wanted: usize) -> Result<Option<Value>, DataError> {
        let c = &self.columns[wanted];
        let mut found = None;
        row::scalars(raw, |key, v| {
            if key == c.name {
                found = Some(row::scalar_value(c, v)?);
            }
            Ok(())
        })
        .map_err(|e| self.bad(row, row.raw, e))?;
        Ok(found)
    }

    /// Column `i` of the row: a scalar from the raw map, or an array from
    /// the blob.
    fn value(&self, row: &Row, raw: &[u8], blob: &[u8], i: usize) -> Result<Value, DataError> {
        let c = &self.columns[i];
        if c.blob {
            let k = self
                .blob_columns
                .iter()
                .position(|&b| b == i)
                .expect("a blob column");
            let r = row::blob_field(blob, k, self.blob_columns.len())
                .map_err(|e| self.bad(row, row.blob, e))?;
            row::array_value(c, self.compressed, &blob[r]).map_err(|e| self.bad(row, row.blob, e))
        } else {
            self.numbers(row, raw, i)?.ok_or_else(|| {
                self.bad(
                    row,
                    row.raw,
                    alloc::format!("no value for column `{}`", c.name),
                )
            })
        }
    }

    /// Column `i`'s numbers in the row, each given to `each` in order (a
    /// scalar's one, an array's all), allocating nothing but an error's
    /// message; a `string` or `bytes` column is an error.
    fn each_number(
        &self,
        row: &Row,
        raw: &[u8],
        blob: &[u8],
        i: usize,
        mut each: impl FnMut(row::Number),
    ) -> Result<(), DataError> {
        let c = &self.columns[i];
        if c.blob {
            let k = self
                .blob_columns
                .iter()
                .position(|&b| b == i)
                .expect("a blob column");
            let r = row::blob_field(blob, k, self.blob_columns.len())
                .map_err(|e| self.bad(row, row.blob, e))?;
            row::array_numbers(c, self.compressed, &blob[r], each)
                .map_err(|e| self.bad(row, row.blob, e))?;
            return Ok(());
        }
        // The last of a key written twice, as `numbers` takes it.
        let mut found = None;
        row::scalars(raw, |key, v| {
            if key == c.name {
                found = Some(row::scalar_number(c, v)?);
            }
            Ok(())
        })
        .map_err(|e| self.bad(row, row.raw, e))?;
        each(found.ok_or_else(|| {
            self.bad(
                row,
                row.raw,
                alloc::format!("no value for column `{}`", c.name),
            )
        })?);
        Ok(())
    }

    fn pixel_format(&self, channels: u64) -> Option<PixelFormat> {
        Some(match (channels, self.bgr) {
            (1, _) => PixelFormat::Gray8,
            (3, false) => PixelFormat::Rgb8,
            (3, true) => PixelFormat::Bgr8,
            (4, false) => PixelFormat::Rgba8,
            (4, true) => PixelFormat::Bgra8,
            _ => return None,
        })
    }
}

fn fixed(h: i64, w: i64, c: i64) -> Option<Shape> {
    if ![1, 3, 4].contains(&c) {
        return None;
    }
    Some(Shape::Fixed(
        u32::try_from(h).ok()?,
        u32::try_from(w).ok()?,
        u8::try_from(c).ok()?,
    ))
}

/// Appends file `k`'s rows to `rows`, by row id, walking its page table as
/// MindSpore's index generator does: each raw page's row groups, each
/// group's rows (its blob page's row ids), a raw and a blob row each.
fn index_file(
    file: &DataFile,
    path: &Path,
    header: &Header,
    k: u32,
    rows: &mut Vec<Row>,
) -> Result<(), DataError> {
    let bad = |offset: u64, what: String| DataError::corrupt(FORMAT, path, offset, what);
    let from = rows.len();
    // Each row group's blob page, found by its id once (an id held twice
    // is refused: which would it be?).
    let mut blob_pages = BTreeMap::new();
    for p in header.pages.iter().filter(|p| !p.raw) {
        if blob_pages.insert(p.type_id, p).is_some() {
            return Err(bad(
                header.page_start(p.id),
                alloc::format!("row group {} has two blob pages", p.type_id),
            ));
        }
    }
    let mut raw_pages: Vec<&header::Page> = header.pages.iter().filter(|p| p.raw).collect();
    raw_pages.sort_by_key(|p| p.id);
    // Every row takes at least its 8-byte length in a raw page and in a
    // blob page, and each blob page is read once: the rows cannot
    // outnumber the pages' bytes / 16, whatever the page table claims.
    let page_bytes: u64 = header.pages.iter().map(|p| p.used).sum();
    let mut total_rows = 0u64;
    for raw_page in raw_pages {
        let start = header.page_start(raw_page.id);
        let mut page = Vec::new();
        append_at(file, path, FORMAT, start, raw_page.used, &mut page)?;
        // A page's groups follow each other: each starts where the one
        // before it ended, the first at the page's start.
        let mut next = 0u64;
        for &(group, offset) in &raw_page.groups {
            let blob_page = blob_pages.remove(&group).ok_or_else(|| {
                bad(
                    start,
                    alloc::format!(
                        "raw page {} names row group {group}, which no blob page holds \
                         (or which another group took)",
                        raw_page.id
                    ),
                )
            })?;
            if offset != next {
                return Err(bad(
                    start.saturating_add(offset),
                    alloc::format!(
                        "raw page {} puts row group {group} at offset {offset}, not {next} \
                         where the group before it ends",
                        raw_page.id
                    ),
                ));
            }
            let blob_start = header.page_start(blob_page.id);
            let count = blob_page.end_row - blob_page.start_row;
            // Each row takes at least its two 8-byte lengths.
            if count
                .checked_mul(8)
                .is_none_or(|n| n > blob_page.used || n > raw_page.used)
            {
                return Err(bad(
                    blob_start,
                    alloc::format!(
                        "blob page {} claims {count} rows in {} bytes",
                        blob_page.id,
                        blob_page.used
                    ),
                ));
            }
            total_rows += count;
            if total_rows > page_bytes / 16 {
                return Err(bad(
                    blob_start,
                    alloc::format!(
                        "the page table claims {total_rows} rows in {page_bytes} bytes of pages"
                    ),
                ));
            }
            rows.try_reserve(count as usize)
                .map_err(|_| bad(blob_start, "no memory for the rows".into()))?;
            let (mut raw_at, mut blob_at) = (offset, 0u64);
            for id in blob_page.start_row..blob_page.end_row {
                let raw_len = page
                    .get(raw_at as usize..)
                    .and_then(|s| s.get(..8))
                    .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                    .ok_or_else(|| {
                        bad(
                            start.saturating_add(raw_at),
                            alloc::format!("row {id}'s length runs past raw page {}", raw_page.id),
                        )
                    })?;
                let raw_end = (raw_at + 8)
                    .checked_add(raw_len)
                    .filter(|&e| e <= raw_page.used)
                    .ok_or_else(|| {
                        bad(
                            start.saturating_add(raw_at),
                            alloc::format!(
                                "row {id} of {raw_len} bytes runs past raw page {}",
                                raw_page.id
                            ),
                        )
                    })?;
                if blob_at + 8 > blob_page.used {
                    return Err(bad(
                        blob_start + blob_at,
                        alloc::format!(
                            "row {id}'s blob length runs past blob page {}",
                            blob_page.id
                        ),
                    ));
                }
                let mut n = [0u8; 8];
                read_at(file, &mut n, blob_start + blob_at).map_err(|e| DataError::io(path, e))?;
                let blob_len = u64::from_le_bytes(n);
                let blob_end = (blob_at + 8)
                    .checked_add(blob_len)
                    .filter(|&e| e <= blob_page.used)
                    .ok_or_else(|| {
                        bad(
                            blob_start + blob_at,
                            alloc::format!(
                                "row {id}'s blob of {blob_len} bytes runs past blob page {}",
                                blob_page.id
                            ),
                        )
                    })?;
                rows.push(Row {
                    file: k,
                    id,
                    raw: start + raw_at + 8,
                    raw_len,
                    blob: blob_start + blob_at + 8,
                    blob_len,
                });
                raw_at = raw_end;
                blob_at = blob_end;
            }
            next = raw_at;
        }
    }
    let mine = &mut rows[from..];
    mine.sort_by_key(|r| r.id);
    if let Some(w) = mine.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(bad(
            w[1].raw,
            alloc::format!("row id {} appears twice", w[1].id),
        ));
    }
    Ok(())
}

impl Dataset for MindRecord {
    /// Where each data file's rows start.
    fn blocks(&self) -> Vec<usize> {
        let mut starts = Vec::new();
        let mut last = None;
        for (i, r) in self.rows.iter().enumerate() {
            if last != Some(r.file) {
                starts.push(i);
                last = Some(r.file);
            }
        }
        starts
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn describe(&self, index: usize) -> String {
        match self.rows.get(index) {
            Some(r) => alloc::format!(
                "{}: row {} (raw at {}, blob at {})",
                self.files.path(r.file).display(),
                r.id,
                r.raw,
                r.blob
            ),
            None => alloc::format!("sample {index}"),
        }
    }

    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The row's blob and its MessagePack map (on pages of their own).
    fn fetch_ahead(&self, index: usize) {
        if let Some(row) = self.rows.get(index) {
            self.files.fetch_ahead(row.file, row.blob, row.blob_len);
            self.files.fetch_ahead(row.file, row.raw, row.raw_len);
        }
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        // The thread's scratch buffers, reused from sample to sample (fresh
        // ones should a read on this thread already hold them).
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => {
                let (raw, field) = &mut *s;
                self.read_into(index, sample, raw, field)
            }
            Err(_) => self.read_into(index, sample, &mut Vec::new(), &mut Vec::new()),
        })
    }
}

std::thread_local! {
    /// A row's raw MessagePack map and an int-array image's field, read
    /// into the same buffers every sample: no allocation per sample.
    static SCRATCH: core::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { core::cell::RefCell::new((Vec::new(), Vec::new())) };
}

impl MindRecord {
    fn read_into(
        &self,
        index: usize,
        sample: &mut Sample,
        raw: &mut Vec<u8>,
        field: &mut Vec<u8>,
    ) -> Result<(), DataError> {
        let row = self.row(index)?;
        raw.clear();
        if !self.labels.is_empty() || matches!(self.shape, Shape::Scalars(_)) {
            self.read_raw(row, raw)?;
        }
        let raw: &[u8] = raw;
        self.read_blob(row, &mut sample.bytes)?;
        let blob = &sample.bytes;
        sample.labels.clear();
        for &l in &self.labels {
            let bad = |e: &str| {
                self.bad(
                    row,
                    row.raw,
                    alloc::format!("label `{}`: {e}", self.columns[l].name),
                )
            };
            if matches!(self.columns[l].kind, Kind::String | Kind::Bytes) {
                return Err(bad("not a number"));
            }
            // The first value f32 cannot hold refuses the sample.
            let mut refused = None;
            self.each_number(row, raw, blob, l, |n| {
                let x = match n {
                    row::Number::Int(i) => label::int(i),
                    row::Number::Float32(x) => label::float(x),
                    row::Number::Float64(x) => label::f64(x),
                };
                match x {
                    Ok(x) if refused.is_none() => sample.labels.push(x),
                    Ok(_) => {}
                    Err(e) => {
                        refused.get_or_insert(e);
                    }
                }
            })?;
            if let Some(e) = refused {
                return Err(bad(e));
            }
        }
        // The pixel shape, before the blob is cut down to the image.
        let dims: Option<(u64, u64, u64)> = match &self.shape {
            Shape::Encoded => None,
            Shape::Fixed(h, w, c) => Some((u64::from(*h), u64::from(*w), u64::from(*c))),
            Shape::Array(i) => {
                // [h, w] or [h, w, c]: into a fixed array, no allocation.
                let (mut v, mut n) = ([0i64; 3], 0usize);
                self.each_number(row, raw, blob, *i, |x| {
                    if let (Some(slot), row::Number::Int(x)) = (v.get_mut(n), x) {
                        *slot = x;
                    }
                    n += 1;
                })?;
                if n <= v.len() {
                    Some(self.dims(row, &v[..n])?)
                } else {
                    // Too long a shape: read whole for the error's message.
                    let all: Vec<i64> = match self.value(row, raw, blob, *i)? {
                        Value::Int32s(v, _) => v.into_iter().map(i64::from).collect(),
                        Value::Int64s(v, _) => v,
                        _ => Vec::new(),
                    };
                    Some(self.dims(row, &all)?)
                }
            }
            Shape::Scalars(cols) => {
                // Two or three columns (checked when opened).
                let (mut v, mut n) = ([0i64; 3], 0usize);
                for &i in cols {
                    if let (Some(slot), Value::Int(x)) =
                        (v.get_mut(n), self.value(row, raw, blob, i)?)
                    {
                        *slot = x;
                        n += 1;
                    }
                }
                Some(self.dims(row, &v[..n])?)
            }
        };
        let k = self
            .blob_columns
            .iter()
            .position(|&b| b == self.image)
            .expect("a blob column");
        let range = row::blob_field(&sample.bytes, k, self.blob_columns.len())
            .map_err(|e| self.bad(row, row.blob, e))?;
        let image = &self.columns[self.image];
        if image.kind == Kind::Bytes {
            // The image is the whole blob when it is the only blob field:
            // nothing to move then.
            if range.start > 0 {
                sample.bytes.copy_within(range.clone(), 0);
            }
            sample.bytes.truncate(range.len());
        } else {
            field.clear();
            field.extend_from_slice(&sample.bytes[range]);
            sample.bytes.clear();
            let mut err = None;
            let mut put = |x: i64| match u8::try_from(x) {
                Ok(b) => sample.bytes.push(b),
                Err(_) => {
                    err.get_or_insert(x);
                }
            };
            // An int array image: the schema has an int array, so int
            // arrays are compressed.
            row::compressed_ints(field, &mut put).map_err(|e| self.bad(row, row.blob, e))?;
            if let Some(x) = err {
                return Err(self.bad(
                    row,
                    row.blob,
                    alloc::format!("pixel value {x} is not 0 to 255"),
                ));
            }
        }
        sample.content = match dims {
            None => Content::Encoded,
            Some((h, w, c)) => {
                if h.checked_mul(w).and_then(|n| n.checked_mul(c))
                    != Some(sample.bytes.len() as u64)
                {
                    return Err(self.bad(
                        row,
                        row.blob,
                        alloc::format!(
                            "{} pixel bytes for a {h}x{w}x{c} image",
                            sample.bytes.len()
                        ),
                    ));
                }
                Content::Pixels {
                    width: w as u32,
                    height: h as u32,
                    format: self.pixel_format(c).expect("checked channels"),
                }
            }
        };
        sample.id = index as u64;
        Ok(())
    }
}

impl MindRecord {
    /// An image's (height, width, channels) from a row's shape values.
    fn dims(&self, row: &Row, v: &[i64]) -> Result<(u64, u64, u64), DataError> {
        let (h, w, c) = match *v {
            [h, w] => (h, w, 1),
            [h, w, c] => (h, w, c),
            _ => {
                return Err(self.bad(
                    row,
                    row.raw,
                    alloc::format!("the image shape {v:?} is not [h, w] or [h, w, c]"),
                ));
            }
        };
        let ok = |x: i64| u32::try_from(x).ok().filter(|&x| x > 0);
        match (ok(h), ok(w), self.pixel_format(c as u64).filter(|_| c > 0)) {
            (Some(h), Some(w), Some(_)) => Ok((h.into(), w.into(), c as u64)),
            _ => Err(self.bad(
                row,
                row.raw,
                alloc::format!("the image shape {v:?} (1, 3 or 4 channels)"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::address_in;
    use std::path::Path;

    /// A set's files are looked for in its own folder only.
    #[test]
    fn a_set_never_reads_outside_its_folder() {
        let dir = Path::new("/data/set");
        let at = |a: &str| address_in(dir, a);
        assert_eq!(at("x.mindrecord1"), Some(dir.join("x.mindrecord1")));
        assert_eq!(at("./x.mindrecord1"), Some(dir.join("./x.mindrecord1")));
        assert_eq!(at("sub/x.mindrecord1"), Some(dir.join("sub/x.mindrecord1")));
        // An absolute address (older MindSpore's) by its file name here.
        assert_eq!(
            at("/elsewhere/other/x.mindrecord1"),
            Some(dir.join("x.mindrecord1"))
        );
        for outside in ["../x.mindrecord1", "sub/../../x.mindrecord1", "", "/", ".."] {
            assert_eq!(at(outside), None, "{outside}");
        }
    }
}
