//! `tensorprep._native`: the extension module of the Python package (the
//! Python code beside it, `python/tensorprep`, wraps it). Plans, graphs and
//! the training loader, with numpy arrays in and out and the GIL released
//! while images are decoded and transformed.

mod arrays;
mod builtin;
mod call;
mod celeba;
mod detection;
mod dlpack;
mod errors;
mod from_iterable;
mod from_python;
mod functional;
mod geometry;
mod graph;
mod input;
mod lambda;
mod loader;
mod mindrecord;
mod mix;
mod names;
mod plan;
mod preview;
mod recipes;
mod remote;
mod resize;
mod shards;
mod targets;
mod train;
mod user_code;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", tensorprep::VERSION)?;
    m.add("decoders", names::available_decoders())?;
    errors::register(m)?;
    m.add_class::<graph::PyGraph>()?;
    m.add_class::<graph::SelfTestReport>()?;
    m.add_class::<plan::PyPlan>()?;
    m.add_class::<geometry::PyGeometry>()?;
    m.add_function(wrap_pyfunction!(resize::resize_float, m)?)?;
    train::register(m)?;
    builtin::register(m)?;
    loader::register(m)?;
    m.add_function(wrap_pyfunction!(mindrecord::mindrecord, m)?)?;
    mix::register(m)?;
    m.add_function(wrap_pyfunction!(from_python::from_python, m)?)?;
    m.add_function(wrap_pyfunction!(lambda::lambda, m)?)?;
    m.add_function(wrap_pyfunction!(from_python::sample_content, m)?)?;
    m.add_function(wrap_pyfunction!(from_iterable::from_iterable, m)?)?;
    m.add_function(wrap_pyfunction!(preview::preview, m)?)?;
    m.add_function(wrap_pyfunction!(functional::functional, m)?)?;
    m.add_function(wrap_pyfunction!(call::transform, m)?)?;
    m.add_function(wrap_pyfunction!(preview::preview_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(celeba::celeba, m)?)?;
    detection::register(m)?;
    m.add_function(wrap_pyfunction!(shards::tfrecord_files, m)?)?;
    m.add_function(wrap_pyfunction!(shards::recordio_files, m)?)?;
    m.add_function(wrap_pyfunction!(remote::remote_stats, m)?)?;
    m.add_function(wrap_pyfunction!(remote::set_read_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(remote::set_cache, m)?)?;
    Ok(())
}
