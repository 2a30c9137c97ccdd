//! Python objects built from the core's records (`rust/state/records.rs`): the `Change` class
//! (DESIGN §7.9; `state.rs` builds one per core change) and the dicts that `ToolCallStore` queries
//! return (§7.3 - §7.5), fresh on every call.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use pyo3::{intern, IntoPyObjectExt};

use super::convert::build;
use super::strcache::new_str;
use crate::state::{base64_encode, IdKey, Permission, Store, Terminal, ToolCall, TC_AFTER_LOCATIONS, TOOL_CALL_FIELDS};

// ---------------------------------------------------------------------------------------------
// Change

/// A light change event: what a frame changed in the store.
#[pyclass(module = "acp_fast", name = "Change", frozen)]
pub struct PyChange {
    #[pyo3(get)]
    pub(super) session_id: Py<PyAny>,
    #[pyo3(get)]
    pub(super) target: Py<PyAny>,
    #[pyo3(get)]
    pub(super) id: Py<PyAny>,
    #[pyo3(get)]
    pub(super) action: Py<PyAny>,
    #[pyo3(get)]
    pub(super) tool_call_id: Py<PyAny>,
}

impl PyChange {
    fn tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                &self.session_id,
                &self.target,
                &self.id,
                &self.action,
                &self.tool_call_id,
            ]
            .map(|o| o.clone_ref(py)),
        )
    }
}

#[pymethods]
impl PyChange {
    #[new]
    fn new(
        session_id: Py<PyAny>,
        target: Py<PyAny>,
        id: Py<PyAny>,
        action: Py<PyAny>,
        tool_call_id: Py<PyAny>,
    ) -> Self {
        Self {
            session_id,
            target,
            id,
            action,
            tool_call_id,
        }
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<PyChange>() {
            Ok(o) => Ok(self.tuple(py)?.eq(o.get().tuple(py)?)?.into_py_any(py)?),
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __ne__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<PyChange>() {
            Ok(o) => Ok((!self.tuple(py)?.eq(o.get().tuple(py)?)?).into_py_any(py)?),
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.tuple(py)?.hash()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.tuple(py)?.try_iter()?.into_any())
    }

    fn __len__(&self) -> usize {
        5
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Change(session_id={}, target={}, id={}, action={}, tool_call_id={})",
            self.session_id.bind(py).repr()?,
            self.target.bind(py).repr()?,
            self.id.bind(py).repr()?,
            self.action.bind(py).repr()?,
            self.tool_call_id.bind(py).repr()?
        ))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        PyTuple::new(py, [slf.get_type().into_any(), slf.get().tuple(py)?.into_any()])
    }
}

// ---------------------------------------------------------------------------------------------
// Building Python objects from the store

pub(super) fn value<'py>(py: Python<'py>, raw: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    build(py, raw, false).map_err(|e| PyValueError::new_err(e.description.clone()))
}

pub(super) fn text<'py>(py: Python<'py>, t: &[u8]) -> Bound<'py, PyAny> {
    new_str(py, t)
}

pub(super) fn id_object<'py>(py: Python<'py>, id: &IdKey) -> PyResult<Bound<'py, PyAny>> {
    match id {
        IdKey::Null => Ok(py.None().into_bound(py)),
        IdKey::Int(v) => v.into_bound_py_any(py),
        IdKey::Str(s) => Ok(text(py, s)),
    }
}

pub(super) fn tool_call_dict<'py>(py: Python<'py>, id: &[u8], tc: &ToolCall) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "toolCallId"), text(py, id))?;
    if let Some(t) = tc.title() {
        d.set_item(intern!(py, "title"), value(py, t)?)?;
    }
    d.set_item(intern!(py, "kind"), value(py, tc.kind())?)?;
    d.set_item(intern!(py, "status"), value(py, tc.status())?)?;
    let content = PyList::empty(py);
    for item in tc.content() {
        content.append(value(py, item)?)?;
    }
    d.set_item(intern!(py, "content"), content)?;
    d.set_item(intern!(py, "locations"), value(py, tc.locations())?)?;
    for i in TC_AFTER_LOCATIONS {
        if let Some(v) = &tc.fields[i] {
            d.set_item(TOOL_CALL_FIELDS[i], value(py, v)?)?;
        }
    }
    for (k, v) in &tc.extra {
        d.set_item(text(py, k), value(py, v)?)?;
    }
    truncated_dict(py, &d, [("droppedItems", tc.dropped_items)])?;
    Ok(d)
}

pub(super) fn terminal_dict<'py>(
    py: Python<'py>,
    id: &[u8],
    t: &Terminal,
    base64: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "terminalId"), text(py, id))?;
    for (name, v) in [("command", &t.command), ("cwd", &t.cwd)] {
        if let Some(v) = v {
            d.set_item(name, value(py, v)?)?;
        }
    }
    if base64 {
        let mut out = Vec::with_capacity(t.output().len() / 3 * 4 + 4);
        base64_encode(t.output(), &mut out);
        d.set_item(intern!(py, "output"), text(py, &out))?;
    } else {
        d.set_item(intern!(py, "output"), PyBytes::new(py, t.output()))?;
    }
    for (name, v) in [
        ("outputMeta", &t.output_meta),
        ("exitStatus", &t.exit_status),
        ("_meta", &t.meta),
    ] {
        if let Some(v) = v {
            d.set_item(name, value(py, v)?)?;
        }
    }
    for (k, v) in &t.extra {
        d.set_item(text(py, k), value(py, v)?)?;
    }
    truncated_dict(py, &d, [("droppedBytes", t.dropped_bytes)])?;
    Ok(d)
}

/// The `_truncated` marker of a record (DESIGN §7.8): one member per non-zero count, when any.
pub(super) fn truncated_dict(
    py: Python<'_>,
    d: &Bound<'_, PyDict>,
    counts: impl IntoIterator<Item = (&'static str, u64)>,
) -> PyResult<()> {
    let marker = PyDict::new(py);
    for (name, n) in counts.into_iter().filter(|&(_, n)| n > 0) {
        marker.set_item(name, n)?;
    }
    if !marker.is_empty() {
        d.set_item(intern!(py, "_truncated"), marker)?;
    }
    Ok(())
}

pub(super) fn permission_dict<'py>(py: Python<'py>, store: &Store, p: &Permission) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "id"), id_object(py, &p.id)?)?;
    d.set_item(intern!(py, "sessionId"), text(py, store.session_id(p.session)))?;
    if let Some(t) = &p.tool_call_id {
        d.set_item(intern!(py, "toolCallId"), text(py, t))?;
    }
    d.set_item(intern!(py, "options"), value(py, &p.options)?)?;
    d.set_item(intern!(py, "outcome"), p.outcome.as_str())?;
    if let Some(o) = &p.option_id {
        d.set_item(intern!(py, "optionId"), text(py, o))?;
    }
    d.set_item(intern!(py, "approved"), p.approved)?;
    if let Some(r) = &p.response {
        d.set_item(intern!(py, "response"), value(py, r)?)?;
    }
    Ok(d)
}
