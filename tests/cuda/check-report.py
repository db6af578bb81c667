#!/usr/bin/env python3
"""check-report.py - checks `gpuprof report --json` of a GPU run.

  check-report.py known REPORT.json   cuda-known.cu: exact launch counts
      (scale 5, add 3), exact bytes (H2D 8388608, D2H 4194304, D2D 2097152,
      memset 4194304), every kernel's time under the CPU function that
      launched it (scale_on_gpu / add_on_gpu) and nowhere else.
  check-report.py inline REPORT.json   cuda-inline.cu (nvcc -O2 -g): k_alpha
      launched 4 times under main > stage_one, k_beta 3 times under
      main > stage_two with the inlined chain chain_a > chain_b > chain_c
      in stage_two's frame, every physical frame named by its own function
      (the outermost of its inline chain), the allocations under main, and
      no vendor frame (libcuda, libcupti, libcudart) anywhere on a path.
  check-report.py torch REPORT.json   PyTorch: GKER and GXCOPY non-zero and
      the kernels' time under libtorch frames and under interpreter
      (libpython / python3) frames.
Prints what it measured; exits 1 on any failed check.
"""
import json
import sys


def walk(node, anc, out):
    out.append((node, anc))
    fr = [f.get("function") or "" for f in node.get("frames", [])]
    me = {"label": node.get("label") or "", "module": node.get("module") or "", "functions": fr}
    for c in node.get("children", []):
        walk(c, anc + [me], out)


def m(node, name, which="excl"):
    v = node.get("metrics", {}).get(name)
    return (v or {}).get(which) or 0


def under(anc, pred):
    return any(pred(a) for a in anc)


def fn_is(name):
    return lambda a: name in a["label"] or any(name in f for f in a["functions"])


def mod_has(sub):
    return lambda a: sub in a["module"]


def main():
    mode, path = sys.argv[1], sys.argv[2]
    doc = json.load(open(path))
    nodes = []
    walk(doc["tree"], [], nodes)
    fails = []
    for p in doc.get("processes", []):
        print("process", p.get("pid"), p.get("exe"), "records", p.get("records"), "drops", p.get("drops"),
              "backends", p.get("backends"))
    kern = [(n, a) for n, a in nodes if n.get("kind") == "kernel"]
    tot = lambda name: sum(m(n, name) for n, _ in nodes)
    print("kernel nodes", len(kern), "GKER ns", tot("GKER"), "GXCOPY ns", tot("GXCOPY"))
    if mode == "inline":
        vendor = ("libcuda.so", "libcupti.so", "libcudart.so")

        def phys(a):  # the physical function of a frame node: outermost of its chain
            return (a["functions"] or [a["label"]])[0].split("(")[0]

        def chain(anc):
            return [phys(a) for a in anc if a["functions"] or a["label"]]

        for kname, stage, want in (("k_alpha", "stage_one", 4), ("k_beta", "stage_two", 3)):
            ks = [(n, a) for n, a in kern if kname in (n.get("raw_name") or n.get("label") or "")]
            count = sum(m(n, "GKER:COUNT") for n, _ in ks)
            print(f"{kname}: launches {count:g} (want {want}), nodes {len(ks)}")
            if count != want: fails.append(f"{kname} launches {count} != {want}")
            for n, a in ks:
                c = chain(a)
                print(f"  path: {' > '.join(c)}")
                if "main" not in c or stage not in c or c.index("main") > c.index(stage):
                    fails.append(f"{kname} not under main > {stage}: {c}")
                bad = [x["module"] for x in a if any(v in x["module"] for v in vendor)]
                if bad: fails.append(f"{kname} path has vendor frames {bad}")
                if kname == "k_beta":
                    st = [x for x in a if phys(x) == stage]
                    fr = st[0]["functions"] if st else []
                    print(f"  {stage} frame functions (outermost first): {fr}")
                    want_chain = ["chain_a", "chain_b", "chain_c"]
                    got = [f.split("(")[0] for f in fr[1:]]
                    if [g for g in got if g in want_chain] != want_chain:
                        fails.append(f"inlined chain under {stage} is {got}, want {want_chain}")
        allocs = [(n, a) for n, a in nodes if n.get("kind") == "placeholder" and "alloc" in (n.get("label") or "")]
        for n, a in allocs:
            c = chain(a)
            print(f"{n.get('label')}: path {' > '.join(c)}")
            bad = [x["module"] for x in a if any(v in x["module"] for v in vendor)]
            if bad: fails.append(f"allocation path has vendor frames {bad}")
            if not c or c[-1] != "main": fails.append(f"allocation not directly under main: {c}")
        if not allocs: fails.append("no <gpu alloc> placeholder")
    elif mode == "known":
        for kname, fname, other, want in (("scale", "scale_on_gpu", "add_on_gpu", 5),
                                          ("add", "add_on_gpu", "scale_on_gpu", 3)):
            ks = [(n, a) for n, a in kern if kname in (n.get("raw_name") or n.get("label") or "")]
            count = sum(m(n, "GKER:COUNT") for n, _ in ks)
            t_all = sum(m(n, "GKER") for n, _ in ks)
            t_in = sum(m(n, "GKER") for n, a in ks if under(a, fn_is(fname)) and not under(a, fn_is(other)))
            occ = [m(n, "GKER:OCC_THR") for n, _ in ks]
            print(f"{kname}: launches {count:g} (want {want}), GKER {t_all:g} ns, under {fname} {t_in:g} ns,"
                  f" nodes {len(ks)}, OCC_THR {occ}, THR_REG {[m(n, 'GKER:THR_REG') for n, _ in ks]}")
            if count != want: fails.append(f"{kname} launches {count} != {want}")
            if not t_all or t_in != t_all: fails.append(f"{kname} time not only under {fname}")
        for met, want in (("GXCOPY:H2D", 8388608), ("GXCOPY:D2H", 4194304), ("GXCOPY:D2D", 2097152),
                          ("GMSET:DEV", 4194304)):
            got = tot(met)
            print(f"{met}: {got:g} bytes (want {want})")
            if got != want: fails.append(f"{met} {got} != {want}")
        print("GSYNC ns", tot("GSYNC"), "GSYNC:COUNT", tot("GSYNC:COUNT"), "GMEM:COUNT", tot("GMEM:COUNT"))
    else:
        gker, gx = tot("GKER"), tot("GXCOPY")
        t_torch = sum(m(n, "GKER") for n, a in kern if under(a, mod_has("libtorch")))
        is_py = lambda a: a["module"].rsplit("/", 1)[-1].startswith(("python", "libpython"))
        t_py = sum(m(n, "GKER") for n, a in kern if under(a, is_py))
        # backward kernels are launched by libtorch's autograd engine thread,
        # which has no interpreter frames: the right attribution
        t_ag = sum(m(n, "GKER") for n, a in kern if not under(a, is_py) and
                   under(a, fn_is("torch::autograd::Engine::thread_main")))
        print(f"GKER under libtorch frames {t_torch / max(gker, 1):.1%}; under interpreter frames"
              f" {t_py / max(gker, 1):.1%}; under the autograd engine thread {t_ag / max(gker, 1):.1%}")
        if not gker: fails.append("GKER is 0")
        if not gx: fails.append("GXCOPY is 0")
        if t_torch < 0.9 * gker: fails.append("less than 90% of GKER under libtorch")
        if not t_py: fails.append("no GKER under interpreter frames")
        if t_py + t_ag < 0.9 * gker: fails.append("less than 90% of GKER under interpreter or autograd frames")
        pyk = [(n, a) for n, a in kern if under(a, is_py)]
        if pyk:
            n, a = max(pyk, key=lambda x: m(x[0], "GKER"))
            print("heaviest kernel under the interpreter:", n.get("label")[:100], m(n, "GKER"), "ns; path:")
            for x in a:
                if x["functions"] or x["label"]:
                    print("   ", (x["functions"] or [x["label"]])[-1][:100], "|", x["module"].rsplit("/", 1)[-1])
        best = max(kern, key=lambda x: m(x[0], "GKER"), default=None)
        if best:
            n, a = best
            print("heaviest kernel:", n.get("label"), m(n, "GKER"), "ns; path (outermost first):")
            for x in a[-25:]:
                print("   ", (x["functions"] or [x["label"]])[-1][:100], "|", x["module"].rsplit("/", 1)[-1])
    print("FAIL: " + "; ".join(fails) if fails else "PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
