#!/usr/bin/env python3
"""check.py - assertions on a profile with CPU samples (tests/cpusamp/cpusamp.sh).

  check.py DB ratio FA FB R CPU_NS HZ MAIN_CPU_NS
      CPUTIME under FA : under FB is R : 1 (R: the ratio of the two burners'
      own CPU times, cpusamp-app's burn_cpu_ns) within 4 standard errors of the
      sampled fraction (binomial: sd = sqrt(p (1 - p) / n), p = R / (R + 1),
      n = signals under FA or FB: the kernel checks CPU timers at its tick,
      so one signal may stand for several expirations of one stretch of
      time, and the record says how many), the main thread's CPU time that
      no sample carries counted to either side, at least 90 % of CPUTIME lies under FA or
      FB, the total CPUTIME is at least 90 % of the main thread's CPU time
      from main() on (MAIN_CPU_NS: the part the timer surely saw; startup
      before the constructor, a sanitizer's runtime and the shim's own
      thread are not sampled) and at most the process's CPU time (getrusage,
      CPU_NS) plus two periods, and there is one
      trace row per attributed sample (cpu_sample_stat).
  check.py DB threads FA TID_A FB TID_B HZ
      every sample under FA is thread TID_A's and every one under FB is
      TID_B's; each thread has at least 70 % of its 200 ms as CPUTIME.
  check.py DB chrome JSON FA TID_A FB TID_B
      the Chrome trace `gpuprof trace` wrote has one "cpu sample" event per
      trace row on the row's thread, and each thread's call paths go
      through its own burner.
  check.py DB off
      no CPUTIME value and no trace row.
  check.py DB workers APP_OUT
      threads that never called the shim (cpusamp-app workers, lines "wK
      tid=T cpu_ns=C sampled_ns=S"; tests/python/cpu-py.py, lines "fn=NAME
      tid=T cpu_ns=C" naming Python functions): every sample under burn_wK
      (NAME) is thread T's, and the CPUTIME under it lies in [0.6 C - 10
      ms, 1.2 C + 10 ms] (C = the burn's own thread CPU time; Linux checks
      CPU-time timers at its tick, so each end of a burn may lose or gain
      up to a tick's worth); for burns that one thread runs back to back,
      their sum lies in the band of their summed C (one signal may carry
      tens of ms across the boundary between them on a loaded VM).  Where
      the line says S (the CPU time the samples the shim pushed on that
      thread carry, read as the burn ended), the CPUTIME under burn_wK is
      S within SAMPLED_SLACK (nothing pushed is lost on the way; the slack
      covers a signal at the thread's start or just after the read).  A
      Python frame's context is labelled "NAME (file:line)".
  check.py TREE_JSON live APP_OUT
      the same band for the live daemon's tree (`gpuprof tree --pid --json`):
      the exclusive CPUTIME of the nodes at or below each burn_wK.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from gpdq import Profile, fail  # noqa: E402


# A worker's CPUTIME against what the shim pushed on its thread: a signal
# may land between the thread's start and its burner, or right after the
# burn ended and before the count was read (1000 Hz: a few periods).
SAMPLED_SLACK = 5e6

def workers_of(path):
    """{burn_wK: (tid, cpu_ns, sampled_ns or None)} from cpusamp-app
    workers' output (sampled_ns: the line's "sampled_ns=S" where given)"""
    w = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and f[0][:1] == "w" and f[1].startswith("tid=") and f[2].startswith("cpu_ns="):
            s = int(f[3][11:]) if len(f) == 4 and f[3].startswith("sampled_ns=") else -1
            w["burn_" + f[0]] = (int(f[1][4:]), int(f[2][7:]), s if s >= 0 else None)
        elif len(f) == 3 and f[0].startswith("fn=") and f[1].startswith("tid=") and f[2].startswith("cpu_ns="):
            w[f[0][3:]] = (int(f[1][4:]), int(f[2][7:]), None)
    if len(w) != 3:
        fail("%s: not three workers' lines (%s)" % (path, w))
    return w


def as_pushed(what, got, s):
    """got (ns under a burner) equals s, what the shim pushed on its
    thread, within the slack (nothing to check when s is None)"""
    if s is None:
        return
    print("%s: CPUTIME %.1f ms, the shim pushed %.1f ms on its thread" % (what, got / 1e6, s / 1e6))
    if abs(got - s) > SAMPLED_SLACK:
        fail("%s: CPUTIME %.1f ms, but the shim pushed %.1f ms on that thread" % (what, got / 1e6, s / 1e6))


def in_band(what, got, cpu):
    lo, hi = 0.6 * cpu - 10e6, 1.2 * cpu + 10e6
    print("%s: CPUTIME %.1f ms, the thread's CPU time %.1f ms (band %.1f .. %.1f)"
          % (what, got / 1e6, cpu / 1e6, lo / 1e6, hi / 1e6))
    if not lo <= got <= hi:
        fail("%s: CPUTIME %.1f ms outside [%.1f, %.1f] ms" % (what, got / 1e6, lo / 1e6, hi / 1e6))


def live(tree_json, app_out):
    import json
    w = workers_of(app_out)
    doc = json.load(open(tree_json))
    got = dict.fromkeys(w, 0.0)

    def walk(n, under):
        fns = [fr.get("function") or "" for fr in n.get("frames", [])] + [n.get("label") or ""]
        for f in fns:
            b = f.split("(")[0]
            if b in got:
                under = b
        if under:
            got[under] += float(n.get("metrics", {}).get("CPUTIME", {}).get("excl", 0) or 0)
        for c in n.get("children", []):
            walk(c, under)
    walk(doc["tree"], None)
    unit = doc["tree"].get("metrics", {}).get("CPUTIME", {}).get("unit", "ns")
    scale = 1e9 if unit in ("s", "seconds") else 1.0
    for f, (tid, cpu, pushed) in sorted(w.items()):
        as_pushed("live %s (thread %d)" % (f, tid), got[f] * scale, pushed)
        in_band("live %s (thread %d)" % (f, tid), got[f] * scale, cpu)


def main():
    db, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "live":
        return live(db, args[0])
    p = Profile(db)
    cpu = p.values("CPUTIME")
    rows = p.db.execute("SELECT tid, ts_ns, node FROM trace_cpu_sample").fetchall()
    if mode == "chrome":
        import collections
        import json
        doc = json.load(open(args[0]))
        ev = doc["traceEvents"] if isinstance(doc, dict) else doc
        samples = [e for e in ev if e.get("name") == "cpu sample"]
        got = collections.Counter(e["tid"] for e in samples)
        want = collections.Counter(t for t, ts, c in rows)
        print("chrome: cpu sample events per thread %s, trace rows %s" % (dict(got), dict(want)))
        if got != want:
            fail("the exported CPU sample tracks do not match the trace rows")
        frames = doc.get("stackFrames", {})

        def path(e):  # the sample's "sf" through stackFrames, outermost first
            p, i = [], e.get("sf")
            while i is not None:
                p.append(frames[str(i)]["name"])
                i = frames[str(i)].get("parent")
            return " > ".join(reversed(p))
        for f, t in ((args[1], int(args[2])), (args[3], int(args[4]))):
            paths = [path(e) for e in samples if e["tid"] == t]
            if not any(f + " (" in p for p in paths):
                fail("no exported sample of thread %d goes through %s" % (t, f))
        return
    if mode == "off":
        print("off: %d CPUTIME values, %d trace rows" % (len(cpu), len(rows)))
        if cpu or rows:
            fail("CPU samples recorded without GPUPROF_CPU_SAMPLING")
        return
    total = sum(cpu.values())
    under = {}

    def under_of(c):
        if c not in under:
            fns = p.path_functions(c)
            under[c] = next((f for f in args if any(n == f or n.startswith(f + " (") for n in fns)), None)
        return under[c]

    stat = p.db.execute("SELECT SUM(samples), SUM(cputime_ns), SUM(trace_rows), SUM(trace_dropped),"
                        " SUM(unknown) FROM cpu_sample_stat").fetchone()
    print("CPUTIME total %.1f ms in %d contexts, %d trace rows, stat %s" % (total / 1e6, len(cpu), len(rows), stat))
    if not stat or stat[0] is None:
        fail("no cpu_sample_stat row")
    if stat[2] != len(rows) or stat[0] != len(rows) or stat[3] != 0:
        fail("trace rows %d vs samples %s / kept %s / dropped %s" % (len(rows), stat[0], stat[2], stat[3]))
    if abs(stat[1] - total) > 1:
        fail("cpu_sample_stat says %s ns, CPUTIME metric %g" % (stat[1], total))
    if mode == "ratio":
        fa, fb, r, cpu_ns, hz = args[0], args[1], float(args[2]), float(args[3]), float(args[4])
        wa = sum(v for c, v in cpu.items() if under_of(c) == fa)
        wb = sum(v for c, v in cpu.items() if under_of(c) == fb)
        na = sum(1 for t, ts, c in rows if under_of(c) == fa)
        nb = sum(1 for t, ts, c in rows if under_of(c) == fb)
        main_ns = float(args[5])
        if na + nb == 0 or wb == 0:
            fail("no samples under %s / %s (%d, %d)" % (fa, fb, na, nb))
        # The number of draws is the number of signals, not of expirations:
        # the kernel checks CPU timers at its tick, and under load or a
        # sanitizer one signal may carry tens of expirations, all from one
        # stretch of the thread's time (one draw, weighted).  And the main
        # thread's CPU that no sample carries (the expirations still pending
        # when sampling stopped at exit, at most about one signal's worth)
        # may belong to either function: the expected fraction must lie
        # within 4 sd of the range that the unattributed time allows.
        n = na + nb
        pexp = r / (r + 1)
        frac = wa / (wa + wb)
        sd = math.sqrt(pexp * (1 - pexp) / n)
        m = max(0.0, main_ns - (wa + wb))
        lo, hi = wa / (wa + wb + m), (wa + m) / (wa + wb + m)
        print("%s %.1f ms (%d samples), %s %.1f ms (%d samples), %.0f expirations, %.1f ms unattributed: "
              "fraction %.3f (%.3f-%.3f), expected %.3f +- %.3f (4 sd of %d signals)"
              % (fa, wa / 1e6, na, fb, wb / 1e6, nb, (wa + wb) * hz / 1e9, m / 1e6, frac, lo, hi, pexp, 4 * sd, n))
        if pexp < lo - 4 * sd or pexp > hi + 4 * sd:
            fail("CPUTIME fraction under %s is %.3f (%.3f-%.3f), expected %.3f +- %.3f" % (fa, frac, lo, hi, pexp, 4 * sd))
        if (wa + wb) < 0.9 * total:
            fail("only %.1f%% of CPUTIME under %s or %s" % (100 * (wa + wb) / total, fa, fb))
        period = 1e9 / hz
        print("CPUTIME %.1f ms vs process CPU %.1f ms (getrusage), main thread from main() %.1f ms"
              % (total / 1e6, cpu_ns / 1e6, main_ns / 1e6))
        if not 0.9 * main_ns <= total <= cpu_ns + 2 * period:
            fail("CPUTIME %.1f ms not within [90%% of the main thread's %.1f ms, the process's %.1f ms "
                 "+ 2 periods]" % (total / 1e6, main_ns / 1e6, cpu_ns / 1e6))
    elif mode == "threads":
        fa, ta, fb, tb = args[0], int(args[1]), args[2], int(args[3])
        for f, t in ((fa, ta), (fb, tb)):
            mine = [(tid, c) for tid, ts, c in rows if under_of(c) == f]
            w = sum(v for c, v in cpu.items() if under_of(c) == f)
            tids = sorted(set(tid for tid, c in mine))
            print("%s: %d samples, %.1f ms, threads %s (want %d)" % (f, len(mine), w / 1e6, tids, t))
            if tids != [t]:
                fail("samples under %s come from threads %s, expected only %d" % (f, tids, t))
            if w < 0.7 * 200e6:
                fail("%s has %.1f ms of CPUTIME, expected about 200" % (f, w / 1e6))
    elif mode == "workers":
        w = workers_of(args[0])
        args = sorted(w)  # the burners, for under_of
        per_tid = {}
        for f, (tid, tcpu, pushed) in sorted(w.items()):
            tids = sorted(set(t for t, ts, c in rows if under_of(c) == f))
            n = sum(1 for t, ts, c in rows if under_of(c) == f)
            print("%s: %d samples from threads %s (want only %d)" % (f, n, tids, tid))
            if tids != [tid]:
                fail("samples under %s come from threads %s, expected only %d" % (f, tids, tid))
            per_tid.setdefault(tid, []).append((f, sum(v for c, v in cpu.items() if under_of(c) == f), tcpu))
            as_pushed("%s (thread %d)" % (f, tid), per_tid[tid][-1][1], pushed)
        # Burners that one thread runs back to back (cpu-py.py: py_burn_a
        # then py_burn_b) share a boundary: the signal that carries the
        # expirations across it falls on one side, and on a loaded VM one
        # signal can carry tens of ms (seen: 82 ms, the thread's clock
        # charged with a stretch of stolen time).  Their sum is checked
        # against the band; each one only has samples from its own thread.
        for tid, bs in sorted(per_tid.items()):
            if len(bs) == 1:
                in_band("%s (thread %d)" % (bs[0][0], tid), bs[0][1], bs[0][2])
            else:
                for f, got, tcpu in bs:
                    print("%s (thread %d): CPUTIME %.1f ms, its own CPU time %.1f ms" % (f, tid, got / 1e6, tcpu / 1e6))
                in_band("%s (thread %d)" % ("+".join(f for f, g, c in bs), tid), sum(g for f, g, c in bs),
                        sum(c for f, g, c in bs))
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
