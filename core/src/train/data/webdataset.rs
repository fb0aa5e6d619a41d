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
//! The tar headers are read once (the `tar` crate: ustar, GNU long names,
//! pax); samples are then read by position, like every dataset here.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::{DataError, Dataset, Sample, append_at, open_file, read_at};

const FORMAT: &str = "WebDataset tar";

/// The most shards a pattern may name.
pub const MAX_SHARDS: usize = 1 << 20;

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
    shards: Vec<(PathBuf, File)>,
    samples: Vec<SampleAt>,
    keys: Vec<String>,
}

/// The paths a brace pattern names: `{a,b}` lists and `{000..099}` ranges
/// (zero-padded to the first bound's width), several braces multiplied out.
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
    let Some(open) = pattern.find('{') else {
        return Ok(alloc::vec![pattern.to_string()]);
    };
    let close = pattern[open..]
        .find('}')
        .map(|c| open + c)
        .ok_or_else(|| bad("a `{` without its `}`"))?;
    let (head, body, tail) = (
        &pattern[..open],
        &pattern[open + 1..close],
        &pattern[close + 1..],
    );
    let mut alternatives = Vec::new();
    if let Some((a, b)) = body.split_once("..") {
        let (lo, hi) = (
            a.parse::<u64>()
                .map_err(|_| bad("a range bound is not a number"))?,
            b.parse::<u64>()
                .map_err(|_| bad("a range bound is not a number"))?,
        );
        if hi < lo || hi - lo >= MAX_SHARDS as u64 {
            return Err(bad("a range runs backwards or names too many shards"));
        }
        let width = a.len();
        alternatives.extend((lo..=hi).map(|n| alloc::format!("{n:0width$}")));
    } else {
        alternatives.extend(body.split(',').map(str::to_string));
    }
    let rests = expand_braces(tail)?;
    if alternatives.len().saturating_mul(rests.len()) > MAX_SHARDS {
        return Err(bad("the pattern names too many shards"));
    }
    let mut out = Vec::with_capacity(alternatives.len() * rests.len());
    for alt in &alternatives {
        for rest in &rests {
            out.push(alloc::format!("{head}{alt}{rest}"));
        }
    }
    Ok(out)
}

/// A member's key and lower-case extension (`None` without a dot).
fn key_and_extension(path: &str) -> Option<(&str, String)> {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let dot = path[name_start..].find('.')? + name_start;
    Some((&path[..dot], path[dot + 1..].to_ascii_lowercase()))
}

impl WebDataset {
    /// Opens the shards `pattern` names (braces expanded) and lists their
    /// samples. A sample without an image is refused, naming it.
    pub fn open(pattern: &str, keys: WebKeys<'_>) -> Result<WebDataset, DataError> {
        let mut d = WebDataset {
            shards: Vec::new(),
            samples: Vec::new(),
            keys: Vec::new(),
        };
        for (i, path) in expand_braces(pattern)?.into_iter().enumerate() {
            let path = PathBuf::from(path);
            let (file, len) = open_file(&path)?;
            d.index(i as u32, &path, &file, len, keys)?;
            d.shards.push((path, file));
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
        let entries = archive.entries().map_err(|e| DataError::io(path, e))?;
        let mut current: Option<Gathering> = None;
        let finish = |current: Option<Gathering>,
                      samples: &mut Vec<SampleAt>,
                      names: &mut Vec<String>|
         -> Result<(), DataError> {
            if let Some(g) = current {
                let (_, image) = g.image.ok_or_else(|| {
                    bad(0, &alloc::format!("sample `{}` has no image member", g.key))
                })?;
                samples.push(SampleAt {
                    image,
                    label: g.label,
                });
                names.push(g.key);
            }
            Ok(())
        };
        for entry in entries {
            let entry = entry.map_err(|e| bad(0, &e.to_string()))?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let offset = entry.raw_file_position();
            let size = entry.size();
            if offset.checked_add(size).is_none_or(|end| end > len) {
                return Err(bad(offset, "a member runs past the end of the file"));
            }
            let name = entry.path().map_err(|e| bad(offset, &e.to_string()))?;
            let name = name.to_string_lossy().into_owned();
            let Some((key, ext)) = key_and_extension(&name) else {
                continue;
            };
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
            if let Some(rank) = keys.image.iter().position(|x| x.eq_ignore_ascii_case(&ext)) {
                if c.image.is_none_or(|(r, _)| rank < r) {
                    c.image = Some((rank, member));
                }
            } else if ext == keys.label.to_ascii_lowercase() {
                c.label = Some(member);
            }
        }
        finish(current, &mut self.samples, &mut self.keys)
    }

    /// Each sample's key (`dir/name`), in order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    fn read_member(&self, m: Member, out: &mut Vec<u8>) -> Result<(), DataError> {
        let (path, file) = &self.shards[m.shard as usize];
        out.clear();
        append_at(file, path, FORMAT, m.offset, m.len, out)
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

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        let s = *self.samples.get(index).ok_or(DataError::OutOfRange {
            index,
            len: self.samples.len(),
        })?;
        self.read_member(s.image, &mut sample.bytes)?;
        sample.labels.clear();
        if let Some(label) = s.label {
            let (path, file) = &self.shards[label.shard as usize];
            let bad = |what: &str| DataError::corrupt(FORMAT, path, label.offset, what);
            let mut text = [0u8; 64];
            let n = usize::try_from(label.len).ok().filter(|&n| n <= text.len());
            let n = n.ok_or_else(|| bad("a label longer than 64 bytes"))?;
            read_at(file, &mut text[..n], label.offset).map_err(|e| DataError::io(path, e))?;
            let value = core::str::from_utf8(&text[..n])
                .ok()
                .and_then(|t| t.trim().parse::<f32>().ok())
                .ok_or_else(|| bad("a label that is not a number"))?;
            sample.labels.push(value);
        }
        sample.id = index as u64;
        Ok(())
    }
}
