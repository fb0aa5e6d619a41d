//! The loader's callbacks (MindSpore's `DSCallback` points): their order and
//! numbers, the pipeline changes they make (applied from the next epoch,
//! the same for any worker count, reproduced by a resume), and their
//! failures.

use std::sync::{Arc, Mutex};

use tensorprep::Tensor;
use tensorprep::geometry::Flip;
use tensorprep::train::data::Dataset;
use tensorprep::train::{
    Augment, Callback, CallbackPoint, LoadError, Loader, LoaderConfig, LoaderState, PipelineChange,
    RandomResizedCrop, RunContext, TrainPipeline, TrainPlan,
};

/// 40 samples alternating two photos, label = index: 7 batches of 6 (the
/// last of 4).
fn dataset() -> Arc<dyn Dataset> {
    let photos = vec![
        tensorprep_tests::read("sample.jpg"),
        tensorprep_tests::read("sklearn_china.jpg"),
    ];
    tensorprep_tests::photo_dataset(photos, 40)
}

/// A small random crop and a random flip.
fn pipeline() -> TrainPipeline {
    let mut p = TrainPipeline::imagenet_train();
    p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(32, 24));
    p
}

/// The same, then a vertical flip always: other tensors, the same shape.
fn flipped() -> TrainPipeline {
    let mut p = pipeline();
    p.augments
        .push(Augment::RandomFlip(tensorprep::train::RandomFlip::new(
            Flip::Vertical,
            1.0,
        )));
    p
}

/// A state of these tests' loaders (seed 42, batches of 6, the 40 samples)
/// at `batches` into `epoch`, recording the pipeline `changes`.
fn state_at(epoch: u32, batches: u64, changes: &[PipelineChange]) -> LoaderState {
    let mut s = LoaderState::new(42, epoch, batches, 6, 40, dataset().fingerprint());
    s.changes = changes.len() as u32;
    s.changes_hash = PipelineChange::hash_all(changes);
    s
}

fn plan(p: TrainPipeline) -> Arc<TrainPlan> {
    Arc::new(p.compile().unwrap())
}

fn config(workers: usize) -> LoaderConfig {
    let mut c = LoaderConfig::new(6, workers, 42);
    c.read_workers = workers;
    c.epochs = Some(3);
    c
}

type Batches = Vec<(Vec<f32>, Vec<f32>)>;

/// (tensor, labels) of every remaining batch of the loader's epoch.
fn rest(loader: &mut Loader) -> Batches {
    loader.by_ref().map(|b| batch(b.unwrap())).collect()
}

fn batch(b: tensorprep::train::Batch) -> (Vec<f32>, Vec<f32>) {
    let n = b.len();
    let Tensor::F32(v) = b.tensor() else {
        unreachable!("a float plan")
    };
    (v[..n * 3 * 24 * 32].to_vec(), b.labels().to_vec())
}

/// A log of (point, epoch, step, step in epoch), and of the batches the
/// consumer received (`None` for the point), with the calling thread.
type Log = Arc<Mutex<Vec<(Option<CallbackPoint>, u32, u64, u64)>>>;

struct Logger {
    log: Log,
    thread: std::thread::ThreadId,
}

impl Logger {
    fn push(&self, ctx: &RunContext<'_>) -> Result<(), String> {
        assert_eq!(
            std::thread::current().id(),
            self.thread,
            "the consumer's thread"
        );
        let entry = (Some(ctx.point), ctx.epoch, ctx.step, ctx.step_in_epoch);
        self.log.lock().unwrap().push(entry);
        Ok(())
    }
}

impl Callback for Logger {
    fn epoch_begin(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.push(ctx)
    }
    fn epoch_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.push(ctx)
    }
    fn step_begin(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.push(ctx)
    }
    fn step_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.push(ctx)
    }
}

/// Three epochs with a logging callback: the log, the consumer's batches
/// interleaved.
fn logged_run(workers: usize) -> Vec<(Option<CallbackPoint>, u32, u64, u64)> {
    let log: Log = Arc::default();
    let mut c = config(workers);
    c.callbacks.push(Arc::new(Logger {
        log: Arc::clone(&log),
        thread: std::thread::current().id(),
    }));
    let mut loader = Loader::new(dataset(), plan(pipeline()), c).unwrap();
    for e in 0..3 {
        for b in loader.by_ref() {
            let b = b.unwrap();
            log.lock().unwrap().push((None, b.epoch, 0, b.number));
        }
        if e < 2 {
            loader = loader.next_epoch().unwrap();
        }
    }
    log.lock().unwrap().clone()
}

/// Each epoch: `epoch_begin`, then per step `step_begin`, the batch handed
/// out, `step_end` when the consumer comes back; `epoch_end` when it finds
/// the epoch over. The same sequence with 1 and 3 workers.
#[test]
fn callbacks_fire_in_order_with_their_numbers() {
    let mut expected = Vec::new();
    for e in 0..3u32 {
        let first = u64::from(e) * 7;
        expected.push((Some(CallbackPoint::EpochBegin), e, first, 0));
        for k in 0..7 {
            expected.push((Some(CallbackPoint::StepBegin), e, first + k, k));
            expected.push((None, e, 0, k));
            expected.push((Some(CallbackPoint::StepEnd), e, first + k, k));
        }
        expected.push((Some(CallbackPoint::EpochEnd), e, first + 7, 7));
    }
    assert_eq!(logged_run(1), expected);
    assert_eq!(logged_run(3), expected);
}

/// A loader resumed in an epoch's middle continues the callbacks there: no
/// second `epoch_begin`, the next step's `step_begin` first.
#[test]
fn a_resumed_loader_continues_the_callbacks() {
    let log: Log = Arc::default();
    let mut c = config(2);
    c.callbacks.push(Arc::new(Logger {
        log: Arc::clone(&log),
        thread: std::thread::current().id(),
    }));
    let state = state_at(1, 5, &[]);
    let mut loader = Loader::resume(dataset(), plan(pipeline()), c, state).unwrap();
    assert_eq!(rest(&mut loader).len(), 2);
    let points: Vec<_> = log.lock().unwrap().iter().map(|l| (l.0, l.3)).collect();
    assert_eq!(
        points,
        [
            (Some(CallbackPoint::StepBegin), 5),
            (Some(CallbackPoint::StepEnd), 5),
            (Some(CallbackPoint::StepBegin), 6),
            (Some(CallbackPoint::StepEnd), 6),
            (Some(CallbackPoint::EpochEnd), 7),
        ]
    );
}

/// Sets [`flipped`] at `point` of step `step_in_epoch` of epoch `epoch`
/// (`epoch_end`: any step), and keeps what `set_pipeline` answered.
struct Changer {
    point: CallbackPoint,
    epoch: u32,
    step_in_epoch: u64,
    pipeline: TrainPipeline,
    answers: Mutex<Vec<Result<(), String>>>,
}

impl Changer {
    fn new(point: CallbackPoint, epoch: u32, step_in_epoch: u64) -> Changer {
        Changer {
            point,
            epoch,
            step_in_epoch,
            pipeline: flipped(),
            answers: Mutex::new(Vec::new()),
        }
    }

    fn maybe(&self, point: CallbackPoint, ctx: &mut RunContext<'_>) -> Result<(), String> {
        if point == self.point
            && ctx.epoch == self.epoch
            && (point == CallbackPoint::EpochEnd || ctx.step_in_epoch == self.step_in_epoch)
        {
            let answer = ctx
                .set_pipeline(self.pipeline.clone())
                .map_err(|e| e.to_string());
            self.answers.lock().unwrap().push(answer);
        }
        Ok(())
    }
}

impl Callback for Changer {
    fn epoch_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.maybe(CallbackPoint::EpochEnd, ctx)
    }
    fn step_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.maybe(CallbackPoint::StepEnd, ctx)
    }
}

/// Three epochs with `changer`: each epoch's batches, and the changes.
fn changed_run(workers: usize, changer: Changer) -> (Vec<Batches>, Vec<PipelineChange>) {
    let mut c = config(workers);
    c.callbacks.push(Arc::new(changer));
    let mut loader = Loader::new(dataset(), plan(pipeline()), c).unwrap();
    let mut epochs = Vec::new();
    for e in 0..3 {
        epochs.push(rest(&mut loader));
        if e < 2 {
            loader = loader.next_epoch().unwrap();
        }
    }
    let changes = loader.pipeline_changes().to_vec();
    (epochs, changes)
}

/// Epoch `epoch` of a loader built with `p` and no callback (the same keys).
fn epoch_of(p: TrainPipeline, epoch: u32, workers: usize) -> Batches {
    let state = state_at(epoch, 0, &[]);
    let mut loader = Loader::resume(dataset(), plan(p), config(workers), state).unwrap();
    rest(&mut loader)
}

/// A pipeline set at epoch 0's end augments epochs 1 and 2 exactly as a
/// loader built with it does (the same keys), with 1 and 3 workers; epoch 0
/// keeps the first pipeline. A change made in epoch 0's middle waits for
/// epoch 1 too.
#[test]
fn a_pipeline_set_in_an_epoch_augments_the_next_ones() {
    let base: Vec<Batches> = (0..3).map(|e| epoch_of(pipeline(), e, 2)).collect();
    let new: Vec<Batches> = (1..3).map(|e| epoch_of(flipped(), e, 2)).collect();
    assert!(base[1] != new[0], "the new pipeline gives other tensors");
    for workers in [1, 3] {
        for (point, step) in [(CallbackPoint::EpochEnd, 0), (CallbackPoint::StepEnd, 2)] {
            let (epochs, changes) = changed_run(workers, Changer::new(point, 0, step));
            assert!(epochs[0] == base[0], "epoch 0 keeps its pipeline");
            assert!(epochs[1] == new[0], "epoch 1: {workers} workers, {point:?}");
            assert!(epochs[2] == new[1], "epoch 2: {workers} workers, {point:?}");
            assert_eq!(changes.len(), 1);
            assert_eq!(changes[0].from_epoch(), 1);
            assert_eq!(*changes[0].pipeline(), flipped());
        }
    }
}

/// A resume in epoch 2 with the changes saved beside the state continues
/// the uninterrupted run exactly (another worker count, no callback); so
/// does one in epoch 0 before the change's epoch (its threads run into
/// epoch 1 with the first pipeline, and are restarted with the new one).
#[test]
fn a_resume_reproduces_the_changes() {
    let (epochs, changes) = changed_run(2, Changer::new(CallbackPoint::EpochEnd, 0, 0));
    let at = |epoch, batches| state_at(epoch, batches, &changes);
    let resume = |workers, state| {
        Loader::resume_with_changes(
            dataset(),
            plan(pipeline()),
            config(workers),
            state,
            changes.clone(),
        )
        .unwrap()
    };
    for workers in [1, 3] {
        let mut loader = resume(workers, at(2, 3));
        assert_eq!(loader.pipeline_changes(), &changes[..]);
        assert!(rest(&mut loader) == epochs[2][3..], "{workers} workers");
        let mut loader = resume(workers, at(0, 4));
        assert!(rest(&mut loader) == epochs[0][4..]);
        let mut loader = loader.next_epoch().unwrap();
        assert!(rest(&mut loader) == epochs[1], "{workers} workers");
    }
    // Without the changes (or with others) the state is refused: it
    // records them, and a resume that runs the first pipeline instead is
    // wrong data.
    let other = vec![PipelineChange::new(2, flipped()).unwrap()];
    for given in [vec![], other] {
        let err =
            Loader::resume_with_changes(dataset(), plan(pipeline()), config(2), at(2, 3), given)
                .unwrap_err();
        assert!(
            matches!(err, LoadError::Resume(_)) && err.to_string().contains("pipeline changes"),
            "{err}"
        );
    }
    // The state a loader with the changes gives records them; its bytes
    // keep them.
    let loader = resume(1, at(1, 2));
    let state = LoaderState::from_bytes(&loader.state().to_bytes()).unwrap();
    assert_eq!(
        (state.changes, state.changes_hash),
        (1, at(1, 2).changes_hash)
    );
    assert!(matches!(
        Loader::resume(dataset(), plan(pipeline()), config(2), state),
        Err(LoadError::Resume(_))
    ));
}

/// A pipeline of another output shape is refused where it is set (the
/// callback sees the error; nothing changes), and in a resume's changes.
#[test]
fn a_pipeline_of_another_shape_is_refused() {
    let mut changer = Changer::new(CallbackPoint::EpochEnd, 0, 0);
    let mut larger = pipeline();
    larger.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(40, 24));
    changer.pipeline = larger.clone();
    let changer = Arc::new(changer);
    let mut c = config(2);
    c.callbacks.push(changer.clone());
    let mut loader = Loader::new(dataset(), plan(pipeline()), c).unwrap();
    rest(&mut loader);
    let answers = changer.answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 1);
    let message = answers[0].clone().unwrap_err();
    assert!(message.contains("must stay"), "{message}");
    assert!(loader.pipeline_changes().is_empty());
    let state = loader.state();
    let change = PipelineChange::new(1, larger).unwrap();
    let err =
        Loader::resume_with_changes(dataset(), plan(pipeline()), config(2), state, vec![change])
            .unwrap_err();
    assert!(
        matches!(err, LoadError::Pipeline { from_epoch: 1, .. }),
        "{err}"
    );
}

/// Fails (or panics) at `point` of step 2 of epoch 0.
struct Failing {
    point: CallbackPoint,
    panic: bool,
}

impl Failing {
    fn maybe(&self, point: CallbackPoint, ctx: &RunContext<'_>) -> Result<(), String> {
        let step = if point == CallbackPoint::EpochEnd {
            7
        } else {
            2
        };
        if point == self.point && ctx.epoch == 0 && ctx.step_in_epoch == step {
            assert!(!self.panic, "callback panicked at {point:?}");
            return Err(format!("callback failed at {point:?}"));
        }
        Ok(())
    }
}

impl Callback for Failing {
    fn epoch_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.maybe(CallbackPoint::EpochEnd, ctx)
    }
    fn step_begin(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.maybe(CallbackPoint::StepBegin, ctx)
    }
    fn step_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        self.maybe(CallbackPoint::StepEnd, ctx)
    }
}

/// A callback's error or panic is the loader's error for that step (the
/// epoch ends there; no hang), and the next epoch runs.
#[test]
fn a_callback_failure_is_the_loader_s_error() {
    for (point, panic, delivered) in [
        (CallbackPoint::StepBegin, false, 2),
        (CallbackPoint::StepEnd, true, 3),
        (CallbackPoint::EpochEnd, false, 7),
    ] {
        let mut c = config(3);
        c.callbacks.push(Arc::new(Failing { point, panic }));
        let mut loader = Loader::new(dataset(), plan(pipeline()), c).unwrap();
        let mut got = 0;
        let err = loop {
            match loader.next().expect("the error, before the epoch's end") {
                Ok(_) => got += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(got, delivered, "{point:?}");
        let step = if point == CallbackPoint::EpochEnd {
            7
        } else {
            2
        };
        assert!(
            matches!(&err, LoadError::Callback { point: p, epoch: 0, step_in_epoch, message }
                if *p == point.name() && *step_in_epoch == step
                    && message.contains(&format!("at {point:?}"))),
            "{err}"
        );
        assert!(loader.next().is_none(), "the epoch is over");
        let mut loader = loader.next_epoch().unwrap();
        assert_eq!(rest(&mut loader).len(), 7);
    }
}

/// A change taken back after the threads started (they were told to stop
/// before its epoch): the next epoch restarts them rather than waiting on
/// threads that stopped. Changes [1: flipped, 2: first]; resumed in epoch
/// 1, whose end sets flipped again for epoch 2 (the change at 2 goes).
#[test]
fn a_change_taken_back_does_not_leave_the_loader_waiting() {
    let changes = vec![
        PipelineChange::new(1, flipped()).unwrap(),
        PipelineChange::new(2, pipeline()).unwrap(),
    ];
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut c = config(2);
        c.epochs = Some(4);
        let mut changer = Changer::new(CallbackPoint::EpochEnd, 1, 0);
        changer.pipeline = flipped();
        c.callbacks.push(Arc::new(changer));
        let state = state_at(1, 0, &changes);
        let mut loader =
            Loader::resume_with_changes(dataset(), plan(pipeline()), c, state, changes).unwrap();
        rest(&mut loader);
        let mut loader = loader.next_epoch().unwrap();
        let epoch2 = rest(&mut loader);
        let _ = tx.send((epoch2, loader.pipeline_changes().len()));
    });
    let (epoch2, changes) = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("epoch 2 came (the loader did not wait on stopped threads)");
    assert_eq!(changes, 1, "the change at 2 was taken back");
    assert!(epoch2 == epoch_of(flipped(), 2, 2), "epoch 2 is flipped's");
}

/// An `epoch_end` callback that fails inside `next_epoch` (the epoch's
/// batches all taken, its end never asked for by `next()`) gives the
/// loader back with the error, where it was: its state can be saved, and
/// `next_epoch` again runs the next epoch whole. Past the configured
/// epochs, the loader comes back too.
#[test]
fn next_epoch_gives_the_loader_back_when_it_cannot_move_on() {
    let mut c = config(2);
    c.callbacks.push(Arc::new(Failing {
        point: CallbackPoint::EpochEnd,
        panic: false,
    }));
    let mut loader = Loader::new(dataset(), plan(pipeline()), c).unwrap();
    let first: Batches = loader.by_ref().take(7).map(|b| batch(b.unwrap())).collect();
    assert_eq!(first.len(), 7);
    let failed = loader.next_epoch().unwrap_err();
    assert!(
        matches!(
            &failed.error,
            LoadError::Callback {
                point: "epoch_end",
                epoch: 0,
                step_in_epoch: 7,
                ..
            }
        ),
        "{failed}"
    );
    let loader = *failed.loader.expect("the loader comes back with the error");
    assert_eq!((loader.epoch(), loader.state().batches), (0, 7));
    let mut loader = loader.next_epoch().unwrap();
    assert_eq!(loader.epoch(), 1);
    assert!(rest(&mut loader) == epoch_of(pipeline(), 1, 2));
    let loader = loader.next_epoch().unwrap();
    let past = loader.next_epoch().unwrap_err();
    assert!(
        matches!(past.error, LoadError::NoMoreEpochs { epochs: Some(3) }),
        "{past}"
    );
    assert_eq!(past.loader.expect("kept").epoch(), 2);
}
