//! Datasets on object storage and web servers (Cargo feature `remote`):
//! the block and node-cache settings and the request counts, for the
//! Python package (`tensorprep.train.remote_stats`, `set_read_blocks`,
//! `set_cache`). In a build without the feature, the counts are `None` and
//! the settings raise `RuntimeError`.

use pyo3::prelude::*;

#[cfg(not(feature = "remote"))]
fn not_built() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err(
        "built without remote datasets: build the package with the Cargo feature `remote`",
    )
}

/// The requests this process sent to object storage and web servers, and
/// the reads that waited for one (`None`: built without `remote`).
#[pyfunction]
pub(crate) fn remote_stats() -> Option<(u64, u64)> {
    #[cfg(feature = "remote")]
    return Some((
        tensorprep::train::data::remote::requests(),
        tensorprep::train::data::remote::misses(),
    ));
    #[cfg(not(feature = "remote"))]
    None
}

/// The block size and the bytes of blocks kept for all remote objects
/// (`tensorprep::train::data::remote::set_read_blocks`).
#[pyfunction]
pub(crate) fn set_read_blocks(block_bytes: u64, kept_bytes: u64) -> PyResult<()> {
    #[cfg(feature = "remote")]
    {
        tensorprep::train::data::remote::set_read_blocks(block_bytes, kept_bytes);
        Ok(())
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = (block_bytes, kept_bytes);
        Err(not_built())
    }
}

/// This process's node-local cache: `dir` with at most `budget` bytes, or
/// none (`tensorprep::train::data::remote::set_cache`).
#[pyfunction]
#[pyo3(signature = (dir, budget))]
pub(crate) fn set_cache(dir: Option<std::path::PathBuf>, budget: u64) -> PyResult<()> {
    #[cfg(feature = "remote")]
    {
        tensorprep::train::data::remote::set_cache(dir.as_deref(), budget)
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("the node cache: {e}")))
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = (dir, budget);
        Err(not_built())
    }
}
