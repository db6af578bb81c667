#!/usr/bin/env python3
"""chrome-flows-test.py: tests/trace/chrome-flows.py against small Chrome
trace-event files, one launch and its GPU slice: the form
cli/xwrite-chrome.c writes is accepted (1 flow), and each shortening
or slip that a reader of the file would not take is rejected with its
message: a launch without "dur" (Perfetto's importer drops an X event
without one), without "tid" (chrome://tracing and speedscope key tracks
by pid and tid), a string bind_id (hex to Perfetto's older importer),
"flow_out":1 (the newer tokenizer reads booleans only), an id started
twice, a flow ending before its start.  Exits 1 at the first mismatch."""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def base():
    return {"traceEvents": [
        {"ph": "M", "name": "thread_name", "pid": 4242, "tid": 4242, "args": {"name": "CPU thread 4242"}},
        {"ph": "M", "name": "thread_name", "pid": 4242, "tid": 1, "args": {"name": "GPU 0 stream 7"}},
        {"ph": "X", "name": "launch", "pid": 4242, "tid": 4242, "ts": 1.5, "dur": 0, "bind_id": 1,
         "flow_out": True},
        {"ph": "X", "name": "k", "pid": 4242, "tid": 1, "ts": 4.25, "dur": 10, "sf": 2, "bind_id": 1,
         "flow_in": True}],
        "stackFrames": {"1": {"name": "main"}, "2": {"name": "k(int)", "parent": "1"}}}


def launch(d):
    return d["traceEvents"][2]


def check(name, d, expected, want_rc, want):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(d, f)
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, "chrome-flows.py"), f.name, str(expected)],
                           capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    out = r.stdout + r.stderr
    ok = r.returncode == want_rc and want in out and "KeyError" not in out and "TypeError" not in out
    print("%-28s rc %d %s" % (name, r.returncode, "ok" if ok else "MISMATCH:\n" + out))
    return ok


def mutated(fn):
    d = copy.deepcopy(base())
    fn(d)
    return d


def main():
    cases = [
        ("as written", base(), 1, 0, "1 launches, 1 flows"),
        ("launch without dur", mutated(lambda d: launch(d).pop("dur")), 1, 1, "without a numeric dur"),
        ("launch without tid", mutated(lambda d: launch(d).pop("tid")), 1, 1, "without pid or tid"),
        ("string bind_id", mutated(lambda d: [e.update(bind_id="1") for e in d["traceEvents"][2:]]), 1, 1,
         "not a JSON integer"),
        ("flow_out 1", mutated(lambda d: launch(d).update(flow_out=1)), 1, 1, "without one direction"),
        ("id started twice", mutated(lambda d: d["traceEvents"].append(dict(launch(d), ts=2))), 1, 1,
         "started twice"),
        ("end before start", mutated(lambda d: launch(d).update(ts=5)), 1, 1, "end before"),
    ]
    bad = [c[0] for c in cases if not check(*c)]
    if bad:
        print("chrome-flows.py mismatches:", ", ".join(bad))
        sys.exit(1)
    print("chrome-flows.py: %d cases as expected" % len(cases))


if __name__ == "__main__":
    main()
