//! CelebA: the targets of every split and target type equal torchvision
//! 0.29.2's parse of a CelebA-shaped tree (`fixtures/celeba/`, made by its
//! `make_celeba_fixtures.py`), the samples are the image files' bytes, and
//! malformed annotation files are typed errors naming the file and line.

use std::path::{Path, PathBuf};

use tensorprep::train::data::celeba::{
    AttrValues, CelebA, CelebAOptions, Layout, MAX_ROWS, PARTITION_FILE, Split, Target,
};
use tensorprep::train::data::{DataError, Dataset, Sample};
use tensorprep_tests::fixture;

const TEXT_FILES: [&str; 5] = [
    "list_eval_partition.txt",
    "identity_CelebA.txt",
    "list_attr_celeba.txt",
    "list_bbox_celeba.txt",
    "list_landmarks_align_celeba.txt",
];

/// A sample's file name and target values.
type Row = (String, Vec<f32>);

/// torchvision's parse: (split/targets) -> rows of (file name, values).
fn torchvision() -> Vec<(String, Vec<Row>)> {
    let text = std::fs::read_to_string(fixture("celeba/torchvision.txt")).unwrap();
    let mut out: Vec<(String, Vec<Row>)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split(' ');
        let key = f.next().unwrap().to_string();
        let name = f.next().unwrap().to_string();
        let values = f.map(|v| v.parse::<i64>().unwrap() as f32).collect();
        match out.last_mut() {
            Some((k, rows)) if *k == key => rows.push((name, values)),
            _ => out.push((key, vec![(name, values)])),
        }
    }
    assert_eq!(out.len(), 4 * 5, "4 splits times 5 target types");
    out
}

fn options_for(key: &str) -> CelebAOptions {
    let (split, targets) = key.split_once('/').unwrap();
    let targets: Vec<Target> = targets
        .split(',')
        .map(|t| Target::from_name(t).unwrap())
        .collect();
    CelebAOptions::new(Split::from_name(split).unwrap()).targets(&targets)
}

fn rows_of(d: &CelebA) -> Vec<Row> {
    let mut sample = Sample::default();
    (0..d.len())
        .map(|i| {
            d.read(i, &mut sample).unwrap();
            (d.names()[i].clone(), sample.labels.clone())
        })
        .collect()
}

/// A scratch copy of the fixture tree, each text file passed through `edit`.
fn copy_tree(tag: &str, edit: impl Fn(&str, String) -> String) -> PathBuf {
    let root = std::env::temp_dir().join(format!("tp-celeba-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let from = fixture("celeba/root/celeba");
    let to = root.join("celeba");
    std::fs::create_dir_all(to.join("img_align_celeba")).unwrap();
    for entry in std::fs::read_dir(from.join("img_align_celeba")).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, to.join("img_align_celeba").join(p.file_name().unwrap())).unwrap();
    }
    for name in TEXT_FILES {
        let text = std::fs::read_to_string(from.join(name)).unwrap();
        std::fs::write(to.join(name), edit(name, text)).unwrap();
    }
    root
}

#[test]
fn targets_equal_torchvision_s_for_every_split_and_target_type() {
    let root = fixture("celeba/root");
    for (key, expected) in torchvision() {
        let d = CelebA::open(&root, &options_for(&key)).unwrap();
        assert_eq!(rows_of(&d), expected, "{key}");
    }
}

#[test]
fn samples_are_the_image_files_and_ids_their_rows() {
    let root = fixture("celeba/root");
    let d = CelebA::open(&root, &CelebAOptions::new(Split::Test)).unwrap();
    assert_eq!(d.names(), ["000004.jpg", "000007.jpg"]);
    assert_eq!(d.attr_names().len(), 40);
    assert_eq!(d.attr_names()[0], "5_o_Clock_Shadow");
    let mut sample = Sample::default();
    for (i, row) in [(0, 3), (1, 6)] {
        d.read(i, &mut sample).unwrap();
        let file = root.join("celeba/img_align_celeba").join(&d.names()[i]);
        assert_eq!(sample.bytes, std::fs::read(&file).unwrap());
        assert_eq!(sample.id, row);
        assert_eq!(d.describe(i), file.display().to_string());
    }
    assert!(matches!(
        d.read(2, &mut sample),
        Err(DataError::OutOfRange { index: 2, len: 2 })
    ));
}

#[test]
fn crlf_line_ends_parse_the_same() {
    // The fixture script checked that torchvision parses CRLF files the same.
    let root = copy_tree("crlf", |_, t| t.replace('\n', "\r\n"));
    for (key, expected) in torchvision() {
        let d = CelebA::open(&root, &options_for(&key)).unwrap();
        assert_eq!(rows_of(&d), expected, "{key}");
    }
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn signed_attributes_are_the_files_own_values() {
    let root = fixture("celeba/root");
    let expected = torchvision()
        .into_iter()
        .find(|(k, _)| k == "all/attr")
        .unwrap()
        .1;
    let options = CelebAOptions::new(Split::All).attr_values(AttrValues::Signed);
    let got = rows_of(&CelebA::open(&root, &options).unwrap());
    assert_eq!(got.len(), expected.len());
    for ((name, signed), (tv_name, zero_one)) in got.iter().zip(&expected) {
        assert_eq!(name, tv_name);
        let back: Vec<f32> = signed.iter().map(|v| (v + 1.0) / 2.0).collect();
        assert_eq!(&back, zero_one);
        assert!(signed.iter().all(|v| *v == 1.0 || *v == -1.0));
    }
}

#[test]
fn mindspore_layout_reads_one_folder() {
    // MindSpore 2.10's CelebADataset(dir, usage="all", shuffle=False) gave
    // these images in this order with the same 0/1 attributes.
    let dir = std::env::temp_dir().join(format!("tp-celeba-{}-ms", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let from = fixture("celeba/root/celeba");
    for entry in std::fs::read_dir(from.join("img_align_celeba")).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
    for name in TEXT_FILES {
        std::fs::copy(from.join(name), dir.join(name)).unwrap();
    }
    let expected = torchvision()
        .into_iter()
        .find(|(k, _)| k == "all/attr")
        .unwrap()
        .1;
    let options = CelebAOptions::new(Split::All).layout(Layout::MindSpore);
    assert_eq!(rows_of(&CelebA::open(&dir, &options).unwrap()), expected);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Opens a copy whose `file` is `edit`ed; returns the error's path, line
/// and message.
fn broken(
    tag: &str,
    file: &str,
    target: Target,
    edit: impl Fn(String) -> String,
) -> (String, u64, String) {
    let root = copy_tree(tag, |name, t| if name == file { edit(t) } else { t });
    let options = CelebAOptions::new(Split::All).targets(&[target]);
    let err = CelebA::open(&root, &options).unwrap_err();
    std::fs::remove_dir_all(&root).unwrap();
    match err {
        DataError::Corrupt {
            format: "CelebA",
            path,
            offset,
            what,
        } => {
            assert!(path.ends_with(file), "{path} for {file}");
            (path, offset, what)
        }
        other => panic!("{tag}: {other}"),
    }
}

/// Replaces line `n` (1-based) of `text`.
fn with_line(text: String, n: usize, line: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == n {
                line.to_string()
            } else {
                l.to_string()
            }
        })
        .map(|l| l + "\n")
        .collect()
}

#[test]
fn malformed_lines_are_errors_naming_file_and_line() {
    let attr = "list_attr_celeba.txt";
    let row4 = |t: &String| t.lines().nth(3).unwrap().to_string();
    // A value that is not a number (torchvision's int() raises).
    let (_, line, what) = broken("nan", attr, Target::Attr, |t| {
        let l = row4(&t).replacen(" 1", " x", 1);
        with_line(t, 4, &l)
    });
    assert_eq!(line, 4);
    assert!(what.contains("`x` is not an integer"), "{what}");
    // A row short of a value, and one with a value too many.
    let (_, line, what) = broken("short", attr, Target::Attr, |t| {
        let l = row4(&t);
        let l = l[..l.len() - 3].to_string();
        with_line(t, 4, &l)
    });
    assert_eq!((line, what.contains("39 values")), (4, true), "{what}");
    let (_, line, _) = broken("long", attr, Target::Attr, |t| {
        let l = row4(&t) + " 1";
        with_line(t, 4, &l)
    });
    assert_eq!(line, 4);
    // A trailing space makes an empty last field, as in Python's csv.
    let (_, line, _) = broken("trailing", attr, Target::Attr, |t| {
        let l = row4(&t) + " ";
        with_line(t, 4, &l)
    });
    assert_eq!(line, 4);
    // An attribute that is neither -1 nor 1.
    let (_, line, what) = broken("zero", attr, Target::Attr, |t| {
        let l = row4(&t).replacen("-1", " 0", 1);
        with_line(t, 4, &l)
    });
    assert_eq!((line, what.contains("attribute 0")), (4, true), "{what}");
    // A count line that differs from the rows.
    let (_, line, what) = broken("count", attr, Target::Attr, |t| with_line(t, 1, "8"));
    assert_eq!((line, what.contains("count of 8")), (1, true), "{what}");
    // An empty line among the rows (torchvision's row[0] raises).
    let (_, line, _) = broken("empty", "list_bbox_celeba.txt", Target::Bbox, |t| {
        t.replacen("000002.jpg", "\n000002.jpg", 1)
    });
    assert_eq!(line, 4);
    // A row naming another image than the split file's row.
    let (_, line, what) = broken("order", "identity_CelebA.txt", Target::Identity, |t| {
        t.replace("000002.jpg", "000009.jpg")
    });
    assert_eq!(line, 2);
    assert!(what.contains("000009.jpg"), "{what}");
    // A name that is a path.
    let (_, line, _) = broken("path", PARTITION_FILE, Target::Identity, |t| {
        t.replace("000003.jpg", "../000003.jpg")
    });
    assert_eq!(line, 3);
    // A split that is not 0, 1 or 2.
    let (_, line, what) = broken("split", PARTITION_FILE, Target::Identity, |t| {
        t.replace("000005.jpg 0", "000005.jpg 3")
    });
    assert_eq!((line, what.contains("split 3")), (5, true), "{what}");
    // A landmark row of 9 values.
    let (_, line, _) = broken(
        "marks",
        "list_landmarks_align_celeba.txt",
        Target::Landmarks,
        |t| {
            let l = t
                .lines()
                .nth(2)
                .unwrap()
                .rsplit_once(' ')
                .unwrap()
                .0
                .to_string();
            with_line(t, 3, &l)
        },
    );
    assert_eq!(line, 3);
}

#[test]
fn missing_files_are_io_errors_naming_them() {
    let root = copy_tree("missing", |_, t| t);
    std::fs::remove_file(root.join("celeba/list_bbox_celeba.txt")).unwrap();
    // Only the targets' files are read: the attributes still open.
    assert!(CelebA::open(&root, &CelebAOptions::new(Split::All)).is_ok());
    let bbox = CelebAOptions::new(Split::All).targets(&[Target::Bbox]);
    match CelebA::open(&root, &bbox).unwrap_err() {
        DataError::Io { path, .. } => assert!(path.ends_with("list_bbox_celeba.txt"), "{path}"),
        other => panic!("{other}"),
    }
    let not_root = CelebA::open(Path::new(&root).join("celeba"), &CelebAOptions::default());
    assert!(matches!(not_root, Err(DataError::Corrupt { .. })));
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_file_of_more_rows_than_celeba_could_hold_is_refused_at_the_row_past_the_cap() {
    // The split file is 2^21 + 1 rows of a name and a split (27 MB): parsing
    // stops at the first row past the cap, naming it.
    let (_, line, what) = broken("rows", PARTITION_FILE, Target::Identity, |_| {
        let mut t = String::with_capacity((MAX_ROWS + 1) * 13);
        for i in 0..=MAX_ROWS {
            t.push_str(&format!("{i:08}.j 0\n"));
        }
        t
    });
    assert_eq!(line, MAX_ROWS as u64 + 1);
    assert!(what.contains("more rows than"), "{what}");
}
