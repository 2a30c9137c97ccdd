//! Memory for `Message` objects from the Rust allocator, never seen by the cyclic GC.
//!
//! A feed builds one `Message` (256 bytes) per frame and the caller often drops them all
//! together. CPython gives such objects memory from pymalloc's 1 MiB arenas and unmaps an arena as
//! soon as its last object is freed, so each feed of a large buffer mapped fresh arenas and took a
//! page fault for every 4 KiB of them (≈ 11 % of `FrameDecoder.feed` in perf; benches/RESULTS.md).
//! mimalloc (the crate's global allocator) keeps freed pages for reuse instead. (`Change`, at 80
//! bytes and fewer than one per frame, stays on pymalloc: it was slower on mimalloc.)
//!
//! A `Message` refers only to `str` / `int` / `None` / `bytes` objects, so it can never be part of
//! a reference cycle and need not be tracked. PyO3 gives every `#[pyclass]` the GC flag,
//! which puts a GC header in front of each object: it is kept (zeroed = untracked), so the
//! type's other slots (PyO3's `tp_dealloc` calls `PyObject_GC_UnTrack`, a no-op on an untracked
//! object) and `sys.getsizeof` stay as they are.

use std::alloc::{alloc_zeroed, dealloc, Layout};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::PyTypeInfo;

/// Size of CPython's GC header in front of a GC object (`PyGC_Head`: two words, 3.10–3.14
/// builds with the GIL).
const GC_HEAD: usize = 2 * std::mem::size_of::<usize>();

fn layout(tp: *mut ffi::PyTypeObject) -> Layout {
    // SAFETY: `tp` is a live type object (the caller's object's type).
    let size = unsafe { (*tp).tp_basicsize } as usize + GC_HEAD;
    // 16: what pymalloc guarantees, and what C code may assume of an object's address.
    Layout::from_size_align(size, 16).expect("object size fits a Layout")
}

unsafe extern "C" fn alloc_untracked(tp: *mut ffi::PyTypeObject, _nitems: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    let layout = layout(tp);
    // SAFETY: a non-zero size; the memory is zeroed, so the GC header reads "not tracked".
    let mem = unsafe { alloc_zeroed(layout) };
    if mem.is_null() {
        // SAFETY: the GIL is held (tp_alloc is called with it).
        return unsafe { ffi::PyErr_NoMemory() };
    }
    // SAFETY: `mem` holds the header plus `tp_basicsize` zeroed bytes; PyObject_Init sets the
    // type (a new reference for a heap type) and the reference count.
    unsafe {
        let op = mem.add(GC_HEAD).cast::<ffi::PyObject>();
        ffi::PyObject_Init(op, tp)
    }
}

unsafe extern "C" fn free_untracked(op: *mut std::ffi::c_void) {
    // SAFETY: `op` came from `alloc_untracked` for an object of its (still alive) type.
    unsafe {
        let op = op.cast::<u8>();
        let tp = ffi::Py_TYPE(op.cast());
        dealloc(op.sub(GC_HEAD), layout(tp));
    }
}

/// Make the objects of `T` come from `alloc_untracked` (at module init, before any exists).
///
/// Only for a final GC type with the GIL (a free-threaded build has no `PyGC_Head`) and nothing
/// else in front of its objects: anything else keeps CPython's allocator.
pub(crate) fn install<T: PyTypeInfo>(py: Python<'_>) {
    let tp = T::type_object_raw(py);
    // SAFETY: reading the flags of a live type object.
    let flags = unsafe { (*tp).tp_flags };
    // Py_TPFLAGS_MANAGED_WEAKREF (1 << 3, 3.12+) and Py_TPFLAGS_MANAGED_DICT (1 << 4) put more
    // words before the object than the GC header; PyO3 sets neither today.
    let managed = (1 << 3) | (1 << 4);
    if cfg!(Py_GIL_DISABLED)
        || flags & ffi::Py_TPFLAGS_HAVE_GC == 0
        || flags & ffi::Py_TPFLAGS_BASETYPE != 0
        || flags & managed != 0
    {
        return;
    }
    // SAFETY: no object of `T` exists yet (module init), so none was allocated by the previous
    // allocator; the type is final, so no subtype inherits one slot of the pair and not the other.
    unsafe {
        (*tp).tp_alloc = Some(alloc_untracked);
        (*tp).tp_free = Some(free_untracked);
        ffi::PyType_Modified(tp);
    }
}
