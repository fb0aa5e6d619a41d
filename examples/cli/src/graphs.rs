//! The graph-file commands: convert, inspect, verify, embed, extract.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::atomic::{self, ReadOnly};
use tensorprep::finish::ChannelOrder;
use tensorprep::graph::{Graph, GraphError, OnnxEmbedding, onnx};
use tensorprep::import;
use tensorprep::pipeline::{InputDesc, Op, Pipeline};
use tensorprep::{DType, Layout, PixelFormat, Quantization};

#[derive(Args)]
pub(crate) struct ConvertArgs {
    /// The source format: hf, timm, ultralytics, tflite, mindir (these read
    /// SOURCE), torchvision:WEIGHTS or preset:NAME (these need no SOURCE).
    /// hf reproduces transformers' default torchvision backend as current
    /// PyTorch runs it (bilinear on uint8: AVX2, AVX-512 and ARM CPUs);
    /// hf:torchvision-float32 where torchvision resizes bilinear through float32
    /// (AVX-512 CPUs up to torch 2.8, ARM up to torch 2.11, x86 without AVX2);
    /// hf:pil its PIL backend.
    #[arg(long)]
    from: String,
    /// The configuration or model to convert: `preprocessor_config.json`
    /// (hf), a `config.json` or `pretrained_cfg` (timm), an exported `.onnx`
    /// (ultralytics), a `.tflite`, a `.mindir`.
    source: Option<PathBuf>,
    /// The graph file to write (`model.tpp` next to `model.onnx` is found
    /// automatically by `--graph model.onnx`).
    #[arg(short, long)]
    out: PathBuf,
    /// The model input's name to declare (default: the importer's).
    #[arg(long)]
    name: Option<String>,
    /// Do not add the self-test vector (a synthetic picture and the output
    /// this build computes for it, for `tensorprep verify` on the device).
    #[arg(long)]
    no_self_test: bool,
    /// Replace OUT even if it is read-only.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub(crate) struct InspectArgs {
    /// A graph file, or a model with a sidecar or embedded graph.
    file: PathBuf,
    /// The example input size the shapes are shown for.
    #[arg(long, default_value = "640x480")]
    size: String,
}

#[derive(Args)]
pub(crate) struct VerifyArgs {
    /// A graph file, or a model with a sidecar or embedded graph.
    file: PathBuf,
}

#[derive(Args)]
pub(crate) struct EmbedArgs {
    /// The graph file to store.
    graph: PathBuf,
    /// The ONNX model.
    model: PathBuf,
    /// Where to write the model with the graph (default: replace MODEL,
    /// through a temporary file renamed into place).
    #[arg(short, long)]
    out: Option<PathBuf>,
    /// Embed even if the graph's output does not fit the model's input, and
    /// replace the output (or MODEL) even if it is read-only.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub(crate) struct ExtractArgs {
    /// The ONNX model holding a graph.
    model: PathBuf,
    /// The graph file to write.
    #[arg(short, long)]
    out: PathBuf,
    /// Replace OUT even if it is read-only.
    #[arg(long)]
    force: bool,
}

/// A graph file (`.tpp`), or the graph of a model (sidecar or embedded).
pub(crate) fn load(path: &Path) -> Result<Graph, String> {
    Graph::for_model(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn imported(args: &ConvertArgs) -> Result<Graph, String> {
    import::convert(&args.from, args.source.as_deref())
        .map_err(|e| format!("--from {}: {e}", args.from))
}

pub(crate) fn convert(args: &ConvertArgs) -> Result<ExitCode, String> {
    let mut graph = imported(args)?;
    if let Some(name) = &args.name {
        graph.output.name = name.clone();
    }
    if !args.no_self_test {
        // A synthetic picture for the ops, a JPEG and a PNG for the decoders.
        graph
            .add_self_tests()
            .map_err(|e| format!("cannot make the self-tests: {e}"))?;
    }
    atomic::write_bytes(&args.out, ReadOnly::forced(args.force), &graph.encode())?;
    eprintln!(
        "wrote {} ({} ops, output {} {:?} {:?}{})",
        args.out.display(),
        graph.pipeline.ops().len(),
        shape_text(graph.output.shape),
        graph.output.dtype,
        graph.output.layout,
        match graph.self_tests.len() {
            0 => String::new(),
            1 => ", 1 self-test".to_owned(),
            n => format!(", {n} self-tests"),
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn shape_text(shape: Option<[usize; 3]>) -> String {
    shape.map_or("size depends on the image".into(), |s| {
        format!("{}x{}x{}", s[0], s[1], s[2])
    })
}

fn parse_size(text: &str) -> Result<(u32, u32), String> {
    text.split_once('x')
        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
        .filter(|&(w, h)| w > 0 && h > 0)
        .ok_or_else(|| format!("--size `{text}` is not WIDTHxHEIGHT"))
}

/// The image size after `ops` (pixel ops) for a `width` x `height` input.
fn size_after(graph: &Graph, ops: &[Op], width: u32, height: u32) -> Result<(u32, u32), String> {
    let format = match ops.first() {
        Some(Op::Decode(d)) => d.format,
        _ => PixelFormat::Rgb8,
    };
    let order = if format == PixelFormat::Gray8 {
        ChannelOrder::Gray
    } else {
        ChannelOrder::Rgb
    };
    let mut p = Pipeline::from_ops(ops).map_err(|e| e.to_string())?;
    p.push(Op::Layout {
        layout: Layout::Hwc,
        order,
    })
    .and_then(|p| {
        p.push(Op::Cast {
            dtype: DType::U8,
            quantization: Quantization::IDENTITY,
        })
    })
    .map_err(|e| e.to_string())?;
    let g = Graph {
        pipeline: p,
        ..graph.clone()
    };
    let plan = g
        .compile(InputDesc::pixels(format, width, height))
        .map_err(|e| e.to_string())?;
    let [h, w, _] = plan.output_shape().unwrap_or([0, 0, 0]);
    Ok((w as u32, h as u32))
}

pub(crate) fn inspect(args: &InspectArgs) -> Result<ExitCode, String> {
    let graph = load(&args.file)?;
    let (width, height) = parse_size(&args.size)?;
    let p = &graph.provenance;
    println!("graph: {}", args.file.display());
    println!("  made by: {}", p.producer);
    if !p.source.is_empty() {
        println!("  from:    {}", p.source);
    }
    let i = &graph.input;
    println!(
        "input: {}{} pixel formats ({} YUV)",
        if i.accepts_jpeg { "JPEG files, " } else { "" },
        i.pixel_formats.len(),
        match i.yuv_range {
            tensorprep::color::YuvRange::Full => "full-range",
            _ => "limited-range",
        }
    );
    println!("ops (shapes for a {width}x{height} input):");
    let ops = graph.pipeline.ops();
    let pixel_ops = ops
        .iter()
        .position(|op| matches!(op, Op::Normalize(_) | Op::Layout { .. } | Op::Cast { .. }))
        .unwrap_or(ops.len());
    for (k, op) in ops.iter().enumerate() {
        let after = if k < pixel_ops {
            match size_after(&graph, &ops[..=k], width, height) {
                Ok((w, h)) => format!("-> {w}x{h}"),
                Err(e) => format!("-> error: {e}"),
            }
        } else {
            String::new()
        };
        println!("  {k:>2}. {:<55} {after}", op.to_string());
    }
    let o = &graph.output;
    println!(
        "output: `{}` {} {:?} {:?}",
        o.name,
        shape_text(o.shape),
        o.dtype,
        o.layout
    );
    println!("features: {}", graph.required_features().join(", "));
    println!("self-tests: {}", graph.self_tests.len());
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn verify(args: &VerifyArgs) -> Result<ExitCode, String> {
    let graph = load(&args.file)?;
    if graph.self_tests.is_empty() {
        return Err(format!(
            "{} has no self-tests (`tensorprep convert` adds one unless --no-self-test)",
            args.file.display()
        ));
    }
    // JPEG self-tests run once per decoder this build has; the others once.
    let reports = graph.verify().map_err(|e| e.to_string())?;
    for r in &reports {
        println!("{r}");
    }
    let failed = reports.iter().filter(|r| !r.passed()).count();
    if failed > 0 {
        eprintln!(
            "tensorprep: {failed} of {} self-tests failed",
            reports.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    println!(
        "all {} checks passed ({} self-tests, JPEG ones once per decoder)",
        reports.len(),
        graph.self_tests.len()
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn embed(args: &EmbedArgs) -> Result<ExitCode, String> {
    let graph = Graph::load(&args.graph).map_err(|e| format!("{}: {e}", args.graph.display()))?;
    let at = |e: GraphError| format!("{}: {e}", args.model.display());
    // Both read the model's top-level fields, seeking past the weights, and
    // the copy streams it: memory does not grow with the model.
    let fits = tensorprep::graph::onnx_file_inputs(&args.model)
        .map_err(at)
        .and_then(|inputs| graph.check_fits(&inputs).map_err(at));
    match fits {
        Err(e) if !args.force => return Err(format!("{e}; --force embeds it anyway")),
        Err(e) => eprintln!("tensorprep: warning (--force): {e}"),
        Ok(()) => {}
    }
    let embedding = OnnxEmbedding::new(&args.model, &graph).map_err(at)?;
    let out = args.out.as_deref().unwrap_or(&args.model);
    atomic::write(out, ReadOnly::forced(args.force), |w| {
        embedding.write_to(w).map(drop)
    })?;
    if embedding.replaced() > 0 {
        eprintln!(
            "replaced the graph embedded in {} before{}",
            args.model.display(),
            if embedding.previous() == Some(&graph) {
                " (it was the same)"
            } else {
                ""
            }
        );
    }
    eprintln!(
        "wrote {} ({} bytes, of which {} are the `{}` entry)",
        out.display(),
        embedding.output_len(),
        embedding.entry_len(),
        onnx::METADATA_KEY
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn extract(args: &ExtractArgs) -> Result<ExitCode, String> {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(&args.model, &args.out) {
        return Err(format!(
            "-o {} is the model itself: the graph would replace the model",
            args.out.display()
        ));
    }
    let graph = tensorprep::graph::embedded_in_onnx_file(&args.model)
        .map_err(|e| format!("{}: {e}", args.model.display()))?
        .ok_or_else(|| {
            format!(
                "{} has no `{}` metadata entry",
                args.model.display(),
                onnx::METADATA_KEY
            )
        })?;
    atomic::write_bytes(&args.out, ReadOnly::forced(args.force), &graph.encode())?;
    eprintln!("wrote {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}
