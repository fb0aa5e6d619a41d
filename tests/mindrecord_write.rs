//! The MindRecord writer against MindSpore's own files: the same rows
//! written with the same header and page sizes give the same data files,
//! byte for byte, and index files with the same tables and rows
//! (`fixtures/mindrecord_write/`, made by MindSpore 2.10's `FileWriter` with
//! `make_fixtures.py` there). Then what `pack_folder` writes with its own
//! sizes: the header fields MindSpore's readers require, and an index whose
//! every row points at the sample's exact bytes.

use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use rusqlite::types::Value;
use tensorprep::train::data::folder::FolderDataset;
use tensorprep::train::data::mindrecord::MindRecord;
use tensorprep::train::data::mindrecord::write::{
    Row, WriteOptions, data_files, index_file, pack_folder, write,
};
use tensorprep::train::data::{DataError, Dataset, Sample};
use tensorprep_tests::fixture;

/// The rows `make_fixtures.py` writes (its `rows()`), with their bytes.
fn rows() -> (Vec<Row>, Vec<Vec<u8>>) {
    let (mut rows, mut data) = (Vec::new(), Vec::new());
    for i in 0..24u32 {
        let long = if i % 2 == 1 {
            "n".repeat(3000)
        } else {
            String::new()
        };
        let umlaut = if i == 7 { "ü" } else { "" };
        let name = format!("c{}/{long}img{i:03}{umlaut}.jpg", i % 3);
        let label = ((i * 7919) % 100_003) as i32;
        let bytes = vec![(i % 251) as u8; 1500 + 700 * i as usize];
        rows.push(Row::new(name, label, bytes.len() as u64));
        data.push(bytes);
    }
    (rows, data)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tensorprep-mindrecord-write-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    out
}

/// A database's tables (their SQL) and every row of each, in row order.
fn tables(conn: &Connection) -> Vec<(String, Vec<Vec<Value>>)> {
    let mut sql = conn
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    let names: Vec<(String, String)> = sql
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    names
        .into_iter()
        .map(|(name, create)| {
            let mut q = conn
                .prepare(&format!("SELECT * FROM \"{name}\" ORDER BY rowid"))
                .unwrap();
            let columns = q.column_count();
            let rows = q
                .query_map([], |r| (0..columns).map(|c| r.get::<_, Value>(c)).collect())
                .unwrap()
                .map(Result::unwrap)
                .collect();
            (create, rows)
        })
        .collect()
}

/// Writes the fixture rows as `name` with `shards` and MindSpore's sizes
/// there (16 KiB header, 32 KiB pages), and compares every file with
/// MindSpore's.
fn compare_with_mindspore(name: &str, shards: usize) {
    let dir = scratch(name);
    let (rows, data) = rows();
    let options = WriteOptions::default()
        .shards(shards)
        .page_size(32 << 10)
        .header_size(16 << 10);
    let path = dir.join(name);
    let mut order = Vec::new();
    let written = write(&path, &rows, &options, |i, bytes| {
        order.push(i);
        bytes.extend_from_slice(&data[i]);
        Ok(())
    })
    .unwrap();
    assert_eq!(
        order,
        (0..rows.len()).collect::<Vec<_>>(),
        "read once each, in order"
    );
    assert_eq!(written.files.len(), shards);
    assert_eq!(
        (written.header_size, written.page_size),
        (16 << 10, 32 << 10)
    );
    for file in &written.files {
        let file_name = file.file_name().unwrap().to_str().unwrap();
        let theirs = gunzip(&fixture(&format!("mindrecord_write/{file_name}.gz")));
        let ours = std::fs::read(file).unwrap();
        assert_eq!(ours.len(), theirs.len(), "{file_name}'s length");
        let header_len = 8 + u64::from_le_bytes(theirs[..8].try_into().unwrap()) as usize;
        assert_eq!(
            String::from_utf8_lossy(&ours[..header_len]),
            String::from_utf8_lossy(&theirs[..header_len]),
            "{file_name}'s header"
        );
        assert!(
            ours == theirs,
            "{file_name}'s pages differ from MindSpore's"
        );

        let sql = gunzip(&fixture(&format!("mindrecord_write/{file_name}.db.sql.gz")));
        let expected = Connection::open_in_memory().unwrap();
        expected
            .execute_batch(std::str::from_utf8(&sql).unwrap())
            .unwrap();
        let ours = Connection::open(index_file(file)).unwrap();
        let (ours, expected) = (tables(&ours), tables(&expected));
        assert_eq!(
            ours.iter().map(|t| t.1.len()).collect::<Vec<_>>(),
            expected.iter().map(|t| t.1.len()).collect::<Vec<_>>(),
            "{file_name}.db's row counts"
        );
        assert_eq!(ours, expected, "{file_name}.db");
    }
    // Nothing else is left beside them (no temporary, no journal).
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    let mut expected: Vec<String> = written
        .files
        .iter()
        .flat_map(|f| [f.clone(), index_file(f)])
        .map(|f| f.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    expected.sort();
    assert_eq!(left, expected);
}

/// One data file of 9 blob pages and 2 raw pages, as MindSpore writes it.
#[test]
fn one_data_file_is_mindspores_byte_for_byte() {
    compare_with_mindspore("one.mindrecord", 1);
}

/// Three data files of 8 rows each, named and laid out as MindSpore's.
#[test]
fn three_shards_are_mindspores_byte_for_byte() {
    compare_with_mindspore("three.mindrecord", 3);
}

#[test]
fn data_files_are_named_as_mindspore_names_them() {
    let p = Path::new("out/data.mindrecord");
    assert_eq!(data_files(p, 1), [PathBuf::from("out/data.mindrecord")]);
    assert_eq!(
        data_files(p, 3),
        [
            "out/data.mindrecord0",
            "out/data.mindrecord1",
            "out/data.mindrecord2"
        ]
        .map(PathBuf::from)
    );
    let eleven = data_files(p, 11);
    assert_eq!(eleven[0], Path::new("out/data.mindrecord00"));
    assert_eq!(eleven[10], Path::new("out/data.mindrecord10"));
    assert_eq!(
        index_file(&eleven[3]),
        Path::new("out/data.mindrecord03.db")
    );
}

/// A folder packed with the default sizes: each file's header has the
/// fields MindSpore's reader requires, and each index row points at the
/// image's exact bytes and holds its relative name and class.
#[test]
fn a_packed_folder_has_mindspores_header_and_an_index_of_every_image() {
    let root = fixture("records/folder");
    let folder = FolderDataset::open(&root).unwrap();
    let dir = scratch("folder");
    let path = dir.join("data.mindrecord");
    let options = WriteOptions::default().shards(4);
    let written = pack_folder(&root, &folder, &path, &options).unwrap();
    // The fullest file holds less than MindSpore's smallest page.
    assert_eq!(
        (written.header_size, written.page_size),
        (16 << 10, 32 << 10)
    );
    let names: Vec<&str> = written
        .files
        .iter()
        .map(|f| f.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "data.mindrecord0",
            "data.mindrecord1",
            "data.mindrecord2",
            "data.mindrecord3"
        ]
    );
    let mut seen = Vec::new();
    for (shard, file) in written.files.iter().enumerate() {
        let bytes = std::fs::read(file).unwrap();
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + len]).unwrap();
        assert_eq!(header["header_size"], 16 << 10);
        assert_eq!(header["page_size"], 32 << 10);
        assert_eq!(header["shard_id"], shard);
        assert_eq!(header["version"], "3.0");
        assert_eq!(header["shard_addresses"], serde_json::json!(names));
        let schema = &header["schema"][0];
        assert_eq!(schema["blob_fields"], serde_json::json!(["data"]));
        assert_eq!(
            schema["schema"],
            serde_json::json!({"data": {"type": "bytes"}, "file_name": {"type": "string"},
                               "label": {"type": "int32"}})
        );
        let pages = header["page"].as_array().unwrap();
        let kinds: Vec<&str> = pages
            .iter()
            .map(|p| p["page_type"].as_str().unwrap())
            .collect();
        // 6 images in 4 shards: 2, 2, 1, 1; each a blob page and a raw page.
        assert_eq!(kinds, ["BLOB_DATA", "RAW_DATA"]);
        let rows = if shard < 2 { 2 } else { 1 };
        assert_eq!(pages[0]["end_row_id"], rows);

        let conn = Connection::open(index_file(file)).unwrap();
        let shard_name: String = conn
            .query_row("SELECT NAME FROM SHARD_NAME", [], |r| r.get(0))
            .unwrap();
        assert_eq!(shard_name, names[shard]);
        let mut q = conn
            .prepare(
                "SELECT ROW_ID, PAGE_ID_RAW, PAGE_OFFSET_RAW, PAGE_OFFSET_RAW_END, PAGE_ID_BLOB, \
                 PAGE_OFFSET_BLOB, PAGE_OFFSET_BLOB_END, file_name_0, label_0 FROM INDEXES \
                 ORDER BY ROW_ID",
            )
            .unwrap();
        // Row id, then (page, start, end) of its raw and its blob bytes.
        let index: Vec<([i64; 7], String, i64)> = q
            .query_map([], |r| {
                let mut places = [0i64; 7];
                for (c, place) in places.iter_mut().enumerate() {
                    *place = r.get(c)?;
                }
                Ok((places, r.get(7)?, r.get(8)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(index.len(), rows);
        let at =
            |page: i64, offset: i64| (16usize << 10) + page as usize * (32 << 10) + offset as usize;
        for (k, (places, name, label)) in index.into_iter().enumerate() {
            let [
                row_id,
                raw_page,
                raw_at,
                raw_end,
                blob_page,
                blob_at,
                blob_end,
            ] = places;
            assert_eq!(row_id, k as i64);
            let blob = &bytes[at(blob_page, blob_at)..at(blob_page, blob_end)];
            assert_eq!(
                u64::from_le_bytes(blob[..8].try_into().unwrap()) as usize,
                blob.len() - 8
            );
            let raw = &bytes[at(raw_page, raw_at)..at(raw_page, raw_end)];
            assert_eq!(
                u64::from_le_bytes(raw[..8].try_into().unwrap()) as usize,
                raw.len() - 8
            );
            // The raw row is the map {file_name, label}.
            assert_eq!(raw[8], 0x82, "a MessagePack map of 2");
            assert!(raw.windows(name.len()).any(|w| w == name.as_bytes()));
            seen.push((name, label, blob[8..].to_vec()));
        }
    }
    let expected: Vec<(String, i64, Vec<u8>)> = folder
        .files()
        .iter()
        .map(|(p, label)| {
            let name = p.strip_prefix(&root).unwrap().to_str().unwrap().to_owned();
            (name, i64::from(*label), std::fs::read(p).unwrap())
        })
        .collect();
    assert_eq!(seen.len(), 6);
    assert_eq!(seen, expected);
    assert_eq!(seen[0].0, "cat/cat0.jpg");
}

/// Existing files are refused (naming one) unless asked to replace them;
/// the refusal writes nothing.
#[test]
fn existing_files_are_replaced_only_when_asked() {
    let dir = scratch("exists");
    let path = dir.join("d.mindrecord");
    let one = [Row::new("a.jpg", 3, 4)];
    let data = |_: usize, b: &mut Vec<u8>| {
        b.extend_from_slice(b"abcd");
        Ok(())
    };
    std::fs::write(index_file(&path), b"old index").unwrap();
    let err = write(&path, &one, &WriteOptions::default(), data).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("d.mindrecord.db") && message.contains("exists"),
        "{message}"
    );
    assert!(!path.exists());
    assert_eq!(std::fs::read(index_file(&path)).unwrap(), b"old index");
    let options = WriteOptions::default().overwrite(true);
    write(&path, &one, &options, data).unwrap();
    let conn = Connection::open(index_file(&path)).unwrap();
    let label: i64 = conn
        .query_row("SELECT label_0 FROM INDEXES", [], |r| r.get(0))
        .unwrap();
    assert_eq!(label, 3);
}

/// A sample larger than the chosen page is refused, naming it; with the
/// page chosen by the writer, the page grows to the next power of two that
/// holds it.
#[test]
fn pages_hold_the_largest_sample() {
    let dir = scratch("large");
    let big = (5 << 20) + 1;
    let rows = [Row::new("small.jpg", 0, 10), Row::new("big.jpg", 1, big)];
    let data = |i: usize, b: &mut Vec<u8>| {
        b.resize([10, big as usize][i], 7);
        Ok(())
    };
    let options = WriteOptions::default().page_size(4 << 20);
    let path = dir.join("d.mindrecord");
    let err = write(&path, &rows, &options, data).unwrap_err();
    assert!(
        matches!(err, DataError::Invalid { ref what } if what.contains("big.jpg") && what.contains("4194304")),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
    let written = write(&path, &rows, &WriteOptions::default(), data).unwrap();
    assert_eq!(written.page_size, 8 << 20);
    // One blob page holds both; the raw page after it, their two maps
    // (8-byte lengths, then 28 and 26 bytes).
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len() as u64, (16 << 10) + (8 << 20) + 8 + 28 + 8 + 26);
    // Many small samples: 4 MiB pages.
    let rows: Vec<Row> = (0..5)
        .map(|i| Row::new(format!("{i}.jpg"), 0, 1 << 20))
        .collect();
    let written = write(
        &dir.join("f.mindrecord"),
        &rows,
        &WriteOptions::default(),
        |_, b| {
            b.resize(1 << 20, 1);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(written.page_size, 4 << 20);
    // Bad explicit sizes and shard counts are refused.
    for options in [
        WriteOptions::default().page_size(1000),
        WriteOptions::default().header_size((16 << 10) + 2),
        WriteOptions::default().shards(0),
        WriteOptions::default().shards(1001),
    ] {
        let err = write(&dir.join("e.mindrecord"), &rows, &options, data).unwrap_err();
        assert!(matches!(err, DataError::Invalid { .. }), "{err}");
    }
}

/// A sample whose length is not the one laid out (a file changed while it
/// was packed), or whose read fails, ends the write with that error and
/// leaves no file, temporary or not.
#[test]
fn a_failed_read_leaves_nothing() {
    let dir = scratch("changed");
    let rows = [
        Row::new("a.jpg", 0, 4),
        Row::new("b.jpg", 0, 4),
        Row::new("c.jpg", 0, 4),
    ];
    let options = WriteOptions::default().shards(3);
    let err = write(&dir.join("d.mindrecord"), &rows, &options, |i, b| {
        b.extend_from_slice(if i == 2 { b"abcde" } else { b"abcd" });
        Ok(())
    })
    .unwrap_err();
    assert!(err.to_string().contains("c.jpg"), "{err}");
    let err = write(&dir.join("d.mindrecord"), &rows, &options, |i, b| {
        if i == 1 {
            return Err(DataError::Invalid {
                what: "b.jpg: unreadable".into(),
            });
        }
        b.extend_from_slice(b"abcd");
        Ok(())
    })
    .unwrap_err();
    assert!(err.to_string().contains("b.jpg: unreadable"), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

/// A target that cannot be replaced (a directory where an index file goes)
/// is an error naming it, and no temporary file is left behind.
#[test]
fn a_failed_rename_leaves_no_temporary() {
    let dir = scratch("rename");
    let path = dir.join("d.mindrecord");
    // The first index file: the second of four renames.
    std::fs::create_dir(dir.join("d.mindrecord0.db")).unwrap();
    let rows = [Row::new("a.jpg", 0, 4), Row::new("b.jpg", 1, 4)];
    let options = WriteOptions::default().shards(2).overwrite(true);
    let err = write(&path, &rows, &options, |_, b| {
        b.extend_from_slice(b"abcd");
        Ok(())
    })
    .unwrap_err();
    assert!(err.to_string().contains("d.mindrecord0.db"), "{err}");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("tensorprep-tmp"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

/// The header grows (in powers of two) to hold a long page table, and the
/// pages start after it; a chosen header too small for it is refused.
#[test]
fn the_header_grows_to_hold_its_page_table() {
    let dir = scratch("header");
    // 200 samples of 30,000 bytes in 32 KiB pages: 200 blob pages.
    let rows: Vec<Row> = (0..200)
        .map(|i| Row::new(format!("{i}.jpg"), i, 30_000))
        .collect();
    let data = |i: usize, b: &mut Vec<u8>| {
        b.resize(30_000, i as u8);
        Ok(())
    };
    let path = dir.join("d.mindrecord");
    let options = WriteOptions::default().page_size(32 << 10);
    let written = write(&path, &rows, &options, data).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert!(8 + len > 32 << 10 && 8 + len <= 64 << 10, "{len}");
    assert_eq!(written.header_size, 64 << 10);
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + len]).unwrap();
    assert_eq!(header["header_size"], 64 << 10);
    assert_eq!(header["page"].as_array().unwrap().len(), 201);
    // Sample 199 is alone on blob page 199.
    let at = (64 << 10) + 199 * (32 << 10);
    assert_eq!(&bytes[at..at + 8], &30_000u64.to_le_bytes());
    assert!(bytes[at + 8..at + 8 + 30_000].iter().all(|&b| b == 199));
    let too_small = options.header_size(32 << 10).overwrite(true);
    let err = write(&path, &rows, &too_small, data).unwrap_err();
    assert!(err.to_string().contains("header"), "{err}");
}

/// Writes a set of `shards` at `path`, one row per shard, row `i`'s label
/// `base + i`.
fn write_set(path: &Path, shards: usize, base: i32) -> Result<(), DataError> {
    let rows: Vec<Row> = (0..shards)
        .map(|i| Row::new(format!("{i}.jpg"), base + i as i32, 4))
        .collect();
    let options = WriteOptions::default().shards(shards).overwrite(true);
    write(path, &rows, &options, |_, b| {
        b.extend_from_slice(b"abcd");
        Ok(())
    })
    .map(|_| ())
}

/// The labels the set at `file` reads as, in order.
fn labels_of(file: &Path) -> Result<Vec<f32>, DataError> {
    let d = MindRecord::open(file)?;
    let mut sample = Sample::default();
    let mut labels = Vec::new();
    for i in 0..d.len() {
        d.read(i, &mut sample)?;
        labels.extend_from_slice(&sample.labels);
    }
    Ok(labels)
}

/// Replacing a set with `overwrite` when a member cannot be replaced (an
/// injected failure: a directory where the second index file goes) leaves
/// no data file a reader takes as a set, never new shards beside old ones.
#[test]
fn a_failed_replace_never_leaves_a_mixed_set() {
    let dir = scratch("mixed");
    let path = dir.join("d.mindrecord");
    write_set(&path, 3, 10).unwrap();
    let files = data_files(&path, 3);
    assert_eq!(labels_of(&files[0]).unwrap(), [10.0, 11.0, 12.0]);
    let blocked = index_file(&files[1]);
    std::fs::remove_file(&blocked).unwrap();
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("keep"), b"x").unwrap();
    let err = write_set(&path, 3, 20).unwrap_err();
    assert!(err.to_string().contains("d.mindrecord1.db"), "{err}");
    for file in &files {
        if let Ok(labels) = labels_of(file) {
            panic!("{} reads as a set: {labels:?}", file.display());
        }
    }
    // Once the obstacle is gone, writing again gives the new set whole.
    std::fs::remove_dir_all(&blocked).unwrap();
    write_set(&path, 3, 20).unwrap();
    assert_eq!(labels_of(&files[2]).unwrap(), [20.0, 21.0, 22.0]);
}

/// A smaller set written over a larger one removes the old set's other
/// members (which would otherwise read as a set of old and new files).
#[test]
fn a_smaller_set_removes_the_old_sets_other_members() {
    let dir = scratch("shrink");
    let path = dir.join("d.mindrecord");
    write_set(&path, 4, 10).unwrap();
    let old = data_files(&path, 4);
    write_set(&path, 2, 20).unwrap();
    for gone in &old[2..] {
        assert!(
            !gone.exists() && !index_file(gone).exists(),
            "{}",
            gone.display()
        );
    }
    assert_eq!(labels_of(&old[0]).unwrap(), [20.0, 21.0]);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "d.mindrecord0",
            "d.mindrecord0.db",
            "d.mindrecord1",
            "d.mindrecord1.db"
        ]
    );
}
