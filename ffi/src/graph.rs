//! `tp_graph`: a preprocessing graph, loaded from a file, bytes, a model, a
//! preset or an importer's configuration.

use std::ffi::c_char;

use tensorprep::graph::Graph;
use tensorprep::pipeline::Pipeline;

use crate::args;
use crate::boundary::{boundary, boundary_value};
use crate::result::{Failure, Result, tp_result};
use crate::types::{self, tp_tensor_info};

/// A loaded preprocessing graph. Immutable: one graph may be read by any
/// number of threads at once (compiling plans, verifying).
pub struct tp_graph {
    pub(crate) graph: Graph,
}

/// Builds a graph and writes the new handle to `out` (checked first).
///
/// # Safety
///
/// `out` must be NULL or valid for a write.
unsafe fn make(out: *mut *mut tp_graph, build: impl FnOnce() -> Result<Graph>) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees `out` is NULL or writable.
        let out = unsafe { args::out(out, "out") }?;
        let graph = build()?;
        args::give(out, tp_graph { graph });
        Ok(())
    })
}

/// Loads a graph file (`.tpp`). The file is checked whole (magic bytes,
/// checksum, every op's parameters, the declared output) before a handle is
/// returned; files over 4 MiB are refused before reading.
///
/// # Safety
///
/// `path` must be a NUL-terminated string (any bytes on Unix, UTF-8
/// elsewhere). `out` must be valid for a write; on success it receives a
/// graph the caller owns and frees with `tp_graph_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_load(path: *const c_char, out: *mut *mut tp_graph) -> tp_result {
    // SAFETY: the caller's guarantees, forwarded.
    unsafe { make(out, || Ok(Graph::load(args::path(path, "path")?)?)) }
}

/// Reads a graph from the bytes of a graph file (for a graph shipped inside
/// an app's assets). The bytes are copied; the caller may free them after.
///
/// # Safety
///
/// `data` must be valid for reads of `len` bytes. `out` must be valid for a
/// write; on success it receives a graph the caller frees with `tp_graph_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_from_bytes(
    data: *const u8,
    len: usize,
    out: *mut *mut tp_graph,
) -> tp_result {
    // SAFETY: the caller's guarantees, forwarded.
    unsafe { make(out, || Ok(Graph::decode(args::bytes(data, len, "data")?)?)) }
}

/// The graph of a model file: its sidecar (`model.tpp` beside `model.onnx`)
/// or the graph embedded in the ONNX model's metadata (the weights are
/// skipped, not read). If both exist they must agree. A `.tpp` path is loaded
/// as it is.
///
/// # Safety
///
/// `model_path` must be a NUL-terminated string. `out` must be valid for a
/// write; on success it receives a graph the caller frees with `tp_graph_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_for_model(
    model_path: *const c_char,
    out: *mut *mut tp_graph,
) -> tp_result {
    // SAFETY: the caller's guarantees, forwarded.
    unsafe {
        make(out, || {
            Ok(Graph::for_model(args::path(model_path, "model_path")?)?)
        })
    }
}

/// A built-in graph by name: `imagenet-eval` (torchvision's `Resize(256)`,
/// `CenterCrop(224)`, `ToTensor()`, `Normalize(ImageNet)`),
/// `imagenet-eval-nhwc-u8`, `yolo-letterbox-640`, or (with the `import`
/// feature) a torchvision weights name such as
/// `ResNet50_Weights.IMAGENET1K_V2`.
///
/// # Safety
///
/// `name` must be a NUL-terminated string. `out` must be valid for a write;
/// on success it receives a graph the caller frees with `tp_graph_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_from_preset(
    name: *const c_char,
    out: *mut *mut tp_graph,
) -> tp_result {
    // SAFETY: the caller's guarantees, forwarded.
    unsafe {
        make(out, || {
            let name = args::string(name, "name")?;
            if Pipeline::preset(name).is_some() {
                return Ok(Graph::preset(name)?);
            }
            torchvision(name)
        })
    }
}

#[cfg(feature = "import")]
fn torchvision(name: &str) -> Result<Graph> {
    if tensorprep::import::torchvision_names().any(|n| n == name) {
        return Ok(tensorprep::import::torchvision(name)?);
    }
    Err(unknown_preset(name))
}

#[cfg(not(feature = "import"))]
fn torchvision(name: &str) -> Result<Graph> {
    Err(unknown_preset(name))
}

fn unknown_preset(name: &str) -> Failure {
    let weights = if cfg!(feature = "import") {
        ", or a torchvision weights name such as ResNet50_Weights.IMAGENET1K_V2"
    } else {
        " (torchvision weights names need the `import` feature)"
    };
    Failure::new(
        tp_result::UnknownPreset,
        format!(
            "no preset `{name}`: known are {}{weights}",
            Pipeline::PRESETS.join(", ")
        ),
    )
}

/// Which importer reads a JSON configuration.
#[derive(Clone, Copy)]
enum Json {
    /// With a `tp_hf_backend` value.
    HuggingFace(#[cfg_attr(not(feature = "import"), allow(dead_code))] u32),
    Timm,
}

/// # Safety
///
/// `json` must be valid for reads of `len` bytes; `out` NULL or writable.
unsafe fn from_json(json: *const u8, len: usize, out: *mut *mut tp_graph, kind: Json) -> tp_result {
    // SAFETY: the caller's guarantees, forwarded.
    unsafe {
        make(out, || {
            let bytes = args::bytes(json, len, "json")?;
            import_json(bytes, kind)
        })
    }
}

#[cfg(feature = "import")]
fn import_json(bytes: &[u8], kind: Json) -> Result<Graph> {
    let max = tensorprep::import::MAX_CONFIG_BYTES;
    if bytes.len() > max {
        return Err(Failure::new(
            tp_result::GraphImport,
            format!("a configuration of {} bytes (at most {max})", bytes.len()),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Failure::new(
            tp_result::InvalidUtf8,
            format!("`json` is not UTF-8 (byte {})", e.valid_up_to()),
        )
    })?;
    Ok(match kind {
        Json::HuggingFace(backend) => {
            use crate::types::tp_hf_backend as B;
            use tensorprep::import::HfBackend;
            let table = [
                (B::Torchvision as u32, HfBackend::Torchvision),
                (B::TorchvisionAvx2 as u32, HfBackend::Torchvision),
                (B::Pil as u32, HfBackend::Pil),
                (B::TorchvisionFloat32 as u32, HfBackend::TorchvisionFloat32),
            ];
            let backend = crate::args::lookup(&table, backend, "backend")?;
            tensorprep::import::hugging_face_with(text, backend)?
        }
        Json::Timm => tensorprep::import::timm(text)?,
    })
}

#[cfg(not(feature = "import"))]
fn import_json(_: &[u8], _: Json) -> Result<Graph> {
    Err(Failure::new(
        tp_result::NotBuilt,
        "importers are not in this build (Cargo feature `import`)",
    ))
}

/// A graph from a Hugging Face `preprocessor_config.json` (ViT, DeiT, BEiT,
/// CLIP, ConvNeXT, BiT, SigLIP image processors), reproducing the processor
/// as transformers runs it by default (its torchvision backend,
/// `TP_HF_BACKEND_TORCHVISION`). The text is not NUL-terminated: `len` bytes
/// are read. Returns `TP_RESULT_NOT_BUILT` without the `import` feature.
///
/// # Safety
///
/// `json` must be valid for reads of `len` bytes. `out` must be valid for a
/// write; on success it receives a graph the caller frees with `tp_graph_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_from_hugging_face(
    json: *const u8,
    len: usize,
    out: *mut *mut tp_graph,
) -> tp_result {
    let backend = crate::types::tp_hf_backend::Torchvision as u32;
    // SAFETY: forwarded.
    unsafe { from_json(json, len, out, Json::HuggingFace(backend)) }
}

/// [`tp_graph_from_hugging_face`] for a chosen backend (a `tp_hf_backend`:
/// the torchvision one, its float32 variant, or the PIL one). An unknown
/// value is `TP_RESULT_INVALID_PARAMETER`.
///
/// # Safety
///
/// As [`tp_graph_from_hugging_face`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_from_hugging_face_backend(
    json: *const u8,
    len: usize,
    backend: u32,
    out: *mut *mut tp_graph,
) -> tp_result {
    // SAFETY: forwarded.
    unsafe { from_json(json, len, out, Json::HuggingFace(backend)) }
}

/// A graph from a timm `pretrained_cfg` / `config.json` (`input_size`,
/// `crop_pct`, `crop_mode`, `interpolation`, `mean`, `std`). Returns
/// `TP_RESULT_NOT_BUILT` without the `import` feature.
///
/// # Safety
///
/// As for `tp_graph_from_hugging_face`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_from_timm(
    json: *const u8,
    len: usize,
    out: *mut *mut tp_graph,
) -> tp_result {
    // SAFETY: forwarded.
    unsafe { from_json(json, len, out, Json::Timm) }
}

/// Runs the graph's self-tests (a synthetic picture, and for graphs made for
/// files a small JPEG, once per JPEG decoder this build has, and a PNG; each
/// with the tensor recorded when the graph was written) on this build and
/// device. `*passed` and
/// `*total` (either may be NULL) receive the counts. Returns
/// `TP_RESULT_SELF_TEST_FAILED` if any test's tensor differs beyond its
/// tolerance (the message names it); a graph without self-tests passes with
/// a total of 0.
///
/// # Safety
///
/// `graph` must be a live graph handle. `passed` and `total` must each be
/// NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_verify(
    graph: *const tp_graph,
    passed: *mut usize,
    total: *mut usize,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees a live handle and writable outputs.
        let (graph, passed, total) = unsafe {
            (
                args::required(graph, "graph")?,
                args::optional_out(passed, "passed")?,
                args::optional_out(total, "total")?,
            )
        };
        let reports = graph.graph.verify()?;
        let ok = reports.iter().filter(|r| r.passed()).count();
        if let Some(p) = passed {
            p.write(ok);
        }
        if let Some(t) = total {
            t.write(reports.len());
        }
        match reports.iter().find(|r| !r.passed()) {
            None => Ok(()),
            Some(r) => Err(Failure::new(
                tp_result::SelfTestFailed,
                format!("self-test {r}; {ok} of {} passed", reports.len()),
            )),
        }
    })
}

/// What a graph accepts and produces.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tp_graph_info {
    /// 1 when the graph decodes encoded images (JPEG, PNG, WebP;
    /// `TP_INPUT_KIND_JPEG` plans), else 0.
    pub accepts_encoded: u32,
    /// The raw pixel formats it accepts (`TP_INPUT_KIND_PIXELS` plans): bit
    /// `1 << f` for each `tp_pixel_format` `f`.
    pub pixel_formats: u32,
    /// The `tp_yuv_range` YUV frames are read with.
    pub yuv_range: u32,
    /// Number of ops.
    pub ops: u32,
    /// Number of self-tests `tp_graph_verify` runs.
    pub self_tests: u32,
    /// The tensor it produces (shape all 0 when it depends on the image).
    pub output: tp_tensor_info,
}

/// Describes what `graph` accepts (encoded files, pixel formats, YUV range)
/// and the tensor it produces (element type, layout, channel order, shape);
/// `tp_graph_output_name` gives the model input's name.
///
/// # Safety
///
/// `graph` must be a live graph handle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_describe(
    graph: *const tp_graph,
    out: *mut tp_graph_info,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees a live handle and a writable output.
        let (graph, out) = unsafe { (args::required(graph, "graph")?, args::out(out, "out")?) };
        let g = &graph.graph;
        let pixel_formats = g
            .input
            .pixel_formats
            .iter()
            .map(|f| 1u32 << args::code(&types::PIXEL_FORMATS, *f))
            .fold(0, |a, b| a | b);
        let order = g
            .pipeline
            .ops()
            .iter()
            .find_map(|op| match op {
                tensorprep::pipeline::Op::Layout { order, .. } => Some(*order),
                _ => None,
            })
            .unwrap_or(tensorprep::finish::ChannelOrder::Rgb);
        let shape = g.output.shape.unwrap_or_default();
        let elements = shape.iter().product();
        out.write(tp_graph_info {
            accepts_encoded: u32::from(g.input.accepts_jpeg),
            pixel_formats,
            yuv_range: args::code(&types::YUV_RANGES, g.input.yuv_range),
            ops: g.pipeline.ops().len() as u32,
            self_tests: g.self_tests.len() as u32,
            output: tp_tensor_info {
                dtype: args::code(&types::DTYPES, g.output.dtype),
                layout: args::code(&types::LAYOUTS, g.output.layout),
                channel_order: args::code(&types::CHANNEL_ORDERS, order),
                shape,
                elements,
                bytes: elements * g.output.dtype.size(),
            },
        });
        Ok(())
    })
}

/// Copies the name of the model input the graph's tensor is for
/// (`pixel_values`, `images`, ...; may be empty) into `buf`, NUL-terminated.
/// `*out_len` (may be NULL) receives its length without the NUL. Returns
/// `TP_RESULT_BUFFER_TOO_SMALL` (with `*out_len` set, `buf` untouched) when
/// `len` is not more than that length.
///
/// # Safety
///
/// `graph` must be a live graph handle; `buf` valid for writes of `len`
/// bytes; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_output_name(
    graph: *const tp_graph,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees a live handle and writable outputs.
        let (graph, dst, out_len) = unsafe {
            (
                args::required(graph, "graph")?,
                args::bytes_mut(buf.cast::<u8>(), len, "buf")?,
                args::optional_out(out_len, "out_len")?,
            )
        };
        let name = graph.graph.output.name.as_bytes();
        if let Some(n) = out_len {
            n.write(name.len());
        }
        if dst.len() <= name.len() {
            return Err(Failure::new(
                tp_result::BufferTooSmall,
                format!(
                    "the output name needs {} bytes with its NUL; `len` is {}",
                    name.len() + 1,
                    dst.len()
                ),
            ));
        }
        dst[..name.len()].copy_from_slice(name);
        dst[name.len()] = 0;
        Ok(())
    })
}

/// Frees a graph. Plans compiled from it stay valid (they own what they
/// need). NULL is a no-op.
///
/// # Safety
///
/// `graph` must be NULL or a handle from a `tp_graph_*` constructor not yet
/// freed; no other thread may be using it, and it must not be used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_graph_free(graph: *mut tp_graph) {
    // SAFETY: the caller guarantees an unfreed handle or NULL.
    boundary_value((), || unsafe { args::free(graph) });
}
