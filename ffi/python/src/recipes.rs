//! How pipelines and augmentations pickle: each remembers the call that
//! made it (a recipe: `functools.partial(constructor, *args, **kwargs)`)
//! and pickles as that call, rebuilding an equal object. A user function in
//! a call (a `Lambda`'s) pickles by pickle's own rule or raises pickle's
//! error. The loader keeps no Python objects in its state, so it gives a
//! changed pipeline back with the recipe of the Python pipeline it was set
//! from ([`Recipes`]).

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use tensorprep::train::TrainPipeline;

use crate::train::PyTrainPipeline;

/// A zero-argument callable rebuilding an object.
pub(crate) type Recipe = Arc<Py<PyAny>>;

/// The recipe `make(*args, **kwargs)`.
pub(crate) fn recipe<'py>(
    make: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Recipe> {
    let py = make.py();
    let mut all = vec![make.clone()];
    all.extend(args.iter());
    let partial = py.import("functools")?.getattr("partial")?;
    Ok(Arc::new(
        partial.call(PyTuple::new(py, all)?, kwargs)?.unbind(),
    ))
}

/// The items of an iterable (read once) as a tuple, for a recipe.
pub(crate) fn tuple<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(items.py(), items.try_iter()?.collect::<PyResult<Vec<_>>>()?)
}

/// `__reduce__`'s answer: call the recipe with no arguments; `what` names
/// an object without one in the error.
pub(crate) fn reduce<'py>(
    py: Python<'py>,
    recipe: Option<&Recipe>,
    what: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
    let recipe = recipe.ok_or_else(|| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "cannot pickle {what}: it was not made by a tensorprep.train constructor"
        ))
    })?;
    Ok((recipe.bind(py).clone(), PyTuple::empty(py)))
}

/// The Python pipelines a loader was given (by callbacks' `set_pipeline`
/// or in a loaded state), so that `state_dict` gives each changed pipeline
/// back with its recipe: the Rust loader keeps the pipelines only. One entry
/// per different pipeline.
#[derive(Default)]
pub(crate) struct Recipes(Mutex<Vec<PyTrainPipeline>>);

impl Recipes {
    /// Keeps `pipeline`'s recipe (the first of equal pipelines stays).
    pub(crate) fn remember(&self, pipeline: &PyTrainPipeline) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !known.iter().any(|k| k.pipeline == pipeline.pipeline) {
            known.push(pipeline.clone());
        }
    }

    /// `pipeline` as a Python pipeline, with the recipe of an equal one given.
    pub(crate) fn python(&self, pipeline: &TrainPipeline) -> PyTrainPipeline {
        let known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let recipe = known
            .iter()
            .find(|k| k.pipeline == *pipeline)
            .and_then(|k| k.recipe.clone());
        PyTrainPipeline {
            pipeline: pipeline.clone(),
            recipe,
        }
    }
}
