//! Pascal VOC detection: the VOCdevkit layout
//! (`VOC{year}/ImageSets/Main/{image_set}.txt` listing ids,
//! `VOC{year}/Annotations/{id}.xml`, `VOC{year}/JPEGImages/{id}.jpg`), one
//! sample per listed id in the list's order, with its [`Target`]: XYXY
//! float32 boxes on the `<size>` the XML states, labels, `difficult`.
//!
//! Labels number [`VOC_CLASSES`], the devkit's 20 classes in its own order
//! (`VOCopts.classes` of `VOCinit.m`, alphabetical), from
//! [`VocOptions::first_label`]: 0 by default, as MindSpore's `VOCDataset`
//! numbers the classes sorted by name; 1 leaves 0 to the background, as
//! torchvision's detection references and the devkit's segmentation masks
//! count.
//!
//! Boxes are, by default, the file's numbers as they are
//! ([`VocCoordinates::AsStored`]: 1-based, inclusive pixel indices, what
//! torchvision's `VOCDetection` and MindSpore's `VOCDataset` give);
//! [`VocCoordinates::ZeroBased`] makes them 0-based XYXY edges
//! (`xmin - 1, ymin - 1, xmax, ymax`).
//!
//! All annotations are read at [`Voc::open`]. Refused there, naming the file
//! (and the line of the list, or the object's index in its XML): a list or
//! annotation larger than its cap, an id that is not a plain file name, XML
//! that does not parse or ends with elements open, a missing or bad
//! `<size>`, an object without `<name>` or `<bndbox>`, a class not in
//! [`VOC_CLASSES`], a coordinate that is not a finite number, a box whose
//! maximum is below its minimum, `difficult` other than 0 or 1. An image
//! file is refused when read, as [`folder`](super::folder) refuses them.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::{Path, PathBuf};

use quick_xml::Reader;
use quick_xml::events::Event;

use super::{DataError, Dataset, Sample};
use crate::targets::{BoundingBoxes, BoxFormat, Canvas, Target};

/// The 20 classes in the devkit's order (`VOCinit.m`); label `i` (from
/// [`VocOptions::first_label`]) is `VOC_CLASSES[i - first_label]`.
pub const VOC_CLASSES: [&str; 20] = [
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
];

/// The largest image-set list read (16 MiB; VOC 2012's largest is 160 KB).
pub const MAX_LIST_BYTES: u64 = 16 << 20;

/// The largest annotation file read (1 MiB; VOC's are a few KB).
pub const MAX_XML_BYTES: u64 = 1 << 20;

const FORMAT: &str = "Pascal VOC";

/// How a VOC box's numbers become the target's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum VocCoordinates {
    /// As the file states them: 1-based, inclusive pixel indices.
    #[default]
    AsStored,
    /// 0-based edges: `xmin - 1, ymin - 1, xmax, ymax`.
    ZeroBased,
}

/// How [`Voc::open`] reads the annotations.
///
/// Its fields are public and it has a [`Default`]: set the ones you need
/// and take the rest with `..VocOptions::default()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VocOptions {
    /// Keep the objects marked difficult (with `difficult` 1): true by
    /// default, as torchvision's `VOCDetection` keeps them.
    pub keep_difficult: bool,
    /// The boxes' convention.
    pub coordinates: VocCoordinates,
    /// The label of [`VOC_CLASSES`]`[0]`: 0 (default) or 1.
    pub first_label: i64,
}

impl Default for VocOptions {
    fn default() -> Self {
        VocOptions {
            keep_difficult: true,
            coordinates: VocCoordinates::AsStored,
            first_label: 0,
        }
    }
}

#[derive(Clone, Debug)]
struct Image {
    id: String,
    canvas: Canvas,
    boxes: Vec<[f32; 4]>,
    labels: Vec<i64>,
    difficult: Vec<u8>,
}

/// A Pascal VOC detection set.
#[derive(Clone, Debug)]
pub struct Voc {
    images_dir: PathBuf,
    images: Vec<Image>,
    fingerprint: u64,
}

impl Voc {
    /// Lists `root/VOC{year}/ImageSets/Main/{image_set}.txt` and reads each
    /// listed id's annotation (`root` is the `VOCdevkit` folder).
    pub fn open(
        root: impl AsRef<Path>,
        year: &str,
        image_set: &str,
        options: VocOptions,
    ) -> Result<Voc, DataError> {
        let base = root.as_ref().join(alloc::format!("VOC{year}"));
        let list = base
            .join("ImageSets")
            .join("Main")
            .join(alloc::format!("{image_set}.txt"));
        let text = super::read_index(&list, FORMAT, MAX_LIST_BYTES)?;
        let mut images = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let id = line.trim();
            if id.is_empty() {
                continue;
            }
            let plain = Path::new(id)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
                && !id.contains(['/', '\\']);
            if !plain {
                return Err(DataError::corrupt(
                    FORMAT,
                    &list,
                    n as u64 + 1,
                    alloc::format!("line {}: id {id:?} is not a plain file name", n + 1),
                ));
            }
            let xml = base.join("Annotations").join(alloc::format!("{id}.xml"));
            images.push(annotation(&xml, id, &options)?);
        }
        let mut h = crate::Fnv1a64::new();
        h.update(b"voc");
        h.update(&[u8::from(options.keep_difficult), options.coordinates as u8]);
        h.update(&options.first_label.to_le_bytes());
        for im in &images {
            h.update(im.id.as_bytes());
            h.update(&[0]);
            for (b, l) in im.boxes.iter().zip(&im.labels) {
                for v in b {
                    h.update(&v.to_bits().to_le_bytes());
                }
                h.update(&l.to_le_bytes());
            }
        }
        Ok(Voc {
            images_dir: base.join("JPEGImages"),
            images,
            fingerprint: h.finish(),
        })
    }

    /// The id (file stem) of sample `index`.
    pub fn id(&self, index: usize) -> Option<&str> {
        self.images.get(index).map(|im| im.id.as_str())
    }

    fn image_path(&self, image: &Image) -> PathBuf {
        self.images_dir.join(alloc::format!("{}.jpg", image.id))
    }
}

/// One object as the XML gives it.
#[derive(Default)]
struct Object {
    name: Option<String>,
    difficult: Option<String>,
    bndbox: [Option<String>; 4],
}

/// Reads one annotation file.
fn annotation(path: &Path, id: &str, options: &VocOptions) -> Result<Image, DataError> {
    let bytes = crate::files::read_capped(path, MAX_XML_BYTES).map_err(|e| match e {
        crate::files::ReadError::TooLarge { .. } => {
            DataError::corrupt(FORMAT, path, 0, "larger than MAX_XML_BYTES (1 MiB)")
        }
        crate::files::ReadError::Io(e) => DataError::io(path, e),
    })?;
    let bad = |at: u64, what: String| DataError::corrupt(FORMAT, path, at, what);
    let text = String::from_utf8(bytes).map_err(|_| bad(0, "not UTF-8 text".into()))?;
    let mut reader = Reader::from_str(&text);
    let mut stack: Vec<String> = Vec::new();
    let (mut width, mut height) = (None::<String>, None::<String>);
    let mut objects: Vec<Object> = Vec::new();
    loop {
        let at = reader.buffer_position();
        let event = reader
            .read_event()
            .map_err(|e| bad(at, alloc::format!("bad XML: {e}")))?;
        match event {
            Event::Start(e) => {
                let name = e.name().as_ref().to_string();
                if name == "object" && stack.len() == 1 {
                    objects.push(Object::default());
                }
                if stack.len() > 64 {
                    return Err(bad(at, "elements nested deeper than 64".into()));
                }
                stack.push(name);
            }
            Event::End(_) => {
                stack.pop();
            }
            Event::Text(t) => {
                let path: Vec<&str> = stack.iter().map(String::as_str).collect();
                let value = t.into_inner().trim().to_string();
                if value.is_empty() {
                    continue;
                }
                let slot = match path.as_slice() {
                    [_, "size", "width"] => &mut width,
                    [_, "size", "height"] => &mut height,
                    [_, "object", field, rest @ ..] => {
                        let Some(o) = objects.last_mut() else {
                            continue;
                        };
                        match (*field, rest) {
                            ("name", []) => &mut o.name,
                            ("difficult", []) => &mut o.difficult,
                            ("bndbox", [c]) => {
                                match ["xmin", "ymin", "xmax", "ymax"].iter().position(|k| k == c) {
                                    Some(i) => &mut o.bndbox[i],
                                    None => continue,
                                }
                            }
                            _ => continue,
                        }
                    }
                    _ => continue,
                };
                if slot.is_some() {
                    return Err(bad(at, alloc::format!("<{}> given twice", path.join("/"))));
                }
                *slot = Some(value);
            }
            Event::GeneralRef(_) if stack.len() > 1 => {
                return Err(bad(at, "an entity reference inside a field".into()));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(bad(
            text.len() as u64,
            alloc::format!("the file ends inside <{}>", stack.join("><")),
        ));
    }
    let side = |v: &Option<String>, name: &str| {
        v.as_deref()
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or_else(|| bad(0, alloc::format!("no <size><{name}> of a whole number")))
    };
    let (w, h) = (side(&width, "width")?, side(&height, "height")?);
    let canvas = Canvas::new(h, w).map_err(|e| bad(0, alloc::format!("<size>: {e}")))?;
    let mut image = Image {
        id: id.to_string(),
        canvas,
        boxes: Vec::new(),
        labels: Vec::new(),
        difficult: Vec::new(),
    };
    for (i, o) in objects.iter().enumerate() {
        let what = |w: &str| bad(0, alloc::format!("object {i}: {w}"));
        let name = o.name.as_deref().ok_or_else(|| what("no <name>"))?;
        let class = VOC_CLASSES
            .iter()
            .position(|c| *c == name)
            .ok_or_else(|| what(&alloc::format!("class {name:?} is not one of VOC's 20")))?;
        let difficult = match o.difficult.as_deref() {
            None | Some("0") => 0,
            Some("1") => 1,
            Some(d) => return Err(what(&alloc::format!("difficult {d:?} is not 0 or 1"))),
        };
        let mut b = [0f32; 4];
        for (v, (s, key)) in b
            .iter_mut()
            .zip(o.bndbox.iter().zip(["xmin", "ymin", "xmax", "ymax"]))
        {
            let s = s
                .as_deref()
                .ok_or_else(|| what(&alloc::format!("no <bndbox><{key}>")))?;
            *v = s
                .parse::<f64>()
                .ok()
                .map(|x| x as f32)
                .filter(|x| x.is_finite())
                .ok_or_else(|| what(&alloc::format!("<{key}> {s:?} is not a finite number")))?;
        }
        if b[2] < b[0] || b[3] < b[1] {
            return Err(what("a box whose max is below its min"));
        }
        if difficult == 1 && !options.keep_difficult {
            continue;
        }
        if options.coordinates == VocCoordinates::ZeroBased {
            b[0] -= 1.0;
            b[1] -= 1.0;
        }
        image.boxes.push(b);
        image.labels.push(class as i64 + options.first_label);
        image.difficult.push(difficult);
    }
    Ok(image)
}

impl Dataset for Voc {
    fn len(&self) -> usize {
        self.images.len()
    }

    fn describe(&self, index: usize) -> String {
        match self.images.get(index) {
            Some(im) => alloc::format!("{} (VOC id {})", self.image_path(im).display(), im.id),
            None => alloc::format!("sample {index}"),
        }
    }

    /// The ids, boxes, labels and options (not where the files lie).
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        DataError::check_index(index, self.images.len())?;
        let image = &self.images[index];
        super::folder::read_whole(&self.image_path(image), FORMAT, &mut sample.bytes)?;
        sample.content = super::Content::Encoded;
        sample.labels.clear();
        sample.id = index as u64;
        sample.target = Some(alloc::boxed::Box::new(Target {
            boxes: Some(BoundingBoxes::new(
                image.boxes.clone(),
                BoxFormat::Xyxy,
                image.canvas,
            )),
            labels: image.labels.clone(),
            difficult: image.difficult.clone(),
            ..Target::default()
        }));
        Ok(())
    }
}
