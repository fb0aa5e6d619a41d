//! Batches of images of different sizes (issue 35, §4): each image at the
//! top left of its place, padded bottom and right with zeros to the batch's
//! largest height and width rounded up to `size_divisible`, each image's
//! own size in the batch. The layout equals torchvision's
//! `GeneralizedRCNNTransform.batch_images` (a fixture); the batches are the
//! same for 1 and 3 workers and after a resume; the memory is bounded by
//! `max_shape` and `buffer_limit`, a sample past them an error naming it.

use std::sync::Arc;

use tensorprep::finish::{ChannelOrder, Normalize};
use tensorprep::pipeline::Op;
use tensorprep::train::data::{Content, DataError, Dataset, Sample};
use tensorprep::train::{LoadError, Loader, LoaderConfig, Order, TrainPipeline, TrainPlan};
use tensorprep::{DType, Layout, PixelFormat, Quantization, Tensor};

/// A plan that keeps each image's size (no op): its bytes as float32 0 to
/// 255, laid out as `layout`.
fn raw_plan(layout: Layout) -> Arc<TrainPlan> {
    let mut p = TrainPipeline::imagenet_train();
    p.augments.clear();
    p.finish = Op::finish(
        Normalize::RAW,
        layout,
        ChannelOrder::Rgb,
        DType::F32,
        Quantization::IDENTITY,
    );
    let plan = p.compile().unwrap();
    assert_eq!(plan.output_shape(), None);
    Arc::new(plan)
}

/// The fixture's image `i` of `h` x `w` as 8-bit RGB pixels (row, column,
/// channel): `1 + (37 y + 11 x + 101 c + 13 i) % 250`.
fn pixels(i: usize, (h, w): (usize, usize)) -> Vec<u8> {
    let mut out = Vec::with_capacity(h * w * 3);
    for y in 0..h {
        for x in 0..w {
            for c in 0..3 {
                out.push((1 + (37 * y + 11 * x + 101 * c + 13 * i) % 250) as u8);
            }
        }
    }
    out
}

/// Pixel samples of `sizes` (height, width), sample `i`'s label `i`.
fn sized(sizes: Vec<(usize, usize)>) -> Arc<dyn Dataset> {
    let images: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, s)| pixels(i, *s))
        .collect();
    Arc::new((sizes.len(), move |i: usize, s: &mut Sample| {
        let (h, w) = sizes[i];
        s.bytes.clear();
        s.bytes.extend_from_slice(&images[i]);
        s.content = Content::Pixels {
            width: w as u32,
            height: h as u32,
            format: PixelFormat::Rgb8,
        };
        s.labels.clear();
        s.labels.push(i as f32);
        s.id = i as u64;
        Ok::<(), DataError>(())
    }))
}

fn config(batch: usize, workers: usize, divisible: usize, max: [usize; 3]) -> LoaderConfig {
    let mut c = LoaderConfig::new(batch, workers, 5);
    c.order = Order::Sequential;
    c.max_shape = Some(max);
    c.size_divisible = divisible;
    c
}

fn floats(t: &Tensor) -> &[f32] {
    let Tensor::F32(v) = t else {
        unreachable!("a float32 plan")
    };
    v
}

fn hash(values: &[f32]) -> u64 {
    let mut h = tensorprep::Fnv1a64::new();
    for v in values {
        h.update(&v.to_le_bytes());
    }
    h.finish()
}

/// torchvision's `batch_images` on the same images (fixture made by
/// `fixtures/make_padded_batch.py`): the same batch shape and the same
/// float32 bytes, for 1 and 3 workers; `image_sizes` the images' own.
#[test]
fn batches_are_padded_as_torchvision_batches_images() {
    let text =
        std::fs::read_to_string(tensorprep_tests::fixture("padded_batch/cases.json")).unwrap();
    let fixture: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        let divisible = case["size_divisible"].as_u64().unwrap() as usize;
        let sizes: Vec<(usize, usize)> = case["sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s[0].as_u64().unwrap() as usize,
                    s[1].as_u64().unwrap() as usize,
                )
            })
            .collect();
        let shape: Vec<usize> = case["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let want = u64::from_str_radix(case["fnv1a64"].as_str().unwrap(), 16).unwrap();
        for workers in [1, 3] {
            let c = config(sizes.len(), workers, divisible, [3, 100, 97]);
            let mut loader = Loader::new(sized(sizes.clone()), raw_plan(Layout::Chw), c).unwrap();
            let batch = loader.next().unwrap().unwrap();
            assert_eq!(batch.shape().to_vec(), shape, "{sizes:?} by {divisible}");
            let own: Vec<(usize, usize)> = batch.image_sizes().map(|[h, w]| (h, w)).collect();
            assert_eq!(own, sizes);
            assert_eq!(
                format!("{:016x}", hash(floats(batch.tensor()))),
                format!("{want:016x}"),
                "{sizes:?} by {divisible}, {workers} workers"
            );
        }
    }
}

/// Interleaved (HWC) batches are rounded on their first two dimensions,
/// each image's pixels at its top left, zeros elsewhere; a fixed output
/// size that is not a multiple is padded too.
#[test]
fn interleaved_and_fixed_size_batches_are_rounded_too() {
    let sizes = vec![(45, 70), (61, 33), (17, 97)];
    let mut loader = Loader::new(
        sized(sizes.clone()),
        raw_plan(Layout::Hwc),
        config(3, 2, 32, [100, 97, 3]),
    )
    .unwrap();
    let batch = loader.next().unwrap().unwrap();
    assert_eq!(batch.shape(), [3, 64, 128, 3]);
    let t = floats(batch.tensor());
    for (i, &(h, w)) in sizes.iter().enumerate() {
        let src = pixels(i, (h, w));
        let place = &t[i * 64 * 128 * 3..(i + 1) * 64 * 128 * 3];
        for y in 0..64 {
            for x in 0..128 {
                for c in 0..3 {
                    let got = place[(y * 128 + x) * 3 + c];
                    let want = if y < h && x < w {
                        f32::from(src[(y * w + x) * 3 + c])
                    } else {
                        0.0
                    };
                    assert_eq!(got, want, "image {i} at {y}, {x}, {c}");
                }
            }
        }
    }
    // The pixel mask agrees with the sizes.
    let [n, mh, mw] = batch.pixel_mask_shape();
    let mut mask = vec![9u8; n * mh * mw];
    batch.pixel_mask(&mut mask).unwrap();
    for (i, [h, w]) in batch.image_sizes().enumerate() {
        let ones = mask[i * mh * mw..(i + 1) * mh * mw]
            .iter()
            .filter(|m| **m == 1)
            .count();
        assert_eq!(ones, h * w);
    }
    drop(batch);
    // A fixed 48 x 64 resize: padded to 64 x 64, each image 48 x 64.
    let mut p = TrainPipeline::imagenet_train();
    p.augments[0] = tensorprep::train::Augment::Op(Op::Resize(tensorprep::pipeline::Resize {
        size: tensorprep::size::SizeRule::Exact {
            width: 64,
            height: 48,
        },
        resample: tensorprep::resize::Resample::Pillow(tensorprep::resize::Filter::Bilinear),
    }));
    let plan = Arc::new(p.compile().unwrap());
    let mut c = LoaderConfig::new(3, 2, 5);
    c.size_divisible = 32;
    let batch = Loader::new(sized(sizes), plan, c)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(batch.shape(), [3, 3, 64, 64]);
    assert!(batch.image_sizes().all(|s| s == [48, 64]));
    let t = floats(batch.tensor());
    for i in 0..3 {
        for ch in 0..3 {
            let plane = &t[(i * 3 + ch) * 64 * 64..][..64 * 64];
            assert!(plane[48 * 64..].iter().all(|v| *v == 0.0));
            assert!(plane[..48 * 64].iter().any(|v| *v != 0.0));
        }
    }
}

/// The memory bound: the batch buffers hold `max_shape` rounded up, counted
/// in `buffer_limit` (refused at start past it); a sample past
/// `max_shape` in any dimension (even one with fewer elements) is an error
/// naming it, never cut or padded into its neighbour's place; a
/// `size_divisible` of 0 is refused.
#[test]
fn the_padded_buffers_are_bounded_and_a_sample_past_them_is_named() {
    let plan = raw_plan(Layout::Chw);
    // 3 x 100 x 97 rounded to 3 x 128 x 128 float32: 196608 bytes a slot,
    // 2 slots a batch, 3 batches.
    let mut c = config(2, 1, 32, [3, 100, 97]);
    c.label_width = Some(1);
    c.buffer_limit = 3 * 2 * (3 * 128 * 128 * 4 + 4) - 1;
    let e = Loader::new(sized(vec![(10, 10); 2]), Arc::clone(&plan), c.clone()).unwrap_err();
    assert!(
        matches!(
            e,
            LoadError::OverBudget {
                limit_name: "buffer_limit",
                ..
            }
        ),
        "{e}"
    );
    c.buffer_limit += 1;
    assert!(Loader::new(sized(vec![(10, 10); 2]), Arc::clone(&plan), c.clone()).is_ok());
    // Sample 1 is 20 x 200: 4000 pixels, fewer than 100 x 97, but wider.
    let e = Loader::new(
        sized(vec![(90, 90), (20, 200)]),
        Arc::clone(&plan),
        c.clone(),
    )
    .unwrap()
    .find_map(|b| b.err())
    .unwrap();
    assert!(
        matches!(
            e,
            LoadError::Decode {
                index: 1,
                error: tensorprep::Error::InvalidParameter {
                    name: "max_shape",
                    ..
                },
                ..
            }
        ),
        "{e}"
    );
    c.size_divisible = 0;
    assert!(matches!(
        Loader::new(sized(vec![(10, 10); 2]), plan, c),
        Err(LoadError::Config(_))
    ));
}

/// The two-photo COCO sample (`fixtures/coco/sample`, three times over)
/// through the `multiscale` recipe (RandomShortestSize 480 to 800, at most
/// 1333, flip), padded to multiples of 32: one checksum of the batches'
/// pixels, sizes and boxes for 1 and 3 workers and after a resume, each
/// image where its run alone puts it.
#[test]
fn a_coco_folder_through_multiscale_at_stride_32_gives_one_checksum() {
    use tensorprep::train::data::coco::{Categories, Coco, CocoOptions};
    use tensorprep::train::data::combine::Concat;
    use tensorprep::train::{SampleKey, TrainState};
    let root = tensorprep_tests::fixture("coco/sample");
    let open = || -> Arc<dyn Dataset> {
        let options = CocoOptions {
            categories: Categories::ContiguousFrom1,
            ..CocoOptions::default()
        };
        let coco = Arc::new(
            Coco::open(root.join("images"), root.join("instances.json"), options).unwrap(),
        );
        Arc::new(
            Concat::new([
                Arc::clone(&coco) as Arc<dyn Dataset>,
                Arc::clone(&coco) as Arc<dyn Dataset>,
                coco,
            ])
            .unwrap(),
        )
    };
    let plan = Arc::new(
        TrainPipeline::preset("detection-multiscale")
            .unwrap()
            .compile()
            .unwrap(),
    );
    const MAX: [usize; 3] = [3, 800, 1333];
    let config = |workers| {
        let mut c = LoaderConfig::new(2, workers, 11);
        c.max_shape = Some(MAX);
        c.size_divisible = 32;
        c
    };
    // Each batch: indices, shape, image sizes, pixels, boxes.
    type Seen = (Vec<u64>, [usize; 4], Vec<[usize; 2]>, Vec<f32>, Vec<f32>);
    let seen = |loader: &mut Loader| -> Vec<Seen> {
        loader
            .by_ref()
            .map(|b| {
                let b = b.unwrap();
                let boxes = b.flat_boxes().boxes;
                (
                    b.indices().to_vec(),
                    b.shape(),
                    b.image_sizes().collect(),
                    floats(b.tensor()).to_vec(),
                    boxes,
                )
            })
            .collect()
    };
    let checksum = |batches: &[Seen]| {
        let mut h = tensorprep::Fnv1a64::new();
        for (indices, shape, sizes, pixels, boxes) in batches {
            indices.iter().for_each(|i| h.update(&i.to_le_bytes()));
            shape
                .iter()
                .for_each(|d| h.update(&(*d as u64).to_le_bytes()));
            sizes
                .iter()
                .flatten()
                .for_each(|d| h.update(&(*d as u64).to_le_bytes()));
            h.update_f32(pixels);
            h.update_f32(boxes);
        }
        h.finish()
    };
    let one = seen(&mut Loader::new(open(), Arc::clone(&plan), config(1)).unwrap());
    assert_eq!(one.len(), 3);
    let three = seen(&mut Loader::new(open(), Arc::clone(&plan), config(3)).unwrap());
    assert_eq!(checksum(&three), checksum(&one));
    let mut loader = Loader::new(open(), Arc::clone(&plan), config(3)).unwrap();
    drop(loader.next().unwrap().unwrap());
    let state = loader.state();
    drop(loader);
    let mut resumed = one[..1].to_vec();
    resumed.extend(seen(
        &mut Loader::resume(open(), Arc::clone(&plan), config(2), state).unwrap(),
    ));
    assert_eq!(checksum(&resumed), checksum(&one));
    assert_eq!(checksum(&one), 10242943232230265935, "the pinned checksum");
    // Each batch: multiples of 32 holding its largest image, the images
    // of different sizes, each where its run alone puts it, zeros around.
    let data = open();
    let mut differ = 0;
    for (indices, shape, sizes, pixels, _) in &one {
        let [n, c, bh, bw] = *shape;
        assert_eq!((c, bh % 32, bw % 32), (3, 0, 0));
        assert_eq!(
            bh,
            sizes
                .iter()
                .map(|s| s[0])
                .max()
                .unwrap()
                .next_multiple_of(32)
        );
        assert_eq!(
            bw,
            sizes
                .iter()
                .map(|s| s[1])
                .max()
                .unwrap()
                .next_multiple_of(32)
        );
        differ += usize::from(sizes[0] != sizes[1]);
        for k in 0..n {
            let mut sample = Sample::default();
            data.read(indices[k] as usize, &mut sample).unwrap();
            let mut alone = vec![0f32; MAX.iter().product()];
            let mut target = sample.target.take();
            let own = plan
                .run_input_any_size_with_target(
                    &mut TrainState::new(),
                    SampleKey::new(11, 0, indices[k]),
                    sample.input().unwrap(),
                    target.as_deref_mut(),
                    tensorprep::TensorMut::F32(&mut alone),
                )
                .unwrap();
            let [h, w] = sizes[k];
            assert_eq!(own, [3, h, w]);
            let place = &pixels[k * 3 * bh * bw..(k + 1) * 3 * bh * bw];
            for ch in 0..3 {
                for y in 0..bh {
                    let row = &place[(ch * bh + y) * bw..][..bw];
                    if y < h {
                        assert!(
                            row[..w] == alone[(ch * h + y) * w..][..w],
                            "sample {k} row {y}"
                        );
                        assert!(row[w..].iter().all(|v| *v == 0.0));
                    } else {
                        assert!(row.iter().all(|v| *v == 0.0));
                    }
                }
            }
        }
    }
    assert!(differ > 0, "no batch with images of different sizes");
}
