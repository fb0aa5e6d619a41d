//! The augmentations' parameter draws follow torchvision's distributions:
//! for each op, enough keyed samples that a wrong range, a wrong
//! log-uniform or a wrong probability fails.

use tensorprep::adjust::Point;
use tensorprep::jpeg::Backend;
use tensorprep::pipeline::{Decode, Op};
use tensorprep::train::{
    Augment, AutoAugmentPolicy, ColorJitter, Drawn, Draws, GaussianBlur, ImageOp, RandomAffine,
    RandomErasing, RandomPerspective, RandomRotation, SampleKey, TrainPipeline, TrainState,
};
use tensorprep::warp::Warp;
use tensorprep_tests::read;

const N: u64 = 20_000;

/// The ops drawn for `N` samples of a pipeline of `augments` on the sample
/// photo (451x300, from its header), one list per sample.
fn draws(augments: Vec<Augment>) -> Vec<Vec<Drawn>> {
    let finish = Op::RGB_U8_HWC;
    let plan = TrainPipeline::new(Decode::exact(Backend::Zune), augments, finish)
        .compile()
        .unwrap();
    let jpeg = read("sample.jpg");
    let mut state = TrainState::new();
    (0..N)
        .map(|i| {
            plan.draw(&mut state, SampleKey::new(11, 0, i), &jpeg)
                .unwrap()
                .to_vec()
        })
        .collect()
}

/// Mean and variance.
fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (mean, v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n)
}

/// A uniform sample on `lo..hi`: its bounds, mean and variance within 5
/// standard errors.
fn assert_uniform(v: &[f64], lo: f64, hi: f64, what: &str) {
    let (mean, var) = moments(v);
    let n = v.len() as f64;
    let (want_mean, want_var) = ((lo + hi) / 2.0, (hi - lo).powi(2) / 12.0);
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(
        min >= lo - 1e-6 && max <= hi + 1e-6,
        "{what}: {min}..{max} outside {lo}..{hi}"
    );
    assert!(
        min < lo + (hi - lo) * 0.01 && max > hi - (hi - lo) * 0.01,
        "{what}: {min}..{max} does not reach the ends"
    );
    assert!(
        (mean - want_mean).abs() < 5.0 * (want_var / n).sqrt(),
        "{what}: mean {mean}, want {want_mean}"
    );
    // The variance of a uniform's squared deviation: (hi-lo)^4 / 180.
    let var_se = ((hi - lo).powi(4) / 180.0 / n).sqrt();
    assert!(
        (var - want_var).abs() < 5.0 * var_se,
        "{what}: variance {var}, want {want_var}"
    );
}

/// A share `k / n` within 5 standard errors of `p`.
fn assert_share(k: usize, n: usize, p: f64, what: &str) {
    let share = k as f64 / n as f64;
    let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
    assert!((share - p).abs() < 5.0 * se, "{what}: {share}, want {p}");
}

/// The rotation angle of Pillow's rotate matrix, in degrees.
fn angle(m: &Warp) -> f64 {
    let Warp::Affine(a) = m else { panic!("{m:?}") };
    let deg = -a[1].atan2(a[0]).to_degrees();
    if deg > 180.0 { deg - 360.0 } else { deg }
}

#[test]
fn rotation_angles_are_uniform() {
    let drawn = draws(vec![Augment::RandomRotation(RandomRotation::new(
        -30.0, 45.0,
    ))]);
    let angles: Vec<f64> = drawn
        .iter()
        .map(|d| match d[..] {
            [Drawn::Image(ImageOp::Warp { matrix, .. })] => angle(&matrix),
            _ => panic!("{d:?}"),
        })
        .collect();
    assert_uniform(&angles, -30.0, 45.0, "RandomRotation angle");
}

#[test]
fn color_jitter_factors_and_orders() {
    let drawn = draws(vec![Augment::ColorJitter(ColorJitter::new(
        0.4, 0.3, 0.2, 0.1,
    ))]);
    let (mut b, mut c, mut s, mut h) = (vec![], vec![], vec![], vec![]);
    let mut first_is = [0usize; 4];
    for d in &drawn {
        assert_eq!(d.len(), 4);
        for (k, op) in d.iter().enumerate() {
            let which = match op {
                Drawn::Image(ImageOp::Point(Point::Brightness { factor })) => {
                    b.push(f64::from(*factor));
                    0
                }
                Drawn::Image(ImageOp::Contrast(f)) => {
                    c.push(f64::from(*f));
                    1
                }
                Drawn::Image(ImageOp::Saturation(f)) => {
                    s.push(f64::from(*f));
                    2
                }
                Drawn::Image(ImageOp::Hue(f)) => {
                    h.push(f64::from(*f));
                    3
                }
                other => panic!("{other:?}"),
            };
            if k == 0 {
                first_is[which] += 1;
            }
        }
    }
    assert_uniform(&b, 0.6, 1.4, "brightness");
    assert_uniform(&c, 0.7, 1.3, "contrast");
    assert_uniform(&s, 0.8, 1.2, "saturation");
    assert_uniform(&h, -0.1, 0.1, "hue");
    for (i, k) in first_is.iter().enumerate() {
        assert_share(*k, drawn.len(), 0.25, &format!("op {i} first"));
    }
}

#[test]
fn blur_sigma_and_probability_ops() {
    let drawn = draws(vec![
        Augment::GaussianBlur(GaussianBlur::new(5, 3)),
        Augment::random_invert(0.3),
    ]);
    let mut sigmas = vec![];
    let mut inverted = 0;
    for d in &drawn {
        for op in d {
            match op {
                Drawn::Image(ImageOp::GaussianBlur { kernel, sigma }) => {
                    assert_eq!(*kernel, (5, 3));
                    sigmas.push(f64::from(*sigma));
                }
                Drawn::Image(ImageOp::Point(Point::Invert)) => inverted += 1,
                other => panic!("{other:?}"),
            }
        }
    }
    assert_uniform(&sigmas, 0.1, 2.0, "GaussianBlur sigma");
    assert_share(inverted, drawn.len(), 0.3, "RandomInvert(0.3)");
}

/// RandomAffine: angle, scale and shear uniform, translation the rounded
/// uniform shift within the fraction of each side.
#[test]
fn affine_parameters() {
    // One draw stream per parameter kind is easiest to read back from a
    // pure shift and a pure scale.
    let mut shift = RandomAffine::new(0.0, 0.0);
    shift.translate = Some((0.2, 0.1));
    let drawn = draws(vec![Augment::RandomAffine(shift)]);
    let (w, h) = (451.0, 300.0);
    let (mut tx, mut ty) = (vec![], vec![]);
    for d in &drawn {
        let [
            Drawn::Image(ImageOp::Warp {
                matrix: Warp::Affine(a),
                ..
            }),
        ] = d[..]
        else {
            panic!()
        };
        // The inverse maps x to x - tx.
        tx.push(-a[2]);
        ty.push(-a[5]);
    }
    for (v, max, what) in [(&tx, 0.2 * w, "tx"), (&ty, 0.1 * h, "ty")] {
        assert!(
            v.iter().all(|t| t.fract() == 0.0 && t.abs() <= max),
            "{what}: whole pixels within {max}"
        );
        let (mean, var) = moments(v);
        let want = (2.0 * max).powi(2) / 12.0;
        assert!(
            mean.abs() < 5.0 * (want / v.len() as f64).sqrt(),
            "{what} mean {mean}"
        );
        assert!(
            (var / want - 1.0).abs() < 0.05,
            "{what} variance {var}, want {want}"
        );
    }
    let mut scale = RandomAffine::new(0.0, 0.0);
    scale.scale = Some((0.8, 1.2));
    let drawn = draws(vec![Augment::RandomAffine(scale)]);
    let scales: Vec<f64> = drawn
        .iter()
        .map(|d| match d[..] {
            [
                Drawn::Image(ImageOp::Warp {
                    matrix: Warp::Affine(a),
                    ..
                }),
            ] => 1.0 / a[0],
            _ => panic!(),
        })
        .collect();
    assert_uniform(&scales, 0.8, 1.2, "RandomAffine scale");
}

/// RandomPerspective: each corner uniform over torchvision's integer ranges
/// (read back through the mapping of the output's corners).
#[test]
fn perspective_corners() {
    let drawn = draws(vec![Augment::RandomPerspective(RandomPerspective::new(
        0.5, 0.7,
    ))]);
    let mut warped = 0;
    let mut top_left_x = vec![];
    for d in &drawn {
        let Some(Drawn::Image(ImageOp::Warp {
            matrix: Warp::Perspective(a),
            ..
        })) = d.first()
        else {
            continue;
        };
        warped += 1;
        // The coefficients send each drawn end point to its start point:
        // the top-left end point is the integer point mapped to (0, 0).
        let map = |x: f64, y: f64| {
            let w = a[6] * x + a[7] * y + 1.0;
            (
                (a[0] * x + a[1] * y + a[2]) / w,
                (a[3] * x + a[4] * y + a[5]) / w,
            )
        };
        let tl = (0..=112)
            .flat_map(|x| (0..=75).map(move |y| (x, y)))
            .find(|&(x, y)| {
                let (sx, sy) = map(f64::from(x), f64::from(y));
                sx.abs() < 1e-3 && sy.abs() < 1e-3
            })
            .expect("top-left end point");
        top_left_x.push(f64::from(tl.0));
        if warped == 2000 {
            break;
        }
    }
    // int(0.5 * (451 // 2)) = 112: tl.x uniform over 0..=112.
    let (mean, _) = moments(&top_left_x);
    assert!(
        (mean - 56.0).abs() < 5.0 * (113f64.powi(2) / 12.0 / 2000.0).sqrt(),
        "tl.x mean {mean}"
    );
    assert!(top_left_x.contains(&0.0) && top_left_x.contains(&112.0));
    let applied = drawn.iter().filter(|d| !d.is_empty()).count();
    assert_share(applied, drawn.len(), 0.7, "RandomPerspective p");
}

/// RandAugment: each of the 14 ops equally often, signs half and half;
/// TrivialAugmentWide: bins uniform; AutoAugment: each op as often as the
/// policy's table says.
#[test]
fn policy_draws() {
    let drawn = draws(vec![Augment::rand_augment(2, 9)]);
    // Identity draws nothing; the rest draw one op each.
    let ops: usize = drawn.iter().map(Vec::len).sum();
    assert_share(
        ops,
        2 * drawn.len(),
        13.0 / 14.0,
        "RandAugment non-identity share",
    );
    let inverted = drawn
        .iter()
        .flatten()
        .filter(|d| matches!(d, Drawn::Image(ImageOp::Equalize)))
        .count();
    assert_share(
        inverted,
        2 * drawn.len(),
        1.0 / 14.0,
        "RandAugment Equalize share",
    );
    let brightness: Vec<f32> = drawn
        .iter()
        .flatten()
        .filter_map(|d| match d {
            Drawn::Image(ImageOp::Point(Point::Brightness { factor })) => Some(*factor),
            _ => None,
        })
        .collect();
    let brighter = brightness.iter().filter(|&&f| f > 1.0).count();
    assert_share(brighter, brightness.len(), 0.5, "RandAugment sign");
    // Bin 9 of 31 over 0..0.9: 0.27.
    assert!(
        brightness
            .iter()
            .all(|f| (f - 1.27).abs() < 1e-6 || (f - 0.73).abs() < 1e-6)
    );

    let drawn = draws(vec![Augment::trivial_augment_wide()]);
    let solarize: Vec<f64> = drawn
        .iter()
        .flatten()
        .filter_map(|d| match d {
            Drawn::Image(ImageOp::Point(Point::Solarize { threshold })) => {
                Some(f64::from(*threshold))
            }
            _ => None,
        })
        .collect();
    assert_share(
        solarize.len(),
        drawn.len(),
        1.0 / 14.0,
        "TrivialAugmentWide Solarize share",
    );
    // Bins uniform over 31: thresholds 255 - 8.5 k, ceiled.
    let (mean, _) = moments(&solarize);
    assert!(
        (mean - 127.5).abs() < 5.0 * (80.0f64.powi(2) / solarize.len() as f64).sqrt(),
        "solarize mean {mean}"
    );

    let drawn = draws(vec![Augment::auto_augment(AutoAugmentPolicy::ImageNet)]);
    // torchvision's ImageNet policy lists Equalize 17 times, with
    // probabilities summing to 11.2 (counted from
    // `AutoAugment(AutoAugmentPolicy.IMAGENET).policies`).
    let table: Vec<f64> = AutoAugmentPolicy::ImageNet
        .subpolicies()
        .iter()
        .flatten()
        .filter(|(op, _, _)| *op == tensorprep::train::PolicyOp::Equalize)
        .map(|(_, p, _)| *p)
        .collect();
    assert_eq!(table.len(), 17);
    assert!((table.iter().sum::<f64>() - 11.2).abs() < 1e-9);
    let per_sample = drawn
        .iter()
        .flatten()
        .filter(|d| matches!(d, Drawn::Image(ImageOp::Equalize)))
        .count() as f64
        / drawn.len() as f64;
    // Each sub-policy drawn with 1/25; its ops with their probabilities.
    let expected = 11.2 / 25.0;
    assert!(
        (per_sample - expected).abs() < 0.02,
        "AutoAugment Equalize per sample {per_sample}, want {expected}"
    );
}

/// RandomErasing: the area share within its range, the aspect ratio
/// log-uniform (its log symmetric about 0 for a symmetric range), the box
/// inside the image.
#[test]
fn erasing_boxes() {
    let e = RandomErasing::new(1.0);
    let (w, h) = (224u32, 224u32);
    let mut log_ratio = vec![];
    let mut share = vec![];
    for i in 0..N {
        let mut d = Draws::new(SampleKey::new(3, 0, i), 0);
        let Some(r) = e.draw_box(&mut d, w, h) else {
            continue;
        };
        assert!(r.x + r.width <= w && r.y + r.height <= h);
        log_ratio.push((f64::from(r.height) / f64::from(r.width)).ln());
        share.push(f64::from(r.width * r.height) / f64::from(w * h));
    }
    assert!(log_ratio.len() as u64 > N * 9 / 10);
    let (mean, _) = moments(&log_ratio);
    // A uniform (not log-uniform) ratio over 0.3..3.3 would give a mean
    // log of about 0.45.
    assert!(mean.abs() < 0.03, "log aspect mean {mean}");
    let (mean_share, _) = moments(&share);
    assert!(
        (mean_share - 0.175).abs() < 0.01,
        "area share mean {mean_share}"
    );
}

/// The keyed Beta draws Mixup makes: mean 1/2 and variance 1 / (4 (2a + 1))
/// for Beta(a, a), at a below and above 1; the same batch key mixes the
/// same way.
#[test]
fn mixup_beta_draws() {
    use tensorprep::train::{BatchShape, MixDraws, MixMode, MixScratch, Mixup};
    for alpha in [0.2, 0.8, 1.0, 2.5] {
        let v: Vec<f64> = (0..N)
            .map(|i| Draws::new(SampleKey::new(1, 0, i), 0).beta(alpha))
            .collect();
        let (mean, var) = moments(&v);
        let want = 1.0 / (4.0 * (2.0 * alpha + 1.0));
        assert!(v.iter().all(|b| (0.0..=1.0).contains(b)));
        assert!(
            (mean - 0.5).abs() < 5.0 * (want / N as f64).sqrt(),
            "Beta({alpha}) mean {mean}"
        );
        assert!(
            (var / want - 1.0).abs() < 0.05,
            "Beta({alpha}) variance {var}, want {want}"
        );
    }
    let mut m = Mixup::new(0.8, 1.0, 10);
    m.mode = MixMode::Elem;
    let shape = BatchShape {
        n: 8,
        channels: 3,
        height: 16,
        width: 16,
        layout: tensorprep::Layout::Hwc,
    };
    let x0: Vec<f32> = (0..8 * 3 * 16 * 16).map(|i| (i % 251) as f32).collect();
    let labels: Vec<f32> = (0..8).map(|i| (i % 10) as f32).collect();
    let run = |batch: u64| {
        let (mut x, mut t) = (x0.clone(), vec![0f32; 80]);
        let mut d = Mixup::batch_draws(4, 1, batch);
        m.apply(
            &mut d,
            &mut x,
            shape,
            &labels,
            &mut t,
            &mut MixScratch::default(),
        )
        .unwrap();
        (x, t)
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3), run(4));
    // Soft targets sum to 1 per row.
    for row in run(3).1.chunks(10) {
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    }
}

/// MindSpore's RandomSelectSubpolicy: a sub-policy drawn uniformly, each of
/// its ops with its own probability.
#[test]
fn select_subpolicy_shares() {
    let drawn = draws(vec![Augment::RandomSelectSubpolicy(
        tensorprep::train::RandomSelectSubpolicy(vec![
            vec![(Augment::random_invert(1.0), 1.0)],
            vec![
                (Augment::random_equalize(1.0), 0.5),
                (Augment::random_grayscale(1.0), 1.0),
            ],
        ]),
    )]);
    let count = |f: fn(&Drawn) -> bool| drawn.iter().flatten().filter(|d| f(d)).count();
    let n = drawn.len();
    assert_share(
        count(|d| matches!(d, Drawn::Image(ImageOp::Point(Point::Invert)))),
        n,
        0.5,
        "first",
    );
    assert_share(
        count(|d| matches!(d, Drawn::Image(ImageOp::Equalize))),
        n,
        0.25,
        "equalize",
    );
    assert_share(
        count(|d| matches!(d, Drawn::Image(ImageOp::Grayscale))),
        n,
        0.5,
        "grayscale",
    );
    assert!(drawn.iter().all(|d| d.len() <= 2));
}

/// AugMix: the original's weight is Beta(alpha, alpha) (uniform for 1),
/// each chain has 1 to 3 ops (equally often), and the weights sum to 1.
#[test]
fn augmix_draws() {
    use tensorprep::train::{AugMix, AugMixStep};
    let drawn = draws(vec![Augment::AugMix(AugMix::new())]);
    let mut originals = vec![];
    let mut depths = [0usize; 4];
    for d in &drawn {
        let Drawn::AugMix(AugMixStep::Start { weight }) = d[0] else {
            panic!("{d:?}")
        };
        assert_eq!(d.last(), Some(&Drawn::AugMix(AugMixStep::End)));
        originals.push(f64::from(weight));
        let mut total = f64::from(weight);
        let mut chains = 0;
        let mut ops = 0;
        for step in &d[1..d.len() - 1] {
            match step {
                Drawn::AugMix(AugMixStep::Chain) => {
                    chains += 1;
                    ops = 0;
                }
                Drawn::AugMix(AugMixStep::Add { weight }) => {
                    total += f64::from(*weight);
                    // Identity-free space: every op draws an image op.
                    depths[ops] += 1;
                }
                Drawn::Image(_) => ops += 1,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(chains, 3);
        assert!((total - 1.0).abs() < 1e-5, "weights sum to {total}");
    }
    assert_uniform(&originals, 0.0, 1.0, "AugMix original weight");
    assert_eq!(depths[0], 0);
    for (k, &count) in depths.iter().enumerate().skip(1) {
        assert_share(count, 3 * drawn.len(), 1.0 / 3.0, &format!("chains of {k}"));
    }
}
