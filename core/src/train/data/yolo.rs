//! YOLO detection labels in Ultralytics' layout: `root/images/{split}/x.jpg`
//! with `root/labels/{split}/x.txt`, one object per line as
//! `class cx cy w h`, the box's centre and size normalised to the image
//! (0 to 1). One sample per image of `images/{split}` (the files
//! [`IMG_EXTENSIONS`](super::folder::IMG_EXTENSIONS) accepts, sorted by
//! name; sub-folders are not walked), with its [`Target`]: boxes in CXCYWH
//! float32 pixels (the normalised values times the image's width or height,
//! in float32), labels the class ids.
//!
//! The image's size is read from its header when the sample is read; it is
//! the upright size (EXIF orientation applied), as Ultralytics' `exif_size`
//! measures the images it labels, and the target says so
//! ([`Target::upright`]): a training plan turns it back onto the stored
//! pixels when its decode keeps them as stored, and leaves it when it
//! decodes with [`Orientation::Apply`], as Ultralytics does.
//!
//! An image without a label file has no objects, as in Ultralytics. Refused
//! at [`Yolo::open`], naming the label file and line: a line without five
//! fields (a segment's polygon included: they are not read), a field that
//! is not a finite number, a class that is not a whole number at least 0
//! (or not below [`YoloOptions::classes`] when given), a coordinate outside
//! `[0, 1]` by more than [`TOLERANCE`], a label file larger than
//! [`MAX_LABEL_BYTES`]. Refused when read: the image file (as
//! [`folder`](super::folder) refuses them) and a header that does not
//! parse.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::{Path, PathBuf};

use super::folder::FileFilter;
use super::{DataError, Dataset, Sample};
use crate::decode::ImageDecoder;
use crate::jpeg::{DecodeOptions, Orientation};
use crate::targets::{BoundingBoxes, BoxFormat, Canvas, Target};

/// How far outside `[0, 1]` a normalised coordinate may lie (label writers
/// round: `1.0000001`) and still be read, as written.
pub const TOLERANCE: f64 = 1e-5;

/// The largest label file read (4 MiB; a line per object).
pub const MAX_LABEL_BYTES: u64 = 4 << 20;

const FORMAT: &str = "YOLO labels";

/// How [`Yolo::open`] reads the labels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct YoloOptions {
    /// The number of classes (the dataset YAML's `nc`): a class id at or
    /// past it is an error. `None` (default): any id.
    pub classes: Option<u32>,
}

#[derive(Clone, Debug)]
struct Image {
    path: PathBuf,
    labels: Vec<i64>,
    /// Normalised `cx, cy, w, h`.
    boxes: Vec<[f32; 4]>,
}

/// A YOLO (Ultralytics) detection split.
#[derive(Clone, Debug)]
pub struct Yolo {
    images: Vec<Image>,
    fingerprint: u64,
}

impl Yolo {
    /// Lists `root/images/{split}` and reads each image's label file
    /// `root/labels/{split}/{stem}.txt` (absent: no objects).
    pub fn open(
        root: impl AsRef<Path>,
        split: &str,
        options: YoloOptions,
    ) -> Result<Yolo, DataError> {
        let root = root.as_ref();
        let dir = root.join("images").join(split);
        let labels_dir = root.join("labels").join(split);
        let filter = FileFilter::default();
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| DataError::io(&dir, e))? {
            let path = entry.map_err(|e| DataError::io(&dir, e))?.path();
            if path.is_file() && filter.accepts(&path) {
                files.push(path);
            }
        }
        files.sort();
        let mut images = Vec::with_capacity(files.len());
        let mut h = crate::Fnv1a64::new();
        h.update(b"yolo");
        for path in files {
            let stem = path.file_stem().unwrap_or_default();
            let mut name = stem.to_os_string();
            name.push(".txt");
            let label_file = labels_dir.join(name);
            let (labels, boxes) = labels(&label_file, &options)?;
            h.update(path.file_name().unwrap_or_default().as_encoded_bytes());
            h.update(&[0]);
            for (l, b) in labels.iter().zip(&boxes) {
                h.update(&l.to_le_bytes());
                for v in b {
                    h.update(&v.to_bits().to_le_bytes());
                }
            }
            images.push(Image {
                path,
                labels,
                boxes,
            });
        }
        Ok(Yolo {
            images,
            fingerprint: h.finish(),
        })
    }

    /// The image file of sample `index`.
    pub fn path(&self, index: usize) -> Option<&Path> {
        self.images.get(index).map(|im| im.path.as_path())
    }
}

type Labels = (Vec<i64>, Vec<[f32; 4]>);

/// Reads one label file; a missing one is no objects.
fn labels(path: &Path, options: &YoloOptions) -> Result<Labels, DataError> {
    let bytes = match crate::files::read_capped(path, MAX_LABEL_BYTES) {
        Ok(b) => b,
        Err(crate::files::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), Vec::new()));
        }
        Err(crate::files::ReadError::Io(e)) => return Err(DataError::io(path, e)),
        Err(crate::files::ReadError::TooLarge { .. }) => {
            return Err(DataError::corrupt(
                FORMAT,
                path,
                0,
                "larger than MAX_LABEL_BYTES (4 MiB)",
            ));
        }
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| DataError::corrupt(FORMAT, path, 0, "not UTF-8 text"))?;
    let (mut labels, mut boxes) = (Vec::new(), Vec::new());
    for (n, line) in text.lines().enumerate() {
        let bad = |what: String| {
            DataError::corrupt(
                FORMAT,
                path,
                n as u64 + 1,
                alloc::format!("line {}: {what}", n + 1),
            )
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        if fields.len() != 5 {
            return Err(bad(alloc::format!(
                "{} fields, not 5 (class cx cy w h; segments are not read)",
                fields.len()
            )));
        }
        let mut v = [0f64; 5];
        for (x, f) in v.iter_mut().zip(&fields) {
            *x = f
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(alloc::format!("{f:?} is not a finite number")))?;
        }
        let class = v[0];
        if class < 0.0 || class.fract() != 0.0 || class > f64::from(u32::MAX) {
            return Err(bad(alloc::format!(
                "class {} is not a whole number at least 0",
                fields[0]
            )));
        }
        if let Some(nc) = options.classes
            && class >= f64::from(nc)
        {
            return Err(bad(alloc::format!(
                "class {} is not below the {nc} classes",
                fields[0]
            )));
        }
        if let Some(i) = (1..5).find(|&i| !(-TOLERANCE..=1.0 + TOLERANCE).contains(&v[i])) {
            return Err(bad(alloc::format!(
                "{} is outside [0, 1]: not normalised",
                fields[i]
            )));
        }
        labels.push(class as i64);
        boxes.push([v[1] as f32, v[2] as f32, v[3] as f32, v[4] as f32]);
    }
    Ok((labels, boxes))
}

impl Dataset for Yolo {
    fn len(&self) -> usize {
        self.images.len()
    }

    fn describe(&self, index: usize) -> String {
        match self.images.get(index) {
            Some(im) => im.path.display().to_string(),
            None => alloc::format!("sample {index}"),
        }
    }

    /// The image names and their labels (not where the files lie).
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        DataError::check_index(index, self.images.len())?;
        let image = &self.images[index];
        super::folder::read_whole(&image.path, FORMAT, &mut sample.bytes)?;
        let options = DecodeOptions {
            orientation: Orientation::Apply,
            ..DecodeOptions::default()
        };
        let info = ImageDecoder::new(options)
            .read_info(&sample.bytes)
            .map_err(|e| DataError::corrupt(FORMAT, &image.path, 0, e.to_string()))?;
        let canvas = Canvas::new(info.height, info.width)
            .map_err(|e| DataError::corrupt(FORMAT, &image.path, 0, e.to_string()))?;
        let (w, h) = (info.width as f32, info.height as f32);
        let boxes = image
            .boxes
            .iter()
            .map(|b| [b[0] * w, b[1] * h, b[2] * w, b[3] * h])
            .collect();
        sample.content = super::Content::Encoded;
        sample.labels.clear();
        sample.id = index as u64;
        sample.target = Some(alloc::boxed::Box::new(Target {
            boxes: Some(BoundingBoxes::new(boxes, BoxFormat::Cxcywh, canvas)),
            labels: image.labels.clone(),
            upright: true,
            ..Target::default()
        }));
        Ok(())
    }
}
