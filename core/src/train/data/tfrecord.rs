//! TFRecord files of `tf.train.Example`s, as TensorFlow writes them.
//!
//! - A record is its length (`u64`), the masked CRC-32C of those 8 bytes
//!   (`u32`), the data, and the masked CRC-32C of the data (`u32`), all
//!   little-endian. Masking: `((crc >> 15) | (crc << 17)) + 0xa282ead8`.
//! - An `Example` holds a map from feature names to a bytes, float or int64
//!   list; repeated numbers may be packed or not. The image and label keys
//!   are configurable ([`Keys`]), `image/encoded` and `image/class/label` by
//!   default.
//! - An index is one walk over the record headers, or DALI's
//!   `tfrecord2idx` file (`offset size` per line).
//!
//! Reading parses the example in place (prost's wire primitives, no
//! decoding into owned maps): no allocation per sample in steady state.
//! A checksum that does not match is an error, never a skipped record.

use super::DataFile;
use alloc::string::String;
use alloc::vec::Vec;
use std::io::{self, Write};
use std::path::Path;

use super::shards::{DEFAULT_OPEN_FILES, FilePool, locate};
pub use super::tf_detection::DetectionOptions;
use super::{DataError, Dataset, Sample, append_at, label, open_file, read_at, read_index};
use crate::graph::wire::{self, Value};

const FORMAT: &str = "TFRecord";
const MASK_DELTA: u32 = 0xa282_ead8;

/// The largest record read (1 GiB): a length beyond it is refused before
/// anything is allocated, as is one past the end of the file.
pub const MAX_RECORD_BYTES: u64 = 1 << 30;

/// TFRecord's masked CRC-32C of `data`.
///
/// ```
/// use tensorprep::train::data::tfrecord::masked_crc32c;
///
/// // The masked checksum of an empty record's length field (as Python's crc32c computes it).
/// assert_eq!(masked_crc32c(&0u64.to_le_bytes()), 0x0798_0329);
/// ```
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// The feature names an image example is read by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keys<'a> {
    /// The encoded image (a bytes list; its first value).
    pub image: &'a str,
    /// The label(s): an int64 or a float list.
    pub label: &'a str,
}

impl Keys<'static> {
    /// `image/encoded` and `image/class/label`: the names TensorFlow's
    /// ImageNet conversion scripts and most datasets use.
    pub const CONVENTIONAL: Keys<'static> = Keys {
        image: "image/encoded",
        label: "image/class/label",
    };
}

/// What a record's labels are read as: [`TfRecordDataset::with_labels`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Labels {
    /// The numbers under [`Keys::label`], into the sample's labels
    /// (classification, multi-label).
    #[default]
    Classification,
    /// A detection target ([`Sample::target`]) from the TensorFlow Object
    /// Detection API's keys (`image/object/bbox/xmin`, ...,
    /// `image/object/class/label`; [`tf_detection`](super::tf_detection)):
    /// boxes XYXY in pixels; [`Keys::label`] is not read.
    ObjectDetection(DetectionOptions),
}

/// A feature's values, for writing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Feature<'a> {
    /// A bytes list.
    Bytes(&'a [&'a [u8]]),
    /// A float list (written packed).
    Float(&'a [f32]),
    /// An int64 list (written packed).
    Int64(&'a [i64]),
}

/// Serializes a `tf.train.Example` of `features`, in the order given (as
/// TensorFlow's Python writer orders a dict), into `out` (cleared first).
pub fn encode_example(features: &[(&str, Feature<'_>)], out: &mut Vec<u8>) {
    let varint = |v: u64, out: &mut Vec<u8>| prost::encoding::encode_varint(v, out);
    let mut feats = Vec::new();
    for (name, feature) in features {
        let mut list = Vec::new();
        let kind = match feature {
            Feature::Bytes(values) => {
                for v in *values {
                    wire::put_bytes(&mut list, 1, v);
                }
                1
            }
            Feature::Float(values) => {
                let packed: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                wire::put_bytes(&mut list, 1, &packed);
                2
            }
            Feature::Int64(values) => {
                let mut packed = Vec::new();
                for &v in *values {
                    varint(v as u64, &mut packed);
                }
                wire::put_bytes(&mut list, 1, &packed);
                3
            }
        };
        let mut feature_msg = Vec::new();
        wire::put_bytes(&mut feature_msg, kind, &list);
        let mut entry = Vec::new();
        wire::put_bytes(&mut entry, 1, name.as_bytes());
        wire::put_bytes(&mut entry, 2, &feature_msg);
        wire::put_bytes(&mut feats, 1, &entry);
    }
    out.clear();
    wire::put_bytes(out, 1, &feats);
}

/// Writes TFRecord framing around each record.
///
/// ```
/// use tensorprep::train::data::tfrecord::{Feature, TfRecordWriter, encode_example};
///
/// let mut example = Vec::new();
/// encode_example(&[("image/encoded", Feature::Bytes(&[b"\xff\xd8..."])),
///                  ("image/class/label", Feature::Int64(&[3]))], &mut example);
/// let mut writer = TfRecordWriter::new(Vec::new());
/// assert_eq!(writer.write_record(&example)?, 0);
/// assert_eq!(writer.into_inner().len(), 16 + example.len());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TfRecordWriter<W: Write> {
    out: W,
    position: u64,
}

impl<W: Write> TfRecordWriter<W> {
    /// A writer appending to `out`.
    pub fn new(out: W) -> Self {
        TfRecordWriter { out, position: 0 }
    }

    /// The writer's output.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Writes one record; returns the offset it starts at.
    pub fn write_record(&mut self, data: &[u8]) -> io::Result<u64> {
        let start = self.position;
        let len = (data.len() as u64).to_le_bytes();
        self.out.write_all(&len)?;
        self.out.write_all(&masked_crc32c(&len).to_le_bytes())?;
        self.out.write_all(data)?;
        self.out.write_all(&masked_crc32c(data).to_le_bytes())?;
        self.position += 16 + data.len() as u64;
        Ok(start)
    }
}

/// TFRecord files of image examples as one dataset, by index: the records
/// of the first file, then of the next. The files are indexed one at a
/// time and opened again when read, at most a budget of them at once
/// ([`FilePool`]).
#[derive(Debug)]
pub struct TfRecordDataset {
    files: FilePool,
    /// Each record's offset (in its file) and data length, file after file.
    records: Vec<(u64, u64)>,
    /// The first record of each file.
    starts: Vec<usize>,
    image: alloc::string::String,
    label: alloc::string::String,
    labels: Labels,
}

/// A file being indexed or read: its length, for every bound check.
struct TfFile<'a> {
    file: DataFile,
    path: &'a Path,
    len: u64,
}

impl<'a> TfFile<'a> {
    /// Opens `path` (refused when it is not a regular file).
    fn open(path: &'a Path) -> Result<TfFile<'a>, DataError> {
        let (file, len) = open_file(path)?;
        Ok(TfFile { file, path, len })
    }

    fn bad(&self, offset: u64, what: impl Into<alloc::string::String>) -> DataError {
        DataError::corrupt(FORMAT, self.path, offset, what)
    }

    /// The data length of the record at `offset`, its checksum verified and
    /// the whole record inside the file.
    fn header(&self, offset: u64) -> Result<u64, DataError> {
        if offset.checked_add(12).is_none_or(|e| e > self.len) {
            return Err(self.bad(offset, "a record header runs past the end of the file"));
        }
        let mut h = [0u8; 12];
        read_at(&self.file, &mut h, offset).map_err(|e| DataError::io(self.path, e))?;
        let len_bytes: [u8; 8] = h[..8].try_into().expect("8 bytes");
        let crc = u32::from_le_bytes(h[8..].try_into().expect("4 bytes"));
        if masked_crc32c(&len_bytes) != crc {
            return Err(self.bad(offset, "the length's checksum does not match"));
        }
        let n = u64::from_le_bytes(len_bytes);
        if n > MAX_RECORD_BYTES || offset + 16 + n > self.len {
            return Err(self.bad(
                offset,
                alloc::format!("a record of {n} bytes runs past the end of the file"),
            ));
        }
        Ok(n)
    }
}

impl TfRecordDataset {
    /// Opens `path`, indexing it by one walk over the record headers (each
    /// length's checksum verified), reading examples by `keys`.
    pub fn open(path: impl AsRef<Path>, keys: Keys<'_>) -> Result<TfRecordDataset, DataError> {
        TfRecordDataset::open_many(&[path], keys, DEFAULT_OPEN_FILES)
    }

    /// Opens `paths` as one dataset, indexing each by one walk over its
    /// record headers (one file open at a time), and keeping at most
    /// `open_files` of them open while reading.
    ///
    /// ```
    /// use tensorprep::train::data::Dataset;
    /// use tensorprep::train::data::shards::{DEFAULT_OPEN_FILES, expand};
    /// use tensorprep::train::data::tfrecord::{Keys, TfRecordDataset};
    ///
    /// let files = expand("../tests/fixtures/records/*.tfrecord")?;
    /// let d = TfRecordDataset::open_many(&files, Keys::CONVENTIONAL, DEFAULT_OPEN_FILES)?;
    /// let one = TfRecordDataset::open(&files[0], Keys::CONVENTIONAL)?;
    /// assert!(d.len() > one.len());
    /// # Ok::<(), tensorprep::train::data::DataError>(())
    /// ```
    pub fn open_many(
        paths: &[impl AsRef<Path>],
        keys: Keys<'_>,
        open_files: usize,
    ) -> Result<TfRecordDataset, DataError> {
        let mut d = TfRecordDataset::new(keys, open_files);
        for path in paths {
            let f = TfFile::open(path.as_ref())?;
            let (path, len) = (f.path, f.len);
            d.starts.push(d.records.len());
            let mut at = 0u64;
            while at < len {
                let n = f.header(at)?;
                d.records
                    .try_reserve(1)
                    .map_err(|_| f.bad(at, "no memory for the index"))?;
                d.records.push((at, n));
                at += 16 + n;
            }
            d.files.add_opened(path, &f.file, len)?;
        }
        Ok(d)
    }

    /// Opens `path` with DALI's `tfrecord2idx` index `index` (lines
    /// `offset size`); each entry is checked against its record's header.
    pub fn open_with_index(
        path: impl AsRef<Path>,
        index: impl AsRef<Path>,
        keys: Keys<'_>,
    ) -> Result<TfRecordDataset, DataError> {
        let mut d = TfRecordDataset::new(keys, DEFAULT_OPEN_FILES);
        let f = TfFile::open(path.as_ref())?;
        let (path, len) = (f.path, f.len);
        let index = index.as_ref();
        // A line per record of at least 16 bytes: two numbers of at most
        // 20 digits, a space and a newline.
        let text = read_index(index, "TFRecord index", (len / 16 + 1) * 42)?;
        for (line, l) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let bad =
                |what: &str| DataError::corrupt("TFRecord index", index, line as u64 + 1, what);
            let mut fields = l.split_whitespace().map(str::parse::<u64>);
            let (Some(Ok(offset)), Some(Ok(size))) = (fields.next(), fields.next()) else {
                return Err(bad("not `offset size`"));
            };
            let n = f.header(offset)?;
            if size != 16 + n {
                return Err(bad("the size differs from the record's own length"));
            }
            d.records.push((offset, n));
        }
        d.starts.push(0);
        d.files.add_opened(path, &f.file, len)?;
        Ok(d)
    }

    fn new(keys: Keys<'_>, open_files: usize) -> TfRecordDataset {
        TfRecordDataset {
            files: FilePool::for_format(FORMAT, open_files),
            records: Vec::new(),
            starts: Vec::new(),
            image: keys.image.into(),
            label: keys.label.into(),
            labels: Labels::Classification,
        }
    }

    /// The dataset reading its labels as `labels` says
    /// ([`Labels::Classification`] when opened).
    ///
    /// ```
    /// use tensorprep::train::data::tfrecord::{DetectionOptions, Keys, Labels, TfRecordDataset};
    /// use tensorprep::train::data::{Dataset, Sample};
    ///
    /// let d = TfRecordDataset::open("../tests/fixtures/tf_detection/od.tfrecord", Keys::CONVENTIONAL)?
    ///     .with_labels(Labels::ObjectDetection(DetectionOptions::default()));
    /// let mut sample = Sample::default();
    /// d.read(0, &mut sample)?;
    /// let boxes = sample.target.as_ref().unwrap().boxes.as_ref().unwrap();
    /// assert_eq!(boxes.format(), tensorprep::targets::BoxFormat::Xyxy);
    /// # Ok::<(), tensorprep::train::data::DataError>(())
    /// ```
    pub fn with_labels(mut self, labels: Labels) -> TfRecordDataset {
        self.labels = labels;
        self
    }

    /// What the labels are read as.
    pub fn labels(&self) -> Labels {
        self.labels
    }

    /// Each record's offset (in its file) and data length, in order.
    pub fn records(&self) -> &[(u64, u64)] {
        &self.records
    }

    /// The files, with the open ones.
    pub fn files(&self) -> &FilePool {
        &self.files
    }

    /// The file record `index` lies in.
    pub fn file_of(&self, index: usize) -> Option<&Path> {
        (index < self.records.len()).then(|| self.files.path(locate(&self.starts, index).0))
    }
}

/// Calls `each` with every feature's name and `Feature` message, in order.
pub(super) fn each_feature<'a>(
    example: &'a [u8],
    mut each: impl FnMut(&'a [u8], &'a [u8]) -> Result<(), String>,
) -> Result<(), String> {
    let malformed = |_| String::from("a malformed tf.train.Example");
    for field in wire::fields(example) {
        let field = field.map_err(malformed)?;
        let (1, Value::Bytes(features)) = (field.number, field.value) else {
            continue;
        };
        for entry in wire::fields(features) {
            let entry = entry.map_err(malformed)?;
            let (1, Value::Bytes(entry)) = (entry.number, entry.value) else {
                continue;
            };
            let (mut name, mut feature) = (&[][..], &[][..]);
            for kv in wire::fields(entry) {
                match kv.map_err(malformed)? {
                    f if f.number == 1 => name = bytes_of(f.value)?,
                    f if f.number == 2 => feature = bytes_of(f.value)?,
                    _ => {}
                }
            }
            each(name, feature)?;
        }
    }
    Ok(())
}

/// Where the image's bytes lie in an example, and its labels (appended to
/// `labels`).
fn find(
    example: &[u8],
    keys: (&str, &str),
    labels: &mut Vec<f32>,
) -> Result<(usize, usize), String> {
    let mut image = None;
    let mut found_label = false;
    let base = example.as_ptr() as usize;
    each_feature(example, |name, feature| {
        if name == keys.0.as_bytes() {
            image = first_bytes(feature)?.map(|b| {
                let start = b.as_ptr() as usize - base;
                (start, start + b.len())
            });
        } else if name == keys.1.as_bytes() {
            numbers(feature, labels)?;
            found_label = true;
        }
        Ok(())
    })?;
    if !found_label {
        return Err("no label feature".into());
    }
    image.ok_or_else(|| "no image feature".into())
}

fn bytes_of(v: Value<'_>) -> Result<&[u8], &'static str> {
    match v {
        Value::Bytes(b) => Ok(b),
        _ => Err("a malformed tf.train.Example"),
    }
}

/// The first value of a bytes list feature.
pub(super) fn first_bytes(feature: &[u8]) -> Result<Option<&[u8]>, &'static str> {
    for f in wire::fields(feature) {
        let f = f.map_err(|_| "a malformed feature")?;
        if let (1, Value::Bytes(list)) = (f.number, f.value) {
            for v in wire::fields(list) {
                let v = v.map_err(|_| "a malformed bytes list")?;
                if v.number == 1 {
                    return bytes_of(v.value).map(Some);
                }
            }
        }
    }
    Ok(None)
}

/// The values of a float or int64 list feature, packed or not, as floats:
/// at least one, each finite, each integer exact in `f32` (a bytes list, an
/// empty list, a NaN or a rounded class index is refused).
fn numbers(feature: &[u8], out: &mut Vec<f32>) -> Result<(), &'static str> {
    let bad = |_| "a malformed number list";
    let start = out.len();
    for f in wire::fields(feature) {
        let f = f.map_err(bad)?;
        let list = match (f.number, f.value) {
            (2 | 3, Value::Bytes(list)) => list,
            (1, _) => return Err("a label stored as a bytes list, not numbers"),
            _ => continue,
        };
        for v in wire::fields(list) {
            match (f.number, v.map_err(bad)?.value) {
                (2, Value::Fixed32(x)) => out.push(label::float(f32::from_bits(x))?),
                (2, Value::Bytes(packed)) if packed.len() % 4 == 0 => {
                    for c in packed.chunks_exact(4) {
                        out.push(label::float(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))?);
                    }
                }
                (3, Value::Varint(x)) => out.push(label::int(x as i64)?),
                (3, Value::Bytes(mut packed)) => {
                    while !packed.is_empty() {
                        let x = prost::encoding::decode_varint(&mut packed)
                            .map_err(|_| "a malformed int64 list")?;
                        out.push(label::int(x as i64)?);
                    }
                }
                _ => return Err("a malformed number list"),
            }
        }
    }
    if out.len() == start {
        return Err("an empty label list");
    }
    Ok(())
}

impl Dataset for TfRecordDataset {
    /// Where each file's records start.
    fn blocks(&self) -> Vec<usize> {
        self.starts.clone()
    }

    /// The records' offsets and lengths, and the keys read.
    fn fingerprint(&self) -> u64 {
        let keys = super::fingerprint_of(&self.image, core::iter::empty())
            ^ super::fingerprint_of(&self.label, core::iter::empty()).rotate_left(1);
        let records = self.records.iter().flat_map(|&(o, l)| [o, l]);
        // One file's fingerprint is its records'; several add where each starts.
        let starts = self.starts.iter().skip(1).map(|&s| s as u64);
        // Classification keeps the fingerprint it always had.
        let labels = match self.labels {
            Labels::Classification => None,
            Labels::ObjectDetection(o) => Some(1 + u64::from(o.masks)),
        };
        let values = core::iter::once(keys)
            .chain(labels)
            .chain(records)
            .chain(starts);
        super::fingerprint_of("tfrecord", values)
    }

    fn len(&self) -> usize {
        self.records.len()
    }

    fn describe(&self, index: usize) -> alloc::string::String {
        match (self.records.get(index), self.file_of(index)) {
            (Some((offset, _)), Some(path)) => {
                alloc::format!("{}: record at {offset}", path.display())
            }
            _ => alloc::format!("sample {index}"),
        }
    }

    /// The record: its 12-byte header, data and checksum.
    fn fetch_ahead(&self, index: usize) {
        if let Some(&(offset, n)) = self.records.get(index) {
            let (f, _) = locate(&self.starts, index);
            self.files.fetch_ahead(f, offset, n.saturating_add(16));
        }
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        sample.content = super::Content::Encoded;
        let (offset, n) = *self.records.get(index).ok_or(DataError::OutOfRange {
            index,
            len: self.records.len(),
        })?;
        let (f, _) = locate(&self.starts, index);
        let file = self.files.get(f)?;
        let path = self.files.path(f);
        let bad = |offset: u64, what: String| DataError::corrupt(FORMAT, path, offset, what);
        if n > super::MAX_SAMPLE_BYTES {
            return Err(bad(
                offset,
                alloc::format!(
                    "a record of {n} bytes (more than the samples' cap of {})",
                    super::MAX_SAMPLE_BYTES
                ),
            ));
        }
        let bytes = &mut sample.bytes;
        bytes.clear();
        // The data and its checksum.
        append_at(&file, path, FORMAT, offset + 12, n + 4, bytes)?;
        let crc = u32::from_le_bytes(bytes[n as usize..].try_into().expect("4 bytes"));
        bytes.truncate(n as usize);
        if masked_crc32c(bytes) != crc {
            return Err(bad(offset, "the data's checksum does not match".into()));
        }
        sample.labels.clear();
        sample.target = None;
        let (start, end) = match self.labels {
            Labels::Classification => find(bytes, (&self.image, &self.label), &mut sample.labels),
            Labels::ObjectDetection(options) => {
                let mut decoder = crate::decode::ImageDecoder::default();
                super::tf_detection::read(bytes, &self.image, options, &mut decoder).map(
                    |(range, target)| {
                        sample.target = Some(alloc::boxed::Box::new(target));
                        range
                    },
                )
            }
        }
        .map_err(|what| bad(offset, what))?;
        sample.id = index as u64;
        // The image moves to the front of the same buffer: no allocation.
        bytes.copy_within(start..end, 0);
        bytes.truncate(end - start);
        Ok(())
    }
}
