#!/usr/bin/env python3
"""check-suite-build.py - advisor.suite-build: the validation suite
(tests/advisor/advise-suite.cu) as nvcc built it for sm_90 still carries
each designed defect, and the split names exactly its pairs.

  check-suite-build.py PTXAS.txt advise-suite.cu suite-split.txt
  check-suite-build.py --build NVCC advise-suite.cu OUT.cubin PTXAS.txt

PTXAS.txt: ptxas's -v report of `nvcc -cubin -arch=sm_90 -O3 -lineinfo
-Xptxas -v advise-suite.cu` (stderr), which --build runs (the build
step; exit: nvcc's).  Checked: the cases table of the
source equals the split's pairs; every pair has a CASE_bad and a
CASE_fixed kernel and its "// CASE-BAD" / "// CASE-FIXED" lines; shared
memory per block where the source fixes it (transpose 4096 / 4224 B,
smemaos 8192 / 9216, localarr 0 / 32768, warpbal 1024 / 1024); spills
only in spill_bad; local memory (a stack frame) in localarr_bad and not in
its fix; regocc_bad holding fewer blocks of 256 threads per SM by its
registers than regocc_fixed; the __noinline__ function kept a function.
Prints the registers, stack and spills of every kernel.  Exit 0 PASS, 1
FAIL.
"""
import re
import subprocess
import sys


def kernels(text):
    k, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?(\w+)'?", line)
        if m:
            cur = k.setdefault(m.group(1), {"regs": 0, "stack": 0, "spill": 0, "smem": 0})
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line)
        if m:
            cur["stack"], cur["spill"] = int(m.group(1)), int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            cur["smem"] = int(m.group(1))
    return k


def blocks_by_regs(regs, threads=256):
    """Blocks per SM that sm_90's 64 K registers allow (per warp rounded up to 256)."""
    per_warp = -(-regs * 32 // 256) * 256
    return 65536 // (per_warp * (threads // 32))


def build(nvcc, src, cubin, report):
    with open(report, "w") as o:
        return subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-O3", "-lineinfo", "-Xptxas", "-v", "-o", cubin,
                               src], stderr=o).returncode


def main():
    if sys.argv[1] == "--build":
        return build(*sys.argv[2:6])
    k = kernels(open(sys.argv[1]).read())
    src = open(sys.argv[2]).read()
    split = [l.split()[0] for l in open(sys.argv[3]) if l.strip() and not l.startswith("#")]
    cases = re.findall(r'\{"(\w+)", l_\w+\}', src)
    bad = []
    if sorted(cases) != sorted(split) or len(set(cases)) != len(cases):
        bad.append("cases %s != split %s" % (cases, split))

    def get(case, v):
        n = "%s_%s" % (case, v)
        m = [x for x in k if x.startswith("_Z%d%sP" % (len(n), n)) or x.startswith("_Z%d%s" % (len(n), n))]
        return k[m[0]] if m else None

    for c in cases:
        for v in ("bad", "fixed"):
            p = get(c, v)
            if p is None:
                bad.append("no kernel %s_%s" % (c, v))
                continue
            print("%-16s %3d registers, %4d B stack, %4d B spilled, %6d B shared" % (
                c + "_" + v, p["regs"], p["stack"], p["spill"], p["smem"]))
            if "// %s-%s" % (c.upper(), v.upper()) not in src:
                bad.append("no // %s-%s line" % (c.upper(), v.upper()))
            if p["spill"] and (c, v) != ("spill", "bad"):
                bad.append("%s_%s spills %d B" % (c, v, p["spill"]))
    want_smem = {"transpose": (4096, 4224), "smemaos": (8192, 9216), "localarr": (0, 32768),
                 "warpbal": (1024, 1024)}
    for c, (b, f) in want_smem.items():
        got = (get(c, "bad") or {}).get("smem"), (get(c, "fixed") or {}).get("smem")
        if got != (b, f):
            bad.append("%s shared memory %s, want %s" % (c, got, (b, f)))
    sb, sf = get("spill", "bad") or {}, get("spill", "fixed") or {}
    if not sb.get("spill") or sf.get("spill") != 0:
        bad.append("spill: bad spills %s B, fixed %s B" % (sb.get("spill"), sf.get("spill")))
    lb, lf = get("localarr", "bad") or {}, get("localarr", "fixed") or {}
    if not lb.get("stack") or lf.get("stack") != 0:
        bad.append("localarr: stack %s / %s" % (lb.get("stack"), lf.get("stack")))
    rb, rf = get("regocc", "bad") or {}, get("regocc", "fixed") or {}
    if rb and rf:
        nb, nf = blocks_by_regs(rb["regs"]), min(8, blocks_by_regs(rf["regs"]))
        print("regocc: %d / %d registers -> %d / %d blocks of 256 per SM" % (rb["regs"], rf["regs"], nb, nf))
        if nb >= nf:
            bad.append("regocc: registers do not limit the bad variant (%d >= %d blocks)" % (nb, nf))
    if not any(x.startswith("_Z13inl_step_call") for x in k):
        bad.append("inl_step_call was inlined")
    for b in bad:
        print("FAIL: " + b)
    print("PASS" if not bad else "FAIL")
    return 1 if bad else 0


sys.exit(main())
