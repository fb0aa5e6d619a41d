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
//! (stream, buffer, next position) per pass under a lock, and keeps back
//! the samples a pass will ask for that it passes on the way to a later
//! one (at most the loader's read-ahead). Every shard runs the same stream
//! and buffer and takes its positions of the epoch (`r + n * j`), so the
//! shards are disjoint and a resume with another shard count is exact; the
//! cost: each shard reads every sample's bytes (it decodes only its own). A
//! resumed epoch reopens the stream and replays the buffer's draws up to
//! the position (reading the samples before it, not decoding them): exact,
//! at the cost of reading that part of the epoch again.
//!
//! Read by index ([`Dataset::read`], a dataset inside a
//! [combination](super::combine)), a stream gives its own order, each step
//! backwards reopening it: give the loader the stream itself.

#![forbid(unsafe_code)]

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use std::sync::{Mutex, PoisonError};

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
const MAX_CURSORS: usize = 4;

/// A stream of samples, read front to back.
///
/// A closure filling a sample and returning `Ok(false)` at the end is one.
pub trait SampleStream: Send {
    /// Reads the next sample into `sample` (reusing its buffers; its
    /// [`content`](Sample::content) is [`Content::Encoded`] unless set):
    /// `Ok(false)` at the stream's end.
    fn next(&mut self, sample: &mut Sample) -> Result<bool, DataError>;
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

/// The open passes and the samples they no longer need.
struct Cursors {
    open: Vec<Cursor>,
    /// Recycled samples (of cursors closed, of positions handed out).
    spare: Vec<Sample>,
    /// Uses so far (the least recently used cursor is closed first).
    clock: u64,
}

/// One pass's place in its stream.
struct Cursor {
    pass: ReadEpoch,
    stream: Box<dyn SampleStream>,
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
    /// Positions handed out.
    served: u64,
    used: u64,
    /// The stream failed at this position (with this message): the pass's
    /// later positions fail at once instead of reopening it, each.
    failed: Option<(usize, String)>,
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
                spare: Vec::new(),
                clock: 0,
            }),
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
    /// The stream's next sample into `sample`: `false` at its end.
    fn pull(&self, c: &mut Cursor, sample: &mut Sample) -> Result<bool, DataError> {
        if c.ended {
            return Ok(false);
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

    /// The pass's next position into `out` (its samples' buffers recycled
    /// through the buffer).
    fn advance(
        &self,
        c: &mut Cursor,
        spare: &mut Vec<Sample>,
        out: &mut Sample,
    ) -> Result<(), DataError> {
        let position = c.next;
        let ended = |c: &Cursor| DataError::StreamEnded {
            stream: self.source.describe(),
            position: position as u64,
            samples: c.read,
            epoch_len: self.len as u64,
        };
        if !c.pass.shuffle {
            if !self.pull(c, out)? {
                return Err(ended(c));
            }
            c.next += 1;
            return Ok(());
        }
        // Fill (at the start; after it, each hand-out refills its slot).
        while c.filled < self.buffer && !c.ended {
            if c.slots.len() == c.filled {
                c.slots.push(spare.pop().unwrap_or_default());
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
        let key = SampleKey::new(c.pass.seed, c.pass.epoch, position as u64);
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

    /// Position `index` of `pass` into `sample`, with the cursors locked.
    fn read_locked(
        &self,
        all: &mut Cursors,
        pass: &ReadEpoch,
        index: usize,
        sample: &mut Sample,
    ) -> Result<(), DataError> {
        all.clock += 1;
        let clock = all.clock;
        let found = all.open.iter().position(|c| c.pass == *pass);
        // Parked on the way to a later position.
        if let Some(at) = found {
            let c = &mut all.open[at];
            if let Some(p) = c.parked.iter().position(|(i, _)| *i == index) {
                let (_, mut parked) = c.parked.swap_remove(p);
                core::mem::swap(sample, &mut parked);
                all.spare.push(parked);
                c.served += 1;
                c.used = clock;
                self.close_if_done(all, at);
                return Ok(());
            }
        }
        // Past where the pass's stream failed: that error, at once (the
        // loader's read threads go on until the consumer sees the first).
        if let Some(at) = found
            && let Some((failed_at, message)) = &all.open[at].failed
            && index >= all.open[at].next
        {
            let error = DataError::Invalid {
                what: alloc::format!(
                    "{} position {index}: the stream failed before it, at position {failed_at}: {message}",
                    self.source.describe()
                ),
            };
            all.open[at].served += 1;
            self.close_if_done(all, at);
            return Err(error);
        }
        // Behind its cursor (a position asked twice, a cursor closed for
        // room): reopen.
        let at = match found {
            Some(at) if all.open[at].next <= index => at,
            stale => {
                if let Some(at) = stale {
                    self.close(all, at);
                }
                if all.open.len() >= MAX_CURSORS {
                    let oldest = (0..all.open.len())
                        .min_by_key(|&i| all.open[i].used)
                        .expect("cursors are open");
                    self.close(all, oldest);
                }
                let stream = self.source.open(pass.epoch)?;
                all.open.push(Cursor {
                    pass: *pass,
                    stream,
                    read: 0,
                    ended: false,
                    slots: Vec::with_capacity(self.buffer.min(PRESIZED)),
                    filled: 0,
                    held: 0,
                    next: 0,
                    parked: Vec::with_capacity(PRESIZED),
                    served: 0,
                    used: clock,
                    failed: None,
                });
                all.open.len() - 1
            }
        };
        let Cursors { open, spare, .. } = all;
        let c = &mut open[at];
        c.used = clock;
        let mut run = || -> Result<(), DataError> {
            while c.next < index {
                let position = c.next;
                let mut passed = spare.pop().unwrap_or_default();
                let done = self.advance(c, spare, &mut passed);
                if done.is_ok() && c.pass.reads(position, self.len) {
                    c.parked.push((position, passed));
                } else {
                    spare.push(passed);
                }
                done?;
            }
            self.advance(c, spare, sample)
        };
        match run() {
            Ok(()) => {
                c.served += 1;
                self.close_if_done(all, at);
                Ok(())
            }
            Err(e) if c.pass.reads_count() > 0 => {
                // The stream's state is unknown: it is not read further in
                // this pass.
                c.failed = Some((c.next, alloc::string::ToString::to_string(&e)));
                c.served += 1;
                self.close_if_done(all, at);
                Err(e)
            }
            Err(e) => {
                // Read by index: the next read reopens the stream.
                self.close(all, at);
                Err(e)
            }
        }
    }

    /// Closes cursor `at` once its pass has had every position it asks for
    /// (an open-ended pass, [`ReadEpoch::BY_INDEX`], stays open).
    fn close_if_done(&self, all: &mut Cursors, at: usize) {
        let asks = all.open[at].pass.reads_count();
        if asks > 0 && all.open[at].served >= asks {
            self.close(all, at);
        }
    }

    /// Closes cursor `at`, keeping its samples' buffers for others (as
    /// many as an open buffer and the loader's read-ahead use).
    fn close(&self, all: &mut Cursors, at: usize) {
        let c = all.open.swap_remove(at);
        let keep = self.buffer.saturating_add(64);
        let recycled = c
            .slots
            .into_iter()
            .chain(c.parked.into_iter().map(|(_, s)| s));
        for s in recycled {
            if all.spare.len() < keep {
                all.spare.push(s);
            }
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
        if index >= self.len {
            return Err(DataError::OutOfRange {
                index,
                len: self.len,
            });
        }
        let mut all = self.cursors.lock().unwrap_or_else(PoisonError::into_inner);
        self.read_locked(&mut all, pass, index, sample)
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
