//! One rank of a distributed run: torchrun, MPI (`mpirun`) and Horovod name
//! each process's rank and world size in variables, which
//! `Shard::from_env` reads. Each rank loads its part of an epoch with a
//! per-rank batch of `global / world` and writes the dataset indices of
//! each of its batches to `OUT/rank-R.txt`; with `--stop-after N` rank 0
//! saves the loader's state after N batches (`OUT/state`), and `--resume
//! STATE` continues from such a state with any world size that divides
//! the global batch. `examples/distributed_check.py` runs it alone and
//! under `mpirun` and checks that the ranks' batches make the single
//! process's, before and after an elastic resume.
//!
//! ```text
//! cargo run --release --example distributed -- --global-batch 6 --out /tmp/run
//! mpirun --allow-run-as-root -np 2 target/release/examples/distributed --global-batch 6 --out /tmp/run2
//! torchrun --standalone --nproc-per-node=2 --no-python target/release/examples/distributed --global-batch 6 --out /tmp/run3
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use tensorprep::train::data::Dataset;
use tensorprep::train::data::combine::Concat;
use tensorprep::train::data::recordio::RecordIoDataset;
use tensorprep::train::{
    Augment, Loader, LoaderConfig, LoaderState, RandomResizedCrop, Shard, TrainPipeline,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut global, mut out, mut stop_after, mut resume) = (6usize, None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("a value after {a}"));
        match a.as_str() {
            "--global-batch" => global = value()?.parse()?,
            "--out" => out = Some(PathBuf::from(value()?)),
            "--stop-after" => stop_after = Some(value()?.parse::<u64>()?),
            "--resume" => resume = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let out = out.ok_or("--out DIR")?;
    std::fs::create_dir_all(&out)?;
    // Five passes over im2rec's six images: 30 samples.
    let rec: Arc<dyn Dataset> = Arc::new(RecordIoDataset::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/records/folder.rec"
    ))?);
    let data = Arc::new(Concat::new(vec![rec; 5])?);
    let mut pipeline = TrainPipeline::imagenet_train();
    pipeline.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(32, 32));
    let plan = Arc::new(pipeline.compile()?);

    let shard = Shard::from_env(false)?;
    let world = shard.count() as usize;
    if global % world != 0 {
        return Err(format!("a global batch of {global} for {world} ranks").into());
    }
    let mut config = LoaderConfig::new(global / world, 1, 3);
    config.shard = shard;
    config.epochs = Some(1);
    let loader = match &resume {
        Some(path) => {
            let bytes = std::fs::read(path)?;
            let state = LoaderState::from_bytes(&bytes).ok_or("not a loader state")?;
            Loader::resume(data, plan, config, state)?
        }
        None => Loader::new(data, plan, config)?,
    };
    let mut log = std::fs::File::create(out.join(format!("rank-{}.txt", shard.index())))?;
    let mut loader = loader;
    while let Some(batch) = loader.next() {
        let batch = batch?;
        let ids: Vec<String> = batch.indices().iter().map(u64::to_string).collect();
        writeln!(log, "{} {}", batch.number, ids.join(","))?;
        if stop_after == Some(batch.number + 1) {
            if shard.index() == 0 {
                std::fs::write(out.join("state"), loader.state().to_bytes())?;
            }
            break;
        }
    }
    Ok(())
}
