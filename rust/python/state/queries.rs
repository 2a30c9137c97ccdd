//! The queries of `ToolCallStore` (DESIGN §7.8): each converts its arguments, finds what is asked
//! for and has the core write it (`crate::state::document`, `records`, `checkpoint::state`) to a
//! `PyBuilder`, which builds fresh Python objects. No shape is written here. A child module of
//! `state`, so it sees `StoreState`'s private fields; `methods.rs` calls these under the lock.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::super::convert::Writer;
use super::super::records::PyBuilder;
use super::{id_arg, key_arg, StoreState};
use crate::state::checkpoint;
use crate::state::document::{self, Output};
use crate::state::{permission_record, terminal_record, tool_call_record};

impl StoreState {
    pub(super) fn get<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        tool_call_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let tcid = key_arg(tool_call_id, "tool_call_id")?.as_bytes();
        match self.session(session_id)?.and_then(|s| s.tool_calls.get(tcid)) {
            Some(tc) => PyBuilder::dict(py, |b| tool_call_record(b, tcid, tc)).map(Some),
            None => Ok(None),
        }
    }

    pub(super) fn tool_calls<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let session = self.session(session_id)?;
        PyBuilder::dict(py, |b| document::tool_calls(b, session))
    }

    pub(super) fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        PyBuilder::dict(py, |b| document::snapshot(b, self.store()))
    }

    pub(super) fn terminal<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        terminal_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let tid = key_arg(terminal_id, "terminal_id")?.as_bytes();
        match self.session(session_id)?.and_then(|s| s.terminals.get(tid)) {
            Some(t) => PyBuilder::dict(py, |b| terminal_record(b, tid, t, Output::Bytes)).map(Some),
            None => Ok(None),
        }
    }

    pub(super) fn terminals<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let session = self.session(session_id)?;
        PyBuilder::dict(py, |b| document::terminals(b, session, Output::Bytes))
    }

    pub(super) fn plans<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let session = self.session(session_id)?;
        PyBuilder::dict(py, |b| document::plans(b, session))
    }

    /// The unknown updates kept for a session, in arrival order (DESIGN §7.3).
    pub(super) fn updates<'py>(&self, py: Python<'py>, session_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let session = self.session(session_id)?;
        PyBuilder::list(py, |b| document::updates(b, session))
    }

    /// The latest permission request with this id, or None.
    pub(super) fn permission<'py>(
        &self,
        py: Python<'py>,
        request_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let key = id_arg(request_id)?;
        match self.store().permission(&key) {
            Some(p) => {
                let sid = self.store().session_id(p.session);
                PyBuilder::dict(py, |b| permission_record(b, sid, p)).map(Some)
            }
            None => Ok(None),
        }
    }

    pub(super) fn permissions<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.permission_list(py, session_id, false)
    }

    pub(super) fn pending_permissions<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.permission_list(py, session_id, true)
    }

    fn permission_list<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        pending: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let sid = key_arg(session_id, "session_id")?.as_bytes();
        PyBuilder::list(py, |b| document::permissions(b, self.store(), sid, pending))
    }

    /// The `cancelled` responses a client owes for the pending requests of a session.
    pub(super) fn cancel_responses<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let frames = self
            .store()
            .cancel_responses(key_arg(session_id, "session_id")?.as_bytes());
        PyList::new(py, frames.iter().map(|f| PyBytes::new(py, f)))
    }

    /// The whole state as a JSON-compatible dict (DESIGN §7.8).
    pub(super) fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        PyBuilder::dict(py, |b| checkpoint::state(b, self.store()))
    }

    /// The `$/cancel_request` notifications seen (the last 1000), oldest first:
    /// `{"requestId": id, "source": "agent" | "client" | None}`.
    pub(super) fn cancel_requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyBuilder::list(py, |b| checkpoint::cancel_request_list(b, self.store()))
    }

    /// `dumps(state())`.
    pub(super) fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match checkpoint::to_json(self.store()) {
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
}
