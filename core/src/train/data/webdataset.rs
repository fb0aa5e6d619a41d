//! WebDataset shards: tar files whose members sharing a key make a sample.
//!
//! A member `dir/name.ext1.ext2` has the key `dir/name` (the path up to the
//! first dot of the file name) and the extension `ext1.ext2` (compared in
//! lower case, as webdataset's `group_by_keys` does). Consecutive members
//! with one key are one sample: its image is the first member whose
//! extension is one of [`WebKeys::image`], its label the text of the member
//! [`WebKeys::label`] (`cls` by default: an integer or a number). Shard
//! lists use braces: `shard-{000..099}.tar`, `{train,val}.tar`.
//!
//! The tar headers are read once (the walk shared with the front-to-back
//! [`TarStream`](super::tar_stream::TarStream): the `tar` crate for ustar,
//! checksums and sizes; GNU long names and pax paths, each capped at
//! [`MAX_EXTENDED_BYTES`] before it is read), seeking over the members'
//! data; samples are then
//! read by position, like every dataset here. Members whose file name
//! starts with a dot (macOS's `._name.jpg`) are skipped, as webdataset
//! skips them. A shard is opened when a sample in it is read, and at most
//! [`MAX_OPEN_SHARDS`] stay open (1,282 ImageNet shards exceed the usual
//! limit of 1,024 descriptors): a [`FilePool`], as for the other formats.

use super::DataFile;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::{Path, PathBuf};

use super::json_target::{self, MAX_TARGET_BYTES};
use super::shards::{DEFAULT_OPEN_FILES, FilePool};
use super::tar_members::{self, FORMAT, Role};
use super::{DataError, Dataset, Sample, append_at, open_file, read_at};
use crate::targets::{Canvas, Target};

/// The most shards a pattern may name.
pub const MAX_SHARDS: usize = 1 << 20;

/// The most bytes a pattern's expanded names may take in all (a long
/// prefix times a wide range is refused before anything is built).
pub const MAX_PATTERN_BYTES: usize = 64 << 20;

/// The largest GNU long name or pax header read (its claimed size is
/// checked before a byte of it is read).
pub const MAX_EXTENDED_BYTES: u64 = 64 << 10;

/// The largest image or label member read: [`super::MAX_SAMPLE_BYTES`].
pub const MAX_MEMBER_BYTES: u64 = super::MAX_SAMPLE_BYTES;

/// Shards kept open at once (the least recently read is closed first).
pub const MAX_OPEN_SHARDS: usize = DEFAULT_OPEN_FILES;

/// Which members of a sample are its image and its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebKeys<'a> {
    /// Image extensions, in order of preference.
    pub image: &'a [&'a str],
    /// The label's extension.
    pub label: &'a str,
}

impl WebKeys<'static> {
    /// Images `jpg`, `jpeg`, `png`, `webp`; label `cls`.
    pub const CONVENTIONAL: WebKeys<'static> = WebKeys {
        image: &["jpg", "jpeg", "png", "webp"],
        label: "cls",
    };
}

/// One sample's members: where their bytes lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Member {
    shard: u32,
    offset: u64,
    len: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SampleAt {
    image: Member,
    label: Option<Member>,
    /// The target member, when the dataset reads targets.
    target: Option<Member>,
}

/// The sample being gathered while the members of its key go by: the
/// image (with its extension's rank among the preferred ones) and label.
struct Gathering {
    key: String,
    image: Option<(usize, Member)>,
    label: Option<Member>,
    target: Option<Member>,
}

/// Tar shards as one dataset of samples, in shard order then member order.
#[derive(Debug)]
pub struct WebDataset {
    /// The shards, with the length each had when it was indexed (a shard
    /// changed since is refused when it is opened again).
    shards: FilePool,
    samples: Vec<SampleAt>,
    keys: Vec<String>,
    /// The target member's extension (lower case), when targets are read.
    target: Option<String>,
}

/// One brace group of a pattern, or the text between groups.
enum Part<'a> {
    Text(&'a str),
    List(Vec<&'a str>),
    Range { lo: u64, hi: u64, width: usize },
}

impl Part<'_> {
    fn count(&self) -> u64 {
        match self {
            Part::Text(_) => 1,
            Part::List(l) => l.len() as u64,
            Part::Range { lo, hi, .. } => hi - lo + 1,
        }
    }

    /// The bytes of all its alternatives together.
    fn bytes(&self) -> u64 {
        match self {
            Part::Text(t) => t.len() as u64,
            Part::List(l) => l.iter().map(|a| a.len() as u64).sum(),
            Part::Range { lo, hi, width } => (*lo..=*hi)
                .map(|n| (n.checked_ilog10().unwrap_or(0) as u64 + 1).max(*width as u64))
                .sum(),
        }
    }

    fn push(&self, k: u64, out: &mut String) {
        use core::fmt::Write;
        match self {
            Part::Text(t) => out.push_str(t),
            Part::List(l) => out.push_str(l[k as usize]),
            Part::Range { lo, width, .. } => {
                let _ = write!(out, "{:0width$}", lo + k);
            }
        }
    }
}

/// The paths a brace pattern names: `{a,b}` lists and `{000..099}` ranges
/// (zero-padded to the first bound's width), several braces multiplied out.
/// At most [`MAX_SHARDS`] names of [`MAX_PATTERN_BYTES`] in all, counted
/// before any is built.
///
/// ```
/// use tensorprep::train::data::webdataset::expand_braces;
///
/// assert_eq!(expand_braces("s-{08..10}.tar")?, ["s-08.tar", "s-09.tar", "s-10.tar"]);
/// assert_eq!(expand_braces("{a,b}/{1..2}")?, ["a/1", "a/2", "b/1", "b/2"]);
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
pub fn expand_braces(pattern: &str) -> Result<Vec<String>, DataError> {
    let bad = |what: &str| DataError::corrupt("shard pattern", Path::new(pattern), 0, what);
    let mut parts = Vec::new();
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .map(|c| open + c)
            .ok_or_else(|| bad("a `{` without its `}`"))?;
        parts.push(Part::Text(&rest[..open]));
        let body = &rest[open + 1..close];
        parts.push(if let Some((a, b)) = body.split_once("..") {
            let number = |x: &str| {
                x.parse::<u64>()
                    .map_err(|_| bad("a range bound is not a number"))
            };
            let (lo, hi) = (number(a)?, number(b)?);
            if hi < lo || hi - lo >= MAX_SHARDS as u64 {
                return Err(bad("a range runs backwards or names too many shards"));
            }
            Part::Range {
                lo,
                hi,
                width: a.len(),
            }
        } else {
            Part::List(body.split(',').collect())
        });
        rest = &rest[close + 1..];
    }
    parts.push(Part::Text(rest));
    // Count the names and their bytes first: each part's alternatives
    // appear count / part.count() times each.
    let count = parts
        .iter()
        .try_fold(1u64, |n, p| n.checked_mul(p.count()))
        .filter(|&n| n <= MAX_SHARDS as u64)
        .ok_or_else(|| bad("the pattern names too many shards"))?;
    let bytes = parts
        .iter()
        .try_fold(0u64, |sum, p| {
            (count / p.count().max(1))
                .checked_mul(p.bytes())
                .and_then(|b| sum.checked_add(b))
        })
        .filter(|&b| b <= MAX_PATTERN_BYTES as u64)
        .ok_or_else(|| bad("the pattern's names take more than 64 MiB"))?;
    let mut out = Vec::new();
    out.try_reserve_exact(count as usize)
        .map_err(|_| bad("no memory for the shard names"))?;
    let per_name = (bytes / count.max(1)) as usize + 1;
    let mut ks = alloc::vec![0u64; parts.len()];
    for n in 0..count {
        let mut name = String::with_capacity(per_name);
        // The last part varies fastest.
        let mut k = n;
        for (slot, p) in ks.iter_mut().zip(&parts).rev() {
            *slot = k % p.count();
            k /= p.count();
        }
        for (p, k) in parts.iter().zip(&ks) {
            p.push(*k, &mut name);
        }
        out.push(name);
    }
    Ok(out)
}

impl WebDataset {
    /// Opens the shards `pattern` names (braces expanded) and lists their
    /// samples. A sample without an image is refused, naming it; so is a
    /// sample without a label when others have one.
    pub fn open(pattern: &str, keys: WebKeys<'_>) -> Result<WebDataset, DataError> {
        WebDataset::open_inner(pattern, keys, None)
    }

    /// Opens the shards as [`WebDataset::open`] does, each sample with a
    /// detection target ([`Sample::target`]) read from its member of
    /// extension `target` (`json`: [`json_target`]'s
    /// schema), on the image's stored size (its header read with the
    /// sample). A sample without that member is refused at open, naming
    /// it; one larger than [`MAX_TARGET_BYTES`] too.
    ///
    /// ```no_run
    /// use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
    /// use tensorprep::train::data::{Dataset, Sample};
    ///
    /// let d = WebDataset::open_with_targets("shards-{000..009}.tar", WebKeys::CONVENTIONAL, "json")?;
    /// let mut sample = Sample::default();
    /// d.read(0, &mut sample)?;
    /// println!("{} objects", sample.target.as_ref().unwrap().labels.len());
    /// # Ok::<(), tensorprep::train::data::DataError>(())
    /// ```
    pub fn open_with_targets(
        pattern: &str,
        keys: WebKeys<'_>,
        target: &str,
    ) -> Result<WebDataset, DataError> {
        let t = target.to_ascii_lowercase();
        if t.is_empty()
            || keys.image.iter().any(|i| i.eq_ignore_ascii_case(&t))
            || t == keys.label.to_ascii_lowercase()
        {
            return Err(DataError::Invalid {
                what: alloc::format!(
                    "the target extension {target:?} is empty or names the image or label"
                ),
            });
        }
        WebDataset::open_inner(pattern, keys, Some(t))
    }

    fn open_inner(
        pattern: &str,
        keys: WebKeys<'_>,
        target: Option<String>,
    ) -> Result<WebDataset, DataError> {
        let mut d = WebDataset {
            shards: FilePool::for_format(FORMAT, MAX_OPEN_SHARDS),
            samples: Vec::new(),
            keys: Vec::new(),
            target,
        };
        for (i, path) in expand_braces(pattern)?.into_iter().enumerate() {
            let path = PathBuf::from(path);
            let (file, len) = open_file(&path)?;
            let shard = u32::try_from(i).map_err(|_| DataError::Invalid {
                what: "more than 2^32 shards".into(),
            })?;
            d.index(shard, &path, &file, len, keys)?;
            d.shards.add_opened(&path, &file, len)?;
        }
        let labelled = d.samples.iter().filter(|s| s.label.is_some()).count();
        if labelled > 0 && labelled < d.samples.len() {
            let at = d
                .samples
                .iter()
                .position(|s| s.label.is_none())
                .unwrap_or(0);
            return Err(DataError::corrupt(
                FORMAT,
                d.shards.path(d.samples[at].image.shard),
                d.samples[at].image.offset,
                alloc::format!(
                    "sample `{}` has no `.{}` label, while {labelled} others have one",
                    d.keys[at],
                    keys.label
                ),
            ));
        }
        Ok(d)
    }

    fn index(
        &mut self,
        shard: u32,
        path: &Path,
        file: &DataFile,
        len: u64,
        keys: WebKeys<'_>,
    ) -> Result<(), DataError> {
        let bad = |offset: u64, what: &str| DataError::corrupt(FORMAT, path, offset, what);
        let mut archive = tar::Archive::new(super::Reader::new(file, len));
        // Raw: extended headers come as entries, read under a cap; with
        // seek: members' data is skipped, not read.
        let entries = archive
            .entries_with_seek()
            .map_err(|e| DataError::io(path, e))?
            .raw(true);
        let mut current: Option<Gathering> = None;
        let target = self.target.as_deref();
        let finish = |current: Option<Gathering>,
                      samples: &mut Vec<SampleAt>,
                      names: &mut Vec<String>|
         -> Result<(), DataError> {
            if let Some(g) = current {
                let (_, image) = g.image.ok_or_else(|| {
                    bad(0, &alloc::format!("sample `{}` has no image member", g.key))
                })?;
                if let Some(t) = target
                    && g.target.is_none()
                {
                    return Err(bad(
                        image.offset,
                        &alloc::format!("sample `{}` has no `.{t}` target member", g.key),
                    ));
                }
                samples
                    .try_reserve(1)
                    .map_err(|_| bad(0, "no memory for the samples"))?;
                samples.push(SampleAt {
                    image,
                    label: g.label,
                    target: g.target,
                });
                names.push(g.key);
            }
            Ok(())
        };
        tar_members::walk(entries, path, Some(len), |m, _| {
            let Some((key, role)) = tar_members::role(&m, keys, path)? else {
                return Ok(true);
            };
            let member = Member {
                shard,
                offset: m.offset,
                len: m.size,
            };
            if current.as_ref().is_none_or(|c| c.key != key) {
                finish(current.take(), &mut self.samples, &mut self.keys)?;
                current = Some(Gathering {
                    key: key.to_string(),
                    image: None,
                    label: None,
                    target: None,
                });
            }
            let c = current.as_mut().expect("set above");
            match role {
                Role::Image(rank) if c.image.is_none_or(|(r, _)| rank < r) => {
                    c.image = Some((rank, member));
                }
                Role::Other
                    if target.is_some_and(|t| {
                        tar_members::key_and_extension(&m.name).is_some_and(|(_, e)| e == t)
                    }) =>
                {
                    if m.size > MAX_TARGET_BYTES {
                        return Err(bad(
                            m.offset,
                            &alloc::format!(
                                "member `{}` is {} bytes (more than {MAX_TARGET_BYTES})",
                                m.name,
                                m.size
                            ),
                        ));
                    }
                    c.target = Some(member);
                }
                Role::Image(_) | Role::Other => {}
                Role::Label => c.label = Some(member),
            }
            Ok(true)
        })?;
        finish(current, &mut self.samples, &mut self.keys)
    }

    /// Each sample's key (`dir/name`), in order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Sample `index`'s target from its member `t`, on the stored size of
    /// its `image` (encoded).
    fn target_of(&self, index: usize, t: Member, image: &[u8]) -> Result<Target, DataError> {
        let path = self.shards.path(t.shard);
        let bad = |at: u64, what: &dyn core::fmt::Display| {
            DataError::corrupt(
                FORMAT,
                path,
                at,
                alloc::format!("sample `{}`: {what}", self.keys[index]),
            )
        };
        let info = crate::decode::ImageDecoder::default()
            .read_info(image)
            .map_err(|e| bad(self.samples[index].image.offset, &e))?;
        let canvas = Canvas::new(info.stored_height, info.stored_width)
            .map_err(|e| bad(self.samples[index].image.offset, &e))?;
        let mut json = Vec::new();
        self.read_member(t, &mut json)?;
        json_target::parse(&json, canvas).map_err(|e| bad(t.offset, &e))
    }

    fn read_member(&self, m: Member, out: &mut Vec<u8>) -> Result<(), DataError> {
        let file = self.shards.get(m.shard)?;
        out.clear();
        append_at(
            &file,
            self.shards.path(m.shard),
            FORMAT,
            m.offset,
            m.len,
            out,
        )
    }
}

impl Dataset for WebDataset {
    /// Where each shard's samples start (shards without samples left out).
    fn blocks(&self) -> Vec<usize> {
        let mut starts = Vec::new();
        let mut last = None;
        for (i, s) in self.samples.iter().enumerate() {
            if last != Some(s.image.shard) {
                starts.push(i);
                last = Some(s.image.shard);
            }
        }
        starts
    }

    /// Each sample's members (shard, offset, length).
    fn fingerprint(&self) -> u64 {
        let member = |m: &Member| [u64::from(m.shard), m.offset, m.len];
        let values = self.samples.iter().flat_map(|s| {
            let label = s.label.as_ref().map_or([u64::MAX; 3], member);
            // Without targets, the fingerprint it always had.
            let target = s.target.as_ref().map(member).into_iter().flatten();
            member(&s.image).into_iter().chain(label).chain(target)
        });
        super::fingerprint_of("webdataset", values)
    }

    fn len(&self) -> usize {
        self.samples.len()
    }

    /// Its shard and key.
    fn describe(&self, index: usize) -> String {
        match self.samples.get(index) {
            Some(s) => {
                let shard = self.shards.path(s.image.shard);
                alloc::format!("{}: sample `{}`", shard.display(), self.keys[index])
            }
            None => alloc::format!("sample {index}"),
        }
    }

    /// The image member (its label and target are next to it in the
    /// shard).
    fn fetch_ahead(&self, index: usize) {
        if let Some(s) = self.samples.get(index) {
            self.shards
                .fetch_ahead(s.image.shard, s.image.offset, s.image.len);
        }
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        sample.content = super::Content::Encoded;
        let s = *self.samples.get(index).ok_or(DataError::OutOfRange {
            index,
            len: self.samples.len(),
        })?;
        self.read_member(s.image, &mut sample.bytes)?;
        sample.labels.clear();
        if let Some(label) = s.label {
            let path = self.shards.path(label.shard);
            let bad = |what: &str| {
                DataError::corrupt(
                    FORMAT,
                    path,
                    label.offset,
                    alloc::format!("sample `{}`: {what}", self.keys[index]),
                )
            };
            let mut text = [0u8; tar_members::MAX_LABEL_BYTES];
            let n = usize::try_from(label.len).ok().filter(|&n| n <= text.len());
            let n = n.ok_or_else(|| bad(tar_members::LABEL_TOO_LONG))?;
            let file = self.shards.get(label.shard)?;
            read_at(&file, &mut text[..n], label.offset).map_err(|e| DataError::io(path, e))?;
            sample
                .labels
                .push(tar_members::label_of(&text[..n]).map_err(bad)?);
        }
        sample.target = None;
        if let Some(t) = s.target {
            sample.target = Some(alloc::boxed::Box::new(self.target_of(
                index,
                t,
                &sample.bytes,
            )?));
        }
        sample.id = index as u64;
        Ok(())
    }
}
