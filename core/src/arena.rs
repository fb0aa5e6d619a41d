//! Caller-owned memory for the tables and scratch of plans that run without an
//! allocator (TensorFlow Lite Micro's "tensor arena"): a `static` buffer or
//! one on the stack, handed out front to back as typed slices.
//!
//! A plan first reports the bytes it needs for an input shape (`bytes_needed`
//! functions, which build the same plan in a storage that only counts), then
//! is built inside an [`Arena`] over that many bytes, and runs without
//! allocating. The count depends on the target (x86 keeps a second copy of
//! the resampler's weights for its SIMD kernels): take it on the device.
//!
//! ```
//! use tensorprep::arena::Arena;
//! use tensorprep::resize::{ArenaResizePlan, Filter, Resample};
//! use tensorprep::{ImageView, ImageViewMut, PixelFormat};
//!
//! let (src, dst) = ((64, 48), (16, 12));
//! let method = Resample::Pillow(Filter::Bilinear);
//! let needed = ArenaResizePlan::bytes_needed(PixelFormat::Rgb8, src, PixelFormat::Rgb8, dst, method)?;
//! let mut memory = [0u8; 8192]; // a `static` on a microcontroller
//! assert!(needed <= memory.len());
//! let mut arena = Arena::new(&mut memory);
//! let (plan, mut state) = ArenaResizePlan::new_in(&mut arena, PixelFormat::Rgb8, src, PixelFormat::Rgb8, dst, method)?;
//! assert!(arena.used() <= needed);
//!
//! let pixels = [200u8; 64 * 48 * 3];
//! let mut out = [0u8; 16 * 12 * 3];
//! let view = ImageView::new(PixelFormat::Rgb8, 64, 48, &pixels)?;
//! plan.run(&mut state, &view, &mut ImageViewMut::new(PixelFormat::Rgb8, 16, 12, &mut out)?)?;
//! assert!(out.iter().all(|&v| v == 200));
//! # Ok::<(), tensorprep::Error>(())
//! ```

use crate::{Error, Result};

/// Every slice an arena hands out starts on this many bytes, and takes a
/// multiple of it (so that sizes add up the same whatever the order).
pub const ALIGN: usize = 8;

/// Bytes reported on top of the slices' sizes: the most the start of the
/// caller's memory can need to reach [`ALIGN`].
pub const SLACK: usize = ALIGN - 1;

/// The bytes `n` elements of `T` take in an arena (rounded up to [`ALIGN`]);
/// `None` on overflow.
pub(crate) const fn footprint<T>(n: usize) -> Option<usize> {
    match n.checked_mul(core::mem::size_of::<T>()) {
        Some(b) => match b.checked_add(ALIGN - 1) {
            Some(r) => Some(r / ALIGN * ALIGN),
            None => None,
        },
        None => None,
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Element types of plan tables: plain integers and floats (and arrays and
/// pairs of them), for which all-zero bytes are a valid value and whose
/// alignment is at most [`ALIGN`]. Sealed: the crate's own types only.
///
/// # Safety
///
/// Implementors must be valid when all their bytes are zero, have no drop
/// glue and an alignment of at most [`ALIGN`].
pub unsafe trait Element:
    Copy + Default + PartialEq + core::fmt::Debug + sealed::Sealed + 'static
{
}

impl sealed::Sealed for u8 {}
impl sealed::Sealed for u32 {}
impl sealed::Sealed for i32 {}
impl sealed::Sealed for f32 {}
impl sealed::Sealed for usize {}
impl sealed::Sealed for [i32; 2] {}
impl sealed::Sealed for (u32, u32) {}
impl sealed::Sealed for (usize, [i32; 2]) {}
impl sealed::Sealed for ([usize; 2], [i32; 2]) {}
impl sealed::Sealed for (usize, usize, f32) {}

// SAFETY: integers, floats and arrays/tuples of them: zero is a valid value,
// nothing to drop, alignment at most 8 on every target.
unsafe impl Element for u8 {}
// SAFETY: as above.
unsafe impl Element for u32 {}
// SAFETY: as above.
unsafe impl Element for i32 {}
// SAFETY: as above.
unsafe impl Element for f32 {}
// SAFETY: as above.
unsafe impl Element for usize {}
// SAFETY: as above.
unsafe impl Element for [i32; 2] {}
// SAFETY: as above.
unsafe impl Element for (u32, u32) {}
// SAFETY: as above.
unsafe impl Element for (usize, [i32; 2]) {}
// SAFETY: as above.
unsafe impl Element for ([usize; 2], [i32; 2]) {}
// SAFETY: as above.
unsafe impl Element for (usize, usize, f32) {}

/// Where a plan keeps its tables (filled once when it is built, then read)
/// and its scratch (rewritten by every run): on the heap ([`Heap`], with
/// `alloc`) or in caller memory ([`Borrowed`], always). Sealed.
pub trait Storage: sealed::Sealed + Copy + PartialEq + core::fmt::Debug + Default {
    /// A read-only table of `T`.
    type Table<T: Element>: core::ops::Deref<Target = [T]> + Clone + PartialEq + core::fmt::Debug;
    /// A scratch buffer of `T` (bytes, or the words of a resampler's sums).
    type Scratch<T: Element>: Scratch<T> + core::fmt::Debug;
    /// A short list a plan grows while it is built (its passes): a `Vec` on
    /// the heap, a fixed capacity of [`MAX_PASSES`] in caller memory.
    #[doc(hidden)]
    type List<T: Clone + PartialEq + core::fmt::Debug>: List<T>;
}

/// Tables and scratch on the heap: `Vec`s, grown on first use and reused.
#[cfg(feature = "alloc")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heap;

#[cfg(feature = "alloc")]
impl sealed::Sealed for Heap {}

#[cfg(feature = "alloc")]
impl Storage for Heap {
    type Table<T: Element> = alloc::vec::Vec<T>;
    type Scratch<T: Element> = alloc::vec::Vec<T>;
    type List<T: Clone + PartialEq + core::fmt::Debug> = alloc::vec::Vec<T>;
}

/// Tables and scratch in caller memory handed out by an [`Arena`] that lives
/// for `'a`: nothing is ever allocated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Borrowed<'a>(core::marker::PhantomData<&'a mut [u8]>);

impl sealed::Sealed for Borrowed<'_> {}

impl<'a> Storage for Borrowed<'a> {
    type Table<T: Element> = &'a [T];
    type Scratch<T: Element> = &'a mut [T];
    type List<T: Clone + PartialEq + core::fmt::Debug> = heapless::Vec<T, MAX_PASSES>;
}

/// Storage that holds nothing and counts the bytes an [`Arena`] would hand
/// out: plans built in it are measured (`bytes_needed`), never run.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counting;

/// A table or scratch of [`Counting`] storage: no elements.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted<T>(core::marker::PhantomData<T>);

impl<T> core::ops::Deref for Counted<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &[]
    }
}

impl sealed::Sealed for Counting {}

impl Storage for Counting {
    type Table<T: Element> = Counted<T>;
    type Scratch<T: Element> = Counted<T>;
    type List<T: Clone + PartialEq + core::fmt::Debug> = heapless::Vec<T, MAX_PASSES>;
}

impl<T> sealed::Sealed for Counted<T> {}

/// Never run: a counted plan only reports sizes.
impl<T: Element> Scratch<T> for Counted<T> {
    fn reserve(&mut self, len: usize) -> Result<()> {
        Scratch::<T>::reserve(&mut &mut [][..], len)
    }

    fn grow(&mut self, _: usize) -> &mut [T] {
        &mut []
    }

    fn capacity(&self) -> usize {
        0
    }
}

impl Tables<Counting> for Footprint {
    fn table<T: Pooled>(&mut self, n: usize, _: impl FnOnce(&mut [T])) -> Result<Counted<T>> {
        self.add::<T>(n)?;
        Ok(Counted(core::marker::PhantomData))
    }
}

/// The most materializing passes (resampling, padding, turning a frame) a
/// plan in caller memory holds; conversions, crops and the finish pass fuse
/// into them and do not count.
pub const MAX_PASSES: usize = 16;

/// A list a plan grows while it is built.
pub trait List<T>:
    Default + Clone + PartialEq + core::fmt::Debug + core::ops::DerefMut<Target = [T]> + sealed::Sealed
{
    /// Appends, or gives the value back when there is no room.
    #[doc(hidden)]
    fn try_push(&mut self, value: T) -> core::result::Result<(), T>;
    /// Empties the list (keeping any capacity).
    #[doc(hidden)]
    fn clear(&mut self);
}

#[cfg(feature = "alloc")]
impl<T> sealed::Sealed for alloc::vec::Vec<T> {}

#[cfg(feature = "alloc")]
impl<T: Clone + PartialEq + core::fmt::Debug> List<T> for alloc::vec::Vec<T> {
    fn try_push(&mut self, value: T) -> core::result::Result<(), T> {
        if self.try_reserve(1).is_err() {
            return Err(value);
        }
        self.push(value);
        Ok(())
    }

    fn clear(&mut self) {
        alloc::vec::Vec::clear(self);
    }
}

impl<T, const N: usize> sealed::Sealed for heapless::Vec<T, N> {}

impl<T: Clone + PartialEq + core::fmt::Debug, const N: usize> List<T> for heapless::Vec<T, N> {
    fn try_push(&mut self, value: T) -> core::result::Result<(), T> {
        self.push(value)
    }

    fn clear(&mut self) {
        heapless::Vec::clear(self);
    }
}

/// A scratch buffer a run writes: made large enough before the run (fallibly),
/// then handed out at the lengths the run needs.
pub trait Scratch<T: Element = u8>: sealed::Sealed {
    /// Makes sure `len` elements are available: a `Vec` grows (fallibly), caller
    /// memory must already hold them ([`Error::ArenaTooSmall`] otherwise).
    #[doc(hidden)]
    fn reserve(&mut self, len: usize) -> Result<()>;
    /// The first `len` elements (after a `reserve` of at least `len`; the
    /// contents are whatever the last run left).
    #[doc(hidden)]
    fn grow(&mut self, len: usize) -> &mut [T];
    /// Elements available without growing.
    #[doc(hidden)]
    fn capacity(&self) -> usize;
}

#[cfg(feature = "alloc")]
impl<T: Element> Scratch<T> for alloc::vec::Vec<T> {
    fn reserve(&mut self, len: usize) -> Result<()> {
        crate::buffer::reserve(self, len)
    }

    fn grow(&mut self, len: usize) -> &mut [T] {
        if self.len() < len {
            self.resize(len, T::default());
        }
        &mut self[..len]
    }

    fn capacity(&self) -> usize {
        alloc::vec::Vec::capacity(self)
    }
}

impl<T> sealed::Sealed for &mut [T] {}

impl<T: Element> Scratch<T> for &mut [T] {
    fn reserve(&mut self, len: usize) -> Result<()> {
        if self.len() < len {
            let size = core::mem::size_of::<T>() as u64;
            return Err(Error::ArenaTooSmall {
                needed: len as u64 * size,
                available: self.len() as u64 * size,
            });
        }
        Ok(())
    }

    fn grow(&mut self, len: usize) -> &mut [T] {
        &mut self[..len]
    }

    fn capacity(&self) -> usize {
        self.len()
    }
}

/// Where a plan being built gets its tables: a pool of spare `Vec`s
/// (the heap) or an [`Arena`].
pub(crate) trait Tables<S: Storage> {
    /// A table of `n` elements, filled by `fill` (which sees zeros).
    fn table<T: Pooled>(&mut self, n: usize, fill: impl FnOnce(&mut [T])) -> Result<S::Table<T>>;
}

impl<'a> Tables<Borrowed<'a>> for Arena<'a> {
    fn table<T: Pooled>(&mut self, n: usize, fill: impl FnOnce(&mut [T])) -> Result<&'a [T]> {
        let t = self.take::<T>(n)?;
        fill(t);
        Ok(t)
    }
}

impl<'a> Arena<'a> {
    /// Scratch of `len` elements.
    pub(crate) fn scratch<T: Element>(&mut self, len: usize) -> Result<&'a mut [T]> {
        self.take::<T>(len)
    }

    /// `value`, moved into the arena (plans keep their resolved passes there
    /// rather than on the stack). It is never dropped: arena values own no
    /// resources (their tables are arena slices too).
    pub(crate) fn keep<T>(&mut self, value: T) -> Result<&'a mut T> {
        const { assert!(core::mem::align_of::<T>() <= ALIGN) };
        let bytes = self.take::<u8>(core::mem::size_of::<T>())?;
        let ptr = bytes.as_mut_ptr().cast::<T>();
        // SAFETY: `take` gives `size_of::<T>()` bytes starting on an `ALIGN`
        // boundary, enough for `T`'s alignment (asserted above), borrowed for
        // `'a` and reachable from nowhere else; `write` moves `value` in
        // without reading the old bytes.
        unsafe {
            ptr.write(value);
            Ok(&mut *ptr)
        }
    }
}

/// Table elements that a heap pool keeps spare `Vec`s of (see
/// `resize::Spares`), so that plans rebuilt per image size refill old tables.
pub(crate) trait Pooled: Element {
    /// The pool of spare tables of this element type.
    #[cfg(feature = "alloc")]
    fn pool(spares: &mut Pools) -> &mut heapless::Vec<alloc::vec::Vec<Self>, 8>;
}

/// Spare heap tables by element type, a few of each.
#[cfg(feature = "alloc")]
#[derive(Debug, Default)]
pub(crate) struct Pools {
    u32s: heapless::Vec<alloc::vec::Vec<u32>, 8>,
    i32s: heapless::Vec<alloc::vec::Vec<i32>, 8>,
    pairs: heapless::Vec<alloc::vec::Vec<[i32; 2]>, 8>,
    bounds: heapless::Vec<alloc::vec::Vec<(u32, u32)>, 8>,
    cols: heapless::Vec<alloc::vec::Vec<(usize, [i32; 2])>, 8>,
    rows: heapless::Vec<alloc::vec::Vec<([usize; 2], [i32; 2])>, 8>,
    areas: heapless::Vec<alloc::vec::Vec<(usize, usize, f32)>, 8>,
    f32s: heapless::Vec<alloc::vec::Vec<f32>, 8>,
}

macro_rules! pooled {
    ($($t:ty => $field:ident),*) => {$(
        impl Pooled for $t {
            #[cfg(feature = "alloc")]
            fn pool(spares: &mut Pools) -> &mut heapless::Vec<alloc::vec::Vec<Self>, 8> {
                &mut spares.$field
            }
        }
    )*};
}
pooled!(
    u32 => u32s,
    i32 => i32s,
    [i32; 2] => pairs,
    (u32, u32) => bounds,
    (usize, [i32; 2]) => cols,
    ([usize; 2], [i32; 2]) => rows,
    (usize, usize, f32) => areas,
    f32 => f32s
);

#[cfg(feature = "alloc")]
impl Pools {
    /// Gives a table up for reuse (beyond the pool's room it is freed).
    pub(crate) fn give<T: Pooled>(&mut self, table: alloc::vec::Vec<T>) {
        let _ = T::pool(self).push(table);
    }
}

#[cfg(feature = "alloc")]
impl Tables<Heap> for Pools {
    fn table<T: Pooled>(
        &mut self,
        n: usize,
        fill: impl FnOnce(&mut [T]),
    ) -> Result<alloc::vec::Vec<T>> {
        let mut v = T::pool(self).pop().unwrap_or_default();
        v.clear();
        // Not exact: a reused table grows by doubling, so tables passed from
        // size to size soon fit every size of a folder.
        v.try_reserve(n).map_err(|_| Error::OutOfMemory {
            bytes: (n as u64).saturating_mul(core::mem::size_of::<T>() as u64),
        })?;
        v.resize(n, T::default());
        fill(&mut v);
        Ok(v)
    }
}

/// Caller memory handed out front to back.
#[derive(Debug)]
pub struct Arena<'a> {
    free: &'a mut [u8],
    used: usize,
    capacity: usize,
}

impl<'a> Arena<'a> {
    /// An arena over `memory` (a `static`, a buffer on the stack, or any
    /// slice the caller keeps alive as long as what is built in it).
    pub fn new(memory: &'a mut [u8]) -> Arena<'a> {
        let capacity = memory.len();
        Arena {
            free: memory,
            used: 0,
            capacity,
        }
    }

    /// Bytes handed out so far, alignment padding included.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.free.len()
    }

    /// `n` zeroed elements of `T`, or [`Error::ArenaTooSmall`].
    pub(crate) fn take<T: Element>(&mut self, n: usize) -> Result<&'a mut [T]> {
        let too_small = |extra: usize| Error::ArenaTooSmall {
            needed: (self.used as u64).saturating_add(extra as u64),
            available: self.capacity as u64,
        };
        let bytes = footprint::<T>(n).ok_or(too_small(usize::MAX))?;
        let pad = self.free.as_ptr().align_offset(ALIGN);
        let total = pad.checked_add(bytes).ok_or(too_small(usize::MAX))?;
        if total > self.free.len() {
            return Err(too_small(total));
        }
        let free = core::mem::take(&mut self.free);
        let (head, rest) = free.split_at_mut(total);
        self.free = rest;
        self.used += total;
        let head = &mut head[pad..];
        head.fill(0);
        // SAFETY: `head` starts on an `ALIGN`-byte boundary (`align_offset`),
        // which satisfies `T`'s alignment (`Element`), holds at least
        // `n * size_of::<T>()` bytes (`footprint`), all zero, a valid `T`
        // bit pattern (`Element`); it is borrowed for `'a` and no longer
        // reachable through `self.free`.
        Ok(unsafe { core::slice::from_raw_parts_mut(head.as_mut_ptr().cast::<T>(), n) })
    }
}

/// The bytes of a sequence of arena requests, counted as [`Arena`] hands them
/// out (what `bytes_needed` functions report).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Footprint {
    bytes: usize,
}

impl Footprint {
    /// Adds `n` elements of `T`.
    pub(crate) fn add<T>(&mut self, n: usize) -> Result<()> {
        let b = footprint::<T>(n).ok_or(Error::AllocationTooLarge {
            bytes: u64::MAX,
            limit: usize::MAX as u64,
        })?;
        self.bytes = self.bytes.checked_add(b).ok_or(Error::AllocationTooLarge {
            bytes: u64::MAX,
            limit: usize::MAX as u64,
        })?;
        Ok(())
    }

    /// The total, with the start's alignment slack.
    pub(crate) fn total(&self) -> usize {
        self.bytes.saturating_add(SLACK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_aligned_zeroed_and_counted() {
        let mut mem = [0xAAu8; 100];
        // Start one byte in: the first slice pads to the boundary.
        let mut arena = Arena::new(&mut mem[1..]);
        let a = arena.take::<u8>(3).unwrap();
        assert_eq!(a, &[0, 0, 0]);
        let b = arena.take::<i32>(5).unwrap();
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        assert!(b.iter().all(|&v| v == 0));
        let mut f = Footprint::default();
        f.add::<u8>(3).unwrap();
        f.add::<i32>(5).unwrap();
        assert!(arena.used() <= f.total());
        assert_eq!(f.total(), 8 + 24 + SLACK);
        // Too much: an error naming what was needed, and nothing taken.
        let left = arena.remaining();
        assert!(matches!(
            arena.take::<u32>(100),
            Err(Error::ArenaTooSmall { available: 99, .. })
        ));
        assert_eq!(arena.remaining(), left);
        assert!(arena.take::<u32>(usize::MAX).is_err());
    }
}
