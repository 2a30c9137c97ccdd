//! The PyO3 binding layer: `acp_fast._native`. Every function here takes Python arguments, calls
//! the core, and maps errors; no protocol logic lives in this folder.

mod bounds;
mod convert;
mod errors;
mod frames;
mod framing;
mod records;
mod state;
mod strcache;
mod untracked;

use pyo3::prelude::*;

/// The cyclic garbage collector held off while a `feed` builds its results.
///
/// Everything a feed allocates is acyclic (`Message` is never tracked, see `untracked`; `Change`
/// is untracked at once), yet CPython counts each GC-type allocation towards its next
/// collection: a feed of 100,000 frames set off collections of the whole heap — up to a full one
/// (200 ns per frame at 100 k frames in the scaling benchmark; benches/RESULTS.md). Restored on drop, also on error; the collector then
/// runs at the next allocation as it would have.
pub(crate) struct GcPause {
    was_enabled: bool,
}

// `PyGC_Disable` / `PyGC_Enable` are CPython 3.10 C API (and 3.9 is past its end of life; the
// ACP SDK needs 3.10 too). pyproject.toml says `requires-python = ">=3.10"`.
#[cfg(not(Py_3_10))]
compile_error!("acp-fast needs CPython 3.10 or newer");

impl GcPause {
    pub(crate) fn new(_py: Python<'_>) -> Self {
        // SAFETY: the GIL is held (the `Python` token); PyGC_Disable returns the previous state.
        let was_enabled = unsafe { pyo3::ffi::PyGC_Disable() } == 1;
        Self { was_enabled }
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: created with the GIL held, and dropped in the same scope.
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BACKEND", "rust")?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "build_profile",
        if cfg!(debug_assertions) { "debug" } else { "release" },
    )?;
    m.add("DEFAULT_MAX_FRAME_BYTES", crate::framing::DEFAULT_MAX_FRAME_BYTES)?;
    m.add("MAX_FRAME_BYTES", crate::framing::MAX_FRAME_BYTES)?;
    m.add_function(wrap_pyfunction!(frames::loads, m)?)?;
    m.add_function(wrap_pyfunction!(frames::dumps, m)?)?;
    m.add_function(wrap_pyfunction!(frames::decode, m)?)?;
    m.add_function(wrap_pyfunction!(frames::encode, m)?)?;
    m.add_class::<frames::PyMessage>()?;
    m.add_class::<frames::PyFrameDecoder>()?;
    m.add_class::<framing::PyFramer>()?;
    m.add_class::<state::PyToolCallStore>()?;
    m.add_class::<records::PyChange>()?;
    // Before any Message exists (see `untracked`).
    untracked::install::<frames::PyMessage>(m.py());
    Ok(())
}
