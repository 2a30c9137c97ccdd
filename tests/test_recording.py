"""The recording format: what RecordWriter writes, read() and extract() give back exactly."""

import io

import pytest

from acp_fast import recording


def _write(lines):
    out = io.BytesIO()
    w = recording.RecordWriter(out, ["agent", "--flag"], "9.9")
    for side, data, is_json, kw in lines:
        w.line(side, data, is_json, 1700000000.5, **kw)
    w.too_large("agent", 123456, 1700000001.0)
    w.exit(3)
    return out.getvalue()


LINES = [
    ("editor", b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"\\u00e9 \\"q\\""}}', True, {}),
    ("agent", b'  {"a":[1,2,{"crlf":true}]}  ', True, {"crlf": True}),
    ("agent", b"Debug: plain text \xe2\x9c\x93", False, {"action": "diverted"}),
    ("agent", b"\xff\xfe binary", False, {"action": "dropped"}),
    ("editor", b"", False, {}),
    ("editor", b'{"jsonrpc":"2.0","method":"x"}', True, {"eol": False, "action": "answered"}),
]


def test_round_trip_every_payload_and_flag():
    data = _write(LINES)
    records = list(recording.read(data))
    header, footer = records[0], records[-1]
    assert header["acp-fast-recording"] == 1 and header["argv"] == ["agent", "--flag"] and header["version"] == "9.9"
    assert footer["event"] == "exit" and footer["status"] == 3
    body = records[1:-1]
    assert [(r.side, r.data, r.is_json, r.crlf, r.eol, r.action) for r in body[:-1]] == [
        (side, d, j, kw.get("crlf", False), kw.get("eol", True), kw.get("action")) for side, d, j, kw in LINES
    ]
    assert body[-1].too_large == 123456 and body[-1].wire == b""
    assert [r.source for r in body[:2]] == ["client", "agent"]
    assert [r.line for r in body] == list(range(2, 2 + len(body)))
    assert recording.is_recording(data) and not recording.is_recording(LINES[0][1])


def test_extract_gives_each_side_as_on_the_wire():
    data = _write(LINES)
    assert recording.extract(data, "editor") == LINES[0][1] + b"\n" + b"\n" + LINES[5][1]
    assert recording.extract(data, "agent") == LINES[1][1] + b"\r\n" + LINES[2][1] + b"\n" + LINES[3][1] + b"\n"
    assert recording.extract(io.BytesIO(data), "agent") == recording.extract(data, "agent")
    with pytest.raises(ValueError):
        recording.extract(data, "proxy")


@pytest.mark.parametrize(
    "line, where",
    [
        (b'{"t":1,"from":"nobody","text":"x"}', "line 2 column 1"),
        (b'{"t":1,"from":"agent"}', "line 2"),
        (b'{"t":1,"from":"agent","base64":"@@@"}', "line 2"),
        (b'{"t":1,"from":"agent","frame":', "line 2"),
    ],
)
def test_malformed_records_name_the_line(line, where):
    data = _write([]).split(b"\n")[0] + b"\n" + line + b"\n"
    with pytest.raises(recording.RecordingError) as info:
        list(recording.read(data))
    assert where in str(info.value)


# Spans of payloads, found by the backend's scanner (acp_fast._find_member), not a walker of its own.


def test_a_frame_written_in_another_layout_is_found_by_scanning():
    frame = b'{"jsonrpc":"2.0","method":"x","params":{"frame":"not this one"}}'
    line = b'{ "from" : "agent", "frame" : ' + frame + b' , "t" : 1, "fr\\u0061me" : ' + frame + b" }"
    parsed = recording.parse_record(line, 2)
    assert parsed.data == frame and parsed.offset == line.rindex(frame)  # a duplicate: the last one


def test_a_text_payload_keeps_its_token_and_offset():
    line = b'{"t":1,"from":"agent","text":"a \\"quoted\\" word","action":"diverted"}'
    parsed = recording.parse_record(line, 2)
    assert parsed.data == b'a "quoted" word' and parsed.raw == b'"a \\"quoted\\" word"'
    assert parsed.offset == line.index(b'"a ')


def test_a_frame_as_deep_as_a_frame_may_be_is_read_apart_from_its_record():
    frame = b"[" * 1023 + b'{"jsonrpc":"2.0","method":"x"}' + b"]" * 1023
    line = b'{"t":1,"from":"agent","frame":' + frame + b',"action":"dropped"}'
    parsed = recording.parse_record(line, 2)
    assert parsed.data == frame and parsed.offset == line.index(b"[")
    with pytest.raises(recording.RecordingError, match="not a JSON record"):
        recording.parse_record(line[:-2] + b"x}", 2)  # not JSON after the depth limit: no span
