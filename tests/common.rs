//! Helpers shared by the integration tests: fixture loading and difference statistics.
//!
//! The fixtures in `fixtures/` are made by `fixtures/make_fixtures.py` from real
//! photographs with Pillow, numpy and OpenCV; `fixtures/refs.txt` lists them.

use std::fs;
use std::path::PathBuf;

use tensorprep::{Image, PixelFormat};

/// Path of a fixture file.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Bytes of a fixture file.
pub fn read(name: &str) -> Vec<u8> {
    fs::read(fixture(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// A raw little-endian float32 fixture.
pub fn read_f32_le(name: &str) -> Vec<f32> {
    f32s_le(&read(name))
}

fn f32s_le(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The lines of `refs.txt` whose first word is `kind`, split into words.
pub fn refs(kind: &str) -> Vec<Vec<String>> {
    refs_in("refs.txt", kind)
}

/// The lines of kind `kind` of the manifest `file` (a path under the fixtures).
pub fn refs_in(file: &str, kind: &str) -> Vec<Vec<String>> {
    let text = String::from_utf8(read(file)).expect("manifest is UTF-8");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|w| w.first().map(String::as_str) == Some(kind))
        .collect()
}

/// Packed RGB bytes as RGB565 (each channel truncated to its top bits, as a
/// camera's encoder does), each 16-bit pixel little-endian.
pub fn rgb565_le(rgb: &[u8]) -> Vec<u8> {
    rgb.chunks_exact(3)
        .flat_map(|p| {
            let v =
                (u16::from(p[0]) >> 3) << 11 | (u16::from(p[1]) >> 2) << 5 | u16::from(p[2]) >> 3;
            v.to_le_bytes()
        })
        .collect()
}

/// The bytes with each pair swapped: YUYV <-> UYVY, RGB565 LE <-> BE.
pub fn swap_byte_pairs(bytes: &[u8]) -> Vec<u8> {
    bytes.chunks_exact(2).flat_map(|p| [p[1], p[0]]).collect()
}

/// An 8-bit gray, RGB or RGBA PNG fixture as an [`Image`].
pub fn read_png(name: &str) -> Image {
    let decoder = png::Decoder::new(std::io::Cursor::new(read(name)));
    let mut reader = decoder.read_info().expect("valid PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("PNG size fits")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    buf.truncate(info.buffer_size());
    let format = match (info.color_type, info.bit_depth) {
        (png::ColorType::Grayscale, png::BitDepth::Eight) => PixelFormat::Gray8,
        (png::ColorType::Rgb, png::BitDepth::Eight) => PixelFormat::Rgb8,
        (png::ColorType::Rgba, png::BitDepth::Eight) => PixelFormat::Rgba8,
        other => panic!("{name}: unexpected PNG type {other:?}"),
    };
    Image::from_vec(format, info.width, info.height, buf).expect("PNG buffer matches its size")
}

/// `len` samples cycling through the encoded `photos` (sample `i` is
/// `photos[i % photos.len()]`), each labelled and numbered `i`: the
/// training loader's tests' dataset in memory.
#[cfg(feature = "train")]
pub fn photo_dataset(
    photos: Vec<Vec<u8>>,
    len: usize,
) -> std::sync::Arc<dyn tensorprep::train::data::Dataset> {
    use tensorprep::train::data::{DataError, Sample};
    std::sync::Arc::new((len, move |i: usize, s: &mut Sample| {
        s.bytes.clear();
        s.bytes.extend_from_slice(&photos[i % photos.len()]);
        s.labels.clear();
        s.labels.push(i as f32);
        s.id = i as u64;
        Ok::<(), DataError>(())
    }))
}

/// The `ssd` detection recipe zooming out at most 1.5 times (to keep the
/// batches small), with 8-bit HWC output: the detection loader tests' plan.
#[cfg(feature = "train")]
pub fn small_ssd_plan() -> std::sync::Arc<tensorprep::train::TrainPlan> {
    use tensorprep::train::{Augment, TrainPipeline};
    let mut p = TrainPipeline::preset("detection-ssd").expect("a preset");
    for a in &mut p.augments {
        if let Augment::RandomZoomOut(z) = a {
            z.side_range = (1.0, 1.5);
        }
    }
    p.finish = tensorprep::pipeline::Op::RGB_U8_HWC;
    std::sync::Arc::new(p.compile().expect("the ssd recipe compiles"))
}

/// `shards` TFRecord files, `part-{s}.tfrecord`, of `records` examples
/// each, written into a fresh scratch folder named `name` and the process
/// id: example `n` (counted across the shards) holds `image(n)` under
/// `image/encoded` and is labelled `n`. The remote-dataset tests serve them.
#[cfg(feature = "train")]
pub fn tfrecord_shards(
    name: &str,
    shards: usize,
    records: usize,
    image: impl Fn(usize) -> Vec<u8>,
) -> PathBuf {
    use tensorprep::train::data::tfrecord::{Feature, TfRecordWriter, encode_example};
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let mut example = Vec::new();
    for s in 0..shards {
        let mut w = TfRecordWriter::new(Vec::new());
        for i in 0..records {
            let n = s * records + i;
            encode_example(
                &[
                    ("image/encoded", Feature::Bytes(&[&image(n)])),
                    ("image/class/label", Feature::Int64(&[n as i64])),
                ],
                &mut example,
            );
            w.write_record(&example).unwrap();
        }
        fs::write(dir.join(format!("part-{s}.tfrecord")), w.into_inner()).unwrap();
    }
    dir
}

/// Every sample of `data` in index order: its bytes, labels and id.
#[cfg(feature = "train")]
pub fn read_all(data: &dyn tensorprep::train::data::Dataset) -> Vec<(Vec<u8>, Vec<f32>, u64)> {
    (0..data.len())
        .map(|i| {
            let mut s = tensorprep::train::data::Sample::default();
            data.read(i, &mut s).expect("a sample");
            (s.bytes, s.labels, s.id)
        })
        .collect()
}

/// One epoch of `data` through ImageNet's training transform at 24 x 24
/// (seed 7, batches of 2, `workers` decode threads, this `shard`): each
/// batch's indices and tensor bits. The remote-dataset tests compare a
/// dataset's batches from disk and from a server with it.
#[cfg(feature = "train")]
pub fn small_batches(
    data: std::sync::Arc<dyn tensorprep::train::data::Dataset>,
    workers: usize,
    shard: tensorprep::train::Shard,
) -> Vec<(Vec<u64>, Vec<u32>)> {
    use tensorprep::train::{Augment, Loader, LoaderConfig, RandomResizedCrop, TrainPipeline};
    let mut p = TrainPipeline::imagenet_train();
    p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(24, 24));
    let plan = std::sync::Arc::new(p.compile().expect("the pipeline compiles"));
    let mut config = LoaderConfig::new(2, workers, 7);
    config.epochs = Some(1);
    config.shard = shard;
    Loader::new(data, plan, config)
        .expect("a loader")
        .map(|b| {
            let b = b.expect("a batch");
            let tensorprep::Tensor::F32(t) = b.tensor() else {
                unreachable!("a float plan")
            };
            (
                b.indices().to_vec(),
                t.iter().map(|v| v.to_bits()).collect(),
            )
        })
        .collect()
}

/// A little-endian float32 `.npy` fixture: shape and values.
pub fn read_npy_f32(name: &str) -> (Vec<usize>, Vec<f32>) {
    let bytes = read(name);
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{name} is not .npy");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).expect("ASCII header");
    assert!(header.contains("'descr': '<f4'"), "{name}: {header}");
    assert!(
        header.contains("'fortran_order': False"),
        "{name}: {header}"
    );
    let shape_text = header
        .split('(')
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("shape");
    let shape: Vec<usize> = shape_text
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().expect("shape number"))
        .collect();
    let data = f32s_le(&bytes[10 + header_len..]);
    assert_eq!(
        data.len(),
        shape.iter().product::<usize>(),
        "{name}: data length"
    );
    (shape, data)
}

/// CRC-32 (IEEE), bit by bit: an independent check of the formats that use it
/// (graph files, PNG chunks).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Maximum and mean absolute difference between two equally long sequences.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Diff {
    /// Largest absolute difference.
    pub max: f64,
    /// Mean absolute difference.
    pub mean: f64,
    /// Fraction of elements that differ at all.
    pub differing: f64,
}

impl Diff {
    /// Statistics of `|a - b|` over all elements.
    pub fn of<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> Diff {
        assert_eq!(a.len(), b.len(), "compared buffers differ in length");
        assert!(!a.is_empty(), "nothing to compare");
        let (mut max, mut sum, mut n) = (0f64, 0f64, 0usize);
        for (&x, &y) in a.iter().zip(b) {
            let d = (x.into() - y.into()).abs();
            max = max.max(d);
            sum += d;
            n += usize::from(d != 0.0);
        }
        Diff {
            max,
            mean: sum / a.len() as f64,
            differing: n as f64 / a.len() as f64,
        }
    }
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "max {:>5.2}  mean {:.4}  differing {:>5.1}%",
            self.max,
            self.mean,
            100.0 * self.differing
        )
    }
}

/// A deterministic xorshift stream, so that randomized tests reproduce.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next 32 bits (the high half).
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// A value below `n` drawn from 32 bits (0 when `n` is 0).
    pub fn below_u32(&mut self, n: u32) -> u32 {
        self.next_u32() % n.max(1)
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below_u32(items.len() as u32) as usize]
    }
}

/// A global allocator that counts the allocations (and reallocations) made
/// on each thread, so that tests running in parallel do not disturb each
/// other. A test binary installs it with
/// `#[global_allocator] static A: CountingAllocator = CountingAllocator;`
/// and measures with [`allocations`].
pub struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Every thread's allocations: for code that allocates on threads of its
/// own (the training loader), measured in a test binary of one test.
static ALL_ALLOCATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn counted() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    ALL_ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Allocations made on every thread while `f` runs (with
/// [`CountingAllocator`] installed; only meaningful when nothing else runs:
/// a test binary holding one test).
pub fn process_allocations(f: impl FnOnce()) -> usize {
    let before = ALL_ALLOCATIONS.load(std::sync::atomic::Ordering::SeqCst);
    f();
    ALL_ALLOCATIONS.load(std::sync::atomic::Ordering::SeqCst) - before
}

/// What `long - short` more epochs of a loader cost in allocations:
/// `run(long)`'s least of three runs minus `run(short)`'s most of three.
///
/// A loader thread makes its own scratch (its labels, the plan's buffers)
/// when it first runs, which on a loaded machine can come after a short
/// run has already ended: that run then lacks allocations the longer run
/// makes, a warm-up wrongly counted as the extra epochs' cost (seen in CI
/// as 8 for a bound of 6). The most of three short runs is one in which
/// every thread ran; the least of three long runs is free of such noise
/// too. A per-sample or per-batch allocation still shows in full, in every
/// run.
pub fn extra_epoch_allocations(mut run: impl FnMut(u32) -> usize, short: u32, long: u32) -> i64 {
    let most_short = (0..3).map(|_| run(short)).max().unwrap_or(0);
    let least_long = (0..3).map(|_| run(long)).min().unwrap_or(0);
    least_long as i64 - most_short as i64
}

// SAFETY: forwards to the system allocator unchanged; it only counts calls.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        counted();
        // SAFETY: same contract as our caller's.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        counted();
        // SAFETY: same contract as our caller's.
        unsafe { std::alloc::System.realloc(ptr, layout, size) }
    }
}

/// A global allocator that records the largest single allocation (and
/// reallocation), to show limits act before allocating. A test binary installs
/// it with `#[global_allocator] static A: LargestAllocator = LargestAllocator;`
/// and reads it with [`reset_largest`] and [`largest_allocation`].
pub struct LargestAllocator;

static LARGEST: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn record(size: usize) {
    LARGEST.fetch_max(size, std::sync::atomic::Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator unchanged; it only records sizes.
unsafe impl std::alloc::GlobalAlloc for LargestAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: same contract as our caller's.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: same contract as our caller's.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        record(size);
        // SAFETY: same contract as our caller's.
        unsafe { std::alloc::System.realloc(ptr, layout, size) }
    }
}

/// Starts a new measurement of [`largest_allocation`].
pub fn reset_largest() {
    LARGEST.store(0, std::sync::atomic::Ordering::Relaxed);
}

/// The largest allocation since [`reset_largest`] (with [`LargestAllocator`] installed).
pub fn largest_allocation() -> usize {
    LARGEST.load(std::sync::atomic::Ordering::Relaxed)
}

/// Allocations `f` makes on this thread (with [`CountingAllocator`] installed).
pub fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(std::cell::Cell::get);
    f();
    ALLOCATIONS.with(std::cell::Cell::get) - before
}

/// The allocations that decoding `files` in turn makes in steady state (the
/// decoder's own: zune-jpeg's and zune-png's buffers), with one reused
/// output image: what a plan running the same files may not exceed (with
/// [`CountingAllocator`] installed).
pub fn decoding_allocations<'a>(files: impl Iterator<Item = &'a [u8]> + Clone) -> usize {
    use tensorprep::ImageViewMut;
    use tensorprep::decode::ImageDecoder;
    use tensorprep::jpeg::DecodeOptions;
    let mut decoder = ImageDecoder::new(DecodeOptions::default());
    let mut image = Vec::new();
    let mut decode_all = || {
        for p in files.clone() {
            let info = decoder.read_info(p).unwrap();
            let len = (info.width * info.height * 3) as usize;
            if image.len() < len {
                image.resize(len, 0);
            }
            let mut view = ImageViewMut::new(
                PixelFormat::Rgb8,
                info.width,
                info.height,
                &mut image[..len],
            )
            .unwrap();
            decoder.decode_into(p, &mut view).unwrap();
        }
    };
    decode_all(); // warm-up, as for the plan
    allocations(decode_all)
}

/// The graph issue 14 was filed with: a resize to `side` x `side`, 26
/// horizontal flips, a 224 centre crop and the ImageNet finish, after the
/// eval preset's decode when `decode`. Each buffer passes the per-buffer
/// limit; only a total budget (or the system) stops it.
pub fn flip_bomb(
    decode: bool,
    side: u32,
    resample: tensorprep::resize::Resample,
) -> tensorprep::pipeline::Pipeline {
    use tensorprep::geometry::Flip;
    use tensorprep::pipeline::{CenterCrop, CropRounding, Op, Pipeline, Resize};
    use tensorprep::size::SizeRule;
    let eval = Pipeline::imagenet_eval();
    let mut ops: Vec<Op> = eval.ops()[..usize::from(decode)].to_vec();
    ops.push(Op::Resize(Resize {
        size: SizeRule::Exact {
            width: side,
            height: side,
        },
        resample,
    }));
    ops.extend(std::iter::repeat_n(Op::Flip(Flip::Horizontal), 26));
    ops.push(Op::CenterCrop(CenterCrop {
        width: 224,
        height: 224,
        rounding: CropRounding::HalfEven,
    }));
    ops.extend_from_slice(&eval.ops()[3..]);
    Pipeline::from_ops(&ops).unwrap()
}

/// `records/folder.lst` (written by MXNet's im2rec): (index, label, path).
pub fn folder_list() -> Vec<(u64, f32, String)> {
    fs::read_to_string(fixture("records/folder.lst"))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].to_owned(),
            )
        })
        .collect()
}

/// torchvision's eval preset (`Pipeline::imagenet_eval`) with its resize
/// reproducing `resample` instead of Pillow's bilinear.
pub fn imagenet_eval_with(
    resample: tensorprep::resize::Resample,
) -> tensorprep::pipeline::Pipeline {
    use tensorprep::pipeline::{Op, Pipeline, Resize};
    let ops: Vec<Op> = Pipeline::imagenet_eval()
        .ops()
        .iter()
        .map(|op| match op {
            Op::Resize(r) => Op::Resize(Resize { resample, ..*r }),
            other => *other,
        })
        .collect();
    Pipeline::from_ops(&ops).expect("the preset's ops make a pipeline")
}

/// The FNV-1a 64 of `bytes` as 16 hex digits (the fixture scripts' hash).
pub fn fnv_hex(bytes: &[u8]) -> String {
    let mut h = tensorprep::Fnv1a64::new();
    h.update(bytes);
    format!("{:016x}", h.finish())
}

/// float32 rows as the fixture scripts write them: each value's bits as 8
/// hex digits, `,` within a row, `;` between rows, `-` for none.
pub fn f32_bits_hex<const N: usize>(rows: &[[f32; N]]) -> String {
    if rows.is_empty() {
        return "-".into();
    }
    rows.iter()
        .map(|r| r.map(|v| format!("{:08x}", v.to_bits())).join(","))
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(feature = "remote")]
pub mod http;
