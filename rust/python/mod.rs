//! The PyO3 binding layer: `acp_fast._native`. What this folder holds, and all it holds:
//! argument conversion (`args.rs`), the Python objects of what the core returns
//! (`Message`, `Change`, `DecodeError`, records, Arrow batches), the calls into the core, and
//! error mapping. No protocol rule lives here: framing, parsing, batches, strict validation (the
//! stream check is `crate::schema::stream`), the per-frame loop (`crate::engine`), the state
//! engine's rules, the state document and the record shapes are the core's, so a change to any
//! of them edits no file in this folder.
//!
//! Threads (docs/API.md "Threads"): the stateful classes (`FrameDecoder`, `Framer`,
//! `ToolCallStore`) are `#[pyclass(frozen)]` and keep their state in an `Exclusive`, a per-object
//! mutex that every method and getter takes for its whole run. A plain (non-frozen) pyclass
//! lends `&mut self` through PyO3's borrow flag, which does not wait: a method that runs Python
//! code (building a `Batch` or a `DecodeError`, a GC pass) lets the GIL switch, and another
//! thread's call on the same object then failed with "Already borrowed". The mutex is taken with
//! `MutexExt::lock_py_attached`: `try_lock` first (the single-threaded path: one atomic, no GIL
//! traffic), else it detaches from the interpreter while it waits, so the holder, which may be
//! waiting for the GIL, can go on. A call from the thread that holds the lock (a finalizer, a
//! signal handler or a trace function run inside one of the object's methods) would wait for
//! itself: it raises RuntimeError instead (the fallback raises the same, `_fallback/framing.py`
//! `exclusive`). This locking does not rely on the GIL, so it holds on a free-threaded build too.

mod args;
mod arrow;
mod coalesce;
mod convert;
mod errors;
mod frames;
mod framing;
mod records;
#[cfg(unix)]
mod relay;
mod schema;
mod state;
mod strcache;
mod toolcalls;
mod untracked;

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;

/// The cyclic garbage collector held off while a `feed` builds its results.
///
/// Everything a feed allocates is acyclic (`Message` is never tracked, see `untracked`; `Change`
/// is untracked at once), yet CPython counts each GC-type allocation towards its next
/// collection: a feed of 100,000 frames set off collections of the whole heap — up to a full one
/// (200 ns per frame at 100 k frames in the scaling benchmark; benches/RESULTS.md). Restored on drop, also on error; the collector then
/// runs at the next allocation as it would have.
pub(crate) struct GcPause {
    was_enabled: bool,
}

// `PyGC_Disable` / `PyGC_Enable` are CPython 3.10 C API (and 3.9 is past its end of life; the
// ACP SDK needs 3.10 too). pyproject.toml says `requires-python = ">=3.10"`.
#[cfg(not(Py_3_10))]
compile_error!("acp-fast needs CPython 3.10 or newer");

impl GcPause {
    pub(crate) fn new(_py: Python<'_>) -> Self {
        // SAFETY: the GIL is held (the `Python` token); PyGC_Disable returns the previous state.
        let was_enabled = unsafe { pyo3::ffi::PyGC_Disable() } == 1;
        Self { was_enabled }
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: created with the GIL held, and dropped in the same scope.
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

/// The state of a stateful `#[pyclass(frozen)]` object behind its per-object lock (see the top of
/// this file): `lock` gives the state to one call at a time.
pub(crate) struct Exclusive<T> {
    /// The Python class name, for the error of a re-entrant call.
    class: &'static str,
    state: Mutex<T>,
    /// The thread that holds `state` (`thread_mark`), 0 when none. Only the holder stores its own
    /// mark, and clears it before it unlocks, so a thread reads its own mark here only while it
    /// holds the lock.
    owner: AtomicUsize,
}

/// A number of the current thread that no other running thread has (the address of a
/// thread-local), never 0.
#[inline]
fn thread_mark() -> usize {
    thread_local!(static MARK: u8 = const { 0 });
    MARK.with(|m| std::ptr::from_ref(m) as usize)
}

impl<T> Exclusive<T> {
    pub(crate) fn new(class: &'static str, state: T) -> Self {
        Self {
            class,
            state: Mutex::new(state),
            owner: AtomicUsize::new(0),
        }
    }

    /// The state, once no other call holds it (waiting detached from the interpreter); a call
    /// from the thread that holds it raises RuntimeError. A panic in an earlier call (PyO3 turned
    /// it into PanicException) does not lock the object for good: its state is taken as it is.
    #[inline]
    pub(crate) fn lock(&self, py: Python<'_>) -> PyResult<Locked<'_, T>> {
        let me = thread_mark();
        if self.owner.load(Ordering::Relaxed) == me {
            return Err(reentrant(self.class));
        }
        let guard = self.state.lock_py_attached(py).unwrap_or_else(PoisonError::into_inner);
        self.owner.store(me, Ordering::Relaxed);
        Ok(Locked {
            guard,
            owner: &self.owner,
        })
    }
}

impl<T> Exclusive<T> {
    /// `lock` from a thread detached from the interpreter (no `Python` token: the relay, in
    /// `relay.rs`): waits for the lock. The holder never waits for this thread, which holds
    /// neither the GIL nor another object's lock.
    pub(crate) fn lock_detached(&self) -> Locked<'_, T> {
        let guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.owner.store(thread_mark(), Ordering::Relaxed);
        Locked {
            guard,
            owner: &self.owner,
        }
    }
}

#[cold]
fn reentrant(class: &str) -> PyErr {
    PyRuntimeError::new_err(format!(
        "re-entrant call: this {class} is already running a method in this thread \
         (the call came from a finalizer, signal handler or trace function inside it)"
    ))
}

/// The state of an `Exclusive` while a call holds it.
pub(crate) struct Locked<'a, T> {
    guard: MutexGuard<'a, T>,
    owner: &'a AtomicUsize,
}

impl<T> Drop for Locked<'_, T> {
    fn drop(&mut self) {
        // Before `guard` unlocks (fields drop after this).
        self.owner.store(0, Ordering::Relaxed);
    }
}

impl<T> Deref for Locked<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for Locked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BACKEND", "rust")?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "build_profile",
        if cfg!(debug_assertions) { "debug" } else { "release" },
    )?;
    m.add("DEFAULT_MAX_FRAME_BYTES", crate::framing::DEFAULT_MAX_FRAME_BYTES)?;
    m.add("MAX_FRAME_BYTES", crate::framing::MAX_FRAME_BYTES)?;
    let drafts: Vec<&str> = crate::schema::DRAFTS.iter().map(|(name, _)| *name).collect();
    m.add("SCHEMA_DRAFTS", pyo3::types::PyTuple::new(m.py(), drafts)?)?;
    let targets = pyo3::types::PyDict::new(m.py());
    for t in crate::state::targets() {
        targets.set_item(&*t.name, t.id.as_deref())?;
    }
    m.add("ENTITY_TARGETS", targets)?;
    m.add_function(wrap_pyfunction!(frames::loads, m)?)?;
    m.add_function(wrap_pyfunction!(frames::dumps, m)?)?;
    m.add_function(wrap_pyfunction!(frames::decode, m)?)?;
    m.add_function(wrap_pyfunction!(frames::encode, m)?)?;
    m.add_class::<frames::PyMessage>()?;
    m.add_class::<frames::PyFrameDecoder>()?;
    m.add_class::<framing::PyFramer>()?;
    m.add_class::<coalesce::PyCoalescer>()?;
    m.add_class::<state::PyToolCallStore>()?;
    m.add_class::<records::PyChange>()?;
    #[cfg(unix)] // internal to acp_fast.proxy: an attribute, not in __all__
    m.setattr("_Relay", m.py().get_type::<relay::PyRelay>())?;
    schema::register(m)?;
    arrow::register(m)?;
    // Before any Message exists (see `untracked`).
    untracked::install::<frames::PyMessage>(m.py());
    Ok(())
}
