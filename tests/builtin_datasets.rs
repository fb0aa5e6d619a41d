//! Pixel samples through the training loader, and the built-in datasets
//! (CIFAR-10/100, MNIST and its idx kin) read as torchvision 0.29.2 reads
//! them (fixtures made by `fixtures/make_builtin_fixtures.py`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tensorprep::PixelFormat;
use tensorprep::train::data::cifar::{Cifar10, Cifar100, Cifar100Label, Split};
use tensorprep::train::data::folder::FolderDataset;
use tensorprep::train::data::mnist::{Mnist, Variant};
use tensorprep::train::data::{Content, DataError, Dataset, Sample};
use tensorprep::train::{Loader, LoaderConfig, TrainPipeline};
use tensorprep_tests::{crc32, fixture, read_png};

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tp-builtin-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every batch (tensor and labels) the loader gives for `data` in one epoch.
fn batches(
    data: Arc<dyn Dataset>,
    pipeline: &TrainPipeline,
    workers: usize,
) -> Vec<(Vec<f32>, Vec<f32>)> {
    let plan = Arc::new(pipeline.compile().unwrap());
    let mut config = LoaderConfig::new(2, workers, 11);
    config.epochs = Some(1);
    Loader::new(data, plan, config)
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            let tensor = match b.tensor() {
                tensorprep::Tensor::F32(v) => v.clone(),
                other => panic!("a float32 pipeline gave {other:?}"),
            };
            (tensor, b.labels().to_vec())
        })
        .collect()
}

/// A folder of PNGs in gray, RGB and RGBA, and the same images decoded
/// (by the `png` crate) into pixel samples in their own formats.
fn folder_and_pixels(dir: &Path) -> (Arc<dyn Dataset>, Arc<dyn Dataset>) {
    let files = [
        ("a", "formats/gray8.png"),
        ("a", "formats/rgb8.png"),
        ("b", "records/folder/dog/dog1.png"),
        ("b", "formats/rgba8.png"),
        ("b", "records/folder/cat/cat1.png"),
    ];
    for (k, (class, name)) in files.iter().enumerate() {
        std::fs::create_dir_all(dir.join(class)).unwrap();
        std::fs::copy(fixture(name), dir.join(class).join(format!("{k}.png"))).unwrap();
    }
    let folder = FolderDataset::open(dir).unwrap();
    let mut pixels = Vec::new();
    for (path, label) in folder.files() {
        let k: usize = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
        let image = read_png(files[k].1);
        let view = image.view();
        let content = Content::Pixels {
            width: view.width(),
            height: view.height(),
            format: view.format(),
        };
        pixels.push((image.as_bytes().to_vec(), content, *label as f32));
    }
    let pixels = (pixels.len(), move |i: usize, s: &mut Sample| {
        let (bytes, content, label) = &pixels[i];
        s.bytes.clear();
        s.bytes.extend_from_slice(bytes);
        s.labels.clear();
        s.labels.push(*label);
        s.content = *content;
        s.id = i as u64;
        Ok::<(), DataError>(())
    });
    (Arc::new(folder), Arc::new(pixels))
}

#[test]
fn pixel_samples_give_the_folder_s_batches_for_any_worker_count() {
    let dir = scratch("pixels");
    let (folder, pixels) = folder_and_pixels(&dir);
    // Plan ops only (a random crop and flip), and with adjustments and
    // warps drawn between them (TrivialAugment).
    for preset in ["imagenet-train", "imagenet-trivialaugment"] {
        let pipeline = TrainPipeline::preset(preset).unwrap();
        let want = batches(Arc::clone(&folder), &pipeline, 1);
        assert_eq!(want.len(), 3, "{preset}");
        for workers in [1, 3] {
            let got = batches(Arc::clone(&pixels), &pipeline, workers);
            assert!(got == want, "{preset}: {workers} workers");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// torchvision's lines for `dataset` and `split` in `file`: (label, crc32
/// of its image array, the rest of the line).
fn reference(file: &str, dataset: &str, split: &str) -> Vec<(f32, u32, Vec<f32>)> {
    let text = std::fs::read_to_string(fixture(file)).unwrap();
    let rows: Vec<_> = text
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(|f| f[0] == dataset && f[1] == split)
        .enumerate()
        .map(|(i, f)| {
            assert_eq!(f[2].parse::<usize>().unwrap(), i, "{file}: rows in order");
            let rest = f[5..].iter().map(|x| x.parse().unwrap()).collect();
            (
                f[3].parse().unwrap(),
                u32::from_str_radix(f[4], 16).unwrap(),
                rest,
            )
        })
        .collect();
    assert!(!rows.is_empty(), "{file}: no {dataset} {split}");
    rows
}

/// Every sample of `data`: (labels, crc32 of its pixels, content).
fn samples(data: &dyn Dataset) -> Vec<(Vec<f32>, u32, Content)> {
    let mut sample = Sample::default();
    (0..data.len())
        .map(|i| {
            data.read(i, &mut sample).unwrap();
            assert_eq!(sample.id, i as u64);
            (sample.labels.clone(), crc32(&sample.bytes), sample.content)
        })
        .collect()
}

const SPLITS: [(Split, &str); 2] = [(Split::Train, "train"), (Split::Test, "test")];

#[test]
fn cifar_pixels_and_labels_are_torchvision_s() {
    let rgb32 = Content::Pixels {
        width: 32,
        height: 32,
        format: PixelFormat::Rgb8,
    };
    for (split, name) in SPLITS {
        let want = reference("cifar/torchvision.txt", "cifar10", name);
        let got = samples(&Cifar10::open(fixture("cifar"), split).unwrap());
        assert_eq!(got.len(), want.len(), "cifar10 {name}");
        for (i, ((labels, crc, content), (label, want_crc, _))) in got.iter().zip(&want).enumerate()
        {
            assert_eq!(
                (labels.as_slice(), *crc, *content),
                (&[*label][..], *want_crc, rgb32),
                "cifar10 {name} {i}"
            );
        }
        // The folder itself is a root too (MindSpore's `dataset_dir`).
        let inner = Cifar10::open(fixture("cifar/cifar-10-batches-bin"), split).unwrap();
        assert_eq!(samples(&inner), got);

        let want = reference("cifar/torchvision.txt", "cifar100", name);
        for choice in [
            Cifar100Label::Fine,
            Cifar100Label::Coarse,
            Cifar100Label::Both,
        ] {
            let got = samples(&Cifar100::open(fixture("cifar"), split, choice).unwrap());
            assert_eq!(got.len(), want.len(), "cifar100 {name}");
            for (i, ((labels, crc, content), (fine, want_crc, coarse))) in
                got.iter().zip(&want).enumerate()
            {
                let expected = match choice {
                    Cifar100Label::Fine => vec![*fine],
                    Cifar100Label::Coarse => vec![coarse[0]],
                    _ => vec![coarse[0], *fine],
                };
                assert_eq!(
                    (labels, *crc, *content),
                    (&expected, *want_crc, rgb32),
                    "cifar100 {name} {i} {choice:?}"
                );
            }
        }
    }
    // The default is torchvision's fine label.
    assert_eq!(Cifar100Label::default(), Cifar100Label::Fine);
}

#[test]
fn mnist_family_pixels_and_labels_are_torchvision_s() {
    for (variant, folder) in [
        (Variant::Mnist, "MNIST"),
        (Variant::Fashion, "FashionMNIST"),
        (Variant::Kmnist, "KMNIST"),
    ] {
        for (split, name) in SPLITS {
            let want = reference("mnist/torchvision.txt", folder, name);
            let data = Mnist::open(fixture("mnist"), variant, split).unwrap();
            assert_eq!(data.size(), (28, 28));
            let got = samples(&data);
            assert_eq!(got.len(), want.len(), "{folder} {name}");
            for (i, ((labels, crc, content), (label, want_crc, _))) in
                got.iter().zip(&want).enumerate()
            {
                let gray = Content::Pixels {
                    width: 28,
                    height: 28,
                    format: PixelFormat::Gray8,
                };
                assert_eq!(
                    (labels.as_slice(), *crc, *content),
                    (&[*label][..], *want_crc, gray),
                    "{folder} {name} {i}"
                );
            }
        }
    }
}

#[test]
fn built_in_datasets_load_alike_for_any_worker_count() {
    let pipeline = TrainPipeline::preset("imagenet-trivialaugment").unwrap();
    let mnist: Arc<dyn Dataset> =
        Arc::new(Mnist::open(fixture("mnist"), Variant::Mnist, Split::Train).unwrap());
    let cifar: Arc<dyn Dataset> = Arc::new(Cifar10::open(fixture("cifar"), Split::Train).unwrap());
    for data in [mnist, cifar] {
        let one = batches(Arc::clone(&data), &pipeline, 1);
        assert_eq!(one.iter().map(|b| b.1.len()).sum::<usize>(), data.len());
        assert!(batches(data, &pipeline, 3) == one);
    }
}

/// Writes `bytes` at `dir/name`.
fn put(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// An idx header: the magic and big-endian dimensions.
fn idx(magic: u32, dims: &[u32]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out
}

/// The error's text, which must name the file.
fn refused<T: std::fmt::Debug>(r: Result<T, DataError>, file: &str, what: &str) {
    let e = r.expect_err(what).to_string();
    assert!(e.contains(file) && e.contains(what), "{e}");
}

#[test]
fn crafted_idx_headers_are_refused_at_open() {
    let dir = scratch("idx");
    let (images, labels) = (
        dir.join("train-images-idx3-ubyte"),
        dir.join("train-labels-idx1-ubyte"),
    );
    let open = || Mnist::open(&dir, Variant::Mnist, Split::Train);
    let mut two = idx(0x803, &[2, 3, 4]);
    two.extend(0..24u8);
    let mut labels2 = idx(0x801, &[2]);
    labels2.extend([3, 9]);
    put(&dir, "train-labels-idx1-ubyte", &labels2);
    // Counts past the file, dimensions whose product overflows 32 and 64
    // bits, a zero side, trailing bytes, a wrong magic, a short header.
    for (bytes, what) in [
        (
            idx(0x803, &[u32::MAX, 3, 4]),
            "4294967295 images of 3 x 4 need",
        ),
        (idx(0x803, &[2, u32::MAX, u32::MAX]), "(each side 1 to"),
        (
            idx(0x803, &[2, 1 << 17, 1 << 17]),
            "more than 268435456 bytes each",
        ),
        (idx(0x803, &[2, 0, 4]), "images of 0 x 4"),
        ([two.as_slice(), &[0]].concat(), "the file has 41"),
        (idx(0x801, &[2, 3, 4]), "magic 0x00000801"),
        (idx(0x803, &[2]), "shorter than its 16-byte header"),
    ] {
        put(&dir, "train-images-idx3-ubyte", &bytes);
        refused(open(), "train-images-idx3-ubyte", what);
    }
    put(&dir, "train-images-idx3-ubyte", &two);
    let data = open().unwrap();
    let mut sample = Sample::default();
    data.read(1, &mut sample).unwrap();
    assert_eq!(
        (sample.bytes.clone(), sample.labels.clone()),
        ((12..24).collect::<Vec<u8>>(), vec![9.0])
    );
    // Labels: a count past the file, another count than the images', a label past 9.
    for (bytes, what) in [
        (idx(0x801, &[u32::MAX]), "4294967295 labels need"),
        (
            [idx(0x801, &[1]), vec![0]].concat(),
            "1 labels for the 2 images",
        ),
        (idx(0x803, &[2]), "magic 0x00000803"),
    ] {
        put(&dir, "train-labels-idx1-ubyte", &bytes);
        refused(open(), "train-labels-idx1-ubyte", what);
    }
    put(
        &dir,
        "train-labels-idx1-ubyte",
        &[idx(0x801, &[2]), vec![3, 10]].concat(),
    );
    let data = open().unwrap();
    data.read(0, &mut sample).unwrap();
    refused(
        data.read(1, &mut sample),
        "train-labels-idx1-ubyte",
        "at 9: label 10 of a dataset of 10 classes",
    );
    std::fs::remove_file(&labels).unwrap();
    refused(open(), "train-labels-idx1-ubyte", "");
    std::fs::remove_file(&images).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn broken_cifar_files_are_refused() {
    let dir = scratch("cifar");
    let record = |label: u8| [vec![label], vec![7u8; 3072]].concat();
    for k in 1..=5 {
        put(&dir, &format!("data_batch_{k}.bin"), &record(k));
    }
    assert_eq!(Cifar10::open(&dir, Split::Train).unwrap().len(), 5);
    // A partial record, an empty file, a label past the classes, a missing file.
    put(&dir, "data_batch_3.bin", &record(3)[..3000]);
    refused(
        Cifar10::open(&dir, Split::Train),
        "data_batch_3.bin",
        "3000 bytes is not a whole number of 3073-byte records",
    );
    put(&dir, "data_batch_3.bin", b"");
    refused(
        Cifar10::open(&dir, Split::Train),
        "data_batch_3.bin",
        "0 bytes",
    );
    put(&dir, "data_batch_3.bin", &[record(3), record(10)].concat());
    let data = Cifar10::open(&dir, Split::Train).unwrap();
    assert_eq!(data.len(), 6);
    let mut sample = Sample::default();
    data.read(2, &mut sample).unwrap();
    assert_eq!(sample.labels, [3.0]);
    data.read(4, &mut sample).unwrap();
    assert_eq!(sample.labels, [4.0]);
    refused(
        data.read(3, &mut sample),
        "data_batch_3.bin",
        "at 3073: label 10 of a dataset of 10 classes",
    );
    assert_eq!(
        data.describe(3),
        format!(
            "{}: record 1 at 3073",
            dir.join("data_batch_3.bin").display()
        )
    );
    refused(Cifar10::open(&dir, Split::Test), "test_batch.bin", "");
    put(
        &dir,
        "train.bin",
        &[vec![20u8, 99], vec![0u8; 3072]].concat(),
    );
    let coarse = Cifar100::open(&dir, Split::Train, Cifar100Label::Fine).unwrap();
    refused(
        coarse.read(0, &mut sample),
        "train.bin",
        "at 0: label 20 of a dataset of 20 classes",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One sample of `bytes` holding what `content` says, labelled 0.
fn one(bytes: Vec<u8>, content: Content) -> Arc<dyn Dataset> {
    Arc::new((1, move |_: usize, s: &mut Sample| {
        s.bytes.clone_from(&bytes);
        s.content = content;
        s.labels.clear();
        s.labels.push(0.0);
        Ok::<(), DataError>(())
    }))
}

/// The loader's error for the one sample of `data`.
fn load_error(data: Arc<dyn Dataset>, config: LoaderConfig) -> String {
    let plan = Arc::new(TrainPipeline::imagenet_train().compile().unwrap());
    let mut loader = Loader::new(data, plan, config).unwrap();
    let e = loader
        .next()
        .expect("a batch")
        .expect_err("the sample fails");
    tensorprep::error::report(&e)
}

#[test]
fn pixel_samples_are_checked_like_files() {
    let content = Content::Pixels {
        width: 4,
        height: 3,
        format: PixelFormat::Rgb8,
    };
    let mut config = LoaderConfig::new(1, 1, 0);
    config.epochs = Some(1);
    // The byte length is width x height x bytes per pixel, neither less nor more.
    for len in [35, 37] {
        let e = load_error(one(vec![0; len], content), config.clone());
        assert!(e.contains("sample 0"), "{e}");
    }
    assert!(load_error(one(vec![0; 35], content), config.clone()).contains("35"));
    // The decode budget counts a pixel sample as it counts a decoded file.
    let big = Content::Pixels {
        width: 1000,
        height: 1000,
        format: PixelFormat::Gray8,
    };
    config.decode_budget = 1000 * 1000 * 12 - 1;
    let e = load_error(one(vec![0; 1000 * 1000], big), config.clone());
    assert!(e.contains("sample 0") && e.contains("12000000"), "{e}");
    config.decode_budget = 1000 * 1000 * 12;
    let plan = Arc::new(TrainPipeline::imagenet_train().compile().unwrap());
    let batches = Loader::new(one(vec![0; 1000 * 1000], big), plan, config).unwrap();
    assert_eq!(batches.map(|b| b.unwrap().len()).sum::<usize>(), 1);
}

#[test]
fn autotune_takes_pixel_datasets() {
    use tensorprep::train::{Budget, autotune};

    let data: Arc<dyn Dataset> =
        Arc::new(Mnist::open(fixture("mnist"), Variant::Mnist, Split::Test).unwrap());
    let pipeline = TrainPipeline::preset("imagenet-trivialaugment").unwrap();
    let plan = Arc::new(pipeline.compile().unwrap());
    let tuned = autotune(
        data,
        plan,
        LoaderConfig::new(1, 1, 7),
        Budget::new(2, 256 << 20),
    )
    .unwrap();
    assert!(tuned.config.workers >= 1);
}

/// A copy of `from`'s files in `to` (created), `edit` applied to each
/// file's bytes by name.
fn copy_files(from: &Path, to: &Path, edit: impl Fn(&str, &mut Vec<u8>)) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let mut bytes = std::fs::read(entry.path()).unwrap();
        edit(&name, &mut bytes);
        put(to, &name, &bytes);
    }
}

/// A saved state resumes only on its own dataset: files of one layout but
/// other contents, another variant's folder or another split have other
/// fingerprints; the same files in another folder the same one.
#[test]
fn fingerprints_tell_variants_splits_and_contents_apart() {
    let dir = scratch("fingerprints");
    let raw = fixture("mnist").join("MNIST").join("raw");
    // MNIST's files as Fashion-MNIST's: one layout, one set of bytes.
    copy_files(&raw, &dir.join("FashionMNIST").join("raw"), |_, _| {});
    copy_files(
        &raw,
        &dir.join("moved").join("MNIST").join("raw"),
        |_, _| {},
    );
    // One pixel of the first train image changed (a header alike).
    copy_files(
        &raw,
        &dir.join("edited").join("MNIST").join("raw"),
        |name, b| {
            if name.starts_with("train-images") {
                b[16 + 100] ^= 0x55;
            }
        },
    );
    let print =
        |root: &Path, variant, split| Mnist::open(root, variant, split).unwrap().fingerprint();
    let mnist = print(&fixture("mnist"), Variant::Mnist, Split::Train);
    assert_eq!(
        print(&dir.join("moved"), Variant::Mnist, Split::Train),
        mnist
    );
    let others = [
        print(&dir, Variant::Fashion, Split::Train),
        print(&dir.join("edited"), Variant::Mnist, Split::Train),
        print(&fixture("mnist"), Variant::Mnist, Split::Test),
        print(&fixture("mnist"), Variant::Fashion, Split::Train),
        print(&fixture("mnist"), Variant::Kmnist, Split::Train),
    ];
    for (i, other) in others.iter().enumerate() {
        assert_ne!(*other, mnist, "case {i}");
    }

    let bin = fixture("cifar").join("cifar-10-batches-bin");
    let cifar = Cifar10::open(fixture("cifar"), Split::Train)
        .unwrap()
        .fingerprint();
    copy_files(&bin, &dir.join("cifar"), |name, b| {
        if name == "data_batch_1.bin" {
            b[1] ^= 0x55;
        }
    });
    let edited = Cifar10::open(dir.join("cifar"), Split::Train)
        .unwrap()
        .fingerprint();
    assert_ne!(edited, cifar);
    let test = Cifar10::open(fixture("cifar"), Split::Test)
        .unwrap()
        .fingerprint();
    assert_ne!(test, cifar);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A sample reused from a pixel dataset (CIFAR) for an encoded one (a
/// record, a tar member, a closure's bytes) is an encoded file again: every
/// reader says what its bytes are (preview and autotune reuse one sample
/// across a concat of kinds).
#[test]
fn every_reader_says_what_its_bytes_are_in_a_reused_sample() {
    use tensorprep::train::data::recordio::RecordIoDataset;
    use tensorprep::train::data::tfrecord::{Keys, TfRecordDataset};
    use tensorprep::train::data::webdataset::{WebDataset, WebKeys};

    let cifar = Cifar10::open(fixture("cifar"), Split::Test).unwrap();
    let records = fixture("records");
    let tar = records.join("shard-0.tar");
    let closure = (1usize, |_: usize, s: &mut Sample| {
        s.bytes.clear();
        s.bytes.extend_from_slice(b"an encoded file");
        Ok(())
    });
    let encoded: [(&str, Box<dyn Dataset>); 5] = [
        (
            "tfrecord",
            Box::new(
                TfRecordDataset::open(records.join("folder.tfrecord"), Keys::CONVENTIONAL).unwrap(),
            ),
        ),
        (
            "recordio",
            Box::new(RecordIoDataset::open(records.join("folder.rec")).unwrap()),
        ),
        (
            "webdataset",
            Box::new(WebDataset::open(tar.to_str().unwrap(), WebKeys::CONVENTIONAL).unwrap()),
        ),
        (
            "folder",
            Box::new(FolderDataset::open(records.join("folder")).unwrap()),
        ),
        ("closure", Box::new(closure)),
    ];
    for (name, data) in &encoded {
        let mut sample = Sample::default();
        cifar.read(0, &mut sample).unwrap();
        assert!(matches!(sample.content, Content::Pixels { .. }));
        data.read(0, &mut sample).unwrap();
        assert_eq!(sample.content, Content::Encoded, "{name}");
    }
}
