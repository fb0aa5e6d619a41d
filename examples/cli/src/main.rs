//! `tensorprep`: run and benchmark preprocessing pipelines on JPEG files, and
//! make, inspect, verify and embed the graph files that carry them.
//!
//! ```text
//! tensorprep run --preset imagenet-eval photo.jpg --out photo.npy
//! tensorprep run --graph model.tpp a.jpg b.jpg c.jpg --out tensors/
//! tensorprep bench --preset imagenet-eval photos/ --threads 2 --repeat 5
//! tensorprep convert --from hf preprocessor_config.json -o model.tpp
//! tensorprep convert --from torchvision:ResNet50_Weights.IMAGENET1K_V2 -o resnet50.tpp
//! tensorprep inspect model.tpp --size 640x480
//! tensorprep verify model.tpp
//! tensorprep embed model.tpp model.onnx -o model_with_graph.onnx
//! tensorprep extract model_with_graph.onnx -o model.tpp
//! tensorprep presets
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use tensorprep::jpeg::{Backend, DecodeOptions, JpegDecoder};
use tensorprep::pipeline::{DecodeScaling, Input, InputDesc, Pipeline, Plan, PlanState};
use tensorprep::{Image, PixelFormat, Tensor};

mod graphs;

#[derive(Parser)]
#[command(
    name = "tensorprep",
    version,
    about = "Turn JPEG photos into model-ready tensors."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline on JPEG files and write each tensor as a .npy file.
    Run(RunArgs),
    /// Measure a pipeline's throughput on every JPEG of a directory, held in memory.
    Bench(BenchArgs),
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
    /// A built-in pipeline (`tensorprep presets` lists them).
    #[arg(long)]
    preset: Option<String>,
    /// A graph file (`.tpp`), or a model whose graph is beside it (`model.tpp`)
    /// or embedded in it (ONNX).
    #[arg(long)]
    graph: Option<PathBuf>,
    /// The JPEG decoder [default: the graph's if this build has it, else zune-jpeg].
    #[arg(long, value_enum)]
    decoder: Option<Decoder>,
    /// Decode at 1/2, 1/4 or 1/8 size in the DCT domain before resizing: faster,
    /// not Pillow-exact (libjpeg-turbo only).
    #[arg(long)]
    fast_decode: bool,
    /// Decode the whole JPEG even where the output needs only part of it
    /// (libjpeg-turbo decodes only that part by default; the pixels are the same).
    #[arg(long)]
    full_decode: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Decoder {
    /// zune-jpeg, pure Rust (always built in).
    ZuneJpeg,
    /// libjpeg-turbo, Pillow's own decoder (cargo feature `libjpeg-turbo`).
    LibjpegTurbo,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// JPEG files to preprocess.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output: a `.npy` file for a single input, otherwise a directory that
    /// receives `<stem>.npy` per input.
    #[arg(long)]
    out: PathBuf,
    /// Stop at the first file that fails instead of going on with the others.
    #[arg(long)]
    fail_fast: bool,
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// Directory whose JPEG files (`.jpg`, `.jpeg`) are read into memory first.
    dir: PathBuf,
    /// Threads, each with its own plan state, taking the next image as they finish one.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Passes over all the files (after one warm-up pass).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Also time decoding alone with the same decoder, interleaved pass by
    /// pass with the pipeline, and print the ratio.
    #[arg(long)]
    baseline_decode: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(&args),
        Command::Bench(args) => bench(&args),
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

fn backend(decoder: Decoder) -> Result<Backend, String> {
    match decoder {
        Decoder::ZuneJpeg => Ok(Backend::Zune),
        Decoder::LibjpegTurbo if Backend::LibjpegTurbo.is_available() => Ok(Backend::LibjpegTurbo),
        Decoder::LibjpegTurbo => Err("this build has no libjpeg-turbo decoder; rebuild with \
             `cargo build --release -p tensorprep-cli --features libjpeg-turbo` \
             (needs cmake and nasm)"
            .to_owned()),
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
/// Decode op asks for.
fn pipeline(args: &PipelineArgs) -> Result<(Pipeline, Backend), String> {
    if let Some(preset) = &args.preset {
        let p = Pipeline::preset(preset).ok_or_else(|| {
            format!(
                "unknown preset `{preset}` (known: {})",
                Pipeline::PRESETS.join(", ")
            )
        })?;
        return Ok((p, Backend::Zune));
    }
    let path = args.graph.as_deref().ok_or("give --preset or --graph")?;
    let graph = graphs::load(path)?;
    let wanted = graph.pipeline.decoder().unwrap_or(Backend::Zune);
    Ok((graph.pipeline, wanted))
}

/// The pipeline the arguments name, compiled for JPEG input, and its output shape.
fn plan(args: &PipelineArgs) -> Result<(Plan, Backend, [usize; 3]), String> {
    let (mut pipeline, wanted) = pipeline(args)?;
    let backend = match args.decoder {
        Some(d) => backend(d)?,
        None if wanted.is_available() => wanted,
        None => {
            eprintln!(
                "tensorprep: note: the graph decodes with {wanted:?}, which this build lacks; \
                 using zune-jpeg (pixels may differ by a few levels)"
            );
            Backend::Zune
        }
    };
    pipeline.map_decode(|d| {
        d.backend = backend;
        d.region_of_interest = !args.full_decode;
        if args.fast_decode {
            d.scaling = DecodeScaling::Fast;
        }
    });
    let name = source_name(args);
    let plan = pipeline
        .compile(InputDesc::Jpeg)
        .map_err(|e| format!("{name}: {e}"))?;
    // Every output of a run goes into one reused tensor of this shape.
    let shape = plan.output_shape().ok_or_else(|| {
        format!("{name} has an image-dependent output size, which the CLI does not support yet")
    })?;
    Ok((plan, backend, shape))
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

/// Preprocesses one file into `tensor` (of the plan's `shape`) and writes it to `out`.
fn run_one(
    plan: &Plan,
    state: &mut PlanState,
    (tensor, shape): (&mut Tensor, &[usize; 3]),
    input: &Path,
    out: &Path,
) -> Result<(), String> {
    let bytes = std::fs::read(input).map_err(|e| format!("cannot read it: {e}"))?;
    plan.run(state, Input::Encoded(&bytes), tensor.as_mut())
        .map_err(|e| e.to_string())?;
    let file =
        std::fs::File::create(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    tensorprep::npy::write(std::io::BufWriter::new(file), shape, tensor)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))
}

fn run(args: &RunArgs) -> Result<ExitCode, String> {
    let (plan, _, shape) = plan(&args.pipeline)?;
    let single_file = args.inputs.len() == 1 && args.out.extension().is_some_and(|e| e == "npy");
    let outputs: Vec<PathBuf> = if single_file {
        vec![args.out.clone()]
    } else {
        std::fs::create_dir_all(&args.out)
            .map_err(|e| format!("cannot create directory {}: {e}", args.out.display()))?;
        args.inputs
            .iter()
            .map(|p| {
                let stem = p.file_stem().unwrap_or(p.as_os_str());
                args.out.join(stem).with_extension("npy")
            })
            .collect()
    };
    let bar = progress(args.inputs.len());
    let mut state = PlanState::new();
    let mut tensor = Tensor::zeros(plan.dtype(), shape.iter().product());
    let mut written = std::collections::HashSet::new();
    let mut failed = 0;
    for (input, out) in args.inputs.iter().zip(&outputs) {
        let result = if written.insert(out.clone()) {
            run_one(&plan, &mut state, (&mut tensor, &shape), input, out)
        } else {
            Err(format!(
                "another input already wrote {} (same file stem)",
                out.display()
            ))
        };
        bar.inc(1);
        if let Err(message) = result {
            failed += 1;
            bar.suspend(|| eprintln!("tensorprep: {}: {message}", input.display()));
            if args.fail_fast {
                bar.abandon();
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    bar.finish_and_clear();
    let ok = args.inputs.len() - failed;
    let target = if single_file {
        args.out.display().to_string()
    } else {
        format!("{}/", args.out.display())
    };
    eprintln!(
        "wrote {ok} tensor(s) of shape {shape:?} to {target}{}",
        if failed > 0 {
            format!(" ({failed} of {} inputs failed)", args.inputs.len())
        } else {
            String::new()
        }
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Every `.jpg` / `.jpeg` file directly inside `dir`, sorted by name.
fn jpeg_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                    e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg")
                })
        })
        .collect();
    files.sort();
    Ok(files)
}

/// One timed pass over `jobs` items on one thread per state; each thread takes
/// the next item as it finishes one.
fn timed_pass<S: Send>(
    states: &mut [S],
    jobs: usize,
    work: impl Fn(&mut S, usize) + Sync,
) -> Duration {
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for state in states.iter_mut() {
            let (next, work) = (&next, &work);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs {
                        break;
                    }
                    work(state, i);
                }
            });
        }
    });
    start.elapsed()
}

fn bench(args: &BenchArgs) -> Result<ExitCode, String> {
    let (plan, backend, shape) = plan(&args.pipeline)?;
    let len = shape.iter().product();
    let threads = args.threads.max(1);
    let repeat = args.repeat.max(1);
    let mut files = Vec::new();
    let mut skipped = 0;
    let mut check = PlanState::new();
    let mut pixels = 0u64;
    let mut out = Tensor::zeros(plan.dtype(), len);
    for path in jpeg_files(&args.dir)? {
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // Files the pipeline rejects are reported and left out of the timing.
        match plan.run(&mut check, Input::Encoded(&bytes), out.as_mut()) {
            Ok(g) => {
                pixels += u64::from(g.input.0) * u64::from(g.input.1);
                files.push(bytes);
            }
            Err(e) => {
                skipped += 1;
                eprintln!("tensorprep: {}: {e} (left out)", path.display());
            }
        }
    }
    if files.is_empty() {
        return Err(format!("no decodable JPEG files in {}", args.dir.display()));
    }
    let n = files.len();
    let mut states: Vec<(PlanState, Tensor)> = (0..threads)
        .map(|_| (PlanState::new(), Tensor::zeros(plan.dtype(), len)))
        .collect();
    let run_pass = |states: &mut [(PlanState, Tensor)], jobs| {
        timed_pass(states, jobs, |(state, out), i| {
            // Every file ran once above, so an error here cannot happen.
            let _ = plan.run(state, Input::Encoded(&files[i % n]), out.as_mut());
        })
    };
    let mut decoders: Vec<(JpegDecoder, Option<Image>)> = (0..threads)
        .map(|_| {
            let options = DecodeOptions {
                backend,
                format: PixelFormat::Rgb8,
                ..DecodeOptions::default()
            };
            (JpegDecoder::new(options), None)
        })
        .collect();
    let decode_pass = |decoders: &mut [(JpegDecoder, Option<Image>)], jobs| {
        timed_pass(decoders, jobs, |(dec, img), i| {
            let bytes = &files[i % n];
            let Ok(info) = dec.read_info(bytes) else {
                return;
            };
            if img
                .as_ref()
                .is_none_or(|m| (m.width(), m.height()) != (info.width, info.height))
            {
                *img = Image::new(PixelFormat::Rgb8, info.width, info.height).ok();
            }
            if let Some(m) = img {
                let _ = dec.decode_into(bytes, &mut m.view_mut());
            }
        })
    };
    // Warm-up: every state sees every size once (first-run allocations, caches).
    run_pass(&mut states, n * threads);
    if args.baseline_decode {
        decode_pass(&mut decoders, n * threads);
    }
    let (mut t_plan, mut t_decode) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..repeat {
        if args.baseline_decode {
            t_decode += decode_pass(&mut decoders, n);
        }
        t_plan += run_pass(&mut states, n);
    }
    let images = (n * repeat) as f64;
    let rate = images / t_plan.as_secs_f64();
    println!(
        "files: {n} JPEGs, {:.1} MP in all{}",
        pixels as f64 / 1e6,
        if skipped > 0 {
            format!(" ({skipped} left out)")
        } else {
            String::new()
        }
    );
    println!(
        "pipeline: {}, decoder {:?}{}{}, {threads} thread(s), {repeat} pass(es)",
        source_name(&args.pipeline),
        backend,
        if args.pipeline.fast_decode {
            ", fast decode"
        } else {
            ""
        },
        if args.pipeline.full_decode {
            ", full decode"
        } else {
            ""
        },
    );
    println!(
        "time: {:.3} s, {:.2} ms per image",
        t_plan.as_secs_f64(),
        1e3 / rate * threads as f64
    );
    if args.baseline_decode {
        let decode_rate = images / t_decode.as_secs_f64();
        println!("decode-only images/s: {decode_rate:.2}");
        println!("ratio to decode-only: {:.3}", rate / decode_rate);
    }
    println!("images/s: {rate:.2}");
    Ok(ExitCode::SUCCESS)
}
