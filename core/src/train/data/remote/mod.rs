//! Dataset files on object storage and web servers (feature `remote`):
//! `s3://bucket/key`, `http://host/path` and `https://host/path` wherever a
//! dataset file is named.
//!
//! The requests are Apache Arrow's `object_store`'s: request signing, the
//! AWS credential chain, ranged GETs, retries with backoff. Its settings come
//! from its own environment variables, so existing setups work:
//! `AWS_ENDPOINT_URL` (an S3-compatible server), `AWS_ALLOW_HTTP=true` (a
//! plain-http endpoint), `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, web identity and container
//! credentials (not `~/.aws` profiles). `http://` URLs need no setting.
//!
//! One small runtime (a single worker thread) runs the requests; reader
//! threads wait on them. A process forked after it started (a Python
//! `DataLoader`'s workers) gets a runtime and clients of its own at its
//! first read: the parent's are left untouched (their threads do not exist
//! in the child).
//!
//! An object is read in blocks of [`BLOCK_BYTES`] (or what
//! [`set_read_blocks`] sets), two at a time (block pairs `2k`, `2k + 1`:
//! neighbouring records come in one request, a reader going forward finds
//! the next block ready), kept in one cache of
//! [`CACHE_BYTES`] for all objects. A record larger than a block is fetched
//! whole, in one request. Each object's length and ETag are read once, when
//! it is opened: every later read asks for that version (`If-Match`) and
//! checks the ETag of what comes back, so an object replaced during an epoch
//! is an error naming its URL, never a mix of two versions. A request that
//! fails is retried ([`RETRIES`] times, backing off, within
//! [`RETRY_SECONDS`]); an unreachable or stopped server is an error within
//! that bound, never a hang.
//!
//! Read-ahead: the loader's read stage tells the dataset which samples come
//! next ([`Dataset::fetch_ahead`](super::Dataset::fetch_ahead)), and the block
//! pairs holding them are fetched on the runtime while the readers work
//! (at most half the kept bytes in flight, so that what is fetched ahead
//! does not push out what is being read). A reader that needs a pair
//! already being fetched, by read-ahead or by another reader, waits for that
//! request instead of sending its own: each pair is asked for once.

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use object_store::path::Path as ObjectPath;

mod cache;

pub use cache::{CachedFile, DEFAULT_CACHE_BYTES, FETCH_BYTES, set_cache};
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, RetryConfig,
};

/// The bytes of an object fetched per block unless set: 4 MiB.
pub const BLOCK_BYTES: u64 = 4 << 20;

/// The blocks kept for all objects together unless set: 64 MiB.
pub const CACHE_BYTES: usize = 64 << 20;

static BLOCK: AtomicU64 = AtomicU64::new(BLOCK_BYTES);
static KEPT: AtomicU64 = AtomicU64::new(CACHE_BYTES as u64);

/// Sets the block size (at least 4 KiB) and the bytes of blocks kept for
/// all objects (at least two blocks): larger blocks for a server far away
/// (fewer requests), smaller for small records read at random. The blocks
/// fetched so far are dropped.
pub fn set_read_blocks(block_bytes: u64, kept_bytes: u64) {
    let block = block_bytes.max(4 << 10);
    BLOCK.store(block, Ordering::Relaxed);
    KEPT.store(kept_bytes.max(2 * block), Ordering::Relaxed);
    clear_cache();
}

fn block_bytes() -> u64 {
    BLOCK.load(Ordering::Relaxed)
}

/// Retries of a failed request (connection refused or reset, a timeout, a
/// server error), backing off from 100 ms to at most 1 s.
pub const RETRIES: usize = 5;

/// The longest a request is retried: 10 s (then each attempt's own
/// timeout, [`REQUEST_SECONDS`], bounds the last).
pub const RETRY_SECONDS: u64 = 10;

/// One request's timeout: 10 s.
pub const REQUEST_SECONDS: u64 = 10;

/// The timeout of connecting to a server: 2 s.
pub const CONNECT_SECONDS: u64 = 2;

/// Requests sent so far by this process (each GET and HEAD, retries not
/// counted): what `train-bench` prints per epoch.
pub fn requests() -> u64 {
    REQUESTS.load(Ordering::Relaxed)
}

static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// Reads so far whose block was neither kept nor being fetched (by the
/// read-ahead or another reader), so that the reader sent the request and
/// waited its whole round trip: what the read-ahead did not hide.
pub fn misses() -> u64 {
    MISSES.load(Ordering::Relaxed)
}

static MISSES: AtomicU64 = AtomicU64::new(0);

/// Drops every fetched block: the next reads ask the servers again.
pub fn clear_cache() {
    let mut blocks = lock_blocks();
    blocks.blocks.clear();
    blocks.bytes = 0;
    // A pair fetched before now is not kept when it comes.
    blocks.generation += 1;
}

/// The runtime and the clients of one process.
struct Io {
    pid: u32,
    runtime: tokio::runtime::Runtime,
    /// One client per bucket or server (`s3://bucket`, `https://host`).
    stores: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
}

static IO: Mutex<Option<Arc<Io>>> = Mutex::new(None);

/// This process's runtime: made at the first read, and again in a forked
/// child (the parent's is leaked there: dropping it would wait for threads
/// the child does not have).
fn io_for_this_process() -> io::Result<Arc<Io>> {
    let mut slot = IO.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if let Some(io) = slot.as_ref().filter(|io| io.pid == pid) {
        return Ok(Arc::clone(io));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("tensorprep-remote")
        .enable_all()
        .build()?;
    let io = Arc::new(Io {
        pid,
        runtime,
        stores: Mutex::new(HashMap::new()),
    });
    if let Some(parent) = slot.replace(Arc::clone(&io)) {
        core::mem::forget(parent);
    }
    Ok(io)
}

/// An error of a request (whose callers name the URL: the message does not
/// repeat it).
fn failed(e: impl core::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl Io {
    /// The client for `url`'s bucket or server, and the object's path in it.
    fn store(&self, url: &str) -> io::Result<(Arc<dyn ObjectStore>, ObjectPath)> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| failed("not a URL"))?;
        let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() || key.is_empty() {
            return Err(failed("a URL names a bucket or server, then an object"));
        }
        let base = alloc::format!("{scheme}://{authority}");
        let location = ObjectPath::from_url_path(key).map_err(failed)?;
        let mut stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(store) = stores.get(&base) {
            return Ok((Arc::clone(store), location));
        }
        let retry = RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(1),
                base: 2.0,
            },
            max_retries: RETRIES,
            retry_timeout: Duration::from_secs(RETRY_SECONDS),
        };
        let client = ClientOptions::new()
            .with_timeout(Duration::from_secs(REQUEST_SECONDS))
            .with_connect_timeout(Duration::from_secs(CONNECT_SECONDS));
        let store: Arc<dyn ObjectStore> = match scheme {
            // The timeouts set one by one: the environment's client
            // settings (`AWS_ALLOW_HTTP`) stay.
            "s3" => {
                use object_store::ClientConfigKey as C;
                use object_store::aws::AmazonS3ConfigKey::Client;
                Arc::new(
                    object_store::aws::AmazonS3Builder::from_env()
                        .with_url(&base)
                        .with_retry(retry)
                        .with_config(Client(C::Timeout), alloc::format!("{REQUEST_SECONDS}s"))
                        .with_config(
                            Client(C::ConnectTimeout),
                            alloc::format!("{CONNECT_SECONDS}s"),
                        )
                        .build()
                        .map_err(failed)?,
                )
            }
            "http" | "https" => Arc::new(
                object_store::http::HttpBuilder::new()
                    .with_url(&base)
                    .with_retry(retry)
                    .with_client_options(client.with_allow_http(scheme == "http"))
                    .build()
                    .map_err(failed)?,
            ),
            _ => return Err(failed("not an s3://, http:// or https:// URL")),
        };
        stores.insert(base, Arc::clone(&store));
        Ok((store, location))
    }
}

/// Opens the object at `url`: from this node's cache when it has the
/// version `known` names (its length and ETag, as a dataset indexed it),
/// with no request; else with one request for its length and version, then
/// from the cache (fetched into it first) when there is one, or from the
/// server in blocks.
pub(crate) fn open(url: &str, known: Option<(u64, &str)>) -> io::Result<(super::DataFile, u64)> {
    let cache = cache::cache()?;
    if let (Some(c), Some((len, version))) = (&cache, known)
        && let Some(f) = c.find(url, version, len)
    {
        return Ok((super::DataFile::Cached(f), len));
    }
    let object = RemoteFile::open(url)?;
    let len = object.len();
    if let Some(c) = &cache
        && let Some(f) = c.open(&object)?
    {
        return Ok((super::DataFile::Cached(f), len));
    }
    Ok((super::DataFile::Remote(object), len))
}

/// An object read in blocks (see the [module](self)).
#[derive(Debug)]
pub struct RemoteFile {
    object: Arc<Object>,
    len: u64,
    /// This object's key in the block cache: its URL and version, so that
    /// opening it again finds the blocks fetched (a version-less object's
    /// key is its own).
    id: u64,
}

/// What a request for an object's bytes needs (shared with the read-ahead
/// requests running on the runtime).
#[derive(Debug)]
struct Object {
    url: String,
    /// The client of the process that opened the object (`pid`): a forked
    /// child asks its own, made in it (the parent's connections belong to a
    /// runtime the child does not run).
    store: Arc<dyn ObjectStore>,
    pid: u32,
    location: ObjectPath,
    /// The version opened (`None`: the server gives no ETag).
    etag: Option<String>,
}

/// The blocks fetched, least recently used first: `(object, block)` and
/// the bytes; and the block pairs being fetched.
struct Blocks {
    blocks: Vec<((u64, u64), bytes::Bytes)>,
    bytes: usize,
    /// `(object, first block)` of each pair being fetched.
    fetching: Vec<(u64, u64)>,
    /// The process whose requests `fetching` lists: a forked child's
    /// list is its parent's, whose requests it will never see end.
    pid: u32,
    /// Counts [`clear_cache`] calls: a pair fetched across one is dropped.
    generation: u64,
}

static BLOCKS: Mutex<Blocks> = Mutex::new(Blocks {
    blocks: Vec::new(),
    bytes: 0,
    fetching: Vec::new(),
    pid: 0,
    generation: 0,
});

/// Woken when a pair's request ends.
static FETCHED: Condvar = Condvar::new();

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// The block cache's key of `url` at `version`.
fn block_key(url: &str, version: Option<&str>) -> u64 {
    let Some(version) = version else {
        // Never the hash of a versioned one (whose top bit is clear).
        return (1 << 63) | NEXT_ID.fetch_add(1, Ordering::Relaxed);
    };
    let mut h = crate::Fnv1a64::new();
    h.update(url.as_bytes());
    h.update(&[0]);
    h.update(version.as_bytes());
    h.finish() >> 1
}

impl Blocks {
    fn get(&mut self, key: (u64, u64)) -> Option<bytes::Bytes> {
        let at = self.blocks.iter().position(|(k, _)| *k == key)?;
        let entry = self.blocks.remove(at);
        let bytes = entry.1.clone();
        self.blocks.push(entry);
        Some(bytes)
    }

    fn has(&self, key: (u64, u64)) -> bool {
        self.blocks.iter().any(|(k, _)| *k == key)
    }

    /// Keeps a fetched pair (starting at block `first` of `object`) as its
    /// two blocks of `size` bytes.
    fn put_pair(&mut self, object: u64, first: u64, size: u64, bytes: &bytes::Bytes) {
        let split = bytes.len().min(size as usize);
        for (k, b) in [bytes.slice(..split), bytes.slice(split..)]
            .into_iter()
            .enumerate()
        {
            if !b.is_empty() {
                self.put((object, first + k as u64), b);
            }
        }
    }

    /// The request for the pair `key` (`(object, first block)`) ended: its
    /// bytes, if it brought them, kept as two blocks of `size` (unless the
    /// blocks were dropped since `generation`), and its waiters woken to
    /// look again.
    fn fetched(
        &mut self,
        key: (u64, u64),
        generation: u64,
        size: u64,
        bytes: Option<&bytes::Bytes>,
    ) {
        if let Some(bytes) = bytes
            && self.generation == generation
        {
            self.put_pair(key.0, key.1, size, bytes);
        }
        self.fetching.retain(|k| *k != key);
        FETCHED.notify_all();
    }

    fn put(&mut self, key: (u64, u64), block: bytes::Bytes) {
        if self.get(key).is_some() {
            return;
        }
        self.bytes += block.len();
        self.blocks.push((key, block));
        let kept = usize::try_from(KEPT.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        while self.bytes > kept && self.blocks.len() > 1 {
            let (_, old) = self.blocks.remove(0);
            self.bytes -= old.len();
        }
    }
}

impl RemoteFile {
    /// Opens the object at `url`: its length and version, with one request.
    pub(crate) fn open(url: &str) -> io::Result<RemoteFile> {
        let io = io_for_this_process()?;
        let (store, location) = io.store(url)?;
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        let meta = io.runtime.block_on(store.head(&location)).map_err(error)?;
        Ok(RemoteFile {
            id: block_key(url, meta.e_tag.as_deref()),
            len: meta.size,
            object: Arc::new(Object {
                url: url.to_string(),
                store,
                pid: io.pid,
                location,
                etag: meta.e_tag,
            }),
        })
    }

    /// The object's URL.
    pub(crate) fn url(&self) -> &str {
        &self.object.url
    }

    /// The object's length when it was opened.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The version (ETag) opened, if the server gives one.
    pub(crate) fn version(&self) -> Option<&str> {
        self.object.etag.as_deref()
    }

    /// Fills `buf` from `offset` (see the [module](self) for the blocks).
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    alloc::format!("a read past the object's {} bytes", self.len),
                )
            })?;
        if buf.is_empty() {
            return Ok(());
        }
        let size = block_bytes();
        if buf.len() as u64 >= size {
            let bytes = self.fetch(offset..end)?;
            buf.copy_from_slice(&bytes);
            return Ok(());
        }
        let mut at = offset;
        while at < end {
            let block = at / size;
            let data = self.block(block, size)?;
            let from = (at - block * size) as usize;
            let n = (data.len() - from).min((end - at) as usize);
            let to = (at - offset) as usize;
            buf[to..to + n].copy_from_slice(&data[from..from + n]);
            at += n as u64;
        }
        Ok(())
    }

    /// Block `index` (of `size` bytes), from the cache or fetched with its
    /// pair (blocks `2k` and `2k + 1` come together: a reader going forward
    /// finds the next one ready, and one reading a window of records in a
    /// random order fetches each pair once). A pair already being fetched
    /// is waited for (within the requests' time bound), not asked again.
    fn block(&self, index: u64, size: u64) -> io::Result<bytes::Bytes> {
        let first = index & !1;
        let key = (self.id, first);
        let mut blocks = lock_blocks();
        loop {
            if let Some(b) = blocks.get((self.id, index)) {
                return Ok(b);
            }
            if !blocks.fetching.contains(&key) {
                break;
            }
            blocks = FETCHED.wait(blocks).unwrap_or_else(|e| e.into_inner());
        }
        blocks.fetching.push(key);
        let generation = blocks.generation;
        drop(blocks);
        MISSES.fetch_add(1, Ordering::Relaxed);
        let fetched = self.fetch(self.pair(first, size));
        lock_blocks().fetched(key, generation, size, fetched.as_ref().ok());
        let bytes = fetched?;
        Ok(match index - first {
            0 => bytes.slice(..bytes.len().min(size as usize)),
            _ => bytes.slice(size as usize..),
        })
    }

    /// The bytes of the pair starting at block `first`.
    fn pair(&self, first: u64, size: u64) -> core::ops::Range<u64> {
        let start = first * size;
        start..(start + 2 * size).min(self.len)
    }

    /// Starts fetching, on the runtime, the block pairs holding
    /// `offset..offset + len` that are neither kept nor being fetched
    /// (see the [module](self)): a hint, whose failure shows (and is
    /// retried) when the bytes are read. A record of a block or more is
    /// fetched whole when read, so is not fetched ahead.
    pub(crate) fn fetch_ahead(&self, offset: u64, len: u64) {
        let size = block_bytes();
        let end = offset.saturating_add(len.max(1)).min(self.len);
        if len >= size || offset >= end {
            return;
        }
        let pair_bytes = 2 * size;
        // At most half the kept bytes in flight.
        let most = (KEPT.load(Ordering::Relaxed) / pair_bytes / 2).max(1) as usize;
        let mut first = (offset / size) & !1;
        while first * size < end {
            let key = (self.id, first);
            let mut blocks = lock_blocks();
            if blocks.fetching.len() >= most {
                return;
            }
            if !blocks.has(key) && !blocks.fetching.contains(&key) {
                let Ok(io) = io_for_this_process() else {
                    return;
                };
                blocks.fetching.push(key);
                let generation = blocks.generation;
                drop(blocks);
                let (object, range) = (Arc::clone(&self.object), self.pair(first, size));
                let Ok(store) = object.store_in(&io) else {
                    lock_blocks().fetched(key, generation, size, None);
                    return;
                };
                io.runtime.spawn(async move {
                    let fetched = object.get(&*store, range).await;
                    lock_blocks().fetched(key, generation, size, fetched.as_ref().ok());
                });
            }
            first += 2;
        }
    }

    /// The bytes of `range`, of the version opened.
    fn fetch(&self, range: core::ops::Range<u64>) -> io::Result<bytes::Bytes> {
        let io = io_for_this_process()?;
        let store = self.object.store_in(&io)?;
        io.runtime.block_on(self.object.get(&*store, range))
    }
}

impl Object {
    /// The client to ask in this process (`io`'s): the one the object was
    /// opened with, or in a forked child one of the child's own.
    fn store_in(&self, io: &Io) -> io::Result<Arc<dyn ObjectStore>> {
        if io.pid == self.pid {
            return Ok(Arc::clone(&self.store));
        }
        io.store(&self.url).map(|(store, _)| store)
    }

    /// The bytes of `range`, of the version opened, asked of `store`: with
    /// `If-Match`, the answer's ETag checked, its length checked.
    async fn get(
        &self,
        store: &dyn ObjectStore,
        range: core::ops::Range<u64>,
    ) -> io::Result<bytes::Bytes> {
        let options = GetOptions {
            if_match: self.etag.clone(),
            range: Some(GetRange::Bounded(range.clone())),
            ..GetOptions::default()
        };
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        let asked = range.end - range.start;
        let wrong = |n: u64| {
            failed(alloc::format!(
                "{n} bytes came for the {asked} asked (the object changed?)"
            ))
        };
        let got = store
            .get_opts(&self.location, options)
            .await
            .map_err(error)?;
        if got.meta.e_tag.is_some() && got.meta.e_tag != self.etag {
            return Err(error(object_store::Error::Precondition {
                path: self.location.to_string(),
                source: "another ETag".into(),
            }));
        }
        // The body piece by piece: no more than the range asked is held
        // (a server sending more is refused as it does).
        let mut body = got.into_stream();
        let mut bytes: Vec<u8> = Vec::new();
        bytes
            .try_reserve_exact(usize::try_from(asked).map_err(|_| wrong(asked))?)
            .map_err(|_| failed("no memory for the range asked"))?;
        while let Some(piece) = futures_util::StreamExt::next(&mut body).await {
            let piece = piece.map_err(error)?;
            if (bytes.len() + piece.len()) as u64 > asked {
                return Err(wrong((bytes.len() + piece.len()) as u64));
            }
            bytes.extend_from_slice(&piece);
        }
        if bytes.len() as u64 != asked {
            return Err(wrong(bytes.len() as u64));
        }
        Ok(bytes::Bytes::from(bytes))
    }
}

/// The blocks, with the pairs being fetched as this process's (a forked
/// child forgets its parent's: their requests do not run in it).
fn lock_blocks() -> std::sync::MutexGuard<'static, Blocks> {
    let mut blocks = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if blocks.pid != pid {
        blocks.fetching.clear();
        blocks.pid = pid;
    }
    blocks
}

/// `object_store`'s error as an I/O error (its callers name the URL): a
/// missing object is `NotFound`, a replaced one says so.
fn error(e: object_store::Error) -> io::Error {
    match e {
        object_store::Error::NotFound { .. } => {
            io::Error::new(io::ErrorKind::NotFound, "no such object")
        }
        object_store::Error::Precondition { .. } => io::Error::other(
            "the object changed since it was opened (another ETag): its records would mix two versions",
        ),
        e => failed(e),
    }
}
