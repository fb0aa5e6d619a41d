//! A small web server for the remote-dataset tests: the files under a
//! folder on 127.0.0.1, with what `object_store`'s HTTP client needs
//! (`HEAD`, `GET` with `Range` answered `206`, `ETag`, `If-Match` answered
//! `412` when it differs), and switches for the faults a test injects:
//! server errors, a new version of every file (another ETag), latency, a
//! stop. Standard library only; a thread per connection, each closed after
//! its answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// What the server counts and what the test switches.
#[derive(Default)]
struct State {
    /// Requests answered (every method, errors included).
    requests: AtomicUsize,
    /// `GET` requests answered.
    gets: AtomicUsize,
    /// Answer the next this many requests with `503`.
    failing: AtomicUsize,
    /// The files' version, part of their ETags.
    version: AtomicU64,
    /// Milliseconds to wait before each answer.
    latency_ms: AtomicU64,
    stop: AtomicBool,
}

/// The server: it stops when dropped.
pub struct Server {
    addr: std::net::SocketAddr,
    state: Arc<State>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Serves the files under `root` on a free port of 127.0.0.1.
    pub fn start(root: &Path) -> Server {
        Server::start_on(root, "127.0.0.1:0")
    }

    /// Serves `root` on `addr` (a port a stopped server used, to restart it).
    pub fn start_on(root: &Path, addr: &str) -> Server {
        let listener = TcpListener::bind(addr).expect("a free port");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let (root, shared) = (root.to_path_buf(), Arc::clone(&state));
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (root, state) = (root.clone(), Arc::clone(&shared));
                std::thread::spawn(move || {
                    let _ = answer(stream, &root, &state);
                });
            }
        });
        Server {
            addr,
            state,
            accept: Some(accept),
        }
    }

    /// The URL of `path` (relative to the root).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// The address it listens on.
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// The requests answered so far.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// The `GET` requests answered so far (`HEAD`s left out).
    pub fn gets(&self) -> usize {
        self.state.gets.load(Ordering::SeqCst)
    }

    /// Answers the next `n` requests with `503 Service Unavailable`.
    pub fn fail_next(&self, n: usize) {
        self.state.failing.store(n, Ordering::SeqCst);
    }

    /// Every file becomes a new version (another ETag).
    pub fn change_versions(&self) {
        self.state.version.fetch_add(1, Ordering::SeqCst);
    }

    /// Waits `ms` milliseconds before each answer.
    pub fn set_latency(&self, ms: u64) {
        self.state.latency_ms.store(ms, Ordering::SeqCst);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// Answers one request on `stream`.
fn answer(stream: TcpStream, root: &Path, state: &State) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let (mut range, mut if_match) = (None, None);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "range" => range = Some(value.trim().to_string()),
                "if-match" => if_match = Some(value.trim().to_string()),
                _ => {}
            }
        }
    }
    if state.stop.load(Ordering::SeqCst) {
        return Ok(());
    }
    state.requests.fetch_add(1, Ordering::SeqCst);
    if method == "GET" {
        state.gets.fetch_add(1, Ordering::SeqCst);
    }
    let latency = state.latency_ms.load(Ordering::SeqCst);
    if latency > 0 {
        std::thread::sleep(Duration::from_millis(latency));
    }
    let mut out = stream;
    let failing = state.failing.load(Ordering::SeqCst);
    if failing > 0 {
        state.failing.store(failing - 1, Ordering::SeqCst);
        return respond(&mut out, "503 Service Unavailable", &[], b"");
    }
    let Some(path) = local(root, target) else {
        return respond(&mut out, "404 Not Found", &[], b"");
    };
    let Ok(bytes) = std::fs::read(&path) else {
        return respond(&mut out, "404 Not Found", &[], b"");
    };
    let len = bytes.len() as u64;
    let etag = format!(
        "\"{}-{len}-{:x}\"",
        state.version.load(Ordering::SeqCst),
        fnv(&bytes)
    );
    let headers = vec![
        ("ETag".to_string(), etag.clone()),
        ("Accept-Ranges".to_string(), "bytes".to_string()),
    ];
    if if_match.as_ref().is_some_and(|m| *m != etag && m != "*") {
        return respond(&mut out, "412 Precondition Failed", &headers, b"");
    }
    let body = method != "HEAD";
    match range.as_deref().and_then(|r| parse_range(r, len)) {
        Some((a, b)) => {
            let mut h = headers;
            h.push(("Content-Range".into(), format!("bytes {a}-{b}/{len}")));
            let part = &bytes[a as usize..=b as usize];
            respond_body(&mut out, "206 Partial Content", &h, part, body)
        }
        None if range.is_some() => {
            let h = vec![("Content-Range".to_string(), format!("bytes */{len}"))];
            respond(&mut out, "416 Range Not Satisfiable", &h, b"")
        }
        None => respond_body(&mut out, "200 OK", &headers, &bytes, body),
    }
}

/// The file `target` names under `root`, if it stays there.
fn local(root: &Path, target: &str) -> Option<PathBuf> {
    let rel = target.split('?').next()?.trim_start_matches('/');
    if rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return None;
    }
    Some(root.join(rel))
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` as an inclusive range within `len`.
fn parse_range(header: &str, len: u64) -> Option<(u64, u64)> {
    let spec = header.strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let (a, b) = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: u64 = n.parse().ok()?;
            (len.checked_sub(n.min(len))?, len.checked_sub(1)?)
        }
        (a, "") => (a.parse().ok()?, len.checked_sub(1)?),
        (a, b) => (
            a.parse().ok()?,
            b.parse::<u64>().ok()?.min(len.checked_sub(1)?),
        ),
    };
    (a <= b && b < len).then_some((a, b))
}

fn respond(
    out: &mut TcpStream,
    status: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<()> {
    respond_body(out, status, headers, body, true)
}

fn respond_body(
    out: &mut TcpStream,
    status: &str,
    headers: &[(String, String)],
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    if with_body {
        out.write_all(body)?;
    }
    out.flush()?;
    // Drains what the client may still send, so that closing does not
    // reset the connection before it read the answer.
    let _ = out.shutdown(std::net::Shutdown::Write);
    let _ = out.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 512];
    while matches!(out.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h = tensorprep::Fnv1a64::new();
    h.update(bytes);
    h.finish()
}
