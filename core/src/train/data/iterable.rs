//! Data that cannot be read by index: a stream of samples (a Python
//! generator, a pipe, a tar file read front to back) as a [`Dataset`] the
//! loader reads like any other, through a shuffle buffer.
//!
//! - [`Iterable`]: a source that opens a [`SampleStream`] per epoch (the
//!   stream restarts each epoch).
//! - [`IterableDataset`]: an [`Iterable`] with a length (the samples per
//!   epoch: given, or counted by reading the stream through once when it is
//!   made) and a shuffle buffer of [`StreamOptions::buffer`] samples. It
//!   orders its own samples ([`Dataset::orders_itself`]): the loader's
//!   `Order::Shuffled` turns the buffer on, `Order::Sequential` gives the
//!   stream's order; weights do not apply.
//!
//! **The shuffle buffer** has tf.data's `shuffle(buffer_size)` and
//! WebDataset's `shuffle(n)` semantics: it fills with the stream's first
//! `buffer` samples; each position of the epoch draws one of the samples it
//! holds uniformly (the draw keyed by (seed, epoch, position), like every
//! draw of the loader), hands it out and takes the stream's next sample in
//! its place; once the stream ends, it drains by the same draws. Its memory
//! is `buffer` samples (each at most [`MAX_SAMPLE_BYTES`](super::MAX_SAMPLE_BYTES); or
//! [`StreamOptions::max_buffer_bytes`] in all, an error when passed), per
//! epoch being read (two at an epoch's turn). The buffer recycles its
//! samples' buffers, and keeps up to `buffer + 64` of them between epochs
//! for the next: nothing is allocated per sample in steady state.
//!
//! **Lengths**: a stream that ends before the epoch's length is an error
//! naming the position ([`DataError::StreamEnded`]), never a short epoch; a
//! longer one is cut (the epoch is the first `len` samples the buffer hands
//! out; the rest of the stream is not read).
//!
//! **Threads, shards, resume**: the loader's read threads call
//! concurrently and a little out of order; the dataset keeps one cursor
//! (stream, buffer, next position) per pass, each under a lock of its own
//! (a pass's fill or replay never holds up another pass), and keeps back
//! the samples a pass will ask for that it passes on the way to a later
//! one (at most the loader's read-ahead). Every shard runs the same stream
//! and buffer and takes its positions of the epoch (`r + n * j`), so the
//! shards are disjoint and a resume with another shard count is exact; the
//! cost: each shard reads every sample's bytes (it decodes only its own). A
//! resumed epoch reopens the stream and replays the buffer's draws up to
//! the position (reading the samples before it, not decoding them): exact,
//! at the cost of reading that part of the epoch again.
//!
//! **Stopping**: when a loader stops or is dropped it ends its run
//! ([`Dataset::end_run`]): the run's cursors are dropped, a read of it in
//! progress stops at the stream's next sample (also during a fill or a
//! replay) and a stream blocked waiting is woken
//! ([`SampleStream::interrupter`]). At most [`MAX_CURSORS`] cursors are
//! open at once, the least recently used closed first.
//!
//! Read by index ([`Dataset::read`]), a stream gives its own order, each
//! step backwards reopening it. Inside a [combination](super::combine), a
//! concatenation of streams and a range of one pass the loader's pass on
//! (each part's positions mapped, [`ReadEpoch::of_part`]); a filter, a
//! cache or a zip of one, or a concatenation of streams with datasets read
//! by index, is refused ([`DataError::OrdersItself`]).

#![forbid(unsafe_code)]

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{Content, DataError, Dataset, MAX_SAMPLE_BYTES, ReadEpoch, Sample};
use crate::train::{Draws, SampleKey};

/// The op position the shuffle buffer draws from (augmentations use 0 up to
/// `MAX_AUGMENTS`, the epoch's permutation `u16::MAX`).
const BUFFER_DRAW: u16 = u16::MAX - 1;

/// Room made at once for a cursor's buffer and parked samples (one
/// allocation each per epoch, not one per doubling).
const PRESIZED: usize = 64;

/// Passes (epochs being read, one-off reads) whose cursors are kept at
/// once: the loader reads two epochs at an epoch's turn; a further one is
/// reopened when asked again.
pub const MAX_CURSORS: usize = 4;

/// Ended runs remembered (a read of one after its end is refused, not
/// reopened): a loader's threads are joined right after its run ends.
const ENDED_RUNS: usize = 64;

/// Wakes a stream's [`SampleStream::next`] blocked waiting (for a pipe's
/// writer, say), from another thread: that `next` then returns an error.
pub type Interrupter = Arc<dyn Fn() + Send + Sync>;

/// A stream of samples, read front to back.
///
/// A closure filling a sample and returning `Ok(false)` at the end is one.
pub trait SampleStream: Send {
    /// Reads the next sample into `sample` (reusing its buffers; its
    /// [`content`](Sample::content) is [`Content::Encoded`] unless set):
    /// `Ok(false)` at the stream's end.
    fn next(&mut self, sample: &mut Sample) -> Result<bool, DataError>;

    /// What wakes a [`next`](SampleStream::next) blocked waiting, when the
    /// loader reading it stops. `None` (the default): `next` returns by
    /// itself (it never waits on something that may not come).
    fn interrupter(&self) -> Option<Interrupter> {
        None
    }
}

impl<F> SampleStream for F
where
    F: FnMut(&mut Sample) -> Result<bool, DataError> + Send,
{
    fn next(&mut self, sample: &mut Sample) -> Result<bool, DataError> {
        self(sample)
    }
}

/// A source of streams: the same samples in the same order each time it
/// is opened (a shuffle buffer's output is exact only then).
pub trait Iterable: Send + Sync {
    /// Opens the stream for `epoch` (from its start).
    fn open(&self, epoch: u32) -> Result<Box<dyn SampleStream>, DataError>;

    /// The source, for messages (`tar stream train.tar`, `FromIterable(gen)`).
    fn describe(&self) -> String;

    /// A hash of what the source holds, so that a resume state is for it
    /// alone ([`Dataset::fingerprint`]); cheap (not every byte).
    fn fingerprint(&self) -> u64;

    /// Whether counting the source's samples would consume them (standard
    /// input, a FIFO: what its writer wrote is read once): its length must
    /// then be given, not counted ([`DataError::LengthNeeded`]). `false` by
    /// default.
    fn reads_once(&self) -> bool {
        false
    }
}

/// How an [`IterableDataset`] reads its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Samples per epoch: WebDataset's `with_epoch`, MindSpore's
    /// `num_samples`. `None`: counted once when the dataset is made, by
    /// reading the stream through (its cost: one epoch's reading).
    pub samples: Option<usize>,
    /// The shuffle buffer's size in samples (1 or more; used when the
    /// loader shuffles): [`StreamOptions::DEFAULT_BUFFER`] by default.
    pub buffer: usize,
    /// The most bytes the buffer's samples may hold together: passing it is
    /// an error naming the position (`None`: no limit beyond `buffer`
    /// samples of at most [`MAX_SAMPLE_BYTES`] each).
    pub max_buffer_bytes: Option<u64>,
}

impl StreamOptions {
    /// [`StreamOptions::buffer`]'s default: 1,000 samples (about 110 MB of
    /// ImageNet's JPEG photos, at 110 kB on average).
    pub const DEFAULT_BUFFER: usize = 1000;
    /// The largest buffer: 2^24 samples.
    pub const MAX_BUFFER: usize = 1 << 24;

    /// `samples` per epoch (`None`: counted), the default buffer.
    pub fn new(samples: Option<usize>) -> Self {
        StreamOptions {
            samples,
            ..StreamOptions::default()
        }
    }

    /// With a shuffle buffer of `samples`.
    pub fn buffer(mut self, samples: usize) -> Self {
        self.buffer = samples;
        self
    }

    /// With a cap on the bytes the buffer holds.
    pub fn max_buffer_bytes(mut self, bytes: u64) -> Self {
        self.max_buffer_bytes = Some(bytes);
        self
    }
}

impl Default for StreamOptions {
    /// Counted, [`StreamOptions::DEFAULT_BUFFER`] samples, no byte cap.
    fn default() -> Self {
        StreamOptions {
            samples: None,
            buffer: StreamOptions::DEFAULT_BUFFER,
            max_buffer_bytes: None,
        }
    }
}

/// A stream as a dataset of a fixed length, shuffled through a buffer.
///
/// ```
/// use std::sync::Arc;
/// use tensorprep::train::data::{DataError, Dataset, Iterable, IterableDataset, ReadEpoch,
///                                Sample, SampleStream, StreamOptions};
/// use tensorprep::train::Shard;
///
/// /// Ten samples, numbered: a stream opened anew each epoch.
/// struct Numbers;
/// impl Iterable for Numbers {
///     fn open(&self, _epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
///         let mut next = 0u8;
///         Ok(Box::new(move |s: &mut Sample| {
///             if next == 10 {
///                 return Ok(false);
///             }
///             s.bytes.clear();
///             s.bytes.push(next);
///             s.labels.clear();
///             s.labels.push(f32::from(next));
///             next += 1;
///             Ok(true)
///         }))
///     }
///     fn describe(&self) -> String { "numbers".into() }
///     fn fingerprint(&self) -> u64 { 10 }
/// }
///
/// let data = IterableDataset::new(Arc::new(Numbers), StreamOptions::new(None).buffer(4))?;
/// assert_eq!(data.len(), 10); // counted
/// let mut s = Sample::default();
/// let pass = ReadEpoch::new(7, 0, true, Shard::ALL, 0, 10);
/// let mut out = Vec::new();
/// for i in 0..10 {
///     data.read_in(&pass, i, &mut s)?;
///     out.push(s.bytes[0]);
/// }
/// let mut sorted = out.clone();
/// sorted.sort();
/// assert_eq!(sorted, (0..10).collect::<Vec<u8>>()); // a permutation of the stream
/// # Ok::<(), DataError>(())
/// ```
pub struct IterableDataset {
    source: Arc<dyn Iterable>,
    len: usize,
    buffer: usize,
    max_buffer_bytes: u64,
    cursors: Mutex<Cursors>,
    /// Closed cursors' samples, for the next to open.
    spare: Mutex<Vec<Sample>>,
}

impl core::fmt::Debug for IterableDataset {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IterableDataset")
            .field("source", &self.source.describe())
            .field("len", &self.len)
            .field("buffer", &self.buffer)
            .finish()
    }
}

/// The open passes, found under the dataset's lock (held for nothing
/// else): each is read under its own.
struct Cursors {
    open: Vec<Entry>,
    /// Uses so far (the least recently used cursor is closed first).
    clock: u64,
    /// Runs ended ([`Dataset::end_run`]), the latest last.
    ended: Vec<u64>,
}

/// A pass's cursor, as the dataset finds it.
struct Entry {
    pass: ReadEpoch,
    used: u64,
    place: Arc<Place>,
}

/// A pass's cursor under its lock, and what stops it from another thread.
struct Place {
    /// `None` until opened, and after closed.
    cursor: Mutex<Option<Cursor>>,
    /// Its run ended: its reads stop at the stream's next sample.
    cancelled: Arc<AtomicBool>,
    /// Wakes its stream blocked waiting.
    interrupter: Mutex<Option<Interrupter>>,
}

/// One pass's place in its stream.
struct Cursor {
    stream: Box<dyn SampleStream>,
    cancelled: Arc<AtomicBool>,
    /// Samples read from the stream.
    read: u64,
    ended: bool,
    /// The buffer: `slots[..filled]` hold samples.
    slots: Vec<Sample>,
    filled: usize,
    /// Bytes the buffer's samples hold.
    held: u64,
    /// The next position handed out.
    next: usize,
    /// Positions passed on the way to a later one, asked for by the pass.
    parked: Vec<(usize, Sample)>,
    /// Samples' buffers to reuse.
    spare: Vec<Sample>,
    /// Positions handed out, and to hand out ([`ReadEpoch::asks`]; 0:
    /// open-ended).
    served: u64,
    asks: u64,
    /// The stream failed at this position (with this message): the pass's
    /// later positions fail at once instead of reopening it, each.
    failed: Option<(usize, String)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl IterableDataset {
    /// `source` as a dataset: its length given or counted (by reading one
    /// stream through: one epoch's reading), its buffer checked.
    pub fn new(source: Arc<dyn Iterable>, options: StreamOptions) -> Result<Self, DataError> {
        if options.buffer == 0 || options.buffer > StreamOptions::MAX_BUFFER {
            return Err(DataError::Invalid {
                what: alloc::format!(
                    "a shuffle buffer of {} samples (1 to {})",
                    options.buffer,
                    StreamOptions::MAX_BUFFER
                ),
            });
        }
        let len = match options.samples {
            Some(n) => n,
            None if source.reads_once() => {
                return Err(DataError::LengthNeeded {
                    stream: source.describe(),
                });
            }
            None => {
                let mut stream = source.open(0)?;
                let mut sample = Sample::default();
                let mut n = 0usize;
                while stream.next(&mut sample)? {
                    check_size(&*source, n as u64, &sample)?;
                    n += 1;
                }
                n
            }
        };
        Ok(IterableDataset {
            source,
            len,
            buffer: options.buffer,
            max_buffer_bytes: options.max_buffer_bytes.unwrap_or(u64::MAX),
            cursors: Mutex::new(Cursors {
                open: Vec::new(),
                clock: 0,
                ended: Vec::new(),
            }),
            spare: Mutex::new(Vec::new()),
        })
    }

    /// The shuffle buffer's size in samples.
    pub fn buffer(&self) -> usize {
        self.buffer
    }
}

/// A stream's sample past [`MAX_SAMPLE_BYTES`] is an error naming it.
fn check_size(source: &dyn Iterable, item: u64, sample: &Sample) -> Result<(), DataError> {
    let bytes = sample.bytes.len() as u64;
    if bytes > MAX_SAMPLE_BYTES {
        return Err(DataError::Invalid {
            what: alloc::format!(
                "{}: stream sample {item} is {bytes} bytes (more than {MAX_SAMPLE_BYTES})",
                source.describe()
            ),
        });
    }
    Ok(())
}

impl IterableDataset {
    /// The stream's next sample into `sample`: `false` at its end; an error
    /// once the cursor's run has ended.
    fn pull(&self, c: &mut Cursor, sample: &mut Sample) -> Result<bool, DataError> {
        if c.ended {
            return Ok(false);
        }
        if c.cancelled.load(Ordering::SeqCst) {
            return Err(self.stopped(c.read));
        }
        sample.content = Content::Encoded;
        if !c.stream.next(sample)? {
            c.ended = true;
            return Ok(false);
        }
        check_size(&*self.source, c.read, sample)?;
        sample.id = c.read;
        c.read += 1;
        Ok(true)
    }

    /// The error of a read whose loader stopped.
    fn stopped(&self, item: u64) -> DataError {
        DataError::Invalid {
            what: alloc::format!(
                "{} at stream sample {item}: the loader reading it stopped",
                self.source.describe()
            ),
        }
    }

    /// The pass's next position into `out` (its samples' buffers recycled
    /// through the buffer).
    fn advance(&self, c: &mut Cursor, pass: &ReadEpoch, out: &mut Sample) -> Result<(), DataError> {
        let position = c.next;
        let ended = |c: &Cursor| DataError::StreamEnded {
            stream: self.source.describe(),
            position: position as u64,
            samples: c.read,
            epoch_len: self.len as u64,
        };
        if !pass.shuffle {
            if !self.pull(c, out)? {
                return Err(ended(c));
            }
            c.next += 1;
            return Ok(());
        }
        // Fill (at the start; after it, each hand-out refills its slot).
        while c.filled < self.buffer && !c.ended {
            if c.slots.len() == c.filled {
                let slot = c.spare.pop().unwrap_or_default();
                c.slots.push(slot);
            }
            let mut slot = core::mem::take(&mut c.slots[c.filled]);
            let got = self.pull(c, &mut slot);
            c.slots[c.filled] = slot;
            if !got? {
                break;
            }
            c.held += c.slots[c.filled].bytes.len() as u64;
            c.filled += 1;
            self.check_held(c, position)?;
        }
        if c.filled == 0 {
            return Err(ended(c));
        }
        let key = SampleKey::new(pass.seed, pass.epoch, position as u64);
        let at = Draws::new(key, BUFFER_DRAW).below(c.filled as u32) as usize;
        core::mem::swap(out, &mut c.slots[at]);
        c.held -= out.bytes.len() as u64;
        // The slot now holds `out`'s old buffers: the stream's next sample
        // goes there, or (at its end) the buffer's last takes its place.
        let mut slot = core::mem::take(&mut c.slots[at]);
        let got = self.pull(c, &mut slot);
        c.slots[at] = slot;
        if got? {
            c.held += c.slots[at].bytes.len() as u64;
            self.check_held(c, position)?;
        } else {
            c.filled -= 1;
            c.slots.swap(at, c.filled);
        }
        c.next += 1;
        Ok(())
    }

    fn check_held(&self, c: &Cursor, position: usize) -> Result<(), DataError> {
        if c.held > self.max_buffer_bytes {
            return Err(DataError::Invalid {
                what: alloc::format!(
                    "{} position {position}: the shuffle buffer holds {} bytes, more than its cap of {}",
                    self.source.describe(),
                    c.held,
                    self.max_buffer_bytes
                ),
            });
        }
        Ok(())
    }

    /// `pass`'s cursor, found or made (not opened) under the dataset's
    /// lock; an error when its run has ended.
    fn place(&self, pass: &ReadEpoch) -> Result<Arc<Place>, DataError> {
        let mut all = lock(&self.cursors);
        if pass.run != 0 && all.ended.contains(&pass.run) {
            return Err(self.stopped(0));
        }
        all.clock += 1;
        let clock = all.clock;
        if let Some(e) = all.open.iter_mut().find(|e| e.pass == *pass) {
            e.used = clock;
            return Ok(Arc::clone(&e.place));
        }
        // Closed once the lock is given back (its stream's drop may wait
        // for a thread); one in use is read on by its reader, dropped after.
        let mut evicted = None;
        if all.open.len() >= MAX_CURSORS {
            let oldest = (0..all.open.len())
                .min_by_key(|&i| all.open[i].used)
                .expect("cursors are open");
            evicted = Some(all.open.swap_remove(oldest));
        }
        let place = Arc::new(Place {
            cursor: Mutex::new(None),
            cancelled: Arc::new(AtomicBool::new(false)),
            interrupter: Mutex::new(None),
        });
        all.open.push(Entry {
            pass: *pass,
            used: clock,
            place: Arc::clone(&place),
        });
        drop(all);
        if let Some(e) = evicted
            && let Ok(mut slot) = e.place.cursor.try_lock()
        {
            self.recycle(slot.take());
        }
        Ok(place)
    }

    /// Position `index` of `pass` into `sample`, with its cursor locked.
    fn read_at(
        &self,
        place: &Place,
        slot: &mut Option<Cursor>,
        pass: &ReadEpoch,
        index: usize,
        sample: &mut Sample,
    ) -> Result<(), DataError> {
        if let Some(c) = slot.as_mut() {
            // Parked on the way to a later position.
            if let Some(p) = c.parked.iter().position(|(i, _)| *i == index) {
                let (_, mut parked) = c.parked.swap_remove(p);
                core::mem::swap(sample, &mut parked);
                c.spare.push(parked);
                c.served += 1;
                return Ok(());
            }
            // Past where the pass's stream failed: that error, at once (the
            // loader's read threads go on until the consumer sees the first).
            if let Some((failed_at, message)) = &c.failed
                && index >= c.next
            {
                let error = DataError::Invalid {
                    what: alloc::format!(
                        "{} position {index}: the stream failed before it, at position {failed_at}: {message}",
                        self.source.describe()
                    ),
                };
                c.served += 1;
                return Err(error);
            }
            // Behind its cursor (a position asked twice): reopen.
            if c.next > index {
                self.recycle(slot.take());
            }
        }
        if place.cancelled.load(Ordering::SeqCst) {
            return Err(self.stopped(0));
        }
        let c = match slot {
            Some(c) => c,
            None => {
                let stream = self.source.open(pass.epoch)?;
                if let Some(wake) = stream.interrupter() {
                    *lock(&place.interrupter) = Some(Arc::clone(&wake));
                    // Ended while opening: the wake would have been missed.
                    if place.cancelled.load(Ordering::SeqCst) {
                        wake();
                    }
                }
                let mut spare = core::mem::take(&mut *lock(&self.spare));
                let mut slots = Vec::with_capacity(self.buffer.min(PRESIZED));
                slots.extend(spare.drain(spare.len().saturating_sub(self.buffer)..));
                slot.insert(Cursor {
                    stream,
                    cancelled: Arc::clone(&place.cancelled),
                    read: 0,
                    ended: false,
                    slots,
                    filled: 0,
                    held: 0,
                    next: 0,
                    parked: Vec::with_capacity(PRESIZED),
                    spare,
                    served: 0,
                    asks: pass.asks(self.len),
                    failed: None,
                })
            }
        };
        let mut run = || -> Result<(), DataError> {
            while c.next < index {
                let position = c.next;
                let mut passed = c.spare.pop().unwrap_or_default();
                let done = self.advance(c, pass, &mut passed);
                if done.is_ok() && pass.reads(position, self.len) {
                    c.parked.push((position, passed));
                } else {
                    c.spare.push(passed);
                }
                done?;
            }
            self.advance(c, pass, sample)
        };
        match run() {
            Ok(()) => {
                c.served += 1;
                Ok(())
            }
            Err(e) if c.asks > 0 => {
                // The stream's state is unknown: it is not read further in
                // this pass.
                c.failed = Some((c.next, alloc::string::ToString::to_string(&e)));
                c.served += 1;
                Err(e)
            }
            Err(e) => {
                // Read by index: the next read reopens the stream.
                self.recycle(slot.take());
                Err(e)
            }
        }
    }

    /// Keeps a closed cursor's samples' buffers for the next (as many as an
    /// open buffer and the loader's read-ahead use).
    fn recycle(&self, cursor: Option<Cursor>) {
        let Some(c) = cursor else {
            return;
        };
        let keep = self.buffer.saturating_add(64);
        let mut spare = lock(&self.spare);
        let recycled = c
            .slots
            .into_iter()
            .chain(c.parked.into_iter().map(|(_, s)| s))
            .chain(c.spare);
        for s in recycled {
            if spare.len() >= keep {
                break;
            }
            spare.push(s);
        }
        drop(spare);
        // The stream (a thread reading a pipe, say) is dropped here, with
        // no lock but the cursor's held.
        drop(c.stream);
    }

    /// Drops `place`'s entry (a pass done, a run ended).
    fn forget(&self, place: &Arc<Place>) {
        let mut all = lock(&self.cursors);
        if let Some(at) = all.open.iter().position(|e| Arc::ptr_eq(&e.place, place)) {
            all.open.swap_remove(at);
        }
    }
}

impl Dataset for IterableDataset {
    fn len(&self) -> usize {
        self.len
    }

    /// Position `index` of the stream's own order: reads in increasing
    /// order move one cursor on; a read behind the last reopens the stream.
    fn read(&self, index: usize, sample: &mut Sample) -> Result<(), DataError> {
        self.read_in(&ReadEpoch::BY_INDEX, index, sample)
    }

    fn read_in(
        &self,
        pass: &ReadEpoch,
        index: usize,
        sample: &mut Sample,
    ) -> Result<(), DataError> {
        DataError::check_index(index, self.len)?;
        let place = self.place(pass)?;
        let mut slot = lock(&place.cursor);
        let result = self.read_at(&place, &mut slot, pass, index, sample);
        // Closed once its pass has had every position it asks of this
        // stream (`c.asks`: a part of a concatenation is asked only its
        // part's; an open-ended pass, [`ReadEpoch::BY_INDEX`], stays open),
        // or its run has ended.
        let done = slot
            .as_ref()
            .is_some_and(|c| c.asks > 0 && c.served >= c.asks);
        if done || place.cancelled.load(Ordering::SeqCst) {
            self.recycle(slot.take());
            drop(slot);
            self.forget(&place);
        }
        result
    }

    /// Drops the run's cursors; a read of it in progress stops at the
    /// stream's next sample, a stream blocked waiting is woken.
    fn end_run(&self, run: u64) {
        let mut all = lock(&self.cursors);
        if all.ended.len() >= ENDED_RUNS {
            all.ended.remove(0);
        }
        all.ended.push(run);
        let mut ended = Vec::new();
        all.open.retain(|e| {
            let of_run = e.pass.run == run;
            if of_run {
                ended.push(Arc::clone(&e.place));
            }
            !of_run
        });
        drop(all);
        for place in ended {
            place.cancelled.store(true, Ordering::SeqCst);
            let wake = lock(&place.interrupter).clone();
            if let Some(wake) = wake {
                wake();
            }
            // Not in use: closed now (in use: by its reader, on return).
            if let Ok(mut slot) = place.cursor.try_lock() {
                self.recycle(slot.take());
            }
        }
    }

    fn orders_itself(&self) -> bool {
        true
    }

    fn describe(&self, index: usize) -> String {
        alloc::format!("{} position {index}", self.source.describe())
    }

    /// The source's, the length and the buffer (another buffer gives
    /// another order).
    fn fingerprint(&self) -> u64 {
        super::fingerprint_of(
            "stream",
            [
                self.source.fingerprint(),
                self.len as u64,
                self.buffer as u64,
            ]
            .into_iter(),
        )
    }
}
