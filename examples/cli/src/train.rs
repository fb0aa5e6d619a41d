//! The training commands: `train-bench` (the loader's throughput, and a
//! checksum of everything it delivers) and `records` (pack a folder into
//! RecordIO or TFRecord, list a record file).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand};
use tensorprep::Fnv1a64;
use tensorprep::train::data::folder::FolderDataset;
use tensorprep::train::data::mindrecord::write as mindrecord_write;
use tensorprep::train::data::recordio::{RecordIoDataset, RecordIoWriter, pack_image};
use tensorprep::train::data::shards;
use tensorprep::train::data::tfrecord::{
    Feature, Keys, TfRecordDataset, TfRecordWriter, encode_example,
};
use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
use tensorprep::train::data::{DataError, Dataset, Sample};
use tensorprep::train::{Budget, Loader, LoaderConfig, TrainPipeline, autotune};

use crate::atomic::{self, ReadOnly};
use crate::{Decoder, backend, default_backend, reduced_decode};

#[derive(Args)]
pub(crate) struct TrainBenchArgs {
    /// The training pipeline: `imagenet-train` (RandomResizedCrop 224,
    /// RandomHorizontalFlip, ToTensor, Normalize(ImageNet), CHW float32), or
    /// it with torchvision's reference policies: `imagenet-autoaugment`,
    /// `imagenet-randaugment`, `imagenet-trivialaugment`, `imagenet-augmix`.
    #[arg(long, default_value = "imagenet-train")]
    preset: String,
    /// An image folder (a sub-folder per class; its files ending with
    /// torchvision's image extensions), a `.rec` (its `.idx` beside it), a
    /// `.tfrecord`, any data file of a MindRecord set (`.mindrecord`,
    /// `.mindrecord0`, ...), or WebDataset `.tar` shards (braces allowed);
    /// `.rec` and `.tfrecord` patterns (`shard-*.tfrecord`,
    /// `part-{000..099}.rec`) name many files read as one dataset.
    data: String,
    /// Decode + augment threads.
    #[arg(long, default_value_t = loader_defaults().workers)]
    workers: usize,
    /// Read threads (more for slow or remote storage).
    #[arg(long, default_value_t = loader_defaults().read_workers)]
    read_workers: usize,
    /// Collate threads.
    #[arg(long, default_value_t = loader_defaults().collate_workers)]
    collate_workers: usize,
    /// Read samples queued ahead of the decode threads [default: 2 x workers + 2].
    #[arg(long)]
    prefetch: Option<usize>,
    /// Batch buffers in circulation (the memory bound).
    #[arg(long, default_value_t = loader_defaults().depth)]
    depth: usize,
    /// The most one sample's decode and augmentation may take, in MiB (an
    /// image needing more is an error naming it).
    #[arg(long, default_value_t = loader_defaults().decode_budget >> 20)]
    decode_budget: u64,
    /// The most the batch buffers may take together, in MiB.
    #[arg(long, default_value_t = loader_defaults().buffer_limit >> 20)]
    buffer_limit: u64,
    /// Choose the threads, read-ahead and buffers from measurements within
    /// --cpu-budget and --memory-budget; prints the choice (as flags to pin it).
    #[arg(long)]
    autotune: bool,
    /// Autotune's CPU cap [default: every CPU].
    #[arg(long)]
    cpu_budget: Option<usize>,
    /// Autotune's memory cap, in MiB.
    #[arg(long, default_value_t = 2048)]
    memory_budget: u64,
    /// Samples per batch.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Epochs timed.
    #[arg(long, default_value_t = 1)]
    epochs: u32,
    /// Epochs run before the timed ones (not counted).
    #[arg(long, default_value_t = 0)]
    warmup_epochs: u32,
    /// The draws' seed.
    #[arg(long, default_value_t = loader_defaults().seed)]
    seed: u64,
    /// The JPEG decoder [default: libjpeg-turbo when this build has it].
    #[arg(long, value_enum)]
    decoder: Option<Decoder>,
    /// DCT-scaled decoding (libjpeg-turbo): each drawn crop is decoded at the
    /// smallest 1/2, 1/4 or 1/8 scale that keeps it twice the output size,
    /// then resized; faster, not bit-exact with Pillow's full-size path.
    #[arg(long)]
    fast_decode: bool,
    /// Like `--fast-decode`, keeping each crop at least the output size
    /// rather than twice it (Pillow's `draft(mode, size)`): faster still.
    #[arg(long, conflicts_with = "fast_decode")]
    draft_decode: bool,
    /// Print `checksum: <16 hex digits>` over every delivered batch's tensor
    /// bytes and labels (little-endian float32), in delivery order.
    #[arg(long)]
    checksum: bool,
}

/// The loader's defaults, the library's: every flag left out keeps its
/// value, and `--help` shows them.
pub(crate) fn loader_defaults() -> LoaderConfig {
    LoaderConfig::default()
}

/// A dataset from what `DATA` names.
pub(crate) fn open(data: &str) -> Result<Arc<dyn Dataset>, String> {
    let path = Path::new(data);
    let named = |e: &dyn std::fmt::Display| format!("{data}: {e}");
    if path.is_dir() {
        return match builtin(path)? {
            Some(d) => Ok(d),
            None => Ok(Arc::new(FolderDataset::open(path).map_err(|e| named(&e))?)),
        };
    }
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    // A pattern (`shard-*.tfrecord`, `part-{000..099}.rec`, `{a,b}.rec`)
    // names many files: one dataset over them, opened within a budget.
    let many = || -> Result<Vec<std::path::PathBuf>, String> {
        shards::expand(data).map_err(|e| named(&e))
    };
    let pattern = data.contains(['*', '?', '{']);
    match ext {
        "rec" if pattern => Ok(Arc::new(
            RecordIoDataset::open_many(&many()?, shards::DEFAULT_OPEN_FILES)
                .map_err(|e| named(&e))?,
        )),
        "tfrecord" if pattern => Ok(Arc::new(
            TfRecordDataset::open_many(&many()?, Keys::CONVENTIONAL, shards::DEFAULT_OPEN_FILES)
                .map_err(|e| named(&e))?,
        )),
        "rec" => Ok(Arc::new(
            RecordIoDataset::open(path).map_err(|e| named(&e))?,
        )),
        "tfrecord" => Ok(Arc::new(
            TfRecordDataset::open(path, Keys::CONVENTIONAL).map_err(|e| named(&e))?,
        )),
        "tar" => Ok(Arc::new(
            WebDataset::open(data, WebKeys::CONVENTIONAL).map_err(|e| named(&e))?,
        )),
        // Any data file of a MindRecord set: `x.mindrecord`, `x.mindrecord0`, ...
        _ if ext
            .strip_prefix("mindrecord")
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            Ok(Arc::new(
                tensorprep::train::data::mindrecord::MindRecord::open(path)
                    .map_err(|e| named(&e))?,
            ))
        }
        _ => Err(format!(
            "{data}: not a folder, .rec, .tfrecord, .mindrecord or .tar (WebDataset) file"
        )),
    }
}

/// The built-in dataset a folder holds, by its layout (the training split):
/// CIFAR-10's `cifar-10-batches-bin/`, CIFAR-100's `cifar-100-binary/`
/// (fine labels), torchvision's `MNIST/raw/`, `FashionMNIST/raw/` or
/// `KMNIST/raw/`, each either the folder itself or inside it. `None` for
/// any other folder (an image folder); an error when it holds several.
fn builtin(dir: &Path) -> Result<Option<Arc<dyn Dataset>>, String> {
    use tensorprep::train::data::cifar::{Cifar10, Cifar100, Cifar100Label, Split};
    use tensorprep::train::data::mnist::{Mnist, Variant};
    let is = |name: &str| dir.file_name().is_some_and(|n| n == name) || dir.join(name).is_dir();
    type Opener<'a> = Box<dyn Fn() -> Result<Arc<dyn Dataset>, DataError> + 'a>;
    let mut found: Vec<(&str, Opener<'_>)> = Vec::new();
    if is(Cifar10::FOLDER) {
        found.push((
            Cifar10::FOLDER,
            Box::new(|| Ok(Arc::new(Cifar10::open(dir, Split::Train)?) as Arc<dyn Dataset>)),
        ));
    }
    if is(Cifar100::FOLDER) {
        found.push((
            Cifar100::FOLDER,
            Box::new(|| Ok(Arc::new(Cifar100::open(dir, Split::Train, Cifar100Label::Fine)?) as _)),
        ));
    }
    for variant in [Variant::Mnist, Variant::Fashion, Variant::Kmnist] {
        let name = variant.folder();
        let own = dir.file_name().is_some_and(|n| n == name) && dir.join("raw").is_dir();
        if own || dir.join(name).join("raw").is_dir() {
            // Mnist::open takes the root above the variant's folder.
            let root = if own {
                dir.parent().unwrap_or(dir)
            } else {
                dir
            };
            found.push((
                name,
                Box::new(move || Ok(Arc::new(Mnist::open(root, variant, Split::Train)?) as _)),
            ));
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => (found[0].1)()
            .map(Some)
            .map_err(|e| format!("{}: {e}", dir.display())),
        _ => Err(format!(
            "{}: holds {}: name the one to read",
            dir.display(),
            found.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )),
    }
}

pub(crate) fn train_bench(args: &TrainBenchArgs) -> Result<ExitCode, String> {
    let mut pipeline = TrainPipeline::preset(&args.preset).ok_or_else(|| {
        format!(
            "unknown training preset `{}` (known: {})",
            args.preset,
            TrainPipeline::PRESETS.join(", ")
        )
    })?;
    pipeline.decode.backend = match args.decoder {
        Some(d) => backend(d)?,
        None => default_backend(),
    };
    // The scale follows each drawn crop (its size against the output's).
    if let Some(scaling) =
        reduced_decode(args.fast_decode, args.draft_decode, pipeline.decode.backend)?
    {
        pipeline.decode.scaling = scaling;
    }
    let plan = Arc::new(pipeline.compile().map_err(|e| e.to_string())?);
    let data = open(&args.data)?;
    if data.is_empty() {
        return Err(format!("{}: no samples", args.data));
    }
    // Out-of-range values are the library's to refuse, with its message.
    let mut config = loader_defaults();
    config.batch_size = args.batch;
    config.seed = args.seed;
    if args.workers != config.workers {
        // The read-ahead follows the workers unless given.
        config.workers = args.workers;
        config.prefetch = LoaderConfig::default_prefetch(args.workers);
    }
    config.decode_budget = args.decode_budget.saturating_mul(1 << 20);
    config.buffer_limit = args.buffer_limit.saturating_mul(1 << 20);
    config.read_workers = args.read_workers;
    config.collate_workers = args.collate_workers;
    if let Some(p) = args.prefetch {
        config.prefetch = p;
    }
    config.depth = args.depth;
    let epochs = args.warmup_epochs.saturating_add(args.epochs);
    config.epochs = Some(epochs);
    if args.autotune {
        let budget = match args.cpu_budget {
            Some(cpus) => Budget::new(cpus, args.memory_budget.saturating_mul(1 << 20)),
            None => Budget::machine(args.memory_budget.saturating_mul(1 << 20)),
        };
        let tuned = autotune(Arc::clone(&data), Arc::clone(&plan), config, budget)
            .map_err(|e| tensorprep::error::report(&e))?;
        eprintln!("autotune: {tuned}");
        config = tuned.config;
    }
    let mut hash = Fnv1a64::new();
    let mut loader = Loader::new(Arc::clone(&data), Arc::clone(&plan), config)
        .map_err(|e| tensorprep::error::report(&e))?;
    let (mut images, mut timed) = (0u64, 0.0f64);
    for epoch in 0..epochs {
        let start = Instant::now();
        let requests = remote_requests();
        let mut count = 0u64;
        for batch in &mut loader {
            let batch = batch.map_err(|e| tensorprep::error::report(&e))?;
            if args.checksum {
                hash.update_elements(batch.tensor(), 0, batch.tensor().len());
                hash.update_f32(batch.labels());
            }
            count += batch.len() as u64;
        }
        let seconds = start.elapsed().as_secs_f64();
        let timed_epoch = epoch >= args.warmup_epochs;
        let requests = match (requests, remote_requests()) {
            (Some((a, a_missed)), Some((b, b_missed))) => format!(
                ", {} remote requests ({} reads waited for one)",
                b - a,
                b_missed - a_missed
            ),
            _ => String::new(),
        };
        eprintln!(
            "epoch {epoch}{}: {count} images in {seconds:.2} s{requests}",
            if timed_epoch { "" } else { " (warm-up)" }
        );
        if timed_epoch {
            images += count;
            timed += seconds;
        }
        if epoch + 1 < epochs {
            loader = loader
                .next_epoch()
                .map_err(|e| tensorprep::error::report(&e))?;
        }
    }
    if args.checksum {
        println!("checksum: {:016x}", hash.finish());
    }
    println!("images/s: {:.1}", images as f64 / timed.max(1e-9));
    Ok(ExitCode::SUCCESS)
}

/// The requests to object storage and web servers so far, and the reads
/// that waited for one (a build with the `remote` feature).
fn remote_requests() -> Option<(u64, u64)> {
    #[cfg(feature = "remote")]
    return Some((
        tensorprep::train::data::remote::requests(),
        tensorprep::train::data::remote::misses(),
    ));
    #[cfg(not(feature = "remote"))]
    None
}

#[derive(Subcommand)]
pub(crate) enum RecordsCommand {
    /// Pack an image folder (a sub-folder per class) into a `.rec` (with its
    /// `.idx` and `.lst`, as im2rec writes them), a `.tfrecord`, or a
    /// `.mindrecord` (with its `.db`, MindSpore's `{file_name, label, data}`
    /// schema, read by `MindDataset`).
    Pack {
        /// The image folder.
        dir: PathBuf,
        /// The file to write: `.rec`, `.tfrecord` or `.mindrecord`.
        #[arg(short, long)]
        out: PathBuf,
        /// Replace read-only outputs; with `.mindrecord`, replace existing
        /// ones (refused otherwise, as MindSpore refuses them).
        #[arg(long)]
        force: bool,
        /// `.mindrecord` only: write N data files, `OUT0` ... `OUT<N-1>`
        /// (each with its `.db`), the folder's images split in order.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
        shards: Option<u16>,
    },
    /// One line per record: position, id, labels, byte length, sha256.
    Ls {
        /// A `.rec`, `.tfrecord`, `.mindrecord*` or WebDataset `.tar`.
        file: String,
        /// JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn records(command: &RecordsCommand) -> Result<ExitCode, String> {
    match command {
        RecordsCommand::Pack {
            dir,
            out,
            force,
            shards,
        } => pack(dir, out, *force, *shards),
        RecordsCommand::Ls { file, json } => ls(file, *json),
    }
}

fn pack(dir: &Path, out: &Path, force: bool, shards: Option<u16>) -> Result<ExitCode, String> {
    let folder = FolderDataset::open(dir).map_err(|e| e.to_string())?;
    let ext = out.extension().and_then(|e| e.to_str()).unwrap_or("");
    let read_only = ReadOnly::forced(force);
    let mut wrote = out.display().to_string();
    if shards.is_some() && ext != "mindrecord" {
        return Err(format!(
            "{}: --shards is for .mindrecord outputs",
            out.display()
        ));
    }
    let mut sample = Sample::default();
    let mut record = Vec::new();
    match ext {
        "rec" => {
            let (mut idx, mut lst) = (String::new(), String::new());
            atomic::write(out, read_only, |w| {
                let mut rec = RecordIoWriter::new(w);
                for (i, (path, label)) in folder.files().iter().enumerate() {
                    folder.read(i, &mut sample).map_err(std::io::Error::other)?;
                    pack_image(&[*label as f32], i as u64, &sample.bytes, &mut record);
                    let at = rec.write_record(&record)?;
                    idx.push_str(&format!("{i}\t{at}\n"));
                    let name = path.strip_prefix(dir).unwrap_or(path);
                    lst.push_str(&format!("{i}\t{:.6}\t{}\n", *label as f32, name.display()));
                }
                Ok(())
            })?;
            atomic::write_bytes(&out.with_extension("idx"), read_only, idx.as_bytes())?;
            atomic::write_bytes(&out.with_extension("lst"), read_only, lst.as_bytes())?;
        }
        "tfrecord" => {
            atomic::write(out, read_only, |w| {
                let mut tf = TfRecordWriter::new(w);
                for (i, (_, label)) in folder.files().iter().enumerate() {
                    folder.read(i, &mut sample).map_err(std::io::Error::other)?;
                    encode_example(
                        &[
                            ("image/encoded", Feature::Bytes(&[&sample.bytes])),
                            ("image/class/label", Feature::Int64(&[i64::from(*label)])),
                        ],
                        &mut record,
                    );
                    tf.write_record(&record)?;
                }
                Ok(())
            })?;
        }
        "mindrecord" => {
            let options = mindrecord_write::WriteOptions::default()
                .shards(shards.map_or(1, usize::from))
                .overwrite(force);
            let written =
                mindrecord_write::pack_folder(dir, &folder, out, &options).map_err(|e| {
                    let exists = matches!(&e, DataError::Io { error, .. }
                        if error.kind() == std::io::ErrorKind::AlreadyExists);
                    let hint = if exists { " (--force replaces it)" } else { "" };
                    format!("{}{hint}", tensorprep::error::report(&e))
                })?;
            wrote = match written.files.as_slice() {
                [first, .., last] => {
                    format!(
                        "{} ... {}, each with its .db",
                        first.display(),
                        last.display()
                    )
                }
                _ => format!("{} and its .db", out.display()),
            };
        }
        _ => {
            return Err(format!(
                "{}: write a .rec, a .tfrecord or a .mindrecord",
                out.display()
            ));
        }
    }
    eprintln!(
        "wrote {wrote} ({} images, {} classes)",
        folder.len(),
        folder.classes().len()
    );
    Ok(ExitCode::SUCCESS)
}

fn ls(file: &str, json: bool) -> Result<ExitCode, String> {
    use std::io::Write;
    let data = open(file)?;
    let mut sample = Sample::default();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = |i: usize, sample: &Sample| -> std::io::Result<()> {
        let digest = sha256(&sample.bytes);
        let labels: Vec<String> = sample
            .labels
            .iter()
            // JSON has no NaN or infinity (the readers refuse such labels).
            .map(|l| match l.is_finite() {
                true => format!("{l}"),
                false if json => "null".to_owned(),
                false => format!("{l}"),
            })
            .collect();
        if json {
            writeln!(
                out,
                "{{\"position\": {i}, \"id\": {}, \"labels\": [{}], \"bytes\": {}, \"sha256\": \"{digest}\"}}",
                sample.id,
                labels.join(", "),
                sample.bytes.len()
            )
        } else {
            writeln!(
                out,
                "{i}\tid {}\tlabels {}\t{} bytes\tsha256 {digest}",
                sample.id,
                labels.join(","),
                sample.bytes.len()
            )
        }
    };
    for i in 0..data.len() {
        data.read(i, &mut sample).map_err(|e| e.to_string())?;
        match line(i, &sample) {
            Ok(()) => {}
            // `records ls FILE | head`: the reader has what it wanted.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
            Err(e) => return Err(format!("standard output: {e}")),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}
