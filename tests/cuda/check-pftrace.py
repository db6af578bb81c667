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
    """Per packet (protoc prints fields by number, so a track_event comes
    before the interned_data that names it): the sequence's default track
    (trace_packet_defaults) and interned event names apply at the packet's
    end."""
    names, counts = {}, defaultdict(lambda: defaultdict(int))
    seq_track, seq_names = {}, defaultdict(dict)
    depth = 0
    stack = []
    pk = None
    with open(path, errors="replace") as f:
        for line in f:
            s = line.strip()
            if s.endswith("{"):
                depth += 1
                key = s[:-1].strip()
                stack.append(key)
                if depth == 1:
                    pk = {"seq": 0, "ev": None, "uuid": None, "tname": None, "defaults": None,
                          "enames": {}, "iid": None}
                elif key == "track_event" and depth == 2:
                    pk["ev"] = {"type": None, "track": None, "flows": 0, "term": 0, "name": "",
                                "name_iid": None}
                continue
            if s == "}":
                depth -= 1
                stack.pop()
                if depth == 0 and pk is not None:
                    q = pk["seq"]
                    if pk["defaults"] is not None:
                        seq_track[q] = pk["defaults"]
                    seq_names[q].update(pk["enames"])
                    if pk["uuid"] is not None:
                        names[pk["uuid"]] = pk["tname"]
                    ev = pk["ev"]
                    if ev is not None:
                        if ev["track"] is None:
                            ev["track"] = seq_track.get(q)
                        if ev["name_iid"] is not None:
                            ev["name"] = seq_names[q].get(ev["name_iid"], "?")
                        c = counts[ev["track"]]
                        # CPU samples are instants too: counted apart
                        sample = ev["type"] == "TYPE_INSTANT" and ev["name"].startswith("cpu sample")
                        c["sample" if sample else ev["type"]] += 1
                        if ev["type"] == "TYPE_SLICE_BEGIN" and HOST_OP.match(ev["name"]):
                            c["host_op"] += 1
                        c["flow_out"] += ev["flows"]
                        c["flow_in"] += ev["term"]
                    pk = None
                continue
            m = re.match(r"(\w+): (.*)", s)
            if not m or pk is None:
                continue
            k, v = m.groups()
            where = stack[-1] if stack else ""
            if depth == 1 and k == "trusted_packet_sequence_id":
                pk["seq"] = int(v)
            elif where == "track_event" and depth == 2:
                ev = pk["ev"]
                if k == "type":
                    ev["type"] = v
                elif k == "track_uuid":
                    ev["track"] = int(v)
                elif k in ("flow_ids", "flow_ids_old"):
                    ev["flows"] += 1
                elif k in ("terminating_flow_ids", "terminating_flow_ids_old"):
                    ev["term"] += 1
                elif k == "name":
                    ev["name"] = v.strip('"')
                elif k == "name_iid":
                    ev["name_iid"] = int(v)
            elif where == "track_event_defaults" and k == "track_uuid":
                pk["defaults"] = int(v)
            elif where == "event_names":
                if k == "iid":
                    pk["iid"] = int(v)
                elif k == "name":
                    pk["enames"][pk["iid"]] = v.strip('"')
            elif where == "track_descriptor" and k == "uuid":
                pk["uuid"] = int(v)
            elif k in ("name", "thread_name", "process_name") and where in (
                    "track_descriptor", "thread", "process") and pk["tname"] is None:
                pk["tname"] = v.strip('"')
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
