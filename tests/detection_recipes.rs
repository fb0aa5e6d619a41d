//! The five detection presets (`detection-hflip`, `-lsj`, `-multiscale`,
//! `-ssd`, `-ssdlite`) against torchvision 0.29.2's detection reference
//! recipes (`references/detection/presets.py`, `DetectionPresetTrain(
//! data_augmentation=..., use_v2=True)` on a PIL image) for the same draws.
//!
//! Each case is a preset, a sample key and a photo of the COCO sample
//! (`fixtures/coco/sample`, read with its polygon masks by
//! [`Coco`]) with three instances added (a box half a pixel wide that
//! `SanitizeBoundingBoxes` always drops, a strip 2.5 pixels high that
//! drops when the image shrinks enough, a box reaching past the right edge,
//! clamped) so that the labels and masks are seen to stay in step with the
//! boxes. The ignored test `write_draws` writes the target and, for each of
//! the preset's random ops, the words it draws from; `fixtures/
//! make_recipe_fixtures.py` replays them through `torch.rand`,
//! `torch.randint` and `torch.randperm` (as `make_detection_fixtures.py`
//! does for the ops alone) while torchvision's composed preset runs, and
//! writes `fixtures/targets/recipes.txt`: the uint8 pixels `ToImage` gives
//! and the float32 tensor the preset ends with (SHA-256, first 16 hex
//! digits), the boxes (float32 bits), the labels and the masks after
//! `SanitizeBoundingBoxes`. Here the preset must give the same, bit for bit.
//!
//! What the reference run adapts, and why (the script says it too):
//! - The boxes go in as XYXY, as the references' `CocoDetection` wrapper
//!   (`wrap_dataset_for_transforms_v2`) gives them, for `lsj` (whose
//!   `FixedSizeCrop` reads XYXY only) and the first four keys of the other
//!   presets; keys 4 and 5 of those go in as XYWH, COCO's own format, which
//!   torchvision v2's transforms take as it is.
//! - `lsj`'s `FixedSizeCrop` is the references' v1-style transform: given
//!   `tv_tensors` it returns plain tensors and keeps the boxes' old canvas,
//!   so that torchvision's own preset then raises ("No bounding boxes were
//!   found") when it crops, and flips boxes about the pre-padding width (and
//!   masks not at all) when it pads. The script gives it plain XYXY tensors
//!   (as the references' v1 pipeline does) and wraps its output back as
//!   `BoundingBoxes`/`Mask` on the padded canvas; tensorprep's preset moves
//!   the target that way.
//! - `ssd`'s `RandomZoomOut(fill=defaultdict(lambda: mean, {Mask: 0}))`
//!   pads PIL images with 0 in torchvision: its `_get_fill` asks
//!   `PIL.Image.Image in fill`, which a `defaultdict` answers False, and
//!   returns None. The script adds the mean under `PIL.Image.Image`, as
//!   the recipe means it (its v1 form pads with `list(mean)`); tensorprep
//!   pads with the mean.
//! - The pixels start from Pillow's decode of the JPEG (see
//!   [`pillow_decode`]), and the float32 output is v2's `ToDtype`
//!   (`v * (1 / 255)`, `Normalize::TO_DTYPE_SCALE`).
//! - `RandomIoUCrop` draws rounds without end in torchvision, at most 100
//!   here (then the sample is left as it is, see [`RandomIoUCrop`]); the
//!   cases take the common path, a crop or the "leave as is" option well
//!   within the bound (the script fails if torchvision draws past the words
//!   written).
//!
//! Remaking it: `cargo test -p tensorprep-tests --test detection_recipes --
//! --ignored write_draws`, then `python3 make_recipe_fixtures.py` in
//! `tests/fixtures` (torch 2.15.0, torchvision 0.29.2, the references'
//! `presets.py` and `transforms.py` in the folder it names).
//!
//! [`RandomIoUCrop`]: tensorprep::train::RandomIoUCrop

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use tensorprep::finish::{ChannelOrder, Normalize};
use tensorprep::pipeline::{Decode, Input, Op};
use tensorprep::targets::{BoundingBoxes, BoxFormat, Masks, Target};
use tensorprep::train::data::coco::{Coco, CocoOptions, MaskMode};
use tensorprep::train::data::{Dataset, Sample};
use tensorprep::train::{Augment, Draws, SampleKey, TrainPipeline, TrainState};
use tensorprep::{DType, Layout, Quantization, TensorMut};

/// The recipes, by their torchvision name (`detection-<name>` presets).
const RECIPES: [&str; 5] = ["hflip", "lsj", "multiscale", "ssd", "ssdlite"];
/// Sample keys per recipe.
const KEYS: u64 = 6;
/// The random words written per op and case (more than any case here
/// draws: the script fails if torchvision asks for more).
const WORDS: usize = 4096;
/// The largest output: `multiscale`'s 800 x 1333 (and `lsj`'s 1024 x 1024).
const MAX_OUT: usize = 3 * 1400 * 1400;

const COCO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/coco/sample");

/// A case: a recipe, a key, the photo it runs on, the boxes' format.
struct Case {
    recipe: &'static str,
    key: u64,
    /// The COCO sample's image index.
    image: usize,
    format: BoxFormat,
}

fn cases() -> Vec<Case> {
    let mut out = vec![];
    for recipe in RECIPES {
        for key in 0..KEYS {
            let format = if recipe == "lsj" || key < 4 {
                BoxFormat::Xyxy
            } else {
                BoxFormat::Xywh
            };
            out.push(Case {
                recipe,
                key,
                image: (key % 2) as usize,
                format,
            });
        }
    }
    out
}

fn sample_key(key: u64) -> SampleKey {
    SampleKey::new(35, 0, key)
}

fn preset(recipe: &str) -> TrainPipeline {
    TrainPipeline::preset(&format!("detection-{recipe}")).unwrap()
}

/// The preset's random ops: every augment before its two target ops
/// (`ConvertBoundingBoxFormat`, `SanitizeBoundingBoxes`), one position
/// each.
fn random_ops(p: &TrainPipeline) -> usize {
    let n = p.augments.len() - 2;
    assert!(
        p.augments[n..]
            .iter()
            .all(|a| matches!(a, Augment::Target(_)))
    );
    assert!(
        p.augments[..n]
            .iter()
            .all(|a| !matches!(a, Augment::Target(_)))
    );
    n
}

/// The COCO sample's photos (copies of two fixtures) and Pillow's decode of
/// each (`make_fixtures.py`'s, a PNG).
const DECODED: [(&str, &str, &str); 2] = [
    (
        "000001.jpg",
        "sample_progressive.jpg",
        "sample_progressive_decode_stored_0_0.png",
    ),
    (
        "000002.jpg",
        "sample_gray.jpg",
        "sample_gray_decode_stored_0_0.png",
    ),
];

/// The photo as the preset reads it here: Pillow's decode of the COCO JPEG
/// (a PNG), so that the pixels compared are the recipe's. The preset's own
/// JPEG decoder, zune-jpeg, is within a level or two of Pillow's
/// libjpeg-turbo, not equal to it (see `Backend::Zune`); with the
/// `turbojpeg` feature the JPEG itself is run too
/// (`..._from_the_jpeg_with_libjpeg_turbo`).
fn pillow_decode(jpeg: &[u8], name: &str) -> Vec<u8> {
    let (_, copy_of, png) = DECODED.iter().find(|d| d.0 == name).unwrap();
    assert_eq!(jpeg, tensorprep_tests::read(copy_of), "{name}");
    tensorprep_tests::read(png)
}

/// The photo's JPEG bytes, its file name and its target: the COCO objects
/// (with their polygon masks) plus the three added instances, boxes in
/// `format`.
fn sample(image: usize, format: BoxFormat) -> (Vec<u8>, String, Target) {
    let options = CocoOptions {
        masks: MaskMode::Pixels,
        ..CocoOptions::default()
    };
    let coco = Coco::open(
        format!("{COCO}/images"),
        format!("{COCO}/instances.json"),
        options,
    )
    .unwrap();
    let mut s = Sample::default();
    coco.read(image, &mut s).unwrap();
    let name = format!("{:06}.jpg", coco.image_id(image).unwrap());
    assert_eq!(
        s.bytes,
        std::fs::read(format!("{COCO}/images/{name}")).unwrap()
    );
    let coco_target = s.target.unwrap();
    let mut boxes = coco_target.boxes.unwrap();
    let masks = coco_target.masks.unwrap();
    let canvas = boxes.canvas();
    boxes.convert_format(BoxFormat::Xyxy);
    let added = [
        ([30.25, 100.0, 30.75, 140.0], 90),
        ([150.0, 120.5, 200.0, 123.0], 91),
        ([200.0, 2.0, 240.0, 30.0], 92),
    ];
    let mut rows = boxes.into_boxes();
    let mut data = masks.into_data();
    let mut labels = coco_target.labels;
    let (w, h) = (canvas.width as usize, canvas.height as usize);
    for (b, label) in added {
        rows.push(b);
        labels.push(label);
        data.extend((0..h * w).map(|i| {
            let (x, y) = ((i % w) as f32 + 0.5, (i / w) as f32 + 0.5);
            u8::from(b[0] <= x && x < b[2] && b[1] <= y && y < b[3])
        }));
    }
    let mut boxes = BoundingBoxes::new(rows, BoxFormat::Xyxy, canvas);
    boxes.clamp();
    boxes.convert_format(format);
    let mut t = Target::default();
    t.masks = Some(Masks::new(data, labels.len(), canvas).unwrap());
    t.boxes = Some(boxes);
    t.labels = labels;
    t.check().unwrap();
    (s.bytes, name, t)
}

fn sha(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn hex(rows: &[[f32; 4]]) -> String {
    tensorprep_tests::f32_bits_hex(rows)
}

fn list(labels: &[i64]) -> String {
    if labels.is_empty() {
        return "-".into();
    }
    labels
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Masks `[N, H, W]` as runs `value:count` (`.` between runs, `;` between
/// masks).
fn runs(m: &Masks) -> String {
    let size = (m.canvas().width * m.canvas().height) as usize;
    let out: Vec<String> = m
        .data()
        .chunks_exact(size)
        .map(|mask| {
            let mut r: Vec<(u8, usize)> = vec![];
            for &v in mask {
                match r.last_mut() {
                    Some((last, n)) if *last == v => *n += 1,
                    _ => r.push((v, 1)),
                }
            }
            r.iter()
                .map(|(v, n)| format!("{v}:{n}"))
                .collect::<Vec<_>>()
                .join(".")
        })
        .collect();
    if out.is_empty() {
        "-".into()
    } else {
        out.join(";")
    }
}

/// The case through the preset (its decode replaced by `decode`, given),
/// from Pillow's decode of the photo or from the JPEG: `out_shape= out_u8=
/// out_f32= out_boxes= out_labels= out_masks= out_masks_shape=`.
fn run(case: &Case, decode: Option<Decode>) -> String {
    let (jpeg, name, target) = sample(case.image, case.format);
    let mut float = preset(case.recipe);
    let photo = match decode {
        Some(decode) => {
            float.decode = decode;
            jpeg
        }
        None => pillow_decode(&jpeg, &name),
    };
    // The same preset ending in uint8: the pixels before `ToDtype`.
    let mut bytes = float.clone();
    bytes.finish = Op::finish(
        Normalize::RAW,
        Layout::Chw,
        ChannelOrder::Rgb,
        DType::U8,
        Quantization::IDENTITY,
    );
    let mut u8_out = vec![0u8; MAX_OUT];
    let mut t8 = target.clone();
    let shape8 = bytes
        .compile()
        .unwrap()
        .run_input_any_size_with_target(
            &mut TrainState::new(),
            sample_key(case.key),
            Input::Encoded(&photo),
            Some(&mut t8),
            TensorMut::U8(&mut u8_out),
        )
        .unwrap();
    let mut f32_out = vec![0f32; MAX_OUT];
    let mut t = target;
    let shape = float
        .compile()
        .unwrap()
        .run_input_any_size_with_target(
            &mut TrainState::new(),
            sample_key(case.key),
            Input::Encoded(&photo),
            Some(&mut t),
            TensorMut::F32(&mut f32_out),
        )
        .unwrap();
    assert_eq!(shape, shape8);
    assert_eq!(t, t8, "the finish does not touch the target");
    let n = shape.iter().product::<usize>();
    let floats: Vec<u8> = f32_out[..n].iter().flat_map(|v| v.to_le_bytes()).collect();
    let boxes = t.boxes.as_ref().unwrap();
    assert_eq!(boxes.format(), BoxFormat::Xyxy);
    let masks = t.masks.as_ref().unwrap();
    format!(
        "out_shape={},{},{} out_u8={} out_f32={} out_boxes={} out_labels={} out_masks={} out_masks_shape={},{},{}",
        shape[0],
        shape[1],
        shape[2],
        sha(&u8_out[..n]),
        sha(&floats),
        hex(boxes.boxes()),
        list(&t.labels),
        sha(masks.data()),
        masks.count(),
        masks.canvas().height,
        masks.canvas().width,
    )
}

/// Writes what `make_recipe_fixtures.py` reads
/// (`$TMPDIR/tensorprep_recipe_draws.txt`): per case the photo, the target
/// and, for each random op of the preset (`words0=`, `words1=`, ...), the
/// words it draws from.
#[test]
#[ignore = "writes the draws make_recipe_fixtures.py reads"]
fn write_draws() {
    let mut lines = vec![];
    for case in cases() {
        let (_, name, t) = sample(case.image, case.format);
        let boxes = t.boxes.as_ref().unwrap();
        let canvas = boxes.canvas();
        let mut line = format!(
            "case={} key={} photo={name} format={} canvas={},{} boxes={} labels={} masks={}",
            case.recipe,
            case.key,
            boxes.format().name(),
            canvas.height,
            canvas.width,
            hex(boxes.boxes()),
            list(&t.labels),
            runs(t.masks.as_ref().unwrap()),
        );
        for op in 0..random_ops(&preset(case.recipe)) {
            let mut d = Draws::new(sample_key(case.key), op as u16);
            let words: String = (0..WORDS)
                .map(|_| format!("{:08x}", d.next_u32()))
                .collect();
            line += &format!(" words{op}={words}");
        }
        lines.push(line);
    }
    let path = std::env::temp_dir().join("tensorprep_recipe_draws.txt");
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn detection_presets_match_torchvision_s_recipes_for_the_same_draws() {
    check(None);
}

/// The same from the JPEGs, decoded by libjpeg-turbo (Pillow's decoder).
#[cfg(feature = "turbojpeg")]
#[test]
fn detection_presets_match_torchvision_s_recipes_from_the_jpeg_with_libjpeg_turbo() {
    check(Some(Decode::exact(tensorprep::jpeg::Backend::LibjpegTurbo)));
}

/// Every case through its preset (see [`run`]) against the fixture.
fn check(decode: Option<Decode>) {
    let text = std::fs::read_to_string(tensorprep_tests::fixture("targets/recipes.txt")).unwrap();
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("torch 2.15.0") && header.contains("torchvision 0.29.2"),
        "{header}"
    );
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let cases = cases();
    assert_eq!(lines.len(), cases.len());
    let mut seen = BTreeMap::<&str, Seen<'_>>::new();
    let mut differ = vec![];
    for (case, line) in cases.iter().zip(&lines) {
        let want: BTreeMap<&str, &str> = line
            .split_whitespace()
            .map(|t| t.split_once('=').unwrap())
            .collect();
        assert_eq!(
            (want["case"], want["key"]),
            (case.recipe, case.key.to_string().as_str())
        );
        let got = run(case, decode);
        for tok in got.split_whitespace() {
            let (k, v) = tok.split_once('=').unwrap();
            if want[k] != v {
                differ.push(format!(
                    "{} key {}: {k}: torchvision {} tensorprep {v}",
                    case.recipe, case.key, want[k]
                ));
            }
        }
        // The labels that come out are the input's, in order, less the
        // dropped instances.
        let (_, _, input) = sample(case.image, case.format);
        let labels: Vec<i64> = match want["out_labels"] {
            "-" => vec![],
            l => l.split(',').map(|v| v.parse().unwrap()).collect(),
        };
        let mut rest = input.labels.iter();
        assert!(
            labels.iter().all(|l| rest.any(|i| i == l)),
            "{line}: not in step with {:?}",
            input.labels
        );
        let s = seen.entry(case.recipe).or_default();
        s.resized += usize::from(want["out_shape"] != "3,151,227");
        s.dropped += usize::from(labels.len() < input.labels.len());
        s.lost_right_edge += usize::from(!labels.contains(&92));
        s.pixels.insert((case.image, want["out_u8"]));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // What the cases cover: every recipe dropped instances (the half-pixel
    // box at least, where nothing enlarges it); hflip flipped a photo in
    // some cases and not in others (more outputs than photos), and changed
    // no size; lsj and
    // multiscale resized every case, ssd and ssdlite some; lsj's crop took
    // the right edge's box away in some case and not in others.
    for (recipe, s) in &seen {
        assert!(s.dropped > 0, "{recipe}: {s:?}");
    }
    assert!(seen["hflip"].pixels.len() > 2, "{:?}", seen["hflip"]);
    assert_eq!(seen["hflip"].resized, 0);
    for recipe in ["lsj", "multiscale"] {
        assert_eq!(seen[recipe].resized, KEYS as usize, "{recipe}");
    }
    for recipe in ["ssd", "ssdlite"] {
        assert!(seen[recipe].resized > 0, "{recipe}: {:?}", seen[recipe]);
    }
    assert!(
        (1..KEYS as usize).contains(&seen["lsj"].lost_right_edge),
        "{:?}",
        seen["lsj"]
    );
}

/// What a recipe's cases did, counted.
#[derive(Debug, Default)]
struct Seen<'a> {
    resized: usize,
    dropped: usize,
    lost_right_edge: usize,
    /// (photo, pixels' hash) pairs.
    pixels: std::collections::BTreeSet<(usize, &'a str)>,
}
