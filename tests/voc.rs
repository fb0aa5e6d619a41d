//! Pascal VOC detection on a tiny crafted VOCdevkit tree: boxes, classes in
//! the devkit's order, `difficult`, the coordinate conventions, and the
//! refused files (bad XML, unknown class, missing file).

use std::path::{Path, PathBuf};

use tensorprep::targets::{BoxFormat, Canvas};
use tensorprep::train::data::voc::{VOC_CLASSES, Voc, VocCoordinates, VocOptions};
use tensorprep::train::data::{Dataset, Sample};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

const DOG_AND_PERSON: &str = r#"<annotation>
  <folder>VOC2007</folder><filename>000001.jpg</filename>
  <size><width>451</width><height>300</height><depth>3</depth></size>
  <object><name>dog</name><pose>Left</pose><truncated>1</truncated><difficult>0</difficult>
    <bndbox><xmin>48</xmin><ymin>240</ymin><xmax>195</xmax><ymax>300</ymax></bndbox></object>
  <object><name>person</name><difficult>1</difficult>
    <bndbox><xmin>8</xmin><ymin>12</ymin><xmax>352</xmax><ymax>298</ymax></bndbox>
    <part><name>head</name><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax></bndbox></part>
  </object>
</annotation>
"#;

const AEROPLANE: &str = "<annotation><size><width>227</width><height>151</height></size>\
<object><name>aeroplane</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>227.0</xmax><ymax>151</ymax></bndbox></object>\
<object><name>tvmonitor</name><bndbox><xmin>5</xmin><ymin>6</ymin><xmax>7</xmax><ymax>8</ymax></bndbox></object>\
</annotation>";

/// `VOCdevkit/VOC2007` with ids 000001 (sample.jpg) and 000002
/// (sample_gray.jpg) in `train.txt`, annotations as given.
fn tree(tag: &str, first: &str, second: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("tp-voc-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let base = root.join("VOC2007");
    for d in ["ImageSets/Main", "Annotations", "JPEGImages"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    std::fs::write(base.join("ImageSets/Main/train.txt"), "000001\n000002\n").unwrap();
    std::fs::write(base.join("Annotations/000001.xml"), first).unwrap();
    std::fs::write(base.join("Annotations/000002.xml"), second).unwrap();
    for (from, id) in [("sample.jpg", "000001"), ("sample_gray.jpg", "000002")] {
        std::fs::copy(
            Path::new(FIXTURES).join(from),
            base.join(format!("JPEGImages/{id}.jpg")),
        )
        .unwrap();
    }
    root
}

fn read(voc: &Voc, i: usize) -> Sample {
    let mut s = Sample::default();
    voc.read(i, &mut s).unwrap();
    s
}

#[test]
fn objects_classes_and_difficult_as_the_files_give_them() {
    let root = tree("plain", DOG_AND_PERSON, AEROPLANE);
    let voc = Voc::open(&root, "2007", "train", VocOptions::default()).unwrap();
    assert_eq!((voc.len(), voc.id(1)), (2, Some("000002")));
    let s = read(&voc, 0);
    assert_eq!(
        s.bytes,
        std::fs::read(root.join("VOC2007/JPEGImages/000001.jpg")).unwrap()
    );
    let t = s.target.unwrap();
    let b = t.boxes.as_ref().unwrap();
    assert_eq!(
        (b.format(), b.canvas()),
        (BoxFormat::Xyxy, Canvas::new(300, 451).unwrap())
    );
    // As stored: 1-based inclusive; a part's box is not an object.
    assert_eq!(
        b.boxes(),
        &[[48.0, 240.0, 195.0, 300.0], [8.0, 12.0, 352.0, 298.0]]
    );
    assert_eq!(t.labels, [11, 14]);
    assert_eq!((VOC_CLASSES[11], VOC_CLASSES[14]), ("dog", "person"));
    assert_eq!(t.difficult, [0, 1]);
    t.check().unwrap();
    let t = read(&voc, 1).target.unwrap();
    assert_eq!(t.labels, [0, 19]);
    assert!(voc.describe(1).contains("000002.jpg"));

    // 0-based edges, difficult objects dropped, labels from 1.
    let options = VocOptions {
        keep_difficult: false,
        coordinates: VocCoordinates::ZeroBased,
        first_label: 1,
    };
    let other = Voc::open(&root, "2007", "train", options).unwrap();
    let t = read(&other, 0).target.unwrap();
    assert_eq!(t.boxes.unwrap().boxes(), &[[47.0, 239.0, 195.0, 300.0]]);
    assert_eq!(
        (t.labels.as_slice(), t.difficult.as_slice()),
        (&[12][..], &[0][..])
    );
    assert_ne!(voc.fingerprint(), other.fingerprint());
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn bad_files_are_errors_naming_them() {
    let cases = [
        (
            "unclosed",
            "<annotation><size><width>4</width><height>4</height></size><object>",
            "ends inside",
        ),
        (
            "mismatched",
            "<annotation><size></width></annotation>",
            "bad XML",
        ),
        (
            "unknown_class",
            &AEROPLANE.replace("tvmonitor", "television"),
            "object 1: class \"television\" is not one of VOC's 20",
        ),
        ("no_size", "<annotation></annotation>", "no <size><width>"),
        (
            "bad_number",
            &AEROPLANE.replace("227.0", "nan"),
            "object 0: <xmax> \"nan\" is not a finite number",
        ),
        (
            "inverted",
            &AEROPLANE.replace("<xmax>7</xmax>", "<xmax>4</xmax>"),
            "object 1: a box whose max is below its min",
        ),
        (
            "no_name",
            &AEROPLANE.replace("<name>aeroplane</name>", ""),
            "object 0: no <name>",
        ),
        (
            "difficult_2",
            &AEROPLANE.replace(
                "<name>aeroplane</name>",
                "<name>aeroplane</name><difficult>2</difficult>",
            ),
            "difficult \"2\"",
        ),
        (
            "twice",
            &AEROPLANE.replace("<ymin>1</ymin>", "<ymin>1</ymin><ymin>2</ymin>"),
            "given twice",
        ),
    ];
    for (tag, xml, expected) in cases {
        let root = tree(tag, DOG_AND_PERSON, xml);
        let e = Voc::open(&root, "2007", "train", VocOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(expected) && e.contains("000002.xml"),
            "{tag}: {e}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }
    // A listed id without its annotation, an id leaving the folder, a
    // missing list, a missing image (when read).
    let root = tree("missing", DOG_AND_PERSON, AEROPLANE);
    let base = root.join("VOC2007");
    std::fs::remove_file(base.join("Annotations/000002.xml")).unwrap();
    let e = Voc::open(&root, "2007", "train", VocOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("000002.xml"), "{e}");
    std::fs::write(base.join("ImageSets/Main/train.txt"), "000001\n../000001\n").unwrap();
    let e = Voc::open(&root, "2007", "train", VocOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("train.txt") && e.contains("line 2"), "{e}");
    let e = Voc::open(&root, "2007", "val", VocOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("val.txt"), "{e}");
    std::fs::write(base.join("ImageSets/Main/train.txt"), "000001\n").unwrap();
    std::fs::remove_file(base.join("JPEGImages/000001.jpg")).unwrap();
    let voc = Voc::open(&root, "2007", "train", VocOptions::default()).unwrap();
    let e = voc.read(0, &mut Sample::default()).unwrap_err().to_string();
    assert!(e.contains("000001.jpg"), "{e}");
    std::fs::remove_dir_all(root).unwrap();
}
