#!/usr/bin/python3
"""check.py - assertions of the device-monitoring tests (tests/devices/*.sh).

  check.py prom FILE VIEW A B    --prometheus output against the fake NVML's
                                 values (VIEW root: every row; nobody: only
                                 B's process rows); parsed with
                                 prometheus_client's own text parser
  check.py text FILE VIEW A B    `gpuprof devices` text output
  check.py store DB A            the stored series (device_sample,
                                 device_proc, joined with profile)
A: profiled process (root, job job-nvml) on GPU 0 (1 GiB, SM 25 %,
memory 5 %) and GPU 1 (256 MiB, 30 %, 7 %); B: a process of uid 65534, not
profiled, on GPU 0 (512 MiB, 10 %, 2 %).  Prints what differs; exit 1.
"""
import sqlite3
import sys

GIB = 1024 ** 3
DEV = {"0": dict(uuid="GPU-fake-0000", name="Fake GPU A", util=37, mutil=12, used=2 * GIB, total=80 * GIB,
                 power=123.456, temp=45, sm=1980e6, mclk=2619e6, tx=1024000, rx=2048000, eccc=3, eccu=1, xid=0,
                 nvtx=1048576, nvrx=2097152),
       "1": dict(uuid="GPU-fake-0001", name='Fake GPU B "sxm\\5"', util=80, mutil=40, used=10 * GIB, total=80 * GIB,
                 power=300.0, temp=60, sm=1755e6, mclk=2619e6, tx=0, rx=0, eccc=0, eccu=0, xid=1, nvtx=None, nvrx=None)}
bad = []


def want(what, got, exp):
    if isinstance(exp, float) or isinstance(got, float):
        ok = got is not None and abs(got - exp) < 1e-6 * max(1.0, abs(exp))
    else:
        ok = got == exp
    if not ok:
        bad.append("%s: got %r, want %r" % (what, got, exp))


def prom(path, view, a, b):
    from prometheus_client.parser import text_string_to_metric_families
    with open(path) as f:
        text = f.read()
    samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            samples.setdefault(s.name, []).append((s.labels, s.value))

    def one(metric_, **labels):
        hits = [v for lab, v in samples.get(metric_, []) if all(lab.get(k) == str(x) for k, x in labels.items())]
        if len(hits) != 1:
            bad.append("%s%r: %d samples" % (metric_, labels, len(hits)))
            return None
        return hits[0]

    for api, up in (("nvml", 1), ("sysman", 0), ("papi", 0)):
        want("backend_up " + api, one("gpuprof_devices_backend_up", api=api), up)
    for g, d in DEV.items():
        lab = dict(api="nvml", gpu=g, uuid=d["uuid"], name=d["name"])
        want("util " + g, one("gpuprof_gpu_utilization_percent", **lab), d["util"])
        want("mem util " + g, one("gpuprof_gpu_memory_utilization_percent", **lab), d["mutil"])
        want("mem used " + g, one("gpuprof_gpu_memory_used_bytes", **lab), d["used"])
        want("mem total " + g, one("gpuprof_gpu_memory_total_bytes", **lab), d["total"])
        want("power " + g, one("gpuprof_gpu_power_watts", **lab), d["power"])
        want("temp " + g, one("gpuprof_gpu_temperature_celsius", **lab), d["temp"])
        want("sm clock " + g, one("gpuprof_gpu_sm_clock_hertz", **lab), d["sm"])
        want("mem clock " + g, one("gpuprof_gpu_memory_clock_hertz", **lab), d["mclk"])
        want("pcie tx " + g, one("gpuprof_gpu_pcie_tx_bytes_per_second", **lab), d["tx"])
        want("pcie rx " + g, one("gpuprof_gpu_pcie_rx_bytes_per_second", **lab), d["rx"])
        for k, m in (("nvtx", "gpuprof_gpu_nvlink_tx_bytes_per_second"),
                     ("nvrx", "gpuprof_gpu_nvlink_rx_bytes_per_second")):
            if d[k] is None:  # no NVLink: no sample at all, not a 0
                hits = [v for lab_, v in samples.get(m, []) if lab_.get("gpu") == g]
                want(k + " absent " + g, hits, [])
            else:
                want(k + " " + g, one(m, **lab), d[k])
        want("ecc c " + g, one("gpuprof_gpu_ecc_errors_total", type="corrected", **lab), d["eccc"])
        want("ecc u " + g, one("gpuprof_gpu_ecc_errors_total", type="uncorrected", **lab), d["eccu"])
        want("xid " + g, one("gpuprof_gpu_xid_errors_total", **lab), d["xid"])
    procs = samples.get("gpuprof_gpu_process_memory_used_bytes", [])
    rows = sorted((lab["gpu"], lab["pid"], lab["uid"], lab["job"], lab["exe"], v) for lab, v in procs)
    exp = [("0", str(b), "65534", "", "", 512 * 1024 ** 2)]
    if view == "root":
        # A's job is only claimed (GPUPROF_JOB_ID; no Slurm cgroup): daemon/job.h
        exp += [("0", str(a), "0", "job-nvml(claimed)", "sleep", GIB),
                ("1", str(a), "0", "job-nvml(claimed)", "sleep", 256 * 1024 ** 2)]
    want("process memory rows", rows, sorted(exp))
    sm = sorted((lab["gpu"], lab["pid"], v) for lab, v in samples.get("gpuprof_gpu_process_sm_utilization_percent", []))
    exp = [("0", str(b), 10)] + ([("0", str(a), 25), ("1", str(a), 30)] if view == "root" else [])
    want("process SM rows", sm, sorted(exp))
    jobs = sorted((lab["gpu"], lab["job"], v) for lab, v in samples.get("gpuprof_gpu_job_memory_used_bytes", []))
    exp = [("0", "(not profiled)", 512 * 1024 ** 2)]
    if view == "root":
        exp += [("0", "job-nvml(claimed)", GIB), ("1", "job-nvml(claimed)", 256 * 1024 ** 2)]
    want("job memory rows", jobs, sorted(exp))


def text(path, view, a, b):
    with open(path) as f:
        lines = f.read().splitlines()

    def row(*words):
        hits = [l for l in lines if all(w in l.split() for w in words)]
        if len(hits) != 1:
            bad.append("text rows with %r: %d" % (words, len(hits)))
            return ""
        return hits[0]
    r = row("nvml", "Fake", "A")
    for s in ("37%", "12%", "2.00 GiB / 80.00 GiB", "123.5 W", "45 C", "1980", "2619", "1000.00 KiB / 1.95 MiB",
              "1.00 MiB / 2.00 MiB", "3/1"):
        if s not in r:
            bad.append("GPU 0 row lacks %r: %r" % (s, r))
    r = row("nvml", "Fake", "B")
    for s in ("80%", "40%", "10.00 GiB / 80.00 GiB", "300.0 W", "60 C", "1755", "0/0"):
        if s not in r:
            bad.append("GPU 1 row lacks %r: %r" % (s, r))
    if not r.rstrip().endswith(" 1"):
        bad.append("GPU 1 row: XID count 1 expected at the end: %r" % r)
    rb = row(str(b), "65534")
    if "512.00 MiB" not in rb:
        bad.append("process B row %r" % rb)
    ra = [l for l in lines if str(a) in l.split()]
    if view == "root":
        if len(ra) != 2 or not all("job-nvml" in l and "sleep" in l for l in ra):
            bad.append("process A rows %r" % ra)
        if any("not shown" in l for l in lines):
            bad.append("root is told of hidden rows")
    else:
        if ra:
            bad.append("nobody sees root's process rows %r" % ra)
        if any("not shown" in l or "other users" in l for l in lines):
            bad.append("nobody is told how many rows other users have")
        if any("job-nvml" in l for l in lines):
            bad.append("nobody sees root's job")


def store(db, a):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    for g, d in DEV.items():
        r = c.execute("SELECT s.util_gpu, s.util_mem, s.mem_used, s.mem_total, s.power_w, s.temp_c,"
                      " s.clock_sm_mhz, s.clock_mem_mhz, s.pcie_tx_bps, s.pcie_rx_bps, s.ecc_corrected,"
                      " s.ecc_uncorrected, s.xid_events, x.name, x.api, x.idx, s.nvlink_tx_bps, s.nvlink_rx_bps"
                      " FROM device_sample s"
                      " JOIN device x ON x.id = s.device WHERE x.uuid = ? ORDER BY s.t_ns DESC LIMIT 1",
                      (d["uuid"],)).fetchone()
        want("stored sample of GPU " + g, r and tuple(r), (
            d["util"], d["mutil"], d["used"], d["total"], d["power"], d["temp"], d["sm"] / 1e6, d["mclk"] / 1e6,
            d["tx"], d["rx"], d["eccc"], d["eccu"], d["xid"], d["name"], "nvml", int(g), d["nvtx"], d["nvrx"]))
    r = c.execute("SELECT p.job_id, p.uid, p.mem_used, p.sm_util, p.mem_util, f.pid, f.job_id FROM device_proc p"
                  " JOIN device x ON x.id = p.device JOIN profile f ON f.id = p.profile_id"
                  " WHERE x.uuid = 'GPU-fake-0000' AND p.pid = ? ORDER BY p.t_ns DESC LIMIT 1", (a,)).fetchone()
    want("stored process row of A on GPU 0", r and tuple(r), ("job-nvml", 0, GIB, 25.0, 5.0, a, "job-nvml"))
    n = c.execute("SELECT COUNT(*) FROM device_sample").fetchone()[0]
    if n < 2:
        bad.append("only %d stored samples" % n)


def main():
    mode = sys.argv[1]
    if mode == "prom":
        prom(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "text":
        text(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "store":
        store(sys.argv[2], int(sys.argv[3]))
    for b in bad:
        print("MISMATCH:", b)
    sys.exit(1 if bad else 0)


main()
