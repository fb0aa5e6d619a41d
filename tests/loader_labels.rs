//! Several labels per sample through the loader's batches: CelebA's targets
//! (checked against torchvision 0.29.2's parse, `fixtures/celeba/`), a
//! RecordIO of three labels per record, a sample with another count refused
//! by name (or skipped, the rest of its batch intact), the same labels for
//! any worker count and after a resume, and the labels' memory counted.

use std::path::PathBuf;
use std::sync::Arc;

use tensorprep::Tensor;
use tensorprep::pipeline::{Op, Resize};
use tensorprep::resize::{Filter, Resample};
use tensorprep::size::SizeRule;
use tensorprep::train::data::Dataset;
use tensorprep::train::data::celeba::{CelebA, CelebAOptions, Split, Target};
use tensorprep::train::data::recordio::{RecordIoDataset, RecordIoWriter, pack_image};
use tensorprep::train::{
    Augment, BatchMut, LoadError, Loader, LoaderConfig, OnError, Order, PerBatch,
    RandomResizedCrop, TrainPipeline, TrainPlan,
};
use tensorprep_tests::{fixture, folder_list, read};

/// Output height and width of the plans.
const H: usize = 12;
const W: usize = 16;

/// torchvision's train preset with a fixed resize (a random flip after
/// it), or with a random resized crop (a draw per sample).
fn plan(random_crop: bool) -> Arc<TrainPlan> {
    let mut p = TrainPipeline::imagenet_train();
    p.augments[0] = if random_crop {
        Augment::RandomResizedCrop(RandomResizedCrop::new(W as u32, H as u32))
    } else {
        Augment::Op(Op::Resize(Resize {
            size: SizeRule::Exact {
                width: W as u32,
                height: H as u32,
            },
            resample: Resample::Pillow(Filter::Bilinear),
        }))
    };
    Arc::new(p.compile().unwrap())
}

/// One batch as compared: tensor, labels, label width, indices, skipped.
#[derive(Debug, PartialEq)]
struct Got {
    tensor: Vec<f32>,
    labels: Vec<f32>,
    width: usize,
    indices: Vec<u64>,
    skipped: usize,
}

/// The rest of the loader's epoch, every batch asserted to be well formed.
fn rest(loader: &mut Loader) -> Vec<Got> {
    loader
        .map(|b| {
            let b = b.unwrap();
            let Tensor::F32(tensor) = b.tensor() else {
                panic!("a float32 plan")
            };
            assert_eq!(b.labels().len(), b.len() * b.label_width());
            assert_eq!(b.indices().len(), b.len());
            Got {
                tensor: tensor.clone(),
                labels: b.labels().to_vec(),
                width: b.label_width(),
                indices: b.indices().to_vec(),
                skipped: b.skipped(),
            }
        })
        .collect()
}

fn config(batch: usize, workers: usize, order: Order) -> LoaderConfig {
    let mut c = LoaderConfig::new(batch, workers, 5);
    c.order = order;
    c.epochs = Some(2);
    c
}

fn epoch(data: Arc<dyn Dataset>, plan: Arc<TrainPlan>, c: LoaderConfig) -> Vec<Got> {
    rest(&mut Loader::new(data, plan, c).unwrap())
}

/// Each batch's rows equal `want[index]` of their samples.
fn assert_rows(batches: &[Got], want: &[Vec<f32>], what: &str) {
    let mut seen = 0;
    for b in batches {
        assert_eq!(b.width, want[0].len(), "{what}: label width");
        for (row, index) in b.labels.chunks_exact(b.width.max(1)).zip(&b.indices) {
            assert_eq!(
                row,
                want[*index as usize].as_slice(),
                "{what}: sample {index}"
            );
        }
        seen += b.indices.len();
    }
    assert_eq!(seen, want.len(), "{what}: every sample once");
}

/// torchvision's parse: `split/targets` -> each sample's values, in order.
fn torchvision() -> Vec<(String, Vec<Vec<f32>>)> {
    let text = std::fs::read_to_string(fixture("celeba/torchvision.txt")).unwrap();
    let mut out: Vec<(String, Vec<Vec<f32>>)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split(' ');
        let key = f.next().unwrap().to_string();
        let _name = f.next().unwrap();
        let values = f.map(|v| v.parse::<i64>().unwrap() as f32).collect();
        match out.last_mut() {
            Some((k, rows)) if *k == key => rows.push(values),
            _ => out.push((key, vec![values])),
        }
    }
    assert_eq!(out.len(), 20, "4 splits times 5 target types");
    out
}

fn celeba(key: &str) -> Arc<dyn Dataset> {
    let (split, targets) = key.split_once('/').unwrap();
    let targets: Vec<Target> = targets
        .split(',')
        .map(|t| Target::from_name(t).unwrap())
        .collect();
    let options = CelebAOptions::new(Split::from_name(split).unwrap()).targets(&targets);
    Arc::new(CelebA::open(fixture("celeba/root"), &options).unwrap())
}

/// Every split and target type (attributes: 40, identity: 1, box: 4,
/// landmarks: 10, identity + box + attributes: 45): in the dataset's order
/// the batches' labels are torchvision's targets, row for row; shuffled,
/// each row is its sample's.
#[test]
fn celeba_targets_reach_the_batches_as_torchvision_parses_them() {
    let plan = plan(false);
    for (key, want) in torchvision() {
        let width = want[0].len();
        let data = celeba(&key);
        let ordered = epoch(data.clone(), plan.clone(), config(2, 2, Order::Sequential));
        let labels: Vec<f32> = ordered.iter().flat_map(|b| b.labels.clone()).collect();
        assert_eq!(labels, want.concat(), "{key}");
        assert!(ordered.iter().all(|b| b.width == width), "{key}");
        assert_rows(&ordered, &want, &key);
        let shuffled = epoch(data, plan.clone(), config(2, 2, Order::Shuffled));
        assert_rows(&shuffled, &want, &key);
        assert_ne!(
            shuffled
                .iter()
                .flat_map(|b| b.indices.clone())
                .collect::<Vec<_>>(),
            (0..want.len() as u64).collect::<Vec<_>>(),
            "{key}: shuffled"
        );
    }
}

/// A scratch file for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tp-labels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The labels of the RecordIO test files: three per image, not all
/// integers.
fn three(i: usize, class: f32) -> Vec<f32> {
    vec![class, 10.0 + i as f32, 0.25 * i as f32 - 1.0]
}

/// The six images of `records/folder` packed into a RecordIO file (by our
/// writer, byte-identical to MXNet's `recordio.pack`: see `records.rs`),
/// record `i` labelled `labels(i, class)`.
fn recordio(name: &str, labels: impl Fn(usize, f32) -> Vec<f32>) -> (Arc<dyn Dataset>, PathBuf) {
    let path = scratch(name);
    let mut rec = RecordIoWriter::new(Vec::new());
    let mut record = Vec::new();
    for (i, (index, class, file)) in folder_list().into_iter().enumerate() {
        let image = read(&format!("records/folder/{file}"));
        pack_image(&labels(i, class), index, &image, &mut record);
        rec.write_record(&record).unwrap();
    }
    std::fs::write(&path, rec.into_inner()).unwrap();
    (Arc::new(RecordIoDataset::open(&path).unwrap()), path)
}

fn want_three() -> Vec<Vec<f32>> {
    folder_list()
        .into_iter()
        .enumerate()
        .map(|(i, (_, class, _))| three(i, class))
        .collect()
}

/// A RecordIO whose records hold three labels each gives batches of
/// `samples x 3` labels, each row its record's; a per-batch function sees
/// them so, and its changes reach the batch.
#[test]
fn a_recordio_of_three_labels_gives_batches_of_three() {
    let (data, _) = recordio("three.rec", three);
    let want = want_three();
    let loader = Loader::new(data.clone(), plan(true), config(4, 2, Order::Shuffled)).unwrap();
    assert_eq!(loader.label_width(), 3);
    let mut loader = loader;
    let batches = rest(&mut loader);
    assert_eq!(
        batches.iter().map(|b| b.indices.len()).collect::<Vec<_>>(),
        [4, 2]
    );
    assert_rows(&batches, &want, "three.rec");

    let mut c = config(4, 2, Order::Shuffled);
    c.per_batch = Some(PerBatch::new(|b: &mut BatchMut<'_>| {
        if b.label_width != 3 || b.labels.len() != 3 * b.len {
            return Err(format!(
                "{} labels of width {}",
                b.labels.len(),
                b.label_width
            ));
        }
        for row in b.labels.chunks_exact_mut(3) {
            row[2] = row[0] + row[1];
        }
        Ok(())
    }));
    let mapped = epoch(data, plan(true), c);
    let summed: Vec<Vec<f32>> = want.iter().map(|r| vec![r[0], r[1], r[0] + r[1]]).collect();
    assert_rows(&mapped, &summed, "per_batch");
    // The tensors are the loader's alone: the same as without the function.
    let tensors = |b: &[Got]| b.iter().map(|b| b.tensor.clone()).collect::<Vec<_>>();
    assert_eq!(tensors(&mapped), tensors(&batches));
}

/// Record 4 has two labels among records of three: the batch holding it
/// fails with an error naming the record; skipped, its batch holds the
/// other samples with their own labels and pixels. A first record with
/// two labels makes the loader's width 2, and the next record is refused.
#[test]
fn a_sample_with_another_label_count_is_refused_naming_it() {
    let odd = |i: usize, class: f32| {
        let mut l = three(i, class);
        l.truncate(if i == 4 { 2 } else { 3 });
        l
    };
    let (data, path) = recordio("odd.rec", odd);
    let mut loader =
        Loader::new(data.clone(), plan(false), config(2, 3, Order::Sequential)).unwrap();
    assert_eq!(loader.label_width(), 3);
    for _ in 0..2 {
        loader.next().unwrap().unwrap();
    }
    let err = loader.next().unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::LabelCount {
                index: 4,
                expected: 3,
                found: 2,
                ..
            }
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("record at"),
        "{text}"
    );
    assert!(loader.next().is_none(), "the error ends the epoch");

    // Skipped: one batch of all six, sample 4's slot closed.
    let (good, _) = recordio("good.rec", three);
    let whole = epoch(good, plan(false), config(6, 1, Order::Sequential));
    let mut c = config(6, 3, Order::Sequential);
    c.on_error = OnError::Skip;
    let skipped = epoch(data, plan(false), c);
    assert_eq!(skipped.len(), 1);
    let (b, all) = (&skipped[0], &whole[0]);
    assert_eq!((b.indices.as_slice(), b.skipped), (&[0, 1, 2, 3, 5][..], 1));
    let want = want_three();
    let rows: Vec<f32> = [0, 1, 2, 3, 5]
        .iter()
        .flat_map(|&i| want[i].clone())
        .collect();
    assert_eq!(b.labels, rows);
    let sample = 3 * H * W;
    let mut pixels = all.tensor[..4 * sample].to_vec();
    pixels.extend_from_slice(&all.tensor[5 * sample..]);
    assert!(
        b.tensor == pixels,
        "the samples after the hole moved with their labels"
    );

    let first = |i: usize, class: f32| {
        let mut l = three(i, class);
        l.truncate(if i == 0 { 2 } else { 3 });
        l
    };
    let (data, _) = recordio("first.rec", first);
    let mut loader = Loader::new(data, plan(false), config(2, 1, Order::Sequential)).unwrap();
    assert_eq!(loader.label_width(), 2, "the first sample's count");
    let err = loader.next().unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::LabelCount {
                index: 1,
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{err}"
    );
    // Declared, the width is the caller's and the first record is the odd one.
    let (data, _) = recordio("first.rec", first);
    let mut c = config(2, 1, Order::Sequential);
    c.label_width = Some(3);
    let err = Loader::new(data, plan(false), c)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, LoadError::LabelCount { index: 0, .. }),
        "{err}"
    );
}

/// CelebA's identity, box and attributes (45 labels) with a random crop per
/// sample, in a global shuffle and in a shard-block shuffle: the same
/// batches for 1 and 3 decode threads, and a loader resumed after two
/// batches (with 3 threads) gives the rest of the epoch, and the next epoch,
/// unchanged.
#[test]
fn labels_do_not_depend_on_the_worker_count_and_survive_resume() {
    for order in [
        Order::Shuffled,
        Order::Blocks(tensorprep::train::Blocks::new(2, 2).unwrap()),
    ] {
        labels_do_not_depend_on_the_worker_count_and_survive_resume_in(order);
    }
}

fn labels_do_not_depend_on_the_worker_count_and_survive_resume_in(order: Order) {
    let data = celeba("all/identity,bbox,attr");
    let c = |workers| config(2, workers, order.clone());
    let run = |workers| {
        let mut loader = Loader::new(data.clone(), plan(true), c(workers)).unwrap();
        let first = rest(&mut loader);
        let second = rest(&mut loader.next_epoch().unwrap());
        (first, second)
    };
    let (one, one_next) = run(1);
    assert_eq!(one.len(), 4, "7 samples in batches of 2");
    assert!(one.iter().all(|b| b.width == 45));
    assert_ne!(one, one_next, "epochs differ");
    let (three, three_next) = run(3);
    assert!(one == three && one_next == three_next, "1 and 3 workers");

    let mut loader = Loader::new(data.clone(), plan(true), c(1)).unwrap();
    let head = [
        loader.next().unwrap().unwrap(),
        loader.next().unwrap().unwrap(),
    ];
    let state = loader.state();
    drop(head);
    drop(loader);
    let mut resumed = Loader::resume(data.clone(), plan(true), c(3), state).unwrap();
    assert_eq!(rest(&mut resumed), one[2..]);
    assert_eq!(rest(&mut resumed.next_epoch().unwrap()), one_next);

    // A partial epoch restarts its threads at the next: same width, same batches.
    let mut loader = Loader::new(data, plan(true), c(2)).unwrap();
    drop(loader.next().unwrap().unwrap());
    let mut next = loader.next_epoch().unwrap();
    assert_eq!(next.label_width(), 45);
    assert_eq!(rest(&mut next), one_next);
}

/// The batch buffers' labels count against `buffer_limit` (4 bytes each,
/// `label_width` per sample): a limit one byte short is refused.
#[test]
fn the_labels_count_against_the_buffer_limit() {
    let (data, _) = recordio("limit.rec", three);
    let mut c = config(4, 1, Order::Sequential);
    c.depth = 2;
    let pixels = (3 * H * W * 4) as u64;
    let exact = 2 * 4 * (pixels + 3 * 4);
    c.buffer_limit = exact;
    assert!(Loader::new(data.clone(), plan(false), c.clone()).is_ok());
    c.buffer_limit = exact - 1;
    let err = Loader::new(data, plan(false), c).unwrap_err();
    assert!(
        matches!(err, LoadError::OverBudget { needed, .. } if needed == exact),
        "{err}"
    );
}

/// Eight photos with two labels each (`i`, `-i`; samples `three` have a
/// third, 0) whose samples `failing` do not read (a malformed record).
fn labelled(failing: &'static [usize], three: &'static [usize]) -> Arc<dyn Dataset> {
    use tensorprep::train::data::{DataError, Sample};
    let photo = read("sample.jpg");
    Arc::new((8, move |i: usize, s: &mut Sample| {
        if failing.contains(&i) {
            return Err(DataError::OutOfRange { index: i, len: 0 });
        }
        s.bytes.clear();
        s.bytes.extend_from_slice(&photo);
        s.labels.clear();
        s.labels.extend([i as f32, -(i as f32)]);
        if three.contains(&i) {
            s.labels.push(0.0);
        }
        Ok(())
    }))
}

/// Skipping errors, a first sample that does not read does not set the
/// label width: the first that reads does (2), and the epoch's batches
/// hold every other sample with its two labels. The state pins the width:
/// a resume runs with it and never probes again (here a probe would find
/// 3), and a configured width that differs is refused.
#[test]
fn the_width_is_the_first_readable_sample_s_and_the_state_pins_it() {
    let mut c = config(4, 2, Order::Sequential);
    c.on_error = OnError::Skip;
    let mut loader = Loader::new(labelled(&[0], &[]), plan(false), c.clone()).unwrap();
    assert_eq!(loader.label_width(), 2);
    let first = loader.next().unwrap().unwrap();
    assert_eq!((first.label_width(), first.skipped()), (2, 1));
    assert_eq!(first.labels(), [1.0, -1.0, 2.0, -2.0, 3.0, -3.0]);
    drop(first);
    let state = loader.state();
    assert_eq!(state.label_width, Some(2));
    let rest_of_epoch = rest(&mut loader);
    drop(loader);

    // None of the probes reads: a typed error (the width is unknown), not
    // a guess.
    let unreadable: &[usize] = &[0, 1, 2, 3, 4, 5, 6, 7];
    let err = Loader::new(labelled(unreadable, &[]), plan(false), c.clone()).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::LabelWidth {
                tried: 8,
                error: Some(_)
            }
        ),
        "{err}"
    );
    // Resumed at the state, the width is the state's: no probe (it would
    // find 3 here, from samples the rest of the epoch does not read).
    let changed = labelled(&[], &[0, 1, 2, 3]);
    let mut resumed = Loader::resume(changed, plan(false), c.clone(), state).unwrap();
    assert_eq!(resumed.label_width(), 2);
    assert_eq!(rest(&mut resumed), rest_of_epoch);
    let mut other = c;
    other.label_width = Some(3);
    let err = Loader::resume(labelled(&[0], &[]), plan(false), other, state).unwrap_err();
    assert!(
        matches!(err, LoadError::Resume(_)) && err.to_string().contains("label width"),
        "{err}"
    );
}
