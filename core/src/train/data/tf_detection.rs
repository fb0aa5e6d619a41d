//! Detection targets from a `tf.train.Example` written with the TensorFlow
//! Object Detection API's keys (its `TfExampleDecoder`'s names), for
//! [`TfRecordDataset::with_labels`](super::tfrecord::TfRecordDataset::with_labels).
//!
//! | key | kind | becomes |
//! |---|---|---|
//! | `image/encoded` (or [`Keys::image`](super::tfrecord::Keys::image)) | bytes | the sample's image |
//! | `image/height`, `image/width` | int64, one value | checked against the image's header |
//! | `image/object/bbox/xmin`, `ymin`, `xmax`, `ymax` | float, `N` values | the boxes |
//! | `image/object/class/label` | int64, `N` | [`Target::labels`] |
//! | `image/object/class/text` | bytes, `N` or none | counted only |
//! | `image/object/difficult` | int64 0 or 1, `N` or none | [`Target::difficult`] |
//! | `image/object/is_crowd` | int64 0 or 1, `N` or none | [`Target::iscrowd`] |
//! | `image/object/area` | float, `N` or none | [`Target::area`] |
//! | `image/object/mask` | bytes, `N` PNGs | [`Target::masks`], with [`DetectionOptions::masks`] |
//! | `image/source_id` | bytes | [`Target::image_id`] when it is a decimal integer |
//!
//! The API keeps boxes normalised (`[0, 1]` of the image's width and
//! height); the target has them in pixels, XYXY, on the image as stored
//! (its EXIF orientation not applied, as `tf.io.decode_image` ignores it):
//! `xmin * W`, `ymin * H`, `xmax * W`, `ymax * H`, each one float32
//! product of the stored float32 value and the header's width or height as
//! float32 (exact below 2^24), the one rounding that product's.
//!
//! An example is refused, naming its record: a key of the wrong kind or
//! given twice, per-object lists of other lengths than the boxes' (an
//! optional list may be absent or empty), boxes without labels, a
//! coordinate that is not finite or lies outside `[0, 1]` by more than
//! [`TOLERANCE`](super::yolo::TOLERANCE), a maximum below its minimum, a
//! `difficult` or `is_crowd` other than 0 or 1, a negative or not finite
//! area, a height or width other than the image's, and, with masks, a mask
//! that is not a PNG of the image's size. An example with none of the
//! object keys has no objects. Masks are `value > 0` (the decoder's
//! `tf.greater(mask, 0)`) of each PNG decoded as 8-bit gray.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::Limits;
use crate::decode::{ImageDecoder, ImageFormat};
use crate::graph::wire::{self, Value};
use crate::jpeg::DecodeOptions;
use crate::targets::{BoundingBoxes, BoxFormat, Canvas, Masks, Target};

/// How the object detection keys are read.
///
/// Its fields are public and it has a [`Default`]: set the ones you need
/// and take the rest with `..DetectionOptions::default()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DetectionOptions {
    /// Decode `image/object/mask` (one PNG per object) into the target's
    /// masks (`[N, H, W]`, 0/1). Off by default: the key is then not read.
    pub masks: bool,
}

const XMIN: &str = "image/object/bbox/xmin";
const YMIN: &str = "image/object/bbox/ymin";
const XMAX: &str = "image/object/bbox/xmax";
const YMAX: &str = "image/object/bbox/ymax";
const LABEL: &str = "image/object/class/label";
const TEXT: &str = "image/object/class/text";
const DIFFICULT: &str = "image/object/difficult";
const IS_CROWD: &str = "image/object/is_crowd";
const AREA: &str = "image/object/area";
const MASK: &str = "image/object/mask";
const HEIGHT: &str = "image/height";
const WIDTH: &str = "image/width";
const SOURCE_ID: &str = "image/source_id";

/// The most values a per-object list may hold (a longer one is refused as
/// it is read: an int64 list's values take 8 bytes each here, one in the
/// record).
pub const MAX_OBJECTS: usize = 1 << 20;

const TOO_MANY: &str = "more than MAX_OBJECTS (2^20) values";

/// The keys read, in the order of [`Parsed::seen`]'s bits.
const KEYS: [&str; 13] = [
    XMIN, YMIN, XMAX, YMAX, LABEL, TEXT, DIFFICULT, IS_CROWD, AREA, MASK, HEIGHT, WIDTH, SOURCE_ID,
];

/// What an example holds under the keys, before the image's size is known.
#[derive(Default)]
struct Parsed<'a> {
    image: Option<(usize, usize)>,
    /// xmin, ymin, xmax, ymax.
    corners: [Vec<f32>; 4],
    labels: Vec<i64>,
    texts: usize,
    difficult: Vec<i64>,
    is_crowd: Vec<i64>,
    area: Vec<f32>,
    masks: Vec<&'a [u8]>,
    height: Vec<i64>,
    width: Vec<i64>,
    source_id: Option<&'a [u8]>,
    /// Which of [`KEYS`] were found (a second one is refused).
    seen: u16,
}

/// Reads `example`'s detection keys (and the image under `image_key`):
/// where the image lies in `example`, and its target on the image's
/// stored size. Errors say what is wrong, for the caller to name the record.
pub(super) fn read(
    example: &[u8],
    image_key: &str,
    options: DetectionOptions,
    decoder: &mut ImageDecoder,
) -> Result<((usize, usize), Target), String> {
    let base = example.as_ptr() as usize;
    let mut p = Parsed::default();
    super::tfrecord::each_feature(example, |name, feature| {
        if name == image_key.as_bytes() {
            if p.image.is_some() {
                return Err(alloc::format!("`{image_key}` given twice"));
            }
            let b = super::tfrecord::first_bytes(feature)?
                .ok_or_else(|| alloc::format!("`{image_key}` holds no bytes"))?;
            let start = b.as_ptr() as usize - base;
            p.image = Some((start, start + b.len()));
            return Ok(());
        }
        let Some(k) = KEYS.iter().position(|k| k.as_bytes() == name) else {
            return Ok(());
        };
        if p.seen & (1 << k) != 0 {
            return Err(alloc::format!("`{}` given twice", KEYS[k]));
        }
        p.seen |= 1 << k;
        let key = KEYS[k];
        let kind = |e: &str| alloc::format!("`{key}`: {e}");
        match k {
            0..=3 => floats(feature, &mut p.corners[k]).map_err(kind),
            4 => ints(feature, &mut p.labels).map_err(kind),
            5 => {
                let mut texts = Vec::new();
                byte_lists(feature, &mut texts).map_err(kind)?;
                p.texts = texts.len();
                Ok(())
            }
            6 => ints(feature, &mut p.difficult).map_err(kind),
            7 => ints(feature, &mut p.is_crowd).map_err(kind),
            8 => floats(feature, &mut p.area).map_err(kind),
            9 if options.masks => byte_lists(feature, &mut p.masks).map_err(kind),
            9 => Ok(()),
            10 => ints(feature, &mut p.height).map_err(kind),
            11 => ints(feature, &mut p.width).map_err(kind),
            _ => {
                let mut ids = Vec::new();
                byte_lists(feature, &mut ids).map_err(kind)?;
                p.source_id = ids.first().copied();
                Ok(())
            }
        }
    })?;
    let (start, end) = p
        .image
        .ok_or_else(|| alloc::format!("no image feature `{image_key}`"))?;
    let canvas = canvas(&example[start..end], &p, decoder)?;
    let target = target(&p, canvas, options, decoder)?;
    Ok(((start, end), target))
}

/// The image's stored size, checked against `image/height` and `image/width`.
fn canvas(image: &[u8], p: &Parsed<'_>, decoder: &mut ImageDecoder) -> Result<Canvas, String> {
    decoder.set_options(DecodeOptions::default());
    let info = decoder
        .read_info(image)
        .map_err(|e| alloc::format!("the image's header: {e}"))?;
    let (h, w) = (info.stored_height, info.stored_width);
    for (key, stated, actual) in [(HEIGHT, &p.height, h), (WIDTH, &p.width, w)] {
        match stated[..] {
            [] => {}
            [v] if v == i64::from(actual) => {}
            [v] => {
                return Err(alloc::format!(
                    "`{key}` is {v}, the image's header says {actual}"
                ));
            }
            _ => {
                return Err(alloc::format!(
                    "`{key}` holds {} values, not 1",
                    stated.len()
                ));
            }
        }
    }
    Canvas::new(h, w).map_err(|e| alloc::format!("the image's size {w}x{h}: {e}"))
}

fn target(
    p: &Parsed<'_>,
    canvas: Canvas,
    options: DetectionOptions,
    decoder: &mut ImageDecoder,
) -> Result<Target, String> {
    let n = p.corners[0].len();
    let count = |key: &str, len: usize, optional: bool| {
        if len == n || (optional && len == 0) {
            Ok(())
        } else {
            Err(alloc::format!(
                "`{key}` holds {len} values, `{XMIN}` {n}: one per object"
            ))
        }
    };
    count(YMIN, p.corners[1].len(), false)?;
    count(XMAX, p.corners[2].len(), false)?;
    count(YMAX, p.corners[3].len(), false)?;
    count(LABEL, p.labels.len(), false)?;
    count(TEXT, p.texts, true)?;
    count(DIFFICULT, p.difficult.len(), true)?;
    count(IS_CROWD, p.is_crowd.len(), true)?;
    count(AREA, p.area.len(), true)?;
    if options.masks {
        count(MASK, p.masks.len(), false)?;
    }
    let (w, h) = (canvas.width as f32, canvas.height as f32);
    let tolerance = super::yolo::TOLERANCE as f32;
    let mut boxes = Vec::with_capacity(n);
    for i in 0..n {
        let b = p.corners.each_ref().map(|c| c[i]);
        if let Some(v) = b
            .iter()
            .find(|v| !(-tolerance..=1.0 + tolerance).contains(*v))
        {
            return Err(alloc::format!(
                "object {i}: a coordinate {v} that is not a finite number in [0, 1] (boxes are normalised)"
            ));
        }
        if b[2] < b[0] || b[3] < b[1] {
            return Err(alloc::format!(
                "object {i}: a box whose maximum is below its minimum (xmin {}, ymin {}, xmax {}, ymax {})",
                b[0],
                b[1],
                b[2],
                b[3]
            ));
        }
        boxes.push([b[0] * w, b[1] * h, b[2] * w, b[3] * h]);
    }
    let flags = |key: &str, values: &[i64]| {
        values
            .iter()
            .map(|&v| match v {
                0 | 1 => Ok(v as u8),
                _ => Err(alloc::format!("`{key}`: {v}, not 0 or 1")),
            })
            .collect::<Result<Vec<u8>, String>>()
    };
    if let Some(a) = p.area.iter().find(|a| !a.is_finite() || **a < 0.0) {
        return Err(alloc::format!(
            "`{AREA}`: {a}, not a finite size at least 0"
        ));
    }
    let image_id = p
        .source_id
        .and_then(|s| core::str::from_utf8(s).ok())
        .and_then(|s| s.parse::<i64>().ok());
    let masks = if options.masks {
        Some(masks(&p.masks, canvas, decoder)?)
    } else {
        None
    };
    Ok(Target {
        image_id,
        boxes: Some(BoundingBoxes::new(boxes, BoxFormat::Xyxy, canvas)),
        labels: p.labels.clone(),
        iscrowd: flags(IS_CROWD, &p.is_crowd)?,
        area: p.area.clone(),
        difficult: flags(DIFFICULT, &p.difficult)?,
        masks,
        ..Target::default()
    })
}

/// Each PNG as a 0/1 mask of `canvas`'s size.
fn masks(pngs: &[&[u8]], canvas: Canvas, decoder: &mut ImageDecoder) -> Result<Masks, String> {
    let size = canvas.height as usize * canvas.width as usize;
    let bytes = (size as u64).saturating_mul(pngs.len() as u64);
    let bytes = Limits::default()
        .check_alloc(bytes)
        .map_err(|e| alloc::format!("its {} masks: {e}", pngs.len()))?;
    let mut data = alloc::vec![0u8; bytes];
    decoder.set_options(DecodeOptions {
        format: crate::PixelFormat::Gray8,
        ..DecodeOptions::default()
    });
    for (i, (png, mask)) in pngs
        .iter()
        .zip(data.chunks_exact_mut(size.max(1)))
        .enumerate()
    {
        let bad = |e: &dyn core::fmt::Display| alloc::format!("`{MASK}` {i}: {e}");
        if ImageFormat::sniff(png) != Some(ImageFormat::Png) {
            return Err(bad(&"not a PNG file"));
        }
        let info = decoder.read_info(png).map_err(|e| bad(&e))?;
        if (info.height, info.width) != (canvas.height, canvas.width) {
            return Err(bad(&alloc::format!(
                "{}x{} on an image of {}x{} (width x height)",
                info.width,
                info.height,
                canvas.width,
                canvas.height
            )));
        }
        let mut view =
            crate::ImageViewMut::new(crate::PixelFormat::Gray8, canvas.width, canvas.height, mask)
                .map_err(|e| bad(&e))?;
        decoder.decode_into(png, &mut view).map_err(|e| bad(&e))?;
        for v in mask.iter_mut() {
            *v = u8::from(*v > 0);
        }
    }
    Masks::new(data, pngs.len(), canvas).map_err(|e| e.to_string())
}

/// The `Feature` message's list of kind `kind` (1 bytes, 2 float, 3
/// int64), each value given to `each`; another kind is refused, no kind
/// at all is an empty list.
fn list<'a>(
    feature: &'a [u8],
    kind: u32,
    mut each: impl FnMut(Value<'a>) -> Result<(), &'static str>,
) -> Result<(), &'static str> {
    for f in wire::fields(feature) {
        let f = f.map_err(|_| "a malformed feature")?;
        match (f.number, f.value) {
            (n, Value::Bytes(values)) if n == kind => {
                for v in wire::fields(values) {
                    let v = v.map_err(|_| "a malformed value list")?;
                    if v.number == 1 {
                        each(v.value)?;
                    }
                }
            }
            (1..=3, _) => {
                return Err(match kind {
                    1 => "not a bytes list",
                    2 => "not a float list",
                    _ => "not an int64 list",
                });
            }
            _ => {}
        }
    }
    Ok(())
}

fn floats(feature: &[u8], out: &mut Vec<f32>) -> Result<(), &'static str> {
    list(feature, 2, |v| {
        match v {
            Value::Fixed32(x) => out.push(f32::from_bits(x)),
            Value::Bytes(packed) if packed.len() % 4 == 0 => out.extend(
                packed
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            ),
            _ => return Err("a malformed float list"),
        }
        if out.len() > MAX_OBJECTS {
            return Err(TOO_MANY);
        }
        Ok(())
    })
}

fn ints(feature: &[u8], out: &mut Vec<i64>) -> Result<(), &'static str> {
    list(feature, 3, |v| {
        match v {
            Value::Varint(x) => out.push(x as i64),
            Value::Bytes(mut packed) => {
                while !packed.is_empty() {
                    let x = prost::encoding::decode_varint(&mut packed)
                        .map_err(|_| "a malformed int64 list")?;
                    out.push(x as i64);
                    if out.len() > MAX_OBJECTS {
                        return Err(TOO_MANY);
                    }
                }
            }
            _ => return Err("a malformed int64 list"),
        }
        if out.len() > MAX_OBJECTS {
            return Err(TOO_MANY);
        }
        Ok(())
    })
}

fn byte_lists<'a>(feature: &'a [u8], out: &mut Vec<&'a [u8]>) -> Result<(), &'static str> {
    list(feature, 1, |v| match v {
        Value::Bytes(b) if out.len() < MAX_OBJECTS => {
            out.push(b);
            Ok(())
        }
        Value::Bytes(_) => Err(TOO_MANY),
        _ => Err("a malformed bytes list"),
    })
}
