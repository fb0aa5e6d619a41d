//! Training mode: per-sample draws become ordinary ops whose pixels are
//! Pillow's for the drawn parameters, the same key gives the same tensor on
//! any thread, and a random crop per sample allocates nothing in steady
//! state beyond the decoder's own.

use tensorprep::finish::{ChannelOrder, Normalize};
use tensorprep::geometry::Flip;
use tensorprep::jpeg::Backend;
use tensorprep::pipeline::{Decode, Op, Resize};
use tensorprep::resize::{Filter, Resample};
use tensorprep::size::SizeRule;
use tensorprep::train::{
    Augment, Draws, RandomCrop, RandomResizedCrop, SampleKey, TrainPipeline, TrainState,
};
use tensorprep::{DType, Layout, Quantization, Rect, TensorMut};
use tensorprep_tests::{CountingAllocator, allocations, decoding_allocations, read, read_png};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The pixels as they are: u8 HWC RGB.
fn raw_u8() -> [Op; 3] {
    Op::RGB_U8_HWC
}

fn pipeline(augments: Vec<Augment>, finish: [Op; 3]) -> TrainPipeline {
    TrainPipeline::new(Decode::exact(Backend::Zune), augments, finish)
}

/// A fixture line of `make_train_fixtures.py`: its fields, its box, its
/// output size, and the output (RGB) of the plan that crops the box and
/// resizes it to that size with the line's filter, decoding with `decode`,
/// with the geometry of the run.
fn run_box(
    line: &str,
    decode: Decode,
) -> (
    Vec<&str>,
    Rect,
    (u32, u32),
    Vec<u8>,
    tensorprep::pipeline::Geometry,
) {
    let f: Vec<&str> = line.split_whitespace().collect();
    let n = |i: usize| f[i].parse::<u32>().unwrap();
    let (rect, out) = (Rect::new(n(1), n(2), n(3), n(4)), (n(5), n(6)));
    let filter = match f[7] {
        "bilinear" => Filter::Bilinear,
        _ => Filter::Bicubic,
    };
    let resize = Resize {
        size: SizeRule::Exact {
            width: out.0,
            height: out.1,
        },
        resample: Resample::Pillow(filter),
    };
    let augments = vec![Augment::Op(Op::Crop(rect)), Augment::Op(Op::Resize(resize))];
    let plan = TrainPipeline::new(decode, augments, raw_u8())
        .compile()
        .unwrap();
    let mut got = vec![0u8; (out.0 * out.1 * 3) as usize];
    let geometry = plan
        .run(
            &mut TrainState::new(),
            SampleKey::new(0, 0, 0),
            &read(f[0]),
            TensorMut::U8(&mut got),
        )
        .unwrap();
    (f, rect, out, got, geometry)
}

/// For the boxes `make_train_fixtures.py` drew the way torchvision's
/// `get_params` draws them, the training plan's crop and resize give
/// exactly Pillow's `img.crop(box).resize(size, filter)` (PNG sources:
/// decoding is exact on every build).
#[test]
fn a_drawn_box_gives_pillow_s_pixels() {
    let boxes = std::fs::read_to_string(tensorprep_tests::fixture("train/rrc_boxes.txt")).unwrap();
    let mut checked = 0;
    for line in boxes.lines().filter(|l| !l.starts_with('#')) {
        let (f, _, _, got, _) = run_box(line, Decode::exact(Backend::Zune));
        assert_eq!(got, read_png(f[8]).as_bytes(), "{line}");
        checked += 1;
    }
    assert_eq!(checked, 8);
}

/// Fast (DCT-scaled) mode follows the drawn box: for the boxes
/// `make_train_fixtures.py` drew on JPEGs, decoding at the scale the box
/// allows (not the whole image's) and resizing the scaled box gives exactly
/// Pillow's `draft` + `resize(size, filter, box)`; only the region the box
/// needs is decoded.
#[test]
#[cfg_attr(
    not(feature = "turbojpeg"),
    ignore = "needs libjpeg-turbo: cargo test -p tensorprep-tests --features turbojpeg"
)]
fn fast_mode_decodes_at_the_scale_of_the_drawn_box() {
    use tensorprep::pipeline::DecodeScaling;
    let boxes = std::fs::read_to_string(tensorprep_tests::fixture("train/fast_boxes.txt")).unwrap();
    let mut scales = Vec::new();
    for line in boxes.lines().filter(|l| !l.starts_with('#')) {
        let (f, rect, out, got, geometry) = run_box(line, decode_fast());
        assert_eq!(got, read_png(f[9]).as_bytes(), "{line}");
        // The box's corners land on the output's corners.
        let (x0, y0) = geometry
            .to_output
            .point((f64::from(rect.x), f64::from(rect.y)));
        let (x1, y1) = geometry.to_output.point((
            f64::from(rect.x + rect.width),
            f64::from(rect.y + rect.height),
        ));
        let near = |a: f64, b: u32| (a - f64::from(b)).abs() < 1e-3;
        assert!(
            near(x0, 0) && near(y0, 0) && near(x1, out.0) && near(y1, out.1),
            "{line}"
        );
        scales.push(f[8].parse::<u32>().unwrap());
    }
    scales.sort();
    scales.dedup();
    assert_eq!(scales, [2, 4, 8], "every reduction is covered");
    // Exact mode or zune-jpeg: fast mode is refused by name.
    let mut zune = Decode::exact(Backend::Zune);
    zune.scaling = DecodeScaling::Fast;
    let err = TrainPipeline::new(zune, vec![], raw_u8())
        .compile()
        .unwrap_err();
    assert!(err.to_string().contains("libjpeg-turbo"), "{err}");
    let mut flip_first = TrainPipeline::imagenet_train();
    flip_first.decode = decode_fast();
    flip_first.augments.reverse();
    let err = flip_first.compile().unwrap_err();
    assert!(err.to_string().contains("RandomResizedCrop"), "{err}");
}

#[cfg(feature = "turbojpeg")]
fn decode_fast() -> Decode {
    let mut d = Decode::exact(Backend::LibjpegTurbo);
    d.scaling = tensorprep::pipeline::DecodeScaling::Fast;
    d
}

#[cfg(not(feature = "turbojpeg"))]
fn decode_fast() -> Decode {
    unreachable!("the fast-mode test is ignored without libjpeg-turbo")
}

/// RandomResizedCrop's boxes follow torchvision's `get_params`: inside the
/// image, area share within `scale` and ratio within `ratio` (up to the
/// rounding of the sides), placed anywhere; a tiny image falls back to the
/// centred box.
#[test]
fn random_resized_crop_boxes_keep_torchvision_s_bounds() {
    let rrc = RandomResizedCrop::new(224, 224);
    let (w, h) = (451u32, 300u32);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for index in 0..2000 {
        let r = rrc.draw_box(&mut Draws::new(SampleKey::new(3, 0, index), 0), (w, h));
        assert!(r.width > 0 && r.height > 0 && r.x + r.width <= w && r.y + r.height <= h);
        let share = f64::from(r.width * r.height) / f64::from(w * h);
        // Rounding each side moves the area by at most a side's length.
        let slack = f64::from(r.width + r.height + 1) / f64::from(w * h);
        assert!(share <= 1.0 + slack && share >= 0.08 - slack, "{r:?}");
        let ratio = f64::from(r.width) / f64::from(r.height);
        let tol = 1.0 / f64::from(r.width.min(r.height)) + 1e-9;
        assert!(
            ratio >= 0.75 * (1.0 - tol) - tol && ratio <= 4.0 / 3.0 * (1.0 + tol) + tol,
            "{r:?}"
        );
        xs.push(r.x);
        ys.push(r.y);
    }
    // Placed across the image, not only at the origin or the centre.
    assert!(xs.iter().max().unwrap() > &150 && ys.iter().max().unwrap() > &100);
    assert!(xs.iter().filter(|&&x| x == 0).count() < 400);
    // Too thin for any ratio in range: the fallback, centred and clamped.
    let r = rrc.draw_box(&mut Draws::new(SampleKey::new(3, 0, 0), 0), (400, 10));
    assert_eq!(r, Rect::new(193, 0, 13, 10));
}

/// The same seed gives the same tensors whatever the thread count and the
/// order the samples are taken in; another epoch or seed draws anew.
#[test]
fn draws_do_not_depend_on_threads_or_order() {
    let plan = TrainPipeline::imagenet_train().compile().unwrap();
    let len = plan.output_shape().unwrap().iter().product::<usize>();
    let photos = [read("sample.jpg"), read("sklearn_china.jpg")];
    let run = |key: SampleKey, state: &mut TrainState| {
        let mut t = vec![0f32; len];
        plan.run(
            state,
            key,
            &photos[key.index as usize % 2],
            TensorMut::F32(&mut t),
        )
        .unwrap();
        t
    };
    let keys: Vec<SampleKey> = (0..24).map(|i| SampleKey::new(9, 1, i)).collect();
    let mut state = TrainState::new();
    let serial: Vec<Vec<f32>> = keys.iter().map(|&k| run(k, &mut state)).collect();
    // Four threads, each taking every fourth sample, in reverse order.
    let parallel: Vec<(u64, Vec<f32>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let keys = &keys;
                let run = &run;
                s.spawn(move || {
                    let mut state = TrainState::new();
                    keys.iter()
                        .rev()
                        .filter(|k| k.index % 4 == t)
                        .map(|&k| (k.index, run(k, &mut state)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    for (index, t) in parallel {
        assert!(t == serial[index as usize], "sample {index}");
    }
    // Different epochs and seeds draw different crops.
    let other_epoch = run(SampleKey::new(9, 2, 0), &mut state);
    let other_seed = run(SampleKey::new(10, 1, 0), &mut state);
    assert!(other_epoch != serial[0] && other_seed != serial[0]);
}

/// A random crop per sample misses the resolved-plan cache every time: the
/// resolution refills the oldest entry's vectors and tables, so after the
/// warm-up a pass allocates exactly what decoding the same files does.
#[test]
fn a_random_crop_per_sample_allocates_only_inside_the_decoder() {
    let plan = pipeline(
        vec![
            Augment::RandomResizedCrop(RandomResizedCrop::new(96, 80)),
            Augment::RandomFlip(tensorprep::train::RandomFlip::new(Flip::Horizontal, 0.5)),
            Augment::RandomApply(tensorprep::train::RandomApply::new(
                0.5,
                vec![Augment::RandomCrop({
                    let mut c = RandomCrop::new(96, 80);
                    c.padding = [4; 4];
                    c
                })],
            )),
        ],
        Op::finish(
            Normalize::IMAGENET,
            Layout::Chw,
            ChannelOrder::Rgb,
            DType::F32,
            Quantization::IDENTITY,
        ),
    )
    .compile()
    .unwrap();
    assert_eq!(plan.output_shape(), Some([3, 80, 96]));
    assert_decoder_allocations_only(&plan, TrainState::new(), "random crops");
}

/// 40 samples of two photos through `plan` (f32, 3x80x96) after two warm-up
/// passes allocate exactly what decoding them alone does.
fn assert_decoder_allocations_only(
    plan: &tensorprep::train::TrainPlan,
    mut state: TrainState,
    what: &str,
) {
    let photos = [read("sample.jpg"), read("sklearn_china.jpg")];
    let mut tensor = vec![0f32; 3 * 80 * 96];
    let mut pass = |epoch: u32, state: &mut TrainState| {
        allocations(|| {
            for index in 0..40u64 {
                let key = SampleKey::new(5, epoch, index);
                plan.run(
                    state,
                    key,
                    &photos[index as usize % 2],
                    TensorMut::F32(&mut tensor),
                )
                .unwrap();
            }
        })
    };
    pass(0, &mut state);
    pass(1, &mut state);
    let planned = pass(2, &mut state);
    let decoding = decoding_allocations((0..40).map(|i| photos[i % 2].as_slice()));
    assert_eq!(
        planned, decoding,
        "40 samples, {what}: {planned} allocations through the plan, {decoding} in decoding alone"
    );
}

/// Bad augment parameters and ops that do not belong are refused by name.
#[test]
fn bad_augments_are_refused() {
    let refused = |augments: Vec<Augment>| {
        pipeline(augments, raw_u8())
            .compile()
            .unwrap_err()
            .to_string()
    };
    assert!(
        refused(vec![Augment::RandomFlip(
            tensorprep::train::RandomFlip::new(Flip::Horizontal, 1.5)
        )])
        .contains("RandomFlip")
    );
    let mut rrc = RandomResizedCrop::new(8, 8);
    rrc.scale = (0.5, 0.1);
    assert!(refused(vec![Augment::RandomResizedCrop(rrc)]).contains("RandomResizedCrop"));
    assert!(refused(vec![Augment::Op(raw_u8()[0])]).contains("finish ops"));
    assert!(
        refused(vec![Augment::RandomChoice(
            tensorprep::train::RandomChoice::new(vec![], vec![])
        )])
        .contains("RandomChoice")
    );
    // A crop larger than a padded image is an error for that sample, not a panic.
    let plan = pipeline(
        vec![Augment::RandomCrop(RandomCrop::new(1000, 10))],
        raw_u8(),
    )
    .compile()
    .unwrap();
    let mut out = vec![0u8; 1000 * 10 * 3];
    assert!(
        plan.run(
            &mut TrainState::new(),
            SampleKey::new(0, 0, 0),
            &read("sample.jpg"),
            TensorMut::U8(&mut out)
        )
        .is_err()
    );
}

/// 10,002 samples over 3 shards: each sample exactly once per epoch, every
/// epoch a new order, and the same order for the same (seed, epoch).
#[test]
fn shards_visit_every_sample_once_per_epoch() {
    use tensorprep::train::{Order, Shard, epoch_indices};
    let len = 10_002;
    let mut previous = Vec::new();
    for epoch in 0..3 {
        let mut seen = vec![0u8; len];
        let mut order = Vec::new();
        for index in 0..3 {
            let shard = Shard::new(3, index, false).unwrap();
            let mut mine = Vec::new();
            epoch_indices(&Order::Shuffled, 11, shard, epoch, len, &mut mine);
            assert_eq!(mine.len(), 3334);
            for &i in &mine {
                seen[i as usize] += 1;
            }
            order.extend(mine);
        }
        assert!(seen.iter().all(|&c| c == 1), "epoch {epoch}");
        assert_ne!(order, previous, "each epoch draws a new order");
        let mut again = Vec::new();
        epoch_indices(
            &Order::Shuffled,
            11,
            Shard::new(3, 0, false).unwrap(),
            epoch,
            len,
            &mut again,
        );
        assert_eq!(again[..], order[..3334]);
        previous = order;
    }
}

/// PyTorch's `WeightedRandomSampler`: with replacement each index's share
/// of the draws is its weight's share (zero never comes); without
/// replacement each index comes at most once and the first drawn follows
/// the weights; one (seed, epoch) gives one order; bad weights are refused.
#[test]
fn weighted_order_follows_the_weights() {
    use tensorprep::train::{Order, Shard, Weighted, epoch_indices};
    let weights = vec![1.0, 2.0, 3.0, 4.0, 0.0, 10.0];
    let total: f64 = weights.iter().sum();
    // Within 5 standard deviations of n * p for each index.
    let near = |count: usize, n: usize, p: f64| {
        let (n, sd) = (n as f64, (n as f64 * p * (1.0 - p)).sqrt());
        (count as f64 - n * p).abs() <= 5.0 * sd.max(1.0)
    };
    let n = 200_000;
    let order = Order::Weighted(Weighted::new(weights.clone(), n, true).unwrap());
    let mut drawn = Vec::new();
    epoch_indices(&order, 3, Shard::ALL, 0, 6, &mut drawn);
    assert_eq!(drawn.len(), n);
    for (i, w) in weights.iter().enumerate() {
        let count = drawn.iter().filter(|&&d| d == i as u64).count();
        assert!(near(count, n, w / total), "index {i}: {count} of {n}");
    }
    let mut again = Vec::new();
    epoch_indices(&order, 3, Shard::ALL, 0, 6, &mut again);
    assert_eq!(again, drawn);
    epoch_indices(&order, 3, Shard::ALL, 1, 6, &mut again);
    assert_ne!(again, drawn, "each epoch draws anew");
    // Without replacement: the 5 positive weights once each.
    let order = Order::Weighted(Weighted::new(weights.clone(), 5, false).unwrap());
    let mut firsts = [0usize; 6];
    let epochs = 20_000;
    for epoch in 0..epochs {
        epoch_indices(&order, 3, Shard::ALL, epoch, 6, &mut drawn);
        let mut sorted = drawn.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3, 5]);
        firsts[drawn[0] as usize] += 1;
    }
    for (i, w) in weights.iter().enumerate() {
        assert!(
            near(firsts[i], epochs as usize, w / total),
            "first {i}: {}",
            firsts[i]
        );
    }
    // Refused by name.
    for (w, samples, replacement) in [
        (vec![1.0, -1.0], 1, true),
        (vec![0.0, 0.0], 1, true),
        (vec![1.0, f64::NAN], 1, true),
        (vec![1.0, 0.0, 2.0], 3, false),
    ] {
        let err = Weighted::new(w, samples, replacement).unwrap_err();
        assert!(err.to_string().contains("weighted sampler"), "{err}");
    }
}

/// PyTorch's `DistributedSampler`: an uneven epoch is padded with its
/// first indices, or cut with `drop_last`; launchers' variables name the shard.
#[test]
fn padding_drop_last_and_launcher_variables() {
    use tensorprep::train::{Order, Shard, epoch_indices};
    let take = |index, drop_last| {
        let mut v = Vec::new();
        let shard = Shard::new(4, index, drop_last).unwrap();
        epoch_indices(&Order::Sequential, 0, shard, 0, 10, &mut v);
        v
    };
    // 10 padded to 12 with 0, 1; shards take positions r, r + 4, r + 8.
    assert_eq!(take(0, false), [0, 4, 8]);
    assert_eq!(take(2, false), [2, 6, 0]);
    assert_eq!(take(3, false), [3, 7, 1]);
    // Cut to 8.
    assert_eq!(take(3, true), [3, 7]);
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let shard = Shard::from_vars(vars(&[("RANK", "2"), ("WORLD_SIZE", "8")]), false).unwrap();
    assert_eq!((shard.index(), shard.count()), (2, 8));
    let shard = Shard::from_vars(
        vars(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")]),
        true,
    )
    .unwrap();
    assert_eq!(
        (shard.index(), shard.count(), shard.drop_last()),
        (1, 2, true)
    );
    assert_eq!(Shard::from_vars(vars(&[]), false).unwrap(), Shard::ALL);
    assert!(Shard::from_vars(vars(&[("RANK", "8"), ("WORLD_SIZE", "8")]), false).is_err());
}

/// A shard is made only with its rank below its world size: rank 2 of 2,
/// 5 of 2 and 0 of 0 are refused (they gave another rank's samples, or the
/// whole dataset).
#[test]
fn a_shard_outside_its_world_is_refused() {
    use tensorprep::train::Shard;
    for (count, index) in [(2, 2), (2, 5), (0, 0), (1, 1)] {
        assert!(
            Shard::new(count, index, false).is_err(),
            "{index} of {count}"
        );
    }
    for index in 0..3 {
        assert_eq!(Shard::new(3, index, true).unwrap().index(), index);
    }
}

mod loader {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tensorprep::Tensor;
    use tensorprep::train::data::{DataError, Dataset, Sample};
    use tensorprep::train::{
        Augment, LoadError, Loader, LoaderConfig, OnError, RandomResizedCrop, TrainPipeline,
        TrainPlan,
    };

    /// 40 samples alternating two photos, label = index.
    fn dataset() -> Arc<dyn Dataset> {
        let photos = vec![
            tensorprep_tests::read("sample.jpg"),
            tensorprep_tests::read("sklearn_china.jpg"),
        ];
        tensorprep_tests::photo_dataset(photos, 40)
    }

    fn plan() -> Arc<TrainPlan> {
        let mut p = TrainPipeline::imagenet_train();
        p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(32, 24));
        Arc::new(p.compile().unwrap())
    }

    fn floats(t: &Tensor) -> Vec<f32> {
        match t {
            Tensor::F32(v) => v.clone(),
            _ => unreachable!("a float plan"),
        }
    }

    type Batches = Vec<(Vec<f32>, Vec<f32>)>;

    /// (tensor, labels) of every remaining batch of the loader's epoch.
    fn rest(loader: &mut Loader) -> Batches {
        loader
            .map(|b| {
                let b = b.unwrap();
                let n = b.len();
                (
                    floats(b.tensor())[..n * 3 * 24 * 32].to_vec(),
                    b.labels().to_vec(),
                )
            })
            .collect()
    }

    /// Epoch 0's batches with a configuration's stage threads.
    fn epoch_with(workers: usize, read: usize, collate: usize) -> Batches {
        let mut config = LoaderConfig::new(6, workers, 42);
        config.read_workers = read;
        config.collate_workers = collate;
        config.depth = collate + 2;
        let mut loader = Loader::new(dataset(), plan(), config.clone()).unwrap();
        assert_eq!(loader.batches(), 7, "40 samples in batches of 6");
        rest(&mut loader)
    }

    fn epoch(workers: usize) -> Batches {
        epoch_with(workers, 1, 1)
    }

    /// The same batches, in the same order, for 1, 2 and 4 decode threads
    /// and for several read and collate threads; every sample once.
    #[test]
    fn batches_do_not_depend_on_the_worker_count() {
        let one = epoch(1);
        assert_eq!(one.len(), 7);
        let mut labels: Vec<f32> = one.iter().flat_map(|b| b.1.clone()).collect();
        labels.sort_by(f32::total_cmp);
        assert_eq!(labels, (0..40).map(|i| i as f32).collect::<Vec<_>>());
        for workers in [2, 4] {
            assert!(epoch(workers) == one, "{workers} workers");
        }
        assert!(epoch_with(3, 3, 2) == one, "3 read and 2 collate threads");
        assert!(epoch_with(2, 2, 4) == one, "4 collate threads");
    }

    /// A pipeline with colour, warp, policy and erasing draws: the same
    /// batches for 1 and 3 decode threads, and a loader resumed after 3
    /// batches gives the same rest of the epoch.
    #[test]
    fn augmented_batches_do_not_depend_on_threads_and_survive_resume() {
        use tensorprep::train::{AutoAugmentPolicy, ColorJitter, RandomErasing, RandomRotation};
        let augmented = || {
            let mut p = TrainPipeline::imagenet_train();
            p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(32, 24));
            p.augments.extend([
                Augment::auto_augment(AutoAugmentPolicy::ImageNet),
                Augment::ColorJitter(ColorJitter::new(0.4, 0.4, 0.4, 0.1)),
                Augment::RandomRotation(RandomRotation::new(-15.0, 15.0)),
                Augment::AugMix(tensorprep::train::AugMix::new()),
            ]);
            p.erasing.push(RandomErasing::new(0.5));
            Arc::new(p.compile().unwrap())
        };
        let run = |workers: usize| {
            let config = LoaderConfig::new(6, workers, 42);
            let mut loader = Loader::new(dataset(), augmented(), config).unwrap();
            rest(&mut loader)
        };
        let one = run(1);
        assert_eq!(one.len(), 7);
        assert!(run(3) == one, "3 workers");
        // Not the plain pipeline's batches: the augmentations ran.
        assert!(epoch(1) != one);
        let config = LoaderConfig::new(6, 2, 42);
        let mut loader = Loader::new(dataset(), augmented(), config.clone()).unwrap();
        for _ in 0..3 {
            loader.next().unwrap().unwrap();
        }
        let state = loader.state();
        drop(loader);
        let mut resumed = Loader::resume(dataset(), augmented(), config, state).unwrap();
        assert!(rest(&mut resumed) == one[3..], "resumed after 3 batches");
    }

    /// Unordered, batches come out as they are done: every sample still
    /// comes exactly once, with its own label and tensor.
    #[test]
    fn unordered_batches_hold_every_sample_once() {
        let mut config = LoaderConfig::new(6, 3, 42);
        config.ordered = false;
        config.epochs = Some(1);
        let mut loader = Loader::new(dataset(), plan(), config.clone()).unwrap();
        let ordered = epoch(1);
        let mut by_label = std::collections::BTreeMap::new();
        for (tensor, labels) in &ordered {
            for (i, l) in labels.iter().enumerate() {
                by_label.insert(l.to_bits(), tensor[i * 2304..(i + 1) * 2304].to_vec());
            }
        }
        let mut seen = 0;
        for (tensor, labels) in rest(&mut loader) {
            for (i, l) in labels.iter().enumerate() {
                assert!(by_label[&l.to_bits()] == tensor[i * 2304..(i + 1) * 2304]);
                seen += 1;
            }
        }
        assert_eq!(seen, 40);
    }

    /// The threads run on from epoch to epoch: each epoch equals a fresh
    /// loader resumed at its start; past the configured epochs is an error.
    #[test]
    fn epochs_follow_one_another_on_the_same_threads() {
        let mut config = LoaderConfig::new(6, 2, 42);
        config.epochs = Some(3);
        let mut loader = Loader::new(dataset(), plan(), config.clone()).unwrap();
        let mut epochs = vec![rest(&mut loader)];
        for e in 1..3 {
            loader = loader.next_epoch().unwrap();
            assert_eq!(loader.epoch(), e);
            epochs.push(rest(&mut loader));
        }
        assert!(matches!(
            loader.next_epoch().map_err(|e| e.error),
            Err(LoadError::NoMoreEpochs { epochs: Some(3) })
        ));
        // A loader with no epoch to run (or resumed past its last) ends at
        // once instead of waiting for batches that never come.
        let mut none = config.clone();
        none.epochs = Some(0);
        assert!(
            Loader::new(dataset(), plan(), none)
                .unwrap()
                .next()
                .is_none()
        );
        let mut past = Loader::new(dataset(), plan(), config.clone())
            .unwrap()
            .state();
        past.epoch = 3;
        let mut resumed = Loader::resume(dataset(), plan(), config.clone(), past).unwrap();
        assert!(resumed.next().is_none());
        assert!(epochs[0] == epoch(2));
        assert!(epochs[1] != epochs[0] && epochs[2] != epochs[1]);
        let mut state = Loader::new(dataset(), plan(), config.clone())
            .unwrap()
            .state();
        state.epoch = 2;
        let mut fresh = Loader::resume(dataset(), plan(), config.clone(), state).unwrap();
        assert!(rest(&mut fresh) == epochs[2]);
        // A state saved at an epoch's end resumes at the next one's start.
        state.epoch = 1;
        state.batches = 7;
        let mut fresh = Loader::resume(dataset(), plan(), config.clone(), state).unwrap();
        assert_eq!(fresh.epoch(), 2);
        assert!(rest(&mut fresh) == epochs[2]);
    }

    /// A weighted order runs through the loader: its epoch is the drawn
    /// count, zero-weight samples never come; weights not one per sample
    /// are refused.
    #[test]
    fn weighted_sampling_through_the_loader() {
        use tensorprep::train::{Order, Weighted};
        let weights: Vec<f64> = (0..40u32)
            .map(|i| f64::from(!i.is_multiple_of(4)))
            .collect();
        let mut config = LoaderConfig::new(6, 2, 42);
        config.order = Order::Weighted(Weighted::new(weights, 50, true).unwrap());
        let mut loader = Loader::new(dataset(), plan(), config.clone()).unwrap();
        assert_eq!(loader.batches(), 9);
        let labels: Vec<f32> = rest(&mut loader).into_iter().flat_map(|b| b.1).collect();
        assert_eq!(labels.len(), 50);
        assert!(
            labels.iter().all(|l| !(*l as u32).is_multiple_of(4)),
            "{labels:?}"
        );
        config.order = Order::Weighted(Weighted::new(vec![1.0; 39], 50, true).unwrap());
        assert!(matches!(
            Loader::new(dataset(), plan(), config),
            Err(LoadError::Config(_))
        ));
    }

    /// Batches of 2 samples from 3 decode threads and 3 buffers, resumed
    /// mid-epoch, thousands of times: every batch arrives. (Buffers once went
    /// to a later batch while an earlier one waited, or to a thread whose
    /// batch another had opened, and the ordered stream stalled for good,
    /// about once in a thousand loaders.) A stall fails the test instead
    /// of hanging it.
    #[test]
    fn small_batches_never_stall() {
        const ROUNDS: u64 = 3000;
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut p = TrainPipeline::imagenet_train();
            p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(8, 8));
            let plan = Arc::new(p.compile().unwrap());
            // A tiny image: many loaders in little time.
            let tiny = tensorprep_tests::read("src_sample_small_gray.png");
            let data = tensorprep_tests::photo_dataset(vec![tiny], 40);
            let mut samples = 0;
            for round in 0..ROUNDS {
                let mut config = LoaderConfig::new(2, 3, round);
                config.depth = 3;
                config.prefetch = 6;
                let mut state = Loader::new(Arc::clone(&data), Arc::clone(&plan), config.clone())
                    .unwrap()
                    .state();
                state.batches = round % 20;
                let loader =
                    Loader::resume(Arc::clone(&data), Arc::clone(&plan), config, state).unwrap();
                samples += loader.map(|b| b.unwrap().len()).sum::<usize>();
            }
            let _ = done.send(samples);
        });
        let want: usize = (0..ROUNDS).map(|r| 40 - 2 * (r % 20) as usize).sum();
        let got = finished.recv_timeout(std::time::Duration::from_secs(120));
        assert_eq!(got, Ok(want), "the loader stalled");
    }

    /// A per-batch function runs on every collated batch (it sees the
    /// batch's samples and may change them); its error or panic fails that
    /// batch, naming it.
    #[test]
    fn a_per_batch_function_sees_and_changes_each_batch() {
        use tensorprep::train::{BatchMut, PerBatch};
        let mut config = LoaderConfig::new(6, 2, 42);
        config.per_batch = Some(PerBatch::new(|b: &mut BatchMut<'_>| {
            assert_eq!(b.labels.len(), b.len);
            for (l, i) in b.labels.iter_mut().zip(b.indices) {
                *l = 1000.0 + *i as f32;
            }
            if let Tensor::F32(t) = b.tensor {
                t[..3 * 24 * 32].fill(0.0);
            }
            Ok(())
        }));
        let mut loader = Loader::new(dataset(), plan(), config.clone()).unwrap();
        let plain = epoch(2);
        for (k, (tensor, labels)) in rest(&mut loader).into_iter().enumerate() {
            let sample = 3 * 24 * 32;
            assert!(tensor[..sample].iter().all(|v| *v == 0.0));
            assert!(tensor[sample..] == plain[k].0[sample..]);
            // The dataset's label is the index: the function rewrote it.
            let want: Vec<f32> = plain[k].1.iter().map(|l| 1000.0 + l).collect();
            assert_eq!(labels, want);
        }
        for failing in [
            PerBatch::new(|b: &mut BatchMut<'_>| {
                if b.number == 2 {
                    Err("no batch two".into())
                } else {
                    Ok(())
                }
            }),
            PerBatch::new(|b: &mut BatchMut<'_>| {
                assert!(b.number != 2, "no batch two");
                Ok(())
            }),
        ] {
            config.per_batch = Some(failing);
            let results: Vec<_> = Loader::new(dataset(), plan(), config.clone())
                .unwrap()
                .collect();
            assert_eq!(results.len(), 3);
            let err = results[2].as_ref().unwrap_err();
            assert!(
                matches!(
                    err,
                    LoadError::PerBatch {
                        epoch: 0,
                        number: 2,
                        ..
                    }
                ) && err.to_string().contains("no batch two"),
                "{err}"
            );
        }
    }

    /// A plan whose output size varies: each batch is padded with zeros to
    /// its largest sample, each sample's pixels where they would be alone;
    /// a sample past max_shape is an error naming it; without max_shape
    /// the loader is refused.
    #[test]
    fn batches_of_varying_sizes_are_padded_to_their_largest() {
        use tensorprep::train::{SampleKey, TrainState};
        // No crop or resize: the tensors keep the photos' sizes (300 x 451
        // and 427 x 640).
        let mut p = TrainPipeline::imagenet_train();
        p.augments.remove(0);
        let plan = Arc::new(p.compile().unwrap());
        assert_eq!(plan.output_shape(), None);
        let mut config = LoaderConfig::new(3, 2, 42);
        config.order = tensorprep::train::Order::Sequential;
        assert!(matches!(
            Loader::new(dataset(), Arc::clone(&plan), config.clone()),
            Err(LoadError::Config(_))
        ));
        config.max_shape = Some([3, 427, 640]);
        let photos = [
            tensorprep_tests::read("sample.jpg"),
            tensorprep_tests::read("sklearn_china.jpg"),
        ];
        let alone = |i: u64| {
            let mut out = vec![0f32; 3 * 427 * 640];
            let shape = plan
                .run_any_size(
                    &mut TrainState::new(),
                    SampleKey::new(42, 0, i),
                    &photos[i as usize % 2],
                    tensorprep::TensorMut::F32(&mut out),
                )
                .unwrap();
            out.truncate(shape.iter().product());
            (shape, out)
        };
        let mut loader = Loader::new(dataset(), Arc::clone(&plan), config.clone()).unwrap();
        let batch = loader.next().unwrap().unwrap();
        assert_eq!(batch.shape(), [3, 3, 427, 640]);
        assert_eq!(
            batch.sample_shapes(),
            [[3, 300, 451], [3, 427, 640], [3, 300, 451]]
        );
        let t = floats(batch.tensor());
        let per = 3 * 427 * 640;
        // DETR's pixel mask: 1 on each sample's pixels, 0 on its padding.
        assert_eq!(batch.pixel_mask_shape(), [3, 427, 640]);
        let mut mask = vec![7u8; 3 * 427 * 640];
        batch.pixel_mask(&mut mask).unwrap();
        assert!(matches!(
            batch.pixel_mask(&mut mask[1..]),
            Err(LoadError::BufferLength { .. })
        ));
        for (k, shape) in batch.sample_shapes().iter().enumerate() {
            for y in 0..427 {
                let row = &mask[(k * 427 + y) * 640..][..640];
                let inside = if y < shape[1] { shape[2] } else { 0 };
                assert!(row[..inside].iter().all(|v| *v == 1), "sample {k} row {y}");
                assert!(row[inside..].iter().all(|v| *v == 0), "sample {k} row {y}");
            }
        }
        for (k, i) in batch.indices().iter().enumerate() {
            let (shape, want) = alone(*i);
            let sample = &t[k * per..(k + 1) * per];
            for c in 0..3 {
                for y in 0..427 {
                    let row = &sample[(c * 427 + y) * 640..(c * 427 + y + 1) * 640];
                    if y < shape[1] {
                        let at = (c * shape[1] + y) * shape[2];
                        assert!(
                            row[..shape[2]] == want[at..at + shape[2]],
                            "sample {i} row {y}"
                        );
                        assert!(row[shape[2]..].iter().all(|v| *v == 0.0));
                    } else {
                        assert!(row.iter().all(|v| *v == 0.0));
                    }
                }
            }
        }
        drop(batch);
        // A batch of the small photo only is padded to it alone.
        config.order = tensorprep::train::Order::Sequential;
        config.batch_size = 1;
        let mut loader = Loader::new(dataset(), Arc::clone(&plan), config.clone()).unwrap();
        assert_eq!(loader.next().unwrap().unwrap().shape(), [1, 3, 300, 451]);
        // Too small a max_shape: an error naming the sample.
        config.max_shape = Some([3, 300, 451]);
        let err = Loader::new(dataset(), plan, config)
            .unwrap()
            .find_map(|b| b.err())
            .unwrap();
        assert!(
            matches!(
                err,
                LoadError::Decode {
                    index: 1,
                    error: tensorprep::Error::InvalidParameter {
                        name: "max_shape",
                        ..
                    },
                    ..
                }
            ),
            "{err}"
        );
    }

    /// One seed for the order and the draws: a sequential order keeps the
    /// samples in place and still draws its crops from the run's seed.
    #[test]
    fn a_sequential_order_draws_from_the_run_s_seed() {
        let run = |seed: u64| {
            let mut config = LoaderConfig::new(6, 2, seed);
            config.order = tensorprep::train::Order::Sequential;
            rest(&mut Loader::new(dataset(), plan(), config).unwrap())
        };
        let (one, two) = (run(1), run(2));
        assert_eq!(one[0].1, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(
            one.iter().map(|b| &b.1).collect::<Vec<_>>(),
            two.iter().map(|b| &b.1).collect::<Vec<_>>()
        );
        assert!(one[0].0 != two[0].0, "other crops for another seed");
        assert!(run(1) == one);
    }

    /// Each stage runs on threads named for it (`top -H` shows them).
    #[cfg(target_os = "linux")]
    #[test]
    fn stages_run_on_named_threads() {
        let mut config = LoaderConfig::new(6, 2, 42);
        config.read_workers = 2;
        let loader = Loader::new(dataset(), plan(), config.clone()).unwrap();
        let names = || -> Vec<String> {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .map(|n| n.trim().to_string())
                .collect()
        };
        let want = [
            "tp-read-0",
            "tp-read-1",
            "tp-decode-0",
            "tp-decode-1",
            "tp-collate-0",
        ];
        // A thread names itself once it runs: wait for the last to start.
        let mut seen = names();
        for _ in 0..200 {
            if want.iter().all(|w| seen.iter().any(|n| n == w)) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            seen = names();
        }
        for w in want {
            assert!(seen.iter().any(|n| n == w), "{w} in {seen:?}");
        }
        drop(loader);
    }

    /// A loader resumed from its state continues with the very next batch,
    /// byte for byte, with another worker count.
    #[test]
    fn resume_continues_exactly_with_other_workers() {
        let whole = epoch(2);
        let mut loader = Loader::new(dataset(), plan(), LoaderConfig::new(6, 2, 42)).unwrap();
        for _ in 0..3 {
            drop(loader.next().unwrap().unwrap());
        }
        let state = loader.state();
        drop(loader);
        assert_eq!(state.batches, 3);
        let resumed =
            Loader::resume(dataset(), plan(), LoaderConfig::new(6, 3, 42), state).unwrap();
        let mut resumed = resumed;
        assert!(rest(&mut resumed) == whole[3..]);
        // Another seed or dataset is refused.
        assert!(matches!(
            Loader::resume(dataset(), plan(), LoaderConfig::new(6, 3, 43), state),
            Err(LoadError::Resume(_))
        ));
        // The next epoch draws anew.
        let loader = Loader::new(dataset(), plan(), LoaderConfig::new(6, 2, 42)).unwrap();
        let next: Vec<_> = loader
            .next_epoch()
            .unwrap()
            .map(|b| b.unwrap().labels().to_vec())
            .collect();
        assert_ne!(next, whole.iter().map(|b| b.1.clone()).collect::<Vec<_>>());
    }

    /// A state resumes only on its dataset: one of the same length with
    /// other samples is refused by its fingerprint; the state's bytes
    /// round-trip.
    #[test]
    fn a_state_is_for_its_dataset_only() {
        use tensorprep::train::LoaderState;
        use tensorprep::train::data::combine::InMemory;
        let mut loader = Loader::new(dataset(), plan(), LoaderConfig::new(6, 2, 42)).unwrap();
        drop(loader.next());
        let state = LoaderState::from_bytes(&loader.state().to_bytes()).unwrap();
        assert_eq!(state, loader.state());
        drop(loader);
        let other: Arc<dyn Dataset> = Arc::new(InMemory::new(vec![Sample::default(); 40]));
        assert_eq!(other.len(), dataset().len());
        let err = Loader::resume(other, plan(), LoaderConfig::new(6, 2, 42), state).unwrap_err();
        assert!(
            matches!(err, LoadError::Resume(_)) && err.to_string().contains("fingerprint"),
            "{err}"
        );
        assert!(Loader::resume(dataset(), plan(), LoaderConfig::new(6, 2, 42), state).is_ok());
    }

    /// A loader dropped on one of its own threads (its dataset held the last
    /// reference to it) stops without joining that thread, which cannot join
    /// itself: the drop returns, the read continues and ends.
    #[test]
    fn a_loader_dropped_by_its_own_dataset_stops_without_joining_itself() {
        use std::sync::Mutex;
        use std::sync::mpsc;
        use std::time::Duration;
        let slot: Arc<Mutex<Option<Loader>>> = Arc::new(Mutex::new(None));
        let (done, dropped) = mpsc::channel();
        let done = Mutex::new(done);
        let photo = tensorprep_tests::read("sample.jpg");
        let held = Arc::clone(&slot);
        let dataset: Arc<dyn Dataset> = Arc::new((16usize, move |i: usize, s: &mut Sample| {
            if i == 2 {
                // Wait for the test to hand the loader over, then drop it here.
                let loader = loop {
                    if let Some(loader) = held.lock().unwrap().take() {
                        break loader;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                drop(loader);
                done.lock().unwrap().send(()).unwrap();
            }
            s.bytes.clear();
            s.bytes.extend_from_slice(&photo);
            s.labels.clear();
            s.labels.push(i as f32);
            Ok::<(), DataError>(())
        }));
        let mut config = LoaderConfig::new(2, 2, 1);
        config.order = tensorprep::train::Order::Sequential;
        config.read_workers = 2;
        let loader = Loader::new(dataset, plan(), config).unwrap();
        *slot.lock().unwrap() = Some(loader);
        dropped
            .recv_timeout(Duration::from_secs(20))
            .expect("the drop on the loader's own read thread returned");
    }

    /// When several samples of a batch fail, the error is the first one's in
    /// the batch's order, however the threads finish: sample 0 fails last
    /// here (it waits), yet its error is the one reported.
    #[test]
    fn the_error_reported_is_the_batch_s_first_failure_not_the_first_to_finish() {
        let failing: Arc<dyn Dataset> = Arc::new((8usize, |i: usize, _: &mut Sample| {
            if i == 0 {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Err::<(), DataError>(DataError::Invalid {
                what: format!("sample {i} is unreadable"),
            })
        }));
        let mut config = LoaderConfig::new(4, 2, 1);
        config.order = tensorprep::train::Order::Sequential;
        config.read_workers = 3;
        for _ in 0..3 {
            let mut loader = Loader::new(Arc::clone(&failing), plan(), config.clone()).unwrap();
            let err = loader.next().unwrap().unwrap_err();
            assert!(
                matches!(err, LoadError::Read { index: 0, .. }),
                "the first sample's error, not the first to finish: {err}"
            );
        }
    }

    /// A panicking sample ends the epoch with an error naming it; skipping
    /// leaves it out and counts it; a dropped loader stops its workers.
    #[test]
    fn errors_name_the_sample_and_drop_stops_the_workers() {
        let reads = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&reads);
        let photo = tensorprep_tests::read("sample.jpg");
        let flaky: Arc<dyn Dataset> = Arc::new((40usize, move |i: usize, s: &mut Sample| {
            counted.fetch_add(1, Ordering::SeqCst);
            if i == 7 {
                panic!("sample seven is cursed");
            }
            s.bytes.clear();
            s.bytes.extend_from_slice(&photo);
            s.labels.clear();
            s.labels.push(i as f32);
            Ok::<(), DataError>(())
        }));
        let mut config = LoaderConfig::new(4, 2, 1);
        config.order = tensorprep::train::Order::Sequential;
        let results: Vec<_> = Loader::new(Arc::clone(&flaky), plan(), config.clone())
            .unwrap()
            .collect();
        let err = results.last().unwrap().as_ref().unwrap_err();
        assert!(
            matches!(err, LoadError::Panic { index: 7, .. }) && err.to_string().contains("cursed"),
            "{err}"
        );
        assert_eq!(
            results.len(),
            2,
            "batch 0 delivered, batch 1 holds sample 7"
        );
        config.on_error = OnError::Skip;
        let batches: Vec<_> = Loader::new(Arc::clone(&flaky), plan(), config.clone())
            .unwrap()
            .map(|b| b.unwrap())
            .map(|b| (b.len(), b.skipped()))
            .collect();
        assert_eq!(batches.iter().map(|b| b.0).sum::<usize>(), 39);
        assert_eq!(batches[1], (3, 1));
        // Dropped after one batch: no read happens once the drop returns.
        let mut loader =
            Loader::new(Arc::clone(&flaky), plan(), LoaderConfig::new(2, 2, 1)).unwrap();
        drop(loader.next());
        drop(loader);
        let after = reads.load(Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(
            reads.load(Ordering::SeqCst),
            after,
            "every worker was joined"
        );
        // Holding every buffer is an error, not a hang.
        let mut loader = Loader::new(dataset(), plan(), LoaderConfig::new(2, 1, 1)).unwrap();
        let held: Vec<_> = (&mut loader).take(3).map(|b| b.unwrap()).collect();
        assert_eq!(held.len(), 3);
        assert!(matches!(
            loader.next(),
            Some(Err(LoadError::BuffersHeld { depth: 3 }))
        ));
    }
}

mod shards {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use tensorprep::train::data::Dataset;
    use tensorprep::train::{LoadError, Loader, LoaderConfig, LoaderState, Shard, TrainPipeline};

    fn dataset() -> Arc<dyn Dataset> {
        tensorprep_tests::photo_dataset(vec![tensorprep_tests::read("sample.jpg")], 48)
    }

    /// Each step's sample set over `count` shards of `batch`, from step
    /// `from` (resumed from `state` when given).
    fn steps(count: u32, batch: usize, state: Option<LoaderState>) -> Vec<BTreeSet<u64>> {
        let mut p = TrainPipeline::imagenet_train();
        p.augments.truncate(0);
        p.augments.push(tensorprep::train::Augment::Op(
            tensorprep::pipeline::Op::Resize(tensorprep::pipeline::Resize {
                size: tensorprep::size::SizeRule::Exact {
                    width: 8,
                    height: 8,
                },
                resample: tensorprep::resize::Resample::Pillow(tensorprep::resize::Filter::Box),
            }),
        ));
        let plan = Arc::new(p.compile().unwrap());
        let mut per_step: Vec<BTreeSet<u64>> = Vec::new();
        for index in 0..count {
            let mut config = LoaderConfig::new(batch, 2, 3);
            config.shard = Shard::new(count, index, false).unwrap();
            let loader = match state {
                Some(s) => Loader::resume(dataset(), Arc::clone(&plan), config.clone(), s).unwrap(),
                None => Loader::new(dataset(), Arc::clone(&plan), config.clone()).unwrap(),
            };
            for (k, b) in loader.enumerate() {
                if per_step.len() <= k {
                    per_step.push(BTreeSet::new());
                }
                per_step[k].extend(b.unwrap().indices().iter().copied());
            }
        }
        per_step
    }

    /// Two shards of 4, checkpointed after 2 steps, resumed as four shards
    /// of 2: every later step covers the same samples, and the epoch holds
    /// every sample once.
    #[test]
    fn resume_with_another_shard_count_keeps_each_step_s_samples() {
        let whole = steps(2, 4, None);
        assert_eq!(whole.len(), 6);
        let state = LoaderState::new(3, 0, 2, 8, 48, dataset().fingerprint());
        let rest = steps(4, 2, Some(state));
        assert_eq!(rest, whole[2..]);
        let all: BTreeSet<u64> = whole[..2].iter().chain(&rest).flatten().copied().collect();
        assert_eq!(all.len(), 48);
        // Another global batch is refused.
        let mut config = LoaderConfig::new(3, 1, 3);
        config.shard = Shard::new(4, 0, false).unwrap();
        let p = Arc::new(TrainPipeline::imagenet_train().compile().unwrap());
        assert!(matches!(
            Loader::resume(dataset(), p, config.clone(), state),
            Err(LoadError::Resume(_))
        ));
    }
}

/// Datasets made from others keep random access and map indices right.
mod combine {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tensorprep::train::data::combine::{Cache, Concat, Filter, InMemory, Range, Zip};
    use tensorprep::train::data::{DataError, Dataset, Sample};

    /// `n` samples whose bytes are `[base + i]` and label `base + i`.
    fn numbered(base: u8, n: usize) -> Arc<dyn Dataset> {
        Arc::new(InMemory::new(
            (0..n)
                .map(|i| Sample {
                    bytes: vec![base + i as u8],
                    labels: vec![f32::from(base + i as u8)],
                    id: i as u64,
                    ..Sample::default()
                })
                .collect(),
        ))
    }

    fn all(d: &dyn Dataset) -> Vec<(u8, Vec<f32>)> {
        let mut s = Sample::default();
        (0..d.len())
            .map(|i| {
                d.read(i, &mut s).unwrap();
                (s.bytes[0], s.labels.clone())
            })
            .collect()
    }

    #[test]
    fn ranges_concat_zip_and_filter_map_indices() {
        let a = numbered(0, 5);
        let b = numbered(100, 3);
        let take = Range::take(Arc::clone(&a), 2).unwrap();
        let skip = Range::skip(Arc::clone(&a), 3).unwrap();
        assert_eq!(all(&take).iter().map(|s| s.0).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(all(&skip).iter().map(|s| s.0).collect::<Vec<_>>(), [3, 4]);
        assert!(Range::new(Arc::clone(&a), 2..6).is_err());
        // An empty part in the middle is stepped over.
        let empty = numbered(50, 0);
        let c = Concat::new(vec![Arc::clone(&a), empty, Arc::clone(&b)]).unwrap();
        let bytes: Vec<u8> = all(&c).iter().map(|s| s.0).collect();
        assert_eq!(bytes, [0, 1, 2, 3, 4, 100, 101, 102]);
        let mut s = Sample::default();
        assert!(matches!(
            c.read(8, &mut s),
            Err(DataError::OutOfRange { index: 8, len: 8 })
        ));
        // Zip: the first's bytes, both labels; unequal lengths refused.
        let first = Range::take(Arc::clone(&a), 3).unwrap();
        let z = Zip::new(first, Arc::clone(&b)).unwrap();
        assert_eq!(all(&z)[2], (2, vec![2.0, 102.0]));
        let err = Zip::new(Arc::clone(&a), Arc::clone(&b)).err().unwrap();
        assert!(err.to_string().contains("5 and 3"), "{err}");
        // Filter by what is read, and by index.
        let f = Filter::new(Arc::new(c), |s: &Sample| s.bytes[0].is_multiple_of(2)).unwrap();
        assert_eq!(
            all(&f).iter().map(|s| s.0).collect::<Vec<_>>(),
            [0, 2, 4, 100, 102]
        );
        let f = Filter::by_index(a, |i| i > 2).unwrap();
        assert_eq!(all(&f).iter().map(|s| s.0).collect::<Vec<_>>(), [3, 4]);
    }

    /// A cache reads each sample from its dataset once while its budget
    /// lasts, then passes reads through; what it returns is what the
    /// dataset holds.
    #[test]
    fn a_cache_reads_once_within_its_budget() {
        let reads = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&reads);
        let inner: Arc<dyn Dataset> = Arc::new((10usize, move |i: usize, s: &mut Sample| {
            counted.fetch_add(1, Ordering::SeqCst);
            s.bytes.clear();
            s.bytes.resize(1000, i as u8);
            s.labels.clear();
            s.labels.push(i as f32);
            Ok::<(), DataError>(())
        }));
        let want = all(inner.as_ref());
        reads.store(0, Ordering::SeqCst);
        let cache = Cache::new(Arc::clone(&inner), 1_000_000).unwrap();
        assert_eq!(all(&cache), want);
        assert_eq!(all(&cache), want);
        assert_eq!(reads.load(Ordering::SeqCst), 10, "each sample read once");
        assert!(cache.bytes() >= 10_000);
        // A budget of about 4 samples: 4 cached, the rest read each time.
        reads.store(0, Ordering::SeqCst);
        let small = Cache::new(inner, 4_500).unwrap();
        assert_eq!(all(&small), want);
        assert_eq!(all(&small), want);
        assert!(small.bytes() <= 4_500);
        assert_eq!(reads.load(Ordering::SeqCst), 10 + 6);
    }
}

/// Autotune stays within its budget, and what it chooses delivers the same
/// batches as any other configuration.
mod tuning {
    use std::sync::Arc;

    use tensorprep::train::{
        Augment, Budget, LoadError, Loader, LoaderConfig, RandomResizedCrop, TrainPipeline,
        autotune,
    };

    #[test]
    fn autotune_keeps_to_its_budget() {
        let data = tensorprep_tests::photo_dataset(vec![tensorprep_tests::read("sample.jpg")], 24);
        let mut p = TrainPipeline::imagenet_train();
        p.augments[0] = Augment::RandomResizedCrop(RandomResizedCrop::new(64, 64));
        let plan = Arc::new(p.compile().unwrap());
        let base = LoaderConfig::new(4, 1, 5);
        let run = |config: LoaderConfig| -> Vec<Vec<f32>> {
            Loader::new(Arc::clone(&data), Arc::clone(&plan), config)
                .unwrap()
                .map(|b| b.unwrap().labels().to_vec())
                .collect()
        };
        let want = run(base.clone());
        for cpus in [1, 2, 3] {
            let budget = Budget::new(cpus, 64 << 20);
            let tuned =
                autotune(Arc::clone(&data), Arc::clone(&plan), base.clone(), budget).unwrap();
            let c = &tuned.config;
            assert!(c.workers >= 1 && c.workers <= cpus, "{tuned}");
            assert!(c.read_workers >= 1 && c.read_workers <= 4 * cpus, "{tuned}");
            assert!(tuned.memory <= 64 << 20, "{tuned}");
            assert_eq!((c.batch_size, c.seed), (4, 5), "the base's kept");
            assert!(
                tuned
                    .to_string()
                    .contains(&format!("--workers {}", c.workers))
            );
            assert_eq!(run(tuned.config.clone()), want, "{tuned}");
        }
        // Two batches of 4 64x64 float samples (400 kB) and one decode
        // thread's images (1.2 MB for this photo): less is refused, a tight
        // budget cuts read-ahead and batch buffers.
        let err = autotune(
            Arc::clone(&data),
            Arc::clone(&plan),
            base.clone(),
            Budget::new(2, 100_000),
        )
        .unwrap_err();
        assert!(
            matches!(err, LoadError::OverBudget { limit: 100_000, .. })
                && err.to_string().contains("memory budget"),
            "{err}"
        );
        let tight = autotune(data, plan, base, Budget::new(2, 2_500_000)).unwrap();
        assert!(
            tight.memory <= 2_500_000 && tight.config.depth == 2,
            "{tight}"
        );
    }
}

/// Adjustments run between the fused passes: a plan op before (decoded and
/// resized into the 8-bit image), the adjustment, and plan ops after it
/// (through the finish pass) give what the plain plan's pixels give with
/// the adjustment applied eagerly; the warp's output size carries on.
#[test]
fn adjustments_run_between_fused_passes() {
    use tensorprep::adjust::{Point, point};
    use tensorprep::pipeline::{Pipeline, PlanState};
    use tensorprep::{Image, ImageView, PixelFormat};
    let resize = Op::Resize(Resize {
        size: SizeRule::Exact {
            width: 64,
            height: 48,
        },
        resample: Resample::Pillow(Filter::Bilinear),
    });
    let jpeg = read("sample.jpg");
    let key = SampleKey::new(3, 0, 0);
    // Resize, invert, flip, crop: two plan ops after the adjustment.
    let plan = pipeline(
        vec![
            Augment::Op(resize),
            Augment::random_invert(1.0),
            Augment::Op(Op::Flip(Flip::Horizontal)),
            Augment::Op(Op::Crop(Rect::new(4, 2, 40, 30))),
        ],
        raw_u8(),
    )
    .compile()
    .unwrap();
    assert_eq!(plan.output_shape(), Some([30, 40, 3]));
    let mut got = vec![0u8; 30 * 40 * 3];
    plan.run(&mut TrainState::new(), key, &jpeg, TensorMut::U8(&mut got))
        .unwrap();
    // The plain plan: resize, flip, crop; inverted after.
    let reference = Pipeline::from_ops(&[
        Op::Decode(Decode::exact(Backend::Zune)),
        resize,
        Op::Flip(Flip::Horizontal),
        Op::Crop(Rect::new(4, 2, 40, 30)),
    ])
    .unwrap();
    let mut ops = reference.ops().to_vec();
    ops.extend(raw_u8());
    let mut want = vec![0u8; 30 * 40 * 3];
    Pipeline::from_ops(&ops)
        .unwrap()
        .compile(tensorprep::pipeline::InputDesc::Encoded)
        .unwrap()
        .run(
            &mut PlanState::new(),
            tensorprep::pipeline::Input::Encoded(&jpeg),
            TensorMut::U8(&mut want),
        )
        .unwrap();
    let plain = ImageView::new(PixelFormat::Rgb8, 40, 30, &want).unwrap();
    let mut inverted = Image::new(PixelFormat::Rgb8, 40, 30).unwrap();
    point(&plain, &mut inverted.view_mut(), Point::Invert).unwrap();
    assert!(got == inverted.as_bytes(), "invert between passes");

    // Two adjustments back to back, then the finish pass alone.
    let plan = pipeline(
        vec![
            Augment::Op(resize),
            Augment::random_invert(1.0),
            Augment::random_invert(1.0),
        ],
        raw_u8(),
    )
    .compile()
    .unwrap();
    let mut twice = vec![0u8; 64 * 48 * 3];
    plan.run(
        &mut TrainState::new(),
        key,
        &jpeg,
        TensorMut::U8(&mut twice),
    )
    .unwrap();
    let resized = pipeline(vec![Augment::Op(resize)], raw_u8())
        .compile()
        .unwrap();
    let mut once = vec![0u8; 64 * 48 * 3];
    resized
        .run(&mut TrainState::new(), key, &jpeg, TensorMut::U8(&mut once))
        .unwrap();
    assert!(twice == once, "inverting twice is the identity");

    // An expanding rotation changes the size the next ops see.
    let mut rotation = tensorprep::train::RandomRotation::new(30.0, 30.0);
    rotation.expand = true;
    let plan = pipeline(
        vec![Augment::Op(resize), Augment::RandomRotation(rotation)],
        raw_u8(),
    )
    .compile()
    .unwrap();
    assert_eq!(plan.output_shape(), None);
    let mut room = vec![0u8; 100 * 100 * 3];
    let shape = plan
        .run_any_size(&mut TrainState::new(), key, &jpeg, TensorMut::U8(&mut room))
        .unwrap();
    // Pillow 13's Image.new("RGB", (64, 48)).rotate(30, expand=True).size
    // is (80, 74).
    assert_eq!(shape, [74, 80, 3]);
}

/// torchvision's "ImageNet train with AutoAugment" recipe, and a pipeline
/// with every colour and warp op: the same key gives the same tensor, and
/// steady state allocates nothing beyond the decoder's own.
#[test]
fn augmentations_allocate_only_inside_the_decoder() {
    use tensorprep::train::{
        AutoAugmentPolicy, ColorJitter, GaussianBlur, RandomAffine, RandomPerspective,
        RandomRotation,
    };
    let finish = Op::finish(
        Normalize::IMAGENET,
        Layout::Chw,
        ChannelOrder::Rgb,
        DType::F32,
        Quantization::IDENTITY,
    );
    let mut affine = RandomAffine::new(-10.0, 10.0);
    affine.translate = Some((0.1, 0.1));
    affine.scale = Some((0.9, 1.1));
    affine.shear = Some([-5.0, 5.0, 0.0, 0.0]);
    let pipelines = [
        vec![
            Augment::RandomResizedCrop(RandomResizedCrop::new(96, 80)),
            Augment::RandomFlip(tensorprep::train::RandomFlip::new(Flip::Horizontal, 0.5)),
            Augment::auto_augment(AutoAugmentPolicy::ImageNet),
        ],
        vec![
            Augment::RandomResizedCrop(RandomResizedCrop::new(96, 80)),
            Augment::RandomOrder(tensorprep::train::RandomOrder(vec![
                Augment::ColorJitter(ColorJitter::new(0.4, 0.4, 0.4, 0.1)),
                Augment::random_grayscale(0.2),
                Augment::RandomApply(tensorprep::train::RandomApply::new(
                    0.5,
                    vec![Augment::GaussianBlur(GaussianBlur::new(9, 9))],
                )),
            ])),
            Augment::RandomRotation(RandomRotation::new(-20.0, 20.0)),
            Augment::RandomAffine(affine),
            Augment::RandomPerspective(RandomPerspective::new(0.3, 0.5)),
            Augment::rand_augment(2, 9),
            Augment::trivial_augment_wide(),
            Augment::AugMix(tensorprep::train::AugMix::new()),
            Augment::random_solarize(128.0, 0.3),
            Augment::random_posterize(4, 0.3),
            Augment::random_adjust_sharpness(2.0, 0.3),
            Augment::random_autocontrast(0.3),
            Augment::random_equalize(0.3),
        ],
    ];
    let photos = [read("sample.jpg"), read("sklearn_china.jpg")];
    for augments in pipelines {
        let plan = pipeline(augments, finish).compile().unwrap();
        assert_eq!(plan.output_shape(), Some([3, 80, 96]));
        let mut state = TrainState::new();
        let mut tensor = vec![0f32; 3 * 80 * 96];
        let mut again = vec![0f32; 3 * 80 * 96];
        let key = SampleKey::new(9, 0, 4);
        plan.run(&mut state, key, &photos[0], TensorMut::F32(&mut tensor))
            .unwrap();
        plan.run(
            &mut TrainState::new(),
            key,
            &photos[0],
            TensorMut::F32(&mut again),
        )
        .unwrap();
        assert!(tensor == again, "one key, one tensor");
        assert_decoder_allocations_only(&plan, state, "augmented");
    }
}
