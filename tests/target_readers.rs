//! Detection targets from TFRecord (the TensorFlow Object Detection API's
//! keys) and WebDataset (a `.json` member per sample): the fixtures written
//! by the independent `tfrecord` package (`fixtures/make_tf_detection_fixtures.py`)
//! read back to numpy's float32 pixel boxes, malformed records and members
//! refused naming the record, and both through the `ssd` recipe with one
//! checksum for 1 and 3 workers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tensorprep::targets::{BoxFormat, Target};
use tensorprep::train::data::tfrecord::{
    DetectionOptions, Feature, Keys, Labels, TfRecordDataset, TfRecordWriter, encode_example,
};
use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
use tensorprep::train::data::{DataError, Dataset, Sample};
use tensorprep::train::{Loader, LoaderConfig};
use tensorprep::{Tensor, decode::ImageDecoder};

/// A sample of a tar shard: its key and its members (extension, bytes).
type TarSample<'a> = (String, Vec<(&'a str, Vec<u8>)>);

/// A crafted record: its name, its features, what its refusal says.
type Case<'a> = (&'a str, Vec<(&'a str, Feature<'a>)>, &'a str);

fn fixture(name: &str) -> PathBuf {
    tensorprep_tests::fixture(&format!("tf_detection/{name}"))
}

fn detection(masks: bool) -> Labels {
    Labels::ObjectDetection(DetectionOptions { masks })
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tp-target-readers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixture("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

#[test]
fn tfrecord_object_detection_fixtures_read_as_numpy_computes_their_pixel_boxes() {
    let all = expected();
    for (file, masks) in [("od", false), ("od_masks", true)] {
        let d = TfRecordDataset::open(fixture(&format!("{file}.tfrecord")), Keys::CONVENTIONAL)
            .unwrap()
            .with_labels(detection(masks));
        let want = all[file].as_array().unwrap();
        assert_eq!(d.len(), want.len());
        let mut s = Sample::default();
        for (i, e) in want.iter().enumerate() {
            d.read(i, &mut s).unwrap();
            // The image is the encoded file, its header the canvas.
            let info = ImageDecoder::default().read_info(&s.bytes).unwrap();
            assert_eq!(
                (info.width as u64, info.height as u64),
                (e["width"].as_u64().unwrap(), e["height"].as_u64().unwrap())
            );
            assert!(s.labels.is_empty());
            let t = s.target.as_ref().unwrap();
            let b = t.boxes.as_ref().unwrap();
            assert_eq!(b.format(), BoxFormat::Xyxy);
            assert_eq!(
                (b.canvas().width, b.canvas().height),
                (info.width, info.height)
            );
            let boxes: Vec<[u32; 4]> = b.boxes().iter().map(|x| x.map(f32::to_bits)).collect();
            let want_boxes: Vec<[u32; 4]> = e["boxes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    let v = f32s(x);
                    [v[0], v[1], v[2], v[3]].map(f32::to_bits)
                })
                .collect();
            assert_eq!(boxes, want_boxes, "{file} record {i}");
            let labels: Vec<i64> = e["labels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            assert_eq!(t.labels, labels);
            assert_eq!(t.image_id, e["image_id"].as_i64());
            let flags = |k: &str| -> Vec<u8> {
                e.get(k).map_or(vec![], |v| {
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap() as u8)
                        .collect()
                })
            };
            assert_eq!(t.difficult, flags("difficult"));
            assert_eq!(t.iscrowd, flags("iscrowd"));
            assert_eq!(t.area, e.get("area").map_or(vec![], f32s));
            t.check().unwrap();
            match (&t.masks, e.get("mask_pixels")) {
                (Some(m), Some(p)) => {
                    assert_eq!(m.count(), labels.len());
                    assert!(m.data().iter().all(|&v| v <= 1));
                    let size = (info.width * info.height) as usize;
                    let ones: Vec<u64> = m
                        .data()
                        .chunks_exact(size)
                        .map(|c| c.iter().map(|&v| u64::from(v)).sum())
                        .collect();
                    let want: Vec<u64> = p
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap())
                        .collect();
                    assert_eq!(ones, want);
                }
                (None, None) => {}
                other => panic!("{file} record {i}: masks {other:?}"),
            }
        }
        // The mode is in the fingerprint (a saved state resumes on its own mode).
        let plain = TfRecordDataset::open(fixture(&format!("{file}.tfrecord")), Keys::CONVENTIONAL)
            .unwrap();
        assert_ne!(plain.fingerprint(), d.fingerprint());
    }
}

/// One record of `features` (with a real JPEG under `image/encoded`
/// unless given) in a file of its own.
fn record(name: &str, features: &[(&str, Feature<'_>)]) -> PathBuf {
    let jpeg = tensorprep_tests::read("sample_gray.jpg"); // 227 x 151
    let mut all: Vec<(&str, Feature<'_>)> = Vec::new();
    let image = [jpeg.as_slice()];
    if !features.iter().any(|(k, _)| *k == "image/encoded") {
        all.push(("image/encoded", Feature::Bytes(&image)));
    }
    all.extend_from_slice(features);
    let mut example = Vec::new();
    encode_example(&all, &mut example);
    let path = temp(&format!("{name}.tfrecord"));
    let mut w = TfRecordWriter::new(std::fs::File::create(&path).unwrap());
    w.write_record(&example).unwrap();
    path
}

/// Reads the one record of `path` in detection mode.
fn read_od(path: &Path, masks: bool) -> Result<Sample, DataError> {
    let d = TfRecordDataset::open(path, Keys::CONVENTIONAL)?.with_labels(detection(masks));
    let mut s = Sample::default();
    d.read(0, &mut s)?;
    Ok(s)
}

fn refused(result: Result<Sample, DataError>, says: &str) {
    match result {
        Err(DataError::Corrupt { what, offset, .. }) => {
            assert!(what.contains(says), "{what:?} does not say {says:?}");
            assert_eq!(offset, 0, "the record's offset");
        }
        Err(other) => panic!("{other} (expected a Corrupt error saying {says:?})"),
        Ok(s) => panic!("read {:?}, expected {says:?}", s.target),
    }
}

#[test]
fn malformed_tfrecord_object_detection_examples_are_refused_naming_the_record() {
    let two = Feature::Float(&[0.1, 0.2]);
    let one = Feature::Float(&[0.5]);
    let box_of = |x0, y0, x1, y1| {
        [
            ("image/object/bbox/xmin", x0),
            ("image/object/bbox/ymin", y0),
            ("image/object/bbox/xmax", x1),
            ("image/object/bbox/ymax", y1),
        ]
    };
    let f = |v: &'static [f32]| Feature::Float(v);
    let label1 = ("image/object/class/label", Feature::Int64(&[1]));
    // A good one first: what the bad ones differ from.
    let mut good = box_of(f(&[0.1]), f(&[0.2]), f(&[0.5]), f(&[0.6])).to_vec();
    good.push(label1);
    let s = read_od(&record("good", &good), false).unwrap();
    let b = s.target.as_ref().unwrap().boxes.clone().unwrap();
    assert_eq!(
        b.boxes(),
        &[[
            0.1f32 * 227.0,
            0.2f32 * 151.0,
            0.5f32 * 227.0,
            0.6f32 * 151.0
        ]]
    );
    // No object keys at all: no objects.
    let s = read_od(&record("empty", &[]), false).unwrap();
    assert_eq!(s.target.as_ref().unwrap().instances(), 0);

    let cases: Vec<Case<'_>> = vec![
        (
            "lengths",
            [box_of(two, one, one, one).to_vec(), vec![label1]].concat(),
            "one per object",
        ),
        (
            "no_labels",
            good[..4].to_vec(),
            "`image/object/class/label` holds 0",
        ),
        (
            "nan",
            [box_of(f(&[f32::NAN]), one, one, one).to_vec(), vec![label1]].concat(),
            "not a finite number",
        ),
        (
            "infinite",
            [
                box_of(one, one, f(&[f32::INFINITY]), one).to_vec(),
                vec![label1],
            ]
            .concat(),
            "not a finite number",
        ),
        (
            "pixels",
            [box_of(one, one, f(&[35.0]), one).to_vec(), vec![label1]].concat(),
            "normalised",
        ),
        (
            "negative_size",
            [
                box_of(f(&[0.6]), one, f(&[0.4]), one).to_vec(),
                vec![label1],
            ]
            .concat(),
            "maximum is below its minimum",
        ),
        (
            "bbox_as_ints",
            [
                box_of(Feature::Int64(&[0]), one, one, one).to_vec(),
                vec![label1],
            ]
            .concat(),
            "not a float list",
        ),
        (
            "height",
            [good.clone(), vec![("image/height", Feature::Int64(&[150]))]].concat(),
            "`image/height` is 150, the image's header says 151",
        ),
        (
            "width_twice",
            [
                good.clone(),
                vec![("image/width", Feature::Int64(&[227, 227]))],
            ]
            .concat(),
            "holds 2 values",
        ),
        (
            "difficult",
            [
                good.clone(),
                vec![("image/object/difficult", Feature::Int64(&[2]))],
            ]
            .concat(),
            "not 0 or 1",
        ),
        (
            "crowd_lengths",
            [
                good.clone(),
                vec![("image/object/is_crowd", Feature::Int64(&[0, 1]))],
            ]
            .concat(),
            "one per object",
        ),
        (
            "area",
            [
                good.clone(),
                vec![("image/object/area", Feature::Float(&[-1.0]))],
            ]
            .concat(),
            "not a finite size",
        ),
        (
            "texts",
            [
                good.clone(),
                vec![("image/object/class/text", Feature::Bytes(&[b"a", b"b"]))],
            ]
            .concat(),
            "one per object",
        ),
        (
            "twice",
            [good.clone(), vec![label1]].concat(),
            "given twice",
        ),
        (
            "no_image",
            [good.clone(), vec![("image/encoded", Feature::Bytes(&[]))]].concat(),
            "holds no bytes",
        ),
        (
            "not_an_image",
            [
                good.clone(),
                vec![("image/encoded", Feature::Bytes(&[b"not an image"]))],
            ]
            .concat(),
            "the image's header",
        ),
    ];
    for (name, features, says) in cases {
        println!("{name}");
        refused(read_od(&record(name, &features), false), says);
    }
    // Masks asked for: absent, or a PNG of another size, or not a PNG.
    refused(
        read_od(&record("no_masks", &good), true),
        "`image/object/mask` holds 0",
    );
    let small = {
        let mut png = Vec::new();
        let mut e = png::Encoder::new(&mut png, 4, 3);
        e.set_color(png::ColorType::Grayscale);
        e.write_header()
            .unwrap()
            .write_image_data(&[1; 12])
            .unwrap();
        png
    };
    let masks = [small.as_slice()];
    let wrong_size = [
        good.clone(),
        vec![("image/object/mask", Feature::Bytes(&masks))],
    ]
    .concat();
    refused(
        read_od(&record("mask_size", &wrong_size), true),
        "4x3 on an image of 227x151",
    );
    let not_png = [
        good.clone(),
        vec![("image/object/mask", Feature::Bytes(&[b"\xff\xd8\xff"]))],
    ]
    .concat();
    refused(read_od(&record("mask_jpeg", &not_png), true), "not a PNG");
    // Without masks asked for, the mask key is not read.
    assert!(read_od(&record("mask_unread", &not_png), false).is_ok());
}

/// A tar shard of samples: `(key, [(extension, bytes)])`.
fn shard(name: &str, samples: &[TarSample<'_>]) -> PathBuf {
    let path = temp(name);
    let mut b = tar::Builder::new(std::fs::File::create(&path).unwrap());
    for (key, members) in samples {
        for (ext, bytes) in members {
            let mut h = tar::Header::new_ustar();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, format!("{key}.{ext}"), bytes.as_slice())
                .unwrap();
        }
    }
    b.finish().unwrap();
    path
}

fn read_json(name: &str, target: Value) -> Result<Sample, DataError> {
    let jpeg = tensorprep_tests::read("sample_gray.jpg"); // 227 x 151
    let json = serde_json::to_vec(&target).unwrap();
    let path = shard(
        &format!("{name}.tar"),
        &[("a".into(), vec![("jpg", jpeg), ("json", json)])],
    );
    let d = WebDataset::open_with_targets(path.to_str().unwrap(), WebKeys::CONVENTIONAL, "json")?;
    let mut s = Sample::default();
    d.read(0, &mut s)?;
    Ok(s)
}

#[test]
fn webdataset_json_targets_in_both_shapes() {
    let s = read_json(
        "boxes",
        json!({"boxes": [[1, 2, 30, 40.5], [0, 0, 227, 151]], "format": "XYXY", "labels": [3, 4],
               "iscrowd": [0, 1], "area": [10, 20], "difficult": [1, 0], "image_id": 77,
               "height": 151, "width": 227,
               "keypoints": [[[1, 2, 2], [3, 4, 0]], [[5, 6, 1], [7, 8, 2]]]}),
    )
    .unwrap();
    let t = s.target.as_ref().unwrap();
    let b = t.boxes.as_ref().unwrap();
    assert_eq!(b.format(), BoxFormat::Xyxy);
    assert_eq!((b.canvas().width, b.canvas().height), (227, 151));
    assert_eq!(
        b.boxes(),
        &[[1.0, 2.0, 30.0, 40.5], [0.0, 0.0, 227.0, 151.0]]
    );
    assert_eq!(
        (&t.labels[..], &t.iscrowd[..], &t.difficult[..]),
        (&[3i64, 4][..], &[0u8, 1][..], &[1u8, 0][..])
    );
    assert_eq!(t.area, [10.0, 20.0]);
    assert_eq!(t.image_id, Some(77));
    let k = t.keypoints.as_ref().unwrap();
    assert_eq!(k.per_instance, 2);
    assert_eq!(
        k.points.points(),
        &[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]
    );
    assert_eq!(k.visibility, [2, 0, 1, 2]);

    let s = read_json(
        "coco",
        json!({"annotations": [{"bbox": [1, 2, 3, 4], "category_id": 18, "area": 12},
                               {"bbox": [5, 6, 7, 8], "category_id": 1, "iscrowd": 1, "area": 56}]}),
    )
    .unwrap();
    let t = s.target.as_ref().unwrap();
    let b = t.boxes.as_ref().unwrap();
    assert_eq!(b.format(), BoxFormat::Xywh);
    assert_eq!(b.boxes(), &[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]);
    assert_eq!(
        (&t.labels[..], &t.iscrowd[..]),
        (&[18i64, 1][..], &[0u8, 1][..])
    );
    assert_eq!(t.area, [12.0, 56.0]);
    let s = read_json(
        "cxcywh",
        json!({"boxes": [[10, 10, 4, 6]], "format": "CXCYWH", "labels": [0]}),
    )
    .unwrap();
    assert_eq!(
        s.target.as_ref().unwrap().boxes.as_ref().unwrap().format(),
        BoxFormat::Cxcywh
    );
    let s = read_json("none", json!({"boxes": [], "format": "XYXY", "labels": []})).unwrap();
    assert_eq!(s.target.as_ref().unwrap().instances(), 0);
}

#[test]
fn malformed_webdataset_json_targets_are_refused_naming_the_sample() {
    let cases = [
        (
            json!({"boxes": [[1, 2, 3, 4]], "labels": [1]}),
            "without their `format`",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "xyxy", "labels": [1]}),
            "not XYXY",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "XYXY"}),
            "without `labels`",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "XYXY", "labels": [1, 2]}),
            "one per object",
        ),
        (
            json!({"boxes": [[1, 2, 3]], "format": "XYXY", "labels": [1]}),
            "line 1",
        ),
        (
            json!({"boxes": [[1, 2, 0, 4]], "format": "XYXY", "labels": [1]}),
            "negative size",
        ),
        (
            json!({"boxes": [[1, 2, -3, 4]], "format": "XYWH", "labels": [1]}),
            "negative size",
        ),
        (
            json!({"boxes": [[1, 2, 1e39, 4]], "format": "XYWH", "labels": [1]}),
            "finite float32",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "XYWH", "labels": [1.5]}),
            "line 1",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "XYWH", "labels": [1], "iscrowd": [2]}),
            "not 0 or 1",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "XYWH", "labels": [1], "area": [-2]}),
            "not a finite size",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "XYWH", "labels": [1], "height": 150}),
            "`height` is 150",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "XYWH", "labels": [1], "keypoints": [[[1, 2, 3]]]}),
            "visibility 3",
        ),
        (
            json!({"boxes": [[1, 2, 3, 4]], "format": "XYWH", "labels": [1], "keypoints": []}),
            "0 instances for 1 boxes",
        ),
        (json!({"labels": [1]}), "neither `boxes` nor `annotations`"),
        (
            json!({"boxes": [], "format": "XYXY", "labels": [], "annotations": []}),
            "both",
        ),
        (
            json!({"annotations": [{"bbox": [1, 2, 3, 4]}]}),
            "category_id",
        ),
        (
            json!({"annotations": [{"bbox": [1, 2, 3, 4], "category_id": 1, "area": 3},
                                {"bbox": [1, 2, 3, 4], "category_id": 1}]}),
            "every one or none",
        ),
        (json!([1, 2]), "line 1"),
    ];
    for (i, (target, says)) in cases.into_iter().enumerate() {
        match read_json(&format!("bad{i}"), target.clone()) {
            Err(DataError::Corrupt { what, .. }) => {
                assert!(what.contains("sample `a`"), "{what}");
                assert!(
                    what.contains(says),
                    "{target}: {what:?} does not say {says:?}"
                );
            }
            other => panic!("{target}: {other:?}"),
        }
    }
    // A sample without its target member: refused at open, naming it.
    let jpeg = tensorprep_tests::read("sample_gray.jpg");
    let json = br#"{"boxes": [], "format": "XYXY", "labels": []}"#.to_vec();
    let path = shard(
        "missing.tar",
        &[
            ("a".into(), vec![("jpg", jpeg.clone()), ("json", json)]),
            ("b".into(), vec![("jpg", jpeg)]),
        ],
    );
    let e = WebDataset::open_with_targets(path.to_str().unwrap(), WebKeys::CONVENTIONAL, "json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("sample `b` has no `.json` target member"), "{e}");
    // Without targets asked for, the same shard reads as before.
    assert_eq!(
        WebDataset::open(path.to_str().unwrap(), WebKeys::CONVENTIONAL)
            .unwrap()
            .len(),
        2
    );
    // The target extension may not be the image's.
    assert!(
        WebDataset::open_with_targets(path.to_str().unwrap(), WebKeys::CONVENTIONAL, "JPG")
            .is_err()
    );
}

/// Every batch's indices, pixels, boxes and labels hashed, and the number
/// of boxes seen.
fn checksum(dataset: Arc<dyn Dataset>, workers: usize) -> (u64, usize) {
    let mut c = LoaderConfig::new(4, workers, 9);
    c.max_shape = Some([641, 960, 3]);
    let mut h = tensorprep::Fnv1a64::new();
    let mut boxes = 0;
    for b in Loader::new(dataset, tensorprep_tests::small_ssd_plan(), c).unwrap() {
        let b = b.unwrap();
        for i in b.indices() {
            h.update(&i.to_le_bytes());
        }
        let Tensor::U8(t) = b.tensor() else {
            unreachable!("an 8-bit plan")
        };
        h.update(t);
        for t in b.targets().flatten() {
            let t: &Target = t;
            let bx = t.boxes.as_ref().unwrap();
            boxes += bx.len();
            for v in bx.boxes().iter().flatten() {
                h.update(&v.to_bits().to_le_bytes());
            }
            for l in &t.labels {
                h.update(&l.to_le_bytes());
            }
        }
    }
    (h.finish(), boxes)
}

/// `i`'s objects on a `w` x `h` photo: normalised XYXY corners and labels.
fn objects(i: usize) -> Vec<([f32; 4], i64)> {
    (0..1 + i % 4)
        .map(|k| {
            let x = ((7 * (i + k)) % 50) as f32 / 100.0;
            let y = ((11 * (i + 2 * k)) % 50) as f32 / 100.0;
            (
                [x, y, x + 0.2 + k as f32 * 0.05, y + 0.3],
                [3, 7, 11][k % 3],
            )
        })
        .collect()
}

#[test]
fn tfrecord_and_webdataset_targets_through_the_ssd_recipe_give_one_checksum() {
    let photos = [
        (tensorprep_tests::read("sample.jpg"), (451u32, 300u32)),
        (tensorprep_tests::read("sklearn_china.jpg"), (640, 427)),
    ];
    // TFRecord, 10 records.
    let path = temp("ssd.tfrecord");
    let mut w = TfRecordWriter::new(std::fs::File::create(&path).unwrap());
    let mut example = Vec::new();
    for i in 0..10 {
        let (jpeg, _) = &photos[i % 2];
        let o = objects(i);
        let corner = |c: usize| -> Vec<f32> { o.iter().map(|(b, _)| b[c]).collect() };
        let (x0, y0, x1, y1) = (corner(0), corner(1), corner(2), corner(3));
        let labels: Vec<i64> = o.iter().map(|(_, l)| *l).collect();
        let image = [jpeg.as_slice()];
        encode_example(
            &[
                ("image/encoded", Feature::Bytes(&image)),
                ("image/object/bbox/xmin", Feature::Float(&x0)),
                ("image/object/bbox/ymin", Feature::Float(&y0)),
                ("image/object/bbox/xmax", Feature::Float(&x1)),
                ("image/object/bbox/ymax", Feature::Float(&y1)),
                ("image/object/class/label", Feature::Int64(&labels)),
            ],
            &mut example,
        );
        w.write_record(&example).unwrap();
    }
    drop(w);
    let tf = || -> Arc<dyn Dataset> {
        Arc::new(
            TfRecordDataset::open(&path, Keys::CONVENTIONAL)
                .unwrap()
                .with_labels(detection(false)),
        )
    };
    let (one, boxes) = checksum(tf(), 1);
    assert!(boxes > 0);
    assert_eq!(checksum(tf(), 3), (one, boxes));

    // WebDataset: the same photos, the boxes in pixels as JSON.
    let samples: Vec<TarSample<'_>> = (0..10)
        .map(|i| {
            let (jpeg, (pw, ph)) = &photos[i % 2];
            let o = objects(i);
            let boxes: Vec<[f32; 4]> = o
                .iter()
                .map(|(b, _)| {
                    let (w, h) = (*pw as f32, *ph as f32);
                    [b[0] * w, b[1] * h, b[2] * w, b[3] * h]
                })
                .collect();
            let labels: Vec<i64> = o.iter().map(|(_, l)| *l).collect();
            let json = json!({"boxes": boxes, "format": "XYXY", "labels": labels});
            (
                format!("s{i:03}"),
                vec![
                    ("jpg", jpeg.clone()),
                    ("json", serde_json::to_vec(&json).unwrap()),
                ],
            )
        })
        .collect();
    let tar = shard("ssd.tar", &samples);
    let wds = || -> Arc<dyn Dataset> {
        Arc::new(
            WebDataset::open_with_targets(tar.to_str().unwrap(), WebKeys::CONVENTIONAL, "json")
                .unwrap(),
        )
    };
    let (one_w, boxes_w) = checksum(wds(), 1);
    assert_eq!(checksum(wds(), 3), (one_w, boxes_w));
    // The same photos and the same pixel boxes (float32 products both
    // ways): the two readers give the same batches.
    assert_eq!((one_w, boxes_w), (one, boxes));
}
