#!/usr/bin/env python3
"""chrome-flows.py TRACE.json EXPECTED: the launches and flows of a Chrome
trace-event file written by `gpuprof trace --format chrome --launches`.

Checks: every launch (cat "launch") is a zero-length X event on a thread
named "CPU thread N" with a call stack ("sf" resolving in stackFrames) and
one flow start ("bind_id", "flow_out"), no flow id started twice; every GPU
slice with a flow end ("flow_in") is on a track named "GPU D stream S", has
exactly one launch of that id, in the same process and not after the slice
starts; no slice has both ends.  EXPECTED is the number of GPU slices with
a flow (every launched device operation), checked exactly.  Prints the
counts; exits 1 with the first mismatch."""
import json
import sys


def main():
    path, expected = sys.argv[1], int(sys.argv[2])
    d = json.load(open(path))
    ev, sf = d["traceEvents"], d["stackFrames"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    launch = {}
    for e in ev:
        if e.get("cat") != "launch":
            continue
        assert e["ph"] == "X" and e["dur"] == 0, e
        assert names.get((e["pid"], e["tid"]), "").startswith("CPU thread "), ("launch not on a CPU thread", e)
        assert str(e.get("sf")) in sf, ("launch without a resolving call stack", e)
        assert e.get("flow_out") is True and "flow_in" not in e, e
        assert e["bind_id"] not in launch, ("flow id started twice", e)
        launch[e["bind_id"]] = e
    ends = 0
    for e in ev:
        if "flow_in" not in e:
            continue
        assert e["ph"] == "X" and e["cat"] == "gpu" and e["flow_in"] is True and "flow_out" not in e, e
        track = names.get((e["pid"], e["tid"]), "")
        assert track.startswith("GPU ") and " stream " in track, ("flow end not on a stream", track, e)
        la = launch.get(e["bind_id"])
        assert la is not None, ("flow end without its launch", e)
        assert la["pid"] == e["pid"] and la["ts"] <= e["ts"], (la, e)
        ends += 1
    gpu = [e for e in ev if e["ph"] == "X" and e.get("cat") == "gpu"]
    unbound = sum(1 for e in gpu if "bind_id" not in e)
    assert ends == expected, ("GPU slices with a flow", ends, "expected", expected)
    print(f"flows: {len(launch)} launches, {ends} GPU slices with a flow from their launch, "
          f"{unbound} GPU slices without")


if __name__ == "__main__":
    main()
