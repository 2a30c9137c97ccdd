//! `ToolCallStore`, the Python class: its `StoreState` (`state.rs`: the core engine) behind a
//! per-object lock (`Exclusive`, see the top of `mod.rs`), and its methods, written once here,
//! each under the lock. The queries have the core write what is asked for (`crate::state::
//! document`, `records`, `checkpoint::state`) to a `PyBuilder`, which builds fresh Python
//! objects: no shape is written here. A child module of `state`, so it sees `StoreState`'s
//! private fields and helpers.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyType};

use super::super::args::{limit_arg, Arg, Draft, LimitArg, MaxFrameBytes, ProtocolVersion, SourceArg, StrictSchema};
use super::super::convert::Writer;
use super::super::errors::{decode_error, Origin};
use super::super::frames::source_of;
use super::super::records::{value, PyBuilder};
use super::super::schema::{strict_of, strict_setting};
use super::super::{Exclusive, Locked};
use super::{id_arg, key_arg, StoreState};
use crate::engine::Engine;
use crate::state::checkpoint::{self, Options};
use crate::state::document::{self, Output};
use crate::state::{
    permission_record, terminal_record, tool_call_record, CheckpointError, Limits, Store, DEFAULT_MAX_TOOL_CALLS,
};

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

/// The Python methods, each under the lock (`locked`): the class's whole API, written once.
#[pymethods]
impl PyToolCallStore {
    #[new]
    #[pyo3(signature = (protocol_version = None, *, max_tool_calls = LimitArg::Default, max_frame_bytes = None,
                        max_terminal_bytes = LimitArg::Default, max_content_items = LimitArg::Default,
                        max_plans = LimitArg::Default, max_permissions = LimitArg::Default,
                        max_updates = LimitArg::Default, max_terminals = LimitArg::Default,
                        max_entities = LimitArg::Default, max_files = LimitArg::Default,
                        max_content_bytes = LimitArg::Default, max_sessions = LimitArg::Default,
                        strict_schema = None, unstable = false, draft = None,
                        wrap_bare_content = false),
           text_signature = "(protocol_version=None, *, max_tool_calls=1000, max_frame_bytes=67108864, \
                             max_terminal_bytes=1048576, max_content_items=1000, max_plans=100, \
                             max_permissions=1000, max_updates=1000, max_terminals=1000, max_entities=1000, \
                             max_files=1000, max_content_bytes=1048576, max_sessions=1000, strict_schema=False, unstable=False, draft=None, wrap_bare_content=False)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        protocol_version: Option<Arg<ProtocolVersion>>,
        max_tool_calls: LimitArg<'_>,
        max_frame_bytes: Option<Arg<MaxFrameBytes>>,
        max_terminal_bytes: LimitArg<'_>,
        max_content_items: LimitArg<'_>,
        max_plans: LimitArg<'_>,
        max_permissions: LimitArg<'_>,
        max_updates: LimitArg<'_>,
        max_terminals: LimitArg<'_>,
        max_entities: LimitArg<'_>,
        max_files: LimitArg<'_>,
        max_content_bytes: LimitArg<'_>,
        max_sessions: LimitArg<'_>,
        strict_schema: Option<Arg<StrictSchema>>,
        unstable: bool,
        draft: Option<Arg<Draft>>,
        wrap_bare_content: bool,
    ) -> PyResult<Self> {
        let version = Arg::get(protocol_version)?.map(|v| v.0);
        let max = limit_arg(max_tool_calls, "max_tool_calls", 1, Some(DEFAULT_MAX_TOOL_CALLS))?;
        let max_frame_bytes = MaxFrameBytes::or_default(max_frame_bytes)?;
        let d = Limits::default();
        let limits = Limits {
            terminal_bytes: limit_arg(max_terminal_bytes, "max_terminal_bytes", 0, d.terminal_bytes)?,
            content_items: limit_arg(max_content_items, "max_content_items", 0, d.content_items)?,
            plans: limit_arg(max_plans, "max_plans", 1, d.plans)?,
            permissions: limit_arg(max_permissions, "max_permissions", 1, d.permissions)?,
            updates: limit_arg(max_updates, "max_updates", 0, d.updates)?,
            terminals: limit_arg(max_terminals, "max_terminals", 1, d.terminals)?,
            entities: limit_arg(max_entities, "max_entities", 0, d.entities)?,
            files: limit_arg(max_files, "max_files", 0, d.files)?,
            content_bytes: limit_arg(max_content_bytes, "max_content_bytes", 0, d.content_bytes)?,
            sessions: limit_arg(max_sessions, "max_sessions", 1, d.sessions)?,
        };
        let mut store = Store::with_limits(version, max, limits);
        store.set_wrap_bare_content(wrap_bare_content);
        // As `strict_arg` checks them: the draft, then the option.
        let draft = Draft::or_newest(draft)?;
        let options = Options {
            max_frame_bytes,
            strict_schema: Arg::get(strict_schema)?.and_then(|a| a.0),
            unstable,
            draft,
        };
        let strict = strict_of(py, options.strict_schema, unstable, draft)?;
        Ok(Self::from(StoreState {
            engine: Engine::new(store, max_frame_bytes, strict),
            options,
        }))
    }

    /// Apply one frame (a Message, a Batch, bytes/str, a dict or a list of dicts). Returns a
    /// Change or None (a list for a batch); raises DecodeError for a bad frame.
    #[pyo3(signature = (frame, *, source = None))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'py, PyAny>,
        source: Option<Arg<SourceArg>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let source = SourceArg::or_unknown(source)?;
        self.locked(py)?.apply_frame(py, frame, source)
    }

    /// Feed stream bytes: the Changes and DecodeErrors of every line they complete, in order
    /// (with `changes=False`, only the DecodeErrors).
    #[pyo3(signature = (data, *, changes = true, source = None))]
    fn feed<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        changes: bool,
        source: Option<Arg<SourceArg>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let from = SourceArg::or_unknown(source)?;
        let bytes = source_of(data)?;
        self.locked(py)?
            .collect(py, Some(bytes.bytes.as_bytes()), from, changes)
    }

    /// End of input: apply a last line that has no newline.
    #[pyo3(signature = (*, changes = true, source = None))]
    fn finish<'py>(
        &self,
        py: Python<'py>,
        changes: bool,
        source: Option<Arg<SourceArg>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let source = SourceArg::or_unknown(source)?;
        self.locked(py)?.collect(py, None, source, changes)
    }

    /// The tool call as a fresh dict in ACP wire shape, or None.
    fn get<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        tool_call_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let state = self.locked(py)?;
        let tcid = key_arg(tool_call_id, "tool_call_id")?.as_bytes();
        match state.session(session_id)?.and_then(|s| s.tool_calls.get(tcid)) {
            Some(tc) => PyBuilder::dict(py, |b| tool_call_record(b, tcid, tc)).map(Some),
            None => Ok(None),
        }
    }

    fn tool_calls<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.locked(py)?;
        let session = state.session(session_id)?;
        PyBuilder::dict(py, |b| document::tool_calls(b, session))
    }

    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.locked(py)?;
        PyBuilder::dict(py, |b| document::snapshot(b, state.store()))
    }

    fn terminal<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        terminal_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let state = self.locked(py)?;
        let tid = key_arg(terminal_id, "terminal_id")?.as_bytes();
        match state.session(session_id)?.and_then(|s| s.terminals.get(tid)) {
            Some(t) => PyBuilder::dict(py, |b| terminal_record(b, tid, t, Output::Bytes)).map(Some),
            None => Ok(None),
        }
    }

    fn terminals<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.locked(py)?;
        let session = state.session(session_id)?;
        PyBuilder::dict(py, |b| document::terminals(b, session, Output::Bytes))
    }

    fn plans<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.locked(py)?;
        let session = state.session(session_id)?;
        PyBuilder::dict(py, |b| document::plans(b, session))
    }

    /// The entities of a session, `{target: value}` (DESIGN §7.3).
    fn entities<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.locked(py)?;
        let session = state.session(session_id)?;
        PyBuilder::dict(py, |b| document::entities(b, session))
    }

    /// The agent's own targets of the schema's rules (`authStatus`): `{target: value}`.
    fn agent_entities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.locked(py)?;
        PyBuilder::dict(py, |b| document::entity_map(b, state.store().agent_entities()))
    }

    /// The answered file requests of a session, oldest first (DESIGN §7.10).
    fn files<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let state = self.locked(py)?;
        let session = state.session(session_id)?;
        PyBuilder::list(py, |b| document::files(b, session))
    }

    /// Is the session's history being replayed (DESIGN §7.10)?
    fn replaying(&self, py: Python<'_>, session_id: &Bound<'_, PyAny>) -> PyResult<bool> {
        let state = self.locked(py)?;
        Ok(state.session(session_id)?.is_some_and(|s| s.replaying))
    }

    /// The unknown updates kept for a session, in arrival order (DESIGN §7.3).
    fn updates<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let state = self.locked(py)?;
        let session = state.session(session_id)?;
        PyBuilder::list(py, |b| document::updates(b, session))
    }

    /// The latest permission request with this id, or None.
    fn permission<'py>(&self, py: Python<'py>, request_id: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let state = self.locked(py)?;
        let key = id_arg(request_id)?;
        match state.store().permission(&key) {
            Some(p) => {
                let sid = state.store().session_id(p.session);
                PyBuilder::dict(py, |b| permission_record(b, sid, p)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn permissions<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.permission_list(py, session_id, false)
    }

    fn pending_permissions<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.locked(py)?.permission_list(py, session_id, true)
    }

    /// The `$/cancel_request` notifications seen (the last 1000), oldest first:
    /// `{"requestId": id, "source": "agent" | "client" | None}`.
    fn cancel_requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let state = self.locked(py)?;
        PyBuilder::list(py, |b| checkpoint::cancel_request_list(b, state.store()))
    }

    /// The `cancelled` responses a client owes for the pending requests of a session.
    fn cancel_responses<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let state = self.locked(py)?;
        let frames = state
            .store()
            .cancel_responses(key_arg(session_id, "session_id")?.as_bytes());
        PyList::new(py, frames.iter().map(|f| PyBytes::new(py, f)))
    }

    /// The whole state as a JSON-compatible dict (DESIGN §7.8).
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.locked(py)?;
        PyBuilder::dict(py, |b| checkpoint::state(b, state.store(), &state.options))
    }

    /// `dumps(state())`.
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let state = self.locked(py)?;
        match checkpoint::to_json(state.store(), &state.options) {
            Ok(doc) => Ok(PyBytes::new(py, &doc)),
            // `dumps`' error for a value nested too deep (the path collected innermost first).
            Err(e) => Err(e
                .path
                .into_iter()
                .rev()
                .fold(Writer::too_deep(checkpoint::MAX_DEPTH as usize), |f, step| f.at(step))
                .into_pyerr(py)),
        }
    }

    /// Rebuild a store from `to_json()` output (bytes or str, as `loads` takes them).
    #[classmethod]
    fn from_json<'py>(cls: &Bound<'py, PyType>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let owned;
        let bytes = match data.cast::<PyString>().ok().and_then(|s| s.to_str().ok()) {
            Some(text) => text.as_bytes(),
            None => {
                owned = source_of(data)?.bytes;
                owned.as_bytes()
            }
        };
        let (store, options) = checkpoint::from_json(bytes).map_err(|e| match e {
            CheckpointError::Json(e) => decode_error(py, &e, Origin::Document(bytes), None),
            e => {
                // The messages that quote a value use Python's repr() of it.
                let mut repr = |json: &[u8]| {
                    value(py, json)
                        .and_then(|v| v.repr())
                        .map_or_else(|_| String::from_utf8_lossy(json).into_owned(), |r| r.to_string())
                };
                PyValueError::new_err(e.message(&mut repr))
            }
        })?;
        let obj = Bound::new(
            py,
            Self::from(StoreState {
                engine: Engine::new(
                    store,
                    options.max_frame_bytes,
                    strict_of(py, options.strict_schema, options.unstable, options.draft)?,
                ),
                options,
            }),
        )?;
        Ok(obj.into_any())
    }

    #[getter]
    fn protocol_version(&self, py: Python<'_>) -> PyResult<u8> {
        Ok(self.locked(py)?.store().version())
    }

    #[getter]
    fn negotiated_version(&self, py: Python<'_>) -> PyResult<Option<u8>> {
        Ok(self.locked(py)?.store().negotiated_version())
    }

    #[getter]
    fn max_tool_calls(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().max_tool_calls())
    }

    #[getter]
    fn max_terminal_bytes(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().terminal_bytes)
    }

    #[getter]
    fn max_content_items(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().content_items)
    }

    #[getter]
    fn max_plans(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().plans)
    }

    #[getter]
    fn max_permissions(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().permissions)
    }

    #[getter]
    fn max_updates(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().updates)
    }

    #[getter]
    fn max_terminals(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().terminals)
    }

    #[getter]
    fn wrap_bare_content(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.locked(py)?.store().wrap_bare_content())
    }

    #[getter]
    fn max_entities(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().entities)
    }

    /// `strict_schema` as given: False (off), True (follows the negotiation), 1 or 2.
    #[getter]
    fn strict_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        strict_setting(py, self.locked(py)?.engine.strict())
    }

    #[getter]
    fn max_files(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().files)
    }

    #[getter]
    fn max_content_bytes(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().content_bytes)
    }

    #[getter]
    fn max_sessions(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.locked(py)?.store().limits().sessions)
    }

    #[getter]
    fn evicted(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.locked(py)?.store().evicted())
    }

    #[getter]
    fn closed_sessions(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.locked(py)?.store().closed_sessions())
    }

    #[getter]
    fn evicted_sessions(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.locked(py)?.store().evicted_sessions())
    }

    #[getter]
    fn line(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.locked(py)?.engine.line())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.locked(py)?.store().tool_call_count())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let state = self.locked(py)?;
        Ok(format!(
            "ToolCallStore(protocol_version={}, tool_calls={})",
            state.store().version(),
            state.store().tool_call_count()
        ))
    }
}
