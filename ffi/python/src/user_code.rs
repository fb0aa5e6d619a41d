//! The Python code a loader's own threads run (a `FromPython` dataset's
//! `__getitem__`, a `FromIterable` dataset's factory and iterator, a
//! `Lambda`), marked on the thread while it runs: a call from there to a
//! loader is refused, since the loader may be waiting for that very thread
//! (its consumer holds the loader until the batch it waits for is made).

#![forbid(unsafe_code)]

use std::cell::Cell;

use pyo3::exceptions::PyRuntimeError;
use pyo3::{PyResult, PyTraverseError, PyVisit};

thread_local! {
    /// What this thread is running for a loader, if anything.
    static RUNNING: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// `f`, marked as `what` (`"a FromPython dataset's __getitem__"`) on this
/// thread while it runs (the previous mark restored after, even if `f`
/// panics).
pub(crate) fn run<T>(what: &'static str, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<&'static str>);
    impl Drop for Restore {
        fn drop(&mut self) {
            RUNNING.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(RUNNING.with(|r| r.replace(Some(what))));
    f()
}

/// `RuntimeError` when this thread is running Python code for a loader:
/// calling a loader from there (`next(loader)`, `len(loader)`,
/// `loader.state_dict()`, `close()`) could wait for the calling thread
/// itself.
pub(crate) fn refuse_loader_call() -> PyResult<()> {
    match RUNNING.with(Cell::get) {
        None => Ok(()),
        Some(what) => Err(PyRuntimeError::new_err(format!(
            "{what} called a Loader: it runs on a loader's own worker threads, and the loader \
             (waiting for this thread's sample) would wait for itself; a dataset or Lambda \
             cannot use a Loader"
        ))),
    }
}

/// A Rust part that holds Python objects (a `FromPython` dataset's object):
/// the one Python wrapper made with it shows them to the garbage collector.
pub(crate) trait Holds: Send + Sync {
    /// Visits each Python object it holds (each reference once).
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError>;
}
