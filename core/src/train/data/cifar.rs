//! CIFAR-10 and CIFAR-100, binary version (the files MindSpore's
//! `Cifar10Dataset` and `Cifar100Dataset` read).
//!
//! - CIFAR-10 (`cifar-10-batches-bin/`): `data_batch_1.bin` to
//!   `data_batch_5.bin` (train, in that order) and `test_batch.bin`; a
//!   record is 1 label byte (0 to 9) then 3072 pixel bytes.
//! - CIFAR-100 (`cifar-100-binary/`): `train.bin` and `test.bin`; a record
//!   is the coarse label byte (0 to 19), the fine label byte (0 to 99), then
//!   3072 pixel bytes.
//!
//! The pixels are 32 x 32, stored as three planes (red, green, blue), rows
//! top to bottom. A sample holds them interleaved: [`Content::Pixels`] in
//! [`PixelFormat::Rgb8`], the array torchvision's `CIFAR10` gives (it
//! transposes the planes the same way). Records are read as they are asked
//! for (3 KiB each): nothing is held in memory but the open files.
//!
//! A file whose length is not a whole number of records, a label past the
//! classes, and a missing file are errors naming the file (and the
//! record's offset); nothing is skipped.
//!
//! Labels: CIFAR-100's label is the fine one by default, as torchvision's
//! `CIFAR100` gives it; MindSpore's `Cifar100Dataset` gives both columns,
//! coarse then fine: [`Cifar100Label`] chooses.

use super::DataFile;
use alloc::string::String;
use alloc::vec::Vec;
use std::path::{Path, PathBuf};

use super::{Content, DataError, Dataset, Sample, open_file, read_at};
use crate::PixelFormat;

const FORMAT: &str = "CIFAR";

/// A CIFAR image's side.
pub const SIDE: u32 = 32;

/// Pixel bytes per record (3 planes of 32 x 32).
pub const PIXEL_BYTES: usize = 3 * (SIDE * SIDE) as usize;

/// The most records a file may hold (CIFAR-100's `train.bin` holds 50,000):
/// a longer file is refused at open.
pub const MAX_RECORDS: u64 = 1 << 20;

/// Which part of a dataset (torchvision's `train=True` / `False`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Split {
    /// The training images.
    #[default]
    Train,
    /// The test images.
    Test,
}

/// CIFAR-100's label(s) per sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cifar100Label {
    /// The fine label (0 to 99), as torchvision's `CIFAR100`.
    #[default]
    Fine,
    /// The coarse label (0 to 19).
    Coarse,
    /// Both, coarse then fine, as MindSpore's `Cifar100Dataset` columns.
    Both,
}

/// One data file: its records.
#[derive(Debug)]
struct Part {
    path: PathBuf,
    file: DataFile,
    records: u64,
    /// [`super::file_identity`]: its name, length and first bytes.
    identity: u64,
}

/// Records of one layout over several files.
#[derive(Debug)]
struct Records {
    parts: Vec<Part>,
    /// Label bytes before the pixels (1 or 2).
    label_bytes: usize,
    /// The number of classes of each label byte.
    classes: [u8; 2],
    len: usize,
}

impl Records {
    fn open(
        dir: &Path,
        names: &[&str],
        label_bytes: usize,
        classes: [u8; 2],
    ) -> Result<Records, DataError> {
        let record = (label_bytes + PIXEL_BYTES) as u64;
        let mut parts = Vec::new();
        let mut len = 0u64;
        for name in names {
            let path = dir.join(name);
            let (file, size) = open_file(&path)?;
            if size == 0 || size % record != 0 || size / record > MAX_RECORDS {
                return Err(DataError::corrupt(
                    FORMAT,
                    &path,
                    size - size % record,
                    alloc::format!(
                        "{size} bytes is not a whole number of {record}-byte records \
                         (1 to {MAX_RECORDS} of them)"
                    ),
                ));
            }
            len += size / record;
            let identity = super::file_identity(&path, &file, size)?;
            parts.push(Part {
                path,
                file,
                records: size / record,
                identity,
            });
        }
        let len = usize::try_from(len).map_err(|_| DataError::Invalid {
            what: "more CIFAR records than this machine indexes".into(),
        })?;
        Ok(Records {
            parts,
            label_bytes,
            classes,
            len,
        })
    }

    fn record_len(&self) -> u64 {
        (self.label_bytes + PIXEL_BYTES) as u64
    }

    /// The part and record number of sample `index`.
    fn locate(&self, index: usize) -> Result<(&Part, u64), DataError> {
        DataError::check_index(index, self.len)?;
        let mut i = index as u64;
        for part in &self.parts {
            if i < part.records {
                return Ok((part, i));
            }
            i -= part.records;
        }
        // `len` is the parts' records summed at open: not reached.
        Err(DataError::Invalid {
            what: alloc::format!("CIFAR sample {index} past its parts"),
        })
    }

    /// Reads sample `index`: its label bytes into `labels`, its pixels,
    /// interleaved, into `sample`.
    fn read(
        &self,
        index: usize,
        sample: &mut Sample,
        labels: &mut [u8; 2],
    ) -> Result<(), DataError> {
        let (part, record) = self.locate(index)?;
        let offset = record * self.record_len();
        let mut raw = [0u8; 2 + PIXEL_BYTES];
        let raw = &mut raw[..self.record_len() as usize];
        read_at(&part.file, raw, offset).map_err(|e| DataError::io(&part.path, e))?;
        let (head, planes) = raw.split_at(self.label_bytes);
        let wide = [
            i64::from(head[0]),
            head.get(1).copied().map_or(0, i64::from),
        ];
        convert(&wide[..self.label_bytes], &self.classes, planes, sample).map_err(|k| {
            DataError::corrupt(
                FORMAT,
                &part.path,
                offset + k as u64,
                alloc::format!(
                    "label {} of a dataset of {} classes",
                    head[k],
                    self.classes[k]
                ),
            )
        })?;
        labels[..head.len()].copy_from_slice(head);
        sample.id = index as u64;
        Ok(())
    }

    fn describe(&self, index: usize) -> String {
        match self.locate(index) {
            Ok((part, record)) => alloc::format!(
                "{}: record {record} at {}",
                part.path.display(),
                record * self.record_len()
            ),
            Err(_) => alloc::format!("sample {index}"),
        }
    }

    /// Each file's records and identity (name, length, first bytes: the
    /// split and the copy), after `name` and `extra`.
    fn fingerprint(&self, name: &str, extra: u64) -> u64 {
        let parts = self.parts.iter().flat_map(|p| [p.records, p.identity]);
        super::fingerprint_of(name, core::iter::once(extra).chain(parts))
    }
}

/// One record made a sample, the binary version's and the Python
/// version's alike: its `labels` checked against `classes` (one count per
/// label; the error is the index of the first label outside its classes)
/// and its three `planes` interleaved into `sample` as RGB pixels.
fn convert(
    labels: &[i64],
    classes: &[u8],
    planes: &[u8],
    sample: &mut Sample,
) -> Result<(), usize> {
    if let Some(k) = (0..labels.len()).find(|&k| !(0..i64::from(classes[k])).contains(&labels[k])) {
        return Err(k);
    }
    planar_to_rgb(planes, &mut sample.bytes);
    sample.content = Content::Pixels {
        width: SIDE,
        height: SIDE,
        format: PixelFormat::Rgb8,
    };
    Ok(())
}

/// The classes of CIFAR-10's label (one column).
pub const CIFAR10_CLASSES: &[u8] = &[10];

/// The classes of CIFAR-100's labels: coarse, fine.
pub const CIFAR100_CLASSES: &[u8] = &[20, 100];

/// CIFAR's Python version, unpickled: one batch `file`'s `rows` (its
/// `data`, 3072 planar bytes per image, as a binary record's pixels) and
/// its label `columns` (one list per label, one label per image), each
/// label checked against its column's `classes` and each image made a
/// sample as a binary record is (the one conversion for both), labelled
/// with its columns' labels in order and numbered from `first_id`.
///
/// A length that is not a whole number of rows, a column of another count
/// and a label outside its classes are errors naming the file and record.
///
/// ```
/// use tensorprep::train::data::cifar::{CIFAR10_CLASSES, samples_from_rows};
/// use tensorprep::train::data::Content;
///
/// let rows = vec![7u8; 2 * 3072];
/// let labels = [3i64, 9];
/// let samples = samples_from_rows("data_batch_1".as_ref(), &rows, &[&labels], CIFAR10_CLASSES, 0)?;
/// assert_eq!((samples[1].labels.as_slice(), samples[1].id), (&[9.0][..], 1));
/// assert!(matches!(samples[0].content, Content::Pixels { width: 32, height: 32, .. }));
/// let bad = [3i64, 10];
/// assert!(samples_from_rows("data_batch_1".as_ref(), &rows, &[&bad], CIFAR10_CLASSES, 0).is_err());
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
pub fn samples_from_rows(
    file: &Path,
    rows: &[u8],
    columns: &[&[i64]],
    classes: &[u8],
    first_id: u64,
) -> Result<Vec<Sample>, DataError> {
    let corrupt =
        |offset: usize, what: String| DataError::corrupt(FORMAT, file, offset as u64, what);
    if !rows.len().is_multiple_of(PIXEL_BYTES) {
        return Err(corrupt(
            rows.len() - rows.len() % PIXEL_BYTES,
            alloc::format!(
                "{} bytes of data: not whole {PIXEL_BYTES}-byte images",
                rows.len()
            ),
        ));
    }
    let count = rows.len() / PIXEL_BYTES;
    if columns.len() != classes.len() {
        return Err(DataError::Invalid {
            what: alloc::format!(
                "{} label columns for {} labels",
                columns.len(),
                classes.len()
            ),
        });
    }
    if let Some(c) = columns.iter().find(|c| c.len() != count) {
        return Err(corrupt(
            0,
            alloc::format!("{count} images and {} labels", c.len()),
        ));
    }
    let mut samples = Vec::new();
    samples
        .try_reserve_exact(count)
        .map_err(|_| corrupt(0, alloc::format!("no memory for {count} samples")))?;
    let mut labels = Vec::with_capacity(columns.len());
    for (i, planes) in rows.chunks_exact(PIXEL_BYTES).enumerate() {
        labels.clear();
        labels.extend(columns.iter().map(|c| c[i]));
        let mut sample = Sample {
            id: first_id + i as u64,
            ..Sample::default()
        };
        convert(&labels, classes, planes, &mut sample).map_err(|k| {
            corrupt(
                i * PIXEL_BYTES,
                alloc::format!(
                    "record {i}: label {} of a dataset of {} classes",
                    labels[k],
                    classes[k]
                ),
            )
        })?;
        // Below 100: exact in f32.
        sample.labels = labels.iter().map(|&l| l as f32).collect();
        samples.push(sample);
    }
    Ok(samples)
}

/// Interleaves three 32 x 32 planes into RGB pixels in `out` (replaced).
fn planar_to_rgb(planes: &[u8], out: &mut Vec<u8>) {
    let n = (SIDE * SIDE) as usize;
    let (r, rest) = planes.split_at(n);
    let (g, b) = rest.split_at(n);
    out.clear();
    out.extend(r.iter().zip(g).zip(b).flat_map(|((&r, &g), &b)| [r, g, b]));
}

/// The folder holding a dataset's files: `root/<name>` when it exists (the
/// archive's own folder, under a root as torchvision lays it out),
/// otherwise `root` itself (the folder MindSpore's readers are given).
fn folder(root: &Path, name: &str) -> PathBuf {
    let inner = root.join(name);
    if inner.is_dir() {
        inner
    } else {
        root.to_path_buf()
    }
}

/// CIFAR-10, binary version.
///
/// ```
/// use tensorprep::train::data::cifar::{Cifar10, Split};
/// use tensorprep::train::data::{Content, Dataset, Sample};
///
/// // The root holds `cifar-10-batches-bin/` (the real one: 50,000 images).
/// let train = Cifar10::open("../tests/fixtures/cifar", Split::Train)?;
/// assert_eq!(train.len(), 6);
/// let mut sample = Sample::default();
/// train.read(0, &mut sample)?;
/// assert!(matches!(sample.content, Content::Pixels { width: 32, height: 32, .. }));
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
#[derive(Debug)]
pub struct Cifar10 {
    records: Records,
}

impl Cifar10 {
    /// The folder under a root that holds the files.
    pub const FOLDER: &'static str = "cifar-10-batches-bin";

    /// Opens `split` of the files in `root/cifar-10-batches-bin/` (or in
    /// `root` itself): every file is checked to hold whole records.
    pub fn open(root: impl AsRef<Path>, split: Split) -> Result<Cifar10, DataError> {
        let dir = folder(root.as_ref(), Self::FOLDER);
        let names: &[&str] = match split {
            Split::Train => &[
                "data_batch_1.bin",
                "data_batch_2.bin",
                "data_batch_3.bin",
                "data_batch_4.bin",
                "data_batch_5.bin",
            ],
            Split::Test => &["test_batch.bin"],
        };
        Ok(Cifar10 {
            records: Records::open(&dir, names, 1, [10, 0])?,
        })
    }
}

impl Dataset for Cifar10 {
    fn len(&self) -> usize {
        self.records.len
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        let mut labels = [0u8; 2];
        self.records.read(index, sample, &mut labels)?;
        sample.labels.clear();
        sample.labels.push(f32::from(labels[0]));
        Ok(())
    }

    fn describe(&self, index: usize) -> String {
        self.records.describe(index)
    }

    fn fingerprint(&self) -> u64 {
        self.records.fingerprint("cifar10", 0)
    }
}

/// CIFAR-100, binary version.
#[derive(Debug)]
pub struct Cifar100 {
    records: Records,
    label: Cifar100Label,
}

impl Cifar100 {
    /// The folder under a root that holds the files.
    pub const FOLDER: &'static str = "cifar-100-binary";

    /// Opens `split` of the files in `root/cifar-100-binary/` (or in `root`
    /// itself), each sample labelled as `label` says.
    pub fn open(
        root: impl AsRef<Path>,
        split: Split,
        label: Cifar100Label,
    ) -> Result<Cifar100, DataError> {
        let dir = folder(root.as_ref(), Self::FOLDER);
        let name = match split {
            Split::Train => "train.bin",
            Split::Test => "test.bin",
        };
        Ok(Cifar100 {
            records: Records::open(&dir, &[name], 2, [20, 100])?,
            label,
        })
    }
}

impl Dataset for Cifar100 {
    fn len(&self) -> usize {
        self.records.len
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        let mut labels = [0u8; 2];
        self.records.read(index, sample, &mut labels)?;
        let [coarse, fine] = labels.map(f32::from);
        sample.labels.clear();
        match self.label {
            Cifar100Label::Fine => sample.labels.push(fine),
            Cifar100Label::Coarse => sample.labels.push(coarse),
            Cifar100Label::Both => sample.labels.extend([coarse, fine]),
        }
        Ok(())
    }

    fn describe(&self, index: usize) -> String {
        self.records.describe(index)
    }

    fn fingerprint(&self) -> u64 {
        let label = match self.label {
            Cifar100Label::Fine => 0,
            Cifar100Label::Coarse => 1,
            Cifar100Label::Both => 2,
        };
        self.records.fingerprint("cifar100", label)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn planes_interleave() {
        let n = 1024;
        let planes: alloc::vec::Vec<u8> = (0..3 * n)
            .map(|i| (i / n * 100 + i % n % 7) as u8)
            .collect();
        let mut out = alloc::vec::Vec::new();
        super::planar_to_rgb(&planes, &mut out);
        assert_eq!(out.len(), 3 * n);
        assert_eq!(&out[..6], &[0, 100, 200, 1, 101, 201]);
        assert_eq!(&out[3 * 9..3 * 10], &[2, 102, 202]);
    }
}
