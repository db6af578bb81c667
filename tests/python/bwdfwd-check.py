#!/usr/bin/env python3
"""bwdfwd-check.py - where the kernels of bwdfwd.py landed (exact counts).

Usage: bwdfwd-check.py PROFILE SCRIPT GRAPH_PY N linked|caller
Every GKER:COUNT is one kernel launch.  Each context with kernels is
either a forward launch (Python frames, no `<backward>`) or a backward one
(Python frames, then `<backward>`, then native frames with
Engine::thread_main and no Python frame).  Counted by (which, the Python
frames of SCRIPT and GRAPH_PY without `<module>`):
  linked  forward: attn_mm N, attn_softmax 2N, mlp_mm N, mlp_nograd N, opt N,
          side N (another thread, whose sequence numbers overlap the main
          thread's in the first step);
          backward under its forward line: attn_mm 2N, attn_softmax 3N,
          mlp_mm 4N, side 2N; under the caller (_engine_run_backward): 2N
          (the view's node, no forward launch; the leaf's, no forward
          operation)
  caller  the same forward launches; all 13N backward kernels under the
          caller (the link is off: today's placement)
"""
import sys

from pyq import fail, leaves_gpdb, lines_of


def main():
    prof, script, graph_py, n, mode = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    ts, tg = lines_of(script), lines_of(graph_py)

    def fr(fn, tag):
        return "%s (%s:%d)" % (fn, script, ts[tag])

    main_ = fr("main", "main_step")
    fwd = (main_, fr("step", "step_fwd"))
    attn, mlp_ = fwd + (fr("forward", "fwd_attn"),), fwd + (fr("forward", "fwd_mlp"),)
    paths = {
        "attn_mm": attn + (fr("attention", "attn_mm"),),
        "attn_softmax": attn + (fr("attention", "attn_softmax"),),
        "mlp_mm": mlp_ + (fr("mlp", "mlp_mm"),),
        "mlp_nograd": mlp_ + (fr("mlp", "mlp_nograd"),),
        "opt": (main_, fr("step", "opt")),
        "side": (fr("side", "side_op"),),
        "caller": (main_, fr("step", "step_bwd"), "_engine_run_backward (%s:%d)" % (graph_py, tg["engine"])),
    }
    name_of = {v: k for k, v in paths.items()}
    want = {("fwd", "attn_mm"): n, ("fwd", "attn_softmax"): 2 * n, ("fwd", "mlp_mm"): n,
            ("fwd", "mlp_nograd"): n, ("fwd", "opt"): n, ("fwd", "side"): n}
    if mode == "linked":
        want.update({("bwd", "attn_mm"): 2 * n, ("bwd", "attn_softmax"): 3 * n, ("bwd", "mlp_mm"): 4 * n,
                     ("bwd", "side"): 2 * n, ("bwd", "caller"): 2 * n})
    else:
        want[("bwd", "caller")] = 13 * n

    got = {}
    for chain, v in leaves_gpdb(prof, "GKER:COUNT"):
        labels = [lab for k, lab in chain]
        which = "fwd"
        if "<backward>" in labels:
            i = labels.index("<backward>")
            below = chain[i + 1:]
            if any(k == 5 for k, lab in below):
                fail("a Python frame below <backward>: %s" % labels)
            if not any(k == 1 and "thread_main" in lab for k, lab in below):
                fail("no native Engine::thread_main frame below <backward>: %s" % labels)
            chain = chain[:i]
            which = "bwd"
        py = [lab for k, lab in chain if k == 5 and ("(%s:" % script in lab or "(%s:" % graph_py in lab)]
        if py and py[0].startswith("<module> ("):
            py = py[1:]
        key = (which, name_of.get(tuple(py)))
        if key[1] is None:
            fail("kernels (%g) under an unexpected path: %s" % (v, labels))
        got[key] = got.get(key, 0) + v
    for k in sorted(set(want) | set(got)):
        print("%-4s %-13s %4g kernels (want %d)" % (k[0], k[1], got.get(k, 0), want.get(k, 0)))
    if got != want:
        fail("counts %s, want %s" % (got, want))
    print("ok")


main()
