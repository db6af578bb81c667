#!/usr/bin/env python3
"""ompt-cubin-abi7.py IMG EXE OUT - a diagnosis aid for docs/OMPT.md "GPU":
CUDA 13's ptxas writes cubins with ELF ABI version 8 (the SM number in
e_flags bits 8..15), which LLVM 19's libomptarget reads with the version 7
layout (SM in bits 0..7, EF_CUDA_64BIT_ADDRESS = 0x400) and refuses.  This
copies EXE to OUT with the embedded device image IMG (found verbatim in
EXE's offloading section) given a version 7 header for the same SM:
EI_ABIVERSION 7, e_flags = SM | 0x100 (unified texture mode) | 0x400
(64-bit addresses) | SM << 16 (virtual SM).  Nothing else changes."""
import struct
import sys

img, exe, out = (open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.argv[3])
at = exe.find(img)
if at < 0 or exe.find(img, at + 1) >= 0:
    sys.exit("ompt-cubin-abi7: the image is not in the executable exactly once")
if img[:4] != b"\x7fELF" or img[4] != 2 or img[8] != 8:
    sys.exit("ompt-cubin-abi7: not a 64-bit ELF with ABI version 8")
(flags,) = struct.unpack_from("<I", img, 48)
sm = (flags >> 8) & 0xFF
new = sm | 0x100 | 0x400 | (sm << 16)
b = bytearray(exe)
b[at + 8] = 7
struct.pack_into("<I", b, at + 48, new)
open(out, "wb").write(bytes(b))
print(f"ompt-cubin-abi7: sm_{sm}: e_flags 0x{flags:x} -> 0x{new:x}, ABI version 8 -> 7 at offset {at}")
