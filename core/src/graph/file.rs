//! Graph files on disk: sidecars, and graphs inside ONNX model files.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;

use super::{Graph, GraphError, MAX_GRAPH_BYTES, onnx};

/// The largest single `metadata_props` entry read from a model file.
const MAX_ENTRY_BYTES: u64 = (MAX_GRAPH_BYTES as u64).div_ceil(3) * 4 + 1024;

fn io(path: &Path, error: std::io::Error) -> GraphError {
    GraphError::Io {
        path: path.display().to_string(),
        error,
    }
}

/// Reads a whole regular file of at most `limit` bytes, refusing larger
/// ones before reading them.
pub(crate) fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, GraphError> {
    crate::files::read_capped(path, limit).map_err(|e| match e {
        crate::files::ReadError::TooLarge { bytes, limit, .. } => {
            GraphError::TooLarge { bytes, limit }
        }
        crate::files::ReadError::Io(e) => io(path, e),
    })
}

/// The sidecar graph file of a model: `model.onnx` → `model.tpp`.
pub fn sidecar_path(model: &Path) -> PathBuf {
    model.with_extension("tpp")
}

impl Graph {
    /// Reads and validates a graph file.
    pub fn load(path: impl AsRef<Path>) -> Result<Graph, GraphError> {
        let path = path.as_ref();
        Graph::decode(&read_capped(path, MAX_GRAPH_BYTES as u64)?)
    }

    /// Writes the graph file.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), GraphError> {
        let path = path.as_ref();
        std::fs::write(path, self.encode()).map_err(|e| io(path, e))
    }

    /// The graph of a model: its sidecar file (`model.tpp` next to
    /// `model.onnx`), or the graph embedded in the ONNX model. If both exist
    /// they must be the same graph. A `.tpp` path is loaded as it is.
    ///
    /// Only the model's top-level fields are read to find an embedded graph;
    /// its weights are skipped, not loaded.
    pub fn for_model(model: impl AsRef<Path>) -> Result<Graph, GraphError> {
        let model = model.as_ref();
        if model.extension().is_some_and(|e| e == "tpp") {
            return Graph::load(model);
        }
        let sidecar = sidecar_path(model);
        let beside = if sidecar.is_file() && sidecar != model {
            Some(Graph::load(&sidecar)?)
        } else {
            None
        };
        let inside = if model.extension().is_some_and(|e| e == "onnx") && model.is_file() {
            embedded_in_onnx_file(model)?
        } else {
            None
        };
        match (beside, inside) {
            (Some(a), Some(b)) if a != b => Err(GraphError::invalid(
                None,
                std::format!(
                    "{} and the graph embedded in {} differ; remove one",
                    sidecar.display(),
                    model.display()
                ),
            )),
            (Some(g), _) | (None, Some(g)) => Ok(g),
            (None, None) => Err(GraphError::NotFound {
                message: std::format!(
                    "no graph for {}: no {} and no `{}` metadata entry",
                    model.display(),
                    sidecar.display(),
                    onnx::METADATA_KEY
                ),
            }),
        }
    }
}

/// The graph embedded in an ONNX file, found by a streaming scan of the
/// top-level fields that seeks past everything but `metadata_props`.
pub fn embedded_in_onnx_file(path: &Path) -> Result<Option<Graph>, GraphError> {
    let mut found: Option<Vec<u8>> = None;
    scan_onnx_metadata(path, |_, key, value| {
        if key == onnx::METADATA_KEY.as_bytes() && found.replace(value.to_vec()).is_some() {
            return Err(GraphError::invalid(
                None,
                std::format!("the model has more than one `{}` entry", onnx::METADATA_KEY),
            ));
        }
        Ok(())
    })?;
    found.map(|v| onnx::decode_value(&v)).transpose()
}

/// An ONNX file's `metadata_props` (UTF-8, lossily), read by the same
/// streaming scan: the weights are skipped, not loaded.
pub fn onnx_file_metadata_props(path: &Path) -> Result<Vec<(String, String)>, GraphError> {
    let mut props = Vec::new();
    scan_onnx_metadata(path, |_, key, value| {
        props.push((
            String::from_utf8_lossy(key).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
        Ok(())
    })?;
    Ok(props)
}

/// What follows a field's key in a stream.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Payload {
    /// A varint (consumed).
    Varint,
    /// A fixed 32- or 64-bit value (consumed).
    Fixed,
    /// Length-delimited bytes of this length (not read yet).
    Bytes(u64),
}

impl Payload {
    fn bytes(self) -> Option<u64> {
        match self {
            Payload::Bytes(n) => Some(n),
            _ => None,
        }
    }
}

/// One field header read from a stream: its number and its payload (only
/// a length-delimited one is left unread). `None` at the end of the message.
fn next_field(
    r: &mut BufReader<File>,
    pos: &mut u64,
    end: u64,
    bad: &impl Fn(&str) -> GraphError,
) -> Result<Option<(u64, Payload)>, GraphError> {
    if *pos >= end {
        return Ok(None);
    }
    let key = read_varint(r, pos).ok_or_else(|| bad("bad field key"))?;
    let past_end = |pos: u64| {
        if pos > end {
            return Err(bad(
                "truncated: a field runs past the end of its message or the file",
            ));
        }
        Ok(())
    };
    past_end(*pos)?;
    let number = key >> 3;
    // As the in-memory scanner (`wire::fields`): field 0 and numbers past
    // 2^29 are no protobuf, so every command reading a model agrees.
    if number == 0 || number >= 1 << 29 {
        return Err(bad(&std::format!("bad field key {key}")));
    }
    match key & 7 {
        0 => {
            read_varint(r, pos).ok_or_else(|| bad("bad varint"))?;
            past_end(*pos)?;
            Ok(Some((number, Payload::Varint)))
        }
        1 | 5 => {
            let n = if key & 7 == 1 { 8 } else { 4 };
            skip(r, pos, n, end).ok_or_else(|| bad("truncated"))?;
            Ok(Some((number, Payload::Fixed)))
        }
        2 => {
            let n = read_varint(r, pos).ok_or_else(|| bad("bad length"))?;
            if n > end.saturating_sub(*pos) {
                return Err(bad(
                    "truncated: a field runs past the end of its message or the file",
                ));
            }
            Ok(Some((number, Payload::Bytes(n))))
        }
        _ => Err(bad("unsupported wire type")),
    }
}

/// Reads a payload of `n` bytes (at most `cap`).
fn read_payload(
    r: &mut BufReader<File>,
    pos: &mut u64,
    n: u64,
    cap: u64,
    path: &Path,
    bad: &impl Fn(&str) -> GraphError,
) -> Result<Vec<u8>, GraphError> {
    if n > cap {
        return Err(bad("oversized field"));
    }
    let mut bytes = std::vec![0; n as usize];
    r.read_exact(&mut bytes).map_err(|e| io(path, e))?;
    *pos += n;
    Ok(bytes)
}

fn open_model(path: &Path) -> Result<(BufReader<File>, u64), GraphError> {
    let (file, len) = crate::files::open_regular(path).map_err(|e| io(path, e))?;
    Ok((BufReader::new(file), len))
}

fn bad_model(path: &Path) -> impl Fn(&str) -> GraphError + '_ {
    move |what: &str| {
        GraphError::import(
            "onnx",
            std::format!("{}: not a valid ONNX model ({what})", path.display()),
        )
    }
}

/// Calls `f` with the span (in the file) of every top-level
/// `metadata_props` field of the ONNX file at `path`, and its key and value.
/// Returns the file's length.
fn scan_onnx_metadata(
    path: &Path,
    mut f: impl FnMut(Range<u64>, &[u8], &[u8]) -> Result<(), GraphError>,
) -> Result<u64, GraphError> {
    let (mut r, len) = open_model(path)?;
    let bad = bad_model(path);
    let mut pos = 0u64;
    let mut has_ir_version = false;
    loop {
        let start = pos;
        let Some((number, payload)) = next_field(&mut r, &mut pos, len, &bad)? else {
            break;
        };
        // As the in-memory scanner: only a varint field 1 is an ir_version.
        match payload {
            Payload::Varint => has_ir_version |= number == 1,
            Payload::Fixed => {}
            Payload::Bytes(n) if number == u64::from(onnx::METADATA_PROPS) => {
                let entry = read_payload(&mut r, &mut pos, n, MAX_ENTRY_BYTES, path, &bad)?;
                let (key, value) = onnx::entry(&entry)?;
                f(start..pos, key, value)?;
            }
            Payload::Bytes(n) => skip(&mut r, &mut pos, n, len).ok_or_else(|| bad("truncated"))?,
        }
    }
    if !has_ir_version {
        return Err(bad("no ir_version field"));
    }
    Ok(len)
}

/// A graph about to be embedded in an ONNX model file, streamed: reading
/// the model ([`OnnxEmbedding::new`]) keeps only the spans of graphs embedded
/// before, and writing ([`OnnxEmbedding::write_to`]) copies the model's bytes
/// in blocks, leaving those spans out and appending the new entry. Memory use
/// does not depend on the model's size; the result is the bytes
/// [`onnx::embed`] makes in memory.
///
/// ```
/// use tensorprep::graph::{Graph, OnnxEmbedding, embedded_in_onnx_file};
/// use tensorprep::pipeline::Pipeline;
///
/// let dir = std::env::temp_dir().join(format!("tp-embed-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let (model, out) = (dir.join("m.onnx"), dir.join("with.onnx"));
/// std::fs::write(&model, [0x08, 0x08, 0x3a, 0x00])?; // ir_version 8, an empty graph
/// let graph = Graph::new(Pipeline::imagenet_eval())?;
/// let embedding = OnnxEmbedding::new(&model, &graph)?;
/// let mut file = std::fs::File::create(&out)?;
/// embedding.write_to(&mut file)?;
/// assert_eq!(embedded_in_onnx_file(&out)?, Some(graph));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OnnxEmbedding {
    model: PathBuf,
    model_len: u64,
    /// The top-level fields left out: graphs embedded before.
    removed: Vec<Range<u64>>,
    previous: Option<Graph>,
    field: Vec<u8>,
}

impl OnnxEmbedding {
    /// Reads the model's top-level fields (seeking past the weights) and
    /// prepares `graph`'s entry.
    pub fn new(model: &Path, graph: &Graph) -> Result<OnnxEmbedding, GraphError> {
        let mut removed = Vec::new();
        let mut previous = None;
        let model_len = scan_onnx_metadata(model, |span, key, value| {
            if key == onnx::METADATA_KEY.as_bytes() {
                if removed.is_empty() {
                    previous = onnx::decode_value(value).ok();
                }
                removed.push(span);
            }
            Ok(())
        })?;
        Ok(OnnxEmbedding {
            model: model.to_path_buf(),
            model_len,
            removed,
            previous,
            field: onnx::metadata_field(graph),
        })
    }

    /// The graph the model held before, if it held one (and it was valid).
    pub fn previous(&self) -> Option<&Graph> {
        self.previous.as_ref()
    }

    /// Graph entries the model held before (all are replaced by the new one).
    pub fn replaced(&self) -> usize {
        self.removed.len()
    }

    /// Bytes [`OnnxEmbedding::write_to`] writes.
    pub fn output_len(&self) -> u64 {
        let removed: u64 = self.removed.iter().map(|r| r.end - r.start).sum();
        self.model_len - removed + self.field.len() as u64
    }

    /// Bytes of the new `metadata_props` field.
    pub fn entry_len(&self) -> u64 {
        self.field.len() as u64
    }

    /// Writes the model with the graph to `out`, reading the model again in
    /// blocks. A model that changed since [`OnnxEmbedding::new`] read it is
    /// an error (`InvalidData`), as is any read or write error.
    pub fn write_to(&self, out: &mut impl Write) -> std::io::Result<u64> {
        use std::io::{Seek, SeekFrom};
        let changed = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                std::format!("{} changed while it was read", self.model.display()),
            )
        };
        let mut file = File::open(&self.model)?;
        if file.metadata()?.len() != self.model_len {
            return Err(changed());
        }
        let mut at = 0u64;
        let mut written = 0u64;
        let gaps = self
            .removed
            .iter()
            .map(|r| (r.start, r.end))
            .chain([(self.model_len, self.model_len)]);
        for (start, end) in gaps {
            file.seek(SeekFrom::Start(at))?;
            let n = std::io::copy(&mut (&mut file).take(start - at), out)?;
            if n != start - at {
                return Err(changed());
            }
            written += n;
            at = end;
        }
        out.write_all(&self.field)?;
        Ok(written + self.field.len() as u64)
    }
}

/// The graph inputs of an ONNX model file ([`super::onnx_inputs`]), read
/// by seeking past the weights: only the graph's `input` messages and the
/// initializers' names are read.
pub fn onnx_file_inputs(path: &Path) -> Result<Vec<super::ModelInput>, GraphError> {
    use super::model_input::{GRAPH, INITIALIZER, INPUT, TENSOR_NAME};
    const MAX_INPUT_BYTES: u64 = 1 << 20;
    const MAX_NAME_BYTES: u64 = 1 << 16;
    let (mut r, len) = open_model(path)?;
    let bad = bad_model(path);
    let mut pos = 0u64;
    let (mut raw, mut initializers) = (Vec::new(), Vec::new());
    while let Some((number, payload)) = next_field(&mut r, &mut pos, len, &bad)? {
        let Some(n) = payload.bytes() else { continue };
        if number != u64::from(GRAPH) {
            skip(&mut r, &mut pos, n, len).ok_or_else(|| bad("truncated"))?;
            continue;
        }
        let graph_end = pos + n;
        while let Some((number, payload)) = next_field(&mut r, &mut pos, graph_end, &bad)? {
            let Some(n) = payload.bytes() else { continue };
            if number == u64::from(INPUT) {
                raw.push(read_payload(
                    &mut r,
                    &mut pos,
                    n,
                    MAX_INPUT_BYTES,
                    path,
                    &bad,
                )?);
            } else if number == u64::from(INITIALIZER) {
                let tensor_end = pos + n;
                while let Some((number, payload)) = next_field(&mut r, &mut pos, tensor_end, &bad)?
                {
                    let Some(n) = payload.bytes() else { continue };
                    if number == u64::from(TENSOR_NAME) {
                        let name = read_payload(&mut r, &mut pos, n, MAX_NAME_BYTES, path, &bad)?;
                        initializers.push(String::from_utf8_lossy(&name).into_owned());
                    } else {
                        skip(&mut r, &mut pos, n, tensor_end).ok_or_else(|| bad("truncated"))?;
                    }
                }
            } else {
                skip(&mut r, &mut pos, n, graph_end).ok_or_else(|| bad("truncated"))?;
            }
        }
    }
    super::model_input::inputs_from(&raw, &initializers)
}

fn read_varint(r: &mut impl Read, pos: &mut u64) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let mut b = [0u8];
        r.read_exact(&mut b).ok()?;
        *pos += 1;
        // As prost (the in-memory scanner): a tenth byte past bit 63 overflows.
        if i == 9 && b[0] > 1 {
            return None;
        }
        v |= u64::from(b[0] & 0x7f) << (7 * i);
        if b[0] < 0x80 {
            return Some(v);
        }
    }
    None
}

fn skip(r: &mut BufReader<File>, pos: &mut u64, n: u64, len: u64) -> Option<()> {
    if n > len.checked_sub(*pos)? {
        return None;
    }
    let n = i64::try_from(n).ok()?;
    r.seek_relative(n).ok()?;
    *pos = pos.checked_add(n as u64)?;
    Some(())
}
