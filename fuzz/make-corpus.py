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


hello = (field(1, 0, 1) + field(2, 0, 4242) + field(3, 2, b"/usr/bin/app") + field(4, 2, b"app")
         + field(4, 2, b"--x") + field(7, 0, 3) + field(10, 0, 123456789) + field(13, 2, b"node1"))
reply = field(1, 0, 1) + field(2, 0, 77)
gpubin = field(1, 2, b"99aa06d3014798d86001c324468d497f") + field(2, 2, b"cubin") + field(3, 0, 4) + field(5, 2, b"\x7fELF")
tree_req = field(1, 0, 0) + field(3, 0, 8)
err = field(1, 0, (1 << 64) - 4199) + field(2, 2, b"bad ring")

frames = {
    "hello": b"\x00" + frame(msg(1, hello)),
    "reply-split": b"\x02" + frame(msg(2, reply)) + frame(msg(3, gpubin)),
    "many": b"\x10" + frame(msg(12, tree_req)) + frame(msg(10, b"")) + frame(msg(20, err)) + frame(b""),
    "partial": b"\xff" + frame(msg(1, hello))[:-3],
}

SLOT = 64


def hdr(typ, nslots, length=0):
    return struct.pack("<BBBBI", typ, 1, nslots, 0, length)


def pad(b, n):
    return b + b"\0" * (n - len(b))


node = pad(hdr(1, 1) + struct.pack("<IIIIQ", 7, 0, 1, 0, 0x1234), 64)
text = b"_Z6kernelPfi"
string = pad(hdr(2, 1, len(text)) + struct.pack("<II", 3, 1) + text, 64)
path = b"/usr/lib/x86_64-linux-gnu/libOpenCL.so.1.0.0"
mod_fixed = hdr(3, 0, len(path)) + struct.pack("<IB3xQQ", 1, 20, 0x7F0000000000, 0x10000) + bytes(range(20)) + b"\0" * 4
nsl = (len(mod_fixed) + len(path) + SLOT - 1) // SLOT
module = pad(hdr(3, nsl, len(path)) + mod_fixed[8:] + path, nsl * SLOT)
invoke = pad(hdr(4, 1) + struct.pack("<BBHIQQI", 2, 1, 0, 7, (2 << 56) | 5, 1000, 99), 64)
activity = pad(hdr(5, 2) + struct.pack("<BBBBIQQQQIII7I", 2, 1, 0, 0, 0, (2 << 56) | 5, 1000, 2000, 0,
                                       3, 3, 0, 80, 256, 32, 1024, 0, 0, 750), 128)
copy = pad(hdr(5, 2) + struct.pack("<BBBBIQQQQ", 1, 2, 1, 0, 0, 9, 10, 50, 4096), 128)
status = pad(hdr(6, 1) + struct.pack("<BBHiI", 1, 0, 0, -1001, 3), 64)
# a Python frame (docs/PYTHON.md): NODE flag 1, module = PYCODE string 8, offset = line
pytext = b"Net.forward\t/x/train.py"
pystring = pad(hdr(2, 1, len(pytext)) + struct.pack("<II", 8, 3) + pytext, 64)
pynode = pad(struct.pack("<BBBBI", 1, 1, 1, 1, 0) + struct.pack("<IIIIQ", 9, 7, 8, 0, 42), 64)

# a CPU-time sample (record.h CPUSAMPLE): node 7, tid 99, ts, 1 ms of CPU time, 1 expiration
cpusample = pad(hdr(10, 1) + struct.pack("<IIQQI", 7, 99, 5000, 1000000, 1), 64)

# a closed duty window (record.h TRACEWIN): CUDA, duty, 3 windows, t0, [start, end), 30 ms in all
tracewin = pad(hdr(11, 1) + struct.pack("<BBHIQQQQ", 2, 1, 0, 3, 1000, 200001000, 200011000, 30000000), 64)

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
