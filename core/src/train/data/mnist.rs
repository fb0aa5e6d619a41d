//! MNIST and the datasets in its idx format (Fashion-MNIST, KMNIST), as
//! torchvision lays them out: `root/MNIST/raw/train-images-idx3-ubyte`,
//! `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`,
//! `t10k-labels-idx1-ubyte` (uncompressed), and `FashionMNIST/raw/`,
//! `KMNIST/raw/` alike.
//!
//! - An images file: the magic `0x00000803` (unsigned bytes, 3 dimensions),
//!   the count, rows and columns (big-endian `u32`s), then the images, rows
//!   top to bottom.
//! - A labels file: the magic `0x00000801`, the count, then one byte per
//!   image (0 to 9).
//!
//! Both files are checked at open: the magic numbers, a file length that is
//! exactly its header plus what its dimensions state (nothing missing,
//! nothing after; the check is on the numbers the header states, before
//! anything is allocated), and the same count in both. A sample is
//! [`Content::Pixels`] in [`PixelFormat::Gray8`], read as it is asked for;
//! a label past 9 is an error naming the file and offset.

use super::DataFile;
use alloc::string::String;
use std::path::{Path, PathBuf};

use super::cifar::Split;
use super::{Content, DataError, Dataset, Sample, append_at, open_file, read_at};
use crate::PixelFormat;

const FORMAT: &str = "MNIST idx";

/// The images file's magic number: unsigned bytes, 3 dimensions.
pub const IMAGES_MAGIC: u32 = 0x0000_0803;

/// The labels file's magic number: unsigned bytes, 1 dimension.
pub const LABELS_MAGIC: u32 = 0x0000_0801;

/// The number of classes of every dataset in this format read here.
pub const CLASSES: u8 = 10;

/// Which dataset of the idx family: the folder torchvision keeps it in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Variant {
    /// MNIST's handwritten digits (`MNIST/raw/`).
    #[default]
    Mnist,
    /// Zalando's Fashion-MNIST (`FashionMNIST/raw/`).
    Fashion,
    /// Kuzushiji-MNIST (`KMNIST/raw/`).
    Kmnist,
}

impl Variant {
    /// The folder under a root that holds the files (`raw/` inside it), as
    /// torchvision names it.
    pub const fn folder(self) -> &'static str {
        match self {
            Variant::Mnist => "MNIST",
            Variant::Fashion => "FashionMNIST",
            Variant::Kmnist => "KMNIST",
        }
    }
}

/// An idx images file and its labels file.
///
/// ```
/// use tensorprep::train::data::cifar::Split;
/// use tensorprep::train::data::mnist::{Mnist, Variant};
/// use tensorprep::train::data::{Content, Dataset, Sample};
///
/// // The root holds `FashionMNIST/raw/`, as torchvision downloads it (the
/// // real test split: 10,000 images).
/// let test = Mnist::open("../tests/fixtures/mnist", Variant::Fashion, Split::Test)?;
/// assert_eq!(test.len(), 2);
/// let mut sample = Sample::default();
/// test.read(0, &mut sample)?;
/// assert!(matches!(sample.content, Content::Pixels { width: 28, height: 28, .. }));
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
#[derive(Debug)]
pub struct Mnist {
    images: (PathBuf, DataFile),
    labels: (PathBuf, DataFile),
    len: usize,
    width: u32,
    height: u32,
    /// The variant and split (when opened by them) and both files'
    /// [`super::file_identity`]: what the fingerprint tells apart.
    identity: [u64; 4],
}

impl Mnist {
    /// Opens `split` of `variant` under `root`: the files in
    /// `root/<variant folder>/raw/` when that folder exists, otherwise in
    /// `root` itself (the folder MindSpore's `MnistDataset` is given).
    pub fn open(
        root: impl AsRef<Path>,
        variant: Variant,
        split: Split,
    ) -> Result<Mnist, DataError> {
        let root = root.as_ref();
        let raw = root.join(variant.folder()).join("raw");
        let dir = if raw.is_dir() {
            raw
        } else {
            root.to_path_buf()
        };
        let prefix = match split {
            Split::Train => "train",
            Split::Test => "t10k",
        };
        let mut d = Mnist::open_files(
            dir.join(alloc::format!("{prefix}-images-idx3-ubyte")),
            dir.join(alloc::format!("{prefix}-labels-idx1-ubyte")),
        )?;
        d.identity[0] = 1 + variant as u64;
        d.identity[1] = 1 + split as u64;
        Ok(d)
    }

    /// Opens an images file and its labels file.
    pub fn open_files(
        images: impl AsRef<Path>,
        labels: impl AsRef<Path>,
    ) -> Result<Mnist, DataError> {
        let (images, labels) = (images.as_ref(), labels.as_ref());
        let (image_file, image_size) = open_file(images)?;
        let (label_file, label_size) = open_file(labels)?;
        let mut head = [0u8; 16];
        let [magic, count, rows, cols] = header(&image_file, images, image_size, &mut head)?;
        let corrupt = |path, offset, what: String| DataError::corrupt(FORMAT, path, offset, what);
        if magic != IMAGES_MAGIC {
            return Err(corrupt(
                images,
                0,
                alloc::format!(
                    "magic {magic:#010x}, not {IMAGES_MAGIC:#010x} (unsigned bytes, 3 dimensions)"
                ),
            ));
        }
        let limit = crate::Limits::MAX_DIMENSION;
        if rows == 0 || cols == 0 || rows > limit || cols > limit {
            return Err(corrupt(
                images,
                8,
                alloc::format!("images of {rows} x {cols} (each side 1 to {limit})"),
            ));
        }
        let per_image = u64::from(rows) * u64::from(cols);
        if per_image > super::MAX_SAMPLE_BYTES {
            return Err(corrupt(
                images,
                8,
                alloc::format!(
                    "images of {rows} x {cols}: more than {} bytes each",
                    super::MAX_SAMPLE_BYTES
                ),
            ));
        }
        // At most 2^32 x 2^28: no overflow.
        let want = 16 + u64::from(count) * per_image;
        if image_size != want {
            return Err(corrupt(
                images,
                4,
                alloc::format!(
                    "{count} images of {rows} x {cols} need {want} bytes; the file has {image_size}"
                ),
            ));
        }
        let [magic, label_count] = header(&label_file, labels, label_size, &mut head)?;
        if magic != LABELS_MAGIC {
            return Err(corrupt(
                labels,
                0,
                alloc::format!(
                    "magic {magic:#010x}, not {LABELS_MAGIC:#010x} (unsigned bytes, 1 dimension)"
                ),
            ));
        }
        if label_size != 8 + u64::from(label_count) {
            return Err(corrupt(
                labels,
                4,
                alloc::format!(
                    "{label_count} labels need {} bytes; the file has {label_size}",
                    8 + u64::from(label_count)
                ),
            ));
        }
        if label_count != count {
            return Err(corrupt(
                labels,
                4,
                alloc::format!(
                    "{label_count} labels for the {count} images of {}",
                    images.display()
                ),
            ));
        }
        let len = usize::try_from(count).map_err(|_| DataError::Invalid {
            what: "more images than this machine indexes".into(),
        })?;
        let identity = [
            0,
            0,
            super::file_identity(images, &image_file, image_size)?,
            super::file_identity(labels, &label_file, label_size)?,
        ];
        Ok(Mnist {
            images: (images.to_path_buf(), image_file),
            labels: (labels.to_path_buf(), label_file),
            len,
            width: cols,
            height: rows,
            identity,
        })
    }

    /// The images' width and height.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn image_offset(&self, index: usize) -> u64 {
        16 + index as u64 * u64::from(self.width) * u64::from(self.height)
    }
}

/// The first `N` big-endian `u32`s of a file of `size` bytes.
fn header<const N: usize>(
    file: &DataFile,
    path: &Path,
    size: u64,
    buf: &mut [u8; 16],
) -> Result<[u32; N], DataError> {
    let len = 4 * N;
    if size < len as u64 {
        return Err(DataError::corrupt(
            FORMAT,
            path,
            size,
            alloc::format!("{size} bytes: shorter than its {len}-byte header"),
        ));
    }
    read_at(file, &mut buf[..len], 0).map_err(|e| DataError::io(path, e))?;
    let mut out = [0u32; N];
    for (k, v) in out.iter_mut().enumerate() {
        *v = u32::from_be_bytes([buf[4 * k], buf[4 * k + 1], buf[4 * k + 2], buf[4 * k + 3]]);
    }
    Ok(out)
}

impl Dataset for Mnist {
    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        DataError::check_index(index, self.len)?;
        let (path, file) = &self.labels;
        let at = 8 + index as u64;
        let mut label = [0u8];
        read_at(file, &mut label, at).map_err(|e| DataError::io(path, e))?;
        if label[0] >= CLASSES {
            return Err(DataError::corrupt(
                FORMAT,
                path,
                at,
                alloc::format!("label {} of a dataset of {CLASSES} classes", label[0]),
            ));
        }
        let (path, file) = &self.images;
        let len = u64::from(self.width) * u64::from(self.height);
        sample.bytes.clear();
        append_at(
            file,
            path,
            FORMAT,
            self.image_offset(index),
            len,
            &mut sample.bytes,
        )?;
        sample.content = Content::Pixels {
            width: self.width,
            height: self.height,
            format: PixelFormat::Gray8,
        };
        sample.labels.clear();
        sample.labels.push(f32::from(label[0]));
        sample.id = index as u64;
        Ok(())
    }

    fn describe(&self, index: usize) -> String {
        alloc::format!(
            "{}: image {index} at {}",
            self.images.0.display(),
            self.image_offset(index)
        )
    }

    fn fingerprint(&self) -> u64 {
        super::fingerprint_of(
            "mnist",
            [
                self.len as u64,
                u64::from(self.width),
                u64::from(self.height),
            ]
            .into_iter()
            .chain(self.identity),
        )
    }
}
