//! The bound arguments of `ToolCallStore` (`max_terminal_bytes`, ..., `max_terminals`; DESIGN §7.1):
//! omitted, the default; `None`, no bound; else an `int` from the bound's smallest value to
//! 2**63-1, as the fallback's `_limit` checks them, word for word.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyInt;

use crate::state::Limits;

/// A bound argument (`max_updates`, ...) as given: `Default` when omitted (an `Option` would read
/// an explicit None, which means "no bound", as omitted).
pub enum LimitArg<'py> {
    Default,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for LimitArg<'py> {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self::Given(obj.to_owned()))
    }
}

/// A bound of `Limits`: omitted, the default; None, no bound; else an `int` from `min` to 2**63-1
/// (DESIGN §7.1).
pub(super) fn limit_arg(v: LimitArg<'_>, name: &str, min: u64, default: Option<usize>) -> PyResult<Option<usize>> {
    let v = match v {
        LimitArg::Default => return Ok(default),
        LimitArg::Given(v) if v.is_none() => return Ok(None),
        LimitArg::Given(v) => v,
    };
    if v.is_exact_instance_of::<PyInt>() {
        if let Ok(n) = v.extract::<i64>() {
            if n >= min as i64 {
                return Ok(Some(n as usize));
            }
        }
    }
    let what = Limits::what(min);
    Err(PyValueError::new_err(format!(
        "expected {name} to be {} or None, found {}",
        what.strip_suffix(" or null").unwrap_or(what),
        v.repr()?
    )))
}
