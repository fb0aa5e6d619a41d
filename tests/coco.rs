//! COCO's masks against pycocotools 2.0.11: every crafted annotation of
//! `fixtures/coco/masks.json` (made by `fixtures/make_coco_fixtures.py`)
//! decoded or rasterised here equals `COCO.annToMask` byte for byte, and
//! the malformed ones are refused.

use serde_json::Value;
use tensorprep::targets::rle::{MAX_POLYGON_STEPS, paint_polygons};
use tensorprep::targets::{Canvas, Masks, Polygons, Rle};

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/coco/masks.json");
    let text = std::fs::read_to_string(path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(
        v["made_by"]
            .as_str()
            .unwrap()
            .contains("pycocotools 2.0.11")
    );
    v["cases"].as_array().unwrap().clone()
}

fn polygon(part: &Value) -> Vec<f64> {
    part.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Our mask of one case's segmentation, row-major.
fn mask_of(segmentation: &Value, canvas: Canvas) -> Vec<u8> {
    let size = (canvas.height * canvas.width) as usize;
    match segmentation {
        Value::Array(parts) => {
            let parts: Vec<Vec<f64>> = parts.iter().map(polygon).collect();
            let mut mask = vec![0; size];
            let mut budget = MAX_POLYGON_STEPS;
            paint_polygons(
                parts.iter().map(Vec::as_slice),
                canvas,
                &mut mask,
                &mut budget,
            )
            .unwrap();
            mask
        }
        Value::Object(rle) => match &rle["counts"] {
            Value::String(s) => Rle::from_compressed(s.as_bytes(), canvas).unwrap(),
            Value::Array(c) => {
                let counts: Vec<u64> = c.iter().map(|x| x.as_u64().unwrap()).collect();
                Rle::from_counts(&counts, canvas).unwrap()
            }
            other => panic!("{other}"),
        }
        .decode()
        .unwrap(),
        other => panic!("{other}"),
    }
}

/// One case's segmentation kept as [`Polygons`], rasterised.
fn polygons_of(segmentation: &Value, canvas: Canvas) -> Masks {
    let mut p = Polygons::new(canvas);
    match segmentation {
        Value::Array(parts) => {
            let parts: Vec<Vec<f64>> = parts.iter().map(polygon).collect();
            p.push(parts.iter().map(Vec::as_slice)).unwrap();
        }
        Value::Object(_) => {
            let mask = mask_of(segmentation, canvas);
            p.push_rle(&Rle::from_mask(&mask, canvas).unwrap()).unwrap();
        }
        other => panic!("{other}"),
    }
    p.rasterize().unwrap()
}

#[test]
fn masks_equal_pycocotools_ann_to_mask() {
    let cases = cases();
    let mut matched = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let h = case["height"].as_u64().unwrap() as u32;
        let w = case["width"].as_u64().unwrap() as u32;
        let canvas = Canvas::new(h, w).unwrap();
        let expected_rle = case["mask_rle"].as_str().unwrap();
        let expected = Rle::from_compressed(expected_rle.as_bytes(), canvas)
            .unwrap()
            .decode()
            .unwrap();
        let ours = mask_of(&case["segmentation"], canvas);
        assert_eq!(ours, expected, "{name}");
        // Kept as polygons (an RLE as its runs' rectangles), rasterised
        // without an op: the same pixels.
        assert_eq!(
            polygons_of(&case["segmentation"], canvas).data(),
            expected,
            "{name}: as polygons"
        );
        let encoded = Rle::from_mask(&ours, canvas).unwrap();
        assert_eq!(encoded.to_compressed(), expected_rle, "{name}: encode");
        assert_eq!(
            encoded.area(),
            case["mask_area"].as_u64().unwrap(),
            "{name}: area"
        );
        // Each polygon part alone is pycocotools' `frPyObjects` RLE, count
        // for count (not only the same pixels).
        if let Some(parts) = case.get("parts_rle") {
            let segm = case["segmentation"].as_array().unwrap();
            for (part, rle) in segm.iter().zip(parts.as_array().unwrap()) {
                let ours = Rle::from_polygon(&polygon(part), canvas).unwrap();
                assert_eq!(ours.to_compressed(), rle.as_str().unwrap(), "{name}: part");
            }
        }
        matched += 1;
    }
    assert_eq!(matched, cases.len());
    assert!(matched >= 140, "{matched}");
}

#[test]
fn malformed_masks_are_refused() {
    let canvas = Canvas::new(4, 5).unwrap();
    let err = |r: Result<Rle, tensorprep::Error>| r.unwrap_err().to_string();
    // Polygons: odd coordinates, fewer than three points, not finite, huge.
    assert!(err(Rle::from_polygon(&[1.0, 1.0, 3.0, 1.0, 2.0], canvas)).contains("odd"));
    assert!(err(Rle::from_polygon(&[1.0, 1.0, 3.0, 1.0], canvas)).contains("three points"));
    for v in [f64::NAN, f64::INFINITY, 3e8] {
        let e = err(Rle::from_polygon(&[v, 1.0, 3.0, 1.0, 2.0, 2.0], canvas));
        assert!(e.contains("not finite or beyond"), "{e}");
    }
    // A walk past the cap is refused before it is walked.
    let far = 2.0e8;
    let e = err(Rle::from_polygon(&[0.0, 0.0, far, 0.0, far, far], canvas));
    assert!(e.contains("MAX_POLYGON_STEPS"), "{e}");
    // The cap holds over several parts too.
    let part = [0.0, 0.0, 1.0e6, 0.0, 1.0e6, 1.0e6];
    let mut mask = vec![0; 20];
    let mut budget = MAX_POLYGON_STEPS;
    let many = std::iter::repeat_n(&part[..], 100);
    assert!(paint_polygons(many, canvas, &mut mask, &mut budget).is_err());
    // Uncompressed RLE: the sum must be H * W.
    assert!(err(Rle::from_counts(&[3, 4], canvas)).contains("do not sum"));
    assert!(err(Rle::from_counts(&[10, 11], canvas)).contains("do not sum"));
    assert!(err(Rle::from_counts(&[u64::MAX, 21], canvas)).contains("larger than"));
    // Compressed RLE: characters, truncation, sum, negative counts.
    let good = Rle::from_counts(&[4, 1, 2, 13], canvas)
        .unwrap()
        .to_compressed();
    assert_eq!(
        Rle::from_compressed(good.as_bytes(), canvas)
            .unwrap()
            .counts(),
        [4, 1, 2, 13]
    );
    assert!(err(Rle::from_compressed(b"4 1", canvas)).contains("outside '0'..='o'"));
    assert!(err(Rle::from_compressed(b"4p", canvas)).contains("outside"));
    assert!(err(Rle::from_compressed(b"4P", canvas)).contains("ends inside"));
    assert!(err(Rle::from_compressed(b"41", canvas)).contains("do not sum"));
    assert!(err(Rle::from_compressed(b"@", canvas)).contains("outside 0..="));
    assert!(err(Rle::from_compressed(b"PPPPPPPP0", canvas)).contains("longer than 7"));
    // An empty string is no runs: not H * W pixels.
    assert!(Rle::from_compressed(b"", canvas).is_err());
}

mod reader {
    use std::path::{Path, PathBuf};

    use serde_json::{Value, json};
    use tensorprep::targets::rle::MAX_POLYGON_STEPS;
    use tensorprep::targets::{BoxFormat, Canvas, Rle};
    use tensorprep::train::data::coco::{
        Categories, Coco, CocoOptions, Crowd, MAX_ANNOTATION_BYTES, MaskMode,
    };
    use tensorprep::train::data::{Dataset, Sample};

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

    /// A scratch COCO folder: `images/` with three small JPEGs of the
    /// fixtures (a.jpg 451x300, b.jpg and c.jpg 227x151) and `ann.json`.
    fn tree(tag: &str, json: &Value) -> (PathBuf, PathBuf) {
        let root = std::env::temp_dir().join(format!("tp-coco-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let images = root.join("images");
        std::fs::create_dir_all(images.join("sub")).unwrap();
        for (from, to) in [
            ("sample.jpg", "a.jpg"),
            ("sample_gray.jpg", "b.jpg"),
            ("sample_progressive.jpg", "c.jpg"),
        ] {
            std::fs::copy(Path::new(FIXTURES).join(from), images.join(to)).unwrap();
        }
        let ann = root.join("ann.json");
        std::fs::write(&ann, serde_json::to_vec_pretty(json).unwrap()).unwrap();
        (images, ann)
    }

    fn square() -> Vec<f64> {
        vec![10.5, 20.0, 110.5, 20.0, 110.5, 70.0, 10.5, 70.0]
    }

    /// Images in a non-sorted id order (3, 1, 7), categories in a
    /// non-sorted id order (18, 1, 5); image 7 has no objects; annotation 11
    /// is a crowd with an uncompressed RLE of 500 pixels.
    fn annotations() -> Value {
        json!({
            "info": {"description": "crafted for tests/coco.rs"},
            "images": [
                {"id": 3, "file_name": "a.jpg", "height": 300, "width": 451},
                {"id": 1, "file_name": "b.jpg", "height": 151, "width": 227},
                {"id": 7, "file_name": "c.jpg", "height": 151, "width": 227},
            ],
            "categories": [
                {"id": 18, "name": "dog"}, {"id": 1, "name": "person"}, {"id": 5, "name": "car"},
            ],
            "annotations": [
                {"id": 10, "image_id": 3, "category_id": 18, "bbox": [10.5, 20, 100, 50],
                 "area": 5000.0, "iscrowd": 0, "segmentation": [square()]},
                {"id": 11, "image_id": 3, "category_id": 1, "bbox": [0, 0, 451, 300],
                 "area": 500, "iscrowd": 1,
                 "segmentation": {"size": [300, 451], "counts": [1000, 500, 300 * 451 - 1500]}},
                {"id": 12, "image_id": 1, "category_id": 5, "bbox": [1.25, 2, 3, 4],
                 "area": 12.5, "iscrowd": 0,
                 "segmentation": [[1.25, 2, 4.25, 2, 4.25, 6], [0, 0, 1, 0, 1, 1]]},
            ],
        })
    }

    fn read(coco: &Coco, i: usize) -> Sample {
        let mut s = Sample::default();
        coco.read(i, &mut s).unwrap();
        s
    }

    #[test]
    fn one_sample_per_image_in_the_file_s_order_with_its_objects() {
        let (images, ann) = tree("plain", &annotations());
        let coco = Coco::open(&images, &ann, CocoOptions::default()).unwrap();
        assert_eq!(coco.len(), 3);
        let s = read(&coco, 0);
        assert_eq!(s.bytes, std::fs::read(images.join("a.jpg")).unwrap());
        assert_eq!(s.id, 3);
        assert!(s.labels.is_empty());
        let t = s.target.unwrap();
        assert_eq!(t.image_id, Some(3));
        let boxes = t.boxes.as_ref().unwrap();
        assert_eq!(boxes.format(), BoxFormat::Xywh);
        assert_eq!(boxes.canvas(), Canvas::new(300, 451).unwrap());
        assert_eq!(
            boxes.boxes(),
            &[[10.5, 20.0, 100.0, 50.0], [0.0, 0.0, 451.0, 300.0]]
        );
        assert_eq!(t.labels, [18, 1]);
        assert_eq!(t.iscrowd, [0, 1]);
        assert_eq!(t.area, [5000.0, 500.0]);
        assert!(t.masks.is_none());
        t.check().unwrap();
        assert_eq!(read(&coco, 1).id, 1);
        // An image without objects is kept, with an empty target.
        let empty = read(&coco, 2).target.unwrap();
        assert_eq!((empty.image_id, empty.instances()), (Some(7), 0));
        let d = coco.describe(0);
        assert!(d.contains("a.jpg") && d.contains("image 3"), "{d}");
        assert_eq!(coco.categories()[0], (1, "person".to_string()));
        assert!(coco.read(3, &mut Sample::default()).is_err());
        std::fs::remove_dir_all(images.parent().unwrap()).unwrap();
    }

    #[test]
    fn masks_categories_crowds_and_empty_images_as_asked() {
        let (images, ann) = tree("options", &annotations());
        let options = CocoOptions {
            masks: MaskMode::Pixels,
            categories: Categories::ContiguousFrom1,
            crowd: Crowd::Drop,
            keep_empty: false,
            ..CocoOptions::default()
        };
        let coco = Coco::open(&images, &ann, options).unwrap();
        assert_eq!(coco.len(), 2);
        let t = read(&coco, 0).target.unwrap();
        assert_eq!(
            (t.labels.as_slice(), t.iscrowd.as_slice()),
            (&[3][..], &[0][..])
        );
        let canvas = Canvas::new(300, 451).unwrap();
        let masks = t.masks.unwrap();
        assert_eq!((masks.count(), masks.canvas()), (1, canvas));
        let square = Rle::from_polygon(&square(), canvas).unwrap();
        assert_eq!(masks.data(), square.decode().unwrap());
        assert_eq!(square.area(), 100 * 50);
        // Two parts, one mask: their union.
        let t = read(&coco, 1).target.unwrap();
        assert_eq!(t.labels, [2]);
        let small = Canvas::new(151, 227).unwrap();
        let mut union = Rle::from_polygon(&[1.25, 2.0, 4.25, 2.0, 4.25, 6.0], small)
            .unwrap()
            .decode()
            .unwrap();
        Rle::from_polygon(&[0.0, 0.0, 1.0, 0.0, 1.0, 1.0], small)
            .unwrap()
            .paint(&mut union)
            .unwrap();
        assert_eq!(t.masks.unwrap().data(), union);

        // Kept crowds carry iscrowd = 1 and their RLE mask.
        let options = CocoOptions {
            masks: MaskMode::Pixels,
            categories: Categories::ContiguousFrom0,
            ..CocoOptions::default()
        };
        let coco = Coco::open(&images, &ann, options).unwrap();
        let t = read(&coco, 0).target.unwrap();
        assert_eq!(
            (t.labels.as_slice(), t.iscrowd.as_slice()),
            (&[2, 0][..], &[0, 1][..])
        );
        let m = t.masks.unwrap();
        assert_eq!(m.count(), 2);
        let crowd = &m.data()[300 * 451..];
        assert_eq!(crowd.iter().map(|&v| u32::from(v)).sum::<u32>(), 500);
        // Column-major runs: pixel 1000 is column 3, row 100.
        assert_eq!((crowd[100 * 451 + 3], crowd[99 * 451 + 3]), (1, 0));

        // The fingerprint follows the options and the content.
        let a = Coco::open(&images, &ann, CocoOptions::default()).unwrap();
        let b = Coco::open(&images, &ann, CocoOptions::default()).unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.fingerprint(), coco.fingerprint());
        std::fs::remove_dir_all(images.parent().unwrap()).unwrap();
    }

    /// The error `Coco::open` (or, with `at_read`, reading sample 0) gives
    /// for the annotations after `edit`; with `masks`, the same whether they
    /// are decoded as pixels or kept as polygons.
    fn error(tag: &str, masks: bool, at_read: bool, edit: impl FnOnce(&mut Value)) -> String {
        let modes: &[MaskMode] = if masks {
            &[MaskMode::Pixels, MaskMode::Polygons]
        } else {
            &[MaskMode::Off]
        };
        error_in(tag, modes, at_read, edit)
    }

    /// [`error`] for the mask modes `modes`.
    fn error_in(
        tag: &str,
        modes: &[MaskMode],
        at_read: bool,
        edit: impl FnOnce(&mut Value),
    ) -> String {
        let mut json = annotations();
        edit(&mut json);
        let (images, ann) = tree(tag, &json);
        let errors: Vec<String> = modes
            .iter()
            .map(|&masks| {
                let options = CocoOptions {
                    masks,
                    ..CocoOptions::default()
                };
                let opened = Coco::open(&images, &ann, options);
                let e = if at_read {
                    let coco = opened.unwrap();
                    coco.read(0, &mut Sample::default()).unwrap_err()
                } else {
                    opened.unwrap_err()
                };
                e.to_string()
            })
            .collect();
        std::fs::remove_dir_all(images.parent().unwrap()).unwrap();
        assert!(errors.iter().all(|e| *e == errors[0]), "{tag}: {errors:?}");
        errors[0].clone()
    }

    #[test]
    fn bad_annotations_are_errors_naming_the_record() {
        type Edit = Box<dyn FnOnce(&mut Value)>;
        let cases: Vec<(&str, bool, bool, Edit, &str)> = vec![
            (
                "unknown_image",
                false,
                false,
                Box::new(|j| j["annotations"][0]["image_id"] = json!(99)),
                "annotation 10 (image 99): an image id that no image has",
            ),
            (
                "unknown_category",
                false,
                false,
                Box::new(|j| j["annotations"][2]["category_id"] = json!(2)),
                "annotation 12 (image 1): category_id 2 that no category has",
            ),
            (
                "negative_box",
                false,
                false,
                Box::new(|j| j["annotations"][1]["bbox"][2] = json!(-1)),
                "annotation 11 (image 3): a box with a negative",
            ),
            (
                "huge_box",
                false,
                false,
                Box::new(|j| j["annotations"][1]["bbox"][3] = json!(1e300)),
                "annotation 11 (image 3): a box with a negative or not finite",
            ),
            (
                "crowd_2",
                false,
                false,
                Box::new(|j| j["annotations"][0]["iscrowd"] = json!(2)),
                "annotation 10 (image 3): iscrowd other than 0 or 1",
            ),
            (
                "odd_polygon",
                true,
                false,
                Box::new(|j| j["annotations"][2]["segmentation"][1] = json!([0, 0, 1, 0, 1])),
                "annotation 12 (image 1): a polygon with an odd number of coordinates",
            ),
            (
                "short_polygon",
                true,
                false,
                Box::new(|j| j["annotations"][2]["segmentation"][0] = json!([0, 0, 1, 0])),
                "annotation 12 (image 1): a polygon with fewer than three points",
            ),
            (
                "no_segmentation",
                true,
                false,
                Box::new(|j| {
                    j["annotations"][0]
                        .as_object_mut()
                        .unwrap()
                        .remove("segmentation");
                }),
                "annotation 10 (image 3): no segmentation",
            ),
            (
                "duplicate_image",
                false,
                false,
                Box::new(|j| j["images"][2]["id"] = json!(1)),
                "two images with id 1",
            ),
            (
                "duplicate_annotation",
                false,
                false,
                Box::new(|j| j["annotations"][2]["id"] = json!(10)),
                "annotation 10 (image 1): a second annotation with this id",
            ),
            (
                "duplicate_category",
                false,
                false,
                Box::new(|j| j["categories"][2]["id"] = json!(18)),
                "two categories with id 18",
            ),
            (
                "escaping_name",
                false,
                false,
                Box::new(|j| j["images"][0]["file_name"] = json!("../ann.json")),
                "image 3: file_name \"../ann.json\" is not a path inside the images folder",
            ),
            (
                "absolute_name",
                false,
                false,
                Box::new(|j| j["images"][0]["file_name"] = json!("/etc/passwd")),
                "is not a path inside the images folder",
            ),
            (
                "zero_height",
                false,
                false,
                Box::new(|j| j["images"][1]["height"] = json!(0)),
                "image 1 (b.jpg): size 227x0",
            ),
            (
                "missing_field",
                false,
                false,
                Box::new(|j| {
                    j["annotations"][1].as_object_mut().unwrap().remove("bbox");
                }),
                "missing field `bbox`",
            ),
            (
                "rle_sum",
                true,
                true,
                Box::new(|j| j["annotations"][1]["segmentation"]["counts"][2] = json!(5)),
                "annotation 11 (image 3): ",
            ),
            (
                "rle_size",
                true,
                true,
                Box::new(|j| j["annotations"][1]["segmentation"]["size"] = json!([451, 300])),
                "annotation 11 (image 3): an RLE of size 451x300 on an image of 300x451",
            ),
            (
                "rle_string",
                true,
                true,
                Box::new(|j| j["annotations"][1]["segmentation"]["counts"] = json!("0 1")),
                "annotation 11 (image 3): ",
            ),
            (
                "missing_image",
                false,
                true,
                Box::new(|j| j["images"][0]["file_name"] = json!("gone.jpg")),
                "gone.jpg",
            ),
            (
                "directory_image",
                false,
                true,
                Box::new(|j| j["images"][0]["file_name"] = json!("sub")),
                "not a regular file",
            ),
        ];
        for (tag, masks, at_read, edit, expected) in cases {
            let e = error(tag, masks, at_read, edit);
            assert!(e.contains(expected), "{tag}: {e}");
            assert!(at_read || e.contains("ann.json"), "{tag}: {e}");
        }
        // The RLE's own complaint follows the record.
        let e = error("rle_sum2", true, true, |j| {
            j["annotations"][1]["segmentation"]["counts"][2] = json!(5)
        });
        assert!(e.contains("ann.json") && e.contains("do not sum"), "{e}");
        // A polygon too long to walk is refused, not walked, when decoded
        // at read ...
        let far = (MAX_POLYGON_STEPS / 5) as f64;
        let long_walk = |j: &mut Value| {
            j["annotations"][0]["segmentation"] = json!([[0, 0, far, 0, far, far]]);
        };
        let e = error_in("long_walk", &[MaskMode::Pixels], true, long_walk);
        assert!(e.contains("MAX_POLYGON_STEPS"), "{e}");
        // ... and clipped to the canvas's margin when kept as a polygon: the
        // pixels of the same triangle with its far corner brought near.
        let mask = |tag: &str, corner: f64| {
            let mut json = annotations();
            json["annotations"][0]["segmentation"] = json!([[0, 0, corner, 0, corner, corner]]);
            let (images, ann) = tree(tag, &json);
            let options = CocoOptions {
                masks: MaskMode::Polygons,
                ..CocoOptions::default()
            };
            let coco = Coco::open(&images, &ann, options).unwrap();
            let mut t = read(&coco, 0).target.unwrap();
            std::fs::remove_dir_all(images.parent().unwrap()).unwrap();
            t.rasterize_polygons().unwrap();
            t.masks.unwrap().into_data()
        };
        let (clipped, near) = (mask("far_corner", far), mask("near_corner", 1000.0));
        assert_eq!(clipped, near);
        assert!(clipped.iter().filter(|&&v| v == 1).count() > 300 * 300 / 2);
    }

    /// COCO person key points (`person_keypoints_*.json`'s layout): each
    /// object's `[x, y, v]` triples, the flip index from the category's
    /// names (torchvision's detection references' `flip_inds` for COCO's
    /// 17 names), and the malformed ones refused naming the annotation.
    #[test]
    fn key_points_with_visibility_and_the_flip_index_of_their_names() {
        let names = [
            "nose",
            "left_eye",
            "right_eye",
            "left_ear",
            "right_ear",
            "left_shoulder",
            "right_shoulder",
            "left_elbow",
            "right_elbow",
            "left_wrist",
            "right_wrist",
            "left_hip",
            "right_hip",
            "left_knee",
            "right_knee",
            "left_ankle",
            "right_ankle",
        ];
        let points = |i: usize| -> Vec<f64> {
            (0..17)
                .flat_map(|k| {
                    [
                        (10 * k + i) as f64 + 0.5,
                        (5 * k) as f64,
                        [0.0, 1.0, 2.0][k % 3],
                    ]
                })
                .collect()
        };
        let with_points = |edit: &dyn Fn(&mut Value)| {
            let mut j = annotations();
            j["categories"][1]["keypoints"] = json!(names);
            for (i, a) in j["annotations"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .enumerate()
            {
                a["keypoints"] = json!(points(i));
                a["num_keypoints"] = json!(11);
            }
            edit(&mut j);
            j
        };
        let options = CocoOptions {
            keypoints: true,
            ..CocoOptions::default()
        };
        let (images, ann) = tree("keypoints", &with_points(&|_| {}));
        let coco = Coco::open(&images, &ann, options).unwrap();
        let t = read(&coco, 0).target.unwrap();
        let k = t.keypoints.as_ref().unwrap();
        assert_eq!((k.instances(), k.per_instance), (2, 17));
        assert_eq!(k.points.points()[18], [11.5, 5.0]); // object 1, point 1
        assert_eq!(&k.visibility[..4], &[0, 1, 2, 0]);
        assert_eq!(
            k.flip_index,
            [0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15]
        );
        t.check().unwrap();
        // An image without objects: no points, the same grouping.
        let empty = read(&coco, 2).target.unwrap();
        assert_eq!(empty.keypoints.unwrap().instances(), 0);
        // Without the option, none are read.
        let plain = Coco::open(&images, &ann, CocoOptions::default()).unwrap();
        assert!(read(&plain, 0).target.unwrap().keypoints.is_none());
        std::fs::remove_dir_all(images.parent().unwrap()).unwrap();

        let refused = |tag: &str, edit: &dyn Fn(&mut Value)| {
            let (images, ann) = tree(tag, &with_points(edit));
            let e = Coco::open(&images, &ann, options).unwrap_err().to_string();
            std::fs::remove_dir_all(images.parent().unwrap()).unwrap();
            e
        };
        let e = refused("kp_missing", &|j| {
            j["annotations"][1]
                .as_object_mut()
                .unwrap()
                .remove("keypoints");
        });
        assert!(
            e.contains("annotation 11") && e.contains("no keypoints"),
            "{e}"
        );
        let e = refused("kp_len", &|j| {
            j["annotations"][2]["keypoints"] = json!([1, 2, 2, 4])
        });
        assert!(
            e.contains("annotation 12") && e.contains("4 numbers"),
            "{e}"
        );
        let e = refused("kp_count", &|j| {
            j["annotations"][2]["keypoints"] = json!([1, 2, 2, 4, 5, 1])
        });
        assert!(
            e.contains("annotation 12") && e.contains("2 key points"),
            "{e}"
        );
        let e = refused("kp_visibility", &|j| {
            j["annotations"][0]["keypoints"][2] = json!(3)
        });
        assert!(
            e.contains("annotation 10") && e.contains("visibility of 3"),
            "{e}"
        );
        let e = refused("kp_names", &|j| {
            j["categories"][1]["keypoints"] = json!(["nose"])
        });
        assert!(e.contains("name 1 key points"), "{e}");
        let e = refused("kp_twice", &|j| {
            j["categories"][1]["keypoints"][2] = json!("nose")
        });
        assert!(e.contains("\"nose\" given twice"), "{e}");
        let e = refused("kp_two_sets", &|j| {
            j["categories"][0]["keypoints"] = json!(names.iter().rev().collect::<Vec<_>>())
        });
        assert!(e.contains("key point names other than"), "{e}");
    }

    #[test]
    fn malformed_or_oversized_files_are_refused_before_use() {
        let (images, ann) = tree("json", &annotations());
        std::fs::write(&ann, b"{\"images\": [\n  {\"id\": 1,, }\n]}").unwrap();
        let e = Coco::open(&images, &ann, CocoOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("ann.json") && e.contains("line 2"), "{e}");
        // A sparse file past the cap: refused from its length, not read.
        let f = std::fs::File::create(&ann).unwrap();
        f.set_len(MAX_ANNOTATION_BYTES + 1).unwrap();
        let e = Coco::open(&images, &ann, CocoOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("MAX_ANNOTATION_BYTES"), "{e}");
        std::fs::remove_dir_all(images.parent().unwrap()).unwrap();
    }
}

/// Hostile input never panics: random strings as compressed RLEs, random
/// coordinates (extremes included) as polygons, random counts.
#[test]
fn random_input_is_decoded_or_refused_never_a_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let extremes = [
        0.0,
        -0.5,
        0.5,
        1e9,
        -1e9,
        214_748_364.0,
        f64::MAX,
        f64::MIN_POSITIVE,
    ];
    for _ in 0..5000 {
        let canvas = Canvas::new((next() % 9 + 1) as u32, (next() % 9 + 1) as u32).unwrap();
        let len = (next() % 12) as usize;
        let text: Vec<u8> = (0..len).map(|_| b'0' + (next() % 66) as u8).collect();
        if let Ok(rle) = Rle::from_compressed(&text, canvas) {
            let mask = rle.decode().unwrap();
            assert_eq!(
                Rle::from_mask(&mask, canvas).unwrap().decode().unwrap(),
                mask
            );
        }
        let n = (next() % 10) as usize;
        let xy: Vec<f64> = (0..n)
            .map(|_| match next() % 4 {
                0 => extremes[(next() % extremes.len() as u64) as usize],
                _ => (next() % 4000) as f64 / 100.0 - 10.0,
            })
            .collect();
        if let Ok(rle) = Rle::from_polygon(&xy, canvas) {
            assert_eq!(
                rle.decode().unwrap().len(),
                (canvas.height * canvas.width) as usize
            );
        }
        let counts: Vec<u64> = (0..n).map(|_| next() % 30).collect();
        let _ = Rle::from_counts(&counts, canvas);
    }
}
