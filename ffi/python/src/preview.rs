//! `tensorprep.train.preview`: the library's preview grid (`train::Preview`)
//! as a numpy image, written as PNG on request.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tensorprep::train::{Preview, PreviewError};

use crate::errors;
use crate::train::{PyDataset, PyTrainPipeline};

/// A preview error as its family's exception: a sample's read or decode
/// error as the loader raises it, arguments as `ValueError`.
fn raise(e: &PreviewError) -> PyErr {
    let message = tensorprep::error::report(e);
    match e {
        PreviewError::Read { .. } => errors::DataError::new_err(message),
        PreviewError::Run { source, .. } | PreviewError::Plan(source) => {
            let class = errors::core(source);
            Python::attach(|py| PyErr::from_type(class.get_type(py), message))
        }
        _ => errors::value(message),
    }
}

/// The preview's defaults (`tensorprep::train::Preview::default()`'s):
/// `samples`, `columns` (0: up to four per row), `seed`, `epoch`.
#[pyfunction]
pub(crate) fn preview_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let p = Preview::default();
    let d = PyDict::new(py);
    d.set_item("samples", p.samples)?;
    d.set_item("columns", p.columns)?;
    d.set_item("seed", p.seed)?;
    d.set_item("epoch", p.epoch)?;
    Ok(d)
}

/// A tile's place in the grid: `(x, y, width, height)`.
type Tile = (usize, usize, usize, usize);

/// The grid of `pipeline`'s first `samples` samples of `dataset` in epoch
/// `epoch` under `seed` (the loader's order and draws), `columns` tiles
/// per row (0: up to four): `(image, tiles)`, the image height x width x 3
/// uint8, each tile `(x, y, width, height)`. `out`: a PNG file to write too.
#[pyfunction]
#[pyo3(signature = (dataset, pipeline, *, samples, columns, seed, epoch, out=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn preview<'py>(
    py: Python<'py>,
    dataset: &PyDataset,
    pipeline: &PyTrainPipeline,
    samples: usize,
    columns: usize,
    seed: u64,
    epoch: u32,
    out: Option<PathBuf>,
) -> PyResult<(Bound<'py, PyAny>, Vec<Tile>)> {
    let mut preview = Preview::new(samples);
    preview.columns = columns;
    preview.seed = seed;
    preview.epoch = epoch;
    let data = dataset.dataset();
    let pipeline = pipeline.pipeline.clone();
    let grid = py
        .detach(|| preview.render(&pipeline, data.as_ref()))
        .map_err(|e| raise(&e))?;
    if let Some(path) = out {
        let written = std::fs::File::create(&path).and_then(|f| {
            use std::io::Write;
            let mut w = std::io::BufWriter::new(f);
            grid.write_png(&mut w)?;
            w.flush()
        });
        written.map_err(|e| errors::io(e.kind(), format!("{}: {e}", path.display())))?;
    }
    let tiles = grid
        .tiles
        .iter()
        .map(|t| (t[0], t[1], t[2], t[3]))
        .collect();
    let image = numpy::PyArray1::from_vec(py, grid.rgb);
    let image = numpy::PyArrayMethods::reshape(&image, [grid.height, grid.width, 3])?;
    Ok((image.into_any(), tiles))
}
