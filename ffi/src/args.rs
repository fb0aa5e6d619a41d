//! Checking what C passes in: NULLs, lengths, alignment, overlaps, strings,
//! enum values. Every export turns its raw arguments into Rust references
//! here, once, before doing anything.

use std::ffi::{CStr, c_char};
use std::mem::MaybeUninit;
use std::path::PathBuf;

use crate::result::{Failure, Result, tp_result};

/// A byte range `[start, end)` in the address space, for overlap checks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    start: usize,
    end: usize,
    name: &'static str,
}

impl Span {
    pub(crate) fn of(bytes: &[u8], name: &'static str) -> Span {
        let start = bytes.as_ptr() as usize;
        Span {
            start,
            end: start + bytes.len(),
            name,
        }
    }

    /// The span of `len` bytes at `ptr`, before any slice is made of them.
    pub(crate) fn raw<T>(ptr: *const T, len: usize, name: &'static str) -> Span {
        let start = ptr as usize;
        Span {
            start,
            end: start.saturating_add(len.saturating_mul(size_of::<T>())),
            name,
        }
    }

    fn overlaps(&self, other: &Span) -> bool {
        // Empty spans touch no memory.
        self.start < self.end
            && other.start < other.end
            && self.start < other.end
            && other.start < self.end
    }
}

/// The spans of up to three planes, without allocating.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Spans {
    spans: [Span; 3],
    len: usize,
}

impl Spans {
    pub(crate) fn one(span: Span) -> Spans {
        let mut s = Spans::default();
        s.push(span);
        s
    }

    /// Adds a span (a fourth is dropped: images have at most three planes).
    pub(crate) fn push(&mut self, span: Span) {
        if let Some(slot) = self.spans.get_mut(self.len) {
            *slot = span;
            self.len += 1;
        }
    }

    pub(crate) fn as_slice(&self) -> &[Span] {
        &self.spans[..self.len]
    }
}

/// Fails if a span in `written` overlaps another span in `written` or one in
/// `read`: a buffer the call writes must not alias anything else it touches.
pub(crate) fn no_overlap(written: &[Span], read: &[Span]) -> Result<()> {
    for (i, w) in written.iter().enumerate() {
        for other in written[i + 1..].iter().chain(read) {
            if w.overlaps(other) {
                return Err(Failure::invalid(format!(
                    "`{}` overlaps `{}`: the buffer written must not share memory with the others",
                    w.name, other.name
                )));
            }
        }
    }
    Ok(())
}

fn check_len(len: usize, elem: usize, name: &str) -> Result<()> {
    if len
        .checked_mul(elem)
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(Failure::invalid(format!(
            "`{name}`: a length of {len} is larger than any buffer can be"
        )));
    }
    Ok(())
}

/// `len` elements at `ptr`; NULL is allowed only when `len` is 0.
///
/// # Safety
///
/// Unless `len` is 0, `ptr` must be valid for reads of `len` elements for `'a`
/// and nothing may write them meanwhile.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::null(name));
    }
    check_len(len, size_of::<T>(), name)?;
    if !ptr.is_aligned() {
        return Err(misaligned(name, align_of::<T>()));
    }
    // SAFETY: non-NULL, aligned, `len` elements fit in isize; the caller
    // guarantees the memory is valid and not written meanwhile.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `len` bytes at `ptr` (see [`slice`]).
///
/// # Safety
///
/// As for [`slice`].
pub(crate) unsafe fn bytes<'a>(ptr: *const u8, len: usize, name: &str) -> Result<&'a [u8]> {
    // SAFETY: forwarded.
    unsafe { slice(ptr, len, name) }
}

/// `len` writable elements at `ptr`; NULL is allowed only when `len` is 0.
///
/// # Safety
///
/// Unless `len` is 0, `ptr` must be valid for reads and writes of `len`
/// elements for `'a`, and nothing else may access them meanwhile.
pub(crate) unsafe fn slice_mut<'a, T>(ptr: *mut T, len: usize, name: &str) -> Result<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Failure::null(name));
    }
    check_len(len, size_of::<T>(), name)?;
    if !ptr.is_aligned() {
        return Err(misaligned(name, align_of::<T>()));
    }
    // SAFETY: as in `slice`, and the caller guarantees exclusive access.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// Like [`slice_mut`], but NULL means "not wanted" whatever `len` is.
///
/// # Safety
///
/// As for [`slice_mut`].
pub(crate) unsafe fn optional_slice_mut<'a, T>(
    ptr: *mut T,
    len: usize,
    name: &str,
) -> Result<Option<&'a mut [T]>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded.
    unsafe { slice_mut(ptr, len, name) }.map(Some)
}

/// `len` writable bytes at `ptr` (see [`slice_mut`]).
///
/// # Safety
///
/// As for [`slice_mut`].
pub(crate) unsafe fn bytes_mut<'a>(ptr: *mut u8, len: usize, name: &str) -> Result<&'a mut [u8]> {
    // SAFETY: forwarded.
    unsafe { slice_mut(ptr, len, name) }
}

fn misaligned(name: &str, align: usize) -> Failure {
    Failure::invalid(format!(
        "`{name}` is not aligned to {align} bytes, as its element type needs"
    ))
}

/// A required input struct or handle.
///
/// # Safety
///
/// `ptr` must be NULL or point to a valid `T` that nothing writes for `'a`.
pub(crate) unsafe fn required<'a, T>(ptr: *const T, name: &str) -> Result<&'a T> {
    if !ptr.is_aligned() {
        return Err(misaligned(name, align_of::<T>()));
    }
    // SAFETY: aligned; the caller guarantees NULL or valid.
    unsafe { ptr.as_ref() }.ok_or_else(|| Failure::null(name))
}

/// An optional input struct (NULL for the defaults).
///
/// # Safety
///
/// As for [`required`].
pub(crate) unsafe fn optional<'a, T>(ptr: *const T, name: &str) -> Result<Option<&'a T>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded.
    unsafe { required(ptr, name) }.map(Some)
}

/// An optional versioned input struct: a `#[repr(C)]` `T` whose first field
/// is its `struct_size` (`sizeof` as the caller's header declared it). Fields
/// past that size are taken as zero (the defaults), so a caller built against
/// an older, shorter struct keeps working; a larger size is read up to ours.
///
/// # Safety
///
/// `ptr` must be NULL or valid for reads of `struct_size` bytes (its first
/// `usize`), and `T` must be valid when all its bytes are zero.
pub(crate) unsafe fn sized<T: Copy + Default>(ptr: *const T, name: &str) -> Result<Option<T>> {
    if ptr.is_null() {
        return Ok(None);
    }
    if !ptr.is_aligned() {
        return Err(misaligned(name, align_of::<T>()));
    }
    // SAFETY: aligned and non-NULL; every struct starts with its size.
    let size = unsafe { ptr.cast::<usize>().read() };
    if size < size_of::<usize>() {
        return Err(Failure::invalid(format!(
            "`{name}.struct_size` is {size}; set it to sizeof the struct"
        )));
    }
    let mut value = T::default();
    let n = size.min(size_of::<T>());
    // SAFETY: the caller guarantees `size` readable bytes at `ptr`; `value` is
    // a `T` of at least `n` bytes; both are plain data.
    unsafe {
        std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), (&raw mut value).cast::<u8>(), n);
    }
    Ok(Some(value))
}

/// A required output location, written only on success.
///
/// # Safety
///
/// `ptr` must be NULL or valid for a write of a `T` for `'a`.
pub(crate) unsafe fn out<'a, T>(ptr: *mut T, name: &str) -> Result<&'a mut MaybeUninit<T>> {
    if !ptr.is_aligned() {
        return Err(misaligned(name, align_of::<T>()));
    }
    // SAFETY: aligned, NULL checked by `as_mut`; the caller guarantees it is
    // valid for writes. `MaybeUninit` because it may hold garbage.
    unsafe { ptr.cast::<MaybeUninit<T>>().as_mut() }.ok_or_else(|| Failure::null(name))
}

/// An optional output location (NULL: not wanted), written only on success.
///
/// # Safety
///
/// As for [`out`].
pub(crate) unsafe fn optional_out<'a, T>(
    ptr: *mut T,
    name: &str,
) -> Result<Option<&'a mut MaybeUninit<T>>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded.
    unsafe { out(ptr, name) }.map(Some)
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
///
/// `ptr` must be NULL or point to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn string<'a>(ptr: *const c_char, name: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Failure::null(name));
    }
    // SAFETY: non-NULL; the caller guarantees NUL termination and validity.
    let c = unsafe { CStr::from_ptr(ptr) };
    c.to_str().map_err(|e| {
        Failure::new(
            tp_result::InvalidUtf8,
            format!("`{name}` is not UTF-8 (byte {})", e.valid_up_to()),
        )
    })
}

/// A NUL-terminated file path: any bytes on Unix, UTF-8 elsewhere.
///
/// # Safety
///
/// As for [`string`].
pub(crate) unsafe fn path(ptr: *const c_char, name: &str) -> Result<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        if ptr.is_null() {
            return Err(Failure::null(name));
        }
        // SAFETY: non-NULL; the caller guarantees NUL termination and validity.
        let c = unsafe { CStr::from_ptr(ptr) };
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(c.to_bytes())))
    }
    #[cfg(not(unix))]
    {
        // SAFETY: forwarded.
        unsafe { string(ptr, name) }.map(PathBuf::from)
    }
}

/// A `uint32_t` that must be one of a C enum's values: looked up in `table`.
pub(crate) fn lookup<T: Copy>(table: &[(u32, T)], value: u32, name: &str) -> Result<T> {
    table
        .iter()
        .find(|(v, _)| *v == value)
        .map(|&(_, t)| t)
        .ok_or_else(|| Failure::invalid(format!("`{name}` = {value} is not one of its values")))
}

/// The C value of `t` in `table`.
pub(crate) fn code<T: Copy + PartialEq>(table: &[(u32, T)], t: T) -> u32 {
    table.iter().find(|(_, x)| *x == t).map_or(0, |&(v, _)| v)
}

/// Flags: fails on bits outside `known`.
pub(crate) fn flags(value: u32, known: u32, name: &str) -> Result<u32> {
    if value & !known != 0 {
        return Err(Failure::invalid(format!(
            "`{name}` has unknown bits {:#x}",
            value & !known
        )));
    }
    Ok(value)
}

/// Takes ownership of a handle made by `Box::into_raw` and drops it; NULL is
/// a no-op.
///
/// # Safety
///
/// `ptr` must be NULL or a pointer this library returned as a `T` handle and
/// not yet freed; it must not be used after.
pub(crate) unsafe fn free<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: the caller guarantees it came from `Box::into_raw` and is
        // freed once.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// Hands a new handle to C: written to `out` (checked first, so that no
/// handle leaks when `out` is NULL).
pub(crate) fn give<T>(out: &mut MaybeUninit<*mut T>, value: T) {
    out.write(Box::into_raw(Box::new(value)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_is_only_fine_when_empty() {
        // SAFETY: NULL pointers are never read.
        unsafe {
            assert!(bytes(std::ptr::null(), 0, "x").unwrap().is_empty());
            let e = bytes(std::ptr::null(), 1, "x").unwrap_err();
            assert_eq!(e.code, tp_result::NullParameter);
            assert_eq!(e.message, "`x` is NULL");
        }
    }

    #[test]
    fn absurd_lengths_and_misalignment_are_refused() {
        let v = [0f32; 4];
        // SAFETY: refused before any read.
        unsafe {
            let e = slice(v.as_ptr(), usize::MAX / 2, "v").unwrap_err();
            assert_eq!(e.code, tp_result::InvalidParameter);
            let odd = v.as_ptr().cast::<u8>().add(1).cast::<f32>();
            let e = slice(odd, 1, "v").unwrap_err();
            assert!(e.message.contains("aligned"), "{}", e.message);
        }
    }

    #[test]
    fn overlaps_are_found() {
        let buf = [0u8; 16];
        let a = Span::of(&buf[..8], "a");
        let b = Span::of(&buf[8..], "b");
        let c = Span::of(&buf[4..12], "c");
        assert!(no_overlap(&[a], &[b]).is_ok());
        assert!(no_overlap(&[a, b], &[]).is_ok());
        assert!(
            no_overlap(&[a], &[c])
                .unwrap_err()
                .message
                .contains("`a` overlaps `c`")
        );
        assert!(no_overlap(&[a, c], &[]).is_err());
        // Empty spans overlap nothing.
        assert!(no_overlap(&[Span::of(&buf[4..4], "e")], &[a]).is_ok());
    }

    #[test]
    fn enum_values_are_looked_up() {
        let table = [(1, 'a'), (2, 'b')];
        assert_eq!(lookup(&table, 2, "t").unwrap(), 'b');
        let e = lookup(&table, 0, "t").unwrap_err();
        assert_eq!(e.message, "`t` = 0 is not one of its values");
        assert_eq!(code(&table, 'a'), 1);
        assert!(flags(3, 3, "f").is_ok());
        assert!(flags(4, 3, "f").is_err());
    }
}
