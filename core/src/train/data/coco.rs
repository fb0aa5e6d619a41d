//! COCO instances (detection and instance segmentation): a folder of images
//! and an annotation file (`instances_train2017.json`'s layout), one sample
//! per image in the file's order of `images`, with its [`Target`]: boxes
//! (XYWH, float32, on the image's `height` x `width` from the file), labels,
//! `iscrowd`, `area`, the image id, and, when asked ([`MaskMode`]), one mask
//! per object decoded as pycocotools' `annToMask` decodes it
//! ([`crate::targets::rle`]), or one outline per object kept as polygons
//! through the ops and rasterised as pycocotools rasterises them once the
//! ops are done ([`Polygons`](crate::targets::Polygons)); with
//! [`CocoOptions::keypoints`], each object's key points
//! (`person_keypoints_*.json`: `[N, K, 3]` with COCO's visibility) and the
//! flip index their category's names give (`left_*` and `right_*` swap).
//!
//! torchvision's `CocoDetection` gives the same objects (in the file's
//! annotation order) but orders the images by id; this reader keeps the
//! file's order.
//!
//! Refused at [`Coco::open`], naming the annotation file and the record: a
//! file larger than [`MAX_ANNOTATION_BYTES`] (before it is read), JSON that
//! does not parse or lacks a required field (its line and column), two
//! images, annotations or categories with one id, an annotation of an
//! unknown image or category, a box with a negative, infinite or huge size,
//! an `iscrowd` other than 0 or 1, an image `file_name` that leaves the
//! images folder (absolute, or through `..`), a bad image size; with
//! masks asked for, an annotation without a segmentation and a
//! polygon with an odd number of coordinates or fewer than three points.
//! Refused when the sample is read: its image file (as
//! [`folder`](super::folder) refuses them: missing, not a regular file,
//! larger than [`MAX_SAMPLE_BYTES`](super::MAX_SAMPLE_BYTES)), and a mask
//! that does not decode (RLE counts not summing to `H * W`, an RLE of
//! another size than its image, a polygon walk past
//! [`MAX_POLYGON_STEPS`]).
//!
//! ```no_run
//! use tensorprep::train::data::coco::{Categories, Coco, CocoOptions, MaskMode};
//! use tensorprep::train::data::{Dataset, Sample};
//!
//! let options = CocoOptions {
//!     masks: MaskMode::Pixels,
//!     categories: Categories::ContiguousFrom1,
//!     ..Default::default()
//! };
//! let coco = Coco::open("coco/train2017", "coco/annotations/instances_train2017.json", options)?;
//! let mut sample = Sample::default();
//! coco.read(0, &mut sample)?;
//! let target = sample.target.as_ref().unwrap();
//! println!("image {}: {} objects", sample.id, target.labels.len());
//! # Ok::<(), tensorprep::train::data::DataError>(())
//! ```

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use super::{DataError, Dataset, Sample};
use crate::Limits;
use crate::targets::rle::{self, MAX_POLYGON_STEPS, Rle};
use crate::targets::{
    BoundingBoxes, BoxFormat, Canvas, InstanceKeyPoints, KeyPoints, Masks, Polygons, Target,
};

/// The largest annotation file read: 1 GiB (COCO 2017's largest,
/// `instances_train2017.json`, is 448 MB). A larger one is refused before
/// it is read.
pub const MAX_ANNOTATION_BYTES: u64 = 1 << 30;

const FORMAT: &str = "COCO annotations";

/// How COCO's category ids become labels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Categories {
    /// The `category_id` itself (COCO's 1..=90 with gaps), as torchvision's
    /// `CocoDetection` gives it.
    #[default]
    Raw,
    /// The category's rank among the file's categories sorted by id, from 0.
    ContiguousFrom0,
    /// That rank plus 1 (0 left for the background, as torchvision's
    /// detection models count).
    ContiguousFrom1,
}

/// What happens to crowd objects (`iscrowd: 1`, usually an RLE mask over a
/// group).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Crowd {
    /// Kept, with `iscrowd` 1 in the target (torchvision's `CocoDetection`).
    #[default]
    Keep,
    /// Left out of the targets (torchvision's detection references filter
    /// them out for training).
    Drop,
}

/// Whether and how the objects' segmentations become their masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MaskMode {
    /// Not read: the targets have no masks (the default).
    #[default]
    Off,
    /// Decoded when the sample is read, into [`Target::masks`] (`[N, H, W]`,
    /// 0/1, pycocotools' `annToMask`), then moved as pixels by each op as
    /// torchvision's mask kernels move them: torchvision's masks, exactly.
    Pixels,
    /// Kept as polygons ([`Target::polygons`]): the vertices move through
    /// the ops, and a training plan rasterises them as pycocotools does on
    /// the final canvas (sharp outlines, no `N x H x W` buffer moved
    /// through each op; see [`Polygons`]). RLE segmentations (crowds) come
    /// as the rectangles of their runs, exact where the ops are.
    Polygons,
}

/// How [`Coco::open`] reads the annotations.
///
/// Its fields are public and it has a [`Default`]: set the ones you need
/// and take the rest with `..CocoOptions::default()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CocoOptions {
    /// The objects' masks: none (the default; the segmentations are then not
    /// kept), decoded as pixels, or kept as polygons.
    pub masks: MaskMode,
    /// Category ids to labels.
    pub categories: Categories,
    /// Crowd objects.
    pub crowd: Crowd,
    /// Keep the images without objects (after [`Crowd::Drop`]): true by
    /// default, as torchvision's `CocoDetection`.
    pub keep_empty: bool,
    /// Read each object's `keypoints` (`[x1, y1, v1, ...]`, the same number
    /// of points for every object) into [`Target::keypoints`], with COCO's
    /// visibility (0 not labelled, 1 hidden, 2 visible) and the flip index
    /// of the category's key point names: a name with `left` swaps with the
    /// same name with `right` (COCO's person: the eyes, ears, shoulders,
    /// ...; torchvision's detection references' `flip_inds`). Off by
    /// default.
    pub keypoints: bool,
}

impl Default for CocoOptions {
    fn default() -> Self {
        CocoOptions {
            masks: MaskMode::Off,
            categories: Categories::Raw,
            crowd: Crowd::Keep,
            keep_empty: true,
            keypoints: false,
        }
    }
}

#[derive(Deserialize)]
struct File {
    images: Vec<FileImage>,
    #[serde(default)]
    annotations: Vec<FileAnnotation>,
    categories: Vec<FileCategory>,
}

#[derive(Deserialize)]
struct FileImage {
    id: i64,
    file_name: String,
    height: u32,
    width: u32,
}

#[derive(Deserialize)]
struct FileCategory {
    id: i64,
    #[serde(default)]
    name: String,
    #[serde(default)]
    keypoints: Vec<String>,
}

#[derive(Deserialize)]
struct FileAnnotation {
    id: i64,
    image_id: i64,
    category_id: i64,
    bbox: [f64; 4],
    area: f64,
    #[serde(default)]
    iscrowd: i64,
    #[serde(default)]
    segmentation: Option<Segmentation>,
    #[serde(default)]
    keypoints: Option<Vec<f64>>,
}

/// An object's segmentation as the file holds it.
#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
enum Segmentation {
    Polygons(Vec<Vec<f64>>),
    Rle { size: [u32; 2], counts: Counts },
}

#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
enum Counts {
    Compressed(String),
    List(Vec<u64>),
}

#[derive(Clone, Debug)]
struct Object {
    id: i64,
    label: i64,
    bbox: [f32; 4],
    area: f32,
    iscrowd: u8,
    segmentation: Option<Segmentation>,
    /// `[x, y, visibility]` per point, with `keypoints`.
    keypoints: Vec<[f32; 3]>,
}

#[derive(Clone, Debug)]
struct Image {
    id: i64,
    path: PathBuf,
    canvas: Canvas,
    objects: Vec<Object>,
}

/// A COCO instances dataset: an images folder and its annotation file.
#[derive(Clone, Debug)]
pub struct Coco {
    annotation_file: PathBuf,
    images: Vec<Image>,
    categories: Vec<(i64, String)>,
    options: CocoOptions,
    /// With key points: the points per object (`K`) and their flip index
    /// (empty when the categories name no points).
    points_per_object: usize,
    flip_index: Vec<u16>,
    fingerprint: u64,
}

impl Coco {
    /// Reads `annotation_file` (images are read by [`Dataset::read`], from
    /// `images_dir` joined with each image's `file_name`).
    pub fn open(
        images_dir: impl AsRef<Path>,
        annotation_file: impl AsRef<Path>,
        options: CocoOptions,
    ) -> Result<Coco, DataError> {
        let (dir, path) = (images_dir.as_ref(), annotation_file.as_ref());
        let bytes = crate::files::read_capped(path, MAX_ANNOTATION_BYTES).map_err(|e| match e {
            crate::files::ReadError::TooLarge { .. } => DataError::corrupt(
                FORMAT,
                path,
                MAX_ANNOTATION_BYTES,
                "larger than MAX_ANNOTATION_BYTES (1 GiB)",
            ),
            crate::files::ReadError::Io(e) => DataError::io(path, e),
        })?;
        let file: File = serde_json::from_slice(&bytes).map_err(|e| {
            DataError::corrupt(
                FORMAT,
                path,
                e.line() as u64,
                alloc::format!("line {} column {}: {e}", e.line(), e.column()),
            )
        })?;
        drop(bytes);
        let bad = |what: String| DataError::corrupt(FORMAT, path, 0, what);

        let point_names = if options.keypoints {
            point_names(&file.categories).map_err(&bad)?
        } else {
            Vec::new()
        };
        let mut categories: Vec<(i64, String)> = file
            .categories
            .into_iter()
            .map(|c| (c.id, c.name))
            .collect();
        categories.sort_by_key(|c| c.0);
        if let Some(w) = categories.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(bad(alloc::format!("two categories with id {}", w[0].0)));
        }
        let label_of = |category: i64| {
            let rank = categories.binary_search_by_key(&category, |c| c.0).ok()?;
            Some(match options.categories {
                Categories::Raw => category,
                Categories::ContiguousFrom0 => rank as i64,
                Categories::ContiguousFrom1 => rank as i64 + 1,
            })
        };

        let mut images = Vec::with_capacity(file.images.len());
        let mut index: HashMap<i64, usize> = HashMap::with_capacity(file.images.len());
        for im in file.images {
            if u64::try_from(im.id).is_err() {
                return Err(bad(alloc::format!("image {}: a negative id", im.id)));
            }
            if index.insert(im.id, images.len()).is_some() {
                return Err(bad(alloc::format!("two images with id {}", im.id)));
            }
            let canvas = Canvas::new(im.height, im.width).map_err(|e| {
                bad(alloc::format!(
                    "image {} ({}): size {}x{}: {e}",
                    im.id,
                    im.file_name,
                    im.width,
                    im.height
                ))
            })?;
            let name = Path::new(&im.file_name);
            if im.file_name.is_empty()
                || !name.components().all(|c| matches!(c, Component::Normal(_)))
            {
                return Err(bad(alloc::format!(
                    "image {}: file_name {:?} is not a path inside the images folder",
                    im.id,
                    im.file_name
                )));
            }
            images.push(Image {
                id: im.id,
                path: dir.join(name),
                canvas,
                objects: Vec::new(),
            });
        }

        let mut ids = std::collections::HashSet::with_capacity(file.annotations.len());
        let mut points_per_object: Option<usize> = None;
        for a in file.annotations {
            let what = |w: &str| {
                bad(alloc::format!(
                    "annotation {} (image {}): {w}",
                    a.id,
                    a.image_id
                ))
            };
            if !ids.insert(a.id) {
                return Err(what("a second annotation with this id"));
            }
            let Some(&at) = index.get(&a.image_id) else {
                return Err(what("an image id that no image has"));
            };
            let Some(label) = label_of(a.category_id) else {
                return Err(what(&alloc::format!(
                    "category_id {} that no category has",
                    a.category_id
                )));
            };
            let bbox = a.bbox.map(|v| v as f32);
            if !bbox.iter().all(|v| v.is_finite()) || bbox[2] < 0.0 || bbox[3] < 0.0 {
                return Err(what(
                    "a box with a negative or not finite size or position (bbox [x, y, w, h])",
                ));
            }
            let area = a.area as f32;
            if !area.is_finite() || area < 0.0 {
                return Err(what("a negative or not finite area"));
            }
            let iscrowd = match a.iscrowd {
                0 => 0,
                1 => 1,
                _ => return Err(what("iscrowd other than 0 or 1")),
            };
            if iscrowd == 1 && options.crowd == Crowd::Drop {
                continue;
            }
            let keypoints = if options.keypoints {
                let points = object_points(a.keypoints.as_deref()).map_err(|e| what(&e))?;
                match points_per_object {
                    None => points_per_object = Some(points.len()),
                    Some(k) if k != points.len() => {
                        return Err(what(&alloc::format!(
                            "{} key points where annotations before it have {k}",
                            points.len()
                        )));
                    }
                    Some(_) => {}
                }
                points
            } else {
                Vec::new()
            };
            let segmentation = if options.masks != MaskMode::Off {
                match a.segmentation {
                    None => return Err(what("no segmentation (masks were asked for)")),
                    Some(Segmentation::Polygons(parts)) => {
                        if parts.is_empty() {
                            return Err(what("a segmentation with no polygon"));
                        }
                        for p in &parts {
                            if !p.len().is_multiple_of(2) {
                                return Err(what("a polygon with an odd number of coordinates"));
                            }
                            if p.len() < 6 {
                                return Err(what("a polygon with fewer than three points"));
                            }
                        }
                        Some(Segmentation::Polygons(parts))
                    }
                    Some(rle) => Some(rle),
                }
            } else {
                None
            };
            images[at].objects.push(Object {
                id: a.id,
                label,
                bbox,
                area,
                iscrowd,
                segmentation,
                keypoints,
            });
        }
        let points_per_object = points_per_object.unwrap_or(point_names.len());
        let flip_index = if point_names.is_empty() {
            Vec::new()
        } else if point_names.len() != points_per_object {
            return Err(bad(alloc::format!(
                "the categories name {} key points, the annotations hold {points_per_object}",
                point_names.len()
            )));
        } else {
            flip_index(&point_names).map_err(&bad)?
        };
        if !options.keep_empty {
            images.retain(|im| !im.objects.is_empty());
        }
        let fingerprint = fingerprint(&images, &categories, &options);
        Ok(Coco {
            annotation_file: path.to_path_buf(),
            images,
            categories,
            options,
            points_per_object,
            flip_index,
            fingerprint,
        })
    }

    /// The categories, sorted by id: `(id, name)`. With
    /// [`Categories::ContiguousFrom0`], label `i` is `categories()[i]`.
    pub fn categories(&self) -> &[(i64, String)] {
        &self.categories
    }

    /// The image id of sample `index`.
    pub fn image_id(&self, index: usize) -> Option<i64> {
        self.images.get(index).map(|im| im.id)
    }

    /// The error for object `o` of `image`.
    fn object_error(&self, image: &Image, o: &Object, what: &str) -> DataError {
        DataError::corrupt(
            FORMAT,
            &self.annotation_file,
            0,
            alloc::format!("annotation {} (image {}): {what}", o.id, image.id),
        )
    }

    /// Object `o`'s RLE segmentation (`size` as the file gives it), on its
    /// image's canvas.
    fn rle(
        &self,
        image: &Image,
        o: &Object,
        size: [u32; 2],
        counts: &Counts,
    ) -> Result<Rle, DataError> {
        let canvas = image.canvas;
        if size != [canvas.height, canvas.width] {
            return Err(self.object_error(
                image,
                o,
                &alloc::format!(
                    "an RLE of size {}x{} on an image of {}x{} (height x width)",
                    size[0],
                    size[1],
                    canvas.height,
                    canvas.width
                ),
            ));
        }
        match counts {
            Counts::Compressed(s) => Rle::from_compressed(s.as_bytes(), canvas),
            Counts::List(c) => Rle::from_counts(c, canvas),
        }
        .map_err(|e| self.object_error(image, o, &e.to_string()))
    }

    fn masks(&self, image: &Image) -> Result<Masks, DataError> {
        let canvas = image.canvas;
        let size = canvas.height as usize * canvas.width as usize;
        let n = image.objects.len();
        let whole = |e: String| {
            DataError::corrupt(
                FORMAT,
                &self.annotation_file,
                0,
                alloc::format!("image {}: {e}", image.id),
            )
        };
        let bytes = (size as u64).saturating_mul(n as u64);
        let bytes = Limits::default()
            .check_alloc(bytes)
            .map_err(|e| whole(alloc::format!("its {n} masks: {e}")))?;
        let mut data = alloc::vec![0u8; bytes];
        let mut budget = MAX_POLYGON_STEPS;
        for (o, mask) in image.objects.iter().zip(data.chunks_exact_mut(size.max(1))) {
            let result = match &o.segmentation {
                Some(Segmentation::Polygons(parts)) => {
                    rle::paint_polygons(parts.iter().map(Vec::as_slice), canvas, mask, &mut budget)
                }
                Some(Segmentation::Rle { size, counts }) => {
                    self.rle(image, o, *size, counts)?.paint(mask)
                }
                None => return Err(self.object_error(image, o, "no segmentation")),
            };
            result.map_err(|e| self.object_error(image, o, &e.to_string()))?;
        }
        Masks::new(data, n, canvas).map_err(|e| whole(e.to_string()))
    }

    fn polygons(&self, image: &Image) -> Result<Polygons, DataError> {
        let mut polygons = Polygons::new(image.canvas);
        for o in &image.objects {
            match &o.segmentation {
                Some(Segmentation::Polygons(parts)) => {
                    polygons.push(parts.iter().map(Vec::as_slice))
                }
                Some(Segmentation::Rle { size, counts }) => {
                    polygons.push_rle(&self.rle(image, o, *size, counts)?)
                }
                None => return Err(self.object_error(image, o, "no segmentation")),
            }
            .map_err(|e| self.object_error(image, o, &e.to_string()))?;
        }
        Ok(polygons)
    }
}

/// The key point names the categories give (those of every category that
/// names some must agree): empty when none does.
fn point_names(categories: &[FileCategory]) -> Result<Vec<String>, String> {
    let mut names: Option<&Vec<String>> = None;
    for c in categories.iter().filter(|c| !c.keypoints.is_empty()) {
        match names {
            None => names = Some(&c.keypoints),
            Some(n) if *n != c.keypoints => {
                return Err(alloc::format!(
                    "category {}: key point names other than another category's (one flip index serves every object)",
                    c.id
                ));
            }
            Some(_) => {}
        }
    }
    Ok(names.cloned().unwrap_or_default())
}

/// Each point's mirror: a name with `left` swaps with the same name with
/// `right` (the first occurrence replaced) when each finds the other;
/// every other point is its own. A permutation (an involution).
fn flip_index(names: &[String]) -> Result<Vec<u16>, String> {
    if names.len() > usize::from(u16::MAX) {
        return Err(alloc::format!(
            "{} key point names: at most 65535",
            names.len()
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    if let Some(twice) = names.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(alloc::format!("the key point name {twice:?} given twice"));
    }
    let mirror = |i: usize| {
        let n = &names[i];
        let other = if n.contains("left") {
            n.replacen("left", "right", 1)
        } else if n.contains("right") {
            n.replacen("right", "left", 1)
        } else {
            return i;
        };
        names.iter().position(|x| *x == other).unwrap_or(i)
    };
    Ok((0..names.len())
        .map(|i| {
            let m = mirror(i);
            (if mirror(m) == i { m } else { i }) as u16
        })
        .collect())
}

/// One annotation's `keypoints` (`[x1, y1, v1, ...]`) as `[x, y, v]`
/// triples: finite coordinates, visibility 0, 1 or 2.
fn object_points(keypoints: Option<&[f64]>) -> Result<Vec<[f32; 3]>, String> {
    let k = keypoints.ok_or("no keypoints (key points were asked for)")?;
    if !k.len().is_multiple_of(3) {
        return Err(alloc::format!(
            "keypoints of {} numbers: [x, y, visibility] per point",
            k.len()
        ));
    }
    k.chunks_exact(3)
        .map(|p| {
            let (x, y) = (p[0] as f32, p[1] as f32);
            if !x.is_finite() || !y.is_finite() {
                return Err("a key point that is not finite".to_string());
            }
            match p[2] {
                0.0 | 1.0 | 2.0 => Ok([x, y, p[2] as f32]),
                v => Err(alloc::format!(
                    "a key point visibility of {v}, not 0, 1 or 2"
                )),
            }
        })
        .collect()
}

fn fingerprint(images: &[Image], categories: &[(i64, String)], options: &CocoOptions) -> u64 {
    let mut h = crate::Fnv1a64::new();
    h.update(b"coco");
    h.update(&[
        options.masks as u8,
        options.categories as u8,
        options.crowd as u8,
        u8::from(options.keep_empty),
    ]);
    for (id, name) in categories {
        h.update(&id.to_le_bytes());
        h.update(name.as_bytes());
        h.update(&[0]);
    }
    for im in images {
        h.update(&im.id.to_le_bytes());
        if let Some(name) = im.path.file_name() {
            h.update(name.as_encoded_bytes());
        }
        h.update(&[0]);
        h.update(&im.canvas.height.to_le_bytes());
        h.update(&im.canvas.width.to_le_bytes());
        for o in &im.objects {
            h.update(&o.id.to_le_bytes());
            h.update(&o.label.to_le_bytes());
            for v in o.bbox {
                h.update(&v.to_bits().to_le_bytes());
            }
            for v in o.keypoints.iter().flatten() {
                h.update(&v.to_bits().to_le_bytes());
            }
        }
    }
    h.finish()
}

impl Dataset for Coco {
    fn len(&self) -> usize {
        self.images.len()
    }

    fn describe(&self, index: usize) -> String {
        match self.images.get(index) {
            Some(im) => alloc::format!("{} (COCO image {})", im.path.display(), im.id),
            None => alloc::format!("sample {index}"),
        }
    }

    /// The images' ids, files and sizes, their objects' ids, labels and
    /// boxes, the categories and the options (not where the files lie).
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        DataError::check_index(index, self.images.len())?;
        let image = &self.images[index];
        super::folder::read_whole(&image.path, FORMAT, &mut sample.bytes)?;
        sample.content = super::Content::Encoded;
        sample.labels.clear();
        // Ids were checked non-negative at open.
        sample.id = image.id as u64;
        let mut target = Target {
            image_id: Some(image.id),
            boxes: Some(BoundingBoxes::new(
                image.objects.iter().map(|o| o.bbox).collect(),
                BoxFormat::Xywh,
                image.canvas,
            )),
            labels: image.objects.iter().map(|o| o.label).collect(),
            iscrowd: image.objects.iter().map(|o| o.iscrowd).collect(),
            area: image.objects.iter().map(|o| o.area).collect(),
            ..Target::default()
        };
        match self.options.masks {
            MaskMode::Off => {}
            MaskMode::Pixels => target.masks = Some(self.masks(image)?),
            MaskMode::Polygons => target.polygons = Some(self.polygons(image)?),
        }
        if self.options.keypoints {
            let points = image.objects.iter().flat_map(|o| &o.keypoints);
            let xy = points.clone().map(|p| [p[0], p[1]]).collect();
            // Checked 0, 1 or 2 at open.
            let visibility = points.map(|p| p[2] as u8).collect();
            let k = InstanceKeyPoints::new(
                KeyPoints::new(xy, image.canvas),
                self.points_per_object,
                visibility,
                self.flip_index.clone(),
            )
            .map_err(|e| {
                DataError::corrupt(
                    FORMAT,
                    &self.annotation_file,
                    0,
                    alloc::format!("image {}: its key points: {e}", image.id),
                )
            })?;
            target.keypoints = Some(k);
        }
        sample.target = Some(alloc::boxed::Box::new(target));
        Ok(())
    }
}
