//! Python objects built from the core's records (`rust/state/records.rs`): the `Change` class
//! (DESIGN §7.9; `state.rs` builds one per core change), and `PyBuilder`, the sink that builds the
//! Python objects of the documents the core writes (`rust/state/document.rs`: the records, the
//! answers of the queries, `state()`), fresh on every call. No shape is written here: the key
//! order, the optional members and the markers are the core's.

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use super::convert::build;
use super::strcache::new_str;
use crate::state::document::{self, Name, Sink};
use crate::state::{base64_encode, IdKey};

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

/// One interned `str` per name of the documents (`document::NAMES`, by index).
static NAMES: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();

/// The most containers a document has open at once (state, sessions, a session, its tool calls,
/// a record, its content: 6); the values inside records are built apart (`value`).
const MAX_OPEN: usize = 8;

/// The name of a member, until its value comes.
enum Key<'py> {
    None,
    Name(Name),
    Text(Bound<'py, PyAny>),
}

/// The sink that builds the Python objects of a document (`rust/state/document.rs`): dicts,
/// lists, `str`, `int`, `bool`, `None`, `bytes`; a stored value as `loads` builds it (`value`).
/// It knows no shape: the core's writers say what goes where.
pub(super) struct PyBuilder<'py> {
    py: Python<'py>,
    names: &'py [Py<PyString>],
    /// The open containers, innermost last, and whether each is a dict: borrowed, as each is
    /// held by its parent from the start, the outermost by `done`.
    open: [(*mut ffi::PyObject, bool); MAX_OPEN],
    depth: usize,
    /// The name of the member whose value comes next.
    key: Key<'py>,
    done: Option<Bound<'py, PyAny>>,
    scratch: Vec<u8>,
}

impl<'py> PyBuilder<'py> {
    pub(super) fn new(py: Python<'py>) -> Self {
        let names = NAMES.get_or_init(py, || {
            document::NAMES
                .iter()
                .map(|n| PyString::intern(py, n).unbind())
                .collect()
        });
        Self {
            py,
            names,
            open: [(std::ptr::null_mut(), false); MAX_OPEN],
            depth: 0,
            key: Key::None,
            done: None,
            scratch: Vec::new(),
        }
    }

    /// Build what `write` writes (one value).
    pub(super) fn build(py: Python<'py>, write: impl FnOnce(&mut Self) -> PyResult<()>) -> PyResult<Bound<'py, PyAny>> {
        let mut b = Self::new(py);
        write(&mut b)?;
        Ok(b.done.take().expect("a document was written"))
    }

    /// A dict built by `write` (which writes an object).
    pub(super) fn dict(py: Python<'py>, write: impl FnOnce(&mut Self) -> PyResult<()>) -> PyResult<Bound<'py, PyDict>> {
        Ok(Self::build(py, write)?.cast_into::<PyDict>()?)
    }

    /// A list built by `write` (which writes an array).
    pub(super) fn list(py: Python<'py>, write: impl FnOnce(&mut Self) -> PyResult<()>) -> PyResult<Bound<'py, PyList>> {
        Ok(Self::build(py, write)?.cast_into::<PyList>()?)
    }

    /// Put `v` where the document is: the value of the named member of the open dict, the next
    /// item of the open list, or the document itself.
    #[inline]
    fn put(&mut self, v: Bound<'py, PyAny>) -> PyResult<()> {
        let Some(&(top, dict)) = self.depth.checked_sub(1).map(|i| &self.open[i]) else {
            self.done = Some(v);
            return Ok(());
        };
        // SAFETY: `top` is a live dict or list (held by its parent or by `done`); SetItem and
        // Append borrow the key and the value.
        let status = unsafe {
            if dict {
                match std::mem::replace(&mut self.key, Key::None) {
                    Key::Name(name) => ffi::PyDict_SetItem(top, self.names[name.index()].as_ptr(), v.as_ptr()),
                    Key::Text(k) => ffi::PyDict_SetItem(top, k.as_ptr(), v.as_ptr()),
                    Key::None => unreachable!("a member without a name"),
                }
            } else {
                ffi::PyList_Append(top, v.as_ptr())
            }
        };
        if status < 0 {
            return Err(PyErr::fetch(self.py));
        }
        Ok(())
    }

    /// Open the container `c` (put in its place first).
    #[inline]
    fn enter(&mut self, c: Bound<'py, PyAny>, dict: bool) -> PyResult<()> {
        if self.depth == MAX_OPEN {
            return Err(PyValueError::new_err("a document nested deeper than the builder holds"));
        }
        let ptr = c.as_ptr();
        self.put(c)?;
        self.open[self.depth] = (ptr, dict);
        self.depth += 1;
        Ok(())
    }
}

impl<'py> Sink for PyBuilder<'py> {
    type Error = PyErr;

    #[inline]
    fn begin_object(&mut self) -> PyResult<()> {
        self.enter(PyDict::new(self.py).into_any(), true)
    }

    #[inline]
    fn end_object(&mut self) -> PyResult<()> {
        self.depth -= 1;
        Ok(())
    }

    #[inline]
    fn begin_array(&mut self) -> PyResult<()> {
        self.enter(PyList::empty(self.py).into_any(), false)
    }

    #[inline]
    fn end_array(&mut self) -> PyResult<()> {
        self.depth -= 1;
        Ok(())
    }

    #[inline]
    fn name(&mut self, name: Name) -> PyResult<()> {
        self.key = Key::Name(name);
        Ok(())
    }

    #[inline]
    fn key(&mut self, t: &[u8]) -> PyResult<()> {
        self.key = Key::Text(text(self.py, t));
        Ok(())
    }

    #[inline]
    fn null(&mut self) -> PyResult<()> {
        self.put(self.py.None().into_bound(self.py))
    }

    #[inline]
    fn boolean(&mut self, v: bool) -> PyResult<()> {
        self.put(PyBool::new(self.py, v).to_owned().into_any())
    }

    #[inline]
    fn int(&mut self, v: i64) -> PyResult<()> {
        self.put(v.into_bound_py_any(self.py)?)
    }

    #[inline]
    fn uint(&mut self, v: u64) -> PyResult<()> {
        self.put(v.into_bound_py_any(self.py)?)
    }

    #[inline]
    fn text(&mut self, t: &[u8]) -> PyResult<()> {
        self.put(text(self.py, t))
    }

    #[inline]
    fn raw(&mut self, json: &[u8]) -> PyResult<()> {
        self.put(value(self.py, json)?)
    }

    fn bytes(&mut self, data: &[u8]) -> PyResult<()> {
        self.put(PyBytes::new(self.py, data).into_any())
    }

    fn base64(&mut self, data: &[u8]) -> PyResult<()> {
        self.scratch.clear();
        base64_encode(data, &mut self.scratch);
        self.put(text(self.py, &self.scratch))
    }
}
