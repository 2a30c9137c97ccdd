//! `ToolCallStore`, the Python class: its `StoreState` (`state.rs`) behind a per-object lock
//! (`Exclusive`, see the top of `mod.rs`), and its methods, each of which runs the `StoreState`
//! method of the same name under the lock. A child module of `state`, so it sees `StoreState`'s
//! private fields and methods.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyType};

use super::super::args::{Arg, LimitArg, MaxFrameBytes, MaxToolCalls, ProtocolVersion, SourceArg, StrictSchema};
use super::super::{Exclusive, Locked};
use super::StoreState;

/// The state of every tool call, terminal, plan and permission request, per session.
#[pyclass(module = "acp_fast", name = "ToolCallStore", frozen)]
pub struct PyToolCallStore {
    state: Exclusive<StoreState>,
}

impl From<StoreState> for PyToolCallStore {
    fn from(state: StoreState) -> Self {
        Self {
            state: Exclusive::new("ToolCallStore", state),
        }
    }
}

impl PyToolCallStore {
    #[inline]
    fn locked(&self, py: Python<'_>) -> PyResult<Locked<'_, StoreState>> {
        self.state.lock(py)
    }

    /// Run `f` on the core store under this object's lock, from a thread detached from the
    /// interpreter (the proxy's relay, `rust/python/relay.rs`).
    pub(crate) fn with_engine_detached<R>(&self, f: impl FnOnce(&mut crate::engine::Engine) -> R) -> R {
        let mut state = self.state.lock_detached();
        f(&mut state.engine)
    }
}

/// The Python methods: each runs the `StoreState` method of the same name under the lock.
#[pymethods]
impl PyToolCallStore {
    #[new]
    #[pyo3(signature = (protocol_version = None, *, max_tool_calls = None, max_frame_bytes = None,
                        max_terminal_bytes = LimitArg::Default, max_content_items = LimitArg::Default,
                        max_plans = LimitArg::Default, max_permissions = LimitArg::Default,
                        max_updates = LimitArg::Default, max_terminals = LimitArg::Default,
                        strict_schema = None),
           text_signature = "(protocol_version=None, *, max_tool_calls=None, max_frame_bytes=67108864, \
                             max_terminal_bytes=1048576, max_content_items=1000, max_plans=100, \
                             max_permissions=1000, max_updates=1000, max_terminals=1000, strict_schema=False)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        protocol_version: Option<Arg<ProtocolVersion>>,
        max_tool_calls: Option<Arg<MaxToolCalls>>,
        max_frame_bytes: Option<Arg<MaxFrameBytes>>,
        max_terminal_bytes: LimitArg<'_>,
        max_content_items: LimitArg<'_>,
        max_plans: LimitArg<'_>,
        max_permissions: LimitArg<'_>,
        max_updates: LimitArg<'_>,
        max_terminals: LimitArg<'_>,
        strict_schema: Option<Arg<StrictSchema>>,
    ) -> PyResult<Self> {
        StoreState::new(
            py,
            protocol_version,
            max_tool_calls,
            max_frame_bytes,
            max_terminal_bytes,
            max_content_items,
            max_plans,
            max_permissions,
            max_updates,
            max_terminals,
            strict_schema,
        )
        .map(Self::from)
    }

    #[pyo3(signature = (frame, *, source = None))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'py, PyAny>,
        source: Option<Arg<SourceArg>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.locked(py)?.apply(py, frame, SourceArg::or_unknown(source)?)
    }

    #[pyo3(signature = (data, *, changes = true, source = None))]
    fn feed<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        changes: bool,
        source: Option<Arg<SourceArg>>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.feed(py, data, changes, SourceArg::or_unknown(source)?)
    }

    #[pyo3(signature = (*, changes = true, source = None))]
    fn finish<'py>(
        &self,
        py: Python<'py>,
        changes: bool,
        source: Option<Arg<SourceArg>>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.finish(py, changes, SourceArg::or_unknown(source)?)
    }

    fn get<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        tool_call_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.locked(py)?.get(py, session_id, tool_call_id)
    }

    fn tool_calls<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        self.locked(py)?.tool_calls(py, session_id)
    }

    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.locked(py)?.snapshot(py)
    }

    fn terminal<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        terminal_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.locked(py)?.terminal(py, session_id, terminal_id)
    }

    fn terminals<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        self.locked(py)?.terminals(py, session_id)
    }

    fn plans<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        self.locked(py)?.plans(py, session_id)
    }

    fn updates<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.updates(py, session_id)
    }

    fn permission<'py>(&self, py: Python<'py>, request_id: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.locked(py)?.permission(py, request_id)
    }

    fn permissions<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.permissions(py, session_id)
    }

    fn pending_permissions<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.pending_permissions(py, session_id)
    }

    fn cancel_responses<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.cancel_responses(py, session_id)
    }

    fn cancel_requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.cancel_requests(py)
    }

    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.locked(py)?.state(py)
    }

    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.locked(py)?.to_json(py)
    }

    #[classmethod]
    fn from_json<'py>(cls: &Bound<'py, PyType>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        StoreState::from_json(cls, data)
    }

    #[getter]
    fn protocol_version(&self, py: Python<'_>) -> PyResult<u8> {
        Ok(self.locked(py)?.protocol_version())
    }

    #[getter]
    fn negotiated_version(&self, py: Python<'_>) -> PyResult<Option<u8>> {
        Ok(self.locked(py)?.negotiated_version())
    }

    #[getter]
    fn max_tool_calls(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.max_tool_calls())
    }

    #[getter]
    fn max_terminal_bytes(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.limits().terminal_bytes)
    }

    #[getter]
    fn max_content_items(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.limits().content_items)
    }

    #[getter]
    fn max_plans(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.limits().plans)
    }

    #[getter]
    fn max_permissions(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.limits().permissions)
    }

    #[getter]
    fn max_updates(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.limits().updates)
    }

    #[getter]
    fn max_terminals(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.limits().terminals)
    }

    #[getter]
    fn strict_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.locked(py)?.strict_schema(py)
    }

    #[getter]
    fn evicted(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.locked(py)?.evicted())
    }

    #[getter]
    fn line(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.locked(py)?.line())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.locked(py)?.__len__())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.locked(py)?.__repr__())
    }
}
