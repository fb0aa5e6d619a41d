//! The SQLite index MindSpore writes beside each data file (`<file>.db`),
//! checked against the rows found by walking the header's page table.
//!
//! The index holds, per row, its row id and where its raw and blob bytes
//! lie (page id, start and end offset in the page, each end past the
//! row's 8-byte length and bytes). The page table already says all of
//! this, so the index gives the reader nothing it lacks; what it gives is
//! a second account written at the same time: a data file whose pages and
//! index disagree (a file replaced without its index, an index of another
//! file) is refused, naming the index and the row, instead of being read
//! as whatever the pages now hold.

use std::path::Path;

use alloc::string::String;
use rusqlite::{Connection, OpenFlags};

use super::Row;
use super::header::Header;
use crate::train::data::DataError;

const FORMAT: &str = "MindRecord index";

/// The index file of data file `path`: the path with `.db` appended (also
/// [`write::index_file`](super::write::index_file), for writers).
pub(super) fn path_of(path: &Path) -> std::path::PathBuf {
    let mut db = path.as_os_str().to_os_string();
    db.push(".db");
    db.into()
}

/// Checks data file `path`'s `rows` (in row-id order) against its index
/// when the index exists; a set without indexes reads as well.
pub(super) fn check(path: &Path, header: &Header, rows: &[Row]) -> Result<(), DataError> {
    let db = path_of(path);
    if !db.is_file() {
        return Ok(());
    }
    // The offset an error names is the row id (0 for the index as a whole).
    let bad = |row: u64, what: String| DataError::corrupt(FORMAT, &db, row, what);
    let sql = |e: rusqlite::Error| bad(0, alloc::format!("{e}"));
    let conn = Connection::open_with_flags(
        &db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql)?;
    let mut query = conn
        .prepare(
            "SELECT DISTINCT ROW_ID, PAGE_ID_RAW, PAGE_OFFSET_RAW, PAGE_OFFSET_RAW_END, \
             PAGE_ID_BLOB, PAGE_OFFSET_BLOB, PAGE_OFFSET_BLOB_END FROM INDEXES ORDER BY ROW_ID",
        )
        .map_err(sql)?;
    let mut listed = query.query([]).map_err(sql)?;
    let mut ours = rows.iter();
    let mut count = 0u64;
    while let Some(r) = listed.next().map_err(sql)? {
        let mut n = [0i64; 7];
        for (k, v) in n.iter_mut().enumerate() {
            *v = r.get(k).map_err(sql)?;
        }
        // Negative numbers wrap to values no page holds (every sum below
        // is checked).
        let [id, raw_page, raw_at, raw_end, blob_page, blob_at, blob_end] = n.map(|x| x as u64);
        count += 1;
        let Some(row) = ours.next() else {
            return Err(bad(
                id,
                alloc::format!(
                    "lists more rows than {}'s page table ({})",
                    path.display(),
                    rows.len()
                ),
            ));
        };
        // Where the page table puts the row: past each half's length.
        let place = |page: u64, at: u64, end: u64| {
            let start = header
                .any_page_start(page)?
                .checked_add(at)?
                .checked_add(8)?;
            Some((start, end.checked_sub(at)?.checked_sub(8)?))
        };
        let raw = place(raw_page, raw_at, raw_end);
        let blob = place(blob_page, blob_at, blob_end);
        if id != row.id
            || raw != Some((row.raw, row.raw_len))
            || blob != Some((row.blob, row.blob_len))
        {
            return Err(bad(
                id,
                alloc::format!(
                    "row {id} is not where {}'s page table puts row {} (raw at {} of {} bytes, \
                     blob at {} of {} bytes)",
                    path.display(),
                    row.id,
                    row.raw,
                    row.raw_len,
                    row.blob,
                    row.blob_len
                ),
            ));
        }
    }
    if count != rows.len() as u64 {
        return Err(bad(
            0,
            alloc::format!(
                "lists {count} rows, {}'s page table {}",
                path.display(),
                rows.len()
            ),
        ));
    }
    Ok(())
}
