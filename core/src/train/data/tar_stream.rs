//! A WebDataset tar read front to back, with no seeking: standard input, a
//! pipe, a FIFO, or a file read as one ([`TarStream`], an [`Iterable`]).
//!
//! Members are grouped into samples as [`WebDataset`](super::webdataset::WebDataset)
//! groups them (the same walk over the headers, the same keys, caps and
//! label rule): consecutive members sharing a key are a sample, its image
//! the member of the most preferred image extension, its label the text of
//! the label member. The first sample decides whether samples have labels:
//! a later one that differs is an error naming it.
//!
//! The tar is read on a thread of its own (`tp-tar-stream`), a sample or
//! two ahead of the reader, its samples' buffers recycled; the thread also
//! opens the path, so [`Iterable::open`] never blocks. Each epoch opens the
//! path again: a FIFO waits for its writer, which writes the tar once per
//! epoch; the epochs' readers of one FIFO take turns in the order they were
//! opened (two readers of one pipe would each get part of its bytes), and
//! a reader that read its tar to the end hands the open FIFO on to the
//! next epoch's, which reads past the tar's zero padding to the next tar,
//! or opens the FIFO again once the writer has closed it (with the first
//! end still open: no byte is lost). So a writer may write the tar once per
//! epoch, reopening the FIFO each time, or write it again and again through
//! one opening. An epoch cut before the tar's end (fewer samples than the
//! tar holds) closes the FIFO: the next epoch opens it anew.
//! Standard input (`-`) can be read once: it serves one epoch. Its length,
//! and a FIFO's, must be given ([`DataError::LengthNeeded`] otherwise when
//! the dataset is made): counting would consume the tar its writer writes
//! (a one-shot writer's only one, and epoch 0 would then wait for another).
//!
//! A loader that stops wakes the thread waiting for its turn or for a
//! FIFO's writer ([`SampleStream::interrupter`]); a stopped stream's
//! `next` returns within 50 ms. A thread blocked reading a pipe whose
//! writer neither writes nor closes cannot be woken: the stream's drop
//! waits for it 1 s, then leaves it to end when the pipe yields (it holds
//! no dataset, only its channel and the FIFO's turn), so a drop is bounded.

#![forbid(unsafe_code)]

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::tar_members::{self, FORMAT, Role};
use super::webdataset::WebKeys;
use super::{Content, DataError, Interrupter, Iterable, Sample, SampleStream};

/// A tar read front to back as a stream of WebDataset samples.
///
/// ```no_run
/// use std::sync::Arc;
/// use tensorprep::train::data::tar_stream::TarStream;
/// use tensorprep::train::data::webdataset::WebKeys;
/// use tensorprep::train::data::{IterableDataset, StreamOptions};
///
/// // `tar c ... | train` : 10,000 samples from standard input, buffer of 1,000.
/// let stream = TarStream::new("-", WebKeys::CONVENTIONAL);
/// let data = IterableDataset::new(Arc::new(stream), StreamOptions::new(Some(10_000)))?;
/// # Ok::<(), tensorprep::train::data::DataError>(())
/// ```
#[derive(Debug)]
pub struct TarStream {
    path: PathBuf,
    image: Vec<String>,
    label: String,
    /// Standard input was opened (it can be read once).
    stdin_taken: AtomicBool,
    /// The turns of a FIFO's readers.
    turns: Arc<Turns>,
}

/// Readers of one FIFO, one at a time in the order they were opened: the
/// ticket `serving` reads; `done` holds later tickets already finished.
#[derive(Default)]
struct Turns {
    state: Mutex<TurnState>,
    changed: Condvar,
    /// The FIFO's reader after a whole tar, kept open for the next epoch
    /// (the pipe, and what its writer wrote since, stays).
    kept: Mutex<Option<Reader>>,
}

impl core::fmt::Debug for Turns {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Turns").field("state", &self.state).finish()
    }
}

/// The tar's bytes, buffered.
type Reader = Box<dyn BufRead + Send>;

/// How a reading thread's tar ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Read to its end-of-archive marker.
    Whole,
    /// Its receiver was gone (the epoch had its samples).
    Cut,
    /// Interrupted.
    Stopped,
}

#[derive(Debug, Default)]
struct TurnState {
    next: u64,
    serving: u64,
    done: Vec<u64>,
}

impl Turns {
    fn ticket(&self) -> u64 {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.next += 1;
        s.next - 1
    }

    /// Waits for `ticket`'s turn: `false` when interrupted first.
    fn wait(&self, ticket: u64, interrupted: &AtomicBool) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while s.serving != ticket {
            if interrupted.load(Ordering::SeqCst) {
                return false;
            }
            s = self.changed.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        true
    }

    /// `ticket` is done (read, failed or interrupted): the next may read.
    fn finish(&self, ticket: u64) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.done.push(ticket);
        while let Some(at) = s.done.iter().position(|&t| t == s.serving) {
            s.done.swap_remove(at);
            s.serving += 1;
        }
        drop(s);
        self.changed.notify_all();
    }
}

/// A turn given back when its thread ends, however it ends.
struct Turn<'a>(&'a Turns, u64);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.finish(self.1);
    }
}

/// What the reading thread and whoever stops it share.
#[derive(Debug)]
struct Stop {
    interrupted: AtomicBool,
    /// The thread is opening the path (a FIFO: waiting for its writer).
    opening: AtomicBool,
    /// The thread has opened the path and reads it.
    reading: AtomicBool,
}

/// Whether `path` is a FIFO (its readers then take turns; a reader waiting
/// to open it is woken by opening its other end).
fn is_fifo(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Wakes a reader blocked opening the FIFO at `path`: its other end opened
/// without blocking (an error, ignored, when no reader waits) and closed at
/// once, writing nothing.
fn wake_fifo_reader(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path);
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// What the reading thread hands over.
enum Message {
    Sample(Sample),
    End,
    Failed(DataError),
}

impl TarStream {
    /// The tar at `path` (`-`: standard input), grouped by `keys`. Nothing
    /// is opened before the first epoch.
    pub fn new(path: impl AsRef<Path>, keys: WebKeys<'_>) -> TarStream {
        TarStream {
            path: path.as_ref().to_path_buf(),
            image: keys.image.iter().map(|s| s.to_string()).collect(),
            label: keys.label.to_string(),
            stdin_taken: AtomicBool::new(false),
            turns: Arc::default(),
        }
    }

    fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }
}

/// How the reading thread gets its bytes.
enum Source {
    Stdin,
    /// A path (its ticket when it is a FIFO).
    Path(PathBuf, Option<u64>),
}

impl Source {
    /// The reader, once the thread's turn has come (a FIFO's: the last
    /// epoch's, past its tar); `Ok(None)` when interrupted first.
    fn open(self, turns: &Turns, stop: &Stop) -> Result<Option<Reader>, DataError> {
        let buffered = |file| -> Reader { Box::new(BufReader::with_capacity(1 << 16, file)) };
        match self {
            Source::Stdin => Ok(Some(buffered(
                Box::new(std::io::stdin()) as Box<dyn Read + Send>
            ))),
            Source::Path(path, Some(ticket)) => {
                if !turns.wait(ticket, &stop.interrupted) {
                    return Ok(None);
                }
                let kept = turns
                    .kept
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                match kept {
                    Some(reader) => next_tar(reader, &path, stop),
                    None => Ok(open_path(&path, stop)?.map(|f| buffered(Box::new(f)))),
                }
            }
            Source::Path(path, None) => Ok(open_path(&path, stop)?.map(|f| buffered(Box::new(f)))),
        }
    }
}

/// `path` opened (a FIFO: once a writer has opened it); `Ok(None)` when
/// interrupted first.
fn open_path(path: &Path, stop: &Stop) -> Result<Option<std::fs::File>, DataError> {
    stop.opening.store(true, Ordering::SeqCst);
    if stop.interrupted.load(Ordering::SeqCst) {
        stop.opening.store(false, Ordering::SeqCst);
        return Ok(None);
    }
    // Not `open_file`: a FIFO or a character device is a stream too.
    let file = std::fs::File::open(path);
    stop.opening.store(false, Ordering::SeqCst);
    let file = file.map_err(|e| DataError::io(path, e))?;
    if stop.interrupted.load(Ordering::SeqCst) {
        return Ok(None);
    }
    Ok(Some(file))
}

/// A FIFO's reader kept after the last epoch's tar, moved past that tar's
/// zero padding to the next tar's first byte. When the writer has closed
/// (the end of the pipe's bytes), the FIFO is opened again for the next
/// writer while the kept end is still open (so no byte is lost between).
fn next_tar(mut reader: Reader, path: &Path, stop: &Stop) -> Result<Option<Reader>, DataError> {
    loop {
        if stop.interrupted.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let bytes = reader.fill_buf().map_err(|e| DataError::io(path, e))?;
        if bytes.is_empty() {
            let Some(file) = open_path(path, stop)? else {
                return Ok(None);
            };
            reader = Box::new(BufReader::with_capacity(1 << 16, file));
            continue;
        }
        let zeros = bytes.iter().take_while(|&&b| b == 0).count();
        let found = zeros < bytes.len();
        reader.consume(zeros);
        if found {
            return Ok(Some(reader));
        }
    }
}

impl Iterable for TarStream {
    fn open(&self, _epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
        let source = if self.is_stdin() {
            if self.stdin_taken.swap(true, Ordering::SeqCst) {
                return Err(DataError::Invalid {
                    what: "standard input holds one tar: it serves one epoch".into(),
                });
            }
            Source::Stdin
        } else {
            let fifo = is_fifo(&self.path);
            Source::Path(self.path.clone(), fifo.then(|| self.turns.ticket()))
        };
        let ticket = match source {
            Source::Path(_, t) => t,
            Source::Stdin => None,
        };
        let stop = Arc::new(Stop {
            interrupted: AtomicBool::new(false),
            opening: AtomicBool::new(false),
            reading: AtomicBool::new(false),
        });
        let (tx, rx) = sync_channel(2);
        let (back, recycled) = channel();
        let (path, image, label) = (self.path.clone(), self.image.clone(), self.label.clone());
        let (turns, thread_stop) = (Arc::clone(&self.turns), Arc::clone(&stop));
        let fifo = ticket.is_some();
        let spawned = std::thread::Builder::new()
            .name("tp-tar-stream".into())
            .spawn(move || {
                let _turn = ticket.map(|t| Turn(&turns, t));
                let image: Vec<&str> = image.iter().map(String::as_str).collect();
                let keys = WebKeys {
                    image: &image,
                    label: &label,
                };
                let read = source.open(&turns, &thread_stop).and_then(|reader| {
                    let Some(mut reader) = reader else {
                        return Ok(Ended::Stopped);
                    };
                    thread_stop.reading.store(true, Ordering::SeqCst);
                    let (tx, recycled, stop) = (&tx, &recycled, &*thread_stop);
                    let ended = read_samples(&mut reader, &path, keys, tx, recycled, stop, fifo);
                    // A FIFO read to its tar's end: the next epoch reads on.
                    if fifo && matches!(ended, Ok(Ended::Whole)) {
                        *turns.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(reader);
                    }
                    ended
                });
                let end = match read {
                    Ok(Ended::Whole | Ended::Cut) => Message::End,
                    Ok(Ended::Stopped) => Message::Failed(interrupted(&path)),
                    Err(e) => Message::Failed(e),
                };
                let _ = tx.send(end);
            });
        let thread = match spawned {
            Ok(t) => t,
            Err(e) => {
                if let Some(t) = ticket {
                    self.turns.finish(t);
                }
                return Err(DataError::io(&self.path, e));
            }
        };
        Ok(Box::new(Receiving {
            samples: Some(rx),
            back,
            thread: Some(thread),
            path: self.path.clone(),
            stop,
            turns: Arc::clone(&self.turns),
            turns_fifo: ticket.is_some(),
        }))
    }

    /// Standard input or a FIFO: counting its samples would consume them.
    fn reads_once(&self) -> bool {
        self.is_stdin() || is_fifo(&self.path)
    }

    fn describe(&self) -> String {
        alloc::format!("tar stream {}", self.path.display())
    }

    /// The keys and the file's name; of a regular file also its size,
    /// modification time and first 4 KiB (a FIFO's or standard input's
    /// bytes cannot be read ahead: their name alone).
    fn fingerprint(&self) -> u64 {
        let mut h = crate::Fnv1a64::new();
        h.update(b"tar stream");
        if let Some(name) = self.path.file_name() {
            h.update(name.as_encoded_bytes());
        }
        for k in self.image.iter().chain([&self.label]) {
            h.update(&[0]);
            h.update(k.as_bytes());
        }
        let file = std::fs::metadata(&self.path).ok().filter(|m| m.is_file());
        if let Some(m) = file {
            h.update(&m.len().to_le_bytes());
            let since = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            h.update(&since.map_or(0, |d| d.as_nanos()).to_le_bytes());
            let mut head = [0u8; 4096];
            if let Ok(f) = std::fs::File::open(&self.path) {
                let mut n = 0;
                let mut f = f.take(head.len() as u64);
                while let Ok(got @ 1..) = f.read(&mut head[n..]) {
                    n += got;
                }
                h.update(&head[..n]);
            }
        }
        h.finish()
    }
}

/// The sample being gathered: its key, its image's rank, whether it has a
/// label, and where its first member starts (for messages).
struct Gathering {
    key: String,
    sample: Sample,
    image: Option<usize>,
    labelled: bool,
    offset: u64,
}

/// The error of a stream whose loader stopped it.
fn interrupted(path: &Path) -> DataError {
    DataError::Invalid {
        what: alloc::format!(
            "tar stream {}: stopped (the loader reading it stopped)",
            path.display()
        ),
    }
}

/// Reads the tar's samples and sends each, up to its end-of-archive marker
/// (no further: a FIFO's next tar may follow). Once the receiver is gone,
/// `drain` (a FIFO) reads on to that marker, sending nothing, so the FIFO is
/// handed on at the next tar.
fn read_samples(
    reader: &mut Reader,
    path: &Path,
    keys: WebKeys<'_>,
    tx: &SyncSender<Message>,
    recycled: &Receiver<Sample>,
    stop: &Stop,
    drain: bool,
) -> Result<Ended, DataError> {
    let mut archive = tar::Archive::new(reader);
    let entries = archive
        .entries()
        .map_err(|e| DataError::io(path, e))?
        .raw(true);
    let mut current: Option<Gathering> = None;
    // Whether samples have labels: the first sample decides.
    let mut labelled: Option<bool> = None;
    let mut gone = false;
    let mut finish = |g: Gathering, gone: &mut bool| -> Result<(), DataError> {
        let bad = |what: String| DataError::corrupt(FORMAT, path, g.offset, what);
        if g.image.is_none() {
            return Err(bad(alloc::format!(
                "sample `{}` has no image member",
                g.key
            )));
        }
        if *labelled.get_or_insert(g.labelled) != g.labelled {
            return Err(bad(alloc::format!(
                "sample `{}` {} a `.{}` label, unlike the first sample",
                g.key,
                if g.labelled { "has" } else { "has no" },
                keys.label
            )));
        }
        *gone = tx.send(Message::Sample(g.sample)).is_err();
        Ok(())
    };
    let mut stopped = false;
    tar_members::walk(entries, path, None, |m, entry| {
        if stop.interrupted.load(Ordering::SeqCst) {
            stopped = true;
            return Ok(false);
        }
        if gone {
            // Draining a FIFO's tar (members skipped, not read).
            return Ok(true);
        }
        let Some((key, role)) = tar_members::role(&m, keys, path)? else {
            return Ok(true);
        };
        if current.as_ref().is_none_or(|c| c.key != key) {
            if let Some(done) = current.take() {
                finish(done, &mut gone)?;
                if gone {
                    return Ok(drain);
                }
            }
            let mut sample = recycled.try_recv().unwrap_or_default();
            sample.labels.clear();
            sample.content = Content::Encoded;
            current = Some(Gathering {
                key: key.to_string(),
                sample,
                image: None,
                labelled: false,
                offset: m.offset,
            });
        }
        let c = current.as_mut().expect("set above");
        let bad = |what: &str| {
            DataError::corrupt(
                FORMAT,
                path,
                m.offset,
                alloc::format!("sample `{}`: {what}", c.key),
            )
        };
        match role {
            Role::Image(rank) if c.image.is_none_or(|r| rank < r) => {
                // The size is within MAX_MEMBER_BYTES (`role` checked it).
                let out = &mut c.sample.bytes;
                out.clear();
                out.try_reserve(m.size as usize)
                    .map_err(|_| bad("no memory for the image"))?;
                entry
                    .take(m.size)
                    .read_to_end(out)
                    .map_err(|e| DataError::io(path, e))?;
                if out.len() as u64 != m.size {
                    return Err(bad("the stream ends inside the image"));
                }
                c.image = Some(rank);
            }
            Role::Label => {
                let mut text = [0u8; tar_members::MAX_LABEL_BYTES];
                let n = usize::try_from(m.size).ok().filter(|&n| n <= text.len());
                let n = n.ok_or_else(|| bad(tar_members::LABEL_TOO_LONG))?;
                entry
                    .read_exact(&mut text[..n])
                    .map_err(|e| DataError::io(path, e))?;
                let value = tar_members::label_of(&text[..n]).map_err(bad)?;
                c.sample.labels.clear();
                c.sample.labels.push(value);
                c.labelled = true;
            }
            Role::Image(_) | Role::Other => {}
        }
        Ok(true)
    })?;
    if stopped {
        return Ok(Ended::Stopped);
    }
    match current {
        Some(last) if !gone => finish(last, &mut gone)?,
        _ => {}
    }
    Ok(if gone && !drain {
        Ended::Cut
    } else {
        Ended::Whole
    })
}

/// The stream's end of the channel: samples in, buffers back.
struct Receiving {
    samples: Option<Receiver<Message>>,
    back: Sender<Sample>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
    stop: Arc<Stop>,
    turns: Arc<Turns>,
    /// The path is a FIFO (its readers take turns).
    turns_fifo: bool,
}

impl SampleStream for Receiving {
    fn next(&mut self, sample: &mut Sample) -> Result<bool, DataError> {
        let Some(samples) = &self.samples else {
            return Ok(false);
        };
        // Not a plain `recv`: a thread blocked reading a stalled pipe would
        // hold a stopped loader's reader here.
        let got = loop {
            match samples.recv_timeout(WAKE_EVERY * 50) {
                Ok(m) => break Ok(m),
                Err(RecvTimeoutError::Timeout) if self.stop.interrupted.load(Ordering::SeqCst) => {
                    self.samples = None;
                    return Err(interrupted(&self.path));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break Err(()),
            }
        };
        match got {
            Ok(Message::Sample(mut s)) => {
                core::mem::swap(sample, &mut s);
                let _ = self.back.send(s);
                Ok(true)
            }
            Ok(Message::End) => {
                self.samples = None;
                Ok(false)
            }
            Ok(Message::Failed(e)) => {
                self.samples = None;
                Err(e)
            }
            Err(_) => Err(DataError::Invalid {
                what: alloc::format!(
                    "{}: the tar's reading thread stopped (it panicked)",
                    self.path.display()
                ),
            }),
        }
    }

    /// Wakes the thread waiting for its turn or for a FIFO's writer: it
    /// then sends an error and ends.
    fn interrupter(&self) -> Option<Interrupter> {
        let (stop, turns, path) = (
            Arc::clone(&self.stop),
            Arc::clone(&self.turns),
            self.path.clone(),
        );
        Some(Arc::new(move || interrupt(&stop, &turns, &path)))
    }
}

/// Stops the reading thread: at its next member, or now when it waits for
/// its turn or for a FIFO's writer.
fn interrupt(stop: &Stop, turns: &Turns, path: &Path) {
    stop.interrupted.store(true, Ordering::SeqCst);
    // The thread waiting for its turn sees the flag under the turns' lock.
    drop(turns.state.lock().unwrap_or_else(PoisonError::into_inner));
    turns.changed.notify_all();
    if stop.opening.load(Ordering::SeqCst) && is_fifo(path) {
        wake_fifo_reader(path);
    }
}

impl Drop for Receiving {
    /// Closes the channel and joins the thread, stopping it first when it
    /// waits for its turn or a FIFO's writer, or reads a file (a FIFO's
    /// thread reading reads on to its tar's end, sending nothing, so the
    /// next epoch gets the FIFO at the next tar; a loader that stops
    /// interrupts it). A thread still running after [`DETACH_AFTER`] (a
    /// read blocked on a pipe whose writer neither writes nor closes, or a
    /// long drain) is left to end on its own, not joined: it holds only its
    /// channel ends and its FIFO's turn (the next epoch's reader waits for
    /// that turn), and ends when the pipe yields.
    fn drop(&mut self) {
        let draining = self.turns_fifo && self.stop.reading.load(Ordering::SeqCst);
        if !draining {
            interrupt(&self.stop, &self.turns, &self.path);
        }
        drop(self.samples.take());
        if let Some(t) = self.thread.take() {
            // An interrupt landing between the thread's check of the flag
            // and its `open(2)` of a FIFO finds no reader to wake: woken
            // again while the open is pending, until the thread ends.
            let started = std::time::Instant::now();
            while !t.is_finished() {
                if started.elapsed() >= DETACH_AFTER {
                    return;
                }
                if self.stop.interrupted.load(Ordering::SeqCst)
                    && self.stop.opening.load(Ordering::SeqCst)
                {
                    wake_fifo_reader(&self.path);
                }
                std::thread::sleep(WAKE_EVERY);
            }
            let _ = t.join();
        }
    }
}

/// How often a stream's drop looks whether its thread has ended (and wakes
/// its pending FIFO open again).
const WAKE_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

/// How long a stream's drop waits for its thread before leaving it to end
/// on its own (blocked reading a stalled pipe).
const DETACH_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A stream dropped while its thread is between its check of the stop
    /// flag and its `open(2)` of a FIFO (the drop's wake, a write-open,
    /// then finds no reader: ENXIO) still drops: the drop wakes the open
    /// again while it is pending, and the thread ends (is not left blocked
    /// in `open` with no writer to come, joined forever or detached).
    #[test]
    fn a_wake_lost_before_a_fifo_open_is_sent_again() {
        let dir = std::env::temp_dir().join(alloc::format!("tp-lost-wake-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("lost.tar");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let stop = Arc::new(Stop {
            interrupted: AtomicBool::new(false),
            // The thread has set it and found the flag unset.
            opening: AtomicBool::new(true),
            reading: AtomicBool::new(false),
        });
        let (thread_stop, path) = (Arc::clone(&stop), fifo.clone());
        let ended = Arc::new(AtomicBool::new(false));
        let thread_ended = Arc::clone(&ended);
        // The window: the drop's interrupt runs before the open.
        let thread = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let _ = std::fs::File::open(&path);
            thread_stop.opening.store(false, Ordering::SeqCst);
            thread_ended.store(true, Ordering::SeqCst);
        });
        let (_tx, rx) = sync_channel(2);
        let (back, _recycled) = channel();
        let stream = Receiving {
            samples: Some(rx),
            back,
            thread: Some(thread),
            path: fifo.clone(),
            stop,
            turns: Arc::default(),
            turns_fifo: true,
        };
        let (done, dropped) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(stream);
            let _ = done.send(());
        });
        let got = dropped.recv_timeout(std::time::Duration::from_secs(5));
        let thread_ended = ended.load(Ordering::SeqCst);
        // A thread left blocked is let go before the FIFO is removed.
        wake_fifo_reader(&fifo);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(got.is_ok(), "the stream's drop hung on a lost wake");
        assert!(thread_ended, "the thread was left blocked opening the FIFO");
    }
}
