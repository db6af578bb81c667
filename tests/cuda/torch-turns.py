#!/usr/bin/env python3
"""torch-turns.py - the cost of a gpuprof mode on a steady PyTorch loop,
measured so that 1 % can be told apart from noise.

Separate processes run one after another (tests/cuda/gpu-torchcost.sh's
rounds) differ by +-6-12 % even when bare (H100, 2026-11-24: bare 4.78 to
5.35 s for the same 2000 steps), more than the cost to resolve: the
machine's speed for this launch-bound loop changes by +-15-30 % within
0.1-1 s (docs/PERFORMANCE-CUDA.md).  Here every configuration's processes
start once, warm up (CUDA init, cudnn set-up and the first steps are
start-up, reported apart), and then take TURNS on the one GPU: in each
round every process, in a shuffled order, runs STEPS training steps
synchronized at both ends (torch_train.py, TORCH_TURNS=1) while the
others wait on their stdin.  A configuration is then compared with the
bare processes of the same round, tens of ms apart (20-step turns)
instead of a process apart.  Several processes per configuration
(--procs) show whether a process keeps an effect of its own (memory
layout, core); the interval below resamples them too.

Cost = per-step mean time of a turn (turn wall s / STEPS: what a loop
pays, bursts included), ratio to the mean of the same round's bare turns.
Printed per configuration: the median of the per-round ratios with a
95 % interval from the order statistics of the rounds (distribution-free
for the median, Conover, Practical Nonparametric Statistics, 3rd ed.,
section 3.2: ranks k and n+1-k of the sorted ratios with the
binomial(n, 1/2) tail below 2.5 %), and a 95 % bootstrap interval that
resamples the rounds and, inside each configuration, its processes (a
hierarchical bootstrap, so that an effect of one process is not taken
for the mode's); the same for the median per-step time (robust to
bursts, blind to them: a cost spread over every step only).  "bare
(half/half)" compares half of the bare processes with the other half:
the null result, 1 within noise.  Also printed: a 20 %-trimmed mean of
the per-round log ratios with a bootstrap interval over the rounds
(the median of ratios of sums of skewed step times is itself skewed).

Duty-cycled processes: their windows follow the wall clock, also while a
process waits for its turn, and the finalize that each window arms is
paid at the process's next launch, inside a turn: with K processes a
turn second holds K times the finalizes of a second of a lone run, while
the re-subscriptions fall mostly in the waits.  Their turn ratios are
therefore no measure (an upper bound for the finalize's share); --long N
--long-rounds R measure them instead: R rounds of one N-step run per
process, each step timed, and per configuration the share of the run's
time above its running median (+-50 steps) minus bare's: the cost of
bursts (a window's switching, traced steps, finalize), without the
machine's slower speed changes and without a cost spread evenly over all
steps (which the turns measure).

Node configurations: "node" runs a worker attached as the job prolog
attaches (LD_PRELOAD of bin/../lib/libgpuprof.so, GPUPROF_SOCKET of a
gpuprofd this script starts with its built-in policy, no GPUPROF_*
variable), "node@NAME" the same under a daemon started with
--node-conf NAME=FILE (a gpuprofd.conf, e.g. another [collect] budget);
each daemon's `gpuprof ps --json` is printed at the end.

Usage: torch-turns.py [options] CFG...   CFG = bare | node[@NAME] | full | detached |
duty:W/P[,keep] (GPUPROF_CUDA_TRACE of a gpuprof record) | mt (the
minimal CUPTI tracer, bench/cuda/min-tracer.c), each optionally followed
by +NAME=VALUE... (more environment: full+GPUPROF_SHIM_STATS=floor,
mt+MIN_TRACER_DOMAINS=driver), several may repeat.  Options: --bundle DIR (torch_train.py, bin/gpuprof: default this
file's folder), --steps N per turn (400), --warmup N (50), --procs N per
configuration (2), --rounds N (1000, cut by --budget), --budget S of turns
(300), --seed N, --out DIR (turns.tsv, per-process stderr), --worker CMD
(instead of torch_train.py: a program that speaks its TORCH_TURNS
protocol; tests), --long N and --long-rounds R (above; longs.tsv),
--half H (the running median's half-width, 50 steps), --parallel-start
(start every worker at once: faster, start-up times then under
contention), --analyze TSV (only the tables, from an earlier run's
turns.tsv and the longs.tsv beside it).
"""
import argparse
import math
import os
import random
import re
import select
import shlex
import statistics
import subprocess
import sys
import time


class Proc:
    """One worker process: a configuration's i-th, its pipes and turns."""

    def __init__(self, cfg, idx, argv, env, errpath):
        self.cfg, self.idx, self.name = cfg, idx, "%s#%d" % (cfg, idx)
        self.buf = b""
        self.err = open(errpath, "wb")
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err)
        self.startup = ""

    def line(self, deadline):
        """The next line of its stdout (str) before the deadline (monotonic
        s), or None (timed out or ended)."""
        fd = self.p.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        ln, self.buf = self.buf.split(b"\n", 1)
        return ln.decode(errors="replace")

    def send(self, s):
        self.p.stdin.write(s.encode())
        self.p.stdin.flush()


def worker_argv(cfg, i, a, outdir):
    """(argv, env) of configuration cfg's i-th worker."""
    env = dict(os.environ, TORCH_TURNS="1", PYTHONUNBUFFERED="1", TORCH_T0="%.6f" % time.time())
    loop = shlex.split(a.worker) if a.worker else [sys.executable, os.path.join(a.bundle, "torch_train.py"),
                                                   str(a.steps), str(a.warmup)]
    cfg, *extra = cfg.split("+")
    for kv in extra:  # CFG+NAME=VALUE...: more environment
        k, _, v = kv.partition("=")
        env[k] = v
    if cfg == "bare":
        return loop, env
    if cfg == "node" or cfg.startswith("node@"):
        # attached as the job prolog attaches (systemd/attach.sh): the
        # shim preloaded, the node daemon's socket, no GPUPROF_* knob: the
        # daemon's [collect] policy decides what is collected
        d = a.nodes[cfg]
        env["LD_PRELOAD"] = os.path.join(a.bundle, "lib", "libgpuprof.so")
        env["GPUPROF_SOCKET"] = d["sock"]
        return loop, env
    if cfg == "mt":  # the minimal CUPTI tracer (bench/cuda/min-tracer.c)
        env["CUDA_INJECTION64_PATH"] = os.path.join(a.bundle, "lib", "libgpd-min-tracer.so")
        return loop, env
    if cfg != "full":
        env["GPUPROF_CUDA_TRACE"] = cfg
    env["GPUPROF_CUPTI_SELFTEST"] = "1"
    gp = os.path.join(a.bundle, "bin", "gpuprof")
    if not os.access(gp, os.X_OK):
        gp = "gpuprof"
    db = os.path.join(outdir, "turns-%s-%d.gpdb" % (re.sub(r"[^A-Za-z0-9_.-]", "_", "+".join([cfg] + extra)), i))
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.unlink(f)
    return [gp, "record", "-o", db, "--"] + loop, env


def start_nodes(a, outdir):
    """One gpuprofd per distinct node configuration (node: the built-in
    policy; node@NAME: --node-conf NAME=FILE), each with its own socket,
    store and state folder under outdir; a.nodes maps cfg -> its daemon."""
    confs = dict(kv.split("=", 1) for kv in a.node_conf)
    a.nodes = {}
    gd = os.path.join(a.bundle, "bin", "gpuprofd")
    for cfg in dict.fromkeys(c.split("+")[0] for c in a.cfgs):
        if cfg != "node" and not cfg.startswith("node@"):
            continue
        name = cfg.partition("@")[2] or "default"
        d = os.path.join(outdir, "node-" + name)
        os.makedirs(os.path.join(d, "state"), exist_ok=True)
        argv = [gd, "--foreground", "--socket", os.path.join(d, "s"), "--db", os.path.join(d, "node.gpdb"),
                "--state-dir", os.path.join(d, "state")]
        if name != "default":
            argv[1:1] = ["--config", confs[name]]
        log = open(os.path.join(d, "log"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=log, env=dict(os.environ, GPUPROF_LOG="info"))
        a.nodes[cfg] = {"sock": os.path.join(d, "s"), "proc": p, "log": log.name, "name": name}
        end = time.monotonic() + 60
        while not os.path.exists(os.path.join(d, "s")):
            if time.monotonic() > end or p.poll() is not None:
                sys.exit("torch-turns: gpuprofd %s did not start (%s)" % (name, log.name))
            time.sleep(0.05)


def node_report(a, procs):
    """Each node daemon's own view of its processes (gpuprof ps: mode and
    estimated overhead; gpuprof policy --pid N --json of each worker),
    then TERM."""
    gp = os.path.join(a.bundle, "bin", "gpuprof")
    for cfg, d in getattr(a, "nodes", {}).items():
        env = dict(os.environ, GPUPROF_SOCKET=d["sock"])
        cmds = [[gp, "ps"]] + [[gp, "policy", "--pid", str(p.p.pid), "--json"] for p in procs if p.cfg == cfg]
        for c in cmds:
            r = subprocess.run(c, capture_output=True, text=True, env=env, timeout=30)
            print("== %s: %s" % (cfg, " ".join(c[1:])))
            print((r.stdout or r.stderr)[:8000])
        d["proc"].terminate()
        try:
            d["proc"].wait(timeout=30)
        except subprocess.TimeoutExpired:
            d["proc"].kill()


def start_all(a, outdir):
    """Start every worker: one after another, each until "ready", so that
    the start-up times are not taken under the others' start-up; or, with
    --parallel-start, all at once (start-up times then under contention)."""
    procs = []

    def ready(p):
        end = time.monotonic() + 300
        while True:
            ln = p.line(end)
            if ln is None:
                sys.exit("torch-turns: %s did not get ready (stderr: %s)" % (p.name, p.err.name))
            if ln.startswith("torch_startup_s"):
                p.startup = ln
            if ln.startswith("ready"):
                break
        print("started %-16s %s" % (p.name, p.startup), flush=True)

    seen = {}
    for cfg in a.cfgs:  # a configuration named k times runs k * --procs workers
        base = seen.get(cfg, 0)
        seen[cfg] = base + a.procs
        for i in range(base, base + a.procs):
            tag = "%s-%d" % (cfg.replace(":", "_").replace("/", "_").replace(",", "_"), i)
            argv, env = worker_argv(cfg, i, a, outdir)
            procs.append(Proc(cfg, i, argv, env, os.path.join(outdir, "turns-%s.err" % tag)))
            if not a.parallel_start:
                ready(procs[-1])
    if a.parallel_start:
        for p in procs:
            ready(p)
    return procs


def run_turns(a, procs, tsv):
    """Rounds of turns until --rounds or --budget; rows appended to tsv:
    round, position, cfg, proc, steps, turn s, median step s, unix s."""
    rng = random.Random(a.seed)
    t_end = time.monotonic() + a.budget
    with open(tsv, "w") as f:
        f.write("round\tpos\tcfg\tproc\tsteps\tturn_s\tmedian_step_s\tunix_s\n")
        for r in range(a.rounds):
            if time.monotonic() >= t_end:
                break
            order = procs[:]
            rng.shuffle(order)
            for pos, p in enumerate(order):
                p.send("go %d\n" % a.steps)
                ln = p.line(time.monotonic() + 120)
                if ln is None or not ln.startswith("turn "):
                    sys.exit("torch-turns: %s: no turn (%r)" % (p.name, ln))
                w = ln.split()
                f.write("%d\t%d\t%s\t%d\t%d\t%s\t%s\t%.3f\n" % (r, pos, p.cfg, p.idx, a.steps, w[1], w[2],
                                                                 time.time()))
            f.flush()
            print("round %d done (%d turns)" % (r, len(order)), flush=True)


def run_longs(a, procs, path):
    """--long-rounds rounds (shuffled order) of one long run of --long
    steps per process, each step's time kept: rows of path are round,
    cfg, proc, steps, wall s, then the steps' us."""
    rng = random.Random(a.seed + 1)
    with open(path, "w") as f:
        for r in range(a.long_rounds):
            order = procs[:]
            rng.shuffle(order)
            for p in order:
                p.send("dump %d\n" % a.long)
                ln = p.line(time.monotonic() + 300)
                if ln is None or not ln.startswith("dump "):
                    sys.exit("torch-turns: %s: no dump (%r)" % (p.name, (ln or "")[:80]))
                w = ln.split()
                f.write("%d\t%s\t%d\t%d\t%s\t%s\n" % (r, p.cfg, p.idx, len(w) - 2, w[1], " ".join(w[2:])))
            f.flush()
            print("long round %d done" % r, flush=True)


def stop_all(procs):
    """quit every worker and wait for it (gpuprof record writes its
    profile at the end); the selftest lines of each stderr."""
    for p in procs:
        try:
            p.send("quit\n")
            p.p.stdin.close()
        except OSError:
            pass
    for p in procs:
        try:
            p.p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.p.kill()
            p.p.wait()
        p.err.close()
        keep = [ln for ln in open(p.err.name, errors="replace")
                if any(k in ln for k in ("finalize", "windows", "dropped", "rror", "duty"))]
        for ln in keep[:6]:
            print("  [%s rc=%d] %s" % (p.name, p.p.returncode, ln.rstrip()[:300]))


# --- analysis ----------------------------------------------------------
def read_tsv(path):
    rows = []
    with open(path) as f:
        next(f)
        for ln in f:
            w = ln.rstrip("\n").split("\t")
            rows.append(dict(round=int(w[0]), pos=int(w[1]), cfg=w[2], proc=int(w[3]), steps=int(w[4]),
                             turn=float(w[5]), med=float(w[6])))
    return rows


def median_ci(v, conf=0.95):
    """(median, lo, hi): the order-statistic interval of the median,
    ranks k and n+1-k (1-based) with P(Binomial(n, 1/2) < k) <= (1-conf)/2;
    (median, nan, nan) when n is too small for one."""
    v = sorted(v)
    n = len(v)
    med = statistics.median(v)
    k, cum = 0, 0.0
    while True:
        p = math.comb(n, k) / 2.0 ** n
        if cum + p > (1 - conf) / 2:
            break
        cum += p
        k += 1
    # k = the number of ranks that may be dropped at each end
    if k == 0:
        return med, float("nan"), float("nan")
    return med, v[k - 1], v[n - k]


def per_round(rows, key):
    """{cfg: {round: {proc: value}}} of key ('turn' per step, or 'med')."""
    d = {}
    for x in rows:
        val = x["turn"] / x["steps"] if key == "turn" else x["med"]
        d.setdefault(x["cfg"], {}).setdefault(x["round"], {})[x["proc"]] = val
    return d


def ratios(d, cfg, rounds, procs_c, procs_b):
    """Per-round ratio: mean over procs_c of cfg / mean over procs_b of bare."""
    out = []
    for r in rounds:
        c = [d[cfg][r][i] for i in procs_c if i in d[cfg].get(r, {})]
        b = [d["bare"][r][i] for i in procs_b if i in d["bare"].get(r, {})]
        if c and b:
            out.append(statistics.fmean(c) / statistics.fmean(b))
    return out


def boot_ci(d, cfg, rounds, pc, pb, nb=1000, seed=1):
    """95 % interval of the median ratio of cfg's processes pc to bare's
    pb: rounds resampled, and the processes of each side resampled
    (hierarchical bootstrap)."""
    rng = random.Random(seed)
    meds = []
    for _ in range(nb):
        rr = [rng.choice(rounds) for _ in rounds]
        c = [rng.choice(pc) for _ in pc]
        b = [rng.choice(pb) for _ in pb]
        v = ratios(d, cfg, rr, c, b)
        if v:
            meds.append(statistics.median(v))
    meds.sort()
    return meds[int(0.025 * (len(meds) - 1))], meds[int(0.975 * (len(meds) - 1))]


def analyze(rows, cfgs=None, out=sys.stdout):
    """Print the tables (see the module's docstring)."""
    cfgs = cfgs or list(dict.fromkeys(x["cfg"] for x in rows))
    if "bare" not in cfgs:
        print("no bare turns: no ratios", file=out)
        return {}
    rounds = sorted({x["round"] for x in rows})
    steps = rows[0]["steps"] if rows else 0
    res = {}
    trim = []
    # what a comparison a process apart sees: the bare turns' own drift
    bt = [statistics.fmean(x["turn"] / x["steps"] for x in rows if x["cfg"] == "bare" and x["round"] == r)
          for r in rounds]
    bt = [x for x in bt if x == x]
    if bt:
        m = statistics.median(bt)
        print("== bare per-step mean over the rounds: median %.1f us, min %.4f, max %.4f of it (drift that the "
              "same-round ratios cancel)" % (m * 1e6, min(bt) / m, max(bt) / m), file=out)
    for key, what in (("turn", "per-step mean (turn wall / steps)"), ("med", "median step")):
        d = per_round(rows, key)
        print("== %s: ratio to the same round's bare, %d rounds of %d steps per turn" % (what, len(rounds), steps),
              file=out)
        print("%-18s %10s  %8s  %-17s  %-17s  %s" % ("config", "bare-us", "median", "95% rounds (OS)",
                                                    "95% boot (rnd+prc)", "per process (median ratio)"),
              file=out)
        for cfg in cfgs:
            if cfg not in d:
                continue
            pc = sorted({i for r in d[cfg].values() for i in r})
            pb = sorted({i for r in d["bare"].values() for i in r})
            if cfg == "bare":
                # the null comparison: one half of the bare processes
                # against the other (the noise floor; 1 expected)
                if len(pb) < 2:
                    continue
                pc, pb = pb[:len(pb) // 2], pb[len(pb) // 2:]
            v = ratios(d, cfg, rounds, pc, pb)
            if not v:
                continue
            med, lo, hi = median_ci(v)
            blo, bhi = boot_ci(d, cfg, rounds, pc, pb)
            pb = sorted({i for r in d["bare"].values() for i in r})
            # each process against all bare processes of its round (for a
            # bare process: against the other bare processes)
            pp = []
            for i in pc:
                pv = ratios(d, cfg, rounds, [i], [j for j in pb if cfg != "bare" or j != i] or pb)
                pp.append("%d:%.4f" % (i, statistics.median(pv)) if pv else "%d:-" % i)
            bare_us = statistics.median(statistics.fmean(d["bare"][r].values()) for r in rounds
                                        if d["bare"].get(r)) * 1e6
            print("%-18s %10.1f  %8.4f  %.4f-%.4f    %.4f-%.4f    %s" % (
                cfg if cfg != "bare" else "bare(half/half)", bare_us, med, lo, hi, blo, bhi, " ".join(pp)), file=out)
            res[(key, cfg)] = (med, lo, hi, blo, bhi)
            if key == "turn":
                tl = trimmed_log_ratio(v)
                trim.append("%-18s %.4f  (95 %% %.4f-%.4f, rounds resampled)" % (
                    cfg if cfg != "bare" else "bare(half/half)", *tl))
    print("== per-step mean: 20 %-trimmed mean of the per-round log ratios, as a ratio", file=out)
    for ln in trim:
        print(ln, file=out)
    return res


def trimmed_log_ratio(v, p=0.2, nb=1000, seed=3):
    """(exp of the p-trimmed mean of log v, and its 95 % bootstrap
    interval over the rounds): less sensitive than the median to the
    skew of a ratio of sums of heavy-tailed step times."""
    lv = [math.log(x) for x in v]

    def tm(x):
        x = sorted(x)
        k = int(len(x) * p)
        return statistics.fmean(x[k:len(x) - k])
    rng = random.Random(seed)
    bs = sorted(tm([rng.choice(lv) for _ in lv]) for _ in range(nb))
    return math.exp(tm(lv)), math.exp(bs[int(0.025 * (nb - 1))]), math.exp(bs[int(0.975 * (nb - 1))])


def running_median(v, h):
    """The median of v[i-h .. i+h] (cut at the ends) for each i."""
    out = []
    for i in range(len(v)):
        out.append(statistics.median(v[max(0, i - h):i + h + 1]))
    return out


def excess(v, h):
    """The share of a run's time above its running median (half-width h
    steps): sum(t - m) / sum(m).  A cost that comes in bursts shorter
    than h steps (a duty cycle's window: switching, traced steps, the
    finalize) is counted, a speed that changes more slowly than that
    (the machine's, +-15 % within a second on the H100 VM) is not; a
    cost spread over every step is not counted either (the turns' ratio
    measures that)."""
    m = running_median(v, h)
    return sum(t - b for t, b in zip(v, m)) / sum(m)


def read_longs(path):
    rows = []
    with open(path) as f:
        for ln in f:
            w = ln.rstrip("\n").split("\t")
            rows.append(dict(round=int(w[0]), cfg=w[1], proc=int(w[2]), wall=float(w[4]),
                             steps=[float(x) for x in w[5].split()]))
    return rows


def analyze_longs(rows, h=50, out=sys.stdout, nb=1000, seed=2):
    """Print, per configuration, the running-median excess of its long
    runs minus bare's (median of runs; 95 % bootstrap interval of the
    difference of the means over runs): the cost of bursts."""
    ex = {}
    for x in rows:
        ex.setdefault(x["cfg"], []).append(excess(x["steps"], h))
    if "bare" not in ex:
        return {}
    rng = random.Random(seed)
    print("== long runs: share of time above the running median (+-%d steps), minus bare's; %d steps per run"
          % (h, len(rows[0]["steps"]) if rows else 0), file=out)
    print("%-18s %5s  %9s  %9s  %-19s  %s" % ("config", "runs", "excess", "- bare", "95% boot of - bare",
                                             "each run"), file=out)
    res = {}
    b = ex["bare"]
    for cfg, v in ex.items():
        d = statistics.fmean(v) - statistics.fmean(b)
        bs = []
        for _ in range(nb):
            cv = [rng.choice(v) for _ in v]
            bv = [rng.choice(b) for _ in b]
            bs.append(statistics.fmean(cv) - statistics.fmean(bv))
        bs.sort()
        lo, hi = bs[int(0.025 * (nb - 1))], bs[int(0.975 * (nb - 1))]
        print("%-18s %5d  %+8.4f%%  %+8.4f%%  %+.4f%%..%+.4f%%  %s" % (
            cfg, len(v), 100 * statistics.fmean(v), 100 * d, 100 * lo, 100 * hi,
            " ".join("%.3f%%" % (100 * x) for x in v[:12])), file=out)
        res[cfg] = (d, lo, hi)
    return res


def startup_table(procs, out=sys.stdout):
    """Median start-up seconds per configuration (torch_startup_s: from
    the driver's spawn to torch imported, CUDA up, warm-up done)."""
    by = {}
    for p in procs:
        w = p.startup.split()
        try:
            by.setdefault(p.cfg, []).append([float(w[w.index(k) + 1]) for k in ("import", "cuda", "warm")])
        except (ValueError, IndexError):
            pass
    print("== start-up s (median of the processes): import, CUDA up, warm-up done", file=out)
    for cfg, v in by.items():
        print("%-18s %s  (%d processes)" % (cfg, "  ".join("%.3f" % statistics.median(x[i] for x in v)
                                                          for i in range(3)), len(v)), file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cfgs", nargs="*")
    ap.add_argument("--bundle", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--budget", type=float, default=300)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--out", default="/tmp/turns")
    ap.add_argument("--worker", default="")
    ap.add_argument("--analyze", default="")
    ap.add_argument("--long", type=int, default=0)
    ap.add_argument("--long-rounds", type=int, default=0)
    ap.add_argument("--half", type=int, default=50)
    ap.add_argument("--parallel-start", action="store_true")
    ap.add_argument("--node-conf", action="append", default=[])
    a = ap.parse_args()
    if a.analyze:
        analyze(read_tsv(a.analyze), a.cfgs or None)
        longs = os.path.join(os.path.dirname(a.analyze), "longs.tsv")
        if os.path.exists(longs):
            analyze_longs(read_longs(longs), a.half)
        return
    if "bare" not in a.cfgs:
        sys.exit("torch-turns: bare must be among the configurations")
    os.makedirs(a.out, exist_ok=True)
    tsv = os.path.join(a.out, "turns.tsv")
    longs = os.path.join(a.out, "longs.tsv")
    if os.path.exists(longs):
        os.unlink(longs)
    start_nodes(a, a.out)
    procs = start_all(a, a.out)
    try:
        run_turns(a, procs, tsv)
        if a.long and a.long_rounds:
            run_longs(a, procs, longs)
        node_report(a, procs)
    finally:
        stop_all(procs)
        for d in getattr(a, "nodes", {}).values():
            if d["proc"].poll() is None:
                d["proc"].kill()
    startup_table(procs)
    analyze(read_tsv(tsv), list(dict.fromkeys(a.cfgs)))
    if os.path.exists(longs):
        analyze_longs(read_longs(longs), a.half)


if __name__ == "__main__":
    main()
