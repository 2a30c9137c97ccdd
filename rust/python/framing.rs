//! `Framer` and the frame limits: thin wrappers over the core `framing` (mirror:
//! `_fallback/framing.py`, whose `Framer` is this class and the core framer in one).
//!
//! `Framer` is `frozen`, its core framer in an `Exclusive` that every method and getter locks:
//! one object can be shared by threads (docs/API.md "Threads"; the reasons are at the top of
//! `mod.rs`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3::IntoPyObjectExt;

use super::args::{Arg, MaxFrameBytes};
use super::errors::{decode_error_object, Origin};
use super::frames::{concat_bytes, source_of, Source};
use super::Exclusive;
use crate::framing::{too_large, Event, Framer, Piece};

/// Splits a byte stream into lines (what `FrameDecoder` does before it parses them).
#[pyclass(module = "acp_fast", name = "Framer", frozen)]
pub struct PyFramer {
    framer: Exclusive<Framer>,
    /// Lines as they were (`Framer::feed_exact`).
    keepends: bool,
    /// With `keepends`: the consecutive complete lines of one feed as one event.
    joined: bool,
    /// With `keepends`: an oversized line's event carries its first bytes.
    heads: bool,
}

/// Consecutive complete lines being joined into one event: bytes copied so far (`head`), then a
/// range of the fed `bytes` that the lines lie in whole.
struct Run {
    line: u64,
    head: Vec<u8>,
    range: Option<(usize, usize)>,
}

impl Run {
    fn push(&mut self, source: Option<&Source<'_>>, data: &[u8]) {
        let at = source.and_then(|s| s.locate(data));
        match (self.range, at) {
            (Some((start, end)), Some(offset)) if offset == end => self.range = Some((start, end + data.len())),
            (None, Some(offset)) => self.range = Some((offset, offset + data.len())),
            _ => {
                if let (Some((start, end)), Some(src)) = (self.range.take(), source) {
                    self.head.extend_from_slice(&src.bytes.as_bytes()[start..end]);
                }
                self.head.extend_from_slice(data);
            }
        }
    }

    /// `(line, bytes)`: the fed `bytes` object itself when the run is all of it.
    fn into_event<'py>(self, py: Python<'py>, source: Option<&Source<'py>>) -> PyResult<Bound<'py, PyAny>> {
        let bytes = match (self.range, source) {
            (Some((start, end)), Some(src)) => {
                let all = src.bytes.as_bytes();
                if self.head.is_empty() && start == 0 && end == all.len() {
                    src.bytes.clone()
                } else {
                    concat_bytes(py, &self.head, &all[start..end])?
                }
            }
            _ => PyBytes::new(py, &self.head),
        };
        (self.line, bytes).into_bound_py_any(py)
    }
}

impl PyFramer {
    fn collect<'py>(&self, py: Python<'py>, source: Option<&Source<'py>>) -> PyResult<Bound<'py, PyList>> {
        let mut framer = self.framer.lock(py)?;
        let _gc = super::GcPause::new(py);
        let out = PyList::empty(py);
        let mut failure: Option<PyErr> = None;
        let data = source.map(|s| s.bytes.as_bytes());
        if !self.keepends {
            let max = framer.max_frame_bytes();
            let mut on_event = |event: Event<'_>| {
                if failure.is_some() {
                    return;
                }
                let item = match event {
                    Event::Frame { line, data, .. } => (line, PyBytes::new(py, data)).into_bound_py_any(py),
                    Event::TooLarge { line } => decode_error_object(py, &too_large(max), Origin::Stream { line }, None),
                };
                if let Err(e) = item.and_then(|obj| out.append(obj)) {
                    failure = Some(e);
                }
            };
            match data {
                Some(d) => framer.feed(d, &mut on_event),
                None => framer.finish(&mut on_event),
            }
        } else {
            let (joined, heads) = (self.joined, self.heads);
            let mut run: Option<Run> = None;
            let mut on_piece = |piece: Piece<'_>| {
                if failure.is_some() {
                    return;
                }
                let r = match piece {
                    Piece::Line { line, data } if joined => {
                        run.get_or_insert_with(|| Run {
                            line,
                            head: Vec::new(),
                            range: None,
                        })
                        .push(source, data);
                        Ok(())
                    }
                    Piece::Line { line, data } => (line, PyBytes::new(py, data))
                        .into_bound_py_any(py)
                        .and_then(|obj| out.append(obj)),
                    Piece::TooLarge { line, bytes, head } => run
                        .take()
                        .map_or(Ok(()), |r| r.into_event(py, source).and_then(|obj| out.append(obj)))
                        .and_then(|()| match heads {
                            true => out.append((line, bytes, PyBytes::new(py, head))),
                            false => out.append((line, bytes)),
                        }),
                };
                if let Err(e) = r {
                    failure = Some(e);
                }
            };
            match data {
                Some(d) => framer.feed_exact(d, &mut on_piece),
                None => framer.finish_exact(&mut on_piece),
            }
            if let (Some(r), None) = (run, &failure) {
                if let Err(e) = r.into_event(py, source).and_then(|obj| out.append(obj)) {
                    failure = Some(e);
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

#[pymethods]
impl PyFramer {
    #[new]
    #[pyo3(signature = (*, max_frame_bytes = None, keepends = false, joined = false, heads = false),
           text_signature = "(*, max_frame_bytes=67108864, keepends=False, joined=False, heads=False)")]
    fn new(max_frame_bytes: Option<Arg<MaxFrameBytes>>, keepends: bool, joined: bool, heads: bool) -> PyResult<Self> {
        Ok(Self {
            framer: Exclusive::new("Framer", Framer::new(MaxFrameBytes::or_default(max_frame_bytes)?)),
            keepends: keepends || joined || heads,
            joined,
            heads,
        })
    }

    /// Feed bytes; returns the events of every line completed by them, in order.
    fn feed<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let source = source_of(data)?;
        self.collect(py, Some(&source))
    }

    /// End of input: the event of a last line that has no newline.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.collect(py, None)
    }

    #[getter]
    fn line(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.framer.lock(py)?.line())
    }

    #[getter]
    fn buffered(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.framer.lock(py)?.buffered())
    }

    #[getter]
    fn max_frame_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.framer.lock(py)?.max_frame_bytes())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let framer = self.framer.lock(py)?;
        Ok(format!(
            "Framer(max_frame_bytes={}, line={}, buffered={})",
            framer.max_frame_bytes(),
            framer.line(),
            framer.buffered()
        ))
    }
}
