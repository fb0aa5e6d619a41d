//! `tensorprep run`: preprocess files and write the tensors as `.npy`.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use tensorprep::pipeline::{Input, Plan, PlanState};
use tensorprep::{DType, Error, Tensor, npy};

use crate::atomic::{self, ReadOnly};
use crate::inputs::{self, InputFile};
use crate::{PipelineArgs, describe, plan, progress};

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// Image files (JPEG, PNG, WebP; the format is read from the bytes) and
    /// directories, whose image files are taken recursively.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Where the tensors go: for one input file, the `.npy` file to write;
    /// otherwise a directory that receives one `.npy` per input (`<stem>.npy`,
    /// or the path inside its directory); `-` writes one `.npy` to standard
    /// output (the tensor, or for several inputs an N x C x H x W batch).
    #[arg(short, long, required_unless_present = "batch_npy")]
    out: Option<PathBuf>,
    /// Write every tensor into this one N x C x H x W (or N x H x W x C) `.npy`
    /// file, in input order; inputs that fail are left out (and named).
    #[arg(long, conflicts_with = "out")]
    batch_npy: Option<PathBuf>,
    /// Stop at the first file that fails instead of going on with the others.
    #[arg(long)]
    fail_fast: bool,
}

/// Where the tensors are written.
enum Sink {
    /// One `.npy` file for the one input.
    File(PathBuf),
    /// Standard output, for the one input.
    Stdout,
    /// A directory, created with the first tensor written into it.
    Dir(PathBuf),
    /// One N x ... batch `.npy`.
    Batch(Batch),
}

/// A batch file being written: a temporary file whose header is first
/// written for the largest possible count, rewritten with the real one, then
/// renamed into place; or, for standard output, the tensors held until the
/// count is known.
struct Batch {
    /// `None` for standard output.
    path: Option<PathBuf>,
    shape: [usize; 3],
    held: Vec<Tensor>,
    file: Option<(PathBuf, std::fs::File, usize)>,
    dtype: Option<DType>,
    count: usize,
}

impl Batch {
    fn new(path: Option<PathBuf>, shape: [usize; 3]) -> Batch {
        Batch {
            path,
            shape,
            held: Vec::new(),
            file: None,
            dtype: None,
            count: 0,
        }
    }

    fn dims(&self, n: usize) -> [usize; 4] {
        [n, self.shape[0], self.shape[1], self.shape[2]]
    }

    fn push(&mut self, shape: [usize; 3], tensor: &Tensor, max: usize) -> Result<(), String> {
        if shape != self.shape {
            return Err(format!(
                "its tensor is {shape:?}, the batch's {:?}",
                self.shape
            ));
        }
        self.dtype = Some(tensor.dtype());
        self.count += 1;
        let Some(path) = &self.path else {
            self.held.push(tensor.clone());
            return Ok(());
        };
        if self.file.is_none() {
            let header =
                npy::header(&self.dims(max), tensor.dtype(), 0).map_err(|e| e.to_string())?;
            let (tmp, mut file) = atomic::temporary(path)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            if let Err(e) = file.write_all(&header) {
                let _ = std::fs::remove_file(&tmp);
                return Err(format!("cannot write {}: {e}", path.display()));
            }
            self.file = Some((tmp, file, header.len()));
        }
        let (tmp, file, _) = self.file.as_mut().expect("created above");
        let mut w = std::io::BufWriter::new(file);
        npy::write_values(&mut w, tensor)
            .and_then(|()| w.flush())
            .map_err(|e| format!("cannot write {}: {e}", tmp.display()))
    }

    /// Writes the header with the real count and moves the file into place
    /// (or writes everything to standard output). Nothing is created when no
    /// tensor was pushed.
    fn finish(self) -> Result<(), String> {
        let (Some(dtype), dims) = (self.dtype, self.dims(self.count)) else {
            return Ok(());
        };
        let Some(path) = self.path else {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let header = npy::header(&dims, dtype, 0).map_err(|e| e.to_string())?;
            return out
                .write_all(&header)
                .and_then(|()| {
                    self.held
                        .iter()
                        .try_for_each(|t| npy::write_values(&mut out, t))
                })
                .and_then(|()| out.flush())
                .map_err(|e| format!("standard output: {e}"));
        };
        let Some((tmp, mut file, header_len)) = self.file else {
            return Ok(());
        };
        npy::header(&dims, dtype, header_len)
            .and_then(|header| {
                file.seek(SeekFrom::Start(0))?;
                file.write_all(&header)?;
                file.sync_all()?;
                atomic::replace(&tmp, &file, &path)
            })
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("cannot write {}: {e}", path.display())
            })
    }
}

/// Preprocesses one file into `tensor`, resized to the file's output shape
/// if the plan's depends on the image. Lenient plans report a damaged file
/// that decoded anyway.
fn preprocess(
    plan: &Plan,
    state: &mut PlanState,
    tensor: &mut Tensor,
    input: &Path,
) -> Result<[usize; 3], String> {
    let bytes = inputs::read_capped(input, inputs::MAX_INPUT_BYTES)?;
    let input = Input::Encoded(&bytes);
    let shape = plan
        .output_shape_for(state, input)
        .map_err(|e| describe(&e))?;
    let len = shape.iter().product();
    if tensor.len() != len {
        *tensor = Tensor::try_zeros(plan.dtype(), len).map_err(|e| e.to_string())?;
    }
    plan.run(state, input, tensor.as_mut())
        .map_err(|e: Error| describe(&e))?;
    Ok(shape)
}

fn write_npy(
    path: &Path,
    read_only: ReadOnly,
    shape: &[usize],
    tensor: &Tensor,
) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create directory {}: {e}", dir.display()))?;
    }
    // A temporary file, flushed, synced and renamed: a full disk is an
    // error, never a truncated .npy reported as written.
    atomic::write(path, read_only, |w| npy::write(w, shape, tensor))
}

pub(crate) fn run(args: &RunArgs) -> Result<ExitCode, String> {
    let (plan, _, lenient) = plan(&args.pipeline)?;
    let (inputs, skipped) = inputs::collect(&args.inputs)?;
    if inputs.is_empty() {
        return Err(format!(
            "no image files in {}",
            args.inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let one_file = args.inputs.len() == 1 && !args.inputs[0].is_dir();
    let read_only = ReadOnly::forced(args.pipeline.force);
    let mut sink = match (&args.out, &args.batch_npy) {
        (_, Some(path)) => Sink::Batch(Batch::new(
            Some(atomic::target(path, read_only)?),
            batch_shape(&plan)?,
        )),
        (Some(out), None) if out.as_os_str() == "-" && one_file => Sink::Stdout,
        (Some(out), None) if out.as_os_str() == "-" => {
            Sink::Batch(Batch::new(None, batch_shape(&plan)?))
        }
        (Some(out), None) if one_file && !out.is_dir() && !ends_with_separator(out) => {
            Sink::File(out.clone())
        }
        // A directory named `one.npy/` is never what `-o one.npy` meant.
        (Some(out), None) if names_npy_file(out) => {
            return Err(format!(
                "-o {} names one .npy file, but the inputs give a tensor each ({} found): \
                 use --batch-npy {} for one N x ... batch, or name a directory for -o",
                out.display(),
                inputs.len(),
                out.display()
            ));
        }
        (Some(out), None) => Sink::Dir(out.clone()),
        (None, None) => unreachable!("clap requires --out or --batch-npy"),
    };
    let bar = progress(inputs.len());
    let mut state = PlanState::new();
    let mut tensor = Tensor::zeros(plan.dtype(), 0);
    let mut written = std::collections::HashMap::<PathBuf, PathBuf>::new();
    let (mut ok, mut failed, mut lenient_ok) = (0usize, 0usize, 0usize);
    for InputFile { path, out_name } in &inputs {
        let result = preprocess(&plan, &mut state, &mut tensor, path).or_else(|strict_error| {
            // Lenient: a damaged file is decoded as far as it goes, and reported.
            let lenient = lenient.as_ref().ok_or(strict_error.clone())?;
            let shape = preprocess(lenient, &mut state, &mut tensor, path)
                .map_err(|_| strict_error.clone())?;
            lenient_ok += 1;
            bar.suspend(|| {
                eprintln!(
                    "tensorprep: {}: {strict_error}; decoded leniently (the missing part is filled)",
                    path.display()
                )
            });
            Ok::<_, String>(shape)
        });
        let result = result.and_then(|shape| match &mut sink {
            Sink::File(file) => write_npy(file, read_only, &shape, &tensor),
            Sink::Stdout => {
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                npy::write(&mut out, &shape, &tensor)
                    .and_then(|()| out.flush())
                    .map_err(|e| format!("standard output: {e}"))
            }
            Sink::Dir(dir) => {
                let out = dir.join(out_name);
                match written.get(&out) {
                    Some(first) => Err(format!(
                        "its output {} was already written from {}",
                        out.display(),
                        Path::display(first)
                    )),
                    None => {
                        written.insert(out.clone(), path.clone());
                        write_npy(&out, read_only, &shape, &tensor)
                    }
                }
            }
            Sink::Batch(b) => b.push(shape, &tensor, inputs.len()),
        });
        bar.inc(1);
        match result {
            Ok(()) => ok += 1,
            Err(message) => {
                failed += 1;
                bar.suspend(|| eprintln!("tensorprep: {}: {message}", path.display()));
                if args.fail_fast {
                    break;
                }
            }
        }
    }
    bar.finish_and_clear();
    let target = match &sink {
        Sink::File(f) => f.display().to_string(),
        Sink::Dir(d) if ends_with_separator(d) => d.display().to_string(),
        Sink::Dir(d) => format!("{}/", d.display()),
        Sink::Batch(Batch { path: Some(p), .. }) => format!("{} (one batch)", p.display()),
        Sink::Batch(_) | Sink::Stdout => "standard output".to_owned(),
    };
    if let Sink::Batch(b) = sink {
        b.finish()?;
    }
    let mut notes = Vec::new();
    if failed > 0 {
        notes.push(format!("{failed} of {} inputs failed", inputs.len()));
    }
    if lenient_ok > 0 {
        notes.push(format!("{lenient_ok} decoded leniently"));
    }
    if skipped > 0 {
        notes.push(format!("{skipped} non-image files left out"));
    }
    eprintln!(
        "{}{}",
        if ok == 0 {
            "wrote nothing".to_owned()
        } else {
            format!("wrote {ok} tensor(s) to {target}")
        },
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        }
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `-o` ends in `.npy` and is no directory (neither an existing one nor
/// written with a trailing separator).
fn names_npy_file(out: &Path) -> bool {
    out.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
        && !out.is_dir()
        && !ends_with_separator(out)
}

fn ends_with_separator(p: &Path) -> bool {
    p.as_os_str()
        .to_string_lossy()
        .ends_with(std::path::MAIN_SEPARATOR)
}

/// The shape every tensor of a batch has: the plan's output must not depend on the image.
fn batch_shape(plan: &Plan) -> Result<[usize; 3], String> {
    plan.output_shape().ok_or_else(|| {
        "a batch needs one output shape, but this pipeline's depends on each image \
         (end it with a crop, a canvas or an exact resize)"
            .to_owned()
    })
}
