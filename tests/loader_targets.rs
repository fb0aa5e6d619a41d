//! The loader with detection targets: each sample's boxes, labels and masks
//! move with its image through the `ssd` recipe, the same for any worker
//! count and after a resume, equal to the sample run alone; batches collate
//! them in the three layouts; every detection preset gives the same batches
//! for 1 and 3 workers and after a resume.

use std::sync::Arc;

use tensorprep::targets::{BoundingBoxes, BoxFormat, Canvas, Masks, Target};
use tensorprep::train::data::{DataError, Dataset, Sample};
use tensorprep::train::{LoadError, Loader, LoaderConfig, SampleKey, TrainPipeline, TrainState};
use tensorprep::{Tensor, TensorMut};

/// The photos, their sizes (width, height).
fn photos() -> Vec<(Vec<u8>, (u32, u32))> {
    vec![
        (tensorprep_tests::read("sample.jpg"), (451, 300)),
        (tensorprep_tests::read("sklearn_china.jpg"), (640, 427)),
    ]
}

/// Sample `i`'s target on a `w` x `h` photo: 1 to 5 boxes (XYWH, as COCO
/// gives them) with labels and masks.
fn target(i: usize, (w, h): (u32, u32)) -> Target {
    let n = 1 + i % 5;
    let canvas = Canvas::new(h, w).unwrap();
    let boxes: Vec<[f32; 4]> = (0..n)
        .map(|k| {
            let (x, y) = ((37 * (i + k) % 400) as f32, (23 * (i + 2 * k) % 250) as f32);
            [
                x,
                y,
                20.0 + (k * 13 % 60) as f32,
                15.0 + (i * 7 % 40) as f32,
            ]
        })
        .collect();
    let mut masks = vec![0u8; n * (w * h) as usize];
    for (k, m) in masks.chunks_exact_mut((w * h) as usize).enumerate() {
        let [x, y, bw, bh] = boxes[k];
        for yy in y as usize..((y + bh) as usize).min(h as usize) {
            for xx in x as usize..((x + bw) as usize).min(w as usize) {
                m[yy * w as usize + xx] = 1;
            }
        }
    }
    let mut t = Target::default();
    t.image_id = Some(i as i64);
    t.boxes = Some(BoundingBoxes::new(boxes, BoxFormat::Xywh, canvas));
    t.labels = (0..n as i64).map(|k| 1 + (i as i64 + k) % 80).collect();
    t.masks = Some(Masks::new(masks, n, canvas).unwrap());
    t
}

fn dataset(len: usize) -> Arc<dyn Dataset> {
    let photos = photos();
    Arc::new((len, move |i: usize, s: &mut Sample| {
        let (bytes, size) = &photos[i % photos.len()];
        s.bytes.clear();
        s.bytes.extend_from_slice(bytes);
        s.labels.clear();
        s.id = i as u64;
        s.target = Some(Box::new(target(i, *size)));
        Ok::<(), DataError>(())
    }))
}

const MAX: [usize; 3] = [641, 960, 3];

fn config(workers: usize) -> LoaderConfig {
    let mut c = LoaderConfig::new(4, workers, 9);
    c.max_shape = Some(MAX);
    c
}

/// One batch as comparable values: its indices, tensor bytes, and each
/// sample's target.
type Seen = (Vec<u64>, Vec<u8>, Vec<Option<Target>>);

fn seen(loader: &mut Loader) -> Vec<Seen> {
    loader
        .by_ref()
        .map(|b| {
            let b = b.unwrap();
            let Tensor::U8(t) = b.tensor() else {
                unreachable!("an 8-bit plan")
            };
            (
                b.indices().to_vec(),
                t.clone(),
                b.targets().map(|t| t.cloned()).collect(),
            )
        })
        .collect()
}

#[test]
fn targets_move_with_their_images_for_any_worker_count_and_after_resume() {
    let whole =
        seen(&mut Loader::new(dataset(18), tensorprep_tests::small_ssd_plan(), config(1)).unwrap());
    assert_eq!(whole.len(), 5);
    let three =
        seen(&mut Loader::new(dataset(18), tensorprep_tests::small_ssd_plan(), config(3)).unwrap());
    assert!(three == whole, "3 workers: other batches than 1");
    // Resume after two batches with 2 workers: the rest, exactly.
    let mut loader =
        Loader::new(dataset(18), tensorprep_tests::small_ssd_plan(), config(3)).unwrap();
    for _ in 0..2 {
        drop(loader.next().unwrap().unwrap());
    }
    let state = loader.state();
    drop(loader);
    let mut resumed = Loader::resume(
        dataset(18),
        tensorprep_tests::small_ssd_plan(),
        config(2),
        state,
    )
    .unwrap();
    assert!(seen(&mut resumed) == whole[2..], "resumed: other batches");
    // Each sample's target is the one its run alone gives.
    let photos = photos();
    let plan = tensorprep_tests::small_ssd_plan();
    let mut moved_some = 0;
    for (indices, _, targets) in &whole {
        for (i, t) in indices.iter().zip(targets) {
            let (bytes, size) = &photos[*i as usize % 2];
            let mut alone = target(*i as usize, *size);
            let mut out = vec![0u8; MAX.iter().product()];
            plan.run_input_any_size_with_target(
                &mut TrainState::new(),
                SampleKey::new(9, 0, *i),
                tensorprep::pipeline::Input::Encoded(bytes),
                Some(&mut alone),
                TensorMut::U8(&mut out),
            )
            .unwrap();
            let t = t.as_ref().expect("every sample has a target");
            assert_eq!(t, &alone, "sample {i}");
            // The recipe's end: XYXY boxes, sanitized, masks in step.
            let b = t.boxes.as_ref().unwrap();
            assert_eq!(b.format(), BoxFormat::Xyxy);
            assert_eq!(t.labels.len(), b.len());
            assert_eq!(t.masks.as_ref().unwrap().count(), b.len());
            moved_some += usize::from(b.canvas() != Canvas::new(size.1, size.0).unwrap());
        }
    }
    assert!(moved_some > 5, "{moved_some}");
}

#[test]
fn batches_collate_boxes_in_three_layouts() {
    let mut loader =
        Loader::new(dataset(8), tensorprep_tests::small_ssd_plan(), config(2)).unwrap();
    let batch = loader.next().unwrap().unwrap();
    let targets: Vec<&Target> = batch.targets().map(Option::unwrap).collect();
    let counts: Vec<usize> = targets
        .iter()
        .map(|t| t.boxes.as_ref().unwrap().len())
        .collect();
    let total: usize = counts.iter().sum();
    // Padded to the largest count: boxes then zeros, labels then -1.
    let padded = batch.padded_boxes(None).unwrap();
    let room = *counts.iter().max().unwrap();
    assert_eq!(padded.room, room);
    assert_eq!(padded.boxes.len(), 4 * room * 4);
    for (s, t) in targets.iter().enumerate() {
        let b = t.boxes.as_ref().unwrap().boxes();
        assert_eq!(padded.counts[s] as usize, b.len());
        for k in 0..room {
            let at = s * room + k;
            let got = &padded.boxes[at * 4..at * 4 + 4];
            if k < b.len() {
                assert_eq!(got, b[k]);
                assert_eq!(padded.labels[at], t.labels[k]);
            } else {
                assert_eq!(got, [0.0; 4]);
                assert_eq!(padded.labels[at], -1);
            }
        }
    }
    // Too little room is an error naming the sample, never a cut; a room
    // past the allocation cap is refused before anything is allocated.
    if room > 0 {
        let e = batch.padded_boxes(Some(room - 1)).unwrap_err();
        assert!(matches!(e, LoadError::TooManyBoxes { .. }), "{e}");
    }
    for huge in [usize::MAX / 4, 1 << 40] {
        let e = batch.padded_boxes(Some(huge)).unwrap_err();
        assert!(matches!(e, LoadError::OutOfMemory(_)), "{e}");
    }
    // Flat with batch indices, and ragged with offsets: the same boxes.
    let flat = batch.flat_boxes();
    let ragged = batch.ragged_boxes();
    assert_eq!(flat.labels.len(), total);
    assert_eq!(ragged.offsets.len(), 5);
    assert_eq!(*ragged.offsets.last().unwrap() as usize, total);
    assert_eq!(flat.boxes, ragged.boxes);
    assert_eq!(flat.labels, ragged.labels);
    for (s, w) in ragged.offsets.windows(2).enumerate() {
        let (a, b) = (w[0] as usize, w[1] as usize);
        assert!(flat.batch_index[a..b].iter().all(|i| *i == s as i64));
        assert_eq!(b - a, counts[s]);
    }
}

/// A COCO-format folder (12 photos, boxes and polygon masks) through the
/// `ssd` recipe, with masks decoded as pixels and kept as polygons: one
/// checksum of every batch's pixels and targets for 1 and 3 workers, and
/// after a resume; the two kinds of masks on the same canvases, close.
#[test]
fn a_coco_folder_through_the_ssd_recipe_gives_one_checksum() {
    use tensorprep::train::data::coco::{Categories, Coco, CocoOptions, MaskMode};
    let root = std::env::temp_dir().join(format!("tp-coco-loader-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let images = root.join("images");
    std::fs::create_dir_all(&images).unwrap();
    let mut entries = vec![];
    let mut annotations = vec![];
    for (i, (bytes, (w, h))) in photos().into_iter().cycle().take(12).enumerate() {
        let name = format!("{i:03}.jpg");
        std::fs::write(images.join(&name), &bytes).unwrap();
        entries
            .push(serde_json::json!({"id": 100 + i, "file_name": name, "width": w, "height": h}));
        for k in 0..(1 + i % 4) {
            let (x, y) = (
                (30 * (i + k) % 300) as f64 + 0.5,
                (17 * (i + 3 * k) % 200) as f64,
            );
            let (bw, bh) = (40.0 + (k * 11) as f64, 30.0 + (i * 5 % 50) as f64);
            let category = [3, 7, 11][k % 3];
            annotations.push(serde_json::json!({
                "id": 1000 + 10 * i + k, "image_id": 100 + i, "category_id": category,
                "bbox": [x, y, bw, bh], "area": bw * bh, "iscrowd": 0,
                "segmentation": [[x, y, x + bw, y, x + bw / 2.0, y + bh]],
            }));
        }
    }
    let json = serde_json::json!({
        "images": entries,
        "annotations": annotations,
        "categories": [{"id": 3, "name": "a"}, {"id": 7, "name": "b"}, {"id": 11, "name": "c"}],
    });
    let ann = root.join("instances.json");
    std::fs::write(&ann, serde_json::to_vec(&json).unwrap()).unwrap();
    let open_as = |masks: MaskMode| -> Arc<dyn Dataset> {
        let options = CocoOptions {
            masks,
            categories: Categories::ContiguousFrom1,
            ..CocoOptions::default()
        };
        Arc::new(Coco::open(&images, &ann, options).unwrap())
    };
    let checksum = |batches: &[Seen]| {
        let mut h = tensorprep::Fnv1a64::new();
        for (indices, pixels, targets) in batches {
            for i in indices {
                h.update(&i.to_le_bytes());
            }
            h.update(pixels);
            for t in targets.iter().flatten() {
                let b = t.boxes.as_ref().unwrap();
                for v in b.boxes().iter().flatten() {
                    h.update(&v.to_bits().to_le_bytes());
                }
                for l in &t.labels {
                    h.update(&l.to_le_bytes());
                }
                h.update(t.masks.as_ref().unwrap().data());
            }
        }
        h.finish()
    };
    let mut runs = vec![];
    for mode in [MaskMode::Pixels, MaskMode::Polygons] {
        let open = || open_as(mode);
        let one =
            seen(&mut Loader::new(open(), tensorprep_tests::small_ssd_plan(), config(1)).unwrap());
        let three =
            seen(&mut Loader::new(open(), tensorprep_tests::small_ssd_plan(), config(3)).unwrap());
        assert_eq!(one.len(), 3);
        assert_eq!(checksum(&one), checksum(&three), "{mode:?}");
        // Stopped after one batch, resumed with 2 workers: the same epoch.
        let mut loader =
            Loader::new(open(), tensorprep_tests::small_ssd_plan(), config(3)).unwrap();
        drop(loader.next().unwrap().unwrap());
        let state = loader.state();
        drop(loader);
        let mut resumed = one[..1].to_vec();
        resumed.extend(seen(
            &mut Loader::resume(open(), tensorprep_tests::small_ssd_plan(), config(2), state)
                .unwrap(),
        ));
        assert_eq!(checksum(&resumed), checksum(&one), "{mode:?}");
        runs.push(one);
    }
    // The same boxes and pixels either way; masks from the polygons (all
    // rasterised, none left as polygons) on the same canvases, and close
    // to the masks moved as pixels.
    let (pixels, polygons) = (&runs[0], &runs[1]);
    let (mut both, mut either, mut masks) = (0usize, 0usize, 0usize);
    for ((_, a, ta), (_, b, tb)) in pixels.iter().zip(polygons) {
        assert_eq!(a, b);
        for (ta, tb) in ta.iter().flatten().zip(tb.iter().flatten()) {
            assert_eq!(ta.boxes, tb.boxes);
            assert!(tb.polygons.is_none());
            let (ma, mb) = (ta.masks.as_ref().unwrap(), tb.masks.as_ref().unwrap());
            assert_eq!((ma.count(), ma.canvas()), (mb.count(), mb.canvas()));
            masks += ma.count();
            for (x, y) in ma.data().iter().zip(mb.data()) {
                both += usize::from(*x == 1 && *y == 1);
                either += usize::from(*x == 1 || *y == 1);
            }
        }
    }
    assert!(masks > 0);
    let iou = both as f64 / either as f64;
    assert!(iou > 0.9, "{iou}");
    std::fs::remove_dir_all(&root).unwrap();
}

/// Images zipped with a dataset of targets: the sample takes the target of
/// whichever gives one; both giving one is an error naming the sample.
#[test]
fn a_zip_carries_the_target_of_the_dataset_that_gives_one() {
    use tensorprep::train::data::combine::Zip;
    let images: Arc<dyn Dataset> = tensorprep_tests::photo_dataset(vec![photos()[0].0.clone()], 3);
    let targets: Arc<dyn Dataset> = Arc::new((3, |i: usize, s: &mut Sample| {
        s.labels.clear();
        s.target = Some(Box::new(target(i, (451, 300))));
        Ok::<(), DataError>(())
    }));
    let zip = Zip::new(Arc::clone(&images), Arc::clone(&targets)).unwrap();
    let mut s = Sample::default();
    zip.read(2, &mut s).unwrap();
    assert_eq!(s.target.as_deref(), Some(&target(2, (451, 300))));
    assert_eq!(s.labels, [2.0]);
    let both = Zip::new(Arc::clone(&targets), targets).unwrap();
    let e = both.read(1, &mut Sample::default()).unwrap_err();
    assert!(e.to_string().contains("both zipped datasets"), "{e}");
}

/// Every detection preset, as shipped (float output, its own sizes): over
/// the COCO sample folder (two photos, four times each; masks decoded as
/// pixels, and kept as polygons), the same batches for 1 and 3 workers,
/// and after a stop and a resume with 2.
#[test]
fn every_detection_recipe_gives_the_same_batches_for_any_worker_count_and_after_resume() {
    use tensorprep::train::data::coco::{Coco, CocoOptions, MaskMode};
    use tensorprep::train::data::combine::Concat;
    let root = tensorprep_tests::fixture("coco/sample");
    let open_as = |masks: MaskMode| -> Arc<dyn Dataset> {
        let options = CocoOptions {
            masks,
            ..CocoOptions::default()
        };
        let coco: Arc<dyn Dataset> = Arc::new(
            Coco::open(root.join("images"), root.join("instances.json"), options).unwrap(),
        );
        Arc::new(Concat::new(vec![coco.clone(), coco.clone(), coco.clone(), coco]).unwrap())
    };
    // Each batch: indices, the tensor's bits, each target's boxes, labels and masks.
    let run = |loader: &mut Loader| -> Vec<(Vec<u64>, u64)> {
        loader
            .by_ref()
            .map(|b| {
                let b = b.unwrap();
                let mut h = tensorprep::Fnv1a64::new();
                h.update_elements(b.tensor(), 0, b.tensor().len());
                for t in b.targets().flatten() {
                    let boxes = t.boxes.as_ref().unwrap();
                    for v in boxes.boxes().iter().flatten() {
                        h.update(&v.to_bits().to_le_bytes());
                    }
                    for l in &t.labels {
                        h.update(&l.to_le_bytes());
                    }
                    h.update(t.masks.as_ref().unwrap().data());
                }
                (b.indices().to_vec(), h.finish())
            })
            .collect()
    };
    for (name, mode) in [
        "detection-hflip",
        "detection-lsj",
        "detection-multiscale",
        "detection-ssd",
        "detection-ssdlite",
    ]
    .into_iter()
    .flat_map(|name| [(name, MaskMode::Pixels), (name, MaskMode::Polygons)])
    {
        let open = || open_as(mode);
        let plan = Arc::new(TrainPipeline::preset(name).unwrap().compile().unwrap());
        let config = |workers: usize| {
            let mut c = LoaderConfig::new(2, workers, 5);
            c.max_shape = Some([3, 1333, 1333]);
            c.epochs = Some(1);
            c
        };
        let one = run(&mut Loader::new(open(), Arc::clone(&plan), config(1)).unwrap());
        assert_eq!(one.len(), 4, "{name}");
        let three = run(&mut Loader::new(open(), Arc::clone(&plan), config(3)).unwrap());
        assert_eq!(one, three, "{name} {mode:?}: 1 and 3 workers");
        let mut loader = Loader::new(open(), Arc::clone(&plan), config(3)).unwrap();
        drop(loader.next().unwrap().unwrap());
        let state = loader.state();
        drop(loader);
        let mut resumed = one[..1].to_vec();
        resumed.extend(run(&mut Loader::resume(
            open(),
            Arc::clone(&plan),
            config(2),
            state,
        )
        .unwrap()));
        assert_eq!(one, resumed, "{name} {mode:?}: after a resume");
    }
}
