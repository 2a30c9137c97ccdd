//! The arguments the classes and functions of `_native` share, each a type with its check
//! (`Check`) and the exact message the fallback gives for a value it refuses. A method takes
//! `Option<Arg<T>>` (left out or None: `None`, as PyO3 reads None) and calls `Arg::get` in its
//! body: PyO3 adds a note ("while processing 'x'") to an error raised while it extracts an
//! argument, which the fallback's errors do not have.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

use crate::columns::{check_threads, default_threads, threads_not_an_int, threads_out_of_range};
use crate::framing::{check_max_frame_bytes, max_frame_bytes_not_an_int, max_frame_bytes_out_of_range};
use crate::schema::{unknown_draft, DRAFTS};
use crate::state::{Limits, Source};

type Borrowed<'a, 'py> = pyo3::Borrowed<'a, 'py, PyAny>;

/// How an argument of this type is read, or why it is refused.
pub trait Check: Sized {
    fn check(obj: Borrowed<'_, '_>) -> PyResult<Self>;
}

/// An argument as given, checked: its value or its error, raised by `get` in the method's body.
pub struct Arg<T>(PyResult<T>);

impl<'a, 'py, T: Check> FromPyObject<'a, 'py> for Arg<T> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py>) -> PyResult<Self> {
        Ok(Self(T::check(obj)))
    }
}

impl<T> Arg<T> {
    /// The value of an argument that may be left out (None when it was, or was None).
    pub fn get(arg: Option<Self>) -> PyResult<Option<T>> {
        arg.map(|a| a.0).transpose()
    }
}

/// An `int` (exactly: not a `bool`, not a subclass) that fits in an `i64`.
fn exact_int(obj: &Borrowed<'_, '_>) -> Option<i64> {
    if obj.is_exact_instance_of::<PyInt>() {
        obj.extract::<i64>().ok()
    } else {
        None
    }
}

/// `ToolCallStore(protocol_version)`: 1 or 2 (None: follow the negotiation).
pub struct ProtocolVersion(pub u8);

impl Check for ProtocolVersion {
    fn check(obj: Borrowed<'_, '_>) -> PyResult<Self> {
        match exact_int(&obj) {
            Some(v @ (1 | 2)) => Ok(Self(v as u8)),
            _ => Err(PyValueError::new_err(format!(
                "expected protocol_version to be 1, 2 or None, found {}",
                obj.repr()?
            ))),
        }
    }
}

/// The `protocol_version` of a schema check (`validate_schema`, `SchemaValidator`): 1 or 2.
pub struct SchemaVersion(pub u8);

impl Check for SchemaVersion {
    fn check(obj: Borrowed<'_, '_>) -> PyResult<Self> {
        let version = if obj.is_instance_of::<PyBool>() {
            None
        } else {
            obj.extract::<i64>().ok()
        };
        match version {
            Some(v @ (1 | 2)) => Ok(Self(v as u8)),
            _ => Err(PyValueError::new_err(format!(
                "expected protocol_version to be 1 or 2, found {}",
                obj.repr()?
            ))),
        }
    }
}

/// `draft`: the name of a v2 draft in `schema::DRAFTS` (None: the newest), as its index.
pub struct Draft(pub usize);

impl Check for Draft {
    fn check(obj: Borrowed<'_, '_>) -> PyResult<Self> {
        let name = obj.cast::<PyString>().ok().map(|s| s.to_string());
        match name.and_then(|n| DRAFTS.iter().position(|(d, _)| *d == n)) {
            Some(index) => Ok(Self(index)),
            None => Err(PyValueError::new_err(unknown_draft(&obj.repr()?.to_string()))),
        }
    }
}

impl Draft {
    /// The index of a `draft` argument (left out or None: 0, the newest).
    pub fn or_newest(arg: Option<Arg<Self>>) -> PyResult<usize> {
        Ok(Arg::get(arg)?.map_or(0, |d| d.0))
    }
}

/// `strict_schema`: False (off), True (follow the negotiation) or 1 / 2 (fixed). `Some(None)`:
/// follow; `Some(Some(v))`: fixed; `None`: off.
pub struct StrictSchema(pub Option<Option<u8>>);

impl Check for StrictSchema {
    fn check(obj: Borrowed<'_, '_>) -> PyResult<Self> {
        if obj.is_instance_of::<PyBool>() {
            return Ok(Self(obj.is_truthy()?.then_some(None)));
        }
        match obj.extract::<i64>() {
            Ok(v @ (1 | 2)) => Ok(Self(Some(Some(v as u8)))),
            _ => Err(PyValueError::new_err(format!(
                "expected strict_schema to be a bool, 1 or 2, found {}",
                obj.repr()?
            ))),
        }
    }
}

/// `max_frame_bytes` (`framing::check_max_frame_bytes`): an `int` (not a `bool`) from 1 to
/// `MAX_FRAME_BYTES` (None: the default); else the TypeError / ValueError saying why not.
pub struct MaxFrameBytes(pub usize);

impl Check for MaxFrameBytes {
    fn check(obj: Borrowed<'_, '_>) -> PyResult<Self> {
        if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
            let name = obj.get_type().name()?;
            return Err(PyTypeError::new_err(max_frame_bytes_not_an_int(&name.to_string())));
        }
        match obj.extract::<i64>() {
            Ok(v) => check_max_frame_bytes(v).map(Self).map_err(PyValueError::new_err),
            Err(_) => Err(PyValueError::new_err(max_frame_bytes_out_of_range(obj.str()?))),
        }
    }
}

impl MaxFrameBytes {
    /// The value of an argument that may be left out (the default).
    pub fn or_default(arg: Option<Arg<Self>>) -> PyResult<usize> {
        Ok(Arg::get(arg)?.map_or(crate::framing::DEFAULT_MAX_FRAME_BYTES, |m| m.0))
    }
}

/// `threads` of `FrameColumns`: an int from 1 to `columns::MAX_THREADS` (None: every core).
pub struct Threads(pub usize);

impl Check for Threads {
    fn check(obj: Borrowed<'_, '_>) -> PyResult<Self> {
        if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
            let name = obj.get_type().name()?;
            return Err(PyTypeError::new_err(threads_not_an_int(&name.to_string())));
        }
        match obj.extract::<i64>() {
            Ok(v) => check_threads(v).map(Self).map_err(PyValueError::new_err),
            Err(_) => Err(PyValueError::new_err(threads_out_of_range(obj.str()?))),
        }
    }
}

impl Threads {
    /// The value of an argument that may be left out (every core).
    pub fn or_default(arg: Option<Arg<Self>>) -> PyResult<usize> {
        Ok(Arg::get(arg)?.map_or_else(default_threads, |t| t.0))
    }
}

/// `source` of `ToolCallStore.apply` / `feed` / `finish`: `"agent"` or `"client"` (None: not
/// said).
pub struct SourceArg(pub Source);

impl Check for SourceArg {
    fn check(obj: Borrowed<'_, '_>) -> PyResult<Self> {
        let text = obj
            .cast::<PyString>()
            .ok()
            .and_then(|s| s.to_str().ok().map(str::to_owned));
        match text.as_deref() {
            Some("agent") => Ok(Self(Source::Agent)),
            Some("client") => Ok(Self(Source::Client)),
            _ => Err(PyValueError::new_err(format!(
                "expected source to be 'agent', 'client' or None, found {}",
                obj.repr()?
            ))),
        }
    }
}

impl SourceArg {
    /// The source of an argument that may be left out (not said).
    pub fn or_unknown(arg: Option<Arg<Self>>) -> PyResult<Source> {
        Ok(Arg::get(arg)?.map_or(Source::Unknown, |s| s.0))
    }
}

/// A bound argument (`max_updates`, ...) as given: `Default` when omitted (an `Option` would read
/// an explicit None, which means "no bound", as omitted).
pub enum LimitArg<'py> {
    Default,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for LimitArg<'py> {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self::Given(obj.to_owned()))
    }
}

/// A bound of `Limits`: omitted, the default; None, no bound; else an `int` from `min` to 2**63-1
/// (DESIGN §7.1).
pub fn limit_arg(v: LimitArg<'_>, name: &str, min: u64, default: Option<usize>) -> PyResult<Option<usize>> {
    let v = match v {
        LimitArg::Default => return Ok(default),
        LimitArg::Given(v) if v.is_none() => return Ok(None),
        LimitArg::Given(v) => v,
    };
    if v.is_exact_instance_of::<PyInt>() {
        if let Ok(n) = v.extract::<i64>() {
            if n >= min as i64 {
                return Ok(Some(n as usize));
            }
        }
    }
    let what = Limits::what(min);
    Err(PyValueError::new_err(format!(
        "expected {name} to be {} or None, found {}",
        what.strip_suffix(" or null").unwrap_or(what),
        v.repr()?
    )))
}
