//! `validate_schema` and `SchemaValidator`: strict validation against the official schema
//! (`crate::schema`). Argument conversion, the compiled schemas (read from the package's
//! `acp_fast/schema/` once, on first use) and the problems as `acp_fast.problems.SchemaProblem`.

use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};

use super::convert::dumps_bytes;
use super::errors::{decode_error, decode_error_type, Origin};
use super::frames::{source_of, PyMessage};
use crate::encoder::PathItem;
use crate::message::strip_line_ending;
use crate::schema::{render, Conversation, Problem, Schema, Severity, Tape};

static SCHEMAS: [PyOnceLock<Schema>; 4] = [
    PyOnceLock::new(),
    PyOnceLock::new(),
    PyOnceLock::new(),
    PyOnceLock::new(),
];
static PROBLEM: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TAPE: Mutex<Tape> = Mutex::new(Tape { entries: Vec::new() });

fn version_index(protocol_version: &Bound<'_, PyAny>, unstable: bool) -> PyResult<usize> {
    let version: Option<i64> = if protocol_version.is_instance_of::<pyo3::types::PyBool>() {
        None
    } else {
        protocol_version.extract().ok()
    };
    match version {
        Some(v @ (1 | 2)) => Ok((v as usize - 1) * 2 + usize::from(unstable)),
        _ => Err(PyValueError::new_err(format!(
            "expected protocol_version to be 1 or 2, found {}",
            protocol_version.repr()?
        ))),
    }
}

/// The compiled schema of protocol v1/v2, stable or unstable (`index` from `version_index`).
fn schema(py: Python<'_>, index: usize) -> PyResult<&'static Schema> {
    SCHEMAS[index].get_or_try_init(py, || {
        let version = index / 2 + 1;
        let name = if index % 2 == 1 {
            "schema.unstable.json"
        } else {
            "schema.json"
        };
        let files = py.import("importlib.resources")?.call_method1("files", ("acp_fast",))?;
        let text = files
            .call_method1("joinpath", (format!("schema/v{version}/{name}"),))?
            .call_method0("read_bytes")?;
        let text = text.cast::<PyBytes>()?;
        Schema::new(text.as_bytes(), version as u8).map_err(PyValueError::new_err)
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

/// `validate_schema(message_or_bytes, *, protocol_version=1, unstable=False, method=None)`.
#[pyfunction]
#[pyo3(signature = (message, *, protocol_version = None, unstable = false, method = None))]
pub fn validate_schema<'py>(
    py: Python<'py>,
    message: &Bound<'py, PyAny>,
    protocol_version: Option<&Bound<'py, PyAny>>,
    unstable: bool,
    method: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let index = match protocol_version {
        Some(v) => version_index(v, unstable)?,
        None => usize::from(unstable),
    };
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
    index: usize,
    conversation: Conversation,
}

#[pymethods]
impl PySchemaValidator {
    #[new]
    #[pyo3(signature = (*, protocol_version = None, unstable = false))]
    fn new(py: Python<'_>, protocol_version: Option<&Bound<'_, PyAny>>, unstable: bool) -> PyResult<Self> {
        let index = match protocol_version {
            Some(v) => version_index(v, unstable)?,
            None => usize::from(unstable),
        };
        schema(py, index)?;
        Ok(Self {
            index,
            conversation: Conversation::new(),
        })
    }

    /// The protocol version checked against.
    #[getter]
    fn protocol_version(&self) -> usize {
        self.index / 2 + 1
    }

    #[getter]
    fn unstable(&self) -> bool {
        self.index % 2 == 1
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
        let schema = schema(py, self.index)?;
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
    fn _sizes(&self) -> (usize, usize, u64) {
        self.conversation.sizes()
    }

    /// Test-only: start the conversation afresh with these limits (each at least 1) instead of
    /// `MAX_PENDING_IDS` and `MAX_TOOL_CALL_IDS`.
    fn _set_limits(&mut self, pending: i64, tool_calls: i64) -> PyResult<()> {
        if pending < 1 || tool_calls < 1 {
            return Err(PyValueError::new_err("expected limits of at least 1"));
        }
        self.conversation = Conversation::with_limits(pending as usize, tool_calls as usize);
        Ok(())
    }
}

/// The `strict_schema` option of `FrameDecoder` and `ToolCallStore`: every frame goes through a
/// conversation check; a frame with errors is reported as a `DecodeError` of kind `schema` (code
/// -32602, the first problem as its message, all of them in `problems`).
pub struct Strict {
    /// The fixed protocol version, or None to follow the `initialize` answer (1 until then).
    fixed: Option<usize>,
    conversation: Conversation,
    /// `FrameDecoder.sent` was called: the decoder reads one direction of a connection, whose
    /// frames are the sender `RECEIVED` (else its frames name no sender).
    directed: bool,
}

/// The two sides of a connection whose decoder is told what was sent (`FrameDecoder.sent`).
const RECEIVED: &str = "received";
const SENT: &str = "sent";

/// What `Strict::check` found in one frame.
pub enum Verdict<'py> {
    /// No problem of severity `error`.
    Valid,
    /// The frame as a whole fails: its `DecodeError`.
    Frame(Bound<'py, PyAny>),
    /// A batch checked entry by entry: the `DecodeError` of each entry that fails (None: valid).
    Entries(Vec<Option<Bound<'py, PyAny>>>),
}

impl Strict {
    /// `strict_schema`: False / None (off), True (follow the negotiation) or 1 / 2 (fixed).
    pub fn from_arg(arg: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Self>> {
        let Some(arg) = arg else { return Ok(None) };
        if arg.is_none() || arg.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(arg.is_truthy()?.then(|| Self {
                fixed: None,
                conversation: Conversation::new(),
                directed: false,
            }));
        }
        match arg.extract::<i64>() {
            Ok(v @ (1 | 2)) => Ok(Some(Self {
                fixed: Some(v as usize),
                conversation: Conversation::new(),
                directed: false,
            })),
            _ => Err(PyValueError::new_err(format!(
                "expected strict_schema to be a bool, 1 or 2, found {}",
                arg.repr()?
            ))),
        }
    }

    /// The option as given: `True` (follow the negotiation) or the fixed version.
    pub fn setting<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.fixed {
            Some(v) => Ok(v.into_pyobject(py)?.into_any()),
            None => Ok(pyo3::types::PyBool::new(py, true).to_owned().into_any()),
        }
    }

    /// Check the results of a `FrameDecoder`'s `feed` / `finish`, replacing the frames that fail
    /// (a batch as a whole).
    pub fn apply(&mut self, py: Python<'_>, results: &Bound<'_, PyList>) -> PyResult<()> {
        for index in 0..results.len() {
            let item = results.get_item(index)?;
            let raw = if let Ok(m) = item.cast::<PyMessage>() {
                PyBytes::new(py, m.get().raw_bytes(py))
            } else if item.is_instance_of::<PyList>() {
                item.getattr(pyo3::intern!(py, "raw"))?.cast_into::<PyBytes>()?
            } else {
                continue; // a DecodeError already
            };
            let line: Option<u64> = item.getattr(pyo3::intern!(py, "line"))?.extract()?;
            let sender = self.directed.then_some(RECEIVED);
            if let Verdict::Frame(error) = self.check(py, raw.as_bytes(), None, sender, line)? {
                results.set_item(index, error)?;
            }
        }
        Ok(())
    }

    /// `FrameDecoder.sent`: a frame sent the other way, into the conversation (a request is then
    /// pending, a response answers one received); its problems are not reported.
    pub fn sent(&mut self, py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<()> {
        self.directed = true;
        let bytes = frame_bytes(message)?;
        let schema = schema(py, self.schema_index())?;
        let mut tape = TAPE.lock().unwrap_or_else(|e| e.into_inner());
        // Not JSON: nothing to learn from it.
        let _ = self
            .conversation
            .check(schema, strip_line_ending(bytes.as_bytes()), Some(SENT), &mut tape);
        Ok(())
    }

    /// The schema in force: the fixed version, else the negotiated one, else 1 (stable).
    fn schema_index(&self) -> usize {
        let version = self
            .fixed
            .or(self.conversation.negotiated.map(usize::from))
            .unwrap_or(1);
        (version - 1) * 2
    }

    /// Check the frame `data` (no line ending), sent by `sender` (None: not said). `entries`: the
    /// byte ranges of a batch's entries, to judge each on its own (problems at the frame itself,
    /// such as a batch in protocol v1, still fail the whole frame); None: the frame as one.
    /// `line`: its stream line, for the errors.
    pub fn check<'py>(
        &mut self,
        py: Python<'py>,
        data: &[u8],
        entries: Option<&[(usize, usize)]>,
        sender: Option<&str>,
        line: Option<u64>,
    ) -> PyResult<Verdict<'py>> {
        let schema = schema(py, self.schema_index())?;
        let found = {
            let mut tape = TAPE.lock().unwrap_or_else(|e| e.into_inner());
            self.conversation.check(schema, data, sender, &mut tape)
        };
        // A frame the scanner refuses is the caller's to report (it decoded it already).
        let Ok(found) = found else { return Ok(Verdict::Valid) };
        let errors: Vec<Problem> = found.into_iter().filter(|p| p.severity == Severity::Error).collect();
        if errors.is_empty() {
            return Ok(Verdict::Valid);
        }
        let Some(entries) = entries else {
            return Ok(Verdict::Frame(schema_error(py, errors, line, data)?));
        };
        let entry_of = |p: &Problem| match p.path.first() {
            Some(PathItem::Index(i)) if *i < entries.len() => Some(*i),
            _ => None,
        };
        if errors.iter().any(|p| entry_of(p).is_none()) {
            return Ok(Verdict::Frame(schema_error(py, errors, line, data)?));
        }
        let mut by_entry: Vec<Vec<Problem>> = entries.iter().map(|_| Vec::new()).collect();
        for p in errors {
            if let Some(i) = entry_of(&p) {
                by_entry[i].push(p);
            }
        }
        let mut out = Vec::with_capacity(entries.len());
        for (problems, &(start, end)) in by_entry.into_iter().zip(entries) {
            out.push(if problems.is_empty() {
                None
            } else {
                Some(schema_error(py, problems, line, &data[start..end])?)
            });
        }
        Ok(Verdict::Entries(out))
    }
}

/// The `DecodeError` of kind `schema` for `errors` (not empty), of the frame or entry `raw`.
fn schema_error<'py>(
    py: Python<'py>,
    errors: Vec<Problem>,
    line: Option<u64>,
    raw: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    let more = if errors.len() > 1 {
        format!(" (and {} more)", errors.len() - 1)
    } else {
        String::new()
    };
    let kwargs = PyDict::new(py);
    kwargs.set_item("code", crate::error::INVALID_PARAMS)?;
    kwargs.set_item("kind", "schema")?;
    kwargs.set_item("line", line)?;
    kwargs.set_item("raw", PyBytes::new(py, raw))?;
    let message = format!("{}{more}", errors[0].message);
    let error = decode_error_type(py)?.call((message,), Some(&kwargs))?;
    error.setattr("problems", problems(py, errors)?)?;
    Ok(error)
}

/// Register the functions and classes of this file.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate_schema, m)?)?;
    m.add_class::<PySchemaValidator>()?;
    Ok(())
}
