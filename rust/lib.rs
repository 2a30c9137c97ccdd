//! acp-fast: a fast, exact codec for the Agent Client Protocol (ACP).
//!
//! The core modules below know nothing about Python; the PyO3 binding layer (`python`) is compiled
//! only with the `python` feature, so `cargo test` runs without libpython.
//!
//! The pure-Python fallback (`python/acp_fast/_fallback/`) mirrors these modules file for file
//! and function for function; tests/test_mirror.py checks it and lists the differences on purpose.

pub mod coalesce;
pub mod columns;
pub mod decoder;
pub mod encoder;
pub mod engine;
pub mod error;
pub mod framing;
pub mod message;
pub mod record;
#[cfg(unix)]
pub mod relay;
pub mod scanner;
pub mod schema;
pub mod state;
pub mod toolcalls;

#[cfg(feature = "python")]
mod python;

// Not under Miri, which cannot call into C (`cargo +nightly miri test`, see the Makefile).
#[cfg(not(miri))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Give the memory of freed blocks back to the OS now. mimalloc hands a freed segment (every
/// block over 16 MiB has one of its own) back at its next arena operation at least 100 ms later,
/// which a process in its steady state may never make: after one frame of hundreds of MB, RSS
/// stayed hundreds of MB high. For after a big buffer is released (`framing`), never on a hot
/// path: making every free return its segment at once (`MIMALLOC_ARENA_PURGE_MULT=0`) slowed
/// feeds down 1.4-3 times.
pub(crate) fn release_freed_memory() {
    #[cfg(not(miri))]
    {
        extern "C" {
            /// `void mi_collect(bool force)` of mimalloc (v2 and v3), linked in by `libmimalloc-sys`.
            fn mi_collect(force: bool);
        }
        // SAFETY: a plain call into the allocator in use, which takes no pointer and may be made
        // at any time from any thread.
        unsafe { mi_collect(true) }
    }
}

/// Buffers with more capacity than this are not kept for reuse, and dropping one gives the
/// memory back at once (`drop_buffer`): a process pays about 0.2 ms per MB to fault fresh pages
/// for its next huge value instead of holding, for good, memory the size of its largest one.
pub(crate) const KEEP_CAPACITY: usize = 8 << 20;

/// Drop a scratch buffer; when it was bigger than `KEEP_CAPACITY`, give freed memory back now.
pub(crate) fn drop_buffer<T>(buffer: Vec<T>) {
    let big = buffer.capacity() * std::mem::size_of::<T>() > KEEP_CAPACITY;
    drop(buffer);
    if big {
        release_freed_memory();
    }
}

pub use decoder::{Decoded, FrameDecoder};
pub use error::DecodeError;
pub use framing::{Event, Framer, Piece};
pub use message::{parse_frame, Envelope, Frame, Kind};
