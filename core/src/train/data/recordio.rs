//! MXNet's RecordIO: `.rec` files as dmlc-core writes them and `im2rec`
//! packs images into them, with their `.idx` index.
//!
//! - A record is the magic `0xced7230a`, a word `cflag << 29 | length`, the
//!   data, and zeros up to a multiple of 4 bytes (all little-endian).
//! - Data holding the magic at a 4-byte boundary is written in parts (cflag
//!   1 first, 2 middle, 3 last) split where the magic stood; a reader joins
//!   them, putting the magic back. The magic therefore never stands at a
//!   boundary inside data, and a reader can start anywhere and find the next
//!   record (dmlc's `InputSplit`, [`RecordIoDataset::open_part`]).
//! - An image record starts with MXNet's 24-byte `IRHeader` (flag `u32`,
//!   label `f32`, id `u64`, id2 `u64`); when the flag is positive, that many
//!   `f32` labels follow; then the encoded image.
//! - The `.idx` file has a line `key\toffset` per record.

use super::DataFile;
use alloc::vec::Vec;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use super::shards::{DEFAULT_OPEN_FILES, FilePool, locate};
use super::{DataError, Dataset, Sample, append_at, open_file, read_at, read_index};

/// The magic number that starts every record (part).
pub const MAGIC: u32 = 0xced7_230a;
/// The largest record (part) length the format can state: 2^29 - 1.
pub const MAX_LENGTH: u32 = (1 << 29) - 1;
/// Bytes of MXNet's `IRHeader`.
pub const HEADER_BYTES: usize = 24;

const FORMAT: &str = "RecordIO";

/// Writes records as dmlc-core's `RecordIOWriter` does.
///
/// ```
/// use tensorprep::train::data::recordio::{RecordIoWriter, pack_image};
///
/// let mut rec = Vec::new();
/// let mut writer = RecordIoWriter::new(&mut rec);
/// let mut record = Vec::new();
/// pack_image(&[3.0], 7, b"\xff\xd8 jpeg bytes", &mut record);
/// assert_eq!(writer.write_record(&record)?, 0); // the offset for the index
/// assert_eq!(rec.len() % 4, 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct RecordIoWriter<W: Write> {
    out: W,
    position: u64,
}

impl<W: Write> RecordIoWriter<W> {
    /// A writer appending to `out`.
    pub fn new(out: W) -> Self {
        RecordIoWriter { out, position: 0 }
    }

    /// Bytes written so far (the next record's offset).
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The writer's output.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn part(&mut self, cflag: u32, data: &[u8]) -> io::Result<()> {
        let len = data.len() as u32;
        self.out.write_all(&MAGIC.to_le_bytes())?;
        self.out.write_all(&(cflag << 29 | len).to_le_bytes())?;
        self.out.write_all(data)?;
        self.position += 8 + u64::from(len);
        Ok(())
    }

    /// Writes one record; returns the offset it starts at.
    pub fn write_record(&mut self, data: &[u8]) -> io::Result<u64> {
        if data.len() > MAX_LENGTH as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "RecordIO records are shorter than 2^29 bytes",
            ));
        }
        let start = self.position;
        let magic = MAGIC.to_le_bytes();
        let mut from = 0;
        for at in (0..data.len() / 4 * 4).step_by(4) {
            if data[at..at + 4] == magic {
                self.part(if from == 0 { 1 } else { 2 }, &data[from..at])?;
                from = at + 4;
            }
        }
        self.part(if from == 0 { 0 } else { 3 }, &data[from..])?;
        let pad = (4 - data.len() % 4) % 4;
        self.out.write_all(&[0; 3][..pad])?;
        self.position += pad as u64;
        Ok(start)
    }
}

/// Packs an image record as MXNet's `recordio.pack` does: the `IRHeader`
/// (one label in the header, or the label count and the labels after it),
/// then the encoded image, into `out` (cleared first).
pub fn pack_image(labels: &[f32], id: u64, image: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let (flag, label) = match labels {
        [one] => (0u32, *one),
        many => (many.len() as u32, 0.0),
    };
    out.extend_from_slice(&flag.to_le_bytes());
    out.extend_from_slice(&label.to_le_bytes());
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    if flag > 0 {
        for l in labels {
            out.extend_from_slice(&l.to_le_bytes());
        }
    }
    out.extend_from_slice(image);
}

/// Bytes a part of `len` data bytes takes: its 8-byte header and the data
/// padded to 4.
fn part_bytes(len: u32) -> u64 {
    8 + u64::from(len).div_ceil(4) * 4
}

/// An open `.rec` file: its length, for every bound check.
#[derive(Debug)]
struct RecFile<'a> {
    path: &'a Path,
    file: Arc<DataFile>,
    len: u64,
}

impl<'a> RecFile<'a> {
    /// Opens `path` (refused when it is not a regular file).
    fn open(path: &'a Path) -> Result<RecFile<'a>, DataError> {
        let (file, len) = open_file(path)?;
        Ok(RecFile {
            path,
            file: Arc::new(file),
            len,
        })
    }

    fn bad(&self, offset: u64, what: impl Into<alloc::string::String>) -> DataError {
        DataError::corrupt(FORMAT, self.path, offset, what)
    }

    /// The part header at `offset`: (cflag, length).
    fn part_header(&self, offset: u64) -> Result<(u32, u32), DataError> {
        if offset.checked_add(8).is_none_or(|end| end > self.len) {
            return Err(self.bad(offset, "a record header runs past the end of the file"));
        }
        let mut h = [0u8; 8];
        read_at(&self.file, &mut h, offset).map_err(|e| DataError::io(self.path, e))?;
        let magic = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        if magic != MAGIC {
            return Err(self.bad(
                offset,
                alloc::format!("magic {magic:#010x}, not {MAGIC:#010x}"),
            ));
        }
        let word = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        let (cflag, len) = (word >> 29, word & MAX_LENGTH);
        if cflag > 3 {
            return Err(self.bad(offset, alloc::format!("part flag {cflag} (0 to 3 exist)")));
        }
        if offset + 8 + u64::from(len) > self.len {
            return Err(self.bad(
                offset,
                alloc::format!("a record of {len} bytes runs past the end of the file"),
            ));
        }
        Ok((cflag, len))
    }

    /// Reads the record starting at `offset` into `out` (parts joined);
    /// returns the offset after it. Nothing is allocated beyond what the
    /// file holds.
    fn read_record(&self, mut offset: u64, out: &mut Vec<u8>) -> Result<u64, DataError> {
        out.clear();
        let first = offset;
        loop {
            let (cflag, len) = self.part_header(offset)?;
            if out.len() as u64 + u64::from(len) > super::MAX_SAMPLE_BYTES {
                return Err(self.bad(
                    first,
                    alloc::format!(
                        "a record of more than {} bytes (the samples' cap)",
                        super::MAX_SAMPLE_BYTES
                    ),
                ));
            }
            let expected_first = offset == first;
            if expected_first != matches!(cflag, 0 | 1) {
                return Err(self.bad(
                    offset,
                    if expected_first {
                        "a record starts with a continuation part"
                    } else {
                        "a split record's part is missing"
                    },
                ));
            }
            append_at(
                &self.file,
                self.path,
                FORMAT,
                offset + 8,
                u64::from(len),
                out,
            )?;
            offset += part_bytes(len);
            if matches!(cflag, 0 | 3) {
                return Ok(offset);
            }
            out.extend_from_slice(&MAGIC.to_le_bytes());
        }
    }

    /// The offsets of the records that start in `[begin, end)` (aligned
    /// down to 4), found from the first record head at or after `begin`:
    /// dmlc's `InputSplit` resynchronisation on the magic.
    ///
    /// From offset 0 nothing is skipped: a file that does not start with a
    /// record head is refused there (only a part starting inside the file
    /// resynchronises).
    fn scan(&self, begin: u64, end: u64) -> Result<Vec<u64>, DataError> {
        let mut offset = if begin == 0 {
            0
        } else {
            self.next_head(begin / 4 * 4)?
        };
        let end = end.min(self.len);
        // Grown as records are found (a count bound from the file's size
        // would reserve a slot per 8 bytes: 30 GiB for a 30 GiB file).
        let mut offsets = Vec::new();
        while offset < end {
            offsets
                .try_reserve(1)
                .map_err(|_| self.bad(offset, "no memory for the offsets"))?;
            offsets.push(offset);
            // Walk the parts without reading the data; a record starts
            // with a whole or first part.
            let mut at = offset;
            loop {
                let (cflag, len) = self.part_header(at)?;
                if at == offset && cflag > 1 {
                    return Err(self.bad(at, "a record starts with a continuation part"));
                }
                at += part_bytes(len);
                if matches!(cflag, 0 | 3) {
                    break;
                }
            }
            offset = at;
        }
        Ok(offsets)
    }

    /// The first record head (magic, then a first-part flag) at a 4-byte
    /// boundary at or after `from`, or the end of the file.
    fn next_head(&self, from: u64) -> Result<u64, DataError> {
        let mut buf = [0u8; 1 << 16];
        let mut at = from;
        while at + 8 <= self.len {
            let n = (self.len - at).min(buf.len() as u64) as usize;
            let chunk = &mut buf[..n];
            read_at(&self.file, chunk, at).map_err(|e| DataError::io(self.path, e))?;
            for i in (0..n.saturating_sub(7)).step_by(4) {
                let word = |j: usize| {
                    u32::from_le_bytes([chunk[j], chunk[j + 1], chunk[j + 2], chunk[j + 3]])
                };
                if word(i) == MAGIC && matches!(word(i + 4) >> 29, 0 | 1) {
                    return Ok(at + i as u64);
                }
            }
            // Step on, re-reading the last word (a head may straddle chunks).
            at += (n.saturating_sub(4) / 4 * 4).max(4) as u64;
        }
        Ok(self.len)
    }
}

/// `.rec` files as one dataset of image records, by index: the records of
/// the first file, then of the next. The files are indexed one at a time
/// and opened again when read, at most a budget of them at once
/// ([`FilePool`]).
#[derive(Debug)]
pub struct RecordIoDataset {
    files: FilePool,
    /// Each record's offset in its file, file after file.
    offsets: Vec<u64>,
    /// The first record of each file.
    starts: Vec<usize>,
}

impl RecordIoDataset {
    /// Opens `rec` with its index (`rec` with the extension `idx`) when it
    /// exists, else by walking the record headers once.
    pub fn open(rec: impl AsRef<Path>) -> Result<RecordIoDataset, DataError> {
        RecordIoDataset::open_many(&[rec], DEFAULT_OPEN_FILES)
    }

    /// Opens `recs` as one dataset, each indexed as [`open`](Self::open)
    /// indexes it (one file open at a time), keeping at most `open_files`
    /// of them open while reading.
    pub fn open_many(
        recs: &[impl AsRef<Path>],
        open_files: usize,
    ) -> Result<RecordIoDataset, DataError> {
        let mut d = RecordIoDataset::empty(open_files);
        for rec in recs {
            let rec = rec.as_ref();
            let idx = rec.with_extension("idx");
            let f = RecFile::open(rec)?;
            let offsets = if idx.is_file() {
                index_offsets(&f, &idx)?
            } else {
                f.scan(0, f.len)?
            };
            d.push(&f, f.len, offsets)?;
        }
        Ok(d)
    }

    fn empty(open_files: usize) -> RecordIoDataset {
        RecordIoDataset {
            files: FilePool::for_format(FORMAT, open_files),
            offsets: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// Adds a file and its records' offsets.
    fn push(&mut self, f: &RecFile<'_>, len: u64, offsets: Vec<u64>) -> Result<(), DataError> {
        let rec = f.path;
        self.starts.push(self.offsets.len());
        if self.offsets.is_empty() {
            self.offsets = offsets;
        } else {
            self.offsets
                .try_reserve(offsets.len())
                .map_err(|_| DataError::corrupt(FORMAT, rec, 0, "no memory for the offsets"))?;
            self.offsets.extend(offsets);
        }
        self.files.add_opened(rec, &f.file, len).map(drop)
    }

    /// Opens `rec` with the index `idx` (lines `key\toffset`; the dataset's
    /// order is the index's). Each offset must point at a record head.
    pub fn open_with_index(
        rec: impl AsRef<Path>,
        idx: impl AsRef<Path>,
    ) -> Result<RecordIoDataset, DataError> {
        let f = RecFile::open(rec.as_ref())?;
        let offsets = index_offsets(&f, idx.as_ref())?;
        let mut d = RecordIoDataset::empty(DEFAULT_OPEN_FILES);
        d.push(&f, f.len, offsets)?;
        Ok(d)
    }

    /// Part `part` of `parts` of a `.rec` file without an index, as MXNet's
    /// `ImageRecordIter(num_parts, part_index)` reads it: the file is cut
    /// into equal byte ranges and each part takes the records whose head
    /// lies in its range (found by resynchronising on the magic). Every
    /// record is in exactly one part.
    pub fn open_part(
        rec: impl AsRef<Path>,
        parts: u32,
        part: u32,
    ) -> Result<RecordIoDataset, DataError> {
        DataError::check_index(part as usize, parts as usize)?;
        let f = RecFile::open(rec.as_ref())?;
        let len = f.len;
        let step = len.div_ceil(u64::from(parts)).div_ceil(4) * 4;
        let begin = (step * u64::from(part)).min(len);
        let end = (step * (u64::from(part) + 1)).min(len);
        // The records whose head lies in [begin, end): those from the first
        // head at or after `begin` up to the first head at or after `end`.
        let stop = f.next_head(end)?;
        let offsets = f.scan(begin, stop)?;
        let mut d = RecordIoDataset::empty(DEFAULT_OPEN_FILES);
        d.push(&f, len, offsets)?;
        Ok(d)
    }

    /// The byte offset of each record (in its file), in the dataset's order.
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// The files, with the open ones.
    pub fn files(&self) -> &FilePool {
        &self.files
    }

    /// The file record `index` lies in.
    pub fn file_of(&self, index: usize) -> Option<&Path> {
        (index < self.offsets.len()).then(|| self.files.path(locate(&self.starts, index).0))
    }

    /// Reads record `index`'s raw bytes (parts joined) into `out`.
    pub fn read_raw(&self, index: usize, out: &mut Vec<u8>) -> Result<(), DataError> {
        let offset = *self.offsets.get(index).ok_or(DataError::OutOfRange {
            index,
            len: self.offsets.len(),
        })?;
        let (f, _) = locate(&self.starts, index);
        let rec = RecFile {
            path: self.files.path(f),
            file: self.files.get(f)?,
            len: self.files.file_len(f),
        };
        rec.read_record(offset, out).map(drop)
    }
}

/// The offsets the index `idx` lists for `f` (lines `key\toffset`), each
/// inside the file at a 4-byte boundary.
fn index_offsets(f: &RecFile<'_>, idx: &Path) -> Result<Vec<u64>, DataError> {
    // A line per record of at least 8 bytes, at most 41 characters a line.
    let text = read_index(idx, "RecordIO index", (f.len / 8 + 1) * 41)?;
    let mut offsets = Vec::new();
    for (line, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        let offset = l
            .split_whitespace()
            .nth(1)
            .and_then(|o| o.parse::<u64>().ok())
            .ok_or_else(|| {
                DataError::corrupt(
                    "RecordIO index",
                    idx,
                    line as u64 + 1,
                    "not `key<TAB>offset`",
                )
            })?;
        if offset % 4 != 0 || offset >= f.len {
            return Err(DataError::corrupt(
                "RecordIO index",
                idx,
                line as u64 + 1,
                alloc::format!(
                    "offset {offset} is not a record start in a file of {} bytes",
                    f.len
                ),
            ));
        }
        offsets.push(offset);
    }
    Ok(offsets)
}

impl Dataset for RecordIoDataset {
    /// Where each file's records start.
    fn blocks(&self) -> Vec<usize> {
        self.starts.clone()
    }

    /// The records' offsets.
    fn fingerprint(&self) -> u64 {
        // One file's fingerprint is its offsets'; several add where each starts.
        let starts = self.starts.iter().skip(1).map(|&s| s as u64);
        super::fingerprint_of("recordio", self.offsets.iter().copied().chain(starts))
    }

    fn len(&self) -> usize {
        self.offsets.len()
    }

    fn describe(&self, index: usize) -> alloc::string::String {
        match (self.offsets.get(index), self.file_of(index)) {
            (Some(offset), Some(path)) => alloc::format!("{}: record at {offset}", path.display()),
            _ => alloc::format!("sample {index}"),
        }
    }

    /// The record's bytes: from its offset to the next record's (or its
    /// file's end).
    fn fetch_ahead(&self, index: usize) {
        let Some(&offset) = self.offsets.get(index) else {
            return;
        };
        let (f, _) = locate(&self.starts, index);
        let next = self.starts.get(f as usize + 1).copied();
        let end = match self.offsets.get(index + 1) {
            Some(&end) if next.is_none_or(|n| index + 1 < n) => end,
            _ => self.files.file_len(f),
        };
        self.files
            .fetch_ahead(f, offset, end.saturating_sub(offset));
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        sample.content = super::Content::Encoded;
        self.read_raw(index, &mut sample.bytes)?;
        let offset = self.offsets[index];
        let path = self.file_of(index).expect("read_raw checked the index");
        let bad = |what: &str| {
            DataError::corrupt(FORMAT, path, offset, alloc::format!("image record: {what}"))
        };
        let bytes = &sample.bytes;
        if bytes.len() < HEADER_BYTES {
            return Err(bad("shorter than its 24-byte header"));
        }
        let word = |i: usize| [bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]];
        let flag = u32::from_le_bytes(word(0));
        let label = f32::from_le_bytes(word(4));
        let id = u64::from_le_bytes([
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15],
        ]);
        let labels_end = HEADER_BYTES as u64 + 4 * u64::from(flag);
        if labels_end > bytes.len() as u64 {
            return Err(bad("its label count runs past the record"));
        }
        sample.labels.clear();
        let checked = |x: f32| super::label::float(x).map_err(&bad);
        if flag == 0 {
            sample.labels.push(checked(label)?);
        } else {
            for i in (HEADER_BYTES..labels_end as usize).step_by(4) {
                sample.labels.push(checked(f32::from_le_bytes(word(i)))?);
            }
        }
        sample.id = id;
        // The image moves to the front of the same buffer: no allocation.
        sample.bytes.drain(..labels_end as usize);
        Ok(())
    }
}
