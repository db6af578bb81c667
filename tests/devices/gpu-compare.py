#!/usr/bin/python3
"""gpu-compare.py RESULT_DIR - the device series gpuprofd stored during
tests/devices/gpu-devices.sh (on.gpdb) against nvidia-smi sampled at the
same time (smi.csv): nearest-sample differences of utilization, memory
used and power, agreement within one nvidia-smi period, and per-phase
means of devload.py."""
import sqlite3, datetime, bisect, sys, statistics
R = sys.argv[1]
wall, raw = open(R + "/clocks.txt").read().split()
off = float(wall) - int(raw) / 1e9
db = sqlite3.connect(R + "/on.gpdb")
rows = db.execute("select t_ns, util_gpu, util_mem, mem_used, mem_total, power_w, temp_c, clock_sm_mhz from device_sample order by t_ns").fetchall()
d_t = [r[0] / 1e9 + off for r in rows]
smi = []
for line in open(R + "/smi.csv").read().splitlines()[1:]:
    f = [x.strip() for x in line.split(",")]
    try:
        t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        continue
    smi.append((t, float(f[1]), float(f[2]), float(f[3]), float(f[4]), float(f[5]), float(f[6])))
print("daemon samples", len(rows), "span %.1f s" % (d_t[-1] - d_t[0]), "mean interval %.1f ms" % (1000 * (d_t[-1] - d_t[0]) / (len(rows) - 1)))
print("nvidia-smi rows", len(smi), "span %.1f s" % (smi[-1][0] - smi[0][0]))
MIB = 1024 * 1024
du, dm, dp, within_u, within_m = [], [], [], 0, 0
n = 0
for s in smi:
    i = bisect.bisect_left(d_t, s[0])
    cands = [k for k in (i - 1, i) if 0 <= k < len(rows)]
    if not cands:
        continue
    k = min(cands, key=lambda k: abs(d_t[k] - s[0]))
    if abs(d_t[k] - s[0]) > 0.15:
        continue
    n += 1
    r = rows[k]
    du.append(r[1] - s[1]); dm.append(r[3] / MIB - s[3]); dp.append(r[5] - s[5])
    # sampling error: any daemon sample within +-200 ms (one smi period) equal
    win = [rows[j] for j in range(len(rows)) if abs(d_t[j] - s[0]) <= 0.2]
    if any(abs(w[1] - s[1]) <= 1 for w in win): within_u += 1
    if any(abs(w[3] / MIB - s[3]) <= 2 for w in win): within_m += 1
def st(x): return "mean %+.2f, mean |d| %.2f, max |d| %.2f" % (statistics.mean(x), statistics.mean(abs(v) for v in x), max(abs(v) for v in x))
print("paired (nearest daemon sample within 150 ms):", n)
print("utilization.gpu  daemon - smi (pct points):", st(du))
print("memory.used      daemon - smi (MiB):", st(dm))
print("power.draw       daemon - smi (W):", st(dp))
print("util equal (+-1) to a daemon sample within +-200 ms: %d/%d" % (within_u, n))
print("memory equal (+-2 MiB) to a daemon sample within +-200 ms: %d/%d" % (within_m, n))
# per phase means
ph = [l.split()[1:] for l in open(R + "/on.load.txt") if l.startswith("phase")]
for (a, ta), (b, tb) in zip(ph, ph[1:]):
    ta, tb = float(ta), float(tb)
    ds = [r for r, t in zip(rows, d_t) if ta + 0.5 < t < tb - 0.5]
    ss = [s for s in smi if ta + 0.5 < s[0] < tb - 0.5]
    if ds and ss:
        print("phase %-7s daemon util %5.1f mem %8.0f MiB | smi util %5.1f mem %8.0f MiB  (n %d/%d)" % (
            a, statistics.mean(r[1] for r in ds), statistics.mean(r[3] / MIB for r in ds),
            statistics.mean(s[1] for s in ss), statistics.mean(s[3] for s in ss), len(ds), len(ss)))
pr = db.execute("select count(*), count(distinct pid), min(profile_id), max(job_id), max(mem_used), max(sm_util) from device_proc").fetchone()
print("device_proc rows, pids, profile, job, max mem, max sm_util:", pr)
