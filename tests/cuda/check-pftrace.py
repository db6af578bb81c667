#!/usr/bin/env python3
"""check-pftrace.py TRACE.txt PROFILE.gpdb - count what a Perfetto trace
holds, per track, from the text that `protoc --decode=perfetto.protos.Trace
perfetto_trace.proto` (Perfetto's own merged schema, not gpuprof's subset)
prints for it, and compare with the trace tables of the profile it was
written from (docs/VALIDATION.md, the H100 trace check).

Per track: slices (TYPE_SLICE_BEGIN), instants, flows started (flow_ids)
and ended (terminating_flow_ids).  The profile side: trace_event rows per
stream of kernels, copies and memsets (ops 1-3; drawn on the GPU stream
tracks), host-timed operations (alloc, free, sync: slices on the CPU
thread that ran them) and trace_launch rows per thread (instants).
Prints both and PASS / FAIL per check.
"""
import re
import sqlite3
import sys
from collections import defaultdict


# host-timed operations (alloc, free, sync): slices named after their op
HOST_OP = re.compile(r"<gpu (alloc|free|sync)>")


def parse(path):
    names, counts = {}, defaultdict(lambda: defaultdict(int))
    pkt = {}
    depth = 0
    cur_uuid = cur_name = None
    ev = None
    with open(path, errors="replace") as f:
        for line in f:
            s = line.strip()
            if s.endswith("{"):
                depth += 1
                key = s[:-1].strip()
                if key == "track_event":
                    ev = {"type": None, "track": None, "flows": 0, "term": 0, "name": ""}
                continue
            if s == "}":
                depth -= 1
                if depth == 1 and ev is not None:  # end of track_event
                    c = counts[ev["track"]]
                    c[ev["type"]] += 1
                    if ev["type"] == "TYPE_SLICE_BEGIN" and HOST_OP.match(ev["name"]):
                        c["host_op"] += 1
                    c["flow_out"] += ev["flows"]
                    c["flow_in"] += ev["term"]
                    ev = None
                if depth == 1 and cur_uuid is not None:
                    pass
                if depth == 0 and cur_uuid is not None:
                    names[cur_uuid] = cur_name
                    cur_uuid = cur_name = None
                continue
            m = re.match(r"(\w+): (.*)", s)
            if not m:
                continue
            k, v = m.groups()
            if ev is not None:
                if k == "type":
                    ev["type"] = v
                elif k == "track_uuid":
                    ev["track"] = int(v)
                elif k == "flow_ids":
                    ev["flows"] += 1
                elif k == "terminating_flow_ids":
                    ev["term"] += 1
                elif k == "name" and depth == 2:  # the event's, not an annotation's
                    ev["name"] = v.strip('"')
            elif k == "uuid":
                cur_uuid = int(v)
            elif k in ("name", "thread_name", "process_name") and cur_uuid is not None and cur_name is None:
                cur_name = v.strip('"')
    return names, counts


def main():
    names, counts = parse(sys.argv[1])
    db = sqlite3.connect(sys.argv[2])
    ok = True
    print("%-34s %8s %8s %8s %8s %8s" % ("track (Perfetto schema decode)", "slices", "host-op", "instants",
                                          "flow out", "flow in"))
    gpu, cpu = defaultdict(int), defaultdict(int)
    cpu_slices, cpu_inst = defaultdict(int), defaultdict(int)
    for uuid, c in sorted(counts.items(), key=lambda kv: names.get(kv[0]) or ""):
        n = names.get(uuid, "?%s" % uuid)
        print("%-34s %8d %8d %8d %8d %8d" % (n, c["TYPE_SLICE_BEGIN"], c["host_op"], c["TYPE_INSTANT"],
                                             c["flow_out"], c["flow_in"]))
        m = re.match(r"GPU (\d+) stream (\d+)", n)
        if m:
            gpu[(int(m.group(1)), int(m.group(2)))] += c["TYPE_SLICE_BEGIN"] - c["host_op"]
        m = re.match(r"CPU thread (\d+)", n)
        if m:
            cpu_slices[int(m.group(1))] += c["TYPE_SLICE_BEGIN"]
            cpu_inst[int(m.group(1))] += c["TYPE_INSTANT"]
    want_gpu = {(d, s): n for d, s, n in db.execute(
        "SELECT device, stream, COUNT(*) FROM trace_event WHERE op IN (1, 2, 3) GROUP BY 1, 2")}
    host_ops = db.execute("SELECT COUNT(*) FROM trace_event WHERE op NOT IN (1, 2, 3)").fetchone()[0]
    want_launch = {t: n for t, n in db.execute("SELECT tid, COUNT(*) FROM trace_launch GROUP BY 1")}
    for k in sorted(set(want_gpu) | set(gpu)):
        good = want_gpu.get(k, 0) == gpu.get(k, 0)
        ok &= good
        print("GPU %d stream %d: %d slices, profile %d kernels+copies+memsets: %s"
              % (k[0], k[1], gpu.get(k, 0), want_gpu.get(k, 0), "ok" if good else "MISMATCH"))
    for t in sorted(set(want_launch) | set(cpu_inst)):
        good = want_launch.get(t, 0) == cpu_inst.get(t, 0)
        ok &= good
        print("CPU thread %d: %d instants, profile %d launches: %s"
              % (t, cpu_inst.get(t, 0), want_launch.get(t, 0), "ok" if good else "MISMATCH"))
    # host-timed operations: on the CPU thread that ran them, or on the
    # stream's track when no thread is known (an activity without INVOKE)
    hs = sum(cpu_slices.values())
    hg = sum(c["host_op"] for u, c in counts.items() if (names.get(u) or "").startswith("GPU "))
    good = hs + hg == host_ops
    ok &= good
    print("host-timed slices: %d on CPU threads + %d on stream tracks, profile %d alloc/free/sync rows: %s"
          % (hs, hg, host_ops, "ok" if good else "MISMATCH"))
    fo = sum(c["flow_out"] for c in counts.values())
    fi = sum(c["flow_in"] for c in counts.values())
    good = fo == fi
    ok &= good
    print("flows: %d started, %d ended: %s" % (fo, fi, "ok" if good else "MISMATCH"))
    print("check-pftrace: %s" % ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


main()
