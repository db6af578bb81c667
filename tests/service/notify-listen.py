#!/usr/bin/env python3
"""Test-owned NOTIFY_SOCKET: bind an AF_UNIX datagram socket at argv[1] and
append every sd_notify message to argv[2], one message per line with its
newline-separated assignments joined by spaces.  Exits after argv[3]
seconds (default 300) so that a crashed test never leaves it behind."""
import os, socket, sys, time

path, log = sys.argv[1], sys.argv[2]
lifetime = float(sys.argv[3]) if len(sys.argv) > 3 else 300.0
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o666)
end = time.monotonic() + lifetime
with open(log, "a", buffering=1) as out:
    out.write("# listening\n")
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        out.write(data.decode("utf-8", "replace").strip().replace("\n", " ") + "\n")
