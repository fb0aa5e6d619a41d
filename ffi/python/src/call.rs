//! Transforms as callables, as torchvision users call theirs:
//! `augment(image, target)` and `pipeline(image, target)` draw once with a
//! key (a seed) and run on one image. The Python side
//! (`tensorprep._call`) converts PIL images and target kinds; this runs the
//! transform as the loader would, on sample 0 of epoch 0 under the seed.

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tensorprep::pipeline::{Decode, Input, Op};
use tensorprep::train::{SampleKey, TrainPipeline, TrainState};
use tensorprep::{ImageView, Limits, PixelFormat};

use crate::arrays::OutArray;
use crate::train::{PyAugment, PyTrainPipeline};
use crate::{errors, names};

/// The pipeline a callable runs: an augmentation alone gives back uint8
/// `(H, W, 3)` pixels, a pipeline its tensor.
fn pipeline_of(transform: &Bound<'_, PyAny>) -> PyResult<TrainPipeline> {
    if let Ok(a) = transform.cast::<PyAugment>() {
        let decode = Decode::exact(names::decoder_or_default(None)?);
        let finish = Op::RGB_U8_HWC;
        return Ok(TrainPipeline::new(decode, vec![a.get().0.clone()], finish));
    }
    if let Ok(p) = transform.cast::<PyTrainPipeline>() {
        return Ok(p.get().pipeline.clone());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "a tensorprep transform (Augment or Pipeline); given {}",
        transform.get_type()
    )))
}

/// Runs `transform` on `image` (uint8 `(H, W, 3)`, RGB) and `target` (a
/// target dict) with the draws of key `seed`; returns the output array and
/// the moved target.
#[pyfunction]
#[pyo3(name = "_transform", signature = (transform, image, target, seed))]
pub(crate) fn transform<'py>(
    py: Python<'py>,
    transform: &Bound<'py, PyAny>,
    image: &Bound<'py, PyAny>,
    target: Option<&Bound<'py, PyDict>>,
    seed: u64,
) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyDict>>)> {
    let pipeline = pipeline_of(transform)?;
    if target.is_some() {
        pipeline.check_targets().map_err(|e| errors::core(&e))?;
    }
    let plan = pipeline.compile().map_err(|e| errors::core(&e))?;
    let numpy = py.import("numpy")?;
    let array = numpy
        .call_method1("ascontiguousarray", (image,))?
        .cast_into::<PyArrayDyn<u8>>()
        .map_err(|_| {
            errors::input("a transform takes a uint8 RGB image (H, W, 3) or a PIL image")
        })?;
    let shape = array.shape().to_vec();
    let [h, w, 3] = shape[..] else {
        return Err(errors::input(format!(
            "a transform takes an RGB image (H, W, 3); given shape {shape:?} \
             (convert a gray PIL image with convert(\"RGB\"))"
        )));
    };
    let readonly = array
        .try_readonly()
        .map_err(|e| errors::input(e.to_string()))?;
    let data = readonly
        .as_slice()
        .map_err(|e| errors::input(e.to_string()))?;
    let dim = |n: usize| u32::try_from(n).map_err(|_| errors::input("the image is too large"));
    let view =
        ImageView::new(PixelFormat::Rgb8, dim(w)?, dim(h)?, data).map_err(|e| errors::core(&e))?;
    let mut target = target
        .map(|d| {
            crate::targets::from_dict(d, || Ok((view.height(), view.width())))
                .map_err(|e| errors::value(format!("target: {e}")))
        })
        .transpose()?;
    if let Some(c) = target
        .as_ref()
        .and_then(|t| t.canvas_other_than(view.width(), view.height()))
    {
        return Err(errors::value(format!(
            "target: canvas_size ({}, {}) is not the image's size ({h}, {w})",
            c.height, c.width
        )));
    }
    let core = |e: tensorprep::Error| errors::core(&e);
    let mut state = TrainState::new();
    let key = SampleKey::new(seed, 0, 0);
    // The output's size: the drawn ops' (drawn again, identically, by the run).
    let drawn = match target.clone() {
        Some(mut probe) => plan.draw_with_target(&mut state, key, Input::Pixels(view), &mut probe),
        None => plan.draw_input(&mut state, key, Input::Pixels(view)),
    }
    .map_err(core)?;
    let mut size = (view.width(), view.height());
    for d in drawn {
        size = d.output_size(size).map_err(core)?;
    }
    let len = 3 * size.0 as usize * size.1 as usize;
    let bytes = len as u64 * plan.dtype().size() as u64;
    Limits::DEFAULT.check_alloc(bytes).map_err(core)?;
    let (out, mut elements) = OutArray::new(py, plan.dtype(), &[len])?;
    let shape = plan
        .run_input_any_size_with_target(
            &mut state,
            key,
            Input::Pixels(view),
            target.as_mut(),
            elements.tensor()?,
        )
        .map_err(core)?;
    drop(elements);
    let out = out.call_method1("reshape", (shape.to_vec(),))?;
    let target = target
        .map(|t| crate::targets::to_dict(py, &t))
        .transpose()?;
    Ok((out, target))
}

/// `__call__` of a transform: hands over to `tensorprep._call.call`, which
/// converts the image and target kinds and calls [`transform`].
pub(crate) fn from_python<'py>(
    transform: &Bound<'py, PyAny>,
    image: &Bound<'py, PyAny>,
    target: Option<&Bound<'py, PyAny>>,
    seed: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = transform.py();
    py.import("tensorprep._call")?
        .call_method1("call", (transform, image, target, seed))
}
