//! Datasets made from others (tf.data's and MindSpore's dataset ops, on
//! random access): samples in memory, a range (`take`, `skip`), `concat`,
//! `zip`, `filter`, and an in-memory `cache` of the encoded samples.
//!
//! Each is itself a [`Dataset`], so they nest; each keeps random access, so
//! the loader's order, sharding and exact resume work on them unchanged. A
//! cache holds what the dataset reads (encoded bytes and labels), before any
//! random op by construction: augmentations are drawn afresh every epoch.
//!
//! A combinator takes its datasets as [`Source`]s. Given as themselves (not
//! as `Arc<dyn Dataset>`), this module's datasets are seen through: a range
//! of a range is one range, a concatenation of concatenations one flat
//! concatenation (built in O(log n) per join, so `a + b + c + ...` of many
//! parts stays fast), a filter of a filter one filter. What still nests
//! (zips, caches, a range of a filter, ...) is counted, and nesting deeper
//! than [`MAX_DEPTH`] is refused: reading, hashing and freeing a dataset
//! recurse once per level, and the bound keeps that within a thread's stack.
//!
//! ```
//! use std::sync::Arc;
//! use tensorprep::train::data::combine::{Concat, Filter, InMemory, Range, Source};
//! use tensorprep::train::data::{Dataset, Sample};
//!
//! let sample = |label: f32| Sample { bytes: vec![1, 2, 3], labels: vec![label], id: 0, ..Sample::default() };
//! let cats = InMemory::new((0..10).map(|_| sample(0.0)).collect());
//! let dogs = InMemory::new((0..5).map(|_| sample(1.0)).collect());
//! // The first 8 cats, then every dog.
//! let both = Concat::new([Source::from(Range::new(cats, 0..8)?), Source::from(dogs)])?;
//! assert_eq!(both.len(), 13);
//! let dogs_only = Filter::new(both, |s: &Sample| s.labels[0] == 1.0)?;
//! assert_eq!((dogs_only.len(), dogs_only.depth()), (5, 3));
//! // A range of a range is one range: this chain stays one range over `dogs_only`.
//! let mut some = Range::skip(dogs_only, 1)?;
//! for n in (2..100_000).rev() {
//!     some = Range::take(some, n)?;
//! }
//! assert_eq!((some.len(), some.depth()), (2, 4));
//! # Ok::<(), tensorprep::train::data::DataError>(())
//! ```

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::ops::Range as Span;
use std::sync::{PoisonError, RwLock};

use super::{DataError, Dataset, ReadEpoch, Sample};

/// How deeply this module's datasets may nest: a zip of a cache of a filter
/// of a dataset is 3 deep. Ranges of ranges, concatenations of
/// concatenations and filters of filters collapse and do not count. Each
/// level costs a few hundred bytes of stack when a sample is read, the
/// dataset hashed or freed; 256 levels stay far inside a worker thread's
/// stack (and far above any real pipeline).
pub const MAX_DEPTH: u32 = 256;

fn out_of_range(index: usize, len: usize) -> DataError {
    DataError::OutOfRange { index, len }
}

/// The depth of a combinator over datasets nested `inner` deep (an error
/// past [`MAX_DEPTH`]).
/// A combination that cannot keep `data`'s own order refuses it
/// ([`Dataset::orders_itself`]: a stream through its shuffle buffer).
fn refuse_ordered(combination: &'static str, data: &dyn Dataset) -> Result<(), DataError> {
    if data.orders_itself() {
        return Err(DataError::OrdersItself {
            combination,
            dataset: data.describe(0),
        });
    }
    Ok(())
}

fn one_deeper(inner: u32) -> Result<u32, DataError> {
    let depth = inner.saturating_add(1);
    if depth > MAX_DEPTH {
        return Err(DataError::Invalid {
            what: alloc::format!(
                "datasets nested {depth} deep (at most {MAX_DEPTH}: ranges of ranges, \
                 concatenations of concatenations and filters of filters collapse; \
                 zips and caches nest)"
            ),
        });
    }
    Ok(depth)
}

/// A dataset given to a combinator.
///
/// Any dataset is one (`Arc<dyn Dataset>`, counted as a leaf: what it may
/// nest inside is not seen). This module's datasets convert as themselves
/// (by value or in an `Arc`), which lets the combinator see through them: a
/// range of a range becomes one range, a concatenation of concatenations
/// one flat concatenation, a filter of a filter one filter, and the depth of
/// the rest is counted ([`MAX_DEPTH`]).
#[derive(Clone)]
pub struct Source(Node);

#[derive(Clone)]
enum Node {
    Leaf(Arc<dyn Dataset>),
    Range(Arc<Range>),
    Concat(Arc<Concat>),
    Zip(Arc<Zip>),
    Filter(Arc<Filter>),
    Cache(Arc<Cache>),
}

impl Source {
    /// The dataset itself.
    pub fn dataset(&self) -> Arc<dyn Dataset> {
        match &self.0 {
            Node::Leaf(d) => Arc::clone(d),
            Node::Range(d) => Arc::clone(d) as Arc<dyn Dataset>,
            Node::Concat(d) => Arc::clone(d) as Arc<dyn Dataset>,
            Node::Zip(d) => Arc::clone(d) as Arc<dyn Dataset>,
            Node::Filter(d) => Arc::clone(d) as Arc<dyn Dataset>,
            Node::Cache(d) => Arc::clone(d) as Arc<dyn Dataset>,
        }
    }

    /// How many of this module's combinators nest in it (0 for any other
    /// dataset).
    pub fn depth(&self) -> u32 {
        match &self.0 {
            Node::Leaf(_) => 0,
            Node::Range(d) => d.depth,
            Node::Concat(d) => d.depth,
            Node::Zip(d) => d.depth,
            Node::Filter(d) => d.depth,
            Node::Cache(d) => d.depth,
        }
    }

    fn as_dataset(&self) -> &dyn Dataset {
        match &self.0 {
            Node::Leaf(d) => &**d,
            Node::Range(d) => &**d,
            Node::Concat(d) => &**d,
            Node::Zip(d) => &**d,
            Node::Filter(d) => &**d,
            Node::Cache(d) => &**d,
        }
    }
}

impl From<Arc<dyn Dataset>> for Source {
    fn from(dataset: Arc<dyn Dataset>) -> Source {
        Source(Node::Leaf(dataset))
    }
}

impl From<Arc<InMemory>> for Source {
    fn from(dataset: Arc<InMemory>) -> Source {
        Source(Node::Leaf(dataset))
    }
}

impl From<InMemory> for Source {
    fn from(dataset: InMemory) -> Source {
        Source(Node::Leaf(Arc::new(dataset)))
    }
}

macro_rules! source_of {
    ($($kind:ident),*) => {$(
        impl From<Arc<$kind>> for Source {
            fn from(dataset: Arc<$kind>) -> Source {
                Source(Node::$kind(dataset))
            }
        }

        impl From<$kind> for Source {
            fn from(dataset: $kind) -> Source {
                Source(Node::$kind(Arc::new(dataset)))
            }
        }
    )*};
}

source_of!(Range, Concat, Zip, Filter, Cache);

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
/// `n..len`. A range of a range is one range of the inner dataset (its
/// span within the outer's).
pub struct Range {
    inner: Arc<dyn Dataset>,
    span: Span<usize>,
    depth: u32,
}

impl Range {
    /// Samples `span` of `inner` (inside it, or an error).
    pub fn new(inner: impl Into<Source>, span: Span<usize>) -> Result<Range, DataError> {
        let inner = inner.into();
        let len = inner.as_dataset().len();
        if span.start > span.end || span.end > len {
            return Err(DataError::Invalid {
                what: alloc::format!(
                    "the range {}..{} is not within a dataset of {len}",
                    span.start,
                    span.end,
                ),
            });
        }
        Range::within(inner, span)
    }

    /// The first `n` samples (all of them if fewer).
    pub fn take(inner: impl Into<Source>, n: usize) -> Result<Range, DataError> {
        let inner = inner.into();
        let end = n.min(inner.as_dataset().len());
        Range::within(inner, 0..end)
    }

    /// All but the first `n` samples.
    pub fn skip(inner: impl Into<Source>, n: usize) -> Result<Range, DataError> {
        let inner = inner.into();
        let len = inner.as_dataset().len();
        Range::within(inner, n.min(len)..len)
    }

    /// `span` (within `inner`) of `inner`; of a range, the span within its
    /// inner dataset.
    fn within(inner: Source, span: Span<usize>) -> Result<Range, DataError> {
        match inner.0 {
            Node::Range(outer) => {
                let at = outer.span.start;
                Ok(Range {
                    inner: Arc::clone(&outer.inner),
                    span: at + span.start..at + span.end,
                    depth: outer.depth,
                })
            }
            _ => Ok(Range {
                depth: one_deeper(inner.depth())?,
                inner: inner.dataset(),
                span,
            }),
        }
    }

    /// How deeply it nests ([`MAX_DEPTH`]).
    pub fn depth(&self) -> u32 {
        self.depth
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

    fn fetch_ahead(&self, index: usize) {
        if index < self.len() {
            self.inner.fetch_ahead(self.span.start + index);
        }
    }

    /// A range of a stream: the loader's pass, its positions shifted into
    /// the range.
    fn read_in(
        &self,
        pass: &ReadEpoch,
        index: usize,
        sample: &mut Sample,
    ) -> Result<(), DataError> {
        if !self.inner.orders_itself() {
            return self.read(index, sample);
        }
        DataError::check_index(index, self.len())?;
        let shift = -(self.span.start as i64);
        let part = pass.of_part(shift, self.len());
        self.inner.read_in(&part, self.span.start + index, sample)
    }

    fn orders_itself(&self) -> bool {
        self.inner.orders_itself()
    }

    fn end_run(&self, run: u64) {
        self.inner.end_run(run);
    }

    fn describe(&self, index: usize) -> String {
        self.inner.describe(self.span.start.saturating_add(index))
    }
}

/// A concatenation's parts in order: a balanced (AVL) tree over them, its
/// subtrees shared by the concatenations that hold them, so that joining two
/// makes O(log n) new nodes and finding a sample's part takes O(log n) steps.
/// Its height stays below 1.45 log2(parts + 2), so its recursions are short.
enum Parts {
    /// One dataset.
    One {
        part: Arc<dyn Dataset>,
        len: usize,
        depth: u32,
    },
    /// `left`'s parts, then `right`'s.
    Two {
        left: Arc<Parts>,
        right: Arc<Parts>,
        /// Samples, parts, the tree's height and the parts' deepest nesting.
        len: usize,
        count: usize,
        height: u8,
        depth: u32,
    },
}

impl Parts {
    fn len(&self) -> usize {
        match self {
            Parts::One { len, .. } | Parts::Two { len, .. } => *len,
        }
    }

    fn count(&self) -> usize {
        match self {
            Parts::One { .. } => 1,
            Parts::Two { count, .. } => *count,
        }
    }

    fn height(&self) -> u8 {
        match self {
            Parts::One { .. } => 0,
            Parts::Two { height, .. } => *height,
        }
    }

    fn depth(&self) -> u32 {
        match self {
            Parts::One { depth, .. } | Parts::Two { depth, .. } => *depth,
        }
    }

    /// `left` then `right` under one node (their total length was checked
    /// to fit by [`Concat::new`]: every node holds a stretch of it).
    fn pair(left: &Arc<Parts>, right: &Arc<Parts>) -> Arc<Parts> {
        Arc::new(Parts::Two {
            len: left.len() + right.len(),
            count: left.count() + right.count(),
            height: left.height().max(right.height()) + 1,
            depth: left.depth().max(right.depth()),
            left: Arc::clone(left),
            right: Arc::clone(right),
        })
    }

    /// The children of a node (a tree of height 1 or more).
    fn children(&self) -> (&Arc<Parts>, &Arc<Parts>) {
        match self {
            Parts::Two { left, right, .. } => (left, right),
            Parts::One { .. } => unreachable!("a tree of height 0 has no children"),
        }
    }

    /// `left`'s parts then `right`'s, balanced: the AVL join (down the
    /// taller tree's inner edge to a subtree of the other's height, joined
    /// there, rebalanced on the way back up).
    fn join(left: &Arc<Parts>, right: &Arc<Parts>) -> Arc<Parts> {
        let (hl, hr) = (left.height(), right.height());
        if hl > hr + 1 {
            let (ll, lr) = left.children();
            Parts::balance(ll, &Parts::join(lr, right))
        } else if hr > hl + 1 {
            let (rl, rr) = right.children();
            Parts::balance(&Parts::join(left, rl), rr)
        } else {
            Parts::pair(left, right)
        }
    }

    /// `left` then `right`, two balanced trees whose heights differ by at
    /// most 2, as one balanced tree (a single or double rotation).
    fn balance(left: &Arc<Parts>, right: &Arc<Parts>) -> Arc<Parts> {
        let (hl, hr) = (left.height(), right.height());
        if hr > hl + 1 {
            let (rl, rr) = right.children();
            if rl.height() > rr.height() {
                let (rll, rlr) = rl.children();
                Parts::pair(&Parts::pair(left, rll), &Parts::pair(rlr, rr))
            } else {
                Parts::pair(&Parts::pair(left, rl), rr)
            }
        } else if hl > hr + 1 {
            let (ll, lr) = left.children();
            if lr.height() > ll.height() {
                let (lrl, lrr) = lr.children();
                Parts::pair(&Parts::pair(ll, lrl), &Parts::pair(lrr, right))
            } else {
                Parts::pair(ll, &Parts::pair(lr, right))
            }
        } else {
            Parts::pair(left, right)
        }
    }

    /// The parts in order (no recursion).
    fn each(&self) -> impl Iterator<Item = &Arc<dyn Dataset>> {
        let mut stack = Vec::with_capacity(usize::from(self.height()) + 1);
        stack.push(self);
        core::iter::from_fn(move || {
            loop {
                match stack.pop()? {
                    Parts::One { part, .. } => return Some(part),
                    Parts::Two { left, right, .. } => {
                        stack.push(&**right);
                        stack.push(&**left);
                    }
                }
            }
        })
    }
}

/// Datasets one after the other. Concatenations given as themselves are
/// flattened: `a + b + c` is one concatenation of three parts.
pub struct Concat {
    parts: Option<Arc<Parts>>,
    depth: u32,
    /// Its parts order themselves (all of them: streams).
    ordered: bool,
    /// Some part is read by index (kept so that joining stays O(log n)).
    indexed: bool,
}

impl Concat {
    /// `parts` in order (their total length must fit a `usize`).
    pub fn new<S: Into<Source>>(parts: impl IntoIterator<Item = S>) -> Result<Concat, DataError> {
        let mut all: Option<Arc<Parts>> = None;
        // Whether some part orders itself (a stream), and some does not.
        let (mut ordered, mut indexed) = (false, false);
        for part in parts {
            let part = part.into();
            let next = match &part.0 {
                Node::Concat(c) => match &c.parts {
                    Some(p) => {
                        ordered |= c.ordered;
                        indexed |= c.indexed;
                        Arc::clone(p)
                    }
                    None => continue,
                },
                _ => {
                    let depth = part.depth();
                    let part = part.dataset();
                    if part.orders_itself() {
                        ordered = true;
                    } else {
                        indexed = true;
                    }
                    Arc::new(Parts::One {
                        len: part.len(),
                        part,
                        depth,
                    })
                }
            };
            all = Some(match all {
                None => next,
                Some(before) => {
                    if before.len().checked_add(next.len()).is_none() {
                        return Err(DataError::Invalid {
                            what: "the concatenated datasets' length overflows".into(),
                        });
                    }
                    Parts::join(&before, &next)
                }
            });
        }
        let depth = one_deeper(all.as_ref().map_or(0, |p| p.depth()))?;
        // Streams one after the other, each through its own buffer; a
        // stream beside datasets read by index has no one order.
        if ordered && indexed {
            let mut each = all.iter().flat_map(|p| p.each());
            let stream = each
                .find(|p| p.orders_itself())
                .expect("a part orders itself");
            refuse_ordered("concatenation with datasets read by index", &**stream)?;
        }
        Ok(Concat {
            parts: all,
            depth,
            ordered: ordered && !indexed,
            indexed,
        })
    }

    /// The number of datasets concatenated (those of concatenations given
    /// as parts counted one by one).
    pub fn parts(&self) -> usize {
        self.parts.as_ref().map_or(0, |p| p.count())
    }

    /// How deeply it nests ([`MAX_DEPTH`]).
    pub fn depth(&self) -> u32 {
        self.depth
    }
}

impl Dataset for Concat {
    /// The parts' fingerprints in order (however the concatenation was
    /// built up).
    fn fingerprint(&self) -> u64 {
        let parts = self.parts.iter().flat_map(|p| p.each());
        super::fingerprint_of("concat", parts.map(|p| p.fingerprint()))
    }

    fn len(&self) -> usize {
        self.parts.as_ref().map_or(0, |p| p.len())
    }

    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        let (part, at) = self
            .locate(index)
            .ok_or_else(|| out_of_range(index, self.len()))?;
        part.read(at, sample)
    }

    fn fetch_ahead(&self, index: usize) {
        if let Some((part, at)) = self.locate(index) {
            part.fetch_ahead(at);
        }
    }

    /// Of streams: the part's, the loader's pass shifted to its positions.
    fn read_in(
        &self,
        pass: &ReadEpoch,
        index: usize,
        sample: &mut Sample,
    ) -> Result<(), DataError> {
        if !self.ordered {
            return self.read(index, sample);
        }
        let (part, at) = self
            .locate(index)
            .ok_or_else(|| out_of_range(index, self.len()))?;
        let shift = (index - at) as i64;
        part.read_in(&pass.of_part(shift, self.len()), at, sample)
    }

    fn orders_itself(&self) -> bool {
        self.ordered
    }

    fn end_run(&self, run: u64) {
        self.parts
            .iter()
            .flat_map(|p| p.each())
            .for_each(|p| p.end_run(run));
    }

    fn describe(&self, index: usize) -> String {
        match self.locate(index) {
            Some((part, at)) => part.describe(at),
            None => alloc::format!("sample {index}"),
        }
    }
}

impl Concat {
    /// The part holding sample `index`, and the sample's index in it.
    fn locate(&self, index: usize) -> Option<(&Arc<dyn Dataset>, usize)> {
        let mut at = self.parts.as_deref().filter(|p| index < p.len())?;
        let mut index = index;
        loop {
            match at {
                Parts::One { part, .. } => return Some((part, index)),
                Parts::Two { left, right, .. } => {
                    if index < left.len() {
                        at = &**left;
                    } else {
                        index -= left.len();
                        at = &**right;
                    }
                }
            }
        }
    }
}

/// Two datasets side by side (tf.data's `zip` of images and labels): a
/// sample's bytes and id are the first's, its labels the first's followed
/// by the second's (the second's bytes are not kept), its target whichever
/// of the two gives one (both giving one is an error naming the sample).
pub struct Zip {
    first: Arc<dyn Dataset>,
    second: Arc<dyn Dataset>,
    depth: u32,
}

std::thread_local! {
    /// The samples zips read their second dataset's sample into, reused (a
    /// zip takes one for the read and puts it back, so a zip read inside
    /// another's takes the next): nothing is allocated per sample.
    static SECOND: RefCell<Vec<Sample>> = const { RefCell::new(Vec::new()) };
}

impl Zip {
    /// `first` and `second`, which must have the same length.
    pub fn new(first: impl Into<Source>, second: impl Into<Source>) -> Result<Zip, DataError> {
        let (first, second) = (first.into(), second.into());
        refuse_ordered("zip", first.as_dataset())?;
        refuse_ordered("zip", second.as_dataset())?;
        let (a, b) = (first.as_dataset().len(), second.as_dataset().len());
        if a != b {
            return Err(DataError::Invalid {
                what: alloc::format!("zip of datasets of {a} and {b} samples"),
            });
        }
        Ok(Zip {
            depth: one_deeper(first.depth().max(second.depth()))?,
            first: first.dataset(),
            second: second.dataset(),
        })
    }

    /// How deeply it nests ([`MAX_DEPTH`]).
    pub fn depth(&self) -> u32 {
        self.depth
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
        let read = self.second.read(index, &mut other).and_then(|()| {
            sample.labels.extend_from_slice(&other.labels);
            match (&sample.target, other.target.take()) {
                (Some(_), Some(_)) => Err(DataError::Invalid {
                    what: alloc::format!(
                        "{}: both zipped datasets give the sample a target (zip one with labels only)",
                        self.first.describe(index)
                    ),
                }),
                (None, Some(t)) => {
                    sample.target = Some(t);
                    Ok(())
                }
                _ => Ok(()),
            }
        });
        SECOND.with(|s| s.borrow_mut().push(other));
        read
    }

    /// The first dataset's name for the sample (its bytes are the sample's).
    fn describe(&self, index: usize) -> String {
        self.first.describe(index)
    }
}

/// The samples a predicate keeps, in order. Built by reading every sample
/// once (the predicate sees bytes, labels and id); then random access as
/// any dataset. A filter of a filter is one filter of the inner dataset.
pub struct Filter {
    inner: Arc<dyn Dataset>,
    kept: Vec<usize>,
    depth: u32,
}

impl Filter {
    /// The samples of `inner` for which `keep` is true (read errors are
    /// returned).
    pub fn new(
        inner: impl Into<Source>,
        keep: impl Fn(&Sample) -> bool,
    ) -> Result<Filter, DataError> {
        let inner = inner.into();
        let data = inner.as_dataset();
        refuse_ordered("filter", data)?;
        let mut kept = Vec::new();
        let mut sample = Sample::default();
        for i in 0..data.len() {
            data.read(i, &mut sample)?;
            if keep(&sample) {
                kept.push(i);
            }
        }
        Filter::of(inner, kept)
    }

    /// The samples of `inner` whose index `keep` accepts (nothing read).
    pub fn by_index(
        inner: impl Into<Source>,
        keep: impl Fn(usize) -> bool,
    ) -> Result<Filter, DataError> {
        let inner = inner.into();
        refuse_ordered("filter", inner.as_dataset())?;
        let kept = (0..inner.as_dataset().len()).filter(|&i| keep(i)).collect();
        Filter::of(inner, kept)
    }

    /// Samples `kept` (ascending) of `inner`; of a filter, its kept samples
    /// among them.
    fn of(inner: Source, mut kept: Vec<usize>) -> Result<Filter, DataError> {
        match inner.0 {
            Node::Filter(outer) => {
                kept.iter_mut().for_each(|i| *i = outer.kept[*i]);
                Ok(Filter {
                    inner: Arc::clone(&outer.inner),
                    kept,
                    depth: outer.depth,
                })
            }
            _ => Ok(Filter {
                depth: one_deeper(inner.depth())?,
                inner: inner.dataset(),
                kept,
            }),
        }
    }

    /// How deeply it nests ([`MAX_DEPTH`]).
    pub fn depth(&self) -> u32 {
        self.depth
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

    fn fetch_ahead(&self, index: usize) {
        if let Some(&at) = self.kept.get(index) {
            self.inner.fetch_ahead(at);
        }
    }

    fn describe(&self, index: usize) -> String {
        match self.kept.get(index) {
            Some(&at) => self.inner.describe(at),
            None => alloc::format!("sample {index}"),
        }
    }
}

/// Samples kept in memory after their first read, up to a byte budget
/// (never evicted: past the budget, reads go to the dataset). The second
/// epoch of a remote or slow dataset then reads from memory.
pub struct Cache {
    inner: Arc<dyn Dataset>,
    budget: u64,
    held: RwLock<(Vec<Option<Arc<Sample>>>, u64)>,
    depth: u32,
}

impl Cache {
    /// A cache of `inner` holding at most `budget` bytes of samples.
    pub fn new(inner: impl Into<Source>, budget: u64) -> Result<Cache, DataError> {
        let inner = inner.into();
        refuse_ordered("cache", inner.as_dataset())?;
        let depth = one_deeper(inner.depth())?;
        let inner = inner.dataset();
        let mut slots = Vec::new();
        slots.resize_with(inner.len(), || None);
        Ok(Cache {
            inner,
            budget,
            held: RwLock::new((slots, 0)),
            depth,
        })
    }

    /// Bytes held (encoded images and labels).
    pub fn bytes(&self) -> u64 {
        self.held.read().unwrap_or_else(PoisonError::into_inner).1
    }

    /// How deeply it nests ([`MAX_DEPTH`]).
    pub fn depth(&self) -> u32 {
        self.depth
    }
}

fn footprint(s: &Sample) -> u64 {
    let target = s.target.as_ref().map_or(0, |t| t.heap_bytes());
    (s.bytes.len() + 4 * s.labels.len() + target + core::mem::size_of::<Sample>()) as u64
}

impl Dataset for Cache {
    fn fingerprint(&self) -> u64 {
        self.inner.fingerprint()
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn describe(&self, index: usize) -> String {
        self.inner.describe(index)
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
    use alloc::string::{String, ToString};
    use alloc::vec;

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

    fn labels(d: &dyn Dataset) -> Vec<Vec<f32>> {
        let mut s = Sample::default();
        (0..d.len())
            .map(|i| {
                d.read(i, &mut s).unwrap();
                s.labels.clone()
            })
            .collect()
    }

    fn message(e: DataError) -> String {
        assert!(matches!(e, DataError::Invalid { .. }), "{e:?}");
        e.to_string()
    }

    /// 300,000 nested `take`s and `skip`s are one range over the dataset
    /// (before: one level each, and hashing or freeing the chain overflowed
    /// the stack).
    #[test]
    fn a_chain_of_ranges_is_one_range() {
        let data = counting(1_000_000, 0.0);
        let mut range = Range::take(Arc::clone(&data), usize::MAX).unwrap();
        for _ in 0..150_000 {
            range = Range::skip(range, 1).unwrap();
            let n = range.len() - 1;
            range = Range::take(range, n).unwrap();
        }
        assert_eq!((range.len(), range.depth()), (700_000, 1));
        let mut s = Sample::default();
        range.read(0, &mut s).unwrap();
        assert_eq!(s.labels, [150_000.0]);
        range.read(699_999, &mut s).unwrap();
        assert_eq!(s.labels, [849_999.0]);
        assert!(range.read(700_000, &mut s).is_err());
        let direct = Range::new(data, 150_000..850_000).unwrap();
        assert_eq!(range.fingerprint(), direct.fingerprint());
        // A range checked against the range it is of, not the dataset.
        let e = Range::new(range, 0..700_001).err().unwrap();
        assert!(message(e).contains("0..700001 is not within a dataset of 700000"));
    }

    /// 100,000 joins (appending, prepending, pairwise) make one flat
    /// concatenation of 100,000 parts in a tree of logarithmic height, read
    /// in order and hashed as the same parts given at once (before: one
    /// nested concatenation per join, and each join copied its parts).
    #[test]
    fn concatenations_flatten_into_one_balanced_concatenation() {
        let n = 100_000;
        // Parts of 0, 1 and 2 samples.
        let parts: Vec<Arc<dyn Dataset>> =
            (0..n).map(|k| counting(k % 3, 10.0 * k as f32)).collect();
        let expected: Vec<Vec<f32>> = (0..n)
            .flat_map(|k| (0..k % 3).map(move |i| vec![10.0 * k as f32 + i as f32]))
            .collect();
        let at_once = Concat::new(parts.iter().cloned()).unwrap();
        let old_fingerprint =
            super::super::fingerprint_of("concat", parts.iter().map(|p| p.fingerprint()));
        assert_eq!(at_once.fingerprint(), old_fingerprint);

        let appended = parts
            .iter()
            .skip(1)
            .fold(Concat::new([Arc::clone(&parts[0])]).unwrap(), |c, p| {
                Concat::new([Source::from(c), Source::from(Arc::clone(p))]).unwrap()
            });
        let prepended = parts
            .iter()
            .rev()
            .skip(1)
            .fold(Concat::new([Arc::clone(&parts[n - 1])]).unwrap(), |c, p| {
                Concat::new([Source::from(Arc::clone(p)), Source::from(c)]).unwrap()
            });
        let mut level: Vec<Source> = parts.iter().map(|p| Source::from(Arc::clone(p))).collect();
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|pair| Source::from(Concat::new(pair.iter().cloned()).unwrap()))
                .collect();
        }
        let Node::Concat(pairwise) = level.pop().unwrap().0 else {
            panic!("a concatenation");
        };
        for c in [&at_once, &appended, &prepended, &*pairwise] {
            assert_eq!((c.parts(), c.depth(), c.len()), (n, 1, expected.len()));
            let height = c.parts.as_ref().unwrap().height();
            assert!(
                f64::from(height) <= 1.4405 * ((n + 2) as f64).log2(),
                "height {height}"
            );
            assert_eq!(labels(c), expected);
            assert_eq!(c.fingerprint(), old_fingerprint);
        }
        let empty = Concat::new(Vec::<Source>::new()).unwrap();
        assert_eq!((empty.len(), empty.parts()), (0, 0));
        let mut s = Sample::default();
        assert!(matches!(
            appended.read(expected.len(), &mut s),
            Err(DataError::OutOfRange { index, len }) if index == expected.len() && len == expected.len()
        ));
        let huge = counting(usize::MAX, 0.0);
        let e = Concat::new([Arc::clone(&huge), huge]).err().unwrap();
        assert!(message(e).contains("overflows"));
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

    /// A filter of a filter is one filter keeping the samples both keep.
    #[test]
    fn filters_of_filters_collapse() {
        let even = Filter::by_index(counting(30, 0.0), |i| i % 2 == 0).unwrap();
        let sixth = Filter::by_index(even, |i| i % 3 == 0).unwrap();
        let big = Filter::new(sixth, |s: &Sample| s.labels[0] >= 10.0).unwrap();
        assert_eq!(big.depth(), 1);
        assert_eq!(labels(&big), [[12.0], [18.0], [24.0]]);
    }

    /// What nests (zips, caches, a range of a filter...) nests at most
    /// `MAX_DEPTH` deep: one level more is an error naming the depth, never
    /// a stack overflow; a dataset `MAX_DEPTH` deep is read, hashed and
    /// freed on a 256 KiB stack.
    #[test]
    fn nesting_is_bounded() {
        let leaf = counting(4, 0.0);
        let mut deepest = Source::from(Arc::clone(&leaf));
        for level in 0..MAX_DEPTH {
            deepest = match level % 4 {
                0 => Cache::new(deepest, 1 << 10).unwrap().into(),
                1 => Zip::new(Arc::clone(&leaf), deepest).unwrap().into(),
                2 => Range::skip(deepest, 0).unwrap().into(),
                _ => Filter::by_index(deepest, |_| true).unwrap().into(),
            };
        }
        assert_eq!(deepest.depth(), MAX_DEPTH);
        let again = deepest.clone();
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let d = again.dataset();
                let mut s = Sample::default();
                d.read(3, &mut s).unwrap();
                assert_eq!(s.labels.len(), 1 + MAX_DEPTH as usize / 4);
                assert_ne!(d.fingerprint(), 0);
                drop((d, again));
            })
            .unwrap()
            .join()
            .unwrap();
        let too_deep = alloc::format!("nested {} deep", MAX_DEPTH + 1);
        let refused = [
            Cache::new(deepest.clone(), 0).err(),
            Zip::new(deepest.clone(), Arc::clone(&leaf)).err(),
            Range::take(deepest.clone(), 1).err(),
            Concat::new([deepest.clone()]).err(),
        ];
        for e in refused {
            assert!(message(e.expect("refused")).contains(&too_deep));
        }
        // The top is a filter: a filter of it is not one level more.
        assert_eq!(
            Filter::by_index(deepest, |i| i > 0).unwrap().depth(),
            MAX_DEPTH
        );
    }
}
