//! The PyO3 binding layer: `acp_fast._native`. Every function here takes Python arguments, calls
//! the core, and maps errors; no protocol logic lives in this folder.

mod convert;
mod errors;
mod frames;
mod state;
mod strcache;

use pyo3::prelude::*;

#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BACKEND", "rust")?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "build_profile",
        if cfg!(debug_assertions) { "debug" } else { "release" },
    )?;
    m.add_function(wrap_pyfunction!(frames::loads, m)?)?;
    m.add_function(wrap_pyfunction!(frames::dumps, m)?)?;
    m.add_function(wrap_pyfunction!(frames::decode, m)?)?;
    m.add_function(wrap_pyfunction!(frames::encode, m)?)?;
    m.add_class::<frames::PyMessage>()?;
    m.add_class::<frames::PyFrameDecoder>()?;
    m.add_class::<state::PyToolCallStore>()?;
    m.add_class::<state::PyChange>()?;
    Ok(())
}
