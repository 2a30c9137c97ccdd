"""The proxy benchmark runs end to end on tiny sizes and reports every figure (not its speed)."""

import json
import subprocess
import sys


def test_bench_proxy_end_to_end(tmp_path):
    out = tmp_path / "r.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_fast.bench.proxy",
            "--mb",
            "2",
            "--repeat",
            "1",
            "--latency-seconds",
            "0.2",
            "--rate",
            "2000",
            "--memory-gb",
            "0.004",
            "--updates",
            "300",
            "--conductor",
            "",
            "--json",
            str(out),
        ],
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    r = json.loads(out.read_text())
    for profile in ("mixed", "large"):
        t = r[f"throughput_{profile}"]
        assert t["bytes"] > 1_000_000 and t["frames"] > 0
        assert t["proxy"]["mb_per_s"] > 0 and t["direct"]["frames_per_s"] > 0
    lat = r["latency"]
    assert lat["direct"]["frames"] == lat["proxy"]["frames"] == 400
    assert lat["direct"]["median_us"] > 0 and lat["proxy"]["p99_us"] > 0
    assert r["memory"]["full"]["bytes"] >= r["memory"]["one_pass"]["bytes"] > 0
    assert r["memory"]["full"]["peak_rss_mib"] > 0
    session = r["session"]
    assert session["updates"] == 300
    for name in ("direct", "acp-fast proxy", "acp-fast proxy --record", "acp-fast proxy --trace"):
        assert session[name]["bytes"] == session["direct"]["bytes"] > 300 * 400 and session[name]["mb_per_s"] > 0
    table = done.stdout.decode()
    assert "relay, mixed" in table and "relay, large" in table and "added" in table and "peak RSS" in table
    assert "session, 300 updates: acp-fast proxy --trace" in table
