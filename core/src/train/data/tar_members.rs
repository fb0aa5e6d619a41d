//! A tar file's members as WebDataset groups them: the one walk over tar
//! headers (the `tar` crate: ustar, checksums, sizes; GNU long names and
//! pax paths here, each capped at [`MAX_EXTENDED_BYTES`] before it is read)
//! that both the indexed shards ([`WebDataset`](super::webdataset::WebDataset),
//! seeking over members' data) and the front-to-back stream
//! ([`TarStream`](super::tar_stream::TarStream), reading it) use, with a
//! member's key, extension and role in its sample.

#![forbid(unsafe_code)]

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::io::Read;
use std::path::Path;

use super::DataError;
use super::webdataset::{MAX_EXTENDED_BYTES, MAX_MEMBER_BYTES, WebKeys};

pub(crate) const FORMAT: &str = "WebDataset tar";

/// A regular file member: its name (a long name or pax path applied),
/// where its data starts, its size.
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

/// The longest label member read (its text: an integer or a number).
pub(crate) const MAX_LABEL_BYTES: usize = 64;
pub(crate) const LABEL_TOO_LONG: &str = "a label longer than 64 bytes";

/// A label member's value: text, a number [`label::text`](super::label::text) accepts.
pub(crate) fn label_of(text: &[u8]) -> Result<f32, &'static str> {
    core::str::from_utf8(text)
        .map_err(|_| "a label that is not text")
        .and_then(super::label::text)
}

/// What a member is to its sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// An image, of this rank among the preferred extensions.
    Image(usize),
    /// The label.
    Label,
    /// Another member of the sample (`json`, `txt`, ...): not read.
    Other,
}

/// A member's key and lower-case extension (`None` without a dot, or for
/// a hidden file: a name starting with a dot).
pub(crate) fn key_and_extension(path: &str) -> Option<(&str, String)> {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let dot = path[name_start..].find('.')? + name_start;
    if dot == name_start {
        return None;
    }
    Some((&path[..dot], path[dot + 1..].to_ascii_lowercase()))
}

/// `member`'s key and role (`None`: not part of a sample: a name with no
/// extension or a hidden file); an image or label past
/// [`MAX_MEMBER_BYTES`] is an error naming it, before it is read.
pub(crate) fn role<'m>(
    member: &'m Member,
    keys: WebKeys<'_>,
    path: &Path,
) -> Result<Option<(&'m str, Role)>, DataError> {
    let Some((key, ext)) = key_and_extension(&member.name) else {
        return Ok(None);
    };
    let role = match keys.image.iter().position(|x| x.eq_ignore_ascii_case(&ext)) {
        Some(rank) => Role::Image(rank),
        None if ext == keys.label.to_ascii_lowercase() => Role::Label,
        None => return Ok(Some((key, Role::Other))),
    };
    if member.size > MAX_MEMBER_BYTES {
        return Err(DataError::corrupt(
            FORMAT,
            path,
            member.offset,
            alloc::format!(
                "member `{}` is {} bytes (more than {MAX_MEMBER_BYTES})",
                member.name,
                member.size
            ),
        ));
    }
    Ok(Some((key, role)))
}

/// An extended header's bytes (a GNU long name, a pax record list), its
/// claimed size checked against [`MAX_EXTENDED_BYTES`] before reading.
fn extended<R: Read>(
    entry: &mut tar::Entry<'_, R>,
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

/// Calls `each` with every regular file member of `entries` (raw entries:
/// extended headers are read here) and the entry, to read its data from;
/// `each` returns `false` to stop. `len`: the file's length when known (a
/// member past it is refused before it is read).
pub(crate) fn walk<R: Read>(
    entries: tar::Entries<'_, R>,
    path: &Path,
    len: Option<u64>,
    mut each: impl FnMut(Member, &mut tar::Entry<'_, R>) -> Result<bool, DataError>,
) -> Result<(), DataError> {
    let bad = |offset: u64, what: &str| DataError::corrupt(FORMAT, path, offset, what);
    // The next member's name from a GNU long name or a pax header, and
    // whether an extended header waits for its member.
    let mut long_name: Option<Vec<u8>> = None;
    let mut pending = false;
    let mut end = 0;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(end, &e.to_string()))?;
        let offset = entry.raw_file_position();
        let size = entry.size();
        end = offset.saturating_add(size);
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
        if len.is_some_and(|len| offset.checked_add(size).is_none_or(|end| end > len)) {
            return Err(here("a member runs past the end of the file"));
        }
        let member = Member {
            name: String::from_utf8_lossy(&name).into_owned(),
            offset,
            size,
        };
        if !each(member, &mut entry)? {
            return Ok(());
        }
    }
    if pending {
        return Err(bad(
            len.unwrap_or(end),
            "an extended header describes no member",
        ));
    }
    Ok(())
}
