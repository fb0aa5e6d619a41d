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
//! two ahead of the reader, its samples' buffers recycled. Each epoch opens
//! the path again (a FIFO waits for its writer); standard input (`-`) can be
//! read once, so it serves one epoch, and its length must be given (not
//! counted).

#![forbid(unsafe_code)]

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use super::tar_members::{self, FORMAT, Role};
use super::webdataset::WebKeys;
use super::{Content, DataError, Iterable, Sample, SampleStream};

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
        }
    }

    fn reader(&self) -> Result<Box<dyn Read + Send>, DataError> {
        if self.path.as_os_str() == "-" {
            if self.stdin_taken.swap(true, Ordering::SeqCst) {
                return Err(DataError::Invalid {
                    what: "standard input holds one tar: it serves one epoch".into(),
                });
            }
            return Ok(Box::new(std::io::stdin()));
        }
        // Not `open_file`: a FIFO or a character device is a stream too.
        let file = std::fs::File::open(&self.path).map_err(|e| DataError::io(&self.path, e))?;
        Ok(Box::new(file))
    }
}

impl Iterable for TarStream {
    fn open(&self, _epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
        let reader = self.reader()?;
        let (tx, rx) = sync_channel(2);
        let (back, recycled) = channel();
        let (path, image, label) = (self.path.clone(), self.image.clone(), self.label.clone());
        let thread = std::thread::Builder::new()
            .name("tp-tar-stream".into())
            .spawn(move || {
                let image: Vec<&str> = image.iter().map(String::as_str).collect();
                let keys = WebKeys {
                    image: &image,
                    label: &label,
                };
                let end = match read_samples(reader, &path, keys, &tx, &recycled) {
                    Ok(()) => Message::End,
                    Err(e) => Message::Failed(e),
                };
                let _ = tx.send(end);
            })
            .map_err(|e| DataError::io(&self.path, e))?;
        Ok(Box::new(Receiving {
            samples: Some(rx),
            back,
            thread: Some(thread),
            path: self.path.clone(),
        }))
    }

    fn describe(&self) -> String {
        alloc::format!("tar stream {}", self.path.display())
    }

    /// The file's name and the keys (a stream's bytes cannot be read ahead).
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

/// Reads the tar's samples and sends each; `Ok` at its end or when the
/// receiver is gone.
fn read_samples(
    reader: Box<dyn Read + Send>,
    path: &Path,
    keys: WebKeys<'_>,
    tx: &SyncSender<Message>,
    recycled: &Receiver<Sample>,
) -> Result<(), DataError> {
    let mut archive = tar::Archive::new(std::io::BufReader::with_capacity(1 << 16, reader));
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
    tar_members::walk(entries, path, None, |m, entry| {
        let Some((key, role)) = tar_members::role(&m, keys, path)? else {
            return Ok(true);
        };
        if current.as_ref().is_none_or(|c| c.key != key) {
            if let Some(done) = current.take() {
                finish(done, &mut gone)?;
                if gone {
                    return Ok(false);
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
    match current {
        Some(last) if !gone => finish(last, &mut gone),
        _ => Ok(()),
    }
}

/// The stream's end of the channel: samples in, buffers back.
struct Receiving {
    samples: Option<Receiver<Message>>,
    back: Sender<Sample>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl SampleStream for Receiving {
    fn next(&mut self, sample: &mut Sample) -> Result<bool, DataError> {
        let Some(samples) = &self.samples else {
            return Ok(false);
        };
        match samples.recv() {
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
}

impl Drop for Receiving {
    /// Closes the channel (the thread stops at its next sample) and joins
    /// the thread: a read blocked on a stalled pipe holds the drop until it
    /// returns.
    fn drop(&mut self) {
        drop(self.samples.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
