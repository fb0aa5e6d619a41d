//! Datasets made from others (tf.data's and MindSpore's dataset ops, on
//! random access): samples in memory, a range (`take`, `skip`), `concat`,
//! `zip`, `filter`, and an in-memory `cache` of the encoded samples.
//!
//! Each is itself a [`Dataset`], so they nest; each keeps random access, so
//! the loader's order, sharding and exact resume work on them unchanged. A
//! cache holds what the dataset reads (encoded bytes and labels), before any
//! random op by construction: augmentations are drawn afresh every epoch.
//!
//! ```
//! use std::sync::Arc;
//! use tensorprep::train::data::combine::{Concat, Filter, InMemory, Range};
//! use tensorprep::train::data::{Dataset, Sample};
//!
//! let sample = |label: f32| Sample { bytes: vec![1, 2, 3], labels: vec![label], id: 0 };
//! let cats: Arc<dyn Dataset> = Arc::new(InMemory::new((0..10).map(|_| sample(0.0)).collect()));
//! let dogs: Arc<dyn Dataset> = Arc::new(InMemory::new((0..5).map(|_| sample(1.0)).collect()));
//! // The first 8 cats, then every dog.
//! let both = Concat::new(vec![Arc::new(Range::new(cats, 0..8)?), dogs])?;
//! assert_eq!(both.len(), 13);
//! let dogs_only = Filter::new(Arc::new(both), |s: &Sample| s.labels[0] == 1.0)?;
//! assert_eq!(dogs_only.len(), 5);
//! # Ok::<(), tensorprep::train::data::DataError>(())
//! ```

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Range as Span;
use std::sync::{PoisonError, RwLock};

use super::{DataError, Dataset, Sample};

fn out_of_range(index: usize, len: usize) -> DataError {
    DataError::OutOfRange { index, len }
}

/// Samples held in memory.
#[derive(Clone, Debug, Default)]
pub struct InMemory {
    samples: Vec<Sample>,
}

impl InMemory {
    /// A dataset of `samples`, in order.
    pub fn new(samples: Vec<Sample>) -> InMemory {
        InMemory { samples }
    }
}

impl Dataset for InMemory {
    /// Every sample's bytes, labels and id.
    fn fingerprint(&self) -> u64 {
        let mut h = crate::Fnv1a64::new();
        h.update(b"memory");
        for s in &self.samples {
            h.update(&(s.bytes.len() as u64).to_le_bytes());
            h.update(&s.bytes);
            h.update_f32(&s.labels);
            h.update(&s.id.to_le_bytes());
        }
        h.finish()
    }

    fn len(&self) -> usize {
        self.samples.len()
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        let s = self
            .samples
            .get(index)
            .ok_or_else(|| out_of_range(index, self.samples.len()))?;
        sample.clone_from(s);
        Ok(())
    }
}

/// A contiguous part of a dataset: `take(n)` is `0..n`, `skip(n)` is
/// `n..len`.
pub struct Range {
    inner: Arc<dyn Dataset>,
    span: Span<usize>,
}

impl Range {
    /// Samples `span` of `inner` (inside it, or an error).
    pub fn new(inner: Arc<dyn Dataset>, span: Span<usize>) -> Result<Range, DataError> {
        if span.start > span.end || span.end > inner.len() {
            return Err(DataError::Invalid {
                what: alloc::format!(
                    "the range {}..{} is not within a dataset of {}",
                    span.start,
                    span.end,
                    inner.len()
                ),
            });
        }
        Ok(Range { inner, span })
    }

    /// The first `n` samples (all of them if fewer).
    pub fn take(inner: Arc<dyn Dataset>, n: usize) -> Range {
        let end = n.min(inner.len());
        Range {
            inner,
            span: 0..end,
        }
    }

    /// All but the first `n` samples.
    pub fn skip(inner: Arc<dyn Dataset>, n: usize) -> Range {
        let len = inner.len();
        Range {
            inner,
            span: n.min(len)..len,
        }
    }
}

impl Dataset for Range {
    fn fingerprint(&self) -> u64 {
        let (start, end) = (self.span.start as u64, self.span.end as u64);
        super::fingerprint_of("range", [self.inner.fingerprint(), start, end].into_iter())
    }

    fn len(&self) -> usize {
        self.span.len()
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        if index >= self.len() {
            return Err(out_of_range(index, self.len()));
        }
        self.inner.read(self.span.start + index, sample)
    }
}

/// Datasets one after the other.
pub struct Concat {
    parts: Vec<Arc<dyn Dataset>>,
    /// Where each part starts, and the total at the end.
    starts: Vec<usize>,
}

impl Concat {
    /// `parts` in order (their total length must fit a `usize`).
    pub fn new(parts: Vec<Arc<dyn Dataset>>) -> Result<Concat, DataError> {
        let mut starts = Vec::with_capacity(parts.len() + 1);
        let mut total = 0usize;
        for p in &parts {
            starts.push(total);
            total = total.checked_add(p.len()).ok_or(DataError::Invalid {
                what: "the concatenated datasets' length overflows".into(),
            })?;
        }
        starts.push(total);
        Ok(Concat { parts, starts })
    }
}

impl Dataset for Concat {
    fn fingerprint(&self) -> u64 {
        super::fingerprint_of("concat", self.parts.iter().map(|p| p.fingerprint()))
    }

    fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        if index >= self.len() {
            return Err(out_of_range(index, self.len()));
        }
        // The last part starting at or before `index` (empty parts skipped).
        let part = self.starts.partition_point(|&s| s <= index) - 1;
        self.parts[part].read(index - self.starts[part], sample)
    }
}

/// Two datasets side by side (tf.data's `zip` of images and labels): a
/// sample's bytes and id are the first's, its labels the first's followed
/// by the second's (the second's bytes are not kept).
pub struct Zip {
    first: Arc<dyn Dataset>,
    second: Arc<dyn Dataset>,
}

std::thread_local! {
    /// The samples zips read their second dataset's sample into, reused (a
    /// zip takes one for the read and puts it back, so a zip read inside
    /// another's takes the next): nothing is allocated per sample.
    static SECOND: core::cell::RefCell<Vec<Sample>> = const { core::cell::RefCell::new(Vec::new()) };
}

impl Zip {
    /// `first` and `second`, which must have the same length.
    pub fn new(first: Arc<dyn Dataset>, second: Arc<dyn Dataset>) -> Result<Zip, DataError> {
        if first.len() != second.len() {
            return Err(DataError::Invalid {
                what: alloc::format!(
                    "zip of datasets of {} and {} samples",
                    first.len(),
                    second.len()
                ),
            });
        }
        Ok(Zip { first, second })
    }
}

impl Dataset for Zip {
    fn fingerprint(&self) -> u64 {
        let parts = [self.first.fingerprint(), self.second.fingerprint()];
        super::fingerprint_of("zip", parts.into_iter())
    }

    fn len(&self) -> usize {
        self.first.len()
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        self.first.read(index, sample)?;
        // Not borrowed across the read: the second dataset may be a zip.
        let mut other = SECOND.with(|s| s.borrow_mut().pop()).unwrap_or_default();
        let read = self.second.read(index, &mut other);
        if read.is_ok() {
            sample.labels.extend_from_slice(&other.labels);
        }
        SECOND.with(|s| s.borrow_mut().push(other));
        read
    }
}

/// The samples a predicate keeps, in order. Built by reading every sample
/// once (the predicate sees bytes, labels and id); then random access as
/// any dataset.
pub struct Filter {
    inner: Arc<dyn Dataset>,
    kept: Vec<usize>,
}

impl Filter {
    /// The samples of `inner` for which `keep` is true (read errors are
    /// returned).
    pub fn new(
        inner: Arc<dyn Dataset>,
        keep: impl Fn(&Sample) -> bool,
    ) -> Result<Filter, DataError> {
        let mut kept = Vec::new();
        let mut sample = Sample::default();
        for i in 0..inner.len() {
            inner.read(i, &mut sample)?;
            if keep(&sample) {
                kept.push(i);
            }
        }
        Ok(Filter { inner, kept })
    }

    /// The samples of `inner` whose index `keep` accepts (nothing read).
    pub fn by_index(inner: Arc<dyn Dataset>, keep: impl Fn(usize) -> bool) -> Filter {
        let kept = (0..inner.len()).filter(|&i| keep(i)).collect();
        Filter { inner, kept }
    }
}

impl Dataset for Filter {
    fn fingerprint(&self) -> u64 {
        let kept = self.kept.iter().map(|&i| i as u64);
        super::fingerprint_of(
            "filter",
            core::iter::once(self.inner.fingerprint()).chain(kept),
        )
    }

    fn len(&self) -> usize {
        self.kept.len()
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        let &at = self
            .kept
            .get(index)
            .ok_or_else(|| out_of_range(index, self.kept.len()))?;
        self.inner.read(at, sample)
    }
}

/// Samples kept in memory after their first read, up to a byte budget
/// (never evicted: past the budget, reads go to the dataset). The second
/// epoch of a remote or slow dataset then reads from memory.
pub struct Cache {
    inner: Arc<dyn Dataset>,
    budget: u64,
    held: RwLock<(Vec<Option<Arc<Sample>>>, u64)>,
}

impl Cache {
    /// A cache of `inner` holding at most `budget` bytes of samples.
    pub fn new(inner: Arc<dyn Dataset>, budget: u64) -> Cache {
        let len = inner.len();
        let mut slots = Vec::new();
        slots.resize_with(len, || None);
        Cache {
            inner,
            budget,
            held: RwLock::new((slots, 0)),
        }
    }

    /// Bytes held (encoded images and labels).
    pub fn bytes(&self) -> u64 {
        self.held.read().unwrap_or_else(PoisonError::into_inner).1
    }
}

fn footprint(s: &Sample) -> u64 {
    (s.bytes.len() + 4 * s.labels.len() + core::mem::size_of::<Sample>()) as u64
}

impl Dataset for Cache {
    fn fingerprint(&self) -> u64 {
        self.inner.fingerprint()
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        {
            let held = self.held.read().unwrap_or_else(PoisonError::into_inner);
            match held.0.get(index) {
                None => return Err(out_of_range(index, held.0.len())),
                Some(Some(s)) => {
                    sample.clone_from(s);
                    return Ok(());
                }
                Some(None) => {}
            }
        }
        self.inner.read(index, sample)?;
        let size = footprint(sample);
        let mut held = self.held.write().unwrap_or_else(PoisonError::into_inner);
        if held.1.saturating_add(size) <= self.budget && held.0[index].is_none() {
            held.0[index] = Some(Arc::new(sample.clone()));
            held.1 += size;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `len` samples whose label is `base + index` and whose bytes are the
    /// label's.
    fn counting(len: usize, base: f32) -> Arc<dyn Dataset> {
        Arc::new((len, move |i: usize, s: &mut Sample| {
            let label = base + i as f32;
            s.bytes.clear();
            s.bytes.extend_from_slice(&label.to_le_bytes());
            s.labels.clear();
            s.labels.push(label);
            s.id = i as u64;
            Ok(())
        }))
    }

    /// A zip whose second dataset is a zip reads every label (before: the
    /// inner zip borrowed the thread's scratch sample the outer one held,
    /// and every read panicked), reusing one scratch sample per level.
    #[test]
    fn a_zip_of_zips_reads_every_label() {
        let [a, b, c, d] = [0.0, 10.0, 100.0, 1000.0].map(|base| counting(5, base));
        let right = Zip::new(
            Arc::clone(&a),
            Arc::new(Zip::new(Arc::clone(&b), Arc::clone(&c)).unwrap()) as Arc<dyn Dataset>,
        )
        .unwrap();
        let both = Zip::new(
            Arc::new(Zip::new(a, b).unwrap()) as Arc<dyn Dataset>,
            Arc::new(Zip::new(c, d).unwrap()) as Arc<dyn Dataset>,
        )
        .unwrap();
        let mut s = Sample::default();
        for _ in 0..3 {
            for i in 0..5 {
                let i_ = i as f32;
                right.read(i, &mut s).unwrap();
                assert_eq!(s.labels, [i_, 10.0 + i_, 100.0 + i_]);
                assert_eq!(
                    (s.bytes.as_slice(), s.id),
                    (&i_.to_le_bytes()[..], i as u64)
                );
                both.read(i, &mut s).unwrap();
                assert_eq!(s.labels, [i_, 10.0 + i_, 100.0 + i_, 1000.0 + i_]);
            }
        }
        // Two zips read at once at most: two scratch samples, reused.
        assert_eq!(SECOND.with(|s| s.borrow().len()), 2);
        assert!(right.read(5, &mut s).is_err());
    }
}
