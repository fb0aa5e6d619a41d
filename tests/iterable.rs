//! Streams through the loader (`IterableDataset`): the shuffle buffer's
//! output, the same batches for any thread count, resume (also with
//! another shard count), short and failing streams, shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tensorprep::PixelFormat;
use tensorprep::Tensor;
use tensorprep::train::data::folder::FolderDataset;
use tensorprep::train::data::{
    Content, DataError, Dataset, Iterable, IterableDataset, ReadEpoch, Sample, SampleStream,
    StreamOptions,
};
use tensorprep::train::{
    Augment, LoadError, Loader, LoaderConfig, LoaderState, Order, RandomResizedCrop, Shard,
    TrainPipeline, TrainPlan,
};

/// `n` pixel samples, item `k` a 16x12 RGB image of its own and label `k`;
/// `fail_at`: the stream's error at that item; `delay`: each item's time.
struct Numbers {
    n: usize,
    fail_at: Option<usize>,
    delay: Duration,
    /// Items read, over every stream opened.
    reads: Arc<AtomicUsize>,
    opens: AtomicUsize,
}

impl Numbers {
    fn new(n: usize) -> Numbers {
        Numbers {
            n,
            fail_at: None,
            delay: Duration::ZERO,
            reads: Arc::new(AtomicUsize::new(0)),
            opens: AtomicUsize::new(0),
        }
    }
}

impl Iterable for Numbers {
    fn open(&self, _epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
        self.opens.fetch_add(1, Ordering::SeqCst);
        let (n, fail_at, delay, reads) = (self.n, self.fail_at, self.delay, self.reads.clone());
        let mut k = 0usize;
        Ok(Box::new(move |s: &mut Sample| {
            if k == n {
                return Ok(false);
            }
            if Some(k) == fail_at {
                return Err(DataError::Invalid {
                    what: format!("item {k} is unreadable"),
                });
            }
            std::thread::sleep(delay);
            reads.fetch_add(1, Ordering::SeqCst);
            s.bytes.clear();
            s.bytes
                .extend((0..16 * 12 * 3).map(|j| (k * 37 + j * (k % 5 + 1)) as u8));
            s.content = Content::Pixels {
                width: 16,
                height: 12,
                format: PixelFormat::Rgb8,
            };
            s.labels.clear();
            s.labels.push(k as f32);
            k += 1;
            Ok(true)
        }))
    }

    fn describe(&self) -> String {
        "numbers".into()
    }

    fn fingerprint(&self) -> u64 {
        self.n as u64
    }
}

/// A folder's samples in its own order, read front to back.
struct FolderStream(Arc<FolderDataset>);

impl Iterable for FolderStream {
    fn open(&self, _epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
        let folder = Arc::clone(&self.0);
        let mut i = 0;
        Ok(Box::new(move |s: &mut Sample| {
            if i == folder.len() {
                return Ok(false);
            }
            folder.read(i, s)?;
            i += 1;
            Ok(true)
        }))
    }

    fn describe(&self) -> String {
        "folder stream".into()
    }

    fn fingerprint(&self) -> u64 {
        self.0.fingerprint()
    }
}

fn stream(source: Numbers, samples: Option<usize>, buffer: usize) -> Arc<IterableDataset> {
    let options = StreamOptions::new(samples).buffer(buffer);
    Arc::new(IterableDataset::new(Arc::new(source), options).unwrap())
}

fn plan() -> Arc<TrainPlan> {
    let mut p = TrainPipeline::imagenet_train();
    p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(8, 6));
    Arc::new(p.compile().unwrap())
}

/// (tensor, labels, indices) of each batch.
type Batches = Vec<(Vec<f32>, Vec<f32>, Vec<u64>)>;

fn rest(loader: &mut Loader) -> Batches {
    loader.map(|b| tuple(&b.unwrap())).collect()
}

/// A batch as (tensor, labels, indices).
fn tuple(b: &tensorprep::train::Batch) -> (Vec<f32>, Vec<f32>, Vec<u64>) {
    let n = b.len();
    let Tensor::F32(t) = b.tensor() else {
        unreachable!("a float plan")
    };
    let per = t.len() / b.shape()[0].max(1);
    (
        t[..n * per].to_vec(),
        b.labels()[..n].to_vec(),
        b.indices()[..n].to_vec(),
    )
}

/// `epochs` epochs' batches.
fn run(data: Arc<dyn Dataset>, config: LoaderConfig, epochs: u32) -> Vec<Batches> {
    let mut loader = Loader::new(data, plan(), config).unwrap();
    let mut all = Vec::new();
    for e in 0..epochs {
        all.push(rest(&mut loader));
        if e + 1 < epochs {
            loader = loader.next_epoch().unwrap();
        }
    }
    all
}

fn labels(batches: &Batches) -> Vec<f32> {
    batches.iter().flat_map(|b| b.1.clone()).collect()
}

/// The buffer's output is a permutation of the stream that differs from
/// it and from epoch to epoch; each position draws from what the buffer
/// holds then (item `k` comes out no earlier than position `k - buffer +
/// 1`); a buffer of one is the stream's order.
#[test]
fn the_buffer_hands_out_a_permutation_of_the_stream() {
    let data = stream(Numbers::new(40), None, 8);
    assert_eq!(data.len(), 40, "counted by reading the stream once");
    let epoch = |data: &IterableDataset, epoch| {
        let pass = ReadEpoch::new(3, epoch, true, Shard::ALL, 0, 40);
        let mut s = Sample::default();
        (0..40)
            .map(|i| {
                data.read_in(&pass, i, &mut s).unwrap();
                s.labels[0] as usize
            })
            .collect::<Vec<_>>()
    };
    let (e0, e1) = (epoch(&data, 0), epoch(&data, 1));
    for order in [&e0, &e1] {
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..40).collect::<Vec<_>>());
        for (p, &k) in order.iter().enumerate() {
            assert!(k < p + 8, "item {k} at position {p}: past the buffer");
        }
    }
    assert_ne!(e0, (0..40).collect::<Vec<_>>(), "shuffled");
    assert_ne!(e0, e1, "each epoch draws anew");
    assert_eq!(e0, epoch(&data, 0), "the same draws again");
    let one = stream(Numbers::new(40), None, 1);
    assert_eq!(epoch(&one, 0), (0..40).collect::<Vec<_>>());
}

/// Read by index (`Dataset::read`: `dataset[i]`, a combination), a stream
/// gives its own order; reads in increasing order share one opening, a
/// read behind the last reopens it.
#[test]
fn reads_by_index_move_one_cursor_on() {
    let source = Arc::new(Numbers::new(40));
    let options = StreamOptions::new(Some(40)).buffer(8);
    let data = IterableDataset::new(Arc::clone(&source) as Arc<dyn Iterable>, options).unwrap();
    let mut s = Sample::default();
    for i in (0..40).step_by(3) {
        data.read(i, &mut s).unwrap();
        assert_eq!(s.labels, [i as f32]);
    }
    assert_eq!(source.opens.load(Ordering::SeqCst), 1);
    assert_eq!(
        source.reads.load(Ordering::SeqCst),
        40,
        "0 to 39, once each"
    );
    data.read(5, &mut s).unwrap();
    assert_eq!(s.labels, [5.0]);
    assert_eq!(source.opens.load(Ordering::SeqCst), 2);
    assert!(matches!(
        data.read(40, &mut s),
        Err(DataError::OutOfRange { .. })
    ));
}

/// Shuffle off: the stream's own order, so a stream over a folder gives
/// the folder's batches (tensors, labels, indices) read sequentially.
#[test]
fn shuffle_off_gives_the_stream_s_order_and_the_folder_s_batches() {
    let root = tensorprep_tests::fixture("records/folder");
    let folder = Arc::new(FolderDataset::open(&root).unwrap());
    let options = StreamOptions::new(None).buffer(3);
    let streamed = IterableDataset::new(Arc::new(FolderStream(Arc::clone(&folder))), options);
    let streamed: Arc<dyn Dataset> = Arc::new(streamed.unwrap());
    assert_eq!(streamed.len(), 6);
    let mut config = LoaderConfig::new(4, 2, 11);
    config.order = Order::Sequential;
    config.read_workers = 2;
    let theirs = run(folder, config.clone(), 2);
    assert_eq!(labels(&theirs[0]).len(), 6);
    assert!(run(streamed, config, 2) == theirs);
    // Numbers in order, cut to the 10 asked for.
    let cut = stream(Numbers::new(40), Some(10), 4);
    let mut config = LoaderConfig::new(4, 2, 11);
    config.order = Order::Sequential;
    let batches = run(cut, config, 1);
    assert_eq!(
        labels(&batches[0]),
        (0..10).map(|k| k as f32).collect::<Vec<_>>()
    );
}

/// Shuffled through the buffer: the same batches (tensors, labels,
/// indices) for 1 and 3 decode threads and 1 and 3 read threads, two
/// epochs.
#[test]
fn the_same_batches_for_any_thread_count() {
    let with = |workers, read_workers| {
        let mut config = LoaderConfig::new(4, workers, 5);
        config.read_workers = read_workers;
        run(stream(Numbers::new(30), None, 6), config, 2)
    };
    let one = with(1, 1);
    assert_eq!(one[0].len(), 8, "30 samples in batches of 4");
    let mut seen = labels(&one[0]);
    seen.sort_by(f32::total_cmp);
    assert_eq!(seen, (0..30).map(|k| k as f32).collect::<Vec<_>>());
    assert_ne!(labels(&one[0]), labels(&one[1]));
    for (w, r) in [(3, 1), (1, 3), (3, 3)] {
        assert!(with(w, r) == one, "{w} decode and {r} read threads");
    }
    // Weights do not apply to a stream.
    let mut config = LoaderConfig::new(4, 1, 5);
    config.order =
        Order::Weighted(tensorprep::train::Weighted::new(vec![1.0; 30], 30, true).unwrap());
    let refused = Loader::new(stream(Numbers::new(30), None, 6), plan(), config);
    assert!(matches!(refused, Err(LoadError::Config(_))));
}

/// A loader resumed after k batches gives the rest of the uninterrupted
/// epoch (the stream reopened, the buffer's draws replayed); and two shards
/// of batch 2, stopped after 3 steps, resume as one shard of batch 4.
#[test]
fn resume_is_exact_also_with_another_shard_count() {
    let data = || stream(Numbers::new(30), None, 6);
    let config = LoaderConfig::new(4, 2, 9);
    let whole = run(data(), config.clone(), 1).remove(0);
    let resume_from = |state: LoaderState, config: LoaderConfig| {
        let d = data();
        let mut loader = Loader::resume(d, plan(), config, state).unwrap();
        rest(&mut loader)
    };
    let mut loader = Loader::new(data(), plan(), config.clone()).unwrap();
    for _ in 0..3 {
        drop(loader.next().unwrap().unwrap());
    }
    let state = loader.state();
    drop(loader);
    assert_eq!(state.batches, 3);
    assert!(
        resume_from(state, config.clone()) == whole[3..],
        "resumed after 3 batches"
    );
    // Two shards: each step's samples are the whole run's batch, split.
    let shard_steps = |rank: u32| {
        let mut c = LoaderConfig::new(2, 2, 9);
        c.shard = Shard::new(2, rank, false).unwrap();
        let mut loader = Loader::new(data(), plan(), c).unwrap();
        let mut steps = Vec::new();
        for _ in 0..3 {
            let b = loader.next().unwrap().unwrap();
            steps.push(b.labels()[..b.len()].to_vec());
        }
        (steps, loader.state())
    };
    let (zero, state) = shard_steps(0);
    let (one, _) = shard_steps(1);
    for step in 0..3 {
        let mut both: Vec<f32> = zero[step].iter().chain(&one[step]).copied().collect();
        let mut theirs = whole[step].1.clone();
        both.sort_by(f32::total_cmp);
        theirs.sort_by(f32::total_cmp);
        assert_eq!(both, theirs, "step {step}: the shards split the batch");
    }
    assert!(resume_from(state, config) == whole[3..], "2 shards -> 1");
}

/// A stream shorter than its epoch is an error naming the position and
/// the counts (shuffled or not), never a short epoch; a stream's own error
/// names its sample; a byte cap on the buffer is an error when passed.
#[test]
fn a_short_or_failing_stream_is_an_error_naming_the_position() {
    for order in [Order::Sequential, Order::Shuffled] {
        let mut config = LoaderConfig::new(4, 2, 1);
        config.order = order.clone();
        let data = stream(Numbers::new(10), Some(13), 4);
        let results: Vec<_> = Loader::new(data, plan(), config).unwrap().collect();
        let err = results.last().unwrap().as_ref().unwrap_err();
        let message = tensorprep::error::report(err);
        assert!(
            message.contains(
                "numbers position 10: the stream ended after 10 samples, the epoch has 13"
            ),
            "{order:?}: {message}"
        );
        assert!(matches!(err, LoadError::Read { index: 10, .. }), "{err:?}");
        assert_eq!(results.len(), 3, "batches 0 and 1, then the error");
    }
    let mut failing = Numbers::new(20);
    failing.fail_at = Some(6);
    let failing = Arc::new(failing);
    let options = StreamOptions::new(Some(20)).buffer(4);
    let data = IterableDataset::new(Arc::clone(&failing) as Arc<dyn Iterable>, options).unwrap();
    let mut config = LoaderConfig::new(4, 2, 1);
    config.epochs = Some(1);
    config.read_workers = 2;
    let results: Vec<_> = Loader::new(Arc::new(data), plan(), config)
        .unwrap()
        .collect();
    // The positions after it fail at once: the stream is not reopened.
    assert_eq!(failing.opens.load(Ordering::SeqCst), 1);
    let err = results.last().unwrap().as_ref().unwrap_err();
    assert!(
        tensorprep::error::report(err).contains("item 6 is unreadable"),
        "{}",
        tensorprep::error::report(err)
    );
    // 16x12 RGB samples hold 576 bytes: a cap of 4 of them, buffer of 8.
    let options = StreamOptions::new(Some(20))
        .buffer(8)
        .max_buffer_bytes(4 * 576);
    let capped = IterableDataset::new(Arc::new(Numbers::new(20)), options).unwrap();
    let mut s = Sample::default();
    let err = capped
        .read_in(&ReadEpoch::new(0, 0, true, Shard::ALL, 0, 20), 0, &mut s)
        .unwrap_err();
    assert!(
        err.to_string().contains("more than its cap of 2304"),
        "{err}"
    );
    assert!(matches!(
        IterableDataset::new(
            Arc::new(Numbers::new(2)),
            StreamOptions::new(None).buffer(0)
        ),
        Err(DataError::Invalid { .. })
    ));
}

/// Read threads out of order still read the stream once per epoch (no
/// reopening), and a dropped loader joins its threads mid-stream: no read
/// happens once the drop returns.
#[test]
fn one_stream_per_epoch_and_a_dropped_loader_stops_reading() {
    let mut slow = Numbers::new(200);
    slow.delay = Duration::from_millis(2);
    let reads = Arc::clone(&slow.reads);
    let source = Arc::new(slow);
    let data = IterableDataset::new(
        Arc::clone(&source) as Arc<dyn Iterable>,
        StreamOptions::new(Some(200)).buffer(16),
    );
    let data: Arc<dyn Dataset> = Arc::new(data.unwrap());
    let mut config = LoaderConfig::new(4, 2, 3);
    config.read_workers = 3;
    let mut loader = Loader::new(Arc::clone(&data), plan(), config.clone()).unwrap();
    drop(loader.next().unwrap().unwrap());
    drop(loader);
    let after = reads.load(Ordering::SeqCst);
    assert!(after < 200, "stopped mid-stream ({after} read)");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        reads.load(Ordering::SeqCst),
        after,
        "every thread was joined"
    );
    // A whole epoch with 3 read threads: one stream opened for it.
    let opened = source.opens.load(Ordering::SeqCst);
    config.epochs = Some(1);
    let batches = rest(&mut Loader::new(data, plan(), config).unwrap());
    assert_eq!(batches.len(), 50);
    assert_eq!(source.opens.load(Ordering::SeqCst), opened + 1);
}

/// A WebDataset tar read front to back (`TarStream`), from a file and from
/// a FIFO (no seeking possible), gives the samples `WebDataset` indexes in
/// the same shard (written by the `webdataset` package: an extra `json`
/// member ignored), and through the loader in order the same batches; a
/// tar cut inside a member is an error, not a short epoch.
#[test]
fn a_tar_read_front_to_back_gives_the_webdataset_s_samples() {
    use tensorprep::train::data::tar_stream::TarStream;
    use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
    let shard = tensorprep_tests::fixture("records/shard-0.tar");
    let indexed =
        Arc::new(WebDataset::open(shard.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap());
    assert!(indexed.len() >= 2);
    let samples = |d: &dyn Dataset| {
        let mut s = Sample::default();
        (0..d.len())
            .map(|i| {
                d.read(i, &mut s).unwrap();
                (s.bytes.clone(), s.labels.clone())
            })
            .collect::<Vec<_>>()
    };
    let streamed = IterableDataset::new(
        Arc::new(TarStream::new(&shard, WebKeys::CONVENTIONAL)),
        StreamOptions::new(None).buffer(2),
    )
    .unwrap();
    assert_eq!(streamed.len(), indexed.len());
    assert_eq!(samples(&streamed), samples(&*indexed));
    let mut config = LoaderConfig::new(2, 2, 4);
    config.order = Order::Sequential;
    assert!(run(Arc::new(streamed), config.clone(), 1) == run(indexed.clone(), config, 1));

    // Through a FIFO: a writer thread per epoch.
    let dir = std::env::temp_dir().join(format!("tp-tar-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("stream.tar");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let bytes = std::fs::read(&shard).unwrap();
        let (path, len) = (fifo.clone(), indexed.len());
        let writer = std::thread::spawn(move || std::fs::write(&path, &bytes).unwrap());
        let options = StreamOptions::new(Some(len)).buffer(2);
        let piped = IterableDataset::new(
            Arc::new(TarStream::new(&fifo, WebKeys::CONVENTIONAL)),
            options,
        );
        let piped = piped.unwrap();
        let mut s = Sample::default();
        let pass = ReadEpoch::new(0, 0, false, Shard::ALL, 0, len as u64);
        for (i, (bytes, labels)) in samples(&*indexed).into_iter().enumerate() {
            piped.read_in(&pass, i, &mut s).unwrap();
            assert_eq!((&s.bytes, &s.labels), (&bytes, &labels), "sample {i}");
        }
        writer.join().unwrap();
    }
    // Cut inside a member: an error naming the stream.
    let cut = dir.join("cut.tar");
    std::fs::write(&cut, &std::fs::read(&shard).unwrap()[..1500]).unwrap();
    let err = IterableDataset::new(
        Arc::new(TarStream::new(&cut, WebKeys::CONVENTIONAL)),
        StreamOptions::new(None),
    )
    .unwrap_err();
    assert!(err.to_string().contains("cut.tar"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A source whose first stream fails at its first item; later ones read.
struct FailsFirst {
    bad: Numbers,
    good: Numbers,
    opens: AtomicUsize,
}

impl Iterable for FailsFirst {
    fn open(&self, epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
        if self.opens.fetch_add(1, Ordering::SeqCst) == 0 {
            self.bad.open(epoch)
        } else {
            self.good.open(epoch)
        }
    }

    fn describe(&self) -> String {
        "fails first".into()
    }

    fn fingerprint(&self) -> u64 {
        self.good.n as u64
    }
}

/// Each loader (each start of one) reads through its own cursor: a retry of
/// a pass that failed reads the stream again (it does not inherit the
/// failure), and two loaders over one dataset at once each get the batches
/// one alone gets.
#[test]
fn every_loader_run_reads_through_its_own_cursor() {
    let mut bad = Numbers::new(12);
    bad.fail_at = Some(0);
    let source = FailsFirst {
        bad,
        good: Numbers::new(12),
        opens: AtomicUsize::new(0),
    };
    let data = Arc::new(
        IterableDataset::new(Arc::new(source), StreamOptions::new(Some(12)).buffer(4)).unwrap(),
    );
    let mut config = LoaderConfig::new(4, 2, 3);
    config.epochs = Some(1);
    let failed: Vec<_> = Loader::new(data.clone(), plan(), config.clone())
        .unwrap()
        .collect();
    assert!(failed.iter().any(|b| b.is_err()), "the first pass fails");
    let retried = rest(&mut Loader::new(data.clone(), plan(), config.clone()).unwrap());
    assert_eq!(retried.len(), 3, "the retry reads the stream again");
    // Two loaders at once, batch by batch in turn.
    let alone = rest(&mut Loader::new(data.clone(), plan(), config.clone()).unwrap());
    assert_eq!(alone, retried);
    let mut a = Loader::new(data.clone(), plan(), config.clone()).unwrap();
    let mut b = Loader::new(data, plan(), config).unwrap();
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        got_a.extend(rest_one(&mut a));
        got_b.extend(rest_one(&mut b));
    }
    assert_eq!(got_a, alone);
    assert_eq!(got_b, alone);
}

/// The loader's next batch, as `rest` gives batches.
fn rest_one(loader: &mut Loader) -> Batches {
    vec![tuple(&loader.next().unwrap().unwrap())]
}

/// `body`'s result, or a failure once `limit` has passed (the thread left
/// blocked: a hang fails the test instead of holding the binary).
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(body());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(_) => panic!("{what}: not done within {limit:?} (a hang)"),
    }
}

/// A source whose streams count themselves while open.
struct Counted {
    inner: Numbers,
    live: Arc<AtomicUsize>,
}

/// A stream that counts itself while open.
struct Live(Box<dyn SampleStream>, Arc<AtomicUsize>);

impl SampleStream for Live {
    fn next(&mut self, sample: &mut Sample) -> Result<bool, DataError> {
        self.0.next(sample)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.1.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Iterable for Counted {
    fn open(&self, epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
        let inner = self.inner.open(epoch)?;
        self.live.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(Live(inner, Arc::clone(&self.live))))
    }

    fn describe(&self) -> String {
        "counted".into()
    }

    fn fingerprint(&self) -> u64 {
        self.inner.n as u64
    }
}

/// A loader dropped while its read threads fill a large shuffle buffer
/// from a slow stream (1,000 samples at 20 ms: 20 s) returns at once: the
/// fill stops at the stream's next sample. Its run's cursors (their
/// streams) are dropped with it, not left open until pushed out.
#[test]
fn a_loader_dropped_mid_fill_returns_promptly_and_closes_its_streams() {
    let mut slow = Numbers::new(2000);
    slow.delay = Duration::from_millis(20);
    let live = Arc::new(AtomicUsize::new(0));
    let source = Counted {
        inner: slow,
        live: Arc::clone(&live),
    };
    let data = IterableDataset::new(
        Arc::new(source),
        StreamOptions::new(Some(2000)).buffer(1000),
    );
    let data: Arc<dyn Dataset> = Arc::new(data.unwrap());
    let mut config = LoaderConfig::new(4, 2, 3);
    config.read_workers = 2;
    let loader = Loader::new(Arc::clone(&data), plan(), config).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        live.load(Ordering::SeqCst),
        1,
        "epoch 0's stream is filling"
    );
    let started = std::time::Instant::now();
    within(
        Duration::from_secs(5),
        "dropping a loader mid-fill",
        move || drop(loader),
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(live.load(Ordering::SeqCst), 0, "the run's cursor is closed");
}

/// Standard input without a length is refused when the dataset is made
/// (counting it would consume it, and epoch 0 then fail).
#[test]
fn standard_input_needs_a_length() {
    use tensorprep::train::data::tar_stream::TarStream;
    use tensorprep::train::data::webdataset::WebKeys;
    let made = IterableDataset::new(
        Arc::new(TarStream::new("-", WebKeys::CONVENTIONAL)),
        StreamOptions::new(None),
    );
    let err = made.unwrap_err();
    assert!(matches!(err, DataError::LengthNeeded { .. }), "{err}");
    assert!(err.to_string().contains("give its length"), "{err}");
    let given = IterableDataset::new(
        Arc::new(TarStream::new("-", WebKeys::CONVENTIONAL)),
        StreamOptions::new(Some(3)),
    );
    assert_eq!(given.unwrap().len(), 3);
}

/// A FIFO without a length is refused when the dataset is made, at once
/// (counting would read the tar its writer writes, a one-shot writer's
/// only one, so epoch 0 would wait for another; with no writer, counting
/// waited for one: the watchdog fails that), and accepted with one.
#[cfg(unix)]
#[test]
fn a_fifo_needs_a_length() {
    use tensorprep::train::data::tar_stream::TarStream;
    use tensorprep::train::data::webdataset::WebKeys;
    let dir = std::env::temp_dir().join(format!("tp-fifo-len-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("unwritten.tar");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let path = fifo.clone();
    let made = within(
        Duration::from_secs(5),
        "a FIFO without a length",
        move || {
            IterableDataset::new(
                Arc::new(TarStream::new(&path, WebKeys::CONVENTIONAL)),
                StreamOptions::new(None),
            )
            .map(|d| d.len())
        },
    );
    let err = made.unwrap_err();
    assert!(matches!(err, DataError::LengthNeeded { .. }), "{err}");
    assert!(err.to_string().contains("unwritten.tar"), "{err}");
    let given = IterableDataset::new(
        Arc::new(TarStream::new(&fifo, WebKeys::CONVENTIONAL)),
        StreamOptions::new(Some(3)),
    );
    assert_eq!(given.unwrap().len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A FIFO whose writer writes the tar once, read by a loader of endless
/// epochs with 2 read threads: epoch 0 gives the tar's samples (the next
/// epoch's reader, waiting for a writer, holds up neither it nor the
/// loader's drop).
#[cfg(unix)]
#[test]
fn a_fifo_with_a_one_shot_writer_serves_epoch_0_and_the_loader_drops() {
    use tensorprep::train::data::tar_stream::TarStream;
    use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
    let shard = tensorprep_tests::fixture("records/shard-0.tar");
    let indexed =
        Arc::new(WebDataset::open(shard.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap());
    let dir = std::env::temp_dir().join(format!("tp-fifo-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("once.tar");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let bytes = std::fs::read(&shard).unwrap();
    let path = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(&path, &bytes).unwrap());
    let len = indexed.len();
    let piped = IterableDataset::new(
        Arc::new(TarStream::new(&fifo, WebKeys::CONVENTIONAL)),
        StreamOptions::new(Some(len)).buffer(2),
    )
    .unwrap();
    let mut config = LoaderConfig::new(1, 2, 2);
    config.order = Order::Sequential;
    config.read_workers = 2;
    let expected = {
        let mut c = config.clone();
        c.epochs = Some(1);
        run(indexed, c, 1).remove(0)
    };
    let mut loader = Loader::new(Arc::new(piped), plan(), config).unwrap();
    let epoch0 = within(Duration::from_secs(30), "epoch 0 over a FIFO", move || {
        let got = rest(&mut loader);
        (got, loader)
    });
    let (got, loader) = epoch0;
    assert_eq!(got, expected);
    within(Duration::from_secs(10), "dropping the loader", move || {
        drop(loader)
    });
    writer.join().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A loader over a FIFO whose writer opened it and writes nothing (its
/// tar thread blocked in `read`) drops within a bound: the stopped stream's
/// `next` returns, and its drop leaves the blocked thread to end when the
/// pipe yields (before, the drop waited for the writer: the watchdog).
#[cfg(unix)]
#[test]
fn a_loader_over_a_stalled_fifo_drops_within_a_bound() {
    use tensorprep::train::data::tar_stream::TarStream;
    use tensorprep::train::data::webdataset::WebKeys;
    let dir = std::env::temp_dir().join(format!("tp-fifo-stall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("stalled.tar");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let (close, closed) = std::sync::mpsc::channel::<()>();
    let path = fifo.clone();
    // Opens the FIFO (once the loader's thread opens it), writes nothing,
    // and holds it open until told.
    let writer = std::thread::spawn(move || {
        let held = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let _ = closed.recv();
        drop(held);
    });
    let data = IterableDataset::new(
        Arc::new(TarStream::new(&fifo, WebKeys::CONVENTIONAL)),
        StreamOptions::new(Some(10)).buffer(2),
    )
    .unwrap();
    let mut config = LoaderConfig::new(2, 2, 2);
    config.read_workers = 2;
    let loader = Loader::new(Arc::new(data), plan(), config).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    within(
        Duration::from_secs(10),
        "dropping a loader over a stalled FIFO",
        move || drop(loader),
    );
    let took = started.elapsed();
    close.send(()).unwrap();
    writer.join().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    // The stream's drop gives its blocked thread 1 s.
    assert!(took < Duration::from_secs(3), "the drop took {took:?}");
}

/// A concatenation of streams passes the loader's pass on to each part (its
/// positions shifted): shuffled, it gives each part's own buffer output in
/// turn (the parts alone, one after the other), the same for 1 and 3 read
/// threads, each part's stream opened once per epoch (not reopened per
/// step back, as read by index); a range of a stream is the stream's first
/// positions, read once.
#[test]
fn a_concatenation_or_range_of_streams_passes_the_loader_s_pass_on() {
    use tensorprep::train::data::combine::{Concat, Range};
    let sources = [Arc::new(Numbers::new(12)), Arc::new(Numbers::new(8))];
    let part = |i: usize| -> Arc<dyn Dataset> {
        let options = StreamOptions::new(Some(sources[i].n)).buffer(5);
        Arc::new(IterableDataset::new(sources[i].clone() as Arc<dyn Iterable>, options).unwrap())
    };
    let mut config = LoaderConfig::new(4, 2, 3);
    config.seed = 11;
    config.epochs = Some(1);
    let alone: Vec<f32> = (0..2)
        .flat_map(|i| labels(&run(part(i), config.clone(), 1)[0]))
        .collect();
    let (a, b) = (part(0), part(1));
    let concat: Arc<dyn Dataset> = Arc::new(Concat::new([a, b]).unwrap());
    assert!(concat.orders_itself());
    let opened = |s: &Arc<Numbers>| s.opens.load(Ordering::SeqCst);
    let before = [opened(&sources[0]), opened(&sources[1])];
    let together = run(Arc::clone(&concat), config.clone(), 1).remove(0);
    assert_eq!(labels(&together), alone);
    assert_eq!(
        [opened(&sources[0]), opened(&sources[1])],
        [before[0] + 1, before[1] + 1],
        "each part's stream read once"
    );
    config.read_workers = 3;
    assert_eq!(run(concat, config.clone(), 1).remove(0), together);

    let first = labels(&run(part(0), config.clone(), 1)[0]);
    let before = opened(&sources[0]);
    let taken: Arc<dyn Dataset> = Arc::new(Range::take(part(0), 6).unwrap());
    config.batch_size = 2;
    assert_eq!(labels(&run(taken, config, 1)[0]), first[..6]);
    assert_eq!(opened(&sources[0]), before + 1);
}

/// Each part of a concatenation of streams closes its stream once its own
/// positions of the epoch have been read (not only when the loader is
/// dropped or the cursor pushed out): a part asks for its part of the pass,
/// fewer positions than the whole pass (a FIFO's stream left open would hold
/// the next epoch's turn).
#[test]
fn a_concatenation_s_parts_close_their_streams_at_their_part_s_end() {
    use tensorprep::train::data::combine::Concat;
    let live = Arc::new(AtomicUsize::new(0));
    let part = |n: usize| -> Arc<dyn Dataset> {
        let source = Counted {
            inner: Numbers::new(n),
            live: Arc::clone(&live),
        };
        let options = StreamOptions::new(Some(n)).buffer(3);
        Arc::new(IterableDataset::new(Arc::new(source), options).unwrap())
    };
    let concat: Arc<dyn Dataset> = Arc::new(Concat::new([part(6), part(4)]).unwrap());
    let mut config = LoaderConfig::new(2, 2, 2);
    config.order = Order::Sequential;
    // One epoch: no stream of a next one opened by reading ahead.
    config.epochs = Some(1);
    let mut loader = Loader::new(concat, plan(), config).unwrap();
    let got = within(Duration::from_secs(30), "one epoch", move || {
        let got = rest(&mut loader);
        (got, loader)
    });
    let (batches, loader) = got;
    assert_eq!(
        labels(&batches),
        (0..6).chain(0..4).map(|k| k as f32).collect::<Vec<_>>()
    );
    assert_eq!(live.load(Ordering::SeqCst), 0, "every part's stream closed");
    drop(loader);
}

/// What cannot keep a stream's order refuses it with a typed error: a
/// filter, a cache, a zip, a concatenation with a dataset read by index.
#[test]
fn combinations_that_cannot_keep_a_stream_s_order_refuse_it() {
    use tensorprep::train::data::combine::{Cache, Concat, Filter, InMemory, Zip};
    let s: Arc<dyn Dataset> = stream(Numbers::new(4), Some(4), 2);
    let mut one = Sample::default();
    one.bytes.push(1);
    let by_index: Arc<dyn Dataset> = Arc::new(InMemory::new(vec![one; 4]));
    let refused = |r: Result<(), DataError>, what: &str| match r {
        Err(e @ DataError::OrdersItself { .. }) => {
            assert!(e.to_string().contains(what), "{e}")
        }
        other => panic!("{what}: {other:?}"),
    };
    refused(Filter::by_index(s.clone(), |_| true).map(drop), "filter");
    refused(Filter::new(s.clone(), |_| true).map(drop), "filter");
    refused(Cache::new(s.clone(), 1 << 20).map(drop), "cache");
    refused(Zip::new(s.clone(), by_index.clone()).map(drop), "zip");
    refused(Zip::new(by_index.clone(), s.clone()).map(drop), "zip");
    refused(
        Concat::new([s.clone(), by_index.clone()]).map(drop),
        "concatenation",
    );
    // Datasets read by index combine as before.
    assert!(
        !Concat::new([by_index.clone(), by_index])
            .unwrap()
            .orders_itself()
    );
}

/// A FIFO read by a loader over 2 epochs, its writer writing the tar once
/// per epoch (reopening the FIFO each time) or twice through one opening:
/// both epochs give the tar's samples (the epochs' readers take turns, the
/// second reading on past the first tar's padding), within a watchdog; an
/// epoch of fewer samples than the tar holds reads the rest of its tar
/// unsent, so the next epoch starts at the next tar.
#[cfg(unix)]
#[test]
fn a_fifo_serves_an_epoch_per_tar_its_writer_writes() {
    use std::io::Write;
    use tensorprep::train::data::combine::Range;
    use tensorprep::train::data::tar_stream::TarStream;
    use tensorprep::train::data::webdataset::{WebDataset, WebKeys};
    let shard = tensorprep_tests::fixture("records/shard-0.tar");
    let indexed: Arc<dyn Dataset> =
        Arc::new(WebDataset::open(shard.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap());
    assert!(indexed.len() > 2);
    let mut config = LoaderConfig::new(1, 2, 2);
    config.order = Order::Sequential;
    config.read_workers = 2;
    config.epochs = Some(2);
    let dir = std::env::temp_dir().join(format!("tp-fifo-twice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (reopening, len) in [
        (true, indexed.len()),
        (false, indexed.len()),
        (true, 2),
        (false, 2),
    ] {
        let first: Arc<dyn Dataset> = Arc::new(Range::take(indexed.clone(), len).unwrap());
        let expected = run(first, config.clone(), 2);
        let fifo = dir.join(format!("twice-{reopening}-{len}.tar"));
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let bytes = std::fs::read(&shard).unwrap();
        let path = fifo.clone();
        let writer = std::thread::spawn(move || {
            if reopening {
                for _ in 0..2 {
                    std::fs::write(&path, &bytes).unwrap();
                }
            } else {
                let mut w = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                w.write_all(&bytes).unwrap();
                w.write_all(&bytes).unwrap();
            }
        });
        let piped = IterableDataset::new(
            Arc::new(TarStream::new(&fifo, WebKeys::CONVENTIONAL)),
            StreamOptions::new(Some(len)).buffer(2),
        )
        .unwrap();
        let config = config.clone();
        let got = within(Duration::from_secs(30), "2 epochs over a FIFO", move || {
            run(Arc::new(piped), config, 2)
        });
        assert!(
            got == expected,
            "reopening writer: {reopening}, {len} samples"
        );
        writer.join().unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tar file's stream fingerprint follows its bytes, not its name alone:
/// the same name with other contents (a shorter tar) is another dataset.
#[test]
fn a_tar_stream_s_fingerprint_follows_the_file() {
    use tensorprep::train::data::tar_stream::TarStream;
    use tensorprep::train::data::webdataset::WebKeys;
    let shard = tensorprep_tests::fixture("records/shard-0.tar");
    let dir = std::env::temp_dir().join(format!("tp-tar-print-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.tar");
    let bytes = std::fs::read(&shard).unwrap();
    let print = || TarStream::new(&path, WebKeys::CONVENTIONAL).fingerprint();
    std::fs::write(&path, &bytes).unwrap();
    let whole = print();
    assert_eq!(print(), whole, "the same file, the same fingerprint");
    std::fs::write(&path, &bytes[..bytes.len() - 1024]).unwrap();
    assert_ne!(print(), whole, "other contents under the same name");
    std::fs::remove_dir_all(&dir).unwrap();
}
