#!/usr/bin/env python3
"""Write the seed corpora of the fuzz targets (fuzz/corpus/<target>/).

Valid inputs only, built from the formats in common/include/gpuprof/
(record.h, frame.h) and proto/gpuprof.proto; run again after a format
change.  Usage: fuzz/make-corpus.py  (writes next to this script)."""
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wt, payload):
    key = varint(num << 3 | wt)
    if wt == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def msg(num, inner):
    return field(num, 2, inner)


def frame(p):
    return struct.pack("<I", len(p)) + p


hello = (field(1, 0, 2) + field(2, 0, 4242) + field(3, 2, b"/usr/bin/app") + field(4, 2, b"app")
         + field(4, 2, b"--x") + field(7, 0, 3) + field(10, 0, 123456789) + field(13, 2, b"node1"))
reply = field(1, 0, 2) + field(2, 0, 77)
gpubin = field(1, 2, b"99aa06d3014798d86001c324468d497f") + field(2, 2, b"cubin") + field(3, 0, 4) + field(5, 2, b"\x7fELF")
tree_req = field(1, 0, 0) + field(3, 0, 8)
err = field(1, 0, (1 << 64) - 4199) + field(2, 2, b"bad ring")

# a tree reply in the packed form (TreeRequest.packed_metrics / no_incl):
# Node.excl_ids (11) and excl_values (12) as packed fields
packed_node = (field(1, 0, 0x1234) + field(2, 0, 1) + field(3, 0, 3) + field(4, 2, b"k(float*)")
               + field(11, 2, varint(0) + varint(1) + varint(49))
               + field(12, 2, struct.pack("<ddd", 1500.0, 1500.0, 3.0)))
tree_packed = field(1, 2, packed_node) + field(1, 2, field(1, 0, 1) + field(3, 0, 1))
tree_req_packed = field(3, 0, 0) + field(4, 0, 1) + field(5, 0, 1)

frames = {
    "hello": b"\x00" + frame(msg(1, hello)),
    "tree-packed": b"\x20" + frame(msg(12, tree_req_packed)) + frame(msg(13, tree_packed)),
    "reply-split": b"\x02" + frame(msg(2, reply)) + frame(msg(3, gpubin)),
    "many": b"\x10" + frame(msg(12, tree_req)) + frame(msg(10, b"")) + frame(msg(20, err)) + frame(b""),
    "partial": b"\xff" + frame(msg(1, hello))[:-3],
}

SLOT = 32  # record.h GPD_SLOT_SIZE (record format 2)
VERSION = 2  # record.h GPD_REC_VERSION


def hdr(typ, nslots, length=0, flags=0):
    return struct.pack("<BBBBI", typ, VERSION, nslots, flags, length)


def rec(typ, body, length=0, flags=0, nslots=None):
    """A record of `body` after its header, padded to whole slots; nslots
    as record.h counts them (a fixed record: its struct's size)."""
    n = nslots or (8 + len(body) + SLOT - 1) // SLOT
    return (hdr(typ, n, length, flags) + body).ljust(n * SLOT, b"\0")


node = rec(1, struct.pack("<IIIIQ", 7, 0, 1, 0, 0x1234))
text = b"_Z6kernelPfi"
string = rec(2, struct.pack("<II", 3, 1) + text, len(text))
path = b"/usr/lib/x86_64-linux-gnu/libOpenCL.so.1.0.0"
module = rec(3, struct.pack("<IB3xQQ", 1, 20, 0x7F0000000000, 0x10000) + bytes(range(20)) + b"\0" * 4 + path, len(path))
invoke = rec(4, struct.pack("<BBHIQQ", 2, 1, 0, 7, (2 << 56) | 5, 1000))
activity = rec(5, struct.pack("<BBBBIQQQQIII7I", 2, 1, 0, 0, 0, (2 << 56) | 5, 1000, 2000, 0,
                              3, 3, 0, 80, 256, 32, 1024, 0, 0, 750), nslots=3)
copy = rec(5, struct.pack("<BBBBIQQQQ", 1, 2, 1, 0, 0, 9, 10, 50, 4096), nslots=3)
status = rec(6, struct.pack("<BBHiI", 1, 0, 0, -1001, 3))
# a Python frame (docs/PYTHON.md): NODE flag 1, module = PYCODE string 8, offset = line
pytext = b"Net.forward\t/x/train.py"
pystring = rec(2, struct.pack("<II", 8, 3) + pytext, len(pytext))
pynode = rec(1, struct.pack("<IIIIQ", 9, 7, 8, 0, 42), flags=1)

# a CPU-time sample (record.h CPUSAMPLE, 2 slots): node 7, tid 99, ts, 1 ms of CPU time, 1 expiration
cpusample = rec(10, struct.pack("<IIQQI", 7, 99, 5000, 1000000, 1), nslots=2)

# a closed duty window (record.h TRACEWIN, 2 slots): CUDA, duty, 3 windows, t0, [start, end), 30 ms in all
tracewin = rec(11, struct.pack("<BBHIQQQQ", 2, 1, 0, 3, 1000, 200001000, 200011000, 30000000), nslots=2)

records = {"cpusample": cpusample, "tracewin": tracewin, "node": node, "string": string, "module": module, "invoke": invoke,
           "activity": activity, "copy": copy, "status": status, "pystring": pystring, "pynode": pynode}


def ring(recs, tail=0):
    data = b"".join(recs)
    head = tail + len(data) // SLOT
    return b"\x01" + struct.pack("<QQB", tail, head, 1) + data


def write(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


for k, v in frames.items():
    write("fuzz-frame", k, v)
for k, v in records.items():
    write("fuzz-record", "rec-" + k, b"\x00" + v)
write("fuzz-record", "ring-mixed", ring([node, string, invoke, activity, module, copy, status, cpusample, tracewin]))
write("fuzz-record", "ring-retired-empty", b"\x01" + struct.pack("<QQB", 64, 64, 2))
# a ring whose records straddle the end: tail at slot 62
wrap = [invoke, invoke, activity, string]
raw = b"".join(wrap)
slots = [raw[i:i + SLOT] for i in range(0, len(raw), SLOT)]
area = [b"\0" * SLOT] * 64
for i, s in enumerate(slots):
    area[(62 + i) % 64] = s
write("fuzz-record", "ring-wrap", b"\x01" + struct.pack("<QQB", 126, 126 + len(slots), 1) + b"".join(area))
