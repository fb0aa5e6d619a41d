//! MindRecord: sets written by MindSpore's `FileWriter` (made by
//! `fixtures/mindrecord/make_mindrecord_fixtures.py`) read with the same
//! rows, columns and order as `MindDataset(files, shuffle=False)`; crafted
//! headers, pages and rows refused with typed errors before allocating.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use tensorprep::PixelFormat;
use tensorprep::train::data::mindrecord::{MindRecord, Options, Value};
use tensorprep::train::data::{Content, DataError, Dataset, Sample};
use tensorprep_tests::{fixture, folder_list, read};

/// MindDataset's rows for a fixture set.
fn expected(set: &str) -> Vec<serde_json::Map<String, Json>> {
    let text =
        std::fs::read_to_string(fixture(&format!("mindrecord/{set}/expected.json"))).unwrap();
    let json: Json = serde_json::from_str(&text).unwrap();
    assert!(json["version"].as_str().unwrap().starts_with("2."));
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_object().unwrap().clone())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether bytes equal MindDataset's dump of them (hex, or length and
/// SHA-256 when long).
fn bytes_match(b: &[u8], want: &Json) -> bool {
    match want {
        Json::String(h) => hex(b) == *h,
        Json::Object(o) => {
            o["len"].as_u64() == Some(b.len() as u64)
                && o["sha256"].as_str() == Some(hex(&Sha256::digest(b)).as_str())
        }
        _ => false,
    }
}

fn numbers(want: &Json) -> Vec<f64> {
    want["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn shape(want: &Json) -> Vec<usize> {
    want["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect()
}

/// Checks one of our values against MindDataset's for the same column.
fn check(column: &str, ours: &Value, want: &Json) {
    let ctx = format!("{column}: {ours:?} vs {want}");
    match ours {
        Value::String(s) => assert_eq!(want["value"].as_str(), Some(s.as_str()), "{ctx}"),
        Value::Bytes(b) => assert!(bytes_match(b, &want["value"]), "{ctx}"),
        Value::Int(i) => {
            // Integers exactly: compare as i64, not through f64.
            assert_eq!(want["value"][0].as_i64(), Some(*i), "{ctx}");
            assert!(want["dtype"].as_str().unwrap().starts_with("int"), "{ctx}");
        }
        Value::Float32(x) => {
            assert_eq!(want["dtype"], "float32", "{ctx}");
            assert_eq!(numbers(want), [f64::from(*x)], "{ctx}");
        }
        Value::Float64(x) => {
            assert_eq!(want["dtype"], "float64", "{ctx}");
            assert_eq!(numbers(want), [*x], "{ctx}");
        }
        Value::Int32s(v, s) => {
            assert_eq!(want["dtype"], "int32", "{ctx}");
            let w: Vec<i64> = want["value"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            assert_eq!(
                v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>(),
                w,
                "{ctx}"
            );
            assert_eq!(*s, shape(want), "{ctx}");
        }
        Value::Int64s(v, s) => {
            assert_eq!(want["dtype"], "int64", "{ctx}");
            let w: Vec<i64> = want["value"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            assert_eq!(*v, w, "{ctx}");
            assert_eq!(*s, shape(want), "{ctx}");
        }
        Value::Float32s(v, s) => {
            assert_eq!(want["dtype"], "float32", "{ctx}");
            assert_eq!(
                v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>(),
                numbers(want),
                "{ctx}"
            );
            assert_eq!(*s, shape(want), "{ctx}");
        }
        Value::Float64s(v, s) => {
            assert_eq!(want["dtype"], "float64", "{ctx}");
            assert_eq!(*v, numbers(want), "{ctx}");
            assert_eq!(*s, shape(want), "{ctx}");
        }
        other => panic!("{column}: an unexpected value {other:?}"),
    }
}

/// Opens `set` from each of its data files and checks every row's every
/// column against MindDataset's, in order.
fn same_as_minddataset(set: &str, files: &[&str], options: &Options) -> MindRecord {
    let rows = expected(set);
    let mut first = None;
    for file in files {
        let data =
            MindRecord::open_with(fixture(&format!("mindrecord/{set}/{file}")), options).unwrap();
        assert_eq!(data.len(), rows.len(), "{set}/{file}");
        assert_eq!(data.files().count(), files.len());
        for (i, want) in rows.iter().enumerate() {
            let ours = data.columns(i).unwrap();
            let names: Vec<&str> = ours.iter().map(|(n, _)| n.as_str()).collect();
            let mut theirs: Vec<&str> = want.keys().map(String::as_str).collect();
            theirs.sort();
            assert_eq!(names, theirs, "{set} row {i}");
            for (name, value) in &ours {
                check(&format!("{set} row {i} {name}"), value, &want[name]);
            }
        }
        if let Some(f) = first.replace(data.fingerprint()) {
            assert_eq!(f, data.fingerprint(), "one set, one fingerprint");
        }
    }
    MindRecord::open_with(fixture(&format!("mindrecord/{set}/{}", files[0])), options).unwrap()
}

#[test]
fn every_column_of_a_three_file_set_equals_minddataset() {
    let files = [
        "columns.mindrecord0",
        "columns.mindrecord1",
        "columns.mindrecord2",
    ];
    let data = same_as_minddataset("columns", &files, &Options::default());
    // The samples: `data` as is, `label` (int32) as the label.
    let rows = expected("columns");
    let mut sample = Sample::default();
    for (i, want) in rows.iter().enumerate() {
        let label = want["label"]["value"][0].as_i64().unwrap();
        if label == i64::from(i32::MAX) {
            continue; // refused, below
        }
        data.read(i, &mut sample).unwrap();
        assert!(
            bytes_match(&sample.bytes, &want["data"]["value"]),
            "row {i}"
        );
        assert_eq!(sample.content, Content::Encoded);
        assert_eq!(sample.labels, [label as f32]);
        assert_eq!(sample.id, i as u64);
    }
    // Several label columns, arrays among them, in the order asked.
    let multi = MindRecord::open_with(
        fixture("mindrecord/columns/columns.mindrecord1"),
        &Options::default().labels(["score", "mean"]),
    )
    .unwrap();
    multi.read(4, &mut sample).unwrap();
    let want: Vec<f32> = [numbers(&rows[4]["score"]), numbers(&rows[4]["mean"])]
        .concat()
        .iter()
        .map(|&x| x as f32)
        .collect();
    assert_eq!(sample.labels, want);
    // Array labels of each numeric kind (compressed int64, float32,
    // float64), every row: MindDataset's values in the order asked.
    let arrays = MindRecord::open_with(
        fixture("mindrecord/columns/columns.mindrecord0"),
        &Options::default().labels(["wide", "boxes", "mean"]),
    )
    .unwrap();
    for (i, row) in rows.iter().enumerate() {
        arrays.read(i, &mut sample).unwrap();
        let want: Vec<f32> = ["wide", "boxes", "mean"]
            .iter()
            .flat_map(|c| numbers(&row[*c]))
            .map(|x| x as f32)
            .collect();
        assert_eq!(sample.labels, want, "row {i}");
    }
    // An int32 array label float32 cannot hold (2^31 - 1 among `ids`) is
    // refused, naming it.
    let ids = MindRecord::open_with(
        fixture("mindrecord/columns/columns.mindrecord0"),
        &Options::default().labels(["ids"]),
    )
    .unwrap();
    let held = |r: &serde_json::Map<String, Json>| {
        numbers(&r["ids"]).iter().all(|&x| x.abs() <= 16_777_216.0)
    };
    for (i, row) in rows.iter().enumerate() {
        match ids.read(i, &mut sample) {
            Ok(()) => assert!(held(row), "row {i}"),
            Err(e) => assert!(!held(row) && e.to_string().contains("label `ids`"), "{e}"),
        }
    }
    // A label float32 cannot hold exactly (2^31 - 1, int32) is refused,
    // naming the file and row.
    let big = rows
        .iter()
        .position(|r| r["label"]["value"][0] == 2147483647)
        .unwrap();
    let err = data.read(big, &mut sample).unwrap_err();
    assert!(matches!(err, DataError::Corrupt { .. }), "{err}");
    assert!(
        err.to_string().contains("columns.mindrecord") && err.to_string().contains("label"),
        "{err}"
    );
    assert!(
        data.describe(big).contains("row "),
        "{}",
        data.describe(big)
    );
    // Another label choice, another fingerprint.
    assert_ne!(data.fingerprint(), multi.fingerprint());
}

#[test]
fn a_two_file_set_of_several_pages_equals_minddataset() {
    let data = same_as_minddataset(
        "pages",
        &["pages.mindrecord0", "pages.mindrecord1"],
        &Options::default(),
    );
    // The fixture has several blob pages per file.
    let header = read("mindrecord/pages/pages.mindrecord1");
    let n = u64::from_le_bytes(header[..8].try_into().unwrap()) as usize;
    let json: Json = serde_json::from_slice(&header[8..8 + n]).unwrap();
    let blobs = json["page"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["page_type"] == "BLOB_DATA")
        .count();
    assert!(blobs >= 2, "{blobs}");
    let rows = expected("pages");
    let mut sample = Sample::default();
    for (i, want) in rows.iter().enumerate() {
        data.read(i, &mut sample).unwrap();
        assert!(
            bytes_match(&sample.bytes, &want["data"]["value"]),
            "row {i}"
        );
        assert_eq!(
            sample.labels,
            [want["label"]["value"][0].as_i64().unwrap() as f32]
        );
    }
}

#[test]
fn the_imagenet_schema_gives_the_folders_files_and_labels() {
    let data = same_as_minddataset(
        "imagenet",
        &["imagenet.mindrecord0", "imagenet.mindrecord1"],
        &Options::default(),
    );
    // MindDataset's order over the two files is not the folder's: each
    // file name is found in the folder with its class.
    let rows = expected("imagenet");
    let list = folder_list();
    let mut sample = Sample::default();
    for (i, want) in rows.iter().enumerate() {
        data.read(i, &mut sample).unwrap();
        let name = want["file_name"]["value"].as_str().unwrap();
        let (_, label, path) = list
            .iter()
            .find(|(_, _, p)| p.ends_with(&format!("/{name}")))
            .unwrap();
        assert_eq!(
            sample.bytes,
            read(&format!("records/folder/{path}")),
            "{name}"
        );
        assert_eq!(sample.labels, [*label]);
    }
}

#[test]
fn images_as_arrays_are_pixels() {
    let rows = expected("pixels");
    same_as_minddataset(
        "pixels",
        &["pixels.mindrecord"],
        &Options::default().image("image"),
    );
    let path = fixture("mindrecord/pixels/pixels.mindrecord");
    let mut sample = Sample::default();
    // An int32 array with the schema's fixed shape [6, 5, 3].
    let fixed = MindRecord::open_with(&path, &Options::default().image("image")).unwrap();
    // Raw gray bytes, their shape in scalar columns or in an array column.
    let scalars = MindRecord::open_with(
        &path,
        &Options::default().image("gray").shape(["height", "width"]),
    )
    .unwrap();
    let array =
        MindRecord::open_with(&path, &Options::default().image("gray").shape(["shape"])).unwrap();
    let bgr = MindRecord::open_with(&path, &Options::default().image("image").bgr(true)).unwrap();
    for (i, want) in rows.iter().enumerate() {
        fixed.read(i, &mut sample).unwrap();
        let pixels: Vec<u8> = numbers(&want["image"]).iter().map(|&x| x as u8).collect();
        assert_eq!(sample.bytes, pixels);
        assert_eq!(
            sample.content,
            Content::Pixels {
                width: 5,
                height: 6,
                format: PixelFormat::Rgb8
            }
        );
        bgr.read(i, &mut sample).unwrap();
        assert_eq!(
            sample.content,
            Content::Pixels {
                width: 5,
                height: 6,
                format: PixelFormat::Bgr8
            }
        );
        let h = want["height"]["value"][0].as_u64().unwrap() as u32;
        let w = want["width"]["value"][0].as_u64().unwrap() as u32;
        for d in [&scalars, &array] {
            d.read(i, &mut sample).unwrap();
            assert!(bytes_match(&sample.bytes, &want["gray"]["value"]));
            assert_eq!(
                sample.content,
                Content::Pixels {
                    width: w,
                    height: h,
                    format: PixelFormat::Gray8
                }
            );
            assert_eq!(sample.labels, [i as f32]);
        }
    }
    // Bytes whose shape does not match their length, a shape column that
    // is not one, an image column that is not an image, a missing column.
    let wrong = MindRecord::open_with(
        &path,
        &Options::default().image("gray").shape(["width", "width"]),
    )
    .unwrap();
    let err = wrong.read(0, &mut sample).unwrap_err();
    assert!(err.to_string().contains("pixel bytes"), "{err}");
    for options in [
        Options::default().image("gray").shape(["score"]),
        Options::default().image("label"),
        Options::default().image("nope"),
        Options::default().image("image").labels(["gray"]),
        Options::default().image("gray").shape(["a", "b", "c", "d"]),
    ] {
        let err = MindRecord::open_with(&path, &options).unwrap_err();
        assert!(
            matches!(err, DataError::Invalid { .. }),
            "{options:?}: {err}"
        );
    }
}

/// A scratch copy of a fixture set, to damage.
fn scratch(name: &str, set: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tensorprep-mindrecord-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture(&format!("mindrecord/{set}"))).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
    dir
}

/// The file's header JSON and where it ends.
fn header_of(bytes: &[u8]) -> (Json, usize) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    (serde_json::from_slice(&bytes[8..8 + n]).unwrap(), 8 + n)
}

/// Writes `header` into the file `path` (within its header area).
fn rewrite_header(path: &Path, header: &Json) {
    let mut bytes = std::fs::read(path).unwrap();
    let text = serde_json::to_vec(header).unwrap();
    let header_size = header["header_size"].as_u64().unwrap_or(16384).min(16384) as usize;
    assert!(8 + text.len() <= header_size);
    bytes[..header_size].fill(0);
    bytes[..8].copy_from_slice(&(text.len() as u64).to_le_bytes());
    bytes[8..8 + text.len()].copy_from_slice(&text);
    std::fs::write(path, bytes).unwrap();
}

fn corrupt_at(err: &DataError) -> (&str, u64) {
    match err {
        DataError::Corrupt { path, offset, .. } => (path.as_str(), *offset),
        other => panic!("not a Corrupt error: {other}"),
    }
}

#[test]
fn crafted_headers_and_pages_are_refused_before_allocating() {
    let dir = scratch("crafted", "pixels");
    let path = dir.join("pixels.mindrecord");
    let good = std::fs::read(&path).unwrap();
    let (header, _) = header_of(&good);
    let open = || MindRecord::open_with(&path, &Options::default().image("image"));
    assert!(open().is_ok());

    // A header length of 2^40 bytes, and one just past the end.
    for n in [1u64 << 40, good.len() as u64 - 7] {
        let mut bytes = good.clone();
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let err = open().unwrap_err();
        assert_eq!(corrupt_at(&err), (path.to_str().unwrap(), 0), "{err}");
        assert!(err.to_string().contains("a header of"), "{err}");
    }
    // A file shorter than the length; a header that is not JSON.
    std::fs::write(&path, &good[..5]).unwrap();
    assert!(matches!(open().unwrap_err(), DataError::Corrupt { .. }));
    let mut bytes = good.clone();
    bytes[8] = b'[';
    std::fs::write(&path, &bytes).unwrap();
    assert!(open().unwrap_err().to_string().contains("not JSON"));

    // Pages: one past the end of the file, one using more than a page,
    // a blob page claiming more rows than its bytes hold, a raw page
    // naming a row group no blob page holds.
    let damaged = |f: &dyn Fn(&mut Json), what: &str| {
        std::fs::write(&path, &good).unwrap();
        let mut h = header.clone();
        f(&mut h);
        rewrite_header(&path, &h);
        let err = open().unwrap_err();
        assert!(matches!(err, DataError::Corrupt { .. }), "{what}: {err}");
        assert!(
            err.to_string().contains("pixels.mindrecord"),
            "{what}: {err}"
        );
        err
    };
    let blob = |h: &Json| {
        h["page"]
            .as_array()
            .unwrap()
            .iter()
            .position(|p| p["page_type"] == "BLOB_DATA")
            .unwrap()
    };
    let raw = |h: &Json| {
        h["page"]
            .as_array()
            .unwrap()
            .iter()
            .position(|p| p["page_type"] == "RAW_DATA")
            .unwrap()
    };
    // Each header change, what it is, and a part of the error it must give
    // ("" when naming the file is enough).
    type Change<'a> = &'a dyn Fn(&mut Json);
    let cases: [(&str, Change<'_>, &str); 19] = [
        (
            "a page past the end",
            &|h| h["page"][0]["page_id"] = 1000.into(),
            "",
        ),
        (
            "a page id that overflows",
            &|h| h["page"][0]["page_id"] = u64::MAX.into(),
            "",
        ),
        (
            "a page larger than pages",
            &|h| h["page"][0]["page_size"] = (1u64 << 40).into(),
            "",
        ),
        (
            "2^40 rows",
            &|h| {
                let b = blob(h);
                h["page"][b]["end_row_id"] = (1u64 << 40).into()
            },
            "claims",
        ),
        (
            "a missing row group",
            &|h| {
                let r = raw(h);
                h["page"][r]["row_group_ids"][0]["id"] = 7.into()
            },
            "",
        ),
        (
            "a group past its page",
            &|h| {
                let r = raw(h);
                h["page"][r]["row_group_ids"][0]["offset"] = 100_000.into()
            },
            "",
        ),
        // Refused when the table is read (it overflowed a file offset).
        (
            "a group offset of 2^64 - 1",
            &|h| {
                let r = raw(h);
                h["page"][r]["row_group_ids"][0]["offset"] = u64::MAX.into()
            },
            "past its",
        ),
        // Each re-reading its rows: refused at the second, before
        // reserving for the rest.
        (
            "300 groups naming one blob page",
            &|h| {
                let r = raw(h);
                let g = h["page"][r]["row_group_ids"][0].clone();
                h["page"][r]["row_group_ids"] = Json::Array(vec![g; 300]);
            },
            "another group took",
        ),
        (
            "a group that does not start where the one before ends",
            &|h| {
                let r = raw(h);
                h["page"][r]["row_group_ids"][0]["offset"] = 8.into()
            },
            "where the group before it ends",
        ),
        (
            "no files",
            &|h| h["shard_addresses"] = serde_json::json!([]),
            "",
        ),
        ("a shard past the set", &|h| h["shard_id"] = 3.into(), ""),
        (
            "an unknown type",
            &|h| h["schema"][0]["schema"]["label"]["type"] = "complex".into(),
            "",
        ),
        (
            "a scalar blob field",
            &|h| h["schema"][0]["blob_fields"] = serde_json::json!(["label"]),
            "",
        ),
        // The last row runs past the page.
        (
            "a blob page smaller than its rows",
            &|h| {
                let b = blob(h);
                let u = h["page"][b]["page_size"].as_u64().unwrap();
                h["page"][b]["page_size"] = (u - 1).into()
            },
            "runs past blob page",
        ),
        (
            "a page table of pages of no kind",
            &|h| h["page"] = serde_json::json!([{"page_type": "NONE"}]),
            "",
        ),
        // One page listed again (as a blob page of another row group):
        // its bytes would count twice against the rows the table may claim.
        (
            "a page listed twice",
            &|h| {
                let b = blob(h);
                let mut again = h["page"][b].clone();
                again["page_type_id"] = 99.into();
                h["page"].as_array_mut().unwrap().push(again);
            },
            "listed twice",
        ),
        (
            "a page size past MindSpore's",
            &|h| h["page_size"] = ((256u64 << 20) + 1).into(),
            "at most",
        ),
        (
            "a header size past MindSpore's",
            &|h| h["header_size"] = ((128u64 << 20) + 1).into(),
            "at most",
        ),
        (
            "a header without a page table",
            &|h| {
                h.as_object_mut().unwrap().remove("page");
            },
            "",
        ),
    ];
    for (what, change, says) in cases {
        let e = damaged(change, what);
        assert!(e.to_string().contains(says), "{what}: {e}");
    }

    // A row's blob length of 2^40 within the page table's bounds: refused
    // when the rows are indexed, naming the offset of the length.
    std::fs::write(&path, &good).unwrap();
    let (header, _) = header_of(&good);
    let b = blob(&header);
    let start = header["header_size"].as_u64().unwrap()
        + header["page"][b]["page_id"].as_u64().unwrap() * header["page_size"].as_u64().unwrap();
    let mut bytes = good.clone();
    bytes[start as usize..start as usize + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let err = open().unwrap_err();
    assert_eq!(corrupt_at(&err).1, start, "{err}");
    // A raw row's length past its page.
    let r = raw(&header);
    let start = header["header_size"].as_u64().unwrap()
        + header["page"][r]["page_id"].as_u64().unwrap() * header["page_size"].as_u64().unwrap();
    let mut bytes = good.clone();
    bytes[start as usize..start as usize + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let err = open().unwrap_err();
    assert_eq!(corrupt_at(&err).1, start, "{err}");
    assert!(err.to_string().contains("runs past raw page"), "{err}");
    // A row whose MessagePack map is cut: refused when read, not skipped.
    let mut bytes = good.clone();
    bytes[start as usize + 8] = 0xdf; // map32
    std::fs::write(&path, &bytes).unwrap();
    let data = open().unwrap();
    let err = data.read(0, &mut Sample::default()).unwrap_err();
    assert!(matches!(err, DataError::Corrupt { .. }), "{err}");
    assert_eq!(corrupt_at(&err).1, start + 8, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn other_files_of_the_set_are_found_beside_the_one_given() {
    // The set copied elsewhere: its addresses are names, found beside it.
    let dir = scratch("beside", "columns");
    let data = MindRecord::open(dir.join("columns.mindrecord2")).unwrap();
    assert_eq!(data.len(), expected("columns").len());
    assert!(data.files().all(|f| f.starts_with(&dir)));
    // A missing member is an I/O error naming it.
    std::fs::remove_file(dir.join("columns.mindrecord1")).unwrap();
    let err = MindRecord::open(dir.join("columns.mindrecord0")).unwrap_err();
    assert!(
        matches!(&err, DataError::Io { path, .. } if path.ends_with("columns.mindrecord1")),
        "{err}"
    );
    // A member of another set (another schema) is refused.
    std::fs::copy(
        fixture("mindrecord/pages/pages.mindrecord1"),
        dir.join("columns.mindrecord1"),
    )
    .unwrap();
    let err = MindRecord::open(dir.join("columns.mindrecord0")).unwrap_err();
    assert!(err.to_string().contains("not shard 1"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn one_file_in_folder_order_gives_the_folders_samples_in_order() {
    let data = same_as_minddataset("folder", &["folder.mindrecord"], &Options::default());
    // `records/folder.lst` lists im2rec's ids: the folder's order.
    let mut list = folder_list();
    list.sort_by_key(|(id, _, _)| *id);
    assert_eq!(data.len(), list.len());
    let mut sample = Sample::default();
    for (i, (_, label, path)) in list.iter().enumerate() {
        data.read(i, &mut sample).unwrap();
        assert_eq!(
            sample.bytes,
            read(&format!("records/folder/{path}")),
            "{path}"
        );
        assert_eq!(
            (sample.labels.as_slice(), sample.id),
            (&[*label][..], i as u64)
        );
    }
}

/// Data files in the set read under a limit of 256 descriptors.
#[cfg(feature = "mindrecord-write")]
const MANY: usize = 1000;
/// The most data files kept open while reading it.
#[cfg(feature = "mindrecord-write")]
const BUDGET: usize = 64;

/// Data file `i`'s one image.
#[cfg(feature = "mindrecord-write")]
fn many_image(i: usize) -> Vec<u8> {
    format!("image {i:04}").into_bytes()
}

/// Writes a set of [`MANY`] data files of one row each into `dir`: one file
/// written by our writer, copied with its header's `shard_id` and
/// `shard_addresses` made those of a 1,000-file set and its image made the
/// file's own (writing 1,000 shards and their SQLite indexes directly takes
/// half a minute of fsyncs). Returns the first data file.
#[cfg(feature = "mindrecord-write")]
fn write_many(dir: &Path) -> PathBuf {
    use tensorprep::train::data::mindrecord::write::{Row, WriteOptions, write};
    let one = dir.join("one.mindrecord");
    let image = many_image(0);
    write(
        &one,
        &[Row::new("0.jpg", 7, image.len() as u64)],
        &WriteOptions::default().header_size(64 << 10),
        |_, bytes| {
            bytes.extend_from_slice(&image);
            Ok(())
        },
    )
    .unwrap();
    let bytes = std::fs::read(&one).unwrap();
    let (mut header, _) = header_of(&bytes);
    let header_size = header["header_size"].as_u64().unwrap() as usize;
    let at = bytes.windows(image.len()).position(|w| w == image).unwrap();
    let names: Vec<String> = (0..MANY)
        .map(|i| format!("many.mindrecord{i:03}"))
        .collect();
    header["shard_addresses"] = Json::from(names.clone());
    for (i, name) in names.iter().enumerate() {
        header["shard_id"] = Json::from(i);
        let text = serde_json::to_vec(&header).unwrap();
        assert!(8 + text.len() <= header_size);
        let mut file = bytes.clone();
        file[..header_size].fill(0);
        file[..8].copy_from_slice(&(text.len() as u64).to_le_bytes());
        file[8..8 + text.len()].copy_from_slice(&text);
        file[at..at + image.len()].copy_from_slice(&many_image(i));
        std::fs::write(dir.join(name), file).unwrap();
    }
    dir.join(&names[0])
}

/// Runs in the child (`ulimit -n 256`): a set of 1,000 data files opened
/// and read whole, in order and in a stride order that returns to each file
/// many times, never more than the budget open.
#[cfg(feature = "mindrecord-write")]
#[test]
#[ignore = "run by a_thousand_data_files_read_under_a_descriptor_limit in a child process"]
fn child_reads_a_thousand_data_files() {
    let Ok(first) = std::env::var("TP_MANY_MINDRECORD") else {
        panic!("run by a_thousand_data_files_read_under_a_descriptor_limit");
    };
    let open_descriptors = || std::fs::read_dir("/proc/self/fd").unwrap().count();
    let base = open_descriptors();
    let set = MindRecord::open_with(&first, &Options::default().open_files(BUDGET)).unwrap();
    assert!(open_descriptors() <= base, "indexing keeps no file open");
    assert_eq!(set.files().count(), MANY);
    assert_eq!(set.len(), MANY);
    let mut sample = Sample::default();
    for i in (0..MANY).chain((0..MANY).map(|k| k * 389 % MANY)) {
        set.read(i, &mut sample).unwrap();
        assert_eq!(sample.bytes, many_image(i), "sample {i}");
        assert_eq!(sample.labels, [7.0]);
        assert!(set.pool().open_count() <= BUDGET);
    }
    assert_eq!(set.pool().open_count(), BUDGET);
    assert!(open_descriptors() <= base + BUDGET);
    // Keeping every data file open, as a reader holding one descriptor per
    // file would, is refused by the limit: the limit is real.
    let each: Result<Vec<_>, _> = set.files().map(std::fs::File::open).collect();
    assert!(each.is_err(), "1,000 files open under ulimit -n 256");
}

#[cfg(feature = "mindrecord-write")]
#[test]
fn a_thousand_data_files_read_under_a_descriptor_limit() {
    let dir = std::env::temp_dir().join(format!("tp-many-mr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let first = write_many(&dir);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            "ulimit -n 256 && exec \"$0\" --exact child_reads_a_thousand_data_files \
             --ignored --test-threads 1",
        )
        .arg(std::env::current_exe().unwrap())
        .env("TP_MANY_MINDRECORD", &first)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A set written by our writer with its index read as well as without it;
/// an index moved away from its data file's rows (a row's place changed,
/// a row missing, not SQLite at all) is refused, naming the index.
#[cfg(feature = "mindrecord-write")]
#[test]
fn an_index_that_disagrees_with_the_page_table_is_refused() {
    use tensorprep::train::data::mindrecord::write::{Row, WriteOptions, index_file, write};
    let dir = std::env::temp_dir().join(format!("tp-mr-index-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("set.mindrecord");
    let images: [&[u8]; 3] = [b"first", b"second image", b"third"];
    let rows: Vec<Row> = (0..3)
        .map(|i| Row::new(format!("{i}.jpg"), i as i32, images[i].len() as u64))
        .collect();
    write(&path, &rows, &WriteOptions::default(), |i, bytes| {
        bytes.extend_from_slice(images[i]);
        Ok(())
    })
    .unwrap();
    let db = index_file(&path);
    let good = std::fs::read(&db).unwrap();
    let set = MindRecord::open(&path).unwrap();
    assert_eq!(set.len(), 3);

    let refused = |change: &str| {
        std::fs::write(&db, &good).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(change).unwrap();
        drop(conn);
        let err = MindRecord::open(&path).unwrap_err();
        match &err {
            DataError::Corrupt { format, path, .. } => {
                assert_eq!(*format, "MindRecord index", "{change}: {err}");
                assert_eq!(Path::new(path), db, "{change}: {err}");
            }
            other => panic!("{change}: not a Corrupt error: {other}"),
        }
        err.to_string()
    };
    let moved = refused(
        "UPDATE INDEXES SET PAGE_OFFSET_BLOB_END = PAGE_OFFSET_BLOB_END + 4 WHERE ROW_ID = 1",
    );
    assert!(moved.contains("row 1 is not where"), "{moved}");
    // Page ids whose offset overflows (negative ones wrap): refused, not
    // a panic on the product.
    for id in ["-1", "9223372036854775807", "549755813888"] {
        let far = refused(&format!(
            "UPDATE INDEXES SET PAGE_ID_RAW = {id} WHERE ROW_ID = 1"
        ));
        assert!(far.contains("row 1 is not where"), "{far}");
    }
    let missing = refused("DELETE FROM INDEXES WHERE ROW_ID = 2");
    assert!(missing.contains("lists 2 rows"), "{missing}");
    let extra = refused(
        "INSERT INTO INDEXES SELECT ROW_ID + 3, PAGE_ID_RAW, PAGE_OFFSET_RAW, \
         PAGE_OFFSET_RAW_END, ROW_GROUP_ID, PAGE_ID_BLOB, PAGE_OFFSET_BLOB, \
         PAGE_OFFSET_BLOB_END, INC_0, file_name_0, INC_1, label_0 FROM INDEXES",
    );
    assert!(extra.contains("more rows"), "{extra}");

    std::fs::write(
        &db,
        b"not an SQLite file, but long enough to be taken for one",
    )
    .unwrap();
    assert!(matches!(
        MindRecord::open(&path),
        Err(DataError::Corrupt {
            format: "MindRecord index",
            ..
        })
    ));
    // Without its index the set reads from its page table alone.
    std::fs::remove_file(&db).unwrap();
    assert_eq!(MindRecord::open(&path).unwrap().len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}
