//! `tensorprep preview`: a PNG grid of a few training samples as the model
//! sees them (the library's `train::Preview` draws it).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args};
use tensorprep::train::{Preview, TrainPipeline};

use crate::atomic::{self, ReadOnly};
use crate::train::open;
use crate::{Decoder, backend, default_backend, graphs};

#[derive(Args)]
#[command(group(ArgGroup::new("source").required(true).args(["preset", "graph"])))]
pub(crate) struct PreviewArgs {
    /// A training preset: `imagenet-train`, `imagenet-autoaugment`,
    /// `imagenet-randaugment`, `imagenet-trivialaugment`, `imagenet-augmix`.
    #[arg(long)]
    preset: Option<String>,
    /// A graph file (`.tpp`), or a model with its graph beside or inside it:
    /// its pipeline as a validation loader runs it.
    #[arg(long)]
    graph: Option<PathBuf>,
    /// An image folder (a sub-folder per class), a `.rec` (its `.idx`
    /// beside it), a `.tfrecord`, or WebDataset `.tar` shards (braces allowed).
    data: String,
    /// The PNG file to write.
    #[arg(short, long)]
    out: PathBuf,
    /// Samples shown: the epoch's first, in the loader's order.
    #[arg(long, default_value_t = Preview::default().samples)]
    samples: usize,
    /// Tiles per row [default: up to 4].
    #[arg(long)]
    columns: Option<usize>,
    /// The loader's seed.
    #[arg(long, default_value_t = Preview::default().seed)]
    seed: u64,
    /// The epoch.
    #[arg(long, default_value_t = Preview::default().epoch)]
    epoch: u32,
    /// The JPEG decoder [default: libjpeg-turbo when this build has it].
    #[arg(long, value_enum)]
    decoder: Option<Decoder>,
    /// Replace OUT even if it is read-only.
    #[arg(long)]
    force: bool,
}

pub(crate) fn preview(args: &PreviewArgs) -> Result<ExitCode, String> {
    let mut pipeline = match (&args.preset, &args.graph) {
        (Some(name), _) => TrainPipeline::preset(name).ok_or_else(|| {
            format!(
                "unknown training preset `{name}` (known: {})",
                TrainPipeline::PRESETS.join(", ")
            )
        })?,
        (None, Some(path)) => {
            let graph = graphs::load(path)?;
            TrainPipeline::from_pipeline(&graph.pipeline)
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        (None, None) => return Err("give --preset or --graph".into()),
    };
    pipeline.decode.backend = match args.decoder {
        Some(d) => backend(d)?,
        None => default_backend(),
    };
    let data = open(&args.data)?;
    let mut preview = Preview::new(args.samples);
    preview.columns = args.columns.unwrap_or(Preview::default().columns);
    preview.seed = args.seed;
    preview.epoch = args.epoch;
    let grid = preview
        .render(&pipeline, data.as_ref())
        .map_err(|e| tensorprep::error::report(&e))?;
    atomic::write(&args.out, ReadOnly::forced(args.force), |w| {
        grid.write_png(w)
    })?;
    eprintln!(
        "wrote {} ({}x{}, {} samples)",
        args.out.display(),
        grid.width,
        grid.height,
        grid.tiles.len()
    );
    Ok(ExitCode::SUCCESS)
}
