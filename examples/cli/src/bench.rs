//! `tensorprep bench`: a pipeline's throughput on image files held in memory,
//! optionally beside decoding alone with the same decoder.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use tensorprep::decode::ImageDecoder;
use tensorprep::jpeg::DecodeOptions;
use tensorprep::pipeline::{Input, PlanState};
use tensorprep::{Image, PixelFormat, Tensor};

use crate::inputs;
use crate::{PipelineArgs, plan};

/// The most threads `--threads` accepts (each holds a plan state and a tensor).
const MAX_THREADS: usize = 1024;

#[derive(Args)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// Image files and directories (their image files, recursively), read into memory first.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Threads, each with its own plan state, taking the next image as they
    /// finish one; 0 means one per core.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Passes over all the files (after one warm-up pass).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeat: u32,
    /// Also time decoding alone with the same decoder, interleaved pass by
    /// pass with the pipeline, and print the ratio.
    #[arg(long)]
    baseline_decode: bool,
}

/// One timed pass over `jobs` items on one thread per state; each thread takes
/// the next item as it finishes one. The first error stops the pass.
fn timed_pass<S: Send>(
    states: &mut [S],
    jobs: usize,
    work: impl Fn(&mut S, usize) -> Result<(), String> + Sync,
) -> Result<Duration, String> {
    let next = AtomicUsize::new(0);
    let failure = std::sync::Mutex::new(None);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for state in states.iter_mut() {
            let (next, work, failure) = (&next, &work, &failure);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs {
                        break;
                    }
                    if let Err(e) = work(state, i) {
                        // Stop every thread: the others see no more jobs.
                        next.store(jobs, Ordering::Relaxed);
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(e);
                        }
                        break;
                    }
                }
            });
        }
    });
    let elapsed = start.elapsed();
    match failure.into_inner().ok().flatten() {
        Some(e) => Err(e),
        None => Ok(elapsed),
    }
}

fn threads(requested: usize) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match requested {
        0 => Ok(cores),
        n if n > MAX_THREADS => Err(format!(
            "--threads {n} is more than the {MAX_THREADS} this command runs ({cores} cores here; 0 means one per core)"
        )),
        n => Ok(n),
    }
}

pub(crate) fn bench(args: &BenchArgs) -> Result<ExitCode, String> {
    let threads = threads(args.threads)?;
    let (plan, backend, _) = plan(&args.pipeline)?;
    let shape = plan.output_shape().ok_or(
        "bench needs one output shape, but this pipeline's depends on each image \
         (end it with a crop, a canvas or an exact resize)",
    )?;
    let len = shape.iter().product();
    let repeat = args.repeat as usize;
    let (found, not_images) = inputs::collect(&args.inputs)?;
    let mut files = Vec::new();
    let mut names = Vec::new();
    let mut left_out = 0;
    let mut check = PlanState::new();
    let mut pixels = 0u64;
    let mut out = Tensor::try_zeros(plan.dtype(), len).map_err(|e| e.to_string())?;
    for input in found {
        let path = input.path;
        let bytes = inputs::read_capped(&path, inputs::MAX_INPUT_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // Files the pipeline rejects are reported and left out of the timing.
        match plan.run(&mut check, Input::Encoded(&bytes), out.as_mut()) {
            Ok(g) => {
                pixels += u64::from(g.input.0) * u64::from(g.input.1);
                files.push(bytes);
                names.push(path);
            }
            Err(e) => {
                left_out += 1;
                let e = crate::describe(&e);
                eprintln!("tensorprep: {}: {e} (left out)", path.display());
            }
        }
    }
    if files.is_empty() {
        return Err("no image file the pipeline can run".to_owned());
    }
    let n = files.len();
    let name = |i: usize| names[i % n].display().to_string();
    let mut states: Vec<(PlanState, Tensor)> = (0..threads)
        .map(|_| Ok((PlanState::new(), Tensor::try_zeros(plan.dtype(), len)?)))
        .collect::<Result<_, tensorprep::Error>>()
        .map_err(|e| e.to_string())?;
    let run_pass = |states: &mut [(PlanState, Tensor)], jobs| {
        timed_pass(states, jobs, |(state, out), i| {
            plan.run(state, Input::Encoded(&files[i % n]), out.as_mut())
                .map(drop)
                .map_err(|e| format!("{}: {e} (in a timed pass)", name(i)))
        })
    };
    let options = DecodeOptions {
        backend,
        format: PixelFormat::Rgb8,
        ..DecodeOptions::default()
    };
    let mut decoders: Vec<(ImageDecoder, Option<Image>)> = (0..threads)
        .map(|_| (ImageDecoder::new(options), None))
        .collect();
    let decode_pass = |decoders: &mut [(ImageDecoder, Option<Image>)], jobs| {
        timed_pass(decoders, jobs, |(dec, img), i| {
            let bytes = &files[i % n];
            let err = |e: tensorprep::Error| format!("{}: {e} (decoding alone)", name(i));
            let info = dec.read_info(bytes).map_err(err)?;
            if img
                .as_ref()
                .is_none_or(|m| (m.width(), m.height()) != (info.width, info.height))
            {
                *img = Some(Image::new(PixelFormat::Rgb8, info.width, info.height).map_err(err)?);
            }
            let m = img.as_mut().expect("made above");
            dec.decode_into(bytes, &mut m.view_mut())
                .map(drop)
                .map_err(err)
        })
    };
    // Warm-up: every state sees every size once (first-run allocations, caches).
    run_pass(&mut states, n * threads)?;
    if args.baseline_decode {
        decode_pass(&mut decoders, n * threads)?;
    }
    let (mut t_plan, mut t_decode) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..repeat {
        if args.baseline_decode {
            t_decode += decode_pass(&mut decoders, n)?;
        }
        t_plan += run_pass(&mut states, n)?;
    }
    let images = (n * repeat) as f64;
    let rate = images / t_plan.as_secs_f64();
    let mut notes = Vec::new();
    if left_out > 0 {
        notes.push(format!("{left_out} left out"));
    }
    if not_images > 0 {
        notes.push(format!("{not_images} non-image files skipped"));
    }
    println!(
        "files: {n} images, {:.1} MP in all{}",
        pixels as f64 / 1e6,
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        }
    );
    println!(
        "pipeline: {}, decoder {}{}{}, {threads} thread(s), {repeat} pass(es)",
        crate::source_name(&args.pipeline),
        backend.name(),
        match (args.pipeline.fast_decode, args.pipeline.draft_decode) {
            (_, true) => ", draft decode",
            (true, _) => ", fast decode",
            _ => "",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_in_a_timed_pass_is_an_error_that_stops_the_pass() {
        let mut states = vec![0usize; 3];
        let done = AtomicUsize::new(0);
        let result = timed_pass(&mut states, 1000, |_, i| {
            done.fetch_add(1, Ordering::Relaxed);
            if i == 10 {
                Err(format!("job {i} failed"))
            } else {
                Ok(())
            }
        });
        assert_eq!(result, Err("job 10 failed".to_owned()));
        assert!(
            done.load(Ordering::Relaxed) < 1000,
            "the pass stopped early"
        );
        assert!(timed_pass(&mut states, 50, |_, _| Ok(())).is_ok());
    }

    #[test]
    fn thread_counts() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads(0), Ok(cores));
        assert_eq!(threads(3), Ok(3));
        assert!(threads(100_000).unwrap_err().contains("1024"));
        assert!(threads(usize::MAX).is_err());
    }
}
