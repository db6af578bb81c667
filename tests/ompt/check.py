#!/usr/bin/env python3
"""check.py - the OpenMP offload profile of omp-known (tests/ompt).

Usage: check.py DB LOOP LINE_ONE LINE_TWO [cuda|vendor]
Sums each metric by (function holding the construct, construct label,
operation placeholder, kernel name) -- the function is the innermost
source function of the frame that is the parent of the `<omp target...>`
context -- and compares the table with what omp-known.c must give for
LOOP iterations, exactly: every row present with its value, no other row.
With `cuda` (tests/cuda/gpu-ompt.sh, NVPTX offload with the CUDA back end):
kernels carry the device entry's name (__omp_offloading_..._region_one_lN,
from CUPTI) and count once; only the kernel rows and region_two's rows
(the loop: no runtime start-up inside) must be exact, the rest is shown.
With `vendor` (tests/ompt/omp-vendor.c): the kernels are the stand-in
vendor's "vendor_kernel" and every row must be exact.
"""
import re
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "integration")]  # the bundle holds gpdq.py beside it
from gpdq import Profile  # noqa: E402

METRICS = ("GKER:COUNT", "GXCOPY:H2D", "GXCOPY:D2H", "GXCOPY:COUNT", "GMEM:COUNT")


def rows(p):
    """{(metric, function, label, placeholder, kernel): value}"""
    out = {}
    for m in METRICS:
        for cid, v in p.values(m).items():
            if not v:
                continue
            chain = []  # leaf first: (cid, label)
            c = cid
            while c and c in p.ctx:
                chain.append(c)
                c = p.ctx[c][0]
            kernel = placeholder = label = fn = None
            for i, c in enumerate(chain):
                lab = p.ctx[c][2]
                if lab.startswith("<omp target"):
                    label = lab
                    par = chain[i + 1] if i + 1 < len(chain) else None
                    fns = p.funcs.get(par, [])
                    fn = fns[-1] if fns else p.ctx.get(par, (0, 0, "?"))[2]
                    below = chain[:i]
                    placeholder = p.ctx[below[-1]][2] if below else None
                    kernel = p.ctx[below[0]][2] if len(below) > 1 else None
                    break
            key = (m, fn or "-", label or "-", placeholder or "-", kernel or "-")
            out[key] = out.get(key, 0) + v
    return out


def expected(loop, line_one, line_two):
    k1 = "omp target region @ omp-known.c:%s" % line_one
    k2 = "omp target region @ omp-known.c:%s" % line_two
    t, ent, upd, ext = "<omp target>", "<omp target enter data>", "<omp target update>", "<omp target exit data>"
    e = {
        ("GKER:COUNT", "region_one", t, "<gpu kernel>", k1): 1,
        ("GKER:COUNT", "region_two", t, "<gpu kernel>", k2): loop,
        ("GXCOPY:H2D", "region_one", t, "<gpu copy>", "-"): 8000,
        ("GXCOPY:D2H", "region_one", t, "<gpu copy>", "-"): 8000,
        ("GXCOPY:COUNT", "region_one", t, "<gpu copy>", "-"): 2,
        ("GXCOPY:H2D", "region_two", t, "<gpu copy>", "-"): 4096 * loop,
        ("GXCOPY:D2H", "region_two", t, "<gpu copy>", "-"): 4096 * loop,
        ("GXCOPY:COUNT", "region_two", t, "<gpu copy>", "-"): 2 * loop,
        ("GMEM:COUNT", "region_one", t, "<gpu alloc>", "-"): 2,
        ("GMEM:COUNT", "region_one", t, "<gpu free>", "-"): 2,
        ("GMEM:COUNT", "region_two", t, "<gpu alloc>", "-"): loop,
        ("GMEM:COUNT", "region_two", t, "<gpu free>", "-"): loop,
        ("GMEM:COUNT", "refresh", ent, "<gpu alloc>", "-"): 1,
        ("GXCOPY:H2D", "refresh", ent, "<gpu copy>", "-"): 4096,
        ("GXCOPY:COUNT", "refresh", ent, "<gpu copy>", "-"): 1,
        ("GXCOPY:H2D", "refresh", upd, "<gpu copy>", "-"): 4096,
        ("GXCOPY:D2H", "refresh", upd, "<gpu copy>", "-"): 4096,
        ("GXCOPY:COUNT", "refresh", upd, "<gpu copy>", "-"): 2,
        ("GMEM:COUNT", "refresh", ext, "<gpu free>", "-"): 1,
    }
    return {k: v for k, v in e.items() if v}


def vendor_names(got, l1, l2):
    """CUPTI's (or the stand-in's) kernel names -> the names omp-known's OMPT rows carry."""
    out = {}
    for k, v in got.items():
        if k[4] == "vendor_kernel" and k[1] in ("region_one", "region_two"):
            k = k[:4] + ("omp target region @ omp-known.c:%s" % (l1 if k[1] == "region_one" else l2),)
        m = re.match(r"__omp_offloading_\w+_(region_one|region_two)_l(\d+)$", k[4])
        if m and m.group(2) == (l1 if m.group(1) == "region_one" else l2):
            k = k[:4] + ("omp target region @ omp-known.c:%s" % m.group(2),)
        out[k] = out.get(k, 0) + v
    return out


def main():
    db, loop, l1, l2 = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    mode = sys.argv[5] if len(sys.argv) > 5 else ""
    cuda = mode == "cuda"
    got = rows(Profile(db))
    if mode in ("cuda", "vendor"):
        got = vendor_names(got, l1, l2)
    want = expected(loop, l1, l2)
    bad = 0
    for k in sorted(set(got) | set(want)):
        g, w = got.get(k, 0), want.get(k, 0)
        judged = not cuda or k[0] == "GKER:COUNT" or k[1] == "region_two"
        verdict = ("ok" if g == w else "BAD") if judged else "info"
        print("%-4s %-13s %-11s %-24s %-13s %-40s %8g (want %g)" % (verdict, *k, g, w))
        bad += judged and g != w
    if bad:
        print("FAIL: %d rows differ" % bad)
        sys.exit(1)
    print("all %d rows exact" % len(want))


if __name__ == "__main__":
    main()
