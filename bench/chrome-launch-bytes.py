#!/usr/bin/env python3
"""chrome-launch-bytes.py TRACE OPS [--write DIR]: where the bytes of a
Chrome trace-event file written with launches (`gpuprof trace --format
chrome --launches`, or bench-tracewrite's `*.2` file with BENCH_KEEP=1)
go, and what each candidate shortening of the launch slices and flows
would save, measured on the file itself.

TRACE is rewritten in memory once per candidate (the bytes the writer
would produce with that change, the rest of the file unchanged) and its
size divided by OPS (the trace's device operations, the bench's divisor)
is printed as bytes per operation, with the average line length of a
launch slice and of a GPU slice with its flow end.  The candidates:

  as written         the file
  no newlines        events separated by "," only (one line per file)
  launch "L"         the launch slices named "L" instead of "launch"
  no dur on launch   the launch slices without "dur":0
  tid = pid omitted  a launch on the thread whose tid is its pid without
                     "tid" (Perfetto's importer then takes the pid)
  small pid/tid      every pid and CPU tid renumbered 1, 2, ... (the
                     pseudo ids of the GPU tracks kept apart)
  string bind_id     each bind_id the shortest JSON string over the 90
                     printable characters that need no escape
  all of the above   together

Whether a candidate is correct for the file's readers (Perfetto's JSON
importer, chrome://tracing, speedscope) is not decided here: see
docs/PERFORMANCE.md.  With --write DIR each rewritten file is also
written to DIR/<n>.json (for tests/trace/chrome-flows.py)."""
import gzip
import re
import sys

DIGITS = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"\\')


def short_id(n):
    s = ""
    while True:
        s = DIGITS[n % len(DIGITS)] + s
        n //= len(DIGITS)
        if n == 0:
            return s


def no_newlines(b):
    return b.replace(b",\n{", b",{")


def launch_l(b):
    return b.replace(b'{"ph":"X","name":"launch",', b'{"ph":"X","name":"L",')


def no_dur(b):
    return re.sub(rb'(\{"ph":"X","name":"(?:launch|L)",[^\n}]*?),"dur":0,', rb"\1,", b)


def tid_pid(b):
    return re.sub(rb'(\{"ph":"X","name":"(?:launch|L)","pid":(\d+)),"tid":\2,', rb"\1,", b)


def small_ids(b):
    """pids and CPU tids (those above the largest GPU pseudo tid) in order
    of first appearance: 1, 2, ... skipping the GPU tracks' pseudo ids"""
    pseudo = set()
    for m in re.finditer(rb'"pid":(\d+),"tid":(\d+),"args":\{"name":"(GPU [^"]*)"', b):
        pseudo.add(int(m.group(2)))
    ids, nxt = {}, [1]

    def get(v):
        v = int(v)
        if v == 0 or v in pseudo:
            return v
        if v not in ids:
            while nxt[0] in pseudo:
                nxt[0] += 1
            ids[v] = nxt[0]
            nxt[0] += 1
        return ids[v]

    return re.sub(rb'"(pid|tid)":(\d+)', lambda m: b'"%s":%d' % (m.group(1), get(m.group(2))), b)


def string_ids(b):
    return re.sub(rb'"bind_id":(\d+)', lambda m: b'"bind_id":"%s"' % short_id(int(m.group(1))).encode(), b)


def lines(b):
    """average length (bytes, with its separator) of a launch line and of
    a GPU slice line with a flow end"""
    la = [len(x) + 1 for x in re.findall(rb'\{"ph":"X","name":"(?:launch|L)"[^\n]*', b)]
    gp = [len(x) + 1 for x in re.findall(rb'\{"ph":"X"[^\n]*"flow_in":true[^\n]*', b)]
    avg = lambda v: sum(v) / len(v) if v else float("nan")
    return avg(la), avg(gp)


def main():
    path, ops = sys.argv[1], int(sys.argv[2])
    out = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--write" else None
    with open(path, "rb") as f:
        magic = f.read(2)
    with (gzip.open if magic == b"\x1f\x8b" else open)(path, "rb") as f:
        raw = f.read()
    cands = [("as written", []), ("no newlines", [no_newlines]), ('launch "L"', [launch_l]),
             ("no dur on launch", [no_dur]), ("tid = pid omitted", [tid_pid]), ("small pid/tid", [small_ids]),
             ("string bind_id", [string_ids]),
             ("all of the above", [launch_l, no_dur, tid_pid, small_ids, string_ids, no_newlines])]
    print("| candidate | B/op | launch line B | GPU slice + flow end line B |")
    print("|---|---:|---:|---:|")
    for i, (name, fs) in enumerate(cands):
        b = raw
        for fn in fs:
            if fn is not no_newlines:
                b = fn(b)
        la, gp = lines(b)
        if no_newlines in fs:
            b = no_newlines(b)
            la, gp = la - 1, gp - 1
        print("| %s | %.1f | %.1f | %.1f |" % (name, len(b) / ops, la, gp))
        if out:
            with open("%s/%d.json" % (out, i), "wb") as f:
                f.write(b)


if __name__ == "__main__":
    main()
