//! CelebA: the aligned face images and their annotation files, as
//! torchvision's `datasets.CelebA` reads them.
//!
//! The layout is torchvision's: `root/celeba/img_align_celeba/*.jpg` beside
//! `list_eval_partition.txt` (an image and its split, 0 train, 1 valid,
//! 2 test, a line each), `identity_CelebA.txt` (an image and its person),
//! and three tables with a count line and a header line before their rows:
//! `list_attr_celeba.txt` (40 attributes of -1 or 1), `list_bbox_celeba.txt`
//! (x, y, width, height) and `list_landmarks_align_celeba.txt` (five points,
//! x then y). [`Layout::MindSpore`] reads MindSpore's `CelebADataset` layout
//! instead: the text files and the images in one folder.
//!
//! Lines are read as torchvision reads them (Python's `csv.reader` with a
//! space delimiter and `skipinitialspace`): `\n`, `\r\n` or `\r` ends a
//! line, runs of spaces separate fields, spaces starting a line are
//! ignored, a space ending one makes an empty last field (which is no
//! number, so an error in a row; a header's empty last name is dropped).
//! Numbers are read as Python's `int` reads them: spaces around them, a
//! sign, and `_` between digits allowed.
//!
//! Stricter than torchvision, each an error naming the file and line rather
//! than data that may be wrong: every row of every file must name the same
//! image as the split file's row of that number (torchvision pairs rows by
//! position alone), a table's count line must equal its rows, each row must
//! hold exactly the columns of its kind (40 attributes, or as many as the
//! header names; 1 identity; 4 box values; 10 landmark values), an
//! attribute must be -1 or 1, a split 0, 1 or 2; quoted fields and image
//! names that are paths (`/`, `\`, `..`) are refused. Only the files of the
//! targets asked for are read (torchvision reads all five, and checks their
//! MD5 against the published dataset's). Unlike torchvision 0.29.2, a split
//! of a single image is read (torchvision fails on it).
//!
//! Targets: [`Target::Attr`] as torchvision gives them, 0 or 1 (MindSpore's
//! `CelebADataset` gives the same), or the files' own -1 or 1 with
//! [`AttrValues::Signed`]; several targets are concatenated into the
//! sample's labels in the order asked (torchvision's tuple, flattened).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::{Path, PathBuf};

use super::{DataError, Dataset, Sample, label};

const FORMAT: &str = "CelebA";

/// The largest annotation file read (256 MiB; the real attribute file has
/// 26 MB): a larger one is refused before it is read.
pub const MAX_TEXT_BYTES: u64 = 256 << 20;

/// The most rows an annotation file may hold (2^21, ten times CelebA's
/// 202,599), and the most values all its rows may hold together (2^25,
/// four times the attribute file's 8.1 million): a file past either is
/// refused at its first row too many, so that parsing takes a bounded
/// multiple of a real file's memory, not of the text cap.
pub const MAX_ROWS: usize = 1 << 21;
/// See [`MAX_ROWS`].
pub const MAX_VALUES: usize = 1 << 25;

/// The split file's name.
pub const PARTITION_FILE: &str = "list_eval_partition.txt";

/// Which images: a split of `list_eval_partition.txt`, or all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Split {
    /// Split 0.
    #[default]
    Train,
    /// Split 1.
    Valid,
    /// Split 2.
    Test,
    /// Every image, in the split file's order.
    All,
}

impl Split {
    /// The split torchvision names `name` (`train`, `valid`, `test`, `all`,
    /// any case).
    ///
    /// ```
    /// use tensorprep::train::data::celeba::Split;
    /// assert_eq!(Split::from_name("Valid"), Some(Split::Valid));
    /// assert_eq!(Split::from_name("val"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Split> {
        [
            ("train", Split::Train),
            ("valid", Split::Valid),
            ("test", Split::Test),
            ("all", Split::All),
        ]
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, s)| s)
    }

    /// The split file's value for it (`None` for all).
    fn value(self) -> Option<i64> {
        match self {
            Split::Train => Some(0),
            Split::Valid => Some(1),
            Split::Test => Some(2),
            Split::All => None,
        }
    }
}

/// A kind of target, read from its own file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Target {
    /// The 40 attributes (`list_attr_celeba.txt`).
    Attr,
    /// The person's identity (`identity_CelebA.txt`).
    Identity,
    /// The face's box in the uncropped image: x, y, width, height
    /// (`list_bbox_celeba.txt`).
    Bbox,
    /// Eyes, nose and mouth corners in the aligned image, x then y
    /// (`list_landmarks_align_celeba.txt`).
    Landmarks,
}

impl Target {
    /// The target torchvision names `name` (`attr`, `identity`, `bbox`,
    /// `landmarks`).
    ///
    /// ```
    /// use tensorprep::train::data::celeba::Target;
    /// assert_eq!(Target::from_name("bbox"), Some(Target::Bbox));
    /// ```
    pub fn from_name(name: &str) -> Option<Target> {
        [
            Target::Attr,
            Target::Identity,
            Target::Bbox,
            Target::Landmarks,
        ]
        .into_iter()
        .find(|t| t.name() == name)
    }

    /// torchvision's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Target::Attr => "attr",
            Target::Identity => "identity",
            Target::Bbox => "bbox",
            Target::Landmarks => "landmarks",
        }
    }

    /// The file it is read from.
    pub fn file(self) -> &'static str {
        match self {
            Target::Attr => "list_attr_celeba.txt",
            Target::Identity => "identity_CelebA.txt",
            Target::Bbox => "list_bbox_celeba.txt",
            Target::Landmarks => "list_landmarks_align_celeba.txt",
        }
    }

    /// Whether its file starts with a count line and a header line.
    fn has_header(self) -> bool {
        !matches!(self, Target::Identity)
    }

    /// Values per row, when its kind fixes them (the attributes' number is
    /// the header's).
    fn width(self) -> Option<usize> {
        match self {
            Target::Attr => None,
            Target::Identity => Some(1),
            Target::Bbox => Some(4),
            Target::Landmarks => Some(10),
        }
    }
}

/// What an attribute's label is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AttrValues {
    /// 0 or 1, as torchvision and MindSpore give them.
    #[default]
    ZeroOne,
    /// -1 or 1, as the file holds them.
    Signed,
}

/// Where the files lie.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layout {
    /// torchvision's: `root/celeba/` holds the text files and
    /// `img_align_celeba/` the images.
    #[default]
    Torchvision,
    /// MindSpore's `CelebADataset(dataset_dir)`: `root` holds the text
    /// files and the images.
    MindSpore,
}

/// How a [`CelebA`] is read: its split, its targets, its attributes'
/// values, its layout.
///
/// ```
/// use tensorprep::train::data::celeba::{AttrValues, CelebAOptions, Split, Target};
///
/// let options = CelebAOptions::new(Split::Test)
///     .targets(&[Target::Identity, Target::Attr])
///     .attr_values(AttrValues::Signed);
/// assert_eq!(options.split, Split::Test);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CelebAOptions {
    /// Which images.
    pub split: Split,
    /// The targets, concatenated in this order into each sample's labels
    /// (none: no labels).
    pub targets: Vec<Target>,
    /// An attribute's label.
    pub attr_values: AttrValues,
    /// Where the files lie.
    pub layout: Layout,
}

impl Default for CelebAOptions {
    /// torchvision's defaults: the train split, the attributes.
    fn default() -> Self {
        CelebAOptions::new(Split::Train)
    }
}

impl CelebAOptions {
    /// `split` with torchvision's default target, the attributes (0 or 1).
    pub fn new(split: Split) -> Self {
        CelebAOptions {
            split,
            targets: alloc::vec![Target::Attr],
            attr_values: AttrValues::ZeroOne,
            layout: Layout::Torchvision,
        }
    }

    /// These targets, in this order.
    pub fn targets(mut self, targets: &[Target]) -> Self {
        self.targets = targets.to_vec();
        self
    }

    /// Attributes as `values`.
    pub fn attr_values(mut self, values: AttrValues) -> Self {
        self.attr_values = values;
        self
    }

    /// Files laid out as `layout`.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }
}

/// CelebA's images of one split with the targets asked for.
///
/// ```
/// use tensorprep::train::data::Dataset;
/// use tensorprep::train::data::celeba::{CelebA, CelebAOptions, Split, Target};
///
/// let root = "../tests/fixtures/celeba/root";
/// let d = CelebA::open(root, &CelebAOptions::new(Split::Valid).targets(&[Target::Bbox]))?;
/// assert_eq!(d.names(), ["000003.jpg", "000006.jpg"]);
/// let mut sample = Default::default();
/// d.read(1, &mut sample)?;
/// assert_eq!(sample.labels, [110.0, 76.0, 221.0, 323.0]);
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
#[derive(Clone, Debug)]
pub struct CelebA {
    images: PathBuf,
    names: Vec<String>,
    /// Each image's path (`images` joined with its name), made once at
    /// open: reading a sample allocates none.
    paths: Vec<PathBuf>,
    /// Each image's row in the split file.
    rows: Vec<u32>,
    /// `width` labels per image.
    labels: Vec<f32>,
    width: usize,
    attr_names: Vec<String>,
}

/// One text file's rows: their line numbers, image names and values.
struct Table<'a> {
    path: PathBuf,
    lines: Vec<u64>,
    names: Vec<&'a str>,
    values: Vec<i64>,
    width: usize,
    header: Vec<&'a str>,
}

impl CelebA {
    /// Reads the split file and the files of `options.targets` under
    /// `root` (laid out as `options.layout` says); no image is read yet.
    pub fn open(root: impl AsRef<Path>, options: &CelebAOptions) -> Result<CelebA, DataError> {
        let dir = match options.layout {
            Layout::Torchvision => root.as_ref().join("celeba"),
            Layout::MindSpore => root.as_ref().to_path_buf(),
        };
        let images = match options.layout {
            Layout::Torchvision => dir.join("img_align_celeba"),
            Layout::MindSpore => dir.clone(),
        };
        if !images.is_dir() {
            return Err(DataError::corrupt(
                FORMAT,
                &images,
                0,
                "not a folder: the images are expected in it",
            ));
        }
        CelebA::parse(images, options, |name| {
            let path = dir.join(name);
            let bytes = crate::files::read_capped(&path, MAX_TEXT_BYTES).map_err(|e| match e {
                crate::files::ReadError::Io(e) => DataError::io(&path, e),
                e => DataError::corrupt(FORMAT, &path, 0, e.to_string()),
            })?;
            String::from_utf8(bytes)
                .map_err(|e| {
                    let at = e.utf8_error().valid_up_to() as u64;
                    DataError::corrupt(FORMAT, &path, at, "not UTF-8 text")
                })
                .map(|text| (path, text))
        })
    }

    /// Parses the annotation files `text_of(file name)` returns (its path,
    /// for messages, and its text), for images in `images`: what
    /// [`open`](CelebA::open) does once it has read them.
    ///
    /// ```
    /// use std::path::PathBuf;
    /// use tensorprep::train::data::celeba::{CelebA, CelebAOptions, Split, Target};
    ///
    /// let text_of = |name: &str| Ok((PathBuf::from(name), match name {
    ///     "list_eval_partition.txt" => "a.jpg 0\nb.jpg 2\n".to_string(),
    ///     _ => "a.jpg 7\nb.jpg 9\n".to_string(),
    /// }));
    /// let options = CelebAOptions::new(Split::Test).targets(&[Target::Identity]);
    /// let d = CelebA::parse("img".into(), &options, text_of)?;
    /// assert_eq!((d.names(), d.labels(0)), (&["b.jpg".to_string()][..], &[9.0][..]));
    /// # Ok::<(), tensorprep::train::data::DataError>(())
    /// ```
    pub fn parse(
        images: PathBuf,
        options: &CelebAOptions,
        mut text_of: impl FnMut(&str) -> Result<(PathBuf, String), DataError>,
    ) -> Result<CelebA, DataError> {
        let (path, text) = text_of(PARTITION_FILE)?;
        let split = table(&path, &text, false, Some(1))?;
        let mut targets = Vec::new();
        for &t in &options.targets {
            let (path, text) = text_of(t.file())?;
            targets.push((t, path, text));
        }
        let mut tables = Vec::new();
        for (t, path, text) in &targets {
            let table = table(path, text, t.has_header(), t.width())?;
            if table.names.len() != split.names.len() {
                return Err(DataError::corrupt(
                    FORMAT,
                    path,
                    0,
                    alloc::format!(
                        "{} rows, while {} has {}",
                        table.names.len(),
                        PARTITION_FILE,
                        split.names.len()
                    ),
                ));
            }
            if let Some(i) = (0..split.names.len()).find(|&i| table.names[i] != split.names[i]) {
                return Err(table.bad(
                    i,
                    alloc::format!(
                        "image `{}`, while row {} of {PARTITION_FILE} is `{}`",
                        table.names[i],
                        i + 1,
                        split.names[i]
                    ),
                ));
            }
            tables.push((*t, table));
        }
        let width: usize = tables.iter().map(|(_, t)| t.width).sum();
        let mut d = CelebA {
            images,
            names: Vec::new(),
            paths: Vec::new(),
            rows: Vec::new(),
            labels: Vec::new(),
            width,
            attr_names: tables
                .iter()
                .find(|(t, _)| *t == Target::Attr)
                .map(|(_, t)| t.header.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default(),
        };
        for (i, &s) in split.values.iter().enumerate() {
            if !(0..=2).contains(&s) {
                return Err(split.bad(i, alloc::format!("split {s} (0, 1 or 2 exist)")));
            }
            if options.split.value().is_some_and(|v| v != s) {
                continue;
            }
            for (t, table) in &tables {
                for &v in &table.values[i * table.width..(i + 1) * table.width] {
                    let v = match (t, options.attr_values) {
                        (Target::Attr, _) if v != 1 && v != -1 => {
                            return Err(table.bad(i, alloc::format!("attribute {v} (-1 or 1)")));
                        }
                        (Target::Attr, AttrValues::ZeroOne) => (v + 1) / 2,
                        _ => v,
                    };
                    let v = label::int(v).map_err(|what| table.bad(i, what))?;
                    d.labels
                        .try_reserve(1)
                        .map_err(|_| table.bad(i, "no memory for the labels"))?;
                    d.labels.push(v);
                }
            }
            d.names.push(split.names[i].to_string());
            d.rows.push(i as u32);
        }
        d.paths = d.names.iter().map(|name| d.images.join(name)).collect();
        Ok(d)
    }

    /// Each image's file name, in the dataset's order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The attributes' names (the header of `list_attr_celeba.txt`; empty
    /// unless the attributes are a target).
    pub fn attr_names(&self) -> &[String] {
        &self.attr_names
    }

    /// Sample `index`'s labels (every target, in the order asked).
    pub fn labels(&self, index: usize) -> &[f32] {
        self.labels
            .get(index * self.width..(index + 1) * self.width)
            .unwrap_or(&[])
    }

    /// The folder the images are read from.
    pub fn image_dir(&self) -> &Path {
        &self.images
    }
}

impl Table<'_> {
    fn bad(&self, row: usize, what: impl Into<String>) -> DataError {
        let line = self.lines.get(row).copied().unwrap_or(0);
        line_error(&self.path, line, what)
    }
}

fn line_error(path: &Path, line: u64, what: impl Into<String>) -> DataError {
    DataError::corrupt(
        FORMAT,
        path,
        line,
        alloc::format!("line {line}: {}", what.into()),
    )
}

/// Lines as Python's universal newlines split them: `\r\n`, `\n` or `\r`
/// ends one; an end at the end of the text starts no further line.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let empty = text.is_empty();
    let text = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix(['\n', '\r']))
        .unwrap_or(text);
    let mut pieces = text.split('\n').flat_map(|l| {
        let l = l.strip_suffix('\r').unwrap_or(l);
        l.split('\r')
    });
    core::iter::from_fn(move || if empty { None } else { pieces.next() })
}

/// A line's fields as `csv.reader(delimiter=" ", skipinitialspace=True)`
/// splits it (an empty line has none).
fn fields(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(line).filter(|l| !l.is_empty());
    core::iter::from_fn(move || {
        let r = rest?.trim_start_matches(' ');
        match r.find(' ') {
            Some(i) => {
                rest = Some(&r[i + 1..]);
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// An integer as Python's `int(text)` reads it (ASCII digits).
fn int(text: &str) -> Option<i64> {
    let t = text.trim_matches(char::is_whitespace);
    let (negative, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let bytes = digits.as_bytes();
    if bytes.first()?.is_ascii_digit() && bytes.last()?.is_ascii_digit() {
        let mut value: i64 = 0;
        let mut after_underscore = false;
        for &b in bytes {
            if b == b'_' {
                if after_underscore {
                    return None;
                }
                after_underscore = true;
                continue;
            }
            after_underscore = false;
            let d = i64::from(b.checked_sub(b'0').filter(|d| *d < 10)?);
            value = value.checked_mul(10)?.checked_add(d)?;
        }
        return Some(if negative { -value } else { value });
    }
    None
}

/// Parses a text file: (a count line and a header line, when `header`,)
/// then rows of an image name and `width` integers (the header's names'
/// number when `width` is `None`).
fn table<'a>(
    path: &Path,
    text: &'a str,
    header: bool,
    width: Option<usize>,
) -> Result<Table<'a>, DataError> {
    let mut t = Table {
        path: path.to_path_buf(),
        lines: Vec::new(),
        names: Vec::new(),
        values: Vec::new(),
        width: width.unwrap_or(0),
        header: Vec::new(),
    };
    let mut count = None;
    let mut next_line = 0u64;
    for (n, line) in lines(text).enumerate() {
        let n = n as u64 + 1;
        next_line = n + 1;
        let bad = |what: &str| line_error(path, n, what);
        if line.contains('\0') {
            return Err(bad("a NUL character"));
        }
        if line.is_empty() {
            return Err(bad("an empty line"));
        }
        if fields(line).any(|f| f.starts_with('"')) {
            return Err(bad("a quoted field (not supported)"));
        }
        if header && n == 1 {
            let mut f = fields(line);
            match (f.next().and_then(int), f.next()) {
                (Some(c), None) if c >= 0 => count = Some(c as u64),
                _ => return Err(bad("not the count of rows")),
            }
            continue;
        }
        if header && n == 2 {
            t.header = fields(line).filter(|f| !f.is_empty()).collect();
            if width.is_none() {
                t.width = t.header.len();
            }
            continue;
        }
        if t.names.len() >= MAX_ROWS || t.values.len() + t.width > MAX_VALUES {
            return Err(bad(&alloc::format!(
                "more rows than an annotation file may hold ({MAX_ROWS} rows, {MAX_VALUES} values)"
            )));
        }
        let mut f = fields(line);
        let name = f.next().unwrap_or("");
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\']) {
            return Err(bad("not an image file name"));
        }
        t.values
            .try_reserve(t.width)
            .map_err(|_| bad("no memory for the rows"))?;
        let mut got = 0;
        for field in f {
            got += 1;
            if got > t.width {
                break;
            }
            let v =
                int(field).ok_or_else(|| bad(&alloc::format!("`{field}` is not an integer")))?;
            t.values.push(v);
        }
        if got != t.width {
            return Err(bad(&alloc::format!(
                "{} values after the image name, not {}",
                if got > t.width {
                    alloc::format!("more than {}", t.width)
                } else {
                    got.to_string()
                },
                t.width
            )));
        }
        t.names.push(name);
        t.lines.push(n);
    }
    if header {
        let Some(count) = count else {
            return Err(line_error(path, 1, "no count line"));
        };
        if t.header.is_empty() {
            return Err(line_error(path, 2, "no header line"));
        }
        if count != t.names.len() as u64 {
            return Err(line_error(
                path,
                1,
                alloc::format!("a count of {count}, while {} rows follow", t.names.len()),
            ));
        }
    }
    if t.names.is_empty() {
        return Err(line_error(path, next_line.max(1), "no rows"));
    }
    if t.names.len() > u32::MAX as usize {
        return Err(line_error(path, 0, "more than 2^32 rows"));
    }
    Ok(t)
}

impl Dataset for CelebA {
    /// The images' names and rows, and their labels.
    fn fingerprint(&self) -> u64 {
        let mut h = crate::Fnv1a64::new();
        h.update(b"celeba");
        for (name, row) in self.names.iter().zip(&self.rows) {
            h.update(name.as_bytes());
            h.update(&[0]);
            h.update(&row.to_le_bytes());
        }
        h.update(&(self.width as u64).to_le_bytes());
        for l in &self.labels {
            h.update(&l.to_bits().to_le_bytes());
        }
        h.finish()
    }

    fn len(&self) -> usize {
        self.names.len()
    }

    fn describe(&self, index: usize) -> String {
        match self.paths.get(index) {
            Some(path) => path.display().to_string(),
            None => alloc::format!("sample {index}"),
        }
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        DataError::check_index(index, self.paths.len())?;
        super::folder::read_whole(&self.paths[index], FORMAT, &mut sample.bytes)?;
        sample.labels.clear();
        sample.labels.extend_from_slice(self.labels(index));
        sample.id = u64::from(self.rows[index]);
        sample.content = super::Content::Encoded;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_split_as_python_csv_with_skipinitialspace() {
        fn f(l: &str) -> Vec<&str> {
            fields(l).collect()
        }
        assert_eq!(f("a b "), ["a", "b", ""]);
        assert_eq!(f("   "), [""]);
        assert_eq!(f(" a"), ["a"]);
        assert_eq!(f("a  b"), ["a", "b"]);
        assert!(f("").is_empty());
        assert_eq!(f("a\tb 1"), ["a\tb", "1"]);
    }

    #[test]
    fn lines_end_as_universal_newlines() {
        fn l(t: &str) -> Vec<&str> {
            lines(t).collect()
        }
        assert_eq!(l("a\r\nb\rc\n"), ["a", "b", "c"]);
        assert_eq!(l("a\n\nb"), ["a", "", "b"]);
        assert!(l("").is_empty());
        assert_eq!(l("\n"), [""]);
    }

    #[test]
    fn ints_read_as_python_int() {
        for (t, v) in [("1", 1), ("-1", -1), ("+3", 3), (" 1_0 ", 10), ("1\t", 1)] {
            assert_eq!(int(t), Some(v), "{t:?}");
        }
        for t in [
            "",
            "-",
            "1__0",
            "_1",
            "1_",
            "1.0",
            "x",
            "99999999999999999999",
        ] {
            assert_eq!(int(t), None, "{t:?}");
        }
    }
}
