//! # tpl-py
//!
//! The native half of the Python package `temporal_privacy` (`temporal_privacy._native`):
//! thin PyO3 wrappers that turn numpy arrays into the inputs of the library crates, call the
//! same library functions with the same parameters as the `tpl` command line, and hand the
//! results back as numpy arrays, so that every number is bit-identical to the CLI's JSON.
//! The pure-Python layer (`python/temporal_privacy/__init__.py`) checks dtypes and shapes,
//! shapes the results and carries the documentation (`docs/python.md`).
//!
//! Heavy work runs with the interpreter detached ([`Python::detach`]), so other Python
//! threads run meanwhile. Every library error becomes `temporal_privacy.TplError` (a
//! `ValueError`) with the library's message, prefixed by the argument at fault.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

mod allocate;
mod compare;
mod convert;
mod estimate;
mod leakage;
mod postprocess;
mod release;
mod stream;
mod transitions;

// Named as `temporal_privacy.TplError` (its public name), so that pickle finds the class
// and an error raised in a worker process reaches its parent.
create_exception!(
    temporal_privacy,
    TplError,
    PyValueError,
    "An input `tpl` refuses, with the library's message naming the argument at fault."
);

create_exception!(
    temporal_privacy,
    StreamBusyError,
    TplError,
    "A stream another process held for longer than a push waits (retry later)."
);
create_exception!(
    temporal_privacy,
    StreamReadOnlyError,
    TplError,
    "A stream this process cannot write (the file, its folder, or companions of another user)."
);
create_exception!(
    temporal_privacy,
    StreamDamagedError,
    TplError,
    "A file that is not a well-formed stream, or whose history was edited; the message names the first bad step."
);

/// The module `temporal_privacy._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TplError", m.py().get_type::<TplError>())?;
    m.add("StreamBusyError", m.py().get_type::<StreamBusyError>())?;
    m.add("StreamReadOnlyError", m.py().get_type::<StreamReadOnlyError>())?;
    m.add("StreamDamagedError", m.py().get_type::<StreamDamagedError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_HORIZON", convert::MAX_HORIZON)?;
    leakage::register(m)?;
    allocate::register(m)?;
    release::register(m)?;
    postprocess::register(m)?;
    compare::register(m)?;
    estimate::register(m)?;
    stream::register(m)?;
    transitions::register(m)?;
    Ok(())
}
