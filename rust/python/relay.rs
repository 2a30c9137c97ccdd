//! `_native._Relay`: the core relay (`crate::relay`) of one direction of `acp_fast.proxy`, run
//! with the interpreter released. `pump()` does one step: read a chunk from the side's file
//! descriptor, apply its lines to the proxy's `ToolCallStore` and gather the lines to forward,
//! all detached from the interpreter; then it gives back the bytes to write and the notices.
//!
//! The store is shared by both directions and by Python: each step takes the store's own lock
//! (`PyToolCallStore::with_engine_detached`, the `Exclusive` every method takes) without the GIL,
//! so a Python call on the store waits for the step (detached, see `mod.rs`) and the step waits
//! for a Python call; neither waits for the GIL while holding the lock. The bytes are written by
//! the caller (its writer's lock keeps lines from two writers whole).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3::IntoPyObjectExt;

use super::args::{Arg, MaxFrameBytes};
use super::coalesce::new_coalescer;
use super::errors::{decode_error_object, Origin};
use super::schema::schema_error;
use super::state::PyToolCallStore;
use super::Exclusive;
use crate::coalesce::{DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_BYTES};
use crate::record::Recorder;
use crate::relay::{Notice, Relay};
use crate::state::Source;

/// One direction's relay (internal to `acp_fast.proxy`).
#[pyclass(module = "acp_fast._native", name = "_Relay", frozen)]
pub struct PyRelay {
    relay: Exclusive<Relay>,
    store: Py<PyToolCallStore>,
    fd: i32,
}

#[pymethods]
impl PyRelay {
    /// `_Relay(store, fd, source, max_frame_bytes, coalesce=None, record=False, trace_start=None)`:
    /// the lines read from `fd`, sent by `source` (`"agent"` or `"client"`), tracked in `store`;
    /// `coalesce`: milliseconds to hold the agent's tool-call updates for (`--coalesce`), with the
    /// default bounds; `record`: build the record lines of the lines forwarded (`--record`),
    /// `trace_start`: their trace events, `ts` counting from it (`--trace`), taken by `records()`
    /// (not with `coalesce`).
    #[new]
    #[pyo3(signature = (store, fd, source, max_frame_bytes = None, coalesce = None, record = false, trace_start = None))]
    fn new(
        store: Bound<'_, PyToolCallStore>,
        fd: i32,
        source: &str,
        max_frame_bytes: Option<Arg<MaxFrameBytes>>,
        coalesce: Option<f64>,
        record: bool,
        trace_start: Option<f64>,
    ) -> PyResult<Self> {
        let (source, side) = match source {
            "agent" => (Source::Agent, "agent"),
            "client" => (Source::Client, "editor"),
            other => {
                return Err(PyValueError::new_err(format!(
                    "expected source to be 'agent' or 'client', found {other:?}"
                )))
            }
        };
        let max = MaxFrameBytes::or_default(max_frame_bytes)?;
        let mut relay = Relay::new(max, source);
        if record || trace_start.is_some() {
            if coalesce.is_some() {
                return Err(PyValueError::new_err(
                    "expected no coalesce with record or trace_start (the proxy's Python loop records coalescing)",
                ));
            }
            relay.record(Recorder::new(side, record, trace_start));
        }
        if let Some(ms) = coalesce {
            relay.coalesce(new_coalescer(
                ms,
                None,
                DEFAULT_MAX_HELD as i64,
                DEFAULT_MAX_HELD_BYTES as i64,
            )?);
        }
        Ok(Self {
            relay: Exclusive::new("_Relay", relay),
            store: store.unbind(),
            fd,
        })
    }

    /// One step: `(data, notices)`, or None at the end of the input once all is processed.
    /// `data` are the lines to forward; each notice is `("too_large", line, bytes)`,
    /// `("state_error", line, DecodeError)` or `("invalid", line, wire, DecodeError)` (the step
    /// stopped before that line). A read error raises OSError.
    fn pump<'py>(&self, py: Python<'py>) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyList>)>> {
        let mut guard = self.relay.lock(py)?;
        let relay: &mut Relay = &mut guard;
        if relay.done() {
            if !relay.holding() {
                return Ok(None);
            }
            relay.release_all();
            let data = PyBytes::new(py, &relay.out);
            relay.out.clear();
            return Ok(Some((data, PyList::empty(py))));
        }
        let store: &PyToolCallStore = self.store.get();
        let fd = self.fd;
        let notices = py.detach(|| -> std::io::Result<Vec<Notice>> {
            let mut notices = Vec::new();
            if relay.wants_input() {
                // With held updates, the wait ends at the oldest one's deadline (released then).
                if !relay.wait(fd)? {
                    return Ok(notices);
                }
                relay.read(fd)?;
            }
            store.with_engine_detached(|e| relay.process(e, &mut notices));
            Ok(notices)
        })?;
        let data = PyBytes::new(py, &relay.out);
        relay.out.clear();
        let list = PyList::empty(py);
        for notice in notices {
            let item = match notice {
                Notice::TooLarge { line, bytes, head } => {
                    ("too_large", line, bytes, PyBytes::new(py, &head)).into_bound_py_any(py)?
                }
                Notice::StateError { line, data, error } => {
                    let e = decode_error_object(py, &error, Origin::Stream { line }, Some(&data))?;
                    ("state_error", line, e).into_bound_py_any(py)?
                }
                Notice::Invalid { line, wire, error } => {
                    let content = crate::message::strip_line_ending(&wire);
                    let e = decode_error_object(py, &error, Origin::Stream { line }, Some(content))?;
                    ("invalid", line, PyBytes::new(py, &wire), e).into_bound_py_any(py)?
                }
                Notice::RefusedFrame { line, wire, problems } => {
                    let content = crate::message::strip_line_ending(&wire);
                    let e = schema_error(py, problems, Some(line), content)?;
                    ("invalid", line, PyBytes::new(py, &wire), e).into_bound_py_any(py)?
                }
                Notice::Refused { line, raw, problems } => {
                    let e = schema_error(py, problems, Some(line), &raw)?;
                    ("state_error", line, e).into_bound_py_any(py)?
                }
            };
            list.append(item)?;
        }
        Ok(Some((data, list)))
    }

    /// `(record lines, trace events, lines without an event)` built since the last call (empty
    /// when not recording).
    fn records<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, u64)> {
        let mut guard = self.relay.lock(py)?;
        let relay: &mut Relay = &mut guard;
        let to_py =
            |record: &[u8], trace: &[u8], skipped: u64| (PyBytes::new(py, record), PyBytes::new(py, trace), skipped);
        Ok(match relay.recorder() {
            Some(r) => r.drain(to_py),
            None => to_py(&[], &[], 0),
        })
    }

    /// What the coalescer holds, released now (when the relay stops early); empty without one.
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut guard = self.relay.lock(py)?;
        let relay: &mut Relay = &mut guard;
        relay.release_all();
        let data = PyBytes::new(py, &relay.out);
        relay.out.clear();
        Ok(data)
    }

    /// `--coalesce`: `(updates held, lines released in their place)` so far.
    #[getter]
    fn coalesced(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        Ok(self.relay.lock(py)?.coalesced())
    }

    /// Bytes read so far.
    #[getter]
    fn bytes_in(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.relay.lock(py)?.bytes_in)
    }

    /// Lines seen so far (blank ones and those over the limit included).
    #[getter]
    fn lines(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.relay.lock(py)?.lines)
    }
}
