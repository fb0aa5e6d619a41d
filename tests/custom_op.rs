//! A caller's own op among the augmentations ([`CustomOp`], Python's
//! `train.Lambda`): it sees the image the other ops leave and hands the next
//! ones its result; its key makes its randomness independent of threads and
//! resumes; what it gets wrong is an error naming the op and the sample.

use std::sync::Arc;

use tensorprep::TensorMut;
use tensorprep::jpeg::Backend;
use tensorprep::pipeline::{Decode, Op};
use tensorprep::train::data::Dataset;
use tensorprep::train::{
    Augment, CustomOp, CustomOpError, CustomSize, LoadError, Loader, LoaderConfig,
    RandomResizedCrop, SampleKey, TrainPipeline, TrainPlan, TrainState,
};
use tensorprep::{ImageView, Tensor};

/// The pixels as they are: u8 HWC RGB.
fn raw_u8() -> [Op; 3] {
    Op::RGB_U8_HWC
}

fn pipeline(augments: Vec<Augment>) -> TrainPipeline {
    TrainPipeline::new(Decode::exact(Backend::Zune), augments, raw_u8())
}

fn crop() -> Augment {
    Augment::RandomResizedCrop(RandomResizedCrop::new(40, 30))
}

/// Rows of `image`, each byte mapped by `f(k, value)` (`k` counts bytes).
fn map_pixels(image: &ImageView<'_>, out: &mut Vec<u8>, f: impl Fn(usize, u8) -> u8) {
    out.clear();
    for y in 0..image.height() {
        out.extend(image.row(y).iter().copied());
    }
    for (k, v) in out.iter_mut().enumerate() {
        *v = f(k, *v);
    }
}

fn invert() -> CustomOp {
    CustomOp::new("invert", |image, _key, out| {
        map_pixels(image, out, |_, v| 255 - v);
        Ok((image.width(), image.height()))
    })
}

/// Adds noise drawn from its key alone (splitmix64 seeded with it).
fn noise() -> CustomOp {
    CustomOp::new("noise", |image, key, out| {
        map_pixels(image, out, |k, v| {
            let mut z = key.wrapping_add((k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            v.wrapping_add((z >> 61) as u8)
        });
        Ok((image.width(), image.height()))
    })
}

fn run(plan: &TrainPlan, key: SampleKey, photo: &str) -> Vec<u8> {
    let shape = plan.output_shape().expect("a fixed size");
    let mut out = vec![0u8; shape.iter().product()];
    plan.run(
        &mut TrainState::new(),
        key,
        &tensorprep_tests::read(photo),
        TensorMut::U8(&mut out),
    )
    .unwrap();
    out
}

/// A Lambda inverting pixels gives what `RandomInvert(p=1)` gives, at the
/// same place in the list (after a drawn crop, before a flip), and the ops
/// after it draw as they would without it.
#[test]
fn an_inverting_op_equals_random_invert() {
    let flip = Augment::RandomFlip(tensorprep::train::RandomFlip::new(
        tensorprep::geometry::Flip::Horizontal,
        0.5,
    ));
    let ours = pipeline(vec![crop(), Augment::Custom(invert()), flip.clone()])
        .compile()
        .unwrap();
    let theirs = pipeline(vec![crop(), Augment::random_invert(1.0), flip])
        .compile()
        .unwrap();
    let plain = pipeline(vec![crop()]).compile().unwrap();
    for index in 0..6 {
        let key = SampleKey::new(3, 1, index);
        let got = run(&ours, key, "sample.jpg");
        assert_eq!(got, run(&theirs, key, "sample.jpg"), "sample {index}");
        assert_ne!(got, run(&plain, key, "sample.jpg"));
    }
    // Nested in RandomApply(p=1) it runs the same.
    let nested = pipeline(vec![
        crop(),
        Augment::RandomApply(tensorprep::train::RandomApply::new(
            1.0,
            vec![Augment::Custom(invert())],
        )),
    ])
    .compile()
    .unwrap();
    let alone = pipeline(vec![crop(), Augment::random_invert(1.0)])
        .compile()
        .unwrap();
    let key = SampleKey::new(3, 0, 2);
    assert_eq!(
        run(&nested, key, "sample.jpg"),
        run(&alone, key, "sample.jpg")
    );
}

/// The key is the sample's and the op's: another sample, epoch or seed
/// gives another key, the same key the same result.
#[test]
fn the_key_follows_the_sample() {
    let keys = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&keys);
    let record = CustomOp::new("record", move |image, key, out| {
        seen.lock().unwrap().push(key);
        map_pixels(image, out, |_, v| v);
        Ok((image.width(), image.height()))
    });
    let plan = pipeline(vec![crop(), Augment::Custom(record)])
        .compile()
        .unwrap();
    for key in [
        SampleKey::new(1, 0, 0),
        SampleKey::new(1, 0, 1),
        SampleKey::new(1, 1, 0),
        SampleKey::new(2, 0, 0),
        SampleKey::new(1, 0, 0),
    ] {
        run(&plan, key, "sample.jpg");
    }
    let keys = keys.lock().unwrap();
    assert_eq!(keys[0], keys[4]);
    let mut distinct = keys[..4].to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{keys:?}");
}

/// 24 samples alternating two photos, label = index.
fn dataset() -> Arc<dyn Dataset> {
    let photos = vec![
        tensorprep_tests::read("sample.jpg"),
        tensorprep_tests::read("sklearn_china.jpg"),
    ];
    tensorprep_tests::photo_dataset(photos, 24)
}

type Batches = Vec<(Vec<u8>, Vec<f32>)>;

fn rest(loader: &mut Loader) -> Batches {
    loader
        .map(|b| {
            let b = b.unwrap();
            let Tensor::U8(t) = b.tensor() else {
                unreachable!("a u8 plan")
            };
            (t[..b.len() * 30 * 40 * 3].to_vec(), b.labels().to_vec())
        })
        .collect()
}

/// A noise op drawing from its key: the same batches for 1 and 3 workers,
/// and a loader resumed after 2 batches gives the rest of the epoch.
#[test]
fn keyed_randomness_is_the_same_for_any_worker_count_and_after_resume() {
    let plan = || {
        Arc::new(
            pipeline(vec![crop(), Augment::Custom(noise())])
                .compile()
                .unwrap(),
        )
    };
    let epoch = |workers| {
        let config = LoaderConfig::new(4, workers, 9);
        rest(&mut Loader::new(dataset(), plan(), config).unwrap())
    };
    let one = epoch(1);
    assert_eq!(one.len(), 6);
    assert!(epoch(3) == one, "3 workers");
    let plain = LoaderConfig::new(4, 1, 9);
    let without = Arc::new(pipeline(vec![crop()]).compile().unwrap());
    assert!(rest(&mut Loader::new(dataset(), without, plain).unwrap()) != one);
    let config = LoaderConfig::new(4, 2, 9);
    let mut loader = Loader::new(dataset(), plan(), config.clone()).unwrap();
    for _ in 0..2 {
        loader.next().unwrap().unwrap();
    }
    let state = loader.state();
    drop(loader);
    let mut resumed = Loader::resume(dataset(), plan(), config, state).unwrap();
    assert!(rest(&mut resumed) == one[2..], "resumed after 2 batches");
}

/// The first error of the loader's epoch.
fn first_error(op: CustomOp) -> LoadError {
    let plan = Arc::new(
        pipeline(vec![crop(), Augment::Custom(op)])
            .compile()
            .unwrap(),
    );
    let mut config = LoaderConfig::new(4, 2, 9);
    config.order = tensorprep::train::Order::Sequential;
    Loader::new(dataset(), plan, config)
        .unwrap()
        .find_map(|b| b.err())
        .expect("an error")
}

/// A function's error is the loader's, naming the sample, with the op's
/// error (naming it) and the function's as its causes.
#[test]
fn a_failing_op_names_the_sample() {
    let failing = CustomOp::new("picky", |_image, _key, _out| Err("not today".into()));
    let err = first_error(failing);
    let LoadError::Custom { index, error, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*index, 0);
    assert!(matches!(error, CustomOpError::Failed { .. }), "{error}");
    assert_eq!(error.op(), "picky");
    let message = tensorprep::error::report(&err);
    assert!(
        message.contains("(sample 0)") && message.ends_with("Lambda(picky) failed: not today"),
        "{message}"
    );
}

/// A result of another size than declared, or of a length its size does
/// not have, is refused naming the op and the sample.
#[test]
fn a_result_that_does_not_fit_is_refused() {
    let smaller = CustomOp::new("smaller", |image, _key, out| {
        out.clear();
        out.resize(3 * 4 * 3, 0);
        let _ = image;
        Ok((4, 3))
    });
    let err = first_error(smaller);
    let LoadError::Custom {
        index: 0, error, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert!(
        matches!(
            error,
            CustomOpError::Size {
                expected: (40, 30),
                found: (4, 3),
                ..
            }
        ),
        "{error}"
    );
    let short = CustomOp::new("short", |image, _key, out| {
        map_pixels(image, out, |_, v| v);
        out.pop();
        Ok((image.width(), image.height()))
    });
    let err = first_error(short);
    let LoadError::Custom { error, .. } = &err else {
        panic!("{err}")
    };
    assert!(
        matches!(
            error,
            CustomOpError::Length {
                len: 3599,
                needed: 3600,
                ..
            }
        ),
        "{error}"
    );
    assert!(err.to_string().contains("(sample 0)"), "{err}");
    assert!(
        tensorprep::error::report(&err).contains("Lambda(short) returned 3599 bytes"),
        "{err}"
    );
}

/// A declared size: the ops after it draw for it, the plan's output shape
/// follows it, and a size over the worker's budget is refused.
#[test]
fn a_declared_size_is_the_next_ops_input() {
    let half = CustomOp::new("half", |image, _key, out| {
        // Every other pixel of every other row.
        out.clear();
        for y in (0..image.height()).step_by(2) {
            for px in image.row(y).chunks(3).step_by(2) {
                out.extend_from_slice(px);
            }
        }
        Ok((image.width() / 2, image.height() / 2))
    })
    .with_size(CustomSize::Fixed {
        width: 20,
        height: 15,
    });
    let p = pipeline(vec![crop(), Augment::Custom(half.clone())]);
    let plan = p.compile().unwrap();
    assert_eq!(plan.output_shape(), Some([15, 20, 3]));
    let key = SampleKey::new(5, 0, 0);
    let got = run(&plan, key, "sample.jpg");
    let full = run(
        &pipeline(vec![crop()]).compile().unwrap(),
        key,
        "sample.jpg",
    );
    for y in 0..15 {
        for x in 0..20 {
            let at = (y * 20 + x) * 3;
            let from = (2 * y * 40 + 2 * x) * 3;
            assert_eq!(got[at..at + 3], full[from..from + 3], "({x}, {y})");
        }
    }
    // The result counts against the worker's budget: the stored photo
    // (451 x 300) is within 2 MB, a 500 x 400 result is not.
    let larger = CustomOp::new("larger", |_image, _key, out| {
        out.clear();
        out.resize(500 * 400 * 3, 7);
        Ok((500, 400))
    })
    .with_size(CustomSize::Fixed {
        width: 500,
        height: 400,
    });
    let plan = pipeline(vec![Augment::Custom(larger)]).compile().unwrap();
    let mut out = vec![0u8; 500 * 400 * 3];
    let photo = tensorprep_tests::read("sample.jpg");
    let mut state = TrainState::with_decode_budget(2_000_000);
    let err = plan
        .run(&mut state, key, &photo, TensorMut::U8(&mut out))
        .unwrap_err();
    assert!(
        matches!(
            err,
            tensorprep::Error::OverBudget {
                bytes: 2_400_000,
                limit: 2_000_000
            }
        ),
        "{err}"
    );
    let mut state = TrainState::with_decode_budget(3_000_000);
    plan.run(&mut state, key, &photo, TensorMut::U8(&mut out))
        .unwrap();
    assert!(out.iter().all(|&v| v == 7));
}

/// A pipeline holding a custom op cannot be saved: the check names it;
/// describers print `Lambda(name)`.
#[test]
fn a_custom_op_cannot_be_saved() {
    let p = pipeline(vec![
        crop(),
        Augment::RandomChoice(tensorprep::train::RandomChoice::new(
            vec![],
            vec![Augment::random_invert(1.0), Augment::Custom(invert())],
        )),
    ]);
    let err = p.check_saveable().unwrap_err();
    assert_eq!(&*err.op, "invert");
    assert!(
        err.to_string()
            .starts_with("Lambda(invert) runs the caller's own code")
    );
    assert!(pipeline(vec![crop()]).check_saveable().is_ok());
    assert_eq!(p.custom_ops().len(), 1);
    assert_eq!(Augment::Custom(invert()).to_string(), "Lambda(invert)");
    // Clones of one op are equal, another op of the same name is not.
    let op = invert();
    assert_eq!(Augment::Custom(op.clone()), Augment::Custom(op));
    assert_ne!(Augment::Custom(invert()), Augment::Custom(invert()));
}
