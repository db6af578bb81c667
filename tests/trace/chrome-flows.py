#!/usr/bin/env python3
"""chrome-flows.py TRACE EXPECTED: the launches and flows of a Chrome
trace-event file written by `gpuprof trace --format chrome --launches`
(TRACE may be gzip-compressed, as `-o OUT.json.gz` writes it).

The flows are bound as Perfetto's JSON importer binds them (its
json_trace_parser and flow_tracker): complete ("X") events in time order
(stable), one stack of open slices per (pid, tid) track, a slice popped
once an event starts at or after its end; a "bind_id" with "flow_out"
starts a flow at the slice on top of its track's stack after the event
is pushed (the event itself), one with "flow_in" ends the flow there; an
id started twice, an end before its start and a direction missing are
errors (Perfetto counts them as flow_duplicate_id, flow_end_without_start,
flow_without_direction and drops the flow), and so are an X event without
a numeric "dur" (Perfetto drops it), without an integer "pid" or "tid"
(chrome://tracing and speedscope key tracks by both) and a "bind_id" that
is not a JSON integer.  Timestamps are read as exact
decimals (us) and compared in ns.

Checks: every launch (an X event named "launch") is a zero-length slice on
a thread named "CPU thread N" that starts one flow; every flow binds a
launch to one slice on a track named "GPU D stream S" of the same
process, starting no earlier than the launch; every launch's flow ends;
slices on one track nest (Perfetto drops improperly nested ones); every
"sf" resolves in stackFrames, parents included.  EXPECTED is the number
of flows (every launched device operation), checked exactly.  Prints the
counts; exits 1 with the first mismatch."""
import decimal
import gzip
import json
import sys


def load(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    op = gzip.open if magic == b"\x1f\x8b" else open
    with op(path, "rt") as f:
        return json.load(f, parse_float=decimal.Decimal)


def ns(us):
    v = decimal.Decimal(us) * 1000
    assert v == v.to_integral_value(), ("a time finer than 1 ns", us)
    return int(v)


def main():
    path, expected = sys.argv[1], int(sys.argv[2])
    d = load(path)
    ev, sf = d["traceEvents"], d["stackFrames"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    for k, f in sf.items():
        assert "parent" not in f or f["parent"] in sf, ("stack frame parent unresolved", k, f)
    for e in ev:
        if "sf" in e:
            assert str(e["sf"]) in sf, ("sf unresolved", e)
    xs = sorted((e for e in ev if e["ph"] == "X"), key=lambda e: ns(e["ts"]))  # stable
    stacks, started, flows = {}, {}, []
    for e in xs:
        # Perfetto's importer drops an X event without "dur" (json_parser_failure);
        # chrome://tracing and speedscope key a track by pid and tid (Perfetto
        # would take a missing tid as the pid); a string bind_id is hex to
        # Perfetto's older importer
        assert isinstance(e.get("dur"), (int, decimal.Decimal)), ("an X event without a numeric dur", e)
        assert isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), ("an X event without pid or tid", e)
        assert "bind_id" not in e or isinstance(e["bind_id"], int), ("a bind_id that is not a JSON integer", e)
        track = (e["pid"], e["tid"])
        t0, t1 = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        st = stacks.setdefault(track, [])
        while st and st[-1][1] <= t0:
            st.pop()
        assert not st or t1 <= st[-1][1], ("slices on a track do not nest", st[-1][2], e)
        st.append((t0, t1, e))
        if "bind_id" not in e:
            continue
        fo, fi = e.get("flow_out") is True, e.get("flow_in") is True
        assert fo != fi, ("a flow binding without one direction", e)
        if fo:
            assert e["bind_id"] not in started, ("flow id started twice", e)
            started[e["bind_id"]] = e
        else:
            src = started.get(e["bind_id"])
            assert src is not None, ("flow end before (or without) its start", e)
            flows.append((src, e))
    launches = [e for e in xs if e["name"] == "launch"]
    for la in launches:
        assert la["dur"] == 0, ("launch with a duration", la)
        assert names.get((la["pid"], la["tid"]), "").startswith("CPU thread "), ("launch not on a CPU thread", la)
        assert la.get("flow_out") is True, ("launch without a flow", la)
    ends = {}
    for src, dst in flows:
        assert src["name"] == "launch", ("flow from a slice that is not a launch", src)
        track = names.get((dst["pid"], dst["tid"]), "")
        assert track.startswith("GPU ") and " stream " in track, ("flow end not on a stream", track, dst)
        assert dst["pid"] == src["pid"] and ns(src["ts"]) <= ns(dst["ts"]), ("flow across processes or back in time", src, dst)
        assert "sf" in dst, ("GPU slice without its call path", dst)
        assert src["bind_id"] not in ends, ("flow ended twice", dst)
        ends[src["bind_id"]] = dst
    assert len(ends) == len(launches), ("launches without their GPU slice", len(launches) - len(ends))
    gpu = [e for e in xs if names.get((e["pid"], e["tid"]), "").startswith("GPU ")]
    assert len(flows) == expected, ("flows", len(flows), "expected", expected)
    print(f"flows: {len(launches)} launches, {len(flows)} flows each binding its launch to one GPU "
          f"slice, {len(gpu) - len(flows)} GPU slices without")


if __name__ == "__main__":
    main()
