//! `Message`, `FrameDecoder`, `decode` and `encode`: thin wrappers over `message` and `decoder`.
//!
//! `FrameDecoder` is `frozen`, its core decoder in an `Exclusive` that every method and getter
//! locks: one object can be shared by threads (docs/API.md "Threads"; the reasons are at the top
//! of `mod.rs`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple};
use pyo3::{intern, IntoPyObjectExt};

use super::args::{Arg, Draft, MaxFrameBytes, StrictSchema};
use super::convert::{build, build_known, build_span, dumps_bytes, Known};
use super::errors::{batch_type, decode_error, decode_error_object, Origin};
use super::strcache::{token_str, CacheGuard, VALUES};
use super::Exclusive;
use crate::decoder::{Decoded, FrameDecoder};
use crate::error::{DecodeError, JsonType, PARSE_ERROR};
use crate::message::{parse_frame, strip_line_ending, Envelope, Frame, Kind, Span};
use crate::scanner::parse_i64;

/// One JSON-RPC message: a view of the frame's bytes plus where its routing fields are.
///
/// The bytes are not copied out of the buffer they were decoded from: a message holds a reference
/// to the `bytes` object given to `feed`/`decode` (or to a private copy when a frame spans two
/// `feed` calls or came from another buffer type), so a message kept alive keeps that buffer
/// alive too.
#[pyclass(module = "acp_fast", name = "Message", frozen, weakref)]
pub struct PyMessage {
    /// `"request"`, `"notification"`, `"response"` or `"error"`.
    #[pyo3(get)]
    kind: Py<PyAny>,
    /// The id (str / int / None; None for notifications).
    #[pyo3(get)]
    id: Py<PyAny>,
    /// The method name, or None for responses.
    #[pyo3(get)]
    method: Py<PyAny>,
    /// `params.sessionId` when it is a string, else None.
    #[pyo3(get)]
    session_id: Py<PyAny>,
    /// `params.update.sessionUpdate` when it is a string, else None.
    #[pyo3(get)]
    update_kind: Py<PyAny>,
    /// `params.update.toolCallId` when it is a string, else None.
    #[pyo3(get)]
    tool_call_id: Py<PyAny>,
    source: Py<PyBytes>,
    offset: usize,
    len: usize,
    fields: Envelope,
    line: Option<u64>,
}

impl PyMessage {
    /// Where the routing fields are (offsets in `raw_bytes`).
    pub fn envelope(&self) -> &Envelope {
        &self.fields
    }

    /// The frame's bytes without the line ending.
    pub fn raw_bytes<'a>(&'a self, py: Python<'a>) -> &'a [u8] {
        &self.source.as_bytes(py)[self.offset..self.offset + self.len]
    }

    fn value<'py>(&self, py: Python<'py>, span: Option<Span>) -> PyResult<Bound<'py, PyAny>> {
        match span {
            None => Ok(py.None().into_bound(py)),
            Some(s) => build_span(py, self.raw_bytes(py), s.start as usize, s.end as usize),
        }
    }

    /// The frame followed by `\n`: the source itself when it is exactly that, else a copy.
    fn line_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let src = self.source.bind(py);
        let all = src.as_bytes();
        if self.offset == 0 && all.len() == self.len + 1 && all[self.len] == b'\n' {
            return Ok(src.clone());
        }
        line_bytes(py, self.raw_bytes(py))
    }
}

/// Copy `data` plus `\n` into a new `bytes`.
fn line_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    concat_bytes(py, data, b"\n")
}

/// A new `bytes` holding `a` then `b`.
pub(crate) fn concat_bytes<'py>(py: Python<'py>, a: &[u8], b: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    // Not `PyBytes::new_with`: it zero-fills the buffer first, which on large frames cost as
    // much as the copy itself.
    // SAFETY: PyBytes_FromStringAndSize(NULL, n) returns an uninitialised bytes object of n bytes
    // (or NULL with an exception); every byte is written before it is shared.
    unsafe {
        let obj = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), (a.len() + b.len()) as pyo3::ffi::Py_ssize_t);
        let obj = Bound::from_owned_ptr_or_err(py, obj)?;
        let buf = pyo3::ffi::PyBytes_AsString(obj.as_ptr()).cast::<u8>();
        std::ptr::copy_nonoverlapping(a.as_ptr(), buf, a.len());
        std::ptr::copy_nonoverlapping(b.as_ptr(), buf.add(a.len()), b.len());
        Ok(obj.cast_into_unchecked())
    }
}

/// A buffer that frames are views into: the caller's `bytes`, or a copy.
pub(crate) struct Source<'py> {
    pub(crate) bytes: Bound<'py, PyBytes>,
}

impl<'py> Source<'py> {
    /// Offset of `frame` within this source, when it lies there.
    pub(crate) fn locate(&self, frame: &[u8]) -> Option<usize> {
        let all = self.bytes.as_bytes();
        let base = all.as_ptr() as usize;
        let p = frame.as_ptr() as usize;
        (p >= base && p + frame.len() <= base + all.len()).then(|| p - base)
    }
}

/// The `str` of a string span (from the value cache when it is ours), or None.
#[inline]
fn text(py: Python<'_>, data: &[u8], span: Option<Span>, cache: &mut Option<CacheGuard<'_>>) -> Py<PyAny> {
    match span.and_then(|s| s.str()) {
        Some(s) => token_str(py, data, s, cache),
        None => py.None(),
    }
}

fn id_value(
    py: Python<'_>,
    data: &[u8],
    span: Option<Span>,
    cache: &mut Option<CacheGuard<'_>>,
) -> PyResult<Py<PyAny>> {
    match span {
        Some(s) if s.ty == JsonType::String => Ok(text(py, data, Some(s), cache)),
        Some(s) if s.ty == JsonType::Number => Ok(parse_i64(&data[s.range()])
            .unwrap_or_default()
            .into_bound_py_any(py)?
            .unbind()),
        _ => Ok(py.None()),
    }
}

fn new_message<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyBytes>,
    offset: usize,
    len: usize,
    env: &Envelope,
    line: Option<u64>,
    cache: &mut Option<CacheGuard<'_>>,
) -> PyResult<Bound<'py, PyAny>> {
    let data = &source.as_bytes()[offset..offset + len];
    let kind = match env.kind {
        Kind::Request => intern!(py, "request"),
        Kind::Notification => intern!(py, "notification"),
        Kind::Response => intern!(py, "response"),
        Kind::Error => intern!(py, "error"),
    };
    let msg = PyMessage {
        kind: kind.clone().into_any().unbind(),
        id: id_value(py, data, env.id, cache)?,
        method: text(py, data, env.method, cache),
        session_id: text(py, data, env.session_id, cache),
        update_kind: text(py, data, env.update_kind, cache),
        // Not cached: each tool call has a new id (see `strcache`).
        tool_call_id: text(py, data, env.tool_call_id, &mut None),
        source: source.clone().unbind(),
        offset,
        len,
        fields: *env,
        line,
    };
    // Never tracked by the cyclic GC: `untracked` allocates every Message outside it.
    Ok(Bound::new(py, msg)?.into_any())
}

/// Turn a parsed frame into `Message` / `Batch` / `DecodeError` objects. `data` lies in `source`
/// at `offset`.
fn frame_object<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyBytes>,
    offset: usize,
    data: &[u8],
    parsed: &Result<Frame, DecodeError>,
    line: Option<u64>,
    cache: &mut Option<CacheGuard<'_>>,
) -> PyResult<Result<Bound<'py, PyAny>, Bound<'py, PyAny>>> {
    let origin = |line: Option<u64>| match line {
        Some(line) => Origin::Stream { line },
        None => Origin::Document(data),
    };
    match parsed {
        Ok(Frame::Single(env)) => Ok(Ok(new_message(py, source, offset, data.len(), env, line, cache)?)),
        Ok(Frame::Batch(entries)) => {
            let list = PyList::empty(py);
            for entry in entries {
                let bytes = &data[entry.start..entry.end];
                match &entry.result {
                    Ok(env) => list.append(new_message(
                        py,
                        source,
                        offset + entry.start,
                        bytes.len(),
                        env,
                        line,
                        cache,
                    )?)?,
                    Err(e) => list.append(decode_error_object(py, e, origin(line), Some(bytes))?)?,
                }
            }
            let raw = PyBytes::new(py, data);
            Ok(Ok(batch_type(py)?.call1((list, raw, line))?))
        }
        Err(e) => Ok(Err(decode_error_object(py, e, origin(line), Some(data))?)),
    }
}

/// The objects of the parsed frame `data`, a view of `source` if it lies there, else of a copy.
fn object_in<'py>(
    py: Python<'py>,
    source: &Source<'py>,
    data: &[u8],
    parsed: &Result<Frame, DecodeError>,
    line: Option<u64>,
    cache: &mut Option<CacheGuard<'_>>,
) -> PyResult<Result<Bound<'py, PyAny>, Bound<'py, PyAny>>> {
    match source.locate(data) {
        Some(offset) => frame_object(py, &source.bytes, offset, data, parsed, line, cache),
        None => {
            let own = PyBytes::new(py, data);
            frame_object(py, &own, 0, data, parsed, line, cache)
        }
    }
}

/// The bytes of a bytes / bytearray / memoryview / str argument as a `bytes` object (the
/// argument itself when it is `bytes`).
pub(crate) fn source_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Source<'py>> {
    let py = obj.py();
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Source { bytes: b.clone() });
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_str() {
            Ok(t) => Ok(Source {
                bytes: PyBytes::new(py, t.as_bytes()),
            }),
            Err(_) => {
                let _ = PyErr::take(py);
                Err(surrogate_error(py, s))
            }
        };
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Source {
            bytes: PyBytes::new(py, &b.to_vec()),
        });
    }
    if let Ok(buf) = pyo3::buffer::PyBuffer::<u8>::get(obj) {
        return Ok(Source {
            bytes: PyBytes::new(py, &buf.to_vec(py)?),
        });
    }
    let name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    Err(PyTypeError::new_err(format!(
        "expected bytes, bytearray, memoryview or str, found {name}"
    )))
}

#[cold]
fn surrogate_error(py: Python<'_>, s: &Bound<'_, PyString>) -> PyErr {
    // SAFETY: reading code points of a str by index within its length.
    let cp = unsafe {
        let n = pyo3::ffi::PyUnicode_GetLength(s.as_ptr());
        (0..n)
            .map(|i| pyo3::ffi::PyUnicode_ReadChar(s.as_ptr(), i))
            .find(|c| (0xD800..=0xDFFF).contains(c))
    };
    let _ = PyErr::take(py);
    let err = DecodeError::new(
        PARSE_ERROR,
        "invalid_utf8",
        format!(
            "expected a str encodable as UTF-8, found unpaired surrogate U+{:04X}",
            cp.unwrap_or(0xD800)
        ),
        None,
    );
    decode_error(py, &err, Origin::Document(b""), None)
}

#[pymethods]
impl PyMessage {
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
        // The routing strings this message already holds go into the dict as they are (the
        // bytes are immutable: the same text, so the same values); no need to make them again.
        let mut known = Known::default();
        let routing = [
            (self.fields.id, &self.id),
            (self.fields.method, &self.method),
            (self.fields.session_id, &self.session_id),
            (self.fields.update_kind, &self.update_kind),
            (self.fields.tool_call_id, &self.tool_call_id),
        ];
        for (span, obj) in routing {
            if let Some(s) = span.and_then(|s| s.str()) {
                if !obj.is_none(py) {
                    known.add(s.start, obj);
                }
            }
        }
        build_known(py, data, false, known).map_err(|e| PyTypeError::new_err(e.description.clone()))
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
        PyBytes::new(py, self.raw_bytes(py)).hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut parts = vec![format!("kind={}", self.kind.bind(py).repr()?)];
        if !self.method.is_none(py) {
            parts.push(format!("method={}", self.method.bind(py).repr()?));
        }
        if self.fields.kind != Kind::Notification {
            parts.push(format!("id={}", self.id.bind(py).repr()?));
        }
        Ok(format!("Message({})", parts.join(", ")))
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        static DECODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let decode = DECODE.import(py, "acp_fast._native", "decode")?;
        PyTuple::new(
            py,
            [decode.clone().into_any(), PyTuple::new(py, [self.raw(py)])?.into_any()],
        )
    }
}

/// Decode one frame: a `Message`, a `Batch`, or raise `DecodeError`.
#[pyfunction]
pub fn decode<'py>(py: Python<'py>, line: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let source = source_of(line)?;
    let bytes = source.bytes.as_bytes();
    let data = strip_line_ending(bytes);
    match object_in(py, &source, data, &parse_frame(data), None, &mut VALUES.lock())? {
        Ok(obj) => Ok(obj),
        Err(err) => Err(PyErr::from_value(err)),
    }
}

/// Encode a `Message`, a dict or a list (batch) as one frame ending in `\n`.
#[pyfunction]
pub fn encode<'py>(py: Python<'py>, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(m) = message.cast::<PyMessage>() {
        return Ok(m.get().line_bytes(py)?.into_any());
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
    Err(PyTypeError::new_err(format!(
        "expected a Message, a dict or a list, found {name}"
    )))
}

/// Splits a byte stream into frames and decodes each one.
#[pyclass(module = "acp_fast", name = "FrameDecoder", frozen)]
pub struct PyFrameDecoder {
    decoder: Exclusive<Decoding>,
}

/// What one lock guards: the decoder and, with `strict_schema`, the conversation its frames are
/// checked in (checked in the order they were decoded).
struct Decoding {
    decoder: FrameDecoder,
    strict: Option<crate::schema::Strict>,
}

impl PyFrameDecoder {
    fn collect<'py>(&self, py: Python<'py>, source: Option<&Source<'py>>) -> PyResult<Bound<'py, PyList>> {
        let mut state = self.decoder.lock(py)?;
        let out = Self::collect_in(&mut state.decoder, py, source)?;
        if let Some(strict) = &mut state.strict {
            super::schema::check_results(py, strict, &out)?;
        }
        Ok(out)
    }

    /// `collect` with the decoder locked. A function of its own: written inline in `collect`,
    /// the per-frame loop compiled some 10 ns per frame slower (benches/ab.py, tiny profile).
    fn collect_in<'py>(
        decoder: &mut FrameDecoder,
        py: Python<'py>,
        source: Option<&Source<'py>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let _gc = super::GcPause::new(py);
        let out = PyList::empty(py);
        let mut failure: Option<PyErr> = None;
        let mut cache = VALUES.lock();
        let mut on_line = |decoded: Decoded<'_>| {
            if failure.is_some() {
                return;
            }
            let item = match decoded {
                Decoded::Frame { line, data, frame } => match source {
                    Some(src) => object_in(py, src, data, frame, Some(line), &mut cache),
                    None => {
                        let own = PyBytes::new(py, data);
                        frame_object(py, &own, 0, data, frame, Some(line), &mut cache)
                    }
                }
                .map(|r| r.unwrap_or_else(|e| e)),
                Decoded::TooLarge { line, error } => decode_error_object(py, &error, Origin::Stream { line }, None),
            };
            match item.and_then(|obj| out.append(obj)) {
                Ok(()) => {}
                Err(e) => failure = Some(e),
            }
        };
        match source {
            Some(src) => decoder.feed(src.bytes.as_bytes(), &mut on_line),
            None => decoder.finish(&mut on_line),
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
    #[pyo3(
        signature = (*, max_frame_bytes = None, strict_schema = None, unstable = false, draft = None),
        text_signature = "(*, max_frame_bytes=67108864, strict_schema=False, unstable=False, draft=None)"
    )]
    fn new(
        py: Python<'_>,
        max_frame_bytes: Option<Arg<MaxFrameBytes>>,
        strict_schema: Option<Arg<StrictSchema>>,
        unstable: bool,
        draft: Option<Arg<Draft>>,
    ) -> PyResult<Self> {
        Ok(Self {
            decoder: Exclusive::new(
                "FrameDecoder",
                Decoding {
                    decoder: FrameDecoder::new(MaxFrameBytes::or_default(max_frame_bytes)?),
                    strict: super::schema::strict_arg(py, strict_schema, unstable, draft)?,
                },
            ),
        })
    }

    /// Feed bytes; returns the results of every line completed by them, in order.
    fn feed<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let source = source_of(data)?;
        self.collect(py, Some(&source))
    }

    /// End of input: decode a last line that has no newline.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.collect(py, None)
    }

    /// With `strict_schema`: a frame sent the other way on the same connection, so that the
    /// responses read are checked against the requests sent (and the requests read are answered);
    /// without it, nothing.
    fn sent(&self, py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<()> {
        match &mut self.decoder.lock(py)?.strict {
            Some(strict) => super::schema::sent(strict, message),
            None => Ok(()),
        }
    }

    #[getter]
    fn line(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.decoder.lock(py)?.decoder.framer().line())
    }

    #[getter]
    fn buffered(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.decoder.lock(py)?.decoder.framer().buffered())
    }

    #[getter]
    fn max_frame_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.decoder.lock(py)?.decoder.framer().max_frame_bytes())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let state = self.decoder.lock(py)?;
        let framer = state.decoder.framer();
        Ok(format!(
            "FrameDecoder(max_frame_bytes={}, line={}, buffered={})",
            framer.max_frame_bytes(),
            framer.line(),
            framer.buffered()
        ))
    }
}

/// Parse one JSON document into Python objects.
#[pyfunction]
pub fn loads<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let run = |bytes: &[u8], check_utf8: bool| {
        build(py, bytes, check_utf8).map_err(|e| decode_error(py, &e, Origin::Document(bytes), None))
    };
    if let Ok(s) = data.cast::<PyString>() {
        // The UTF-8 of a `str` is valid by construction: no check.
        if let Ok(text) = s.to_str() {
            return run(text.as_bytes(), false);
        }
    }
    let source = source_of(data)?;
    run(source.bytes.as_bytes(), true)
}

/// Serialize to compact JSON bytes.
#[pyfunction]
pub fn dumps<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    dumps_bytes(py, obj, false)
}
