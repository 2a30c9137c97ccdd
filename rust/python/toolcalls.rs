//! `ToolCallColumns`: the core's tool-call replay (`crate::toolcalls`) with its rows as an Arrow
//! record batch, handed to Python as `FrameColumns`' are (`arrow.rs`, `FrameStream`). Argument
//! conversion and the Arrow arrays only. Mirror: `_fallback/toolcalls.py`, whose `finish` returns
//! a `pyarrow.Table`.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::args::{Arg, SourceArg, Threads};
use super::arrow::{borrowed_file, detached_bytes, PyFrameStream};
use super::frames::source_of;
use crate::toolcalls::{Row, ToolCallColumns, COLUMNS, TIME_COLUMNS};

/// The schema of the rows (`times`: with `TIME_COLUMNS`): `session_id` and `tool_call_id` always
/// set, the others nullable.
fn schema(times: bool) -> SchemaRef {
    let names = COLUMNS.iter().chain(if times { &TIME_COLUMNS[..] } else { &[] });
    let fields: Vec<Field> = names
        .map(|&name| {
            let ty = if name.ends_with("_line") || matches!(name, "updates" | "content_items" | "content_bytes") {
                DataType::Int64
            } else if name.ends_with("_time") {
                DataType::Float64
            } else if name == "permission_approved" {
                DataType::Boolean
            } else {
                DataType::Utf8
            };
            Field::new(name, ty, !matches!(name, "session_id" | "tool_call_id"))
        })
        .collect();
    Arc::new(Schema::new(fields))
}

fn strings<'a>(rows: &'a [Row], f: impl Fn(&'a Row) -> Option<&'a [u8]>) -> ArrayRef {
    let mut b = StringBuilder::new();
    for r in rows {
        b.append_option(f(r).map(String::from_utf8_lossy));
    }
    Arc::new(b.finish())
}

fn ints(rows: &[Row], f: impl Fn(&Row) -> Option<u64>) -> ArrayRef {
    let mut b = Int64Builder::with_capacity(rows.len());
    for r in rows {
        b.append_option(f(r).map(|v| v as i64));
    }
    Arc::new(b.finish())
}

fn floats(rows: &[Row], f: impl Fn(&Row) -> Option<f64>) -> ArrayRef {
    let mut b = Float64Builder::with_capacity(rows.len());
    for r in rows {
        b.append_option(f(r));
    }
    Arc::new(b.finish())
}

/// The rows as one record batch of `schema(times)`.
fn record_batch(rows: &[Row], times: bool) -> PyResult<RecordBatch> {
    let mut approved = BooleanBuilder::with_capacity(rows.len());
    for r in rows {
        approved.append_option(r.permission_approved);
    }
    let mut columns: Vec<ArrayRef> = vec![
        strings(rows, |r| Some(&r.session_id)),
        strings(rows, |r| Some(&r.tool_call_id)),
        strings(rows, |r| r.kind.as_deref()),
        strings(rows, |r| r.title.as_deref()),
        strings(rows, |r| r.status.as_deref()),
        ints(rows, |r| r.first_line),
        ints(rows, |r| r.last_line),
        ints(rows, |r| r.updates),
        ints(rows, |r| Some(r.content_items)),
        ints(rows, |r| Some(r.content_bytes)),
        strings(rows, |r| r.permission_outcome.map(str::as_bytes)),
        Arc::new(approved.finish()),
        ints(rows, |r| r.permission_line),
        ints(rows, |r| r.permission_resolved_line),
    ];
    if times {
        columns.push(floats(rows, |r| r.first_time));
        columns.push(floats(rows, |r| r.last_time));
        columns.push(floats(rows, |r| r.permission_time));
        columns.push(floats(rows, |r| r.permission_resolved_time));
    }
    RecordBatch::try_new(schema(times), columns).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A stream replayed into one row per tool call (`acp_fast.arrow.tool_calls`): `feed` a plain
/// stream's bytes (its complete lines parsed in ranges on `threads - 1` threads while the
/// calling thread applies them in stream order, the GIL released; None: every core; `source`: the
/// sender), or give a recording's
/// lines one by one (`line`); `finish` returns the rows as an Arrow stream (`times`: with the
/// `*_time` columns).
#[pyclass(module = "acp_fast", name = "ToolCallColumns")]
pub struct PyToolCallColumns {
    inner: ToolCallColumns,
    times: bool,
}

#[pymethods]
impl PyToolCallColumns {
    #[new]
    #[pyo3(
        signature = (*, threads = None, source = None, times = false),
        text_signature = "(*, threads=None, source=None, times=False)"
    )]
    fn new(threads: Option<Arg<Threads>>, source: Option<Arg<SourceArg>>, times: bool) -> PyResult<Self> {
        let threads = Threads::or_default(threads)?;
        let source = SourceArg::or_unknown(source)?;
        Ok(Self {
            inner: ToolCallColumns::new(threads, source),
            times,
        })
    }

    /// Feed bytes of the stream: every line they complete is applied. A read-only buffer is read
    /// in place, not copied.
    fn feed(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let inner = &mut self.inner;
        detached_bytes(py, data, |bytes| inner.feed(bytes))
    }

    /// Feed the bytes `start..stop` of the open file whose descriptor is `fd` (not closed), as
    /// `feed` of those bytes would, read by the core, the GIL released. Returns the bytes fed,
    /// fewer than `stop - start` only when the file ends before `stop`; OSError when a read fails.
    fn feed_file(&mut self, py: Python<'_>, fd: i32, start: u64, stop: u64) -> PyResult<u64> {
        let file = borrowed_file(fd)?;
        let inner = &mut self.inner;
        Ok(py.detach(|| inner.feed_file(&*file, start, stop))?)
    }

    /// A recording's line `number` (its bytes, line ending optional), sent at `time` by `source`.
    #[pyo3(signature = (number, data, time = None, source = None))]
    fn line(
        &mut self,
        number: u64,
        data: &Bound<'_, PyAny>,
        time: Option<f64>,
        source: Option<Arg<SourceArg>>,
    ) -> PyResult<()> {
        let source = SourceArg::or_unknown(source)?;
        let data = source_of(data)?;
        self.inner.line(number, data.bytes.as_bytes(), time, source);
        Ok(())
    }

    /// End of input: the rows as an Arrow stream (`__arrow_c_stream__`).
    fn finish(&mut self, py: Python<'_>) -> PyResult<PyFrameStream> {
        let inner = &mut self.inner;
        let rows = py.detach(|| inner.finish());
        let batch = record_batch(&rows, self.times)?;
        Ok(PyFrameStream::new(schema(self.times), vec![batch]))
    }
}
