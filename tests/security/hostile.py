#!/usr/bin/python3
"""hostile.py - a hostile local client of gpuprofd, speaking its real
protocol: 4-byte little-endian length + a packed gpuprof.Msg
(proto/gpuprof.proto, docs/FORMATS.md).  The few messages it needs are
encoded by hand (no protobuf module needed).

Usage: hostile.py MODE SOCKET [args...]; every mode prints one result line
per finding ("key value ...") and exits 0 when the daemon behaved, 1 when
it did not, 2 on a usage error.  Every wait has a deadline.

  idle SOCK N CLOSE_DEADLINE_S
      Open N connections one after the other; on each send one PsRequest
      and read the answer (PsReply: admitted; Error: refused, with its
      message; EOF: refused without a word).  Print
      "admitted A refused R" and the first refusal message, then idle and
      wait until the daemon has closed every admitted connection (EOF),
      at most CLOSE_DEADLINE_S: "closed K of A after T s".
  flood SOCK N RELEASE_FILE
      Open one witness connection (PsRequest answered), then N more that
      say nothing; then ask again on the witness: "witness ok" when it is
      still served.  Hold everything until RELEASE_FILE exists (at most
      120 s), then close all.
  slow SOCK VARIANT DEADLINE_S
      VARIANT trickle: a header that promises a 4 MiB - 16 payload, then
      one byte every 100 ms; header: 2 bytes of a header, then nothing;
      silent: nothing at all; after-reply: a PsRequest, its reply read,
      then nothing.  Print "closed after T s, sent B bytes" once the
      daemon closes the connection, or fail at DEADLINE_S.
  hello SOCK EXE JOB RELEASE_FILE [PID]
      Register as a profiled process with a Hello whose exe and job_id are
      EXE and JOB (each may hold any byte: \\xNN escapes are decoded) and
      pid PID (default: its own), print "profile ID" or "refused MSG",
      then hold the connection until RELEASE_FILE exists (at most 120 s).
  hellos SOCK N
      Register N times one after the other (a Hello, its reply, close):
      print "profile ID" for each, fail at the first refusal.
  malformed SOCK
      Each kind of bad frame on a fresh connection, five times each: every
      one must get an Error with the expected code and then EOF.
"""
import os
import socket
import struct
import sys
import time

# error.h: GPD_E__BASE = -4200, then one code per X() entry in order.
GPD_EFRAMETOOBIG = -4195
GPD_EBADFRAME = -4194
GPD_EPROTO = -4193

PS_REQ = bytes([(10 << 3) | 2, 0])          # Msg{ps_req: PsRequest{}}
FIELD_PS, FIELD_ERROR = 11, 20


def frame(payload):
    return struct.pack("<I", len(payload)) + payload


def connect(path, timeout=10.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """[(field number, wire type, value)] of one message (varint and
    length-delimited only, which is all gpuprof.Msg replies use here)."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        out.append((f, wt, v))
    return out


def parse_error(body):
    code, msg = 0, ""
    for f, _, v in fields(body):
        if f == 1:
            code = v - (1 << 64) if v >= 1 << 63 else v
        elif f == 2:
            msg = v.decode("utf-8", "replace")
    return code, msg


def recv_exact(s, n, deadline):
    data = b""
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no data within the deadline")
        s.settimeout(left)
        b = s.recv(n - len(data))
        if not b:
            return None
        data += b
    return data


def read_msg(s, deadline):
    """(field, body) of the next frame, or None on EOF."""
    hdr = recv_exact(s, 4, deadline)
    if hdr is None:
        return None
    (n,) = struct.unpack("<I", hdr)
    payload = recv_exact(s, n, deadline)
    if payload is None:
        return None
    fl = fields(payload)
    if not fl:
        return (0, b"")
    return (fl[0][0], fl[0][2])


def wait_eof(s, deadline):
    """True once the peer closed (EOF or reset) before the deadline."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        s.settimeout(left)
        try:
            if not s.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False


def send(s, data):
    """sendall that tolerates a peer that already closed (a refused
    connection gets its Error and EOF before the request is sent)."""
    try:
        s.sendall(data)
        return True
    except (BrokenPipeError, ConnectionResetError):
        return False


def key(field, wt):
    return varint_bytes((field << 3) | wt)


def varint_bytes(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ld(field, data):
    """A length-delimited field."""
    return key(field, 2) + varint_bytes(len(data)) + data


def vi(field, v):
    """A varint field (negative int32 as 10-byte two's complement)."""
    return key(field, 0) + varint_bytes(v & ((1 << 64) - 1))


def unescape(text):
    """A command-line argument with \\xNN escapes as bytes."""
    return text.encode("latin-1", "surrogateescape").decode("unicode_escape").encode("latin-1")


def hello_msg(exe, job, pid):
    """Msg{hello: Hello{proto_version 2, pid, exe, job_id, rank -1, local_rank -1}}."""
    h = vi(1, 2) + vi(2, pid) + ld(3, exe) + ld(5, job) + vi(7, -1) + vi(8, -1)
    return ld(1, h)


def out(*a):
    print(*a, flush=True)


def mode_idle(path, n, close_deadline):
    admitted, refused, first_refusal = [], 0, None
    for _ in range(n):
        s = connect(path)
        send(s, frame(PS_REQ))
        try:
            r = read_msg(s, time.monotonic() + 10)
        except ConnectionResetError:
            r = None
        if r and r[0] == FIELD_PS:
            admitted.append(s)
            continue
        refused += 1
        if r and r[0] == FIELD_ERROR and first_refusal is None:
            first_refusal = "%d %s" % parse_error(r[1])
        s.close()
    out("admitted %d refused %d" % (len(admitted), refused))
    out("refusal %s" % first_refusal)
    t0 = time.monotonic()
    deadline = t0 + close_deadline
    closed = sum(1 for s in admitted if wait_eof(s, deadline))
    out("closed %d of %d after %.1f s" % (closed, len(admitted), time.monotonic() - t0))
    return 0 if closed == len(admitted) else 1


def mode_flood(path, n, release):
    w = connect(path)
    w.sendall(frame(PS_REQ))
    r = read_msg(w, time.monotonic() + 10)
    if not r or r[0] != FIELD_PS:
        out("witness failed before the flood: %r" % (r,))
        return 1
    held, failed = [], 0
    for _ in range(n):
        try:
            held.append(connect(path, timeout=2.0))
        except OSError:
            failed += 1
    out("opened %d failed %d" % (len(held), failed))
    w.sendall(frame(PS_REQ))
    r = read_msg(w, time.monotonic() + 10)
    out("witness %s" % ("ok" if r and r[0] == FIELD_PS else "failed %r" % (r,)))
    deadline = time.monotonic() + 120
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.05)
    for s in held:
        s.close()
    w.close()
    out("released")
    return 0 if r and r[0] == FIELD_PS else 1


def mode_slow(path, variant, deadline_s):
    s = connect(path)
    t0 = time.monotonic()
    deadline = t0 + deadline_s
    sent = 0
    if variant == "trickle":
        s.sendall(struct.pack("<I", (4 << 20) - 16))
        sent = 4
        while time.monotonic() < deadline:
            try:
                s.send(b"\x00")
                sent += 1
            except (BrokenPipeError, ConnectionResetError):
                break
            if wait_eof(s, time.monotonic() + 0.1):
                break
        else:
            out("not closed within %g s (sent %d bytes)" % (deadline_s, sent))
            return 1
    else:
        if variant == "header":
            s.sendall(b"\x10\x00")
            sent = 2
        elif variant == "after-reply":
            s.sendall(frame(PS_REQ))
            sent = 6
            r = read_msg(s, deadline)
            if not r or r[0] != FIELD_PS:
                out("no PsReply: %r" % (r,))
                return 1
        elif variant != "silent":
            out("unknown variant %s" % variant)
            return 2
        if not wait_eof(s, deadline):
            out("not closed within %g s" % deadline_s)
            return 1
    out("closed after %.2f s, sent %d bytes" % (time.monotonic() - t0, sent))
    return 0


def mode_malformed(path):
    cases = [
        # name, bytes sent, expected Error code
        ("garbage", frame(b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), GPD_EBADFRAME),
        ("too-big", struct.pack("<I", 0xFFFFFFFF) + b"xxxx", GPD_EFRAMETOOBIG),
        ("over-max", struct.pack("<I", (4 << 20) + 1), GPD_EFRAMETOOBIG),
        ("client-sends-error", frame(bytes([0xA2, 0x01, 0x00])), GPD_EPROTO),
        ("gpubin-before-hello", frame(bytes([0x1A, 0x00])), GPD_EPROTO),
        ("empty", frame(b""), GPD_EPROTO),
    ]
    bad = 0
    for name, data, want in cases:
        for _ in range(5):
            s = connect(path)
            send(s, data)
            deadline = time.monotonic() + 10
            try:
                r = read_msg(s, deadline)
            except (ConnectionResetError, TimeoutError) as e:
                r = ("exc", str(e))
            code = parse_error(r[1])[0] if r and r[0] == FIELD_ERROR else None
            eof = wait_eof(s, deadline)
            s.close()
            if code != want or not eof:
                out("case %s: reply %r code %r (want %d) eof %s" % (name, r, code, want, eof))
                bad += 1
        out("case %s: Error %d then EOF, 5 of 5" % (name, want) if not bad else "case %s done" % name)
    # A frame cut off by EOF: no reply is possible; the daemon logs it and
    # closes its side.
    for _ in range(5):
        s = connect(path)
        s.sendall(struct.pack("<I", 100) + b"0123456789")
        s.shutdown(socket.SHUT_WR)
        if not wait_eof(s, time.monotonic() + 10):
            out("case truncated: not closed")
            bad += 1
        s.close()
    out("case truncated: closed")
    return 1 if bad else 0


def mode_hello(path, exe, job, release, pid):
    s = connect(path)
    s.sendall(frame(hello_msg(unescape(exe), unescape(job), pid)))
    r = read_msg(s, time.monotonic() + 10)
    if r and r[0] == 2:
        pid_ = dict((f, v) for f, _, v in fields(r[1])).get(2, 0)
        out("profile %d" % pid_)
    else:
        out("refused %r" % (parse_error(r[1])[1] if r and r[0] == FIELD_ERROR else r,))
        return 1
    deadline = time.monotonic() + 120
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.05)
    s.close()
    out("released")
    return 0


def mode_hellos(path, n):
    for _ in range(n):
        s = connect(path)
        s.sendall(frame(hello_msg(b"/bin/ids", b"", os.getpid())))
        r = read_msg(s, time.monotonic() + 10)
        s.close()
        if not r or r[0] != 2:
            out("refused %r" % (parse_error(r[1])[1] if r and r[0] == FIELD_ERROR else r,))
            return 1
        reply = dict((f, v) for f, _, v in fields(r[1]))
        if reply.get(3):  # HelloReply.error: refused, no region
            out("refused %s" % reply[3].decode(errors="replace"))
            return 1
        out("profile %d" % reply.get(2, 0))
    return 0


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    mode, path, args = argv[1], argv[2], argv[3:]
    if mode == "idle":
        return mode_idle(path, int(args[0]), float(args[1]))
    if mode == "flood":
        return mode_flood(path, int(args[0]), args[1])
    if mode == "slow":
        return mode_slow(path, args[0], float(args[1]))
    if mode == "malformed":
        return mode_malformed(path)
    if mode == "hellos":
        return mode_hellos(path, int(args[0]))
    if mode == "hello":
        return mode_hello(path, args[0], args[1], args[2], int(args[3]) if len(args) > 3 else os.getpid())
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
