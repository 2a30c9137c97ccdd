//! acp-fast: a fast, exact codec for the Agent Client Protocol (ACP).
//!
//! The core modules below know nothing about Python; the PyO3 binding layer (`python`) is compiled
//! only with the `python` feature, so `cargo test` runs without libpython.

pub mod columns;
pub mod decoder;
pub mod encoder;
pub mod error;
pub mod framing;
pub mod message;
pub mod scanner;
pub mod state;

#[cfg(feature = "python")]
mod python;

// Not under Miri, which cannot call into C (`cargo +nightly miri test`, see the Makefile).
#[cfg(not(miri))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use decoder::{Decoded, FrameDecoder};
pub use error::DecodeError;
pub use framing::{Event, Framer, Piece};
pub use message::{parse_frame, Envelope, Frame, Kind};
