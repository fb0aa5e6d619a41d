//! A MindRecord data file's header: an 8-byte little-endian length, then
//! that many bytes of JSON (the schema, the blob fields, the page table,
//! the set's `shard_addresses`), padded to `header_size`.

use super::super::DataFile;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::Path;

use serde_json::Value as Json;

use super::super::{DataError, read_at};
use super::FORMAT;

/// The most data files a set may name (MindSpore's own limit).
pub(super) const MAX_FILES: usize = 1000;

/// MindSpore's smallest header (`FileWriter.set_header_size`).
pub const MIN_HEADER_SIZE: u64 = 16 << 10;
/// MindSpore's largest header: a file stating more is refused.
pub const MAX_HEADER_SIZE: u64 = 128 << 20;
/// MindSpore's smallest page (`FileWriter.set_page_size`).
pub const MIN_PAGE_SIZE: u64 = 32 << 10;
/// MindSpore's largest page: no sample may be larger (with its 8-byte
/// length), and a file stating more is refused.
pub const MAX_PAGE_SIZE: u64 = 256 << 20;

/// What a column holds, as the schema's `type` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `string` (UTF-8 text).
    String,
    /// `bytes`.
    Bytes,
}

impl Kind {
    fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "int32" => Kind::Int32,
            "int64" => Kind::Int64,
            "float32" => Kind::Float32,
            "float64" => Kind::Float64,
            "string" => Kind::String,
            "bytes" => Kind::Bytes,
            _ => return None,
        })
    }

    /// The schema's name for the type.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int32 => "int32",
            Kind::Int64 => "int64",
            Kind::Float32 => "float32",
            Kind::Float64 => "float64",
            Kind::String => "string",
            Kind::Bytes => "bytes",
        }
    }

    /// Bytes of one element of an array of this type.
    pub(super) fn width(self) -> usize {
        match self {
            Kind::Int32 | Kind::Float32 => 4,
            Kind::Int64 | Kind::Float64 => 8,
            Kind::String | Kind::Bytes => 1,
        }
    }
}

/// One column of the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Column {
    /// Its name.
    pub name: String,
    /// Its type.
    pub kind: Kind,
    /// Its shape, for an array (`-1` where the size varies per row); none
    /// for a scalar, a string or bytes.
    pub shape: Option<Vec<i64>>,
    /// Whether its values are stored in the blob pages (bytes and arrays)
    /// rather than in the row's MessagePack map.
    pub blob: bool,
}

/// A page of the page table.
#[derive(Clone, Debug)]
pub(super) struct Page {
    pub(super) id: u64,
    pub(super) raw: bool,
    /// For a blob page, its row group's id.
    pub(super) type_id: u64,
    pub(super) start_row: u64,
    pub(super) end_row: u64,
    /// Bytes of the page in use.
    pub(super) used: u64,
    /// For a raw page: (row group id, offset of its first row in the page).
    pub(super) groups: Vec<(u64, u64)>,
}

/// A parsed header.
#[derive(Debug)]
pub(super) struct Header {
    pub(super) header_size: u64,
    pub(super) page_size: u64,
    pub(super) columns: Vec<Column>,
    /// Indexes into `columns`, in the blob's (name) order.
    pub(super) blob_columns: Vec<usize>,
    /// Whether int32/int64 arrays are stored compressed (any int array in
    /// the schema: MindSpore's writer compresses them then).
    pub(super) compressed: bool,
    pub(super) pages: Vec<Page>,
    pub(super) shard_addresses: Vec<String>,
    pub(super) shard_id: u64,
}

/// A field of a JSON object, named in errors.
fn field<'a>(
    obj: &'a Json,
    name: &str,
    bad: &dyn Fn(String) -> DataError,
) -> Result<&'a Json, DataError> {
    obj.get(name)
        .ok_or_else(|| bad(alloc::format!("the header has no `{name}`")))
}

fn uint(obj: &Json, name: &str, bad: &dyn Fn(String) -> DataError) -> Result<u64, DataError> {
    field(obj, name, bad)?.as_u64().ok_or_else(|| {
        bad(alloc::format!(
            "the header's `{name}` is not a non-negative integer"
        ))
    })
}

impl Header {
    /// Reads the header of `file` (`len` bytes long).
    pub(super) fn read(file: &DataFile, path: &Path, len: u64) -> Result<Header, DataError> {
        let bad = |what: String| DataError::corrupt(FORMAT, path, 0, what);
        if len < 8 {
            return Err(bad("shorter than the header's 8-byte length".into()));
        }
        let mut n = [0u8; 8];
        read_at(file, &mut n, 0).map_err(|e| DataError::io(path, e))?;
        let n = u64::from_le_bytes(n);
        if n > len - 8 {
            return Err(bad(alloc::format!(
                "a header of {n} bytes in a file of {len} bytes"
            )));
        }
        let mut text = Vec::new();
        super::super::append_at(file, path, FORMAT, 8, n, &mut text)?;
        let json: Json = serde_json::from_slice(&text).map_err(|e| {
            DataError::corrupt(
                FORMAT,
                path,
                8,
                alloc::format!("a header that is not JSON: {e}"),
            )
        })?;
        drop(text);
        let bad = &bad;
        let header_size = uint(&json, "header_size", bad)?;
        let page_size = uint(&json, "page_size", bad)?;
        if header_size < 8 + n
            || header_size > MAX_HEADER_SIZE
            || page_size == 0
            || page_size > MAX_PAGE_SIZE
        {
            return Err(bad(alloc::format!(
                "header size {header_size} (its JSON takes {}; at most {MAX_HEADER_SIZE}) \
                 or page size {page_size} (at most {MAX_PAGE_SIZE})",
                8 + n
            )));
        }
        let shard_id = uint(&json, "shard_id", bad)?;
        let shard_addresses = field(&json, "shard_addresses", bad)?
            .as_array()
            .filter(|a| !a.is_empty() && a.len() <= MAX_FILES)
            .and_then(|a| {
                a.iter()
                    .map(|s| s.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| {
                bad(alloc::format!(
                    "`shard_addresses` is not a list of 1 to {MAX_FILES} names"
                ))
            })?;
        if shard_id >= shard_addresses.len() as u64 {
            return Err(bad(alloc::format!(
                "shard {shard_id} of a set of {}",
                shard_addresses.len()
            )));
        }
        let (columns, blob_columns) = schema(&json, bad)?;
        let compressed = columns
            .iter()
            .any(|c| c.shape.is_some() && matches!(c.kind, Kind::Int32 | Kind::Int64));
        let pages = field(&json, "page", bad)?
            .as_array()
            .ok_or_else(|| bad("`page` is not a list".into()))?
            .iter()
            .map(|p| page(p, bad))
            .collect::<Result<Vec<_>, _>>()?;
        // Each page once: a page listed twice would count its bytes twice
        // against the rows it may index (a small file claiming millions).
        let mut ids: Vec<u64> = pages.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(bad(alloc::format!("page {} is listed twice", w[0])));
        }
        for p in &pages {
            let start =
                p.id.checked_mul(page_size)
                    .and_then(|o| o.checked_add(header_size));
            if p.used > page_size
                || start
                    .and_then(|s| s.checked_add(p.used))
                    .is_none_or(|end| end > len)
            {
                return Err(bad(alloc::format!(
                    "page {} ({} bytes in use) runs past the end of the file ({len} bytes) or its page size ({page_size})",
                    p.id,
                    p.used
                )));
            }
        }
        Ok(Header {
            header_size,
            page_size,
            columns,
            blob_columns,
            compressed,
            pages,
            shard_addresses,
            shard_id,
        })
    }

    /// The file offset of page `id`'s first byte, for a page of the table
    /// (checked against the file when the header was read).
    pub(super) fn page_start(&self, id: u64) -> u64 {
        self.header_size + id * self.page_size
    }

    /// The file offset of page `id`'s first byte for any `id` (an index
    /// file's): `None` past `u64`.
    #[cfg(feature = "mindrecord-index")]
    pub(super) fn any_page_start(&self, id: u64) -> Option<u64> {
        id.checked_mul(self.page_size)?
            .checked_add(self.header_size)
    }
}

/// The schema: its columns in name order, and the blob columns' indexes.
fn schema(
    json: &Json,
    bad: &dyn Fn(String) -> DataError,
) -> Result<(Vec<Column>, Vec<usize>), DataError> {
    let schemas = field(json, "schema", bad)?
        .as_array()
        .ok_or_else(|| bad("`schema` is not a list".into()))?;
    let [one] = schemas.as_slice() else {
        return Err(bad(alloc::format!(
            "{} schemas (MindSpore writes one)",
            schemas.len()
        )));
    };
    let fields = field(one, "schema", bad)?
        .as_object()
        .ok_or_else(|| bad("the schema is not an object".into()))?;
    let mut columns = Vec::new();
    for (name, spec) in fields {
        let kind = spec
            .get("type")
            .and_then(Json::as_str)
            .and_then(Kind::parse)
            .ok_or_else(|| bad(alloc::format!("column `{name}` has no known type")))?;
        let shape = match spec.get("shape") {
            None => None,
            Some(s) => Some(
                s.as_array()
                    .filter(|a| !a.is_empty() && a.len() <= 8)
                    .and_then(|a| {
                        a.iter()
                            .map(|d| d.as_i64().filter(|&d| d == -1 || d > 0))
                            .collect::<Option<Vec<_>>>()
                    })
                    .filter(|_| {
                        matches!(
                            kind,
                            Kind::Int32 | Kind::Int64 | Kind::Float32 | Kind::Float64
                        )
                    })
                    .ok_or_else(|| bad(alloc::format!("column `{name}` has a bad shape")))?,
            ),
        };
        let blob = shape.is_some() || kind == Kind::Bytes;
        columns.push(Column {
            name: name.clone(),
            kind,
            shape,
            blob,
        });
    }
    columns.sort_by(|a, b| a.name.cmp(&b.name));
    let blob_names = field(one, "blob_fields", bad)?
        .as_array()
        .ok_or_else(|| bad("`blob_fields` is not a list".into()))?;
    let mut blob_columns = Vec::new();
    for name in blob_names {
        let i = name
            .as_str()
            .and_then(|n| columns.iter().position(|c| c.name == n))
            .filter(|&i| columns[i].blob && !blob_columns.contains(&i))
            .ok_or_else(|| {
                bad(alloc::format!(
                    "blob field {name} is not a bytes or array column"
                ))
            })?;
        blob_columns.push(i);
    }
    if blob_columns.len() != columns.iter().filter(|c| c.blob).count() {
        return Err(bad(
            "a bytes or array column is missing from `blob_fields`".into()
        ));
    }
    Ok((columns, blob_columns))
}

fn page(p: &Json, bad: &dyn Fn(String) -> DataError) -> Result<Page, DataError> {
    let raw = match field(p, "page_type", bad)?.as_str() {
        Some("RAW_DATA") => true,
        Some("BLOB_DATA") => false,
        _ => {
            return Err(bad(
                "a page's `page_type` is neither RAW_DATA nor BLOB_DATA".into(),
            ));
        }
    };
    let groups = field(p, "row_group_ids", bad)?
        .as_array()
        .ok_or_else(|| bad("a page's `row_group_ids` is not a list".into()))?
        .iter()
        .map(|g| Ok((uint(g, "id", bad)?, uint(g, "offset", bad)?)))
        .collect::<Result<Vec<_>, DataError>>()?;
    let page = Page {
        id: uint(p, "page_id", bad)?,
        raw,
        type_id: uint(p, "page_type_id", bad)?,
        start_row: uint(p, "start_row_id", bad)?,
        end_row: uint(p, "end_row_id", bad)?,
        used: uint(p, "page_size", bad)?,
        groups,
    };
    if let Some(&(g, offset)) = page.groups.iter().find(|&&(_, o)| o > page.used) {
        return Err(bad(alloc::format!(
            "page {} puts row group {g} at offset {offset}, past its {} bytes in use",
            page.id,
            page.used
        )));
    }
    if page.start_row > page.end_row {
        return Err(bad(alloc::format!(
            "page {} has rows {} to {}",
            page.id,
            page.start_row,
            page.end_row
        )));
    }
    Ok(page)
}
