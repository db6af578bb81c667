#!/usr/bin/env python3
"""check_inline.py - the daemon's symbolizer on call sites in optimized code.

usage: check_inline.py --symres PATH CASE [--exe EXE] [--src SRC] [--nvcc NVCC --tmp DIR]

CASE c / cxx / cuda: find, with objdump, every call from a given function
to a given callee in EXE (cuda: compile SRC with nvcc -O2 -g first; exit 77
when nvcc is absent), take its return address - 1 (what the shim records),
resolve it with symres (daemon/symbols.c) and assert the exact chain,
outermost first: (function, file, line, inlined).  Lines come from the
"@name" markers in SRC.  The chain is also compared with `addr2line -i -f -C`
(binutils, an independent DWARF reader).  Exit 0 pass, 1 fail, 77 skip.
"""
import argparse
import os
import re
import subprocess
import sys

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def markers(src):
    m = {}
    with open(src) as f:
        for i, line in enumerate(f, 1):
            for name in re.findall(r"@([A-Za-z_0-9]+)", line):
                m[name] = i
    return m


def call_sites(exe, caller, callee_re):
    """Return addresses - 1 of the calls from function `caller` (symbol or
    demangled name up to '(' / '.') to a symbol matching callee_re."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", exe], capture_output=True, text=True,
                         check=True).stdout
    sites, fn, pending = [], None, False
    for line in out.splitlines():
        h = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if h:
            fn = re.split(r"[(.]", h.group(1))[0]
            pending = False
            continue
        ins = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if not ins:
            continue
        addr = int(ins.group(1), 16)
        if pending:  # the instruction after the call: the return address
            sites.append(addr - 1)
            pending = False
        if fn == caller and ins.group(2).startswith("call") and re.search(callee_re, ins.group(3)):
            pending = True
    return sites


def symres(tool, exe, off):
    out = subprocess.run([tool, "-p", exe, hex(off)], capture_output=True, text=True, timeout=60).stdout
    fr = []
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[2].isdigit():
            f, file, ln, inl = parts[3].rsplit("|", 3)
            fr.append((f, os.path.basename(file), int(ln), int(inl)))
    return fr


def addr2line(exe, off):
    out = subprocess.run(["addr2line", "-i", "-f", "-C", "-e", exe, hex(off)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    pairs = [(out[i], out[i + 1]) for i in range(0, len(out) - 1, 2)]
    return [(f, os.path.basename(loc.split(":")[0]), int(loc.split(":")[1].split()[0])) for f, loc in reversed(pairs)]


def expect(tool, exe, caller, callee_re, want, compare_binutils=True):
    """want: [(function, file basename, line), ...] outermost first."""
    sites = call_sites(exe, caller, callee_re)
    check(len(sites) >= 1, "%s: no call from %s to /%s/" % (os.path.basename(exe), caller, callee_re))
    for off in sites:
        got = symres(tool, exe, off)
        full = [(f, file, ln, 1 if k else 0) for k, (f, file, ln) in enumerate(want)]
        print("%s %s+%#x: %s" % (os.path.basename(exe), caller, off, " > ".join("%s(%s:%d%s)" % (
            f, file, ln, ",inl" if inl else "") for f, file, ln, inl in got)))
        check(got == full, "%s %#x: chain %r, want %r" % (caller, off, got, full))
        if compare_binutils:
            b = addr2line(exe, off)
            check([(f, file, ln) for f, file, ln, _ in got] == b, "%s %#x: addr2line says %r" % (caller, off, b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--symres", required=True)
    ap.add_argument("--exe")
    ap.add_argument("--src", required=True)
    ap.add_argument("--nvcc")
    ap.add_argument("--tmp")
    ap.add_argument("case")
    a = ap.parse_args()
    m = markers(a.src)
    src = os.path.basename(a.src)
    if a.case == "c":
        expect(a.symres, a.exe, "phase_c", r"<sink_helper>", [("phase_c", src, m["phase_c"]),
                                                               ("helper", src, m["helper"])])
        expect(a.symres, a.exe, "stage_two", r"<sink_chain>",
               [("stage_two", src, m["stage_two"]), ("chain_a", src, m["chain_a"]), ("chain_b", src, m["chain_b"]),
                ("chain_c", src, m["chain_c"])])
        expect(a.symres, a.exe, "main", r"<sink_main>", [("main", src, m["main"])])
    elif a.case == "cxx":
        expect(a.symres, a.exe, "phase_t", r"<sink_tmpl", [("phase_t(float)", src, m["phase_t"]),
                                                           ("float launch<float>(float)", src, m["launch"]),
                                                           ("Launcher<float>::run(float)", src, m["run"])])
    elif a.case == "cuda":
        if not a.nvcc or not os.access(a.nvcc, os.X_OK):
            print("SKIP: no nvcc")
            return 77
        os.makedirs(a.tmp, exist_ok=True)
        exe = os.path.join(a.tmp, "cuda-host")
        subprocess.run([a.nvcc, "-O2", "-g", "-Xcompiler", "-fno-omit-frame-pointer", "-o", exe, a.src], check=True,
                       timeout=300)
        stub = r"<(__device_stub__|cudaLaunchKernel|__cudaLaunchKernel)"
        expect(a.symres, exe, "stage_one", stub + r"\S*k_alpha|" + r"<cudaLaunchKernel",
               [("stage_one(float*)", src, m["stage_one"]), ("k_alpha(float*, int)", src, m["k_alpha"])])
        expect(a.symres, exe, "stage_two", stub + r"\S*k_beta|" + r"<cudaLaunchKernel",
               [("stage_two(float*)", src, m["stage_two"]), ("chain_a", src, m["chain_a"]),
                ("chain_b", src, m["chain_b"]), ("chain_c", src, m["chain_c"]), ("k_beta(float*, int)", src,
                                                                                m["k_beta"])])
        # main > cudaMalloc<float> (cuda_runtime.h's template, inlined); binutils
        # names the inlined frame "main" here, so no comparison with it
        sites = call_sites(exe, "main", r"<cudaMalloc>")
        check(len(sites) >= 1, "no cudaMalloc call in main")
        for off in sites:
            got = symres(a.symres, exe, off)
            print("cuda-host main+%#x: %r" % (off, got))
            check(len(got) == 2 and got[0] == ("main", src, m["main"], 0), "main frame %r" % got[:1])
            check(len(got) == 2 and got[1][0] == "cudaMalloc<float>" and got[1][1] == "cuda_runtime.h" and
                  got[1][2] > 0 and got[1][3] == 1, "inlined cudaMalloc<float> frame %r" % got[1:])
    else:
        print("unknown case", a.case)
        return 2
    print("FAILED: %d check(s)" % len(FAILS) if FAILS else "PASS")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
