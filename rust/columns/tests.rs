use super::*;

fn texts(c: &VarColumn) -> Vec<Option<String>> {
    (0..c.len())
        .map(|i| {
            let valid = c.validity.bits[i / 8] & (1 << (i % 8)) != 0;
            let (a, b) = (c.offsets[i] as usize, c.offsets[i + 1] as usize);
            valid.then(|| String::from_utf8_lossy(&c.values[a..b]).into_owned())
        })
        .collect()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

#[test]
fn rows_of_a_stream() {
    let stream = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1"}}"#,
        "\r\n\n",
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u0031","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","status":"completed"}}}"#,
        "\nnope\n",
        r#"{"jsonrpc":"2.0","id":"a\"b","result":null}"#,
        "\n",
        r#"[{"jsonrpc":"2.0","method":"x"}]"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":-0,"error":{"code":1,"message":"m"}}"#,
    );
    let mut cols = FrameColumns::new(10, 1 << 20, 1);
    let bytes = stream.as_bytes();
    cols.feed(&bytes[..50]);
    cols.feed(&bytes[50..]);
    let batches = cols.finish();
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    assert_eq!(b.line, vec![11, 13, 14, 15, 16, 17]);
    assert_eq!(
        texts(&b.kind),
        vec![
            s("request"),
            s("notification"),
            s("invalid"),
            s("response"),
            s("batch"),
            s("error")
        ]
    );
    assert_eq!(texts(&b.id), vec![s("1"), None, None, s(r#""a\"b""#), None, s("0")]);
    assert_eq!(texts(&b.session_id), vec![s("s1"), s("s1"), None, None, None, None]);
    assert_eq!(texts(&b.status), vec![None, s("completed"), None, None, None, None]);
    assert_eq!(texts(&b.tool_call_id)[1], s("c1"));
    assert_eq!(texts(&b.error)[2], s("unexpected_character"));
    assert_eq!(b.bytes[2], 4);
    assert_eq!(texts(&b.raw)[2], s("nope"));
    assert_eq!(b.bytes_validity.nulls, 0);
}

#[test]
fn too_large_lines_and_given_lines() {
    let mut cols = FrameColumns::new(0, 8, 1);
    cols.feed(b"0123456789\n{}\n");
    cols.line(7, b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\r\n");
    cols.line(8, b"a\nb");
    cols.too_large(9, Some(99));
    cols.invalid(10, "invalid_record", None);
    let b = &cols.finish()[0];
    assert_eq!(b.line, vec![1, 2, 7, 8, 9, 10]);
    assert_eq!(
        texts(&b.error),
        vec![
            s("frame_too_large"),
            s("missing_jsonrpc"),
            None,
            s("embedded_newline"),
            s("frame_too_large"),
            s("invalid_record")
        ]
    );
    assert_eq!(texts(&b.raw)[0], None);
    assert_eq!(b.bytes_validity.nulls, 2);
    assert_eq!(b.bytes[4], 99);
    assert_eq!(texts(&b.method)[2], s("m"));
}

#[test]
fn no_rows_is_one_empty_batch() {
    let mut cols = FrameColumns::new(0, 100, 1);
    cols.feed(b"\n \n");
    let batches = cols.finish();
    assert_eq!(batches.len(), 1);
    assert!(batches[0].is_empty());
    assert_eq!(batches[0].kind.offsets, vec![0]);
}

/// Every row of `batches`, each as its columns' values (the line and bytes as text).
fn rows_of(batches: &[Batch]) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for b in batches {
        let cols = [
            &b.kind,
            &b.method,
            &b.id,
            &b.session_id,
            &b.update_kind,
            &b.tool_call_id,
            &b.status,
            &b.error,
            &b.raw,
        ]
        .map(texts);
        for i in 0..b.len() {
            let valid = b.bytes_validity.bits[i / 8] & (1 << (i % 8)) != 0;
            let mut row = vec![Some(b.line[i].to_string()), valid.then(|| b.bytes[i].to_string())];
            row.extend(cols.iter().map(|c| c[i].clone()));
            out.push(row);
        }
    }
    out
}

/// A stream with every kind of line: messages, blank lines, CRLF, invalid JSON, invalid UTF-8,
/// lines over 40 bytes (the limit used), non-ASCII strings, batches, many sessions.
fn mixed_stream(lines: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..lines {
        let line: Vec<u8> = match i % 9 {
            0 => format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"m"}}"#).into_bytes(),
            1 => b"".to_vec(),
            2 => format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s{}","update":{{"sessionUpdate":"tool_call","toolCallId":"é{i}","status":"ok"}}}}}}"#, i % 7).into_bytes(),
            3 => b"not json".to_vec(),
            4 => b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"result\":1}".to_vec(),
            5 => format!(r#"{{"jsonrpc":"2.0","id":"日本{i}","result":null}}"#).into_bytes(),
            6 => b"  \r".to_vec(),
            7 => br#"[{"jsonrpc":"2.0","method":"x"}]"#.to_vec(),
            _ => format!(r#"{{"jsonrpc":"2.0","id":{i},"error":{{"code":1,"message":"m"}}}}"#).into_bytes(),
        };
        out.extend_from_slice(&line);
        out.extend_from_slice(if i % 4 == 0 { b"\r\n" } else { b"\n" });
    }
    out
}

fn parse(data: &[u8], first_line: u64, max: usize, threads: usize, piece: usize) -> Vec<Batch> {
    let mut cols = FrameColumns::new(first_line, max, threads);
    for chunk in data.chunks(piece.max(1)) {
        cols.feed(chunk);
    }
    cols.finish()
}

#[test]
fn threads_give_the_rows_of_one_thread() {
    let data = mixed_stream(500);
    for max in [40, 1 << 20] {
        let one = rows_of(&parse(&data, 3, max, 1, data.len()));
        assert!(one.len() > 300);
        for threads in [2, 3, 4, 8, 64, 1024] {
            for piece in [data.len(), 1000, 77, 1] {
                assert_eq!(
                    rows_of(&parse(&data, 3, max, threads, piece)),
                    one,
                    "{threads} {piece} {max}"
                );
            }
        }
    }
}

#[test]
fn threads_with_no_trailing_newline_and_no_lines() {
    for data in [
        &b""[..],
        b"\n\n\n",
        b"{}",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n{}",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\r\n\r\n{}\r",
        b"0123456789012345678901234567890123456789012345\n{}\n0123456789012345678901234567890123456789012345",
    ] {
        for max in [40, 1 << 20] {
            let one = rows_of(&parse(data, 0, max, 1, 1 << 20));
            for threads in [2, 4, 8] {
                for piece in [1 << 20, 5, 1] {
                    assert_eq!(rows_of(&parse(data, 0, max, threads, piece)), one);
                }
            }
        }
    }
}

#[test]
fn ranges_end_after_a_newline_and_cover_the_data() {
    let data = mixed_stream(100);
    for parts in [1, 2, 3, 7, 100, 10_000] {
        let ranges = split_ranges(&data, parts);
        assert!(ranges.len() <= parts);
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert_eq!(ranges.last().map(|r| r.end), Some(data.len()));
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for r in &ranges {
            assert!(r.start < r.end);
            assert_eq!(data[r.end - 1], b'\n');
        }
    }
    // A line longer than a range: the ranges that would cut it are left out.
    let long = [vec![b'x'; 1000], b"\n{}\n".to_vec()].concat();
    assert_eq!(split_ranges(&long, 8), vec![0..1001, 1001..1004]);
    assert!(split_ranges(b"", 4).is_empty());
}

#[test]
fn threads_are_checked() {
    assert_eq!(check_threads(1), Ok(1));
    assert_eq!(check_threads(MAX_THREADS as i64), Ok(MAX_THREADS));
    for bad in [0, -1, MAX_THREADS as i64 + 1] {
        assert_eq!(check_threads(bad), Err(threads_out_of_range(bad)));
    }
    assert!(default_threads() >= 1);
}

#[test]
fn selected_columns_are_those_of_all_and_the_others_stay_empty() {
    let data = mixed_stream(300);
    for max in [40, 1 << 20] {
        let all = parse(&data, 3, max, 1, data.len());
        let routing = check_columns(["method", "id", "session_id", "update_kind", "tool_call_id", "status"]).unwrap();
        for threads in [1, 3] {
            let mut cols = FrameColumns::new(3, max, threads).select(Wanted::of(&routing));
            cols.feed(&data);
            let some = cols.finish();
            assert_eq!(
                some.iter().map(Batch::len).sum::<usize>(),
                all.iter().map(Batch::len).sum::<usize>()
            );
            let cat =
                |bs: &[Batch], f: fn(&Batch) -> &VarColumn| bs.iter().flat_map(|b| texts(f(b))).collect::<Vec<_>>();
            for f in [
                (|b: &Batch| &b.method) as fn(&Batch) -> &VarColumn,
                |b| &b.id,
                |b| &b.session_id,
                |b| &b.update_kind,
                |b| &b.tool_call_id,
                |b| &b.status,
            ] {
                assert_eq!(cat(&some, f), cat(&all, f));
            }
            for b in &some {
                assert!(b.line.is_empty() && b.bytes.is_empty());
                assert!(b.kind.is_empty() && b.error.is_empty() && b.raw.is_empty() && b.raw.values.is_empty());
            }
        }
    }
}

#[test]
fn columns_are_checked() {
    assert_eq!(check_columns(["raw", "line"]), Ok(vec![10, 0]));
    assert!(check_columns(["nope"]).unwrap_err().contains("unknown column 'nope'"));
    assert!(check_columns(["id", "id"]).unwrap_err().contains("'id' is named twice"));
    assert!(check_columns([]).unwrap_err().contains("at least one"));
}

/// Bytes read as a file's are: at most `chunk` bytes a read, one `Interrupted` first; after
/// `shrink_after` reads it holds only its first `shrink_to` bytes; a read at `fail_at` fails.
struct FakeFile {
    data: Vec<u8>,
    chunk: usize,
    reads: std::sync::atomic::AtomicUsize,
    shrink_after: usize,
    shrink_to: usize,
    fail_at: Option<u64>,
}

impl FakeFile {
    fn new(data: &[u8], chunk: usize) -> Self {
        Self {
            data: data.to_vec(),
            chunk,
            reads: Default::default(),
            shrink_after: usize::MAX,
            shrink_to: data.len(),
            fail_at: None,
        }
    }
}

impl FileExt for FakeFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n == 0 {
            return Err(io::ErrorKind::Interrupted.into());
        }
        if self
            .fail_at
            .is_some_and(|at| (offset..offset + buf.len() as u64).contains(&at))
        {
            return Err(io::Error::other("bad sector"));
        }
        let len = if n > self.shrink_after {
            self.shrink_to
        } else {
            self.data.len()
        } as u64;
        if offset >= len {
            return Ok(0);
        }
        let k = buf.len().min((len - offset) as usize).min(self.chunk);
        buf[..k].copy_from_slice(&self.data[offset as usize..offset as usize + k]);
        Ok(k)
    }

    fn write_at(&self, _: &[u8], _: u64) -> io::Result<usize> {
        unreachable!("never written")
    }
}

/// The rows of `file` fed by `feed_file_in` in steps of `step` bytes from `start` to `stop`,
/// with the bytes fed.
fn parse_file(
    file: &FakeFile,
    range: (u64, u64),
    max: usize,
    threads: usize,
    piece: usize,
    step: u64,
) -> (Vec<Batch>, u64) {
    let mut cols = FrameColumns::new(3, max, threads);
    let (mut at, stop) = range;
    while at < stop {
        let end = stop.min(at + step);
        let fed = cols.feed_file_in(file, at, end, piece).unwrap();
        at += fed;
        if at < end {
            break;
        }
    }
    (cols.finish(), at - range.0)
}

#[test]
fn files_fed_on_threads_give_the_rows_of_feed() {
    let mut data = mixed_stream(400);
    data.extend_from_slice(b"0123456789012345678901234567890123456789012345\n\n{}");
    let len = data.len() as u64;
    for max in [40, 1 << 20] {
        for (start, stop) in [(0, len), (17, len - 5), (1000, 1001), (0, len + 100), (len, len + 9)] {
            let (a, b) = (start as usize, (stop.min(len)) as usize);
            let one = rows_of(&parse(&data[a..b], 3, max, 1, data.len()));
            for threads in [1, 2, 3, 8] {
                for piece in [7, 300, 4096, data.len()] {
                    for step in [999, u64::MAX / 2] {
                        let file = FakeFile::new(&data, 1000);
                        let (batches, fed) = parse_file(&file, (start, stop), max, threads, piece, step);
                        assert_eq!(fed, (b - a) as u64);
                        assert_eq!(rows_of(&batches), one, "{start} {stop} {threads} {piece} {step} {max}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_file_that_shrinks_gives_the_rows_of_the_bytes_fed() {
    let data = mixed_stream(300);
    for threads in [1, 2, 4] {
        for shrink_after in [1, 2, 5, 20, 60] {
            for shrink_to in [0, 10, data.len() / 3, data.len() - 1] {
                let mut file = FakeFile::new(&data, 500);
                (file.shrink_after, file.shrink_to) = (shrink_after, shrink_to);
                let (batches, fed) = parse_file(&file, (0, data.len() as u64), 1 << 20, threads, 64, u64::MAX / 2);
                assert!(fed as usize <= data.len());
                let one = rows_of(&parse(&data[..fed as usize], 3, 1 << 20, 1, data.len()));
                assert_eq!(rows_of(&batches), one, "{threads} {shrink_after} {shrink_to}");
            }
        }
    }
}

#[test]
fn a_failed_read_is_returned() {
    let data = mixed_stream(300);
    for threads in [1, 2, 4] {
        for at in [0, 5, data.len() as u64 / 2, data.len() as u64 - 1] {
            let mut file = FakeFile::new(&data, 500);
            file.fail_at = Some(at);
            let mut cols = FrameColumns::new(0, 1 << 20, threads);
            let err = cols.feed_file_in(&file, 0, data.len() as u64, 64).unwrap_err();
            assert_eq!(err.to_string(), "bad sector");
        }
    }
}
