//! `validate_schema` and `SchemaValidator`: strict validation against the official schema
//! (`crate::schema`). Argument conversion, the compiled schemas (read from the package's
//! `acp_fast/schema/` once, on first use) and the problems as `acp_fast.problems.SchemaProblem`.

use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple, PyType};

use super::args::{Arg, Draft, SchemaVersion, StrictSchema};
use super::convert::dumps_bytes;
use super::errors::{decode_error, decode_error_type, Origin};
use super::frames::{source_of, PyMessage};
use crate::encoder::PathItem;
use crate::message::strip_line_ending;
use crate::schema::{render, stream, Conversation, Problem, Schema, Strict, Tape, Verdict, DRAFTS};

/// v1, then each of `DRAFTS`; stable and unstable each (`schema_index`).
static SCHEMAS: [PyOnceLock<Schema>; 2 + 2 * DRAFTS.len()] = [const { PyOnceLock::new() }; 2 + 2 * DRAFTS.len()];
static PROBLEM: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TAPE: Mutex<Tape> = Mutex::new(Tape { entries: Vec::new() });

/// The index in `SCHEMAS` of protocol version 1 or 2, the v2 draft (an index in `DRAFTS`),
/// stable or unstable.
fn schema_index(version: u8, draft: usize, unstable: bool) -> usize {
    let folder = if version == 1 { 0 } else { 1 + draft };
    folder * 2 + usize::from(unstable)
}

/// The compiled schema at `index` (`schema_index`), read from the package on first use.
fn schema(py: Python<'_>, index: usize) -> PyResult<&'static Schema> {
    SCHEMAS[index].get_or_try_init(py, || {
        let (version, folder) = match index / 2 {
            0 => (1, "v1"),
            n => (2, DRAFTS[n - 1].1),
        };
        let name = if index % 2 == 1 {
            "schema.unstable.json"
        } else {
            "schema.json"
        };
        let files = py.import("importlib.resources")?.call_method1("files", ("acp_fast",))?;
        let text = files
            .call_method1("joinpath", (format!("schema/{folder}/{name}"),))?
            .call_method0("read_bytes")?;
        let text = text.cast::<PyBytes>()?;
        Schema::new(text.as_bytes(), version).map_err(PyValueError::new_err)
    })
}

/// The frame to check: bytes-like and str as they are, a `Message` by its bytes, anything else
/// (a dict, a list) as `acp_fast.dumps` writes it.
fn frame_bytes<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    if let Ok(m) = obj.cast::<PyMessage>() {
        return Ok(PyBytes::new(obj.py(), m.get().raw_bytes(obj.py())));
    }
    if obj.is_instance_of::<PyDict>() || obj.is_instance_of::<PyList>() {
        return dumps_bytes(obj.py(), obj, false);
    }
    match source_of(obj) {
        Ok(source) => Ok(source.bytes),
        Err(err) if err.is_instance_of::<PyTypeError>(obj.py()) && !obj.is_instance_of::<PyString>() => {
            dumps_bytes(obj.py(), obj, false)
        }
        Err(err) => Err(err),
    }
}

fn problems<'py>(py: Python<'py>, found: Vec<Problem>) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    if found.is_empty() {
        return Ok(list);
    }
    let class = PROBLEM.import(py, "acp_fast.problems", "SchemaProblem")?;
    for p in found {
        let mut parts = Vec::with_capacity(p.path.len());
        for item in &p.path {
            parts.push(match item {
                PathItem::Key(k) => PyString::new(py, k).into_any(),
                PathItem::Index(i) => i.into_pyobject(py)?.into_any(),
            });
        }
        let location = PyTuple::new(py, parts)?;
        let item = class.call1((render(&p.path), p.message, p.severity.as_str(), p.rule, location))?;
        list.append(item)?;
    }
    Ok(list)
}

/// `validate_schema(message_or_bytes, *, protocol_version=1, unstable=False, method=None,
/// draft=None)`.
#[pyfunction]
#[pyo3(signature = (message, *, protocol_version = None, unstable = false, method = None, draft = None))]
pub fn validate_schema<'py>(
    py: Python<'py>,
    message: &Bound<'py, PyAny>,
    protocol_version: Option<Arg<SchemaVersion>>,
    unstable: bool,
    method: Option<&str>,
    draft: Option<Arg<Draft>>,
) -> PyResult<Bound<'py, PyList>> {
    let version = Arg::get(protocol_version)?.map_or(1, |v| v.0);
    let index = schema_index(version, Draft::or_newest(draft)?, unstable);
    let schema = schema(py, index)?;
    let bytes = frame_bytes(message)?;
    let data = strip_line_ending(bytes.as_bytes());
    let found = {
        let mut tape = TAPE.lock().unwrap_or_else(|e| e.into_inner());
        schema.validate(data, method, &mut tape)
    };
    match found {
        Ok(found) => problems(py, found),
        Err(err) => Err(decode_error(py, &err, Origin::Document(data), None)),
    }
}

/// Strict validation of a conversation: each message against the schema (a response against
/// the result of the request it answers) and the protocol rules that need what came before.
#[pyclass(module = "acp_fast", name = "SchemaValidator")]
pub struct PySchemaValidator {
    version: u8,
    draft: usize,
    unstable: bool,
    conversation: Conversation,
}

#[pymethods]
impl PySchemaValidator {
    #[new]
    #[pyo3(signature = (*, protocol_version = None, unstable = false, draft = None))]
    fn new(
        py: Python<'_>,
        protocol_version: Option<Arg<SchemaVersion>>,
        unstable: bool,
        draft: Option<Arg<Draft>>,
    ) -> PyResult<Self> {
        let version = Arg::get(protocol_version)?.map_or(1, |v| v.0);
        let draft = Draft::or_newest(draft)?;
        schema(py, schema_index(version, draft, unstable))?;
        Ok(Self {
            version,
            draft,
            unstable,
            conversation: Conversation::new(),
        })
    }

    /// The protocol version checked against.
    #[getter]
    fn protocol_version(&self) -> u8 {
        self.version
    }

    #[getter]
    fn unstable(&self) -> bool {
        self.unstable
    }

    /// The v2 draft checked against (under protocol version 2).
    #[getter]
    fn draft(&self) -> &'static str {
        DRAFTS[self.draft].0
    }

    /// The problems of the next message; `sender` names the side it comes from (a response
    /// answers a request from the other side; None: from either).
    #[pyo3(signature = (message, *, sender = None))]
    fn validate<'py>(
        &mut self,
        py: Python<'py>,
        message: &Bound<'py, PyAny>,
        sender: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let schema = schema(py, schema_index(self.version, self.draft, self.unstable))?;
        let bytes = frame_bytes(message)?;
        let data = strip_line_ending(bytes.as_bytes());
        let found = {
            let mut tape = TAPE.lock().unwrap_or_else(|e| e.into_inner());
            self.conversation.check(schema, data, sender, &mut tape)
        };
        match found {
            Ok(found) => problems(py, found),
            Err(err) => Err(decode_error(py, &err, Origin::Document(data), None)),
        }
    }

    /// Test-only: (pending request ids, tool call ids remembered, pending requests forgotten).
    #[pyo3(name = "_sizes")]
    fn sizes(&self) -> (usize, usize, u64) {
        self.conversation.sizes()
    }

    /// Test-only: start the conversation afresh with these limits (each at least 1) instead of
    /// `MAX_PENDING_IDS` and `MAX_TOOL_CALL_IDS`.
    #[pyo3(name = "_set_limits")]
    fn set_limits(&mut self, pending: i64, tool_calls: i64) -> PyResult<()> {
        if pending < 1 || tool_calls < 1 {
            return Err(PyValueError::new_err("expected limits of at least 1"));
        }
        self.conversation = Conversation::with_limits(pending as usize, tool_calls as usize);
        Ok(())
    }
}

/// The core's stream check (`crate::schema::Strict`) for a `strict_schema` argument (None or
/// False: none), against the stable or unstable schemas, v2 as `draft` (None: the newest).
pub fn strict_arg(
    py: Python<'_>,
    arg: Option<Arg<StrictSchema>>,
    unstable: bool,
    draft: Option<Arg<Draft>>,
) -> PyResult<Option<Strict>> {
    let draft = Draft::or_newest(draft)?;
    strict_of(py, Arg::get(arg)?.and_then(|a| a.0), unstable, draft)
}

/// The strict check of the settings `strict` (None: off; `Some(None)`: follow the negotiation;
/// else the fixed version), `unstable` and `draft` (an index in `DRAFTS`).
pub fn strict_of(py: Python<'_>, strict: Option<Option<u8>>, unstable: bool, draft: usize) -> PyResult<Option<Strict>> {
    match strict {
        Some(fixed) => {
            let schemas = [
                schema(py, schema_index(1, draft, unstable))?,
                schema(py, schema_index(2, draft, unstable))?,
            ];
            Ok(Some(Strict::new(fixed, schemas)))
        }
        None => Ok(None),
    }
}

/// The option as given: `False` (off), `True` (follow the negotiation) or the fixed version.
pub fn strict_setting<'py>(py: Python<'py>, strict: Option<&Strict>) -> PyResult<Bound<'py, PyAny>> {
    match strict.map(Strict::fixed) {
        Some(Some(v)) => Ok(v.into_pyobject(py)?.into_any()),
        Some(None) => Ok(PyBool::new(py, true).to_owned().into_any()),
        None => Ok(PyBool::new(py, false).to_owned().into_any()),
    }
}

/// Check the results of a `FrameDecoder`'s `feed` / `finish`, replacing the frames that fail (a
/// batch as a whole).
pub fn check_results(py: Python<'_>, strict: &mut Strict, results: &Bound<'_, PyList>) -> PyResult<()> {
    for index in 0..results.len() {
        let item = results.get_item(index)?;
        let raw = if let Ok(m) = item.cast::<PyMessage>() {
            PyBytes::new(py, m.get().raw_bytes(py))
        } else if item.is_instance_of::<PyList>() {
            item.getattr(pyo3::intern!(py, "raw"))?.cast_into::<PyBytes>()?
        } else {
            continue; // a DecodeError already
        };
        if let Verdict::Frame(problems) = strict.check(raw.as_bytes(), None, None) {
            let line: Option<u64> = item.getattr(pyo3::intern!(py, "line"))?.extract()?;
            results.set_item(index, schema_error(py, problems, line, raw.as_bytes())?)?;
        }
    }
    Ok(())
}

/// `FrameDecoder.sent`: a frame sent the other way, into the conversation.
pub fn sent(strict: &mut Strict, message: &Bound<'_, PyAny>) -> PyResult<()> {
    let bytes = frame_bytes(message)?;
    strict.sent(strip_line_ending(bytes.as_bytes()));
    Ok(())
}

/// The `DecodeError` of kind `schema` for `errors` (not empty), of the frame or entry `raw`.
pub fn schema_error<'py>(
    py: Python<'py>,
    errors: Vec<Problem>,
    line: Option<u64>,
    raw: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("code", crate::error::INVALID_PARAMS)?;
    kwargs.set_item("kind", "schema")?;
    kwargs.set_item("line", line)?;
    kwargs.set_item("raw", PyBytes::new(py, raw))?;
    let error = decode_error_type(py)?.call((stream::message(&errors),), Some(&kwargs))?;
    error.setattr("problems", problems(py, errors)?)?;
    Ok(error)
}

/// Register the functions and classes of this file.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate_schema, m)?)?;
    m.add_class::<PySchemaValidator>()?;
    Ok(())
}
