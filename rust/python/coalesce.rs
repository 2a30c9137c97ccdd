//! `Coalescer`: the core coalescer (`crate::coalesce`, mirror `_fallback/coalesce.py`, whose
//! `Coalescer` is this class and the core one in one): argument conversion, a block of lines cut
//! into lines, the caller's clock (`time.monotonic()` when `now` is not given).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt};

use super::Exclusive;
use crate::coalesce::{Coalescer, DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_BYTES};

/// Holds the agent's `tool_call_update` frames per (session, tool call) for at most `ms`
/// milliseconds and forwards one frame with their merged effect (docs/API.md "Coalescing").
#[pyclass(module = "acp_fast", name = "Coalescer", frozen)]
pub struct PyCoalescer {
    inner: Exclusive<Coalescer>,
}

fn monotonic(py: Python<'_>, now: Option<f64>) -> PyResult<f64> {
    match now {
        Some(t) => Ok(t),
        None => py.import("time")?.call_method0("monotonic")?.extract(),
    }
}

/// `protocol`: 1, 2 (exactly an `int`) or None.
pub(crate) fn check_protocol(protocol: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u8>> {
    let Some(obj) = protocol.filter(|p| !p.is_none()) else {
        return Ok(None);
    };
    let value = if obj.is_exact_instance_of::<PyInt>() {
        obj.extract::<i64>().ok()
    } else {
        None
    };
    match value {
        Some(v @ (1 | 2)) => Ok(Some(v as u8)),
        _ => Err(PyValueError::new_err(format!(
            "expected protocol to be 1, 2 or None, found {}",
            obj.repr()?
        ))),
    }
}

/// The coalescer's options, checked (the same messages as the fallback's `Coalescer`).
pub(crate) fn new_coalescer(ms: f64, protocol: Option<u8>, max_held: i64, max_held_bytes: i64) -> PyResult<Coalescer> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "expected ms to be a number of milliseconds >= 0, found {ms}"
        )));
    }
    if max_held < 1 {
        return Err(PyValueError::new_err(format!(
            "expected max_held to be at least 1, found {max_held}"
        )));
    }
    if max_held_bytes < 0 {
        return Err(PyValueError::new_err(format!(
            "expected max_held_bytes to be at least 0, found {max_held_bytes}"
        )));
    }
    Ok(Coalescer::new(ms, protocol, max_held as usize, max_held_bytes as usize))
}

const _: () = assert!(DEFAULT_MAX_HELD == 1000 && DEFAULT_MAX_HELD_BYTES == 16777216);

#[pymethods]
impl PyCoalescer {
    #[new]
    // The defaults are literals so that the signature shows them (checked equal to the core's
    // constants below).
    #[pyo3(signature = (ms = 50.0, *, protocol = None, max_held = 1000, max_held_bytes = 16777216))]
    fn new(ms: f64, protocol: Option<Bound<'_, PyAny>>, max_held: i64, max_held_bytes: i64) -> PyResult<Self> {
        let coalescer = new_coalescer(ms, check_protocol(protocol.as_ref())?, max_held, max_held_bytes)?;
        Ok(Self {
            inner: Exclusive::new("Coalescer", coalescer),
        })
    }

    /// The lines to write now for `data` (whole lines as the agent sent them); `tracked`: the
    /// state engine applied them without error.
    #[pyo3(signature = (data, now = None, *, tracked = true))]
    fn push<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        now: Option<f64>,
        tracked: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let now = monotonic(py, now)?;
        let mut c = self.inner.lock(py)?;
        let mut out = Vec::with_capacity(data.len());
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', data) {
            c.push_line(&data[start..=end], now, tracked, &mut out);
            start = end + 1;
        }
        if start < data.len() {
            c.push_line(&data[start..], now, tracked, &mut out);
        }
        Ok(PyBytes::new(py, &out))
    }

    /// The held updates due at `now`.
    #[pyo3(signature = (now = None))]
    fn due<'py>(&self, py: Python<'py>, now: Option<f64>) -> PyResult<Bound<'py, PyBytes>> {
        let now = monotonic(py, now)?;
        let mut out = Vec::new();
        self.inner.lock(py)?.release_due(now, &mut out);
        Ok(PyBytes::new(py, &out))
    }

    /// Everything held, oldest first.
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::new();
        self.inner.lock(py)?.release_all(&mut out);
        Ok(PyBytes::new(py, &out))
    }

    /// When the oldest held update is due (on the clock of `now`), None when nothing is held.
    #[getter]
    fn deadline(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        Ok(self.inner.lock(py)?.next_due())
    }

    /// The editor's protocol version (1 or 2), None until known.
    #[getter]
    fn get_protocol(&self, py: Python<'_>) -> PyResult<Option<u8>> {
        Ok(self.inner.lock(py)?.protocol)
    }

    #[setter]
    fn set_protocol(&self, py: Python<'_>, protocol: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let protocol = check_protocol(protocol.as_ref())?;
        self.inner.lock(py)?.protocol = protocol;
        Ok(())
    }

    /// How long an update is held at most, in milliseconds.
    #[getter]
    fn ms(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(self.inner.lock(py)?.window * 1000.0)
    }

    /// Tool calls held.
    #[getter]
    fn held(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.inner.lock(py)?.held())
    }

    /// Bytes held.
    #[getter]
    fn held_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.inner.lock(py)?.held_bytes)
    }

    /// Updates held so far.
    #[getter]
    fn updates_in(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.inner.lock(py)?.updates_in)
    }

    /// Lines released so far (one per held update, or per merged run of them).
    #[getter]
    fn frames_out(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.inner.lock(py)?.frames_out)
    }
}
