//! COCO's masks against pycocotools 2.0.11: every crafted annotation of
//! `fixtures/coco/masks.json` (made by `fixtures/make_coco_fixtures.py`)
//! decoded or rasterised here equals `COCO.annToMask` byte for byte, and
//! the malformed ones are refused.

use serde_json::Value;
use tensorprep::targets::rle::{MAX_POLYGON_STEPS, paint_polygons};
use tensorprep::targets::{Canvas, Rle};

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
