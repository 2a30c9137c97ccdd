//! `ToolCallStore` and `Change` over the core engine (`crate::engine::Engine`: framer, strict
//! check, `state::Store`): argument conversion, the Python objects of the engine's outcomes, and
//! error mapping; the queries (records built only when asked for: `get`, `tool_calls`,
//! `snapshot`, `state`, ...) are in `state/queries.rs`. No protocol rule lives here. DESIGN §7.
//!
//! The methods are written on `StoreState`, what a `ToolCallStore` holds; the Python class is in
//! `state/methods.rs`: its state behind a per-object lock, and `#[pymethods]` that take the lock
//! and call the methods here (docs/API.md "Threads"; the reasons are at the top of `mod.rs`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString};
use pyo3::{intern, IntoPyObjectExt};

use super::convert::dumps_bytes;
use super::errors::{decode_error_object, decode_error_type, Origin};
use super::frames::{source_of, PyMessage};
use super::records::{id_object, text, value, PyBuilder, PyChange};
use super::schema::schema_error;
use super::strcache::{token_str, CacheGuard, VALUES};
use crate::engine::{Engine, Framed, Item};
use crate::message::{strip_line_ending, Envelope};
use crate::state::checkpoint::Options;
use crate::state::document;
use crate::state::{Action, Change, IdKey, Ident, Source, Store, Target};

mod methods;
pub use methods::PyToolCallStore;

/// The text of a session / tool-call id argument.
fn key_arg<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<&'a str> {
    match obj.cast::<PyString>() {
        Ok(s) => s.to_str(),
        Err(_) => Err(PyTypeError::new_err(format!(
            "expected {what} to be a str, found {}",
            obj.get_type().name()?
        ))),
    }
}

fn id_arg(obj: &Bound<'_, PyAny>) -> PyResult<IdKey> {
    if obj.is_none() {
        return Ok(IdKey::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(IdKey::Str(s.to_str()?.as_bytes().into()));
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(IdKey::Int(v));
        }
    }
    Err(PyTypeError::new_err(format!(
        "expected a request id (str, int or None), found {}",
        obj.get_type().name()?
    )))
}

// ---------------------------------------------------------------------------------------------
// The store

/// What a `ToolCallStore` holds, behind its lock (`methods.rs`): the core engine (store,
/// framer, strict check).
struct StoreState {
    engine: Engine,
    /// The options as given (the framer's limit, the strict check's settings), for checkpoints.
    options: Options,
}

fn target_str<'py>(py: Python<'py>, t: Target) -> &'py Bound<'py, PyString> {
    match t {
        Target::ToolCall => intern!(py, "tool_call"),
        Target::Terminal => intern!(py, "terminal"),
        Target::Plan => intern!(py, "plan"),
        Target::Permission => intern!(py, "permission"),
        Target::Session => intern!(py, "session"),
        Target::Protocol => intern!(py, "protocol"),
        Target::Request => intern!(py, "request"),
        Target::Update => intern!(py, "update"),
        Target::Entity(i) => entity_target(py, i),
        Target::File => intern!(py, "file"),
    }
}

/// The name of an entity target (`rules::targets()`), interned once per target.
fn entity_target(py: Python<'_>, index: u8) -> &Bound<'_, PyString> {
    static NAMES: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();
    let names = NAMES.get_or_init(py, || {
        crate::state::targets()
            .iter()
            .map(|t| PyString::intern(py, &t.name).unbind())
            .collect()
    });
    names[index as usize].bind(py)
}

fn action_str<'py>(py: Python<'py>, a: Action) -> &'py Bound<'py, PyString> {
    match a {
        Action::Created => intern!(py, "created"),
        Action::Replaced => intern!(py, "replaced"),
        Action::Updated => intern!(py, "updated"),
        Action::Appended => intern!(py, "appended"),
        Action::Removed => intern!(py, "removed"),
        Action::Requested => intern!(py, "requested"),
        Action::Resolved => intern!(py, "resolved"),
        Action::Cancelled => intern!(py, "cancelled"),
        Action::Negotiated => intern!(py, "negotiated"),
        Action::Closed => intern!(py, "closed"),
        Action::Replaying => intern!(py, "replaying"),
        Action::Replayed => intern!(py, "replayed"),
    }
}

/// The Python `Change` for a core change of the message `data`.
fn change_object<'py>(
    py: Python<'py>,
    store: &Store,
    data: &[u8],
    c: &Change,
    cache: &mut Option<CacheGuard<'_>>,
) -> PyResult<Bound<'py, PyAny>> {
    let none = || py.None();
    let mut session_id = c.session.map_or_else(none, |s| token_str(py, data, s, cache));
    // Tool-call ids bypass the string cache (see `strcache`).
    let mut tool_call_id = c.tool_call_id.map_or_else(none, |s| token_str(py, data, s, &mut None));
    if let Some(p) = c.permission.and_then(|i| store.permission_at(i)) {
        session_id = text(py, store.session_id(p.session)).unbind();
        tool_call_id = p.tool_call_id.as_deref().map_or_else(none, |t| text(py, t).unbind());
    }
    let id = match c.id {
        Ident::None if c.held => {
            let (sid, id) = store.held();
            session_id = text(py, sid).unbind();
            id.map_or_else(none, |t| text(py, t).unbind())
        }
        Ident::None => none(),
        Ident::Text(s) => match (c.tool_call_id, c.target) {
            (Some(_), Target::ToolCall) => tool_call_id.clone_ref(py),
            _ => token_str(py, data, s, cache),
        },
        Ident::Static(s) => PyString::new(py, s).into_any().unbind(),
        Ident::Id(span) => match c.permission.and_then(|i| store.permission_at(i)) {
            Some(p) => id_object(py, &p.id)?.unbind(),
            None => value(py, &data[span.range()])?.unbind(),
        },
        Ident::Version(v) => v.into_py_any(py)?,
    };
    let obj = Bound::new(
        py,
        PyChange {
            session_id,
            target: target_str(py, c.target).clone().into_any().unbind(),
            id,
            action: action_str(py, c.action).clone().into_any().unbind(),
            tool_call_id,
        },
    )?;
    // A Change refers only to str / int / None objects, so it can never be part of a reference
    // cycle: keep it off the garbage collector's lists (as `Message` does).
    // SAFETY: `obj` is a live GC-tracked object that we just created.
    unsafe { pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
    Ok(obj.into_any())
}

/// The Python object of one engine outcome: a `Change` (None when nothing changed, or when
/// `changes` is false), a `DecodeError` (with `origin` for its line and column).
fn item_object<'py>(
    py: Python<'py>,
    store: &Store,
    item: Item<'_>,
    origin: Origin<'_>,
    changes: bool,
    cache: &mut Option<CacheGuard<'_>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(match item {
        Item::Applied { data, change } => match change {
            Some(c) if changes => Some(change_object(py, store, data, &c, cache)?),
            _ => None,
        },
        Item::Error { raw, error } => Some(decode_error_object(py, &error, origin, Some(raw))?),
        Item::Refused { raw, problems } => {
            let line = match origin {
                Origin::Stream { line } => Some(line),
                Origin::Document(_) => None,
            };
            Some(schema_error(py, problems, line, raw)?)
        }
        Item::TooLarge { error } => Some(decode_error_object(py, &error, origin, None)?),
    })
}

impl StoreState {
    fn store(&self) -> &Store {
        self.engine.store()
    }

    /// The Changes and DecodeErrors of the lines `data` completes (None: end of input), in
    /// order (with `changes` false, only the DecodeErrors).
    fn collect<'py>(
        &mut self,
        py: Python<'py>,
        data: Option<&[u8]>,
        source: Source,
        changes: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let _gc = super::GcPause::new(py);
        let list = PyList::empty(py);
        let mut cache = VALUES.lock();
        let mut out = |store: &Store, line: u64, item: Item<'_>| -> PyResult<()> {
            match item_object(py, store, item, Origin::Stream { line }, changes, &mut cache)? {
                Some(obj) => list.append(obj),
                None => Ok(()),
            }
        };
        match data {
            Some(d) => self.engine.feed(d, source, &mut out)?,
            None => self.engine.finish(source, &mut out)?,
        }
        Ok(list)
    }

    fn session(&self, session_id: &Bound<'_, PyAny>) -> PyResult<Option<&crate::state::Session>> {
        Ok(self.store().session(key_arg(session_id, "session_id")?.as_bytes()))
    }

    /// The permission requests of a session (only the pending ones when `pending`).
    fn permission_list<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        pending: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let sid = key_arg(session_id, "session_id")?.as_bytes();
        PyBuilder::list(py, |b| document::permissions(b, self.store(), sid, pending))
    }
}

/// `apply`'s answer for a single message: its Change or None, or its DecodeError raised.
fn single<'py>(py: Python<'py>, item: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    match item {
        Some(obj) if obj.is_instance(decode_error_type(py)?)? => Err(PyErr::from_value(obj)),
        Some(obj) => Ok(obj),
        None => Ok(py.None().into_bound(py)),
    }
}

impl StoreState {
    /// `ToolCallStore.apply`: one frame (a Message, a Batch, bytes/str, a dict or a list of
    /// dicts). A decoded Batch's entries are applied one by one through this same function.
    fn apply_frame<'py>(
        &mut self,
        py: Python<'py>,
        frame: &Bound<'py, PyAny>,
        source: Source,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut cache = VALUES.lock();
        let mut items: Vec<Option<Bound<'py, PyAny>>> = Vec::new();
        if let Ok(m) = frame.cast::<PyMessage>() {
            let m = m.get();
            let data = m.raw_bytes(py);
            let env: Envelope = *m.envelope();
            let mut out = |store: &Store, item: Item<'_>| -> PyResult<()> {
                items.push(item_object(py, store, item, Origin::Document(data), true, &mut cache)?);
                Ok(())
            };
            self.engine.message(data, &env, source, &mut out)?;
            return single(py, items.pop().flatten());
        }
        if frame.is_instance(decode_error_type(py)?)? {
            return Ok(frame.clone());
        }
        if let Ok(list) = frame.cast::<PyList>() {
            let is_entries = list.iter().next().is_some_and(|first| {
                first.is_instance_of::<PyMessage>()
                    || first.is_instance(decode_error_type(py).unwrap()).unwrap_or(false)
            });
            if is_entries {
                let out = PyList::empty(py);
                drop(cache);
                for item in list.iter() {
                    if !(item.is_instance_of::<PyMessage>() || item.is_instance(decode_error_type(py)?)?) {
                        return Err(PyTypeError::new_err(format!(
                            "expected the entries of a decoded batch (Message or DecodeError), found {}",
                            item.get_type().name()?
                        )));
                    }
                    let r = match self.apply_frame(py, &item, source) {
                        Ok(v) => v,
                        Err(e) if e.is_instance(py, decode_error_type(py)?) => {
                            e.into_value(py).into_bound(py).into_any()
                        }
                        Err(e) => return Err(e),
                    };
                    out.append(r)?;
                }
                return Ok(out.into_any());
            }
        }
        let owned;
        let bytes: &[u8] = if frame.is_instance_of::<PyDict>() || frame.is_instance_of::<PyList>() {
            owned = dumps_bytes(py, frame, false)?;
            owned.as_bytes()
        } else if frame.is_instance_of::<PyBytes>()
            || frame.is_instance_of::<PyString>()
            || frame.is_instance_of::<pyo3::types::PyByteArray>()
            || frame.is_instance_of::<pyo3::types::PyMemoryView>()
        {
            owned = source_of(frame)?.bytes;
            owned.as_bytes()
        } else {
            return Err(PyTypeError::new_err(format!(
                "expected a Message, bytes, str, a dict or a list, found {}",
                frame.get_type().name()?
            )));
        };
        let data = strip_line_ending(bytes);
        let mut out = |store: &Store, item: Item<'_>| -> PyResult<()> {
            items.push(item_object(py, store, item, Origin::Document(data), true, &mut cache)?);
            Ok(())
        };
        match self.engine.frame(data, source, &mut out)? {
            Framed::Batch { .. } => {
                let none = || py.None().into_bound(py);
                Ok(PyList::new(py, items.into_iter().map(|i| i.unwrap_or_else(none)))?.into_any())
            }
            _ => single(py, items.pop().flatten()),
        }
    }
}
