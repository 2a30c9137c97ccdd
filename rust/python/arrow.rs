//! `FrameColumns`: the core's columnar frames (`crate::columns`) as Arrow record batches, handed
//! to Python through the Arrow PyCapsule interface (`__arrow_c_stream__`), so that pyarrow,
//! Polars or DuckDB take the buffers without a copy. Mirror: `_fallback/columns.py`, whose
//! `finish` returns a `pyarrow.Table` (which has the same method).

use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, RecordBatchIterator, StringArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyList, PyString, PyTuple};

use super::args::{Arg, MaxFrameBytes, Threads};
use super::frames::source_of;
use crate::columns::{
    check_names, columns_not_names, Batch, FrameColumns, Validity, VarColumn, Wanted, COLUMNS, MAX_LINE_BYTES,
};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFrameColumns>()?;
    m.add_class::<super::toolcalls::PyToolCallColumns>()
}

/// The schema of the columns `order` (indexes into `COLUMNS`): `line` and `kind` always set, the
/// others nullable.
fn schema(order: &[usize]) -> SchemaRef {
    let types = [
        DataType::Int64,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Int64,
        DataType::Utf8,
        DataType::Binary,
    ];
    let fields: Vec<Field> = order
        .iter()
        .map(|&i| Field::new(COLUMNS[i], types[i].clone(), i >= 2))
        .collect();
    Arc::new(Schema::new(fields))
}

fn nulls(v: Validity) -> Option<NullBuffer> {
    (v.nulls > 0).then(|| NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(v.bits), 0, v.len)))
}

fn offsets(c: &mut VarColumn) -> (OffsetBuffer<i32>, Buffer, Option<NullBuffer>) {
    let c = std::mem::take(c);
    (
        OffsetBuffer::new(ScalarBuffer::from(c.offsets)),
        Buffer::from_vec(c.values),
        nulls(c.validity),
    )
}

fn utf8(c: &mut VarColumn) -> ArrayRef {
    let (offsets, values, nulls) = offsets(c);
    if cfg!(debug_assertions) {
        return Arc::new(StringArray::new(offsets, values, nulls));
    }
    // SAFETY: the offsets are checked by `OffsetBuffer::new` and lie within `values` (each one is
    // the length of `values` when a row was closed); every value is UTF-8: decoded JSON strings
    // of a line checked to be UTF-8, ids written by the encoder, ASCII names.
    Arc::new(unsafe { StringArray::new_unchecked(offsets, values, nulls) })
}

fn binary(c: &mut VarColumn) -> ArrayRef {
    let (offsets, values, nulls) = offsets(c);
    Arc::new(BinaryArray::new(offsets, values, nulls))
}

/// The column `COLUMNS[i]` of `b` as an Arrow array (taken out of `b`).
fn column(b: &mut Batch, i: usize) -> ArrayRef {
    match i {
        0 => Arc::new(Int64Array::new(ScalarBuffer::from(std::mem::take(&mut b.line)), None)),
        1 => utf8(&mut b.kind),
        2 => utf8(&mut b.method),
        3 => utf8(&mut b.id),
        4 => utf8(&mut b.session_id),
        5 => utf8(&mut b.update_kind),
        6 => utf8(&mut b.tool_call_id),
        7 => utf8(&mut b.status),
        8 => Arc::new(Int64Array::new(
            ScalarBuffer::from(std::mem::take(&mut b.bytes)),
            nulls(std::mem::take(&mut b.bytes_validity)),
        )),
        9 => utf8(&mut b.error),
        _ => binary(&mut b.raw),
    }
}

fn record_batch(schema: &SchemaRef, order: &[usize], mut b: Batch) -> PyResult<RecordBatch> {
    let columns: Vec<ArrayRef> = order.iter().map(|&i| column(&mut b, i)).collect();
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A caller's `columns` (a list or tuple of names of `known`, `COLUMNS` for `FrameColumns`; None:
/// all) as indexes into `known`, in the caller's order.
fn columns_arg(columns: Option<&Bound<'_, PyAny>>, known: &[&str]) -> PyResult<Vec<usize>> {
    let Some(columns) = columns else {
        return Ok((0..known.len()).collect());
    };
    if !columns.is_instance_of::<PyList>() && !columns.is_instance_of::<PyTuple>() {
        return Err(PyTypeError::new_err(columns_not_names(
            &columns.get_type().name()?.to_string(),
        )));
    }
    let mut names = Vec::new();
    for item in columns.try_iter()? {
        let item = item?;
        let Ok(name) = item.cast::<PyString>() else {
            return Err(PyTypeError::new_err(columns_not_names(
                &item.get_type().name()?.to_string(),
            )));
        };
        names.push(name.to_str()?.to_owned());
    }
    check_names(names.iter().map(String::as_str), known).map_err(PyValueError::new_err)
}

/// `f` of the bytes of `data`, run without the GIL: a read-only buffer (a `memoryview` of an
/// `mmap` opened for reading, of `bytes`) is read in place, not copied; else as `source_of` reads
/// it (str, bytearray, ...).
pub(crate) fn detached_bytes(py: Python<'_>, data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) + Send) -> PyResult<()> {
    if !data.is_instance_of::<PyBytes>() && !data.is_instance_of::<PyString>() {
        if let Ok(buf) = PyBuffer::<u8>::get(data) {
            if buf.readonly() && buf.is_c_contiguous() {
                // SAFETY: a C-contiguous buffer of `len_bytes` bytes at `buf_ptr`, which no one
                // can write (read-only) and which stays exported, so valid, while `buf` lives:
                // until the end of this call.
                let bytes = unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, buf.len_bytes()) };
                py.detach(|| f(bytes));
                return Ok(());
            }
        }
    }
    let source = source_of(data)?;
    let bytes = source.bytes.as_bytes();
    py.detach(|| f(bytes));
    Ok(())
}

/// The open file whose descriptor is `fd`, borrowed for a call: never closed here.
pub(crate) fn borrowed_file(fd: i32) -> PyResult<std::mem::ManuallyDrop<std::fs::File>> {
    if fd < 0 {
        return Err(PyValueError::new_err(format!(
            "fd must be an open file descriptor, found {fd}"
        )));
    }
    // SAFETY: a descriptor the caller holds open for the call; never closed (`ManuallyDrop`).
    // A closed one fails the reads with EBADF.
    Ok(std::mem::ManuallyDrop::new(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd)
    }))
}

/// Rows of frames built in Arrow's layout: `feed` a stream's bytes (rows numbered from
/// `first_line + 1`; its complete lines parsed in ranges on `threads` threads, the GIL released,
/// None: every core), or give lines one by one (`line`, `too_large`, `invalid`); `finish` returns
/// the batches as an Arrow stream, of the `columns` named (in that order; None: all of them).
#[pyclass(module = "acp_fast", name = "FrameColumns")]
pub struct PyFrameColumns {
    inner: FrameColumns,
    order: Vec<usize>,
}

#[pymethods]
impl PyFrameColumns {
    #[new]
    #[pyo3(
        signature = (*, first_line = 0, max_frame_bytes = None, threads = None, columns = None),
        text_signature = "(*, first_line=0, max_frame_bytes=67108864, threads=None, columns=None)"
    )]
    fn new(
        first_line: u64,
        max_frame_bytes: Option<Arg<MaxFrameBytes>>,
        threads: Option<Arg<Threads>>,
        columns: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let max = MaxFrameBytes::or_default(max_frame_bytes)?;
        let threads = Threads::or_default(threads)?;
        let order = columns_arg(columns, &COLUMNS)?;
        if max > MAX_LINE_BYTES {
            return Err(PyValueError::new_err(format!(
                "max_frame_bytes of FrameColumns must be at most {MAX_LINE_BYTES}, found {max}"
            )));
        }
        Ok(Self {
            inner: FrameColumns::new(first_line, max, threads).select(Wanted::of(&order)),
            order,
        })
    }

    /// Feed bytes of the stream: a row for every line they complete. A read-only buffer (a
    /// `memoryview` of an `mmap` opened for reading, of `bytes`) is read in place, not copied.
    fn feed(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let inner = &mut self.inner;
        detached_bytes(py, data, |bytes| inner.feed(bytes))
    }

    /// Feed the bytes `start..stop` of the open file whose descriptor is `fd` (not closed), as
    /// `feed` of those bytes would: read by the core in pieces, on `threads` threads each reading
    /// and parsing a newline-aligned range of its own, the GIL released. Returns the bytes fed,
    /// fewer than `stop - start` only when the file ends before `stop`; OSError when a read fails.
    fn feed_file(&mut self, py: Python<'_>, fd: i32, start: u64, stop: u64) -> PyResult<u64> {
        let file = borrowed_file(fd)?;
        let inner = &mut self.inner;
        Ok(py.detach(|| inner.feed_file(&*file, start, stop))?)
    }

    /// About `size` more bytes of stream are to come (a file's size): the columns are sized for
    /// their rows at once instead of growing as they come. Only a hint: the rows are the same.
    fn reserve(&mut self, size: u64) {
        self.inner.reserve(usize::try_from(size).unwrap_or(usize::MAX));
    }

    /// One line (line ending optional, as `decode` takes it), numbered `number`.
    fn line(&mut self, number: u64, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let source = source_of(data)?;
        self.inner.line(number, source.bytes.as_bytes());
        Ok(())
    }

    /// A line over the limit, numbered `number`, of `length` bytes when known.
    #[pyo3(signature = (number, length = None))]
    fn too_large(&mut self, number: u64, length: Option<u64>) {
        self.inner.too_large(number, length);
    }

    /// An invalid row numbered `number` with the error kind `error` (and the line's bytes).
    #[pyo3(signature = (number, error, raw = None))]
    fn invalid(&mut self, number: u64, error: &str, raw: Option<&[u8]>) {
        self.inner.invalid(number, error, raw);
    }

    /// End of input: the rows as an Arrow stream (`__arrow_c_stream__`).
    fn finish(&mut self, py: Python<'_>) -> PyResult<PyFrameStream> {
        let inner = &mut self.inner;
        let batches = py.detach(|| inner.finish());
        let schema = schema(&self.order);
        let batches = batches
            .into_iter()
            .map(|b| record_batch(&schema, &self.order, b))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyFrameStream { schema, batches })
    }

    /// `columns` (a list or tuple of names of `known`) as indexes into `known`, in its order,
    /// checked as `columns=` is (the same TypeError / ValueError and messages): the check of a
    /// `columns` naming other columns (`acp_fast.arrow.read_frames`'s).
    #[staticmethod]
    fn check_names(columns: &Bound<'_, PyAny>, known: Vec<String>) -> PyResult<Vec<usize>> {
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        columns_arg(Some(columns), &known)
    }
}

/// Record batches of frames, read through the Arrow PyCapsule interface.
#[pyclass(module = "acp_fast", name = "FrameStream", frozen)]
pub struct PyFrameStream {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl PyFrameStream {
    /// The stream of `batches`, of `schema`.
    pub(crate) fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self { schema, batches }
    }
}

#[pymethods]
impl PyFrameStream {
    /// A PyCapsule holding an `ArrowArrayStream` of the batches (`requested_schema` is not
    /// honoured: the consumer gets the schema as it is).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches: Vec<RecordBatch> = self.batches.clone();
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), Arc::clone(&self.schema));
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// The number of rows.
    fn __len__(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}
