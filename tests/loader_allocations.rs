//! The loader allocates nothing per batch in steady state beyond the
//! decoder's own, on all its threads together. One test in this binary: the
//! count is process-wide, so nothing else may run beside it.

use std::sync::Arc;

use tensorprep::PixelFormat;
use tensorprep::pipeline::{Op, Resize};
use tensorprep::resize::{Filter, Resample};
use tensorprep::size::SizeRule;
use tensorprep::train::data::{Content, DataError, Dataset, Sample};
use tensorprep::train::{Augment, Loader, LoaderConfig, TrainPipeline};
use tensorprep_tests::{
    CountingAllocator, decoding_allocations, extra_epoch_allocations, process_allocations, read,
    read_png,
};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Runs `epochs` epochs of 40 samples in batches of 2 (20 batches each),
/// through 2 read, 2 decode and 2 collate threads; the allocations of the
/// whole run, start and shutdown included.
fn run(epochs: u32, dataset: Arc<dyn Dataset>) -> usize {
    // A fixed resize and a random flip: the workers' plan caches settle
    // after the first samples (random crop sizes would keep growing their
    // tables now and then, which the single-thread test in train.rs covers).
    let mut pipeline = TrainPipeline::imagenet_train();
    pipeline.augments[0] = Augment::Op(Op::Resize(Resize {
        size: SizeRule::Exact {
            width: 64,
            height: 48,
        },
        resample: Resample::Pillow(Filter::Bilinear),
    }));
    let plan = Arc::new(pipeline.compile().unwrap());
    let mut config = LoaderConfig::new(2, 2, 9);
    config.read_workers = 2;
    config.collate_workers = 2;
    config.epochs = Some(epochs);
    process_allocations(|| {
        let mut loader = Loader::new(Arc::clone(&dataset), plan, config).unwrap();
        for epoch in 0..epochs {
            assert_eq!((&mut loader).map(|b| b.unwrap().len()).sum::<usize>(), 40);
            if epoch + 1 < epochs {
                loader = loader.next_epoch().unwrap();
            }
        }
    })
}

/// 40 pixel samples taking turns: an RGB image and a gray one of the same
/// size (its red channel; converted to RGB on the way), labelled and
/// numbered by index. One size for both, so that a worker's scratch grows
/// once whichever kind it meets first.
fn pixel_dataset() -> Arc<dyn Dataset> {
    let image = read_png("records/folder/dog/dog1.png");
    let v = image.view();
    let (width, height) = (v.width(), v.height());
    assert_eq!(v.format(), PixelFormat::Rgb8);
    let rgb = image.as_bytes().to_vec();
    let gray: Vec<u8> = rgb.iter().step_by(3).copied().collect();
    let content = |format| Content::Pixels {
        width,
        height,
        format,
    };
    let images = [
        (rgb, content(PixelFormat::Rgb8)),
        (gray, content(PixelFormat::Gray8)),
    ];
    Arc::new((40, move |i: usize, s: &mut Sample| {
        let (bytes, content) = &images[i % 2];
        s.bytes.clear();
        s.bytes.extend_from_slice(bytes);
        s.content = *content;
        s.labels.clear();
        s.labels.push(i as f32);
        s.id = i as u64;
        Ok::<(), DataError>(())
    }))
}

/// Reads every sample of `data` into one warm sample (`check`ing each),
/// then five times more, and returns the allocations of those five passes.
fn steady_reads(data: &dyn Dataset, check: impl Fn(usize, &Sample)) -> usize {
    let mut sample = Sample::default();
    for i in 0..data.len() {
        data.read(i, &mut sample).unwrap();
        check(i, &sample);
    }
    process_allocations(|| {
        for _ in 0..5 {
            for i in 0..data.len() {
                data.read(i, &mut sample).unwrap();
            }
        }
    })
}

/// MindRecord rows read into a warm sample allocate nothing per sample,
/// whatever the image and label columns: an int32 array image (decompressed
/// into pixels) and a label from the row's MessagePack map (before: two per
/// read, the raw map's buffer and a copy of the image's field); raw gray
/// pixels whose shape is an int32 array column or two scalar columns
/// (before: the shape's vectors, three per read); array labels of each
/// numeric kind (before: two to three vectors per label column). Called
/// from the one test of this binary.
fn mindrecord_reads_allocate_nothing_per_sample() {
    use tensorprep::train::data::mindrecord::{MindRecord, Options};
    let pixels = tensorprep_tests::fixture("mindrecord/pixels/pixels.mindrecord");
    let columns = tensorprep_tests::fixture("mindrecord/columns/columns.mindrecord0");
    let gray = || Options::default().image("gray");
    // The compressed int64, float32 and float64 array columns `wide`,
    // `boxes` and `mean` (1 to 12 values a row), and a float32 scalar.
    let arrays = ["wide", "boxes", "mean", "score"];
    let cases = [
        (
            "an int32 array image",
            &pixels,
            Options::default().image("image"),
            1..=1,
        ),
        (
            "a shape array column",
            &pixels,
            gray().shape(["shape"]),
            1..=1,
        ),
        (
            "shape scalar columns",
            &pixels,
            gray().shape(["height", "width"]),
            1..=1,
        ),
        (
            "array labels",
            &columns,
            Options::default().labels(arrays),
            5..=usize::MAX,
        ),
    ];
    for (what, path, options, labels) in cases {
        let data = MindRecord::open_with(path, &options).unwrap();
        let extra = steady_reads(&data, |i, sample| {
            assert!(
                labels.contains(&sample.labels.len()),
                "{what}: row {i}: {} labels",
                sample.labels.len()
            );
        });
        assert_eq!(
            extra,
            0,
            "{what}: {} MindRecord reads: {extra} allocations",
            5 * data.len()
        );
    }
}

/// An image folder's files read into a warm sample allocate nothing: one
/// read of the length `fstat` gives into the sample's buffer (before:
/// `read_to_end`'s growing buffer, and ten reads of a 700 KB photo).
fn folder_reads_allocate_nothing_per_sample() {
    use tensorprep::train::data::folder::FolderDataset;
    let data = FolderDataset::open(tensorprep_tests::fixture("records/folder")).unwrap();
    let extra = steady_reads(&data, |i, sample| {
        let (path, label) = &data.files()[i];
        assert_eq!(sample.bytes, std::fs::read(path).unwrap(), "{i}");
        assert_eq!(sample.labels, [*label as f32]);
    });
    assert_eq!(
        extra,
        0,
        "{} folder reads: {extra} allocations",
        5 * data.len()
    );
}

/// Two more epochs (40 more batches, 80 more samples) cost the decoder's
/// allocations for 80 samples plus each epoch's order, nothing per batch;
/// pixel samples (no decoder) nothing but the orders.
#[test]
fn batches_allocate_nothing_beyond_the_decoder_in_steady_state() {
    mindrecord_reads_allocate_nothing_per_sample();
    folder_reads_allocate_nothing_per_sample();
    let pixels = pixel_dataset();
    let extra = extra_epoch_allocations(|epochs| run(epochs, Arc::clone(&pixels)), 2, 4);
    assert!(
        (0..=6).contains(&extra),
        "2 more epochs of pixel samples: {extra} more allocations (40 batches)"
    );
    stream_reads_allocate_nothing_per_sample();
    let photo = read("sample.jpg");
    let photos = || tensorprep_tests::photo_dataset(vec![photo.clone()], 40);
    let more = extra_epoch_allocations(|epochs| run(epochs, photos()), 2, 4);
    let decoding = decoding_allocations(std::iter::repeat_n(photo.as_slice(), 80));
    let extra = more - decoding as i64;
    // Each epoch's order: the permutation, this shard's indices and their
    // shared handle (3 per epoch).
    assert!(
        (0..=6).contains(&extra),
        "2 more epochs: {more} allocations, {decoding} of them the decoder's: {extra} more (40 batches)"
    );
    built_in_datasets_allocate_nothing_per_sample();
}

/// `data`'s samples in turn, 40 of them (the run's count).
fn forty(data: impl Dataset + 'static) -> Arc<dyn Dataset> {
    let n = data.len();
    Arc::new((40, move |i: usize, s: &mut Sample| data.read(i % n, s)))
}

/// The built-in datasets read nothing into new memory per sample: CIFAR and
/// MNIST (pixels) cost each epoch's order only, CelebA (JPEG files) the
/// decoder's allocations too. Called from the one test (the count is
/// process-wide).
fn built_in_datasets_allocate_nothing_per_sample() {
    use tensorprep::train::data::celeba::{CelebA, CelebAOptions, Split as CelebASplit};
    use tensorprep::train::data::cifar::{Cifar10, Split};
    use tensorprep::train::data::mnist::{Mnist, Variant};
    let fixture = tensorprep_tests::fixture;
    let pixel_sets = [
        (
            "CIFAR-10",
            forty(Cifar10::open(fixture("cifar"), Split::Train).unwrap()),
        ),
        (
            "MNIST",
            forty(Mnist::open(fixture("mnist"), Variant::Mnist, Split::Train).unwrap()),
        ),
    ];
    for (name, data) in pixel_sets {
        let extra = extra_epoch_allocations(|epochs| run(epochs, Arc::clone(&data)), 2, 4);
        assert!(
            (0..=6).contains(&extra),
            "{name}: 2 more epochs, {extra} more allocations (40 batches)"
        );
    }
    let celeba = CelebA::open(
        fixture("celeba/root"),
        &CelebAOptions::new(CelebASplit::All),
    )
    .unwrap();
    let files: Vec<Vec<u8>> = (0..40)
        .map(|i| {
            let mut s = Sample::default();
            celeba.read(i % celeba.len(), &mut s).unwrap();
            s.bytes
        })
        .collect();
    // Reading the 80 files themselves, into one reused sample (through
    // folder::read_whole, shared with ImageFolder): measured rather than
    // assumed (none since it reads into the sample's buffer, which
    // folder_reads_allocate_nothing_per_sample asserts).
    let mut s = Sample::default();
    celeba.read(0, &mut s).unwrap();
    let reading = process_allocations(|| {
        for i in 0..80 {
            celeba.read(i % celeba.len(), &mut s).unwrap();
        }
    });
    let data = forty(celeba);
    let extra = extra_epoch_allocations(|epochs| run(epochs, Arc::clone(&data)), 2, 4);
    let decoding = decoding_allocations(files.iter().chain(&files).map(Vec::as_slice));
    let extra = extra - decoding as i64 - reading as i64;
    assert!(
        (0..=6).contains(&extra),
        "CelebA: 2 more epochs, {extra} more allocations beyond the decoder's {decoding} \
         and the reads' {reading} (40 batches)"
    );
}

/// The pixel samples as a stream through a shuffle buffer of 8
/// (`IterableDataset`): each epoch opens the stream and makes its cursor
/// (the stream, its buffer's and parked samples' lists), the samples'
/// buffers recycled, nothing per sample. Called from the one test.
fn stream_reads_allocate_nothing_per_sample() {
    use tensorprep::train::data::{Iterable, IterableDataset, SampleStream, StreamOptions};
    struct Pixels(Arc<dyn Dataset>);
    impl Iterable for Pixels {
        fn open(&self, _epoch: u32) -> Result<Box<dyn SampleStream>, DataError> {
            let (data, mut k) = (Arc::clone(&self.0), 0);
            Ok(Box::new(move |s: &mut Sample| {
                if k == data.len() {
                    return Ok(false);
                }
                data.read(k, s)?;
                k += 1;
                Ok(true)
            }))
        }
        fn describe(&self) -> String {
            "pixels".into()
        }
        fn fingerprint(&self) -> u64 {
            0
        }
    }
    let options = StreamOptions::new(Some(40)).buffer(8);
    let stream: Arc<dyn Dataset> =
        Arc::new(IterableDataset::new(Arc::new(Pixels(pixel_dataset())), options).unwrap());
    // A first run grows the dataset's recycled samples; then 4 more
    // epochs (160 more samples) cost each epoch's order, stream and cursor
    // lists, and a sample's buffers where the read threads' timing first
    // holds more samples at once: a few per epoch, never one per sample.
    run(2, Arc::clone(&stream));
    let extra = extra_epoch_allocations(|epochs| run(epochs, Arc::clone(&stream)), 2, 6);
    assert!(
        extra <= 40,
        "a stream: 4 more epochs, {extra} more allocations (80 batches)"
    );
}
