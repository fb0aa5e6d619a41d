//! `tensorprep`: run and benchmark preprocessing pipelines on image files
//! (JPEG, PNG, WebP), and make, inspect, verify and embed the graph files
//! that carry them.
//!
//! ```text
//! tensorprep run --preset imagenet-eval photo.jpg -o photo.npy
//! tensorprep run --graph model.tpp a.jpg b.png photos/ -o tensors/
//! tensorprep run --preset imagenet-eval photos/ --batch-npy batch.npy
//! tensorprep bench --preset imagenet-eval photos/ --threads 0 --repeat 5
//! tensorprep convert --from hf preprocessor_config.json -o model.tpp
//! tensorprep convert --from torchvision:ResNet50_Weights.IMAGENET1K_V2 -o resnet50.tpp
//! tensorprep inspect model.tpp --size 640x480
//! tensorprep verify model.tpp
//! tensorprep embed model.tpp model.onnx -o model_with_graph.onnx
//! tensorprep extract model_with_graph.onnx -o model.tpp
//! tensorprep presets
//! tensorprep preview --preset imagenet-train photos/ -o grid.png
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use tensorprep::Limits;
use tensorprep::decode::ImageFormat;
use tensorprep::jpeg::Backend;
use tensorprep::pipeline::{DecodeScaling, InputDesc, Pipeline, Plan};

mod atomic;
mod bench;
mod graphs;
mod inputs;
mod preview;
mod run;
mod train;

#[derive(Parser)]
#[command(
    name = "tensorprep",
    version,
    about = "Turn images (JPEG, PNG, WebP) into model-ready tensors."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline on image files and write the tensors as .npy files.
    Run(run::RunArgs),
    /// Measure a pipeline's throughput on image files held in memory.
    Bench(bench::BenchArgs),
    /// Make a graph file from a configuration users already ship.
    Convert(graphs::ConvertArgs),
    /// Describe a graph file: ops, the shape after each for an example size, declarations.
    Inspect(graphs::InspectArgs),
    /// Run a graph file's self-tests: does this build preprocess as the graph's maker did?
    Verify(graphs::VerifyArgs),
    /// Store a graph inside an ONNX model (`metadata_props` key `tensorprep.graph`).
    Embed(graphs::EmbedArgs),
    /// Take the graph out of an ONNX model into a graph file.
    Extract(graphs::ExtractArgs),
    /// Measure the training loader: images/s over the timed epochs, and a
    /// checksum of every batch it delivered.
    TrainBench(train::TrainBenchArgs),
    /// Write a PNG grid of a few training samples as the model sees them
    /// (de-normalised), with the ops drawn for each under it.
    Preview(preview::PreviewArgs),
    /// Pack an image folder into record files, or list a record file.
    #[command(subcommand)]
    Records(train::RecordsCommand),
    /// List the built-in presets (and, with --torchvision, the torchvision weights names).
    Presets {
        /// List the torchvision weights names `convert --from torchvision:NAME` knows.
        #[arg(long)]
        torchvision: bool,
    },
}

#[derive(Args)]
#[command(group(ArgGroup::new("source").required(true).args(["preset", "graph"])))]
struct PipelineArgs {
    /// A built-in pipeline, or a torchvision weights name as `torchvision:NAME`
    /// (`tensorprep presets --torchvision` lists both).
    #[arg(long)]
    preset: Option<String>,
    /// A graph file (`.tpp`), or a model whose graph is beside it (`model.tpp`)
    /// or embedded in it (ONNX).
    #[arg(long)]
    graph: Option<PathBuf>,
    /// The JPEG decoder [default: libjpeg-turbo when this build has it (the
    /// Pillow-exact one), else zune-jpeg].
    #[arg(long, value_enum)]
    decoder: Option<Decoder>,
    /// Decode JPEGs at 1/2, 1/4 or 1/8 size in the DCT domain before resizing:
    /// faster, not Pillow-exact (needs libjpeg-turbo).
    #[arg(long)]
    fast_decode: bool,
    /// Like `--fast-decode`, but down to the resize's target itself rather than
    /// twice it (Pillow's `draft(mode, target)`): faster still.
    #[arg(long, conflicts_with = "fast_decode")]
    draft_decode: bool,
    /// Decode the whole JPEG even where the output needs only part of it
    /// (libjpeg-turbo decodes only that part by default; the pixels are the same).
    #[arg(long)]
    full_decode: bool,
    /// With `--graph MODEL.onnx`: run even if the graph's output does not fit
    /// the model's input. Also replaces read-only output files.
    #[arg(long)]
    force: bool,
    /// Refuse images with more pixels than this [default: 134217728].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_pixels: Option<u64>,
    /// Decode damaged (truncated or corrupt) files as far as they go instead
    /// of failing, as Pillow's `LOAD_TRUNCATED_IMAGES` does; each one is reported.
    #[arg(long)]
    lenient: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Decoder {
    /// zune-jpeg, pure Rust (always built in).
    ZuneJpeg,
    /// libjpeg-turbo, Pillow's own decoder (cargo feature `libjpeg-turbo`).
    LibjpegTurbo,
}

/// What `--version` prints: the version, the decoders and the formats built in.
fn version_text() -> String {
    let decoders: Vec<&str> = Backend::available().map(Backend::name).collect();
    let formats: Vec<&str> = ImageFormat::supported().map(ImageFormat::name).collect();
    format!(
        "{}\nformats: {}\nJPEG decoders: {} (default {})\nfeatures: graphs, importers (Hugging Face, timm, torchvision, Ultralytics, TFLite, MindIR){}",
        tensorprep::VERSION,
        formats.join(", "),
        decoders.join(", "),
        default_backend().name(),
        if Backend::LibjpegTurbo.is_available() {
            ", DCT-scaled and region JPEG decoding"
        } else {
            "; rebuild with `--features libjpeg-turbo` for the Pillow-exact JPEG decoder"
        }
    )
}

fn main() -> ExitCode {
    restore_sigpipe();
    let version: &'static str = Box::leak(version_text().into_boxed_str());
    let matches = Cli::command().version(version).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::TrainBench(args) => train::train_bench(&args),
        Command::Records(command) => train::records(&command),
        Command::Preview(args) => preview::preview(&args),
        Command::Convert(args) => graphs::convert(&args),
        Command::Inspect(args) => graphs::inspect(&args),
        Command::Verify(args) => graphs::verify(&args),
        Command::Embed(args) => graphs::embed(&args),
        Command::Extract(args) => graphs::extract(&args),
        Command::Presets { torchvision } => {
            for name in Pipeline::PRESETS {
                println!("{name}");
            }
            if torchvision {
                for name in tensorprep::import::torchvision_names() {
                    println!("torchvision:{name}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|message| {
        eprintln!("tensorprep: {message}");
        ExitCode::FAILURE
    })
}

/// Lets a closed standard output end the command quietly, as it ends `cat`
/// or `ls`: Rust starts programs with SIGPIPE ignored, so a print to a pipe
/// whose reader has gone fails and `println!` panics (`tensorprep presets
/// --torchvision | head` exited 101 with a panic message whenever `head` had
/// closed first). With the default action back, the kernel ends the process
/// at that write and the shell sees a pipe closed early. One switch at the
/// start covers every command that prints (`presets`, `inspect`, `verify`,
/// `bench`, `records ls`, `run -o -`), where a checked write would be needed
/// at each of their prints.
#[cfg(unix)]
fn restore_sigpipe() {
    // SAFETY: `signal` with the default action only changes how the process
    // answers SIGPIPE; it runs first in `main`, before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Elsewhere a broken pipe is an ordinary write error.
#[cfg(not(unix))]
fn restore_sigpipe() {}

/// How to build libjpeg-turbo into this command: the CLI's Cargo feature is
/// `libjpeg-turbo` (the library's, which its messages leave unnamed, is `turbojpeg`).
const REBUILD_WITH_LIBJPEG_TURBO: &str = "rebuild with \
    `cargo build --release -p tensorprep-cli --features libjpeg-turbo` (needs cmake and nasm)";

/// A library error as the CLI reports it: the library's message, and how to
/// rebuild this command when its build leaves out the decoder the input needs.
pub(crate) fn describe(e: &tensorprep::Error) -> String {
    match e.missing_decoder() {
        Some(_) => format!("{e}; {REBUILD_WITH_LIBJPEG_TURBO}"),
        None => e.to_string(),
    }
}

/// The decoder used when none is asked for: the exact one when built in.
fn default_backend() -> Backend {
    Backend::available().next_back().unwrap_or_default()
}

/// The reduced-size decoding `--fast-decode` or `--draft-decode` asks for
/// (`None`: exact), or an error saying how to get libjpeg-turbo, which both need.
pub(crate) fn reduced_decode(
    fast: bool,
    draft: bool,
    backend: Backend,
) -> Result<Option<DecodeScaling>, String> {
    let (scaling, flag) = match (fast, draft) {
        (_, true) => (DecodeScaling::Draft, "--draft-decode"),
        (true, false) => (DecodeScaling::Fast, "--fast-decode"),
        (false, false) => return Ok(None),
    };
    if backend == Backend::LibjpegTurbo {
        return Ok(Some(scaling));
    }
    Err(if Backend::LibjpegTurbo.is_available() {
        format!("{flag} needs the libjpeg-turbo decoder: add --decoder libjpeg-turbo")
    } else {
        format!(
            "{flag} needs the libjpeg-turbo decoder, which this build lacks; {REBUILD_WITH_LIBJPEG_TURBO}"
        )
    })
}

fn backend(decoder: Decoder) -> Result<Backend, String> {
    match decoder {
        Decoder::ZuneJpeg => Ok(Backend::Zune),
        Decoder::LibjpegTurbo if Backend::LibjpegTurbo.is_available() => Ok(Backend::LibjpegTurbo),
        Decoder::LibjpegTurbo => Err(format!(
            "this build has no libjpeg-turbo decoder; {REBUILD_WITH_LIBJPEG_TURBO}"
        )),
    }
}

/// What `--preset` or `--graph` names, for messages.
fn source_name(args: &PipelineArgs) -> String {
    match (&args.preset, &args.graph) {
        (Some(p), _) => format!("preset `{p}`"),
        (None, Some(g)) => format!("graph {}", g.display()),
        (None, None) => "no pipeline".into(),
    }
}

/// The pipeline `--preset` or `--graph` names, and the decoder its own
/// Decode op asks for (`None` for presets: the build's best).
fn pipeline(args: &PipelineArgs) -> Result<(Pipeline, Option<Backend>), String> {
    if let Some(preset) = &args.preset {
        if let Some(name) = preset.strip_prefix("torchvision:") {
            let graph = tensorprep::import::torchvision(name).map_err(|e| e.to_string())?;
            return Ok((graph.pipeline, None));
        }
        let p = Pipeline::preset(preset).ok_or_else(|| {
            format!(
                "unknown preset `{preset}` (known: {}, and torchvision:WEIGHTS for the names \
                 `tensorprep presets --torchvision` lists)",
                Pipeline::PRESETS.join(", ")
            )
        })?;
        return Ok((p, None));
    }
    let path = args.graph.as_deref().ok_or("give --preset or --graph")?;
    let graph = graphs::load(path)?;
    if path.extension().is_some_and(|e| e == "onnx") {
        let fits = tensorprep::graph::onnx_file_inputs(path)
            .and_then(|inputs| graph.check_fits(&inputs))
            .map_err(|e| format!("{}: {e}", path.display()));
        match fits {
            Err(e) if !args.force => return Err(format!("{e}; --force runs it anyway")),
            Err(e) => eprintln!("tensorprep: warning (--force): {e}"),
            Ok(()) => {}
        }
    }
    let wanted = graph.pipeline.decoder();
    Ok((graph.pipeline, wanted))
}

/// The pipeline the arguments name, compiled for image files; the JPEG
/// decoder it uses; and, with `--lenient`, the same plan decoding leniently
/// (run when the strict one fails, so that damaged files are reported).
fn plan(args: &PipelineArgs) -> Result<(Plan, Backend, Option<Plan>), String> {
    let (mut pipeline, wanted) = pipeline(args)?;
    let backend = match (args.decoder, wanted) {
        (Some(d), _) => backend(d)?,
        // A graph made with libjpeg-turbo, or any preset: the best this build has.
        (None, Some(Backend::Zune)) if !Backend::LibjpegTurbo.is_available() => Backend::Zune,
        (None, Some(w)) if !w.is_available() => {
            eprintln!(
                "tensorprep: note: the graph decodes with {}, which this build lacks; \
                 using {} (pixels may differ by a few levels)",
                w.name(),
                default_backend().name()
            );
            default_backend()
        }
        (None, Some(w)) => w,
        (None, None) => default_backend(),
    };
    let reduced = reduced_decode(args.fast_decode, args.draft_decode, backend)?;
    pipeline.map_decode(|d| {
        d.backend = backend;
        d.region_of_interest = !args.full_decode;
        if let Some(scaling) = reduced {
            d.scaling = scaling;
        }
    });
    let limits = Limits {
        max_pixels: args.max_pixels.unwrap_or(Limits::DEFAULT.max_pixels),
        ..Limits::DEFAULT
    };
    let name = source_name(args);
    let compile = |p: &Pipeline| {
        p.compile_with_limits(InputDesc::Encoded, &limits)
            .map_err(|e| format!("{name}: {e}"))
    };
    let plan = compile(&pipeline)?;
    let lenient = if args.lenient {
        pipeline.map_decode(|d| d.strict = false);
        Some(compile(&pipeline)?)
    } else {
        None
    };
    Ok((plan, backend, lenient))
}

fn progress(len: usize) -> ProgressBar {
    // A bar only for long runs; indicatif hides it when stderr is not a terminal.
    if len < 16 {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} {per_sec} eta {eta}") {
        bar.set_style(style);
    }
    bar
}
