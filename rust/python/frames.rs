//! `Message`, `FrameDecoder`, `decode` and `encode`: thin wrappers over `message` and `framing`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple};
use pyo3::{intern, IntoPyObjectExt};

use super::convert::{build, build_span, dumps_bytes, new_str};
use super::errors::{batch_type, decode_error, decode_error_object, Origin};
use crate::error::{DecodeError, JsonType, PARSE_ERROR};
use crate::framing::{Event, Framer, DEFAULT_MAX_FRAME_BYTES};
use crate::message::{parse_frame, strip_line_ending, Envelope, Frame, Kind, Span};
use crate::scanner::{parse_i64, string_text, Str};

/// Largest frame a `Message` can hold (offsets are stored as `u32`).
const MAX_FRAME: usize = u32::MAX as usize - 1;

/// A compact location of a value in the frame.
#[derive(Clone, Copy)]
struct Loc {
    start: u32,
    end: u32,
    escaped: bool,
    ascii: bool,
}

impl Loc {
    fn of_str(s: Str) -> Self {
        Self { start: s.start as u32, end: s.end as u32, escaped: s.escaped, ascii: s.ascii }
    }

    fn of_span(s: &Span) -> Self {
        Self { start: s.start as u32, end: s.end as u32, escaped: false, ascii: false }
    }

    fn as_str(self) -> Str {
        Str { start: self.start as usize, end: self.end as usize, escaped: self.escaped, ascii: self.ascii }
    }
}

/// What a `Message` remembers of its envelope (about 120 bytes).
#[derive(Clone, Copy)]
struct Fields {
    kind: Kind,
    id: Option<(Loc, JsonType)>,
    method: Option<Loc>,
    params: Option<Loc>,
    result: Option<Loc>,
    error: Option<Loc>,
    session_id: Option<Loc>,
    update_kind: Option<Loc>,
    tool_call_id: Option<Loc>,
}

impl Fields {
    fn new(env: &Envelope) -> Self {
        Self {
            kind: env.kind,
            id: env.id.map(|s| match s.string {
                Some(st) => (Loc::of_str(st), JsonType::String),
                None => (Loc::of_span(&s), s.ty),
            }),
            method: env.method.map(Loc::of_str),
            params: env.params.as_ref().map(Loc::of_span),
            result: env.result.as_ref().map(Loc::of_span),
            error: env.error.as_ref().map(Loc::of_span),
            session_id: env.session_id.map(Loc::of_str),
            update_kind: env.update_kind.map(Loc::of_str),
            tool_call_id: env.tool_call_id.map(Loc::of_str),
        }
    }
}

/// One JSON-RPC message: the frame's bytes plus where its routing fields are.
#[pyclass(module = "acp_fast", name = "Message", frozen, weakref)]
pub struct PyMessage {
    /// The frame followed by one `\n`: `encode` returns this very object.
    line_bytes: Py<PyBytes>,
    fields: Fields,
    line: Option<u64>,
}

impl PyMessage {
    /// The frame's bytes without the line ending.
    pub fn raw_bytes<'a>(&'a self, py: Python<'a>) -> &'a [u8] {
        let b = self.line_bytes.as_bytes(py);
        &b[..b.len() - 1]
    }

    fn text<'py>(&self, py: Python<'py>, loc: Option<Loc>) -> Option<Bound<'py, PyAny>> {
        let loc = loc?;
        let data = self.raw_bytes(py);
        let s = loc.as_str();
        if s.escaped {
            let mut scratch = Vec::new();
            let t = string_text(data, s, &mut scratch);
            let ascii = t.is_ascii();
            Some(new_str(py, t, ascii))
        } else {
            Some(new_str(py, &data[s.start..s.end], s.ascii))
        }
    }

    fn value<'py>(&self, py: Python<'py>, loc: Option<Loc>) -> PyResult<Bound<'py, PyAny>> {
        match loc {
            None => Ok(py.None().into_bound(py)),
            Some(l) => build_span(py, self.raw_bytes(py), l.start as usize, l.end as usize),
        }
    }
}

/// Copy `data` plus `\n` into a new `bytes`.
fn line_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, data.len() + 1, |buf| {
        buf[..data.len()].copy_from_slice(data);
        buf[data.len()] = b'\n';
        Ok(())
    })
}

fn new_message<'py>(py: Python<'py>, data: &[u8], env: &Envelope, line: Option<u64>) -> PyResult<Bound<'py, PyAny>> {
    let msg = PyMessage { line_bytes: line_bytes(py, data)?.unbind(), fields: Fields::new(env), line };
    Ok(Bound::new(py, msg)?.into_any())
}

/// Turn a parsed frame into `Message` / `Batch` / `DecodeError` objects.
fn frame_object<'py>(
    py: Python<'py>,
    data: &[u8],
    parsed: Result<Frame, DecodeError>,
    line: Option<u64>,
) -> PyResult<Result<Bound<'py, PyAny>, Bound<'py, PyAny>>> {
    let origin = |line: Option<u64>| match line {
        Some(line) => Origin::Stream { line },
        None => Origin::Document(data),
    };
    match parsed {
        Ok(Frame::Single(env)) => Ok(Ok(new_message(py, data, &env, line)?)),
        Ok(Frame::Batch(entries)) => {
            let list = PyList::empty(py);
            for entry in entries {
                let bytes = &data[entry.start..entry.end];
                match entry.result {
                    Ok(env) => list.append(new_message(py, bytes, &env, line)?)?,
                    Err(e) => list.append(decode_error_object(py, &e, origin(line), Some(bytes))?)?,
                }
            }
            let raw = PyBytes::new(py, data);
            Ok(Ok(batch_type(py)?.call1((list, raw, line))?))
        }
        Err(e) => Ok(Err(decode_error_object(py, &e, origin(line), Some(data))?)),
    }
}

/// Run `f` on the bytes of a bytes / bytearray / memoryview / str argument.
pub fn with_bytes<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    let py = obj.py();
    if let Ok(b) = obj.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_str() {
            Ok(t) => f(t.as_bytes()),
            Err(_) => {
                let _ = PyErr::take(py);
                let cp = s
                    .to_string_lossy()
                    .chars()
                    .position(|c| c == '\u{FFFD}')
                    .and_then(|i| s.get_item(i).ok())
                    .and_then(|c| c.cast_into::<PyString>().ok())
                    .and_then(|c| {
                        // SAFETY: reading the first code point of a one-character str.
                        Some(unsafe { pyo3::ffi::PyUnicode_ReadChar(c.as_ptr(), 0) })
                    })
                    .unwrap_or(0xD800);
                let err = DecodeError::new(
                    PARSE_ERROR,
                    "invalid_utf8",
                    format!("expected a str encodable as UTF-8, found unpaired surrogate U+{cp:04X}"),
                    None,
                );
                Err(decode_error(py, &err, Origin::Document(b""), None))
            }
        };
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return f(&b.to_vec());
    }
    if let Ok(buf) = pyo3::buffer::PyBuffer::<u8>::get(obj) {
        return f(&buf.to_vec(py)?);
    }
    let name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    Err(PyTypeError::new_err(format!("expected bytes, bytearray, memoryview or str, found {name}")))
}

#[pymethods]
impl PyMessage {
    #[getter]
    fn kind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        match self.fields.kind {
            Kind::Request => intern!(py, "request"),
            Kind::Notification => intern!(py, "notification"),
            Kind::Response => intern!(py, "response"),
            Kind::Error => intern!(py, "error"),
        }
    }

    #[getter]
    fn id<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.fields.id {
            None | Some((_, JsonType::Null)) => Ok(py.None().into_bound(py)),
            Some((loc, JsonType::String)) => Ok(self.text(py, Some(loc)).unwrap_or_else(|| py.None().into_bound(py))),
            Some((loc, _)) => {
                let data = self.raw_bytes(py);
                let v = parse_i64(&data[loc.start as usize..loc.end as usize]).unwrap_or_default();
                v.into_bound_py_any(py)
            }
        }
    }

    #[getter]
    fn method<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.text(py, self.fields.method)
    }

    #[getter]
    fn session_id<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.text(py, self.fields.session_id)
    }

    #[getter]
    fn update_kind<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.text(py, self.fields.update_kind)
    }

    #[getter]
    fn tool_call_id<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.text(py, self.fields.tool_call_id)
    }

    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.raw_bytes(py))
    }

    #[getter]
    fn line(&self) -> Option<u64> {
        self.line
    }

    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.value(py, self.fields.params)
    }

    #[getter]
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.value(py, self.fields.result)
    }

    #[getter]
    fn error<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.value(py, self.fields.error)
    }

    /// The whole message as fresh Python objects.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let data = self.raw_bytes(py);
        build_span(py, data, 0, data.len())
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.raw(py)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyMessage>() {
            Ok(o) => self.raw_bytes(py) == o.get().raw_bytes(py),
            Err(_) => false,
        }
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.line_bytes.bind(py).hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut parts = vec![format!("kind={}", self.kind(py).repr()?)];
        if let Some(m) = self.method(py) {
            parts.push(format!("method={}", m.repr()?));
        }
        if self.fields.kind != Kind::Notification {
            parts.push(format!("id={}", self.id(py)?.repr()?));
        }
        Ok(format!("Message({})", parts.join(", ")))
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        static DECODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let decode = DECODE.import(py, "acp_fast._native", "decode")?;
        PyTuple::new(py, [decode.clone().into_any(), PyTuple::new(py, [self.raw(py)])?.into_any()])
    }
}

/// Decode one frame: a `Message`, a `Batch`, or raise `DecodeError`.
#[pyfunction]
pub fn decode<'py>(py: Python<'py>, line: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    with_bytes(line, |bytes| {
        let data = strip_line_ending(bytes);
        if data.len() > MAX_FRAME {
            let err = DecodeError::new(PARSE_ERROR, "frame_too_large", format!("expected a frame of at most {MAX_FRAME} bytes, found a longer line"), Some(MAX_FRAME));
            return Err(decode_error(py, &err, Origin::Document(data), None));
        }
        match frame_object(py, data, parse_frame(data), None)? {
            Ok(obj) => Ok(obj),
            Err(err) => Err(PyErr::from_value(err)),
        }
    })
}

/// Encode a `Message`, a dict or a list (batch) as one frame ending in `\n`.
#[pyfunction]
pub fn encode<'py>(py: Python<'py>, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(m) = message.cast::<PyMessage>() {
        return Ok(m.get().line_bytes.bind(py).clone().into_any());
    }
    if message.is_instance(batch_type(py)?)? && message.call_method0(intern!(py, "is_unchanged"))?.is_truthy()? {
        let raw = message.getattr(intern!(py, "raw"))?;
        let raw = raw.cast::<PyBytes>()?;
        return Ok(line_bytes(py, raw.as_bytes())?.into_any());
    }
    if message.is_instance_of::<pyo3::types::PyDict>() || message.is_instance_of::<PyList>() {
        return Ok(dumps_bytes(py, message, true)?.into_any());
    }
    let name = message.get_type().name()?;
    Err(PyTypeError::new_err(format!("expected a Message, a dict or a list, found {name}")))
}

/// Splits a byte stream into frames and decodes each one.
#[pyclass(module = "acp_fast", name = "FrameDecoder")]
pub struct PyFrameDecoder {
    framer: Framer,
}

impl PyFrameDecoder {
    fn collect<'py>(&mut self, py: Python<'py>, data: Option<&[u8]>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let max = self.framer.max_frame_bytes();
        let mut failure: Option<PyErr> = None;
        let mut on_event = |event: Event<'_>| {
            if failure.is_some() {
                return;
            }
            let item = match event {
                Event::Frame { line, data } => {
                    frame_object(py, data, parse_frame(data), Some(line)).map(|r| r.unwrap_or_else(|e| e))
                }
                Event::TooLarge { line } => {
                    let err = DecodeError::new(
                        PARSE_ERROR,
                        "frame_too_large",
                        format!("expected a frame of at most {max} bytes, found a longer line; skipped to the next newline"),
                        Some(max),
                    );
                    decode_error_object(py, &err, Origin::Stream { line }, None)
                }
            };
            match item.and_then(|obj| out.append(obj)) {
                Ok(()) => {}
                Err(e) => failure = Some(e),
            }
        };
        match data {
            Some(d) => self.framer.feed(d, &mut on_event),
            None => self.framer.finish(&mut on_event),
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

#[pymethods]
impl PyFrameDecoder {
    #[new]
    #[pyo3(signature = (*, max_frame_bytes = DEFAULT_MAX_FRAME_BYTES))]
    fn new(max_frame_bytes: usize) -> PyResult<Self> {
        if max_frame_bytes == 0 || max_frame_bytes > MAX_FRAME {
            return Err(PyValueError::new_err(format!(
                "max_frame_bytes must be between 1 and {MAX_FRAME}, found {max_frame_bytes}"
            )));
        }
        Ok(Self { framer: Framer::new(max_frame_bytes) })
    }

    /// Feed bytes; returns the results of every line completed by them, in order.
    fn feed<'py>(&mut self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        with_bytes(data, |bytes| self.collect(py, Some(bytes)))
    }

    /// End of input: decode a last line that has no newline.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.collect(py, None)
    }

    #[getter]
    fn line(&self) -> u64 {
        self.framer.line()
    }

    #[getter]
    fn buffered(&self) -> usize {
        self.framer.buffered()
    }

    #[getter]
    fn max_frame_bytes(&self) -> usize {
        self.framer.max_frame_bytes()
    }

    fn __repr__(&self) -> String {
        format!(
            "FrameDecoder(max_frame_bytes={}, line={}, buffered={})",
            self.framer.max_frame_bytes(),
            self.framer.line(),
            self.framer.buffered()
        )
    }
}

/// Parse one JSON document into Python objects.
#[pyfunction]
pub fn loads<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    with_bytes(data, |bytes| build(py, bytes, true).map_err(|e| decode_error(py, &e, Origin::Document(bytes), None)))
}

/// Serialize to compact JSON bytes.
#[pyfunction]
pub fn dumps<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    dumps_bytes(py, obj, false)
}
