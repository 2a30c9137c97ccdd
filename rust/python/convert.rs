//! Python objects ↔ JSON: a scanner sink that builds `dict`/`list`/`str`/… while the grammar is
//! checked (one pass), and the writer behind `dumps`.
//!
//! The writer's mirror is `python/acp_fast/_fallback/encoder.py` (from `surrogate_failure` on),
//! which differs on purpose: its `write` is a loop over a stack of the open containers (Python's
//! recursion limit would stop a recursive walk first), doing the work of `write_list` /
//! `write_items` and `write_dict` / `write_members` here, which recurse and grow the stack
//! (`encoder::descend`).

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString, PyType};

use super::errors::EncodeFailure;
use super::frames::PyMessage;
use super::strcache::{new_str, CacheGuard, KEYS, VALUES};
use crate::encoder::{self, Output, PathItem, MAX_DEPTH};
use crate::scanner::{parse_f64, parse_i64, parse_u64, unescape_into, Number, Sink, Str};

// ---------------------------------------------------------------------------------------------
// Building Python objects

/// Values up to this many bytes go through the value cache (`strcache::VALUES`); longer ones are
/// built fresh. Longer values are mostly new with each frame (tool-call ids, titles, short texts):
/// through the cache, each cost a lookup that missed and evicted a string that does recur, whose
/// release touched memory long cold (perf: a third of the cache's time on a mixed corpus, where
/// 16 bytes measured a few percent faster than 64 for `loads` and `to_dict`). Up to 16 bytes a
/// hit is two word compares.
const VALUE_MAX_LEN: usize = 16;

/// The sink that builds Python objects.
pub struct PySink<'py> {
    py: Python<'py>,
    scratch: Vec<u8>,
    stack: Vec<Bound<'py, PyAny>>,
    /// The string caches, held for the whole parse (None when busy further up the stack).
    keys: Option<CacheGuard<'static>>,
    values: Option<CacheGuard<'static>>,
    /// String values already made (see `Known`), and where the next one's content starts
    /// (`usize::MAX`: none left).
    known: Known,
    next_known: usize,
}

/// Most string values a caller can hand over already made: a `Message`'s id, method,
/// sessionId, sessionUpdate and toolCallId.
const KNOWN_MAX: usize = 5;

/// String values of the document that the caller has already made, each with where its content
/// starts, in increasing order of start: the parse reaches them in that order (it reads the text
/// front to back) and hands out these objects instead of making the same strings again.
#[derive(Default)]
pub struct Known {
    starts: [usize; KNOWN_MAX],
    objs: [Option<std::ptr::NonNull<ffi::PyObject>>; KNOWN_MAX],
    len: usize,
    at: usize,
}

impl Known {
    /// Add the `str` `obj` whose content starts at `start`; `obj` must outlive the parse, and the
    /// string at `start` must be exactly its text. Starts need not come in order.
    pub fn add(&mut self, start: usize, obj: &Py<PyAny>) {
        if self.len == KNOWN_MAX {
            return;
        }
        let mut i = self.len;
        while i > 0 && self.starts[i - 1] > start {
            self.starts[i] = self.starts[i - 1];
            self.objs[i] = self.objs[i - 1];
            i -= 1;
        }
        self.starts[i] = start;
        self.objs[i] = std::ptr::NonNull::new(obj.as_ptr());
        self.len += 1;
    }

    #[inline(always)]
    fn next_start(&self) -> usize {
        if self.at < self.len {
            self.starts[self.at]
        } else {
            usize::MAX
        }
    }
}

impl<'py> PySink<'py> {
    #[inline]
    fn text(&mut self, data: &[u8], s: Str) -> Bound<'py, PyAny> {
        if s.escaped {
            self.scratch.clear();
            unescape_into(data, s, &mut self.scratch);
            new_str(self.py, &self.scratch)
        } else {
            new_str(self.py, &data[s.start..s.end])
        }
    }

    #[inline]
    fn key(&mut self, data: &[u8], s: Str) -> Bound<'py, PyAny> {
        let bytes = if s.escaped {
            self.scratch.clear();
            unescape_into(data, s, &mut self.scratch);
            &self.scratch[..]
        } else {
            &data[s.start..s.end]
        };
        match self.keys.as_mut() {
            Some(keys) => keys.get(self.py, bytes),
            None => new_str(self.py, bytes),
        }
    }
}

impl<'py> PySink<'py> {
    /// The next known string (its start has just been reached).
    #[inline]
    fn take_known(&mut self) -> Bound<'py, PyAny> {
        let obj = self.known.objs[self.known.at];
        self.known.at += 1;
        self.next_known = self.known.next_start();
        match obj {
            // SAFETY: the caller of `build_known` keeps every known object alive for the parse.
            Some(p) => unsafe { Bound::from_borrowed_ptr(self.py, p.as_ptr()) },
            None => self.py.None().into_bound(self.py),
        }
    }
}

impl<'py> Sink for PySink<'py> {
    type Value = Bound<'py, PyAny>;
    type Array = usize;
    type Object = Bound<'py, PyAny>;

    #[inline]
    fn null(&mut self) -> Self::Value {
        self.py.None().into_bound(self.py)
    }

    #[inline]
    fn boolean(&mut self, value: bool) -> Self::Value {
        pyo3::types::PyBool::new(self.py, value).to_owned().into_any()
    }

    #[inline]
    fn number(&mut self, data: &[u8], n: Number) -> Self::Value {
        let lexeme = &data[n.start..n.end];
        // SAFETY: plain constructors returning new references (or NULL with an exception set).
        let ptr = unsafe {
            if n.is_int {
                if let Some(v) = parse_i64(lexeme) {
                    ffi::PyLong_FromLongLong(v)
                } else if let Some(v) = parse_u64(lexeme) {
                    ffi::PyLong_FromUnsignedLongLong(v)
                } else {
                    let mut text = lexeme.to_vec();
                    text.push(0);
                    ffi::PyLong_FromString(text.as_ptr().cast(), std::ptr::null_mut(), 10)
                }
            } else {
                ffi::PyFloat_FromDouble(parse_f64(lexeme))
            }
        };
        // SAFETY: `ptr` is a new reference or NULL.
        unsafe { Bound::from_owned_ptr_or_err(self.py, ptr) }.expect("number within limits checked by the scanner")
    }

    #[inline]
    fn string(&mut self, data: &[u8], s: Str) -> Self::Value {
        if s.start == self.next_known {
            return self.take_known();
        }
        // Short values repeat across frames (content types, kinds, statuses): the value cache
        // hands out one shared `str` for them instead of a fresh allocation.
        if !s.escaped && s.end - s.start <= VALUE_MAX_LEN {
            if let Some(values) = self.values.as_mut() {
                return values.get(self.py, &data[s.start..s.end]);
            }
        }
        self.text(data, s)
    }

    /// Arrays collect their items on one shared stack (no allocation per array); the value is
    /// where this array's items start on it.
    #[inline]
    fn array_start(&mut self) -> Self::Array {
        self.stack.len()
    }

    #[inline]
    fn array_push(&mut self, _array: &mut Self::Array, value: Self::Value) {
        self.stack.push(value);
    }

    #[inline]
    fn array_end(&mut self, start: Self::Array) -> Self::Value {
        let n = self.stack.len() - start;
        // SAFETY: PyList_New(n) then SET_ITEM steals one reference per slot, filling every slot.
        unsafe {
            let list = ffi::PyList_New(n as ffi::Py_ssize_t);
            let list = Bound::from_owned_ptr_or_err(self.py, list).expect("allocating a list failed");
            for (i, item) in self.stack.drain(start..).enumerate() {
                ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr());
            }
            list
        }
    }

    #[inline]
    fn object_start(&mut self) -> Self::Object {
        // SAFETY: new reference or NULL.
        unsafe { Bound::from_owned_ptr_or_err(self.py, ffi::PyDict_New()) }.expect("allocating a dict failed")
    }

    #[inline]
    fn object_insert(&mut self, object: &mut Self::Object, data: &[u8], key: Str, value: Self::Value) {
        let key = self.key(data, key);
        // SAFETY: object is a dict; SetItem borrows key and value (they are dropped afterwards).
        unsafe {
            ffi::PyDict_SetItem(object.as_ptr(), key.as_ptr(), value.as_ptr());
        }
    }

    #[inline]
    fn object_end(&mut self, object: Self::Object) -> Self::Value {
        object
    }
}

/// Parse validated-or-not JSON text into Python objects. `check_utf8` may be skipped when the
/// bytes were checked before (a stored frame).
pub fn build<'py>(
    py: Python<'py>,
    data: &[u8],
    check_utf8: bool,
) -> Result<Bound<'py, PyAny>, crate::error::DecodeError> {
    build_known(py, data, check_utf8, Known::default())
}

/// `build`, handing out the strings of `known` where their values lie instead of making them.
pub fn build_known<'py>(
    py: Python<'py>,
    data: &[u8],
    check_utf8: bool,
    known: Known,
) -> Result<Bound<'py, PyAny>, crate::error::DecodeError> {
    if check_utf8 {
        crate::scanner::check_utf8(data)?;
    }
    let mut sink = PySink {
        py,
        scratch: Vec::new(),
        // Empty until an array needs it: most frames have few arrays or none, and an allocation
        // for every `loads` / `to_dict` cost more than growing it the few times it is used.
        stack: Vec::new(),
        keys: KEYS.lock(),
        values: VALUES.lock(),
        next_known: known.next_start(),
        known,
    };
    let value = crate::scanner::Scanner::new(data).parse_document(&mut sink);
    crate::drop_buffer(sink.scratch);
    crate::drop_buffer(sink.stack);
    value
}

/// Build the value whose text is `data[start..end]` (a value already validated in a frame).
pub fn build_span<'py>(py: Python<'py>, data: &[u8], start: usize, end: usize) -> PyResult<Bound<'py, PyAny>> {
    build(py, &data[start..end], false).map_err(|e| PyTypeError::new_err(e.description.clone()))
}

// ---------------------------------------------------------------------------------------------
// Writing JSON

static ENUM_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UUID_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static FRAGMENT_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ORJSON_DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

pub struct Writer<'py> {
    py: Python<'py>,
    out: BytesOut,
}

type WResult = Result<(), EncodeFailure>;

#[cold]
fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

#[cold]
fn surrogate_failure(s: &Bound<'_, PyAny>) -> EncodeFailure {
    // SAFETY: reading code points of a str by index within its length.
    let cp = unsafe {
        let n = ffi::PyUnicode_GetLength(s.as_ptr());
        (0..n)
            .map(|i| ffi::PyUnicode_ReadChar(s.as_ptr(), i))
            .find(|c| (0xD800..=0xDFFF).contains(c))
    };
    let _ = PyErr::take(s.py());
    surrogate_error(cp.unwrap_or(0xD800))
}

#[cold]
fn surrogate_error(cp: u32) -> EncodeFailure {
    EncodeFailure::new(
        "invalid_str",
        format!("expected a str encodable as UTF-8, found unpaired surrogate U+{cp:04X}"),
    )
}

/// Write an exact `str` as a JSON string. ASCII text is copied as it is; other text is transcoded
/// from its PEP 393 code units straight into the output (CPython's own UTF-8 conversion would
/// allocate and keep a copy in every fresh string).
#[inline]
fn write_str_object(out: &mut BytesOut, obj: &Bound<'_, PyAny>) -> Result<(), EncodeFailure> {
    // SAFETY: obj is an exact str, so a ready compact (or legacy ready) PEP 393 string on the
    // interpreters we build for: DATA holds GET_LENGTH units of KIND bytes each.
    unsafe {
        let p = obj.as_ptr();
        let len = ffi::PyUnicode_GET_LENGTH(p) as usize;
        // CPython 3.14 no longer lets extensions read the string's state bits (compact, ASCII):
        // every string goes through its code units there.
        #[cfg(not(Py_3_14))]
        if ffi::PyUnicode_IS_COMPACT_ASCII(p) != 0 {
            encoder::write_str(
                out,
                std::slice::from_raw_parts(ffi::PyUnicode_DATA(p).cast::<u8>(), len),
            );
            return Ok(());
        }
        // A UTF-8 copy CPython already keeps (compact strings only) is copied as it is.
        #[cfg(not(Py_3_14))]
        if ffi::PyUnicode_IS_COMPACT(p) != 0 {
            let compact = p.cast::<ffi::PyCompactUnicodeObject>();
            let utf8 = (*compact).utf8;
            if !utf8.is_null() {
                let n = (*compact).utf8_length as usize;
                encoder::write_str(out, std::slice::from_raw_parts(utf8.cast::<u8>(), n));
                return Ok(());
            }
        }
        // A legacy string not yet in PEP 393 form (only the deprecated Py_UNICODE APIs of
        // CPython < 3.12 make one): CPython's own conversion handles it.
        #[cfg(not(Py_3_12))]
        if ffi::PyUnicode_IS_READY(p) == 0 {
            encoder::write_str(out, str_utf8(obj)?);
            return Ok(());
        }
        let data = ffi::PyUnicode_DATA(p);
        let written = match ffi::PyUnicode_KIND(p) {
            ffi::PyUnicode_1BYTE_KIND => encoder::write_units(out, std::slice::from_raw_parts(data.cast::<u8>(), len)),
            ffi::PyUnicode_2BYTE_KIND => encoder::write_units(out, std::slice::from_raw_parts(data.cast::<u16>(), len)),
            _ => encoder::write_units(out, std::slice::from_raw_parts(data.cast::<u32>(), len)),
        };
        written.map_err(surrogate_error)
    }
}

/// UTF-8 view of a str (or a str subclass), or the `invalid_str` failure.
#[inline]
fn str_utf8<'a>(obj: &'a Bound<'_, PyAny>) -> Result<&'a [u8], EncodeFailure> {
    // SAFETY: obj is a str. A compact ASCII string stores its characters (which are its UTF-8
    // bytes) right after the object header: no call, no copy.
    // (On CPython 3.14 the state bits are not readable: `PyUnicode_AsUTF8AndSize` below returns
    // the characters of an ASCII string without a copy there too.)
    #[cfg(not(Py_3_14))]
    unsafe {
        let p = obj.as_ptr();
        if ffi::PyUnicode_IS_COMPACT_ASCII(p) != 0 {
            let len = ffi::PyUnicode_GET_LENGTH(p) as usize;
            return Ok(std::slice::from_raw_parts(ffi::PyUnicode_DATA(p).cast::<u8>(), len));
        }
    }
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY: obj is a str (checked by the caller); the returned buffer lives as long as obj.
    let ptr = unsafe { ffi::PyUnicode_AsUTF8AndSize(obj.as_ptr(), &raw mut size) };
    if ptr.is_null() {
        // Clear the UnicodeEncodeError and report it our way.
        let _ = PyErr::take(obj.py());
        return Err(surrogate_failure(obj));
    }
    // SAFETY: CPython guarantees `size` valid bytes at `ptr`, owned by `obj`.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), size as usize) })
}

impl<'py> Writer<'py> {
    pub fn write(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> WResult {
        // SAFETY: type pointer comparisons against the interpreter's static type objects.
        let ty = unsafe { ffi::Py_TYPE(obj.as_ptr()) };
        unsafe {
            if ty == &raw mut ffi::PyUnicode_Type {
                return write_str_object(&mut self.out, obj);
            }
            if ty == &raw mut ffi::PyDict_Type {
                return self.write_dict(obj, depth);
            }
            if ty == &raw mut ffi::PyList_Type {
                return self.write_list(obj, depth);
            }
            if ty == &raw mut ffi::PyLong_Type {
                return self.write_int(obj);
            }
            if ty == &raw mut ffi::PyFloat_Type {
                return self.write_float(obj);
            }
            if ty == &raw mut ffi::PyBool_Type {
                let t = obj.as_ptr() == ffi::Py_True();
                self.out.extend_from_slice(if t { b"true" } else { b"false" });
                return Ok(());
            }
            if obj.is_none() {
                self.out.extend_from_slice(b"null");
                return Ok(());
            }
            if ty == &raw mut ffi::PyTuple_Type {
                return self.write_list(obj, depth);
            }
        }
        self.write_other(obj, depth)
    }

    #[cold]
    fn write_other(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> WResult {
        let py = self.py;
        if let Ok(m) = obj.cast::<PyMessage>() {
            self.out.extend_from_slice(m.get().raw_bytes(py));
            return Ok(());
        }
        // SAFETY: the *_Check macros only read type flags.
        unsafe {
            let p = obj.as_ptr();
            if ffi::PyUnicode_Check(p) != 0 {
                let s = str_utf8(obj)?;
                encoder::write_str(&mut self.out, s);
                return Ok(());
            }
            if ffi::PyLong_Check(p) != 0 {
                return self.write_int(obj);
            }
            if ffi::PyFloat_Check(p) != 0 {
                return self.write_float(obj);
            }
            if ffi::PyDict_Check(p) != 0 {
                return self.write_dict(obj, depth);
            }
            if ffi::PyList_Check(p) != 0 || ffi::PyTuple_Check(p) != 0 {
                return self.write_list(obj, depth);
            }
        }
        let enum_ty = ENUM_TYPE.import(py, "enum", "Enum").map_err(EncodeFailure::python)?;
        if obj.is_instance(enum_ty).map_err(EncodeFailure::python)? {
            let value = obj.getattr("value").map_err(EncodeFailure::python)?;
            return self.write(&value, depth);
        }
        // orjson.Fragment: pre-encoded JSON written as-is, as orjson does. A Fragment has no
        // Python-level attribute for its contents (orjson 3.13 keeps them in its C struct), so
        // orjson.dumps, which writes a fragment unchanged, hands them over.
        if let Ok(fragment_ty) = FRAGMENT_TYPE.import(py, "orjson", "Fragment") {
            if obj.is_instance(fragment_ty).map_err(EncodeFailure::python)? {
                let orjson_dumps = ORJSON_DUMPS
                    .import(py, "orjson", "dumps")
                    .map_err(EncodeFailure::python)?;
                let contents = orjson_dumps.call1((obj,)).map_err(EncodeFailure::python)?;
                let bytes = contents
                    .cast::<PyBytes>()
                    .map_err(|e| EncodeFailure::python(e.into()))?;
                self.out.extend_from_slice(bytes.as_bytes());
                return Ok(());
            }
        }
        let uuid_ty = UUID_TYPE.import(py, "uuid", "UUID").map_err(EncodeFailure::python)?;
        if obj.is_instance(uuid_ty).map_err(EncodeFailure::python)? {
            let text = obj.str().map_err(EncodeFailure::python)?;
            encoder::write_str(&mut self.out, text.to_str().map_err(EncodeFailure::python)?.as_bytes());
            return Ok(());
        }
        Err(EncodeFailure::new(
            "unsupported_type",
            format!(
                "expected dict, list, tuple, str, int, float, bool or None, found {}",
                type_name(obj)
            ),
        ))
    }

    #[inline]
    fn write_int(&mut self, obj: &Bound<'py, PyAny>) -> WResult {
        let mut overflow = 0;
        // SAFETY: obj is an int (or subclass).
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(obj.as_ptr(), &raw mut overflow) };
        if overflow == 0 {
            if v == -1 && PyErr::occurred(self.py) {
                return Err(EncodeFailure::python(PyErr::fetch(self.py)));
            }
            encoder::write_i64(&mut self.out, v);
            return Ok(());
        }
        self.write_big_int(obj)
    }

    #[cold]
    fn write_big_int(&mut self, obj: &Bound<'py, PyAny>) -> WResult {
        if let Ok(v) = obj.extract::<u64>() {
            encoder::write_u64(&mut self.out, v);
            return Ok(());
        }
        // SAFETY: int.__repr__ of an exact int via the C API (avoids subclass overrides).
        let text = unsafe { Bound::from_owned_ptr_or_err(self.py, ffi::PyNumber_ToBase(obj.as_ptr(), 10)) };
        match text {
            Ok(t) => {
                let t = t.cast_into::<PyString>().map_err(|e| EncodeFailure::python(e.into()))?;
                self.out
                    .extend_from_slice(t.to_str().map_err(EncodeFailure::python)?.as_bytes());
                Ok(())
            }
            Err(_) => Err(EncodeFailure::new(
                "int_too_large",
                "expected an int of at most 4300 digits, found a larger one".to_owned(),
            )),
        }
    }

    #[inline]
    fn write_float(&mut self, obj: &Bound<'py, PyAny>) -> WResult {
        // SAFETY: obj is a float (or subclass).
        let v = unsafe { ffi::PyFloat_AS_DOUBLE(obj.as_ptr()) };
        if !v.is_finite() {
            let repr = if v.is_nan() {
                "nan"
            } else if v > 0.0 {
                "inf"
            } else {
                "-inf"
            };
            return Err(EncodeFailure::new(
                "non_finite_float",
                format!("expected a finite float, found {repr}"),
            ));
        }
        encoder::write_f64(&mut self.out, v);
        Ok(())
    }

    /// The error for a container nested deeper than `limit` levels: `dumps`' (`MAX_DEPTH`), also
    /// raised by `ToolCallStore.to_json` (with a checkpoint's limit).
    #[cold]
    pub(super) fn too_deep(limit: usize) -> EncodeFailure {
        EncodeFailure::new("depth_limit", format!("nesting deeper than {limit} levels"))
    }

    /// A list or tuple found `depth` levels deep (its items one deeper), with the stack it needs
    /// (`encoder::descend`).
    #[inline]
    fn write_list(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> WResult {
        if depth >= MAX_DEPTH {
            return Err(Self::too_deep(MAX_DEPTH));
        }
        encoder::descend(depth, || self.write_items(obj, depth))
    }

    fn write_items(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> WResult {
        let p = obj.as_ptr();
        // SAFETY: p is a list or tuple (or subclass); items are borrowed while the container is
        // alive, and we take a strong reference to each before writing it.
        unsafe {
            let is_list = ffi::PyList_Check(p) != 0;
            self.out.push(b'[');
            let mut i: ffi::Py_ssize_t = 0;
            loop {
                let n = if is_list {
                    ffi::PyList_GET_SIZE(p)
                } else {
                    ffi::PyTuple_GET_SIZE(p)
                };
                if i >= n {
                    break;
                }
                let item = if is_list {
                    ffi::PyList_GET_ITEM(p, i)
                } else {
                    ffi::PyTuple_GET_ITEM(p, i)
                };
                let item = Bound::from_borrowed_ptr(self.py, item);
                if i > 0 {
                    self.out.push(b',');
                }
                self.write(&item, depth + 1)
                    .map_err(|e| e.at(PathItem::Index(i as usize)))?;
                i += 1;
            }
            self.out.push(b']');
        }
        Ok(())
    }

    /// A dict found `depth` levels deep (as `write_list`).
    #[inline]
    fn write_dict(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> WResult {
        if depth >= MAX_DEPTH {
            return Err(Self::too_deep(MAX_DEPTH));
        }
        encoder::descend(depth, || self.write_members(obj, depth))
    }

    fn write_members(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> WResult {
        self.out.push(b'{');
        let mut pos: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        let mut first = true;
        // SAFETY: PyDict_Next yields borrowed references valid while the dict is unchanged; we
        // take strong references before running anything that could call back into Python.
        unsafe {
            while ffi::PyDict_Next(obj.as_ptr(), &raw mut pos, &raw mut key, &raw mut value) != 0 {
                let k = Bound::from_borrowed_ptr(self.py, key);
                let v = Bound::from_borrowed_ptr(self.py, value);
                if ffi::PyUnicode_CheckExact(k.as_ptr()) == 0 {
                    return Err(EncodeFailure::new(
                        "non_str_key",
                        format!("expected str dict keys, found {}", type_name(&k)),
                    ));
                }
                if !first {
                    self.out.push(b',');
                }
                first = false;
                let kb = str_utf8(&k)?;
                encoder::write_str(&mut self.out, kb);
                self.out.push(b':');
                if let Err(e) = self.write(&v, depth + 1) {
                    let name = String::from_utf8_lossy(kb).into_owned();
                    return Err(e.at(PathItem::Key(name)));
                }
            }
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// The `bytes` object `dumps` returns, written in place: created with room for about the size
/// of the previous result, grown by doubling (`_PyBytes_Resize`) and cut to its length at the
/// end, so that the text is never copied out of a buffer of our own.
struct BytesOut {
    /// A `bytes` object of `cap` bytes that nothing else refers to yet (null only after `finish`).
    obj: *mut ffi::PyObject,
    len: usize,
    cap: usize,
}

extern "C" {
    /// CPython's in-place resize of a `bytes` object that no one else holds yet (what
    /// `bytes.join` and the codecs use); on failure it releases the object, sets NULL and raises.
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, size: ffi::Py_ssize_t) -> std::os::raw::c_int;
}

/// Length of the last `dumps` result: the first guess of the next one's.
static LAST_LEN: AtomicUsize = AtomicUsize::new(0);

impl BytesOut {
    fn new() -> BytesOut {
        let cap = (LAST_LEN.load(Ordering::Relaxed) + 64).clamp(256, 1 << 20);
        // SAFETY: a new, uninitialised bytes object of `cap` bytes (or NULL: out of memory).
        let obj = unsafe { ffi::PyBytes_FromStringAndSize(std::ptr::null(), cap as ffi::Py_ssize_t) };
        if obj.is_null() {
            std::alloc::handle_alloc_error(std::alloc::Layout::new::<[u8; 256]>());
        }
        BytesOut { obj, len: 0, cap }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let cap = (self.len + additional).max(self.cap * 2);
        // SAFETY: `obj` is a bytes object only this writer holds.
        if unsafe { _PyBytes_Resize(&raw mut self.obj, cap as ffi::Py_ssize_t) } != 0 {
            std::alloc::handle_alloc_error(std::alloc::Layout::new::<[u8; 256]>());
        }
        self.cap = cap;
    }

    /// The `bytes` of the text written.
    fn finish(mut self, py: Python<'_>) -> PyResult<Bound<'_, PyBytes>> {
        LAST_LEN.store(self.len, Ordering::Relaxed);
        let mut obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
        // SAFETY: `obj` is ours alone; resizing to the written length (at most `cap`).
        unsafe {
            if self.len != self.cap && _PyBytes_Resize(&raw mut obj, self.len as ffi::Py_ssize_t) != 0 {
                return Err(PyErr::fetch(py));
            }
            Ok(Bound::from_owned_ptr(py, obj).cast_into_unchecked())
        }
    }
}

impl Drop for BytesOut {
    fn drop(&mut self) {
        if !self.obj.is_null() {
            // SAFETY: our own reference to the unfinished object.
            unsafe { ffi::Py_DECREF(self.obj) };
        }
    }
}

impl Output for BytesOut {
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        if self.cap - self.len < additional {
            self.grow(additional);
        }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: `obj` is a bytes object.
        unsafe { ffi::PyBytes_AS_STRING(self.obj).cast_mut().cast::<u8>() }
    }

    #[inline(always)]
    unsafe fn set_len(&mut self, len: usize) {
        self.len = len;
    }
}

/// `dumps(obj)` into a fresh `bytes`, optionally followed by a newline.
pub fn dumps_bytes<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, newline: bool) -> PyResult<Bound<'py, PyBytes>> {
    let mut w = Writer {
        py,
        out: BytesOut::new(),
    };
    match w.write(obj, 0) {
        Ok(()) => {
            if newline {
                w.out.push(b'\n');
            }
            w.out.finish(py)
        }
        Err(e) => Err(e.into_pyerr(py)),
    }
}
