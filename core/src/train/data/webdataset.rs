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
//! The tar headers are read once (the `tar` crate: ustar, checksums, sizes;
//! GNU long names and pax paths here, each capped at [`MAX_EXTENDED_BYTES`]
//! before it is read), seeking over the members' data; samples are then
//! read by position, like every dataset here. Members whose file name
//! starts with a dot (macOS's `._name.jpg`) are skipped, as webdataset
//! skips them. A shard is opened when a sample in it is read, and at most
//! [`MAX_OPEN_SHARDS`] stay open (1,282 ImageNet shards exceed the usual
//! limit of 1,024 descriptors): a [`FilePool`], as for the other formats.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::shards::{DEFAULT_OPEN_FILES, FilePool};
use super::{DataError, Dataset, Sample, append_at, label, open_file, read_at};

const FORMAT: &str = "WebDataset tar";

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
}

/// The sample being gathered while the members of its key go by: the
/// image (with its extension's rank among the preferred ones) and label.
struct Gathering {
    key: String,
    image: Option<(usize, Member)>,
    label: Option<Member>,
}

/// Tar shards as one dataset of samples, in shard order then member order.
#[derive(Debug)]
pub struct WebDataset {
    /// The shards, with the length each had when it was indexed (a shard
    /// changed since is refused when it is opened again).
    shards: FilePool,
    samples: Vec<SampleAt>,
    keys: Vec<String>,
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

/// A member's key and lower-case extension (`None` without a dot, or for
/// a hidden file: a name starting with a dot).
fn key_and_extension(path: &str) -> Option<(&str, String)> {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let dot = path[name_start..].find('.')? + name_start;
    if dot == name_start {
        return None;
    }
    Some((&path[..dot], path[dot + 1..].to_ascii_lowercase()))
}

/// An extended header's bytes (a GNU long name, a pax record list), its
/// claimed size checked against [`MAX_EXTENDED_BYTES`] before reading.
fn extended(
    entry: &mut tar::Entry<'_, &File>,
    bad: impl Fn(&str) -> DataError,
) -> Result<Vec<u8>, DataError> {
    let size = entry.size();
    if size > MAX_EXTENDED_BYTES {
        return Err(bad(&alloc::format!(
            "an extended tar header of {size} bytes (more than {MAX_EXTENDED_BYTES})"
        )));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    entry
        .take(size)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(&e.to_string()))?;
    if (bytes.len() as u64) < size {
        return Err(bad("an extended tar header runs past the end of the file"));
    }
    Ok(bytes)
}

impl WebDataset {
    /// Opens the shards `pattern` names (braces expanded) and lists their
    /// samples. A sample without an image is refused, naming it; so is a
    /// sample without a label when others have one.
    pub fn open(pattern: &str, keys: WebKeys<'_>) -> Result<WebDataset, DataError> {
        let mut d = WebDataset {
            shards: FilePool::for_format(FORMAT, MAX_OPEN_SHARDS),
            samples: Vec::new(),
            keys: Vec::new(),
        };
        for (i, path) in expand_braces(pattern)?.into_iter().enumerate() {
            let path = PathBuf::from(path);
            let (file, len) = open_file(&path)?;
            let shard = u32::try_from(i).map_err(|_| DataError::Invalid {
                what: "more than 2^32 shards".into(),
            })?;
            d.index(shard, &path, &file, len, keys)?;
            d.shards.add_with_len(&path, len)?;
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
        file: &File,
        len: u64,
        keys: WebKeys<'_>,
    ) -> Result<(), DataError> {
        let bad = |offset: u64, what: &str| DataError::corrupt(FORMAT, path, offset, what);
        let mut archive = tar::Archive::new(file);
        // Raw: extended headers come as entries, read here under a cap;
        // with seek: members' data is skipped, not read.
        let entries = archive
            .entries_with_seek()
            .map_err(|e| DataError::io(path, e))?
            .raw(true);
        let mut current: Option<Gathering> = None;
        let finish = |current: Option<Gathering>,
                      samples: &mut Vec<SampleAt>,
                      names: &mut Vec<String>|
         -> Result<(), DataError> {
            if let Some(g) = current {
                let (_, image) = g.image.ok_or_else(|| {
                    bad(0, &alloc::format!("sample `{}` has no image member", g.key))
                })?;
                samples
                    .try_reserve(1)
                    .map_err(|_| bad(0, "no memory for the samples"))?;
                samples.push(SampleAt {
                    image,
                    label: g.label,
                });
                names.push(g.key);
            }
            Ok(())
        };
        // The next member's name from a GNU long name or a pax header, and
        // whether an extended header waits for its member.
        let mut long_name: Option<Vec<u8>> = None;
        let mut pending = false;
        for entry in entries {
            let mut entry = entry.map_err(|e| bad(0, &e.to_string()))?;
            let offset = entry.raw_file_position();
            let size = entry.size();
            let kind = entry.header().entry_type();
            let here = |what: &str| bad(offset, what);
            let extension = kind.is_gnu_longname()
                || kind.is_gnu_longlink()
                || kind.is_pax_local_extensions()
                || kind.is_pax_global_extensions();
            // A global pax header describes the archive, not the next member.
            pending = extension && !kind.is_pax_global_extensions();
            if kind.is_gnu_longname() {
                let mut name = extended(&mut entry, here)?;
                while name.last() == Some(&0) {
                    name.pop();
                }
                long_name = Some(name);
                continue;
            }
            if kind.is_pax_local_extensions() {
                let records = extended(&mut entry, here)?;
                for ext in tar::PaxExtensions::new(&records) {
                    let ext = ext.map_err(|_| here("a malformed pax header"))?;
                    match ext.key_bytes() {
                        b"path" => long_name = Some(ext.value_bytes().to_vec()),
                        b"size" => {
                            // Raw entries keep the ustar size: a pax size
                            // (members of 8 GiB and more) is refused.
                            return Err(here("a pax size (a member of 8 GiB or more)"));
                        }
                        _ => {}
                    }
                }
                continue;
            }
            if kind.is_gnu_longlink() || kind.is_pax_global_extensions() {
                extended(&mut entry, here)?;
                continue;
            }
            if kind.is_gnu_sparse() {
                return Err(here("a sparse member (not supported)"));
            }
            let name = match long_name.take() {
                Some(n) => n,
                None => entry.header().path_bytes().into_owned(),
            };
            if !kind.is_file() {
                continue;
            }
            if offset.checked_add(size).is_none_or(|end| end > len) {
                return Err(here("a member runs past the end of the file"));
            }
            let name = String::from_utf8_lossy(&name);
            let Some((key, ext)) = key_and_extension(&name) else {
                continue;
            };
            let image_rank = keys.image.iter().position(|x| x.eq_ignore_ascii_case(&ext));
            let is_label = ext == keys.label.to_ascii_lowercase();
            if (image_rank.is_some() || is_label) && size > MAX_MEMBER_BYTES {
                return Err(here(&alloc::format!(
                    "member `{name}` is {size} bytes (more than {MAX_MEMBER_BYTES})"
                )));
            }
            let member = Member {
                shard,
                offset,
                len: size,
            };
            if current.as_ref().is_none_or(|c| c.key != key) {
                finish(current.take(), &mut self.samples, &mut self.keys)?;
                current = Some(Gathering {
                    key: key.to_string(),
                    image: None,
                    label: None,
                });
            }
            let c = current.as_mut().expect("set above");
            if let Some(rank) = image_rank {
                if c.image.is_none_or(|(r, _)| rank < r) {
                    c.image = Some((rank, member));
                }
            } else if is_label {
                c.label = Some(member);
            }
        }
        if pending {
            return Err(bad(len, "an extended header describes no member"));
        }
        finish(current, &mut self.samples, &mut self.keys)
    }

    /// Each sample's key (`dir/name`), in order.
    pub fn keys(&self) -> &[String] {
        &self.keys
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
    /// Each sample's members (shard, offset, length).
    fn fingerprint(&self) -> u64 {
        let member = |m: &Member| [u64::from(m.shard), m.offset, m.len];
        let values = self.samples.iter().flat_map(|s| {
            let label = s.label.as_ref().map_or([u64::MAX; 3], member);
            member(&s.image).into_iter().chain(label)
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

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
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
            let mut text = [0u8; 64];
            let n = usize::try_from(label.len).ok().filter(|&n| n <= text.len());
            let n = n.ok_or_else(|| bad("a label longer than 64 bytes"))?;
            let file = self.shards.get(label.shard)?;
            read_at(&file, &mut text[..n], label.offset).map_err(|e| DataError::io(path, e))?;
            let value = core::str::from_utf8(&text[..n])
                .map_err(|_| "a label that is not text")
                .and_then(label::text)
                .map_err(bad)?;
            sample.labels.push(value);
        }
        sample.id = index as u64;
        Ok(())
    }
}
