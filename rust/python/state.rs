//! `ToolCallStore` and `Change` over the core `state::Store`: argument conversion, framing for
//! `feed` / `finish`, error mapping, and the Python objects the API returns (records are built
//! only when asked for, by the queries in `state/queries.rs`: `get`, `tool_calls`, `snapshot`,
//! `state`, ...). DESIGN §7.
//!
//! The methods are written on `StoreState`, what a `ToolCallStore` holds; the Python class is in
//! `state/methods.rs`: its state behind a per-object lock, and `#[pymethods]` that take the lock
//! and call the methods here (docs/API.md "Threads"; the reasons are at the top of `mod.rs`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyType};
use pyo3::{intern, IntoPyObjectExt};

use super::bounds::{limit_arg, LimitArg};
use super::convert::dumps_bytes;
use super::errors::{decode_error, decode_error_object, decode_error_type, Origin};
use super::frames::{source_of, PyMessage};
use super::records::{id_object, text, value, PyChange};
use super::schema::{Strict, Verdict};
use super::strcache::{token_str, CacheGuard, VALUES};
use crate::error::DecodeError;
use crate::framing::{Event, Framer, DEFAULT_MAX_FRAME_BYTES};
use crate::message::{parse_frame, parse_line_utf8, strip_line_ending, Captured, Envelope, Frame};
use crate::state::{checkpoint, Action, Change, CheckpointError, IdKey, Ident, Limits, Source, Store, Target};

mod methods;
mod queries;
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

/// What a `ToolCallStore` holds, behind its lock (`methods.rs`).
struct StoreState {
    store: Store,
    framer: Framer,
    /// While `feed(..., changes=False)` runs: build no `Change` objects.
    quiet: bool,
    /// `strict_schema`: the schema check every frame passes before it is applied.
    strict: Option<Strict>,
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
    }
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

/// Move an error of a batch entry (positions relative to the entry) to frame offsets.
fn shifted(e: DecodeError, by: usize) -> DecodeError {
    DecodeError::new(e.code, e.kind, e.description.clone(), e.position.map(|p| p + by))
}

impl StoreState {
    /// Apply every message of the frame `data` (no line ending). Single messages: `Ok(change)`
    /// or `Err(error)`; batches: one item per entry pushed to `out`. With `strict_schema`, a
    /// frame (or batch entry) that fails the schema check is reported instead of applied.
    /// Returns whether the frame as a whole was refused by that check.
    #[allow(clippy::too_many_arguments)]
    fn apply_frame<'py>(
        &mut self,
        py: Python<'py>,
        data: &[u8],
        parsed: Result<Frame, DecodeError>,
        source: Source,
        line: Option<u64>,
        cache: &mut Option<CacheGuard<'_>>,
        out: &mut dyn FnMut(Bound<'py, PyAny>) -> PyResult<()>,
        batch_nones: bool,
        captured: Option<&Captured>,
    ) -> PyResult<bool> {
        let origin = |line: Option<u64>| match line {
            Some(line) => Origin::Stream { line },
            None => Origin::Document(data),
        };
        let mut refused: Vec<Option<Bound<'py, PyAny>>> = Vec::new();
        if let (Some(strict), Ok(frame)) = (&mut self.strict, &parsed) {
            let ranges: Option<Vec<(usize, usize)>> = match frame {
                Frame::Single(_) => None,
                Frame::Batch(entries) => Some(entries.iter().map(|e| (e.start, e.end)).collect()),
            };
            match strict.check(py, data, ranges.as_deref(), source.name(), line)? {
                Verdict::Valid => {}
                Verdict::Frame(error) => {
                    out(error)?;
                    return Ok(true);
                }
                Verdict::Entries(errors) => refused = errors,
            }
        }
        match parsed {
            Ok(Frame::Single(env)) => match self.store.apply_captured(data, &env, captured, source) {
                Ok(Some(_)) if self.quiet => Ok(false),
                Ok(Some(c)) => out(change_object(py, &self.store, data, &c, cache)?).map(|()| false),
                Ok(None) => {
                    if batch_nones {
                        out(py.None().into_bound(py))?;
                    }
                    Ok(false)
                }
                Err(e) => out(decode_error_object(py, &e, origin(line), Some(data))?).map(|()| false),
            },
            Ok(Frame::Batch(entries)) => {
                let mut refused = refused.into_iter();
                for entry in entries {
                    let bytes = &data[entry.start..entry.end];
                    let schema_error = refused.next().flatten();
                    let item = match entry.result {
                        // The entry's own decode error comes first; then the schema's verdict.
                        Ok(_) if schema_error.is_some() => schema_error,
                        Ok(env) => match self.store.apply(bytes, &env, source) {
                            Ok(Some(_)) if self.quiet => None,
                            Ok(Some(c)) => Some(change_object(py, &self.store, bytes, &c, cache)?),
                            Ok(None) => None,
                            Err(e) => Some(decode_error_object(
                                py,
                                &shifted(e, entry.start),
                                origin(line),
                                Some(bytes),
                            )?),
                        },
                        Err(e) => Some(decode_error_object(py, &e, origin(line), Some(bytes))?),
                    };
                    match item {
                        Some(obj) => out(obj)?,
                        None if batch_nones => out(py.None().into_bound(py))?,
                        None => {}
                    }
                }
                Ok(false)
            }
            Err(e) => out(decode_error_object(py, &e, origin(line), Some(data))?).map(|()| false),
        }
    }

    fn collect<'py>(&mut self, py: Python<'py>, data: Option<&[u8]>, source: Source) -> PyResult<Bound<'py, PyList>> {
        let _gc = super::GcPause::new(py);
        let list = PyList::empty(py);
        let max = self.framer.max_frame_bytes();
        let mut failure: Option<PyErr> = None;
        let mut cache = VALUES.lock();
        let mut framer = std::mem::replace(&mut self.framer, Framer::new(1));
        let mut cap = Captured::new();
        {
            let mut push = |obj: Bound<'py, PyAny>| list.append(obj);
            let mut on_event = |event: Event<'_>| {
                if failure.is_some() {
                    return;
                }
                let r = match event {
                    Event::Frame { line, data, utf8 } => {
                        let parsed = parse_line_utf8(data, Some(&mut cap), utf8);
                        self.apply_frame(
                            py,
                            data,
                            parsed,
                            source,
                            Some(line),
                            &mut cache,
                            &mut push,
                            false,
                            Some(&cap),
                        )
                        .map(|_| ())
                    }
                    Event::TooLarge { line } => {
                        decode_error_object(py, &crate::framing::too_large(max), Origin::Stream { line }, None)
                            .and_then(&mut push)
                    }
                };
                if let Err(e) = r {
                    failure = Some(e);
                }
            };
            match data {
                Some(d) => framer.feed(d, &mut on_event),
                None => framer.finish(&mut on_event),
            }
        }
        self.framer = framer;
        match failure {
            Some(e) => Err(e),
            None => Ok(list),
        }
    }

    fn session(&self, session_id: &Bound<'_, PyAny>) -> PyResult<Option<&crate::state::Session>> {
        Ok(self.store.session(key_arg(session_id, "session_id")?.as_bytes()))
    }
}

fn parse_source(source: Option<&Bound<'_, PyAny>>) -> PyResult<Source> {
    let Some(s) = source else {
        return Ok(Source::Unknown);
    };
    if s.is_none() {
        return Ok(Source::Unknown);
    }
    match s.cast::<PyString>().ok().and_then(|s| s.to_str().ok()) {
        Some("agent") => Ok(Source::Agent),
        Some("client") => Ok(Source::Client),
        _ => Err(PyValueError::new_err(format!(
            "expected source to be 'agent', 'client' or None, found {}",
            s.repr()?
        ))),
    }
}

fn version_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u8>> {
    let Some(v) = v else {
        return Ok(None);
    };
    if v.is_none() {
        return Ok(None);
    }
    if v.is_exact_instance_of::<PyInt>() {
        match v.extract::<i64>() {
            Ok(1) => return Ok(Some(1)),
            Ok(2) => return Ok(Some(2)),
            _ => {}
        }
    }
    Err(PyValueError::new_err(format!(
        "expected protocol_version to be 1, 2 or None, found {}",
        v.repr()?
    )))
}

fn max_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(v) = v else {
        return Ok(None);
    };
    if v.is_none() {
        return Ok(None);
    }
    if v.is_exact_instance_of::<PyInt>() {
        if let Ok(n) = v.extract::<i64>() {
            if n >= 1 {
                return Ok(Some(n as usize));
            }
        }
    }
    Err(PyValueError::new_err(format!(
        "expected max_tool_calls to be a positive integer or None, found {}",
        v.repr()?
    )))
}

impl StoreState {
    #[allow(clippy::too_many_arguments)]
    fn new(
        protocol_version: Option<&Bound<'_, PyAny>>,
        max_tool_calls: Option<&Bound<'_, PyAny>>,
        max_frame_bytes: Option<&Bound<'_, PyAny>>,
        max_terminal_bytes: LimitArg<'_>,
        max_content_items: LimitArg<'_>,
        max_plans: LimitArg<'_>,
        max_permissions: LimitArg<'_>,
        max_updates: LimitArg<'_>,
        max_terminals: LimitArg<'_>,
        strict_schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let version = version_arg(protocol_version)?;
        let max = max_arg(max_tool_calls)?;
        let max_frame_bytes = super::framing::max_frame_bytes_arg(max_frame_bytes)?;
        let d = Limits::default();
        let limits = Limits {
            terminal_bytes: limit_arg(max_terminal_bytes, "max_terminal_bytes", 0, d.terminal_bytes)?,
            content_items: limit_arg(max_content_items, "max_content_items", 0, d.content_items)?,
            plans: limit_arg(max_plans, "max_plans", 1, d.plans)?,
            permissions: limit_arg(max_permissions, "max_permissions", 1, d.permissions)?,
            updates: limit_arg(max_updates, "max_updates", 0, d.updates)?,
            terminals: limit_arg(max_terminals, "max_terminals", 1, d.terminals)?,
        };
        Ok(Self {
            store: Store::with_limits(version, max, limits),
            framer: Framer::new(max_frame_bytes),
            quiet: false,
            strict: Strict::from_arg(strict_schema)?,
        })
    }

    /// Apply one frame (a Message, a Batch, bytes/str, a dict or a list of dicts). Returns a
    /// Change or None (a list for a batch); raises DecodeError for a bad frame.
    fn apply<'py>(
        &mut self,
        py: Python<'py>,
        frame: &Bound<'py, PyAny>,
        source: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let source_arg = source;
        let source = parse_source(source)?;
        let mut cache = VALUES.lock();
        if let Ok(m) = frame.cast::<PyMessage>() {
            let m = m.get();
            let data = m.raw_bytes(py);
            let env: Envelope = *m.envelope();
            if let Some(strict) = &mut self.strict {
                if let Verdict::Frame(error) = strict.check(py, data, None, source.name(), None)? {
                    return Err(PyErr::from_value(error));
                }
            }
            return match self.store.apply(data, &env, source) {
                Ok(Some(c)) => change_object(py, &self.store, data, &c, &mut cache),
                Ok(None) => Ok(py.None().into_bound(py)),
                Err(e) => Err(decode_error(py, &e, Origin::Document(data), Some(data))),
            };
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
                    let r = match self.apply(py, &item, source_arg) {
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
        let parsed = parse_frame(data);
        let is_batch = matches!(parsed, Ok(Frame::Batch(_)));
        let mut items: Vec<Bound<'py, PyAny>> = Vec::new();
        let refused = self.apply_frame(
            py,
            data,
            parsed,
            source,
            None,
            &mut cache,
            &mut |o| {
                items.push(o);
                Ok(())
            },
            true,
            None,
        )?;
        if is_batch && !refused {
            return Ok(PyList::new(py, items)?.into_any());
        }
        let item = items.pop().unwrap_or_else(|| py.None().into_bound(py));
        if item.is_instance(decode_error_type(py)?)? {
            return Err(PyErr::from_value(item));
        }
        Ok(item)
    }

    /// Feed stream bytes: the Changes and DecodeErrors of every line they complete, in order
    /// (with `changes=False`, only the DecodeErrors).
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        changes: bool,
        source: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let from = parse_source(source)?;
        let source = source_of(data)?;
        self.quiet = !changes;
        let r = self.collect(py, Some(source.bytes.as_bytes()), from);
        self.quiet = false;
        r
    }

    /// End of input: apply a last line that has no newline.
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        changes: bool,
        source: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let from = parse_source(source)?;
        self.quiet = !changes;
        let r = self.collect(py, None, from);
        self.quiet = false;
        r
    }

    /// Rebuild a store from `to_json()` output (bytes or str, as `loads` takes them).
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
        let store = checkpoint::from_json(bytes).map_err(|e| match e {
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
            PyToolCallStore::from(StoreState {
                store,
                framer: Framer::new(DEFAULT_MAX_FRAME_BYTES),
                quiet: false,
                strict: None,
            }),
        )?;
        Ok(obj.into_any())
    }

    fn protocol_version(&self) -> u8 {
        self.store.version()
    }

    fn negotiated_version(&self) -> Option<u8> {
        self.store.negotiated_version()
    }

    fn max_tool_calls(&self) -> Option<usize> {
        self.store.max_tool_calls()
    }

    /// `strict_schema` as given: False (off), True (follows the negotiation), 1 or 2.
    fn strict_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.strict {
            Some(strict) => strict.setting(py),
            None => Ok(PyBool::new(py, false).to_owned().into_any()),
        }
    }

    /// The bounds inside sessions (`max_terminal_bytes`, ..., `max_terminals`).
    fn limits(&self) -> Limits {
        *self.store.limits()
    }

    fn evicted(&self) -> u64 {
        self.store.evicted()
    }

    fn line(&self) -> u64 {
        self.framer.line()
    }

    fn __len__(&self) -> usize {
        self.store.tool_call_count()
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolCallStore(protocol_version={}, tool_calls={})",
            self.store.version(),
            self.store.tool_call_count()
        )
    }
}
