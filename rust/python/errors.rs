//! Core errors → the Python exception classes of `acp_fast.errors` (shared with the fallback, so
//! both backends raise the very same types with the very same messages).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyType};

use crate::encoder::{render_path, PathItem};
use crate::error::{line_column, DecodeError};

static DECODE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ENCODE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static BATCH: PyOnceLock<Py<PyType>> = PyOnceLock::new();

pub fn decode_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    DECODE_ERROR.import(py, "acp_fast.errors", "DecodeError")
}

pub fn batch_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    BATCH.import(py, "acp_fast.batch", "Batch")
}

/// Where an error's line and column come from.
pub enum Origin<'a> {
    /// A standalone document or frame: line/column computed within `data`.
    Document(&'a [u8]),
    /// Line `line` of a stream: column = position + 1.
    Stream { line: u64 },
}

/// Build (not raise) an `acp_fast.DecodeError` instance.
#[cold]
pub fn decode_error_object<'py>(
    py: Python<'py>,
    err: &DecodeError,
    origin: Origin<'_>,
    raw: Option<&[u8]>,
) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("code", err.code)?;
    kwargs.set_item("kind", err.kind)?;
    kwargs.set_item("position", err.position)?;
    if let Some(pos) = err.position {
        let (lineno, colno) = match origin {
            Origin::Document(data) => line_column(data, pos),
            Origin::Stream { line } => (line as usize, pos + 1),
        };
        kwargs.set_item("lineno", lineno)?;
        kwargs.set_item("colno", colno)?;
    }
    if let Origin::Stream { line } = origin {
        kwargs.set_item("line", line)?;
    }
    if let Some(raw) = raw {
        kwargs.set_item("raw", PyBytes::new(py, raw))?;
    }
    decode_error_type(py)?.call((err.description.as_str(),), Some(&kwargs))
}

/// Build the `PyErr` for raising a decode error.
#[cold]
pub fn decode_error(py: Python<'_>, err: &DecodeError, origin: Origin<'_>, raw: Option<&[u8]>) -> PyErr {
    match decode_error_object(py, err, origin, raw) {
        Ok(obj) => PyErr::from_value(obj),
        Err(e) => e,
    }
}

/// Why an object could not be encoded, with the path collected while unwinding. Boxed so that
/// the writer's `Result<(), EncodeFailure>` is one word.
pub struct EncodeFailure(Box<Failure>);

pub struct Failure {
    pub kind: &'static str,
    pub description: String,
    /// Innermost step first.
    pub path: Vec<PathItem>,
    /// A Python exception that is not ours (e.g. MemoryError) to re-raise unchanged.
    pub python: Option<PyErr>,
}

impl EncodeFailure {
    #[cold]
    pub fn new(kind: &'static str, description: String) -> Self {
        Self(Box::new(Failure {
            kind,
            description,
            path: Vec::new(),
            python: None,
        }))
    }

    #[cold]
    pub fn python(err: PyErr) -> Self {
        Self(Box::new(Failure {
            kind: "",
            description: String::new(),
            path: Vec::new(),
            python: Some(err),
        }))
    }

    #[cold]
    #[must_use]
    pub fn at(mut self, item: PathItem) -> Self {
        self.0.path.push(item);
        self
    }

    #[cold]
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let failure = *self.0;
        if let Some(e) = failure.python {
            return e;
        }
        let mut path = failure.path;
        path.reverse();
        let result = (|| -> PyResult<PyErr> {
            let kwargs = PyDict::new(py);
            kwargs.set_item("path", render_path(&path))?;
            kwargs.set_item("kind", failure.kind)?;
            let ty = ENCODE_ERROR.import(py, "acp_fast.errors", "EncodeError")?;
            Ok(PyErr::from_value(ty.call((failure.description,), Some(&kwargs))?))
        })();
        result.unwrap_or_else(|e| e)
    }
}
