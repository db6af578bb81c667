#!/usr/bin/env python3
"""gpu-graphs.py - CUDA graph work under its capture-time Python frames
(issue 28, docs/CUDA.md "CUDA graphs"; driven by gpu-graphs.sh).

  python3 gpu-graphs.py run [REPLAYS]          the workload (under the shim)
  python3 gpu-graphs.py check REPORT.json [REPLAYS]
  python3 gpu-graphs.py run-duty SECONDS       (1) only, for SECONDS: a
      new capture every 50 ms, each replayed 20 times (under a duty
      policy, captures fall both inside and between trace windows)
  python3 gpu-graphs.py check-duty REPORT.json PID

run:
  (1) torch.cuda.graph: a small nn.Module (Linear, GELU, Linear,
      LayerNorm), warmed up on a side stream, run once eagerly in
      eager_ref(), captured in capture(), replayed REPLAYS times in
      replay();
  (2) the explicit graph API through ctypes and libcuda: two kernel nodes
      (PTX, JIT-compiled) added in add_a() and add_b(), a memset node in
      add_memset(), instantiated, launched REPLAYS times in
      replay_explicit(); then cuGraphExecUpdate with a graph of the same
      shape built in add_a2() / add_b2() / add_memset2() and UPDATED more
      launches in replay_updated().
check (`gpuprof report --json` of the run):
  (1) for each layer line of Net.forward: kernels below replay()'s
      <graph replay> whose capture path holds capture() > Net.forward at
      that line: a positive multiple of REPLAYS (printed beside the kernels
      eager_ref() ran at that line, normally the same per replay); every
      kernel below replay() sits below <graph replay> under a capture-time
      Net.forward frame;
  (2) ka == kb == memsets == REPLAYS below replay_explicit()'s <graph
      replay>, under add_a / add_b / add_memset;
  (3) the updated launches: UPDATED of each, every one under a creation
      frame (add_* or add_*2: which one is printed);
and prints the counts per capture-time Python frame, then PASS or FAIL.
check-duty (the node daemon's report, process PID): the traced kernels
below replay() (those of trace windows), every one below <graph replay>
under a capture-time capture() > Net.forward layer line; PASS or FAIL.
"""
import ctypes
import json
import re
import sys

UPDATED = 10


# ----------------------------------------------------------------- torch
def make_net():
    """The captured model (a small nn.Module on the GPU), its input, warmed
    up on a side stream as torch.cuda.graph's documentation asks."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(256, 512)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(512, 128)
            self.norm = nn.LayerNorm(128)

        def forward(self, x):
            h = self.fc1(x)  # L:fc1
            h = self.act(h)  # L:act
            h = self.fc2(h)  # L:fc2
            return self.norm(h)  # L:norm

    model = Net().cuda()
    x = torch.randn(64, 256, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    return model, x


def capture(model, x):
    """model(x) captured into a new torch.cuda.CUDAGraph: (graph, output)."""
    import torch
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = model(x)
    torch.cuda.synchronize()
    return g, y


def replay(g, n):
    import torch
    for _ in range(n):
        g.replay()  # L:replay
    torch.cuda.synchronize()


def torch_part(replays):
    import torch

    def eager_ref(model, x):
        y = model(x)
        torch.cuda.synchronize()
        return y

    with torch.no_grad():
        model, x = make_net()
        eager_ref(model, x)
        g, _ = capture(model, x)
        replay(g, replays)
    print("torch", torch.__version__, "captured and replayed", replays, "times")


def torch_duty_part(seconds):
    import time
    import torch

    with torch.no_grad():
        model, x = make_net()
        end, n = time.monotonic() + seconds, 0
        while time.monotonic() < end:
            g, _ = capture(model, x)
            replay(g, 20)
            del g
            n += 1
            time.sleep(0.05)
    print("torch", torch.__version__, "captured", n, "graphs, each replayed 20 times")


def check_duty(report, pid):
    doc = json.load(open(report))
    at = pyframe

    tot = placed = 0
    per = {}
    stack = [(doc["tree"], [])]
    while stack:
        n, anc = stack.pop()
        kind, lab = n.get("kind"), n.get("label") or ""
        if kind == "kernel":
            c = ((n.get("metrics", {}).get("GKER:COUNT") or {}).get("excl")) or 0
            if c and any(k == "python" and at(l, "replay", "replay") for k, l in anc):
                tot += c
                idx = [i for i, (k, l) in enumerate(anc) if k == "placeholder" and l == "<graph replay>"]
                below = anc[idx[-1] + 1:] if idx else []
                line = next((t for t in ("fc1", "act", "fc2", "norm")
                             if any(k == "python" and at(l, "Net.forward", t) for k, l in below)), None)
                if idx and line and any(k == "python" and l.split(" (", 1)[0].endswith("capture") for k, l in below):
                    placed += c
                    per[line] = per.get(line, 0) + c
        for ch in n.get("children", []):
            stack.append((ch, anc + [(kind, lab)]))
    for t in ("fc1", "act", "fc2", "norm"):
        print("  Net.forward line %d (%s): %d kernels below <graph replay>" % (L[t], t, per.get(t, 0)))
    print("pid %s: traced kernels below replay() %d, under <graph replay> > capture() > a Net.forward line %d (%.1f %%)"
          % (pid, tot, placed, 100.0 * placed / tot if tot else 0))
    ok = tot > 0 and placed == tot
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


# ------------------------------------------------- explicit graph API
PTX = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry gpd_graph_ka()
{
  ret;
}
.visible .entry gpd_graph_kb()
{
  ret;
}
"""


class KernelParams(ctypes.Structure):  # CUDA_KERNEL_NODE_PARAMS_v2
    _fields_ = [("func", ctypes.c_void_p), ("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint),
                ("bx", ctypes.c_uint), ("by", ctypes.c_uint), ("bz", ctypes.c_uint), ("shmem", ctypes.c_uint),
                ("params", ctypes.c_void_p), ("extra", ctypes.c_void_p), ("kern", ctypes.c_void_p),
                ("ctx", ctypes.c_void_p)]


class MemsetParams(ctypes.Structure):  # CUDA_MEMSET_NODE_PARAMS
    _fields_ = [("dst", ctypes.c_uint64), ("pitch", ctypes.c_size_t), ("value", ctypes.c_uint),
                ("elementSize", ctypes.c_uint), ("width", ctypes.c_size_t), ("height", ctypes.c_size_t)]


class Cu:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def __call__(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != 0:
            raise RuntimeError("%s: CUresult %d" % (name, rc))


def kernel_node(cu, graph, func):
    node = ctypes.c_void_p()
    p = KernelParams(func=func, gx=1, gy=1, gz=1, bx=32, by=1, bz=1)
    cu("cuGraphAddKernelNode_v2", ctypes.byref(node), graph, None, ctypes.c_size_t(0), ctypes.byref(p))
    return node


def memset_node(cu, graph, dptr, ctx):
    node = ctypes.c_void_p()
    p = MemsetParams(dst=dptr.value, pitch=0, value=7, elementSize=4, width=1024, height=1)
    cu("cuGraphAddMemsetNode", ctypes.byref(node), graph, None, ctypes.c_size_t(0), ctypes.byref(p), ctx)
    return node


def add_a(cu, graph, f):
    return kernel_node(cu, graph, f)  # L:add_a


def add_b(cu, graph, f):
    return kernel_node(cu, graph, f)  # L:add_b


def add_memset(cu, graph, dptr, ctx):
    return memset_node(cu, graph, dptr, ctx)  # L:add_memset


def add_a2(cu, graph, f):
    return kernel_node(cu, graph, f)  # L:add_a2


def add_b2(cu, graph, f):
    return kernel_node(cu, graph, f)  # L:add_b2


def add_memset2(cu, graph, dptr, ctx):
    return memset_node(cu, graph, dptr, ctx)  # L:add_memset2


def replay_explicit(cu, exe, n):
    for _ in range(n):
        cu("cuGraphLaunch", exe, None)  # L:replay_explicit
    cu("cuCtxSynchronize")


def replay_updated(cu, exe, n):
    for _ in range(n):
        cu("cuGraphLaunch", exe, None)  # L:replay_updated
    cu("cuCtxSynchronize")


def explicit_part(replays):
    cu = Cu()
    ctx = ctypes.c_void_p()
    cu("cuCtxGetCurrent", ctypes.byref(ctx))
    if not ctx.value:  # no torch before us: the primary context
        cu("cuInit", 0)
        dev = ctypes.c_int()
        cu("cuDeviceGet", ctypes.byref(dev), 0)
        cu("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        cu("cuCtxSetCurrent", ctx)
    mod, fa, fb = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    cu("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(PTX))
    cu("cuModuleGetFunction", ctypes.byref(fa), mod, b"gpd_graph_ka")
    cu("cuModuleGetFunction", ctypes.byref(fb), mod, b"gpd_graph_kb")
    dptr = ctypes.c_uint64()
    cu("cuMemAlloc_v2", ctypes.byref(dptr), ctypes.c_size_t(4096))
    graph, graph2, exe = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    cu("cuGraphCreate", ctypes.byref(graph), 0)
    add_a(cu, graph, fa)
    add_b(cu, graph, fb)
    add_memset(cu, graph, dptr, ctx)
    cu("cuGraphInstantiateWithFlags", ctypes.byref(exe), graph, ctypes.c_ulonglong(0))
    replay_explicit(cu, exe, replays)
    cu("cuGraphCreate", ctypes.byref(graph2), 0)
    add_a2(cu, graph2, fa)
    add_b2(cu, graph2, fb)
    add_memset2(cu, graph2, dptr, ctx)
    info = ctypes.create_string_buffer(64)  # CUgraphExecUpdateResultInfo
    cu("cuGraphExecUpdate_v2", exe, graph2, info)
    replay_updated(cu, exe, UPDATED)
    print("explicit graph: launched", replays, "times, updated, launched", UPDATED, "more")


# ----------------------------------------------------------------- check
def lines(path):
    out = {}
    for i, t in enumerate(open(path), 1):
        m = re.search(r"# L:(\w+)", t)
        if m:
            out[m.group(1)] = i
    return out


L = lines(__file__)  # marked line numbers of this file
BASE = __file__.rsplit("/", 1)[-1]


def qual(lab, fn):
    """A Python frame's label "qualname (file:line)" names function fn."""
    q = lab.split(" (", 1)[0]
    return q == fn or q.endswith("." + fn)


def pyframe(lab, fn, tag):
    """Frame of fn in this file at the line marked "# L:tag"."""
    return qual(lab, fn) and lab.endswith("/%s:%d)" % (BASE, L[tag]))


def check(report, replays):
    doc = json.load(open(report))

    # (count metric, kind) of every leaf: kernels by name, memsets at their placeholder
    leaves = []
    stack = [(doc["tree"], [])]
    while stack:
        n, anc = stack.pop()
        kind, lab = n.get("kind"), n.get("label") or ""
        m = n.get("metrics", {})
        if kind == "kernel":
            c = (m.get("GKER:COUNT") or {}).get("excl") or 0
            if c:
                leaves.append(("kernel", lab, c, anc))
        elif kind == "placeholder" and lab == "<gpu memset>":
            c = (m.get("GMSET:COUNT") or {}).get("excl") or 0
            if c:
                leaves.append(("memset", lab, c, anc))
        for ch in n.get("children", []):
            stack.append((ch, anc + [(kind, lab)]))

    def split(anc):
        """(Python frames above the innermost <graph replay>, below it), or None."""
        idx = [i for i, (k, lab) in enumerate(anc) if k == "placeholder" and lab == "<graph replay>"]
        if not idx:
            return None
        i = idx[-1]
        return ([lab for k, lab in anc[:i] if k == "python"], [lab for k, lab in anc[i + 1:] if k == "python"])

    fails = []
    print("counts per capture-time Python frame (innermost frame of this script below <graph replay>):")
    per = {}
    for what, lab, c, anc in leaves:
        s = split(anc)
        if s is None:
            continue
        site = next((x for x in reversed(s[0]) if BASE in x), "?")
        mine = [x for x in s[1] if BASE in x][-2:]
        cap = " > ".join(mine) if mine else "<no capture-time frame of %s>" % BASE
        per[(site, cap, what)] = per.get((site, cap, what), 0) + c
    for (site, cap, what), c in sorted(per.items()):
        print("  %s > <graph replay> > %s: %s %d" % (site, cap, what, c))

    # (1) torch
    def under(anc, fn, tag):
        return any(k == "python" and pyframe(lab, fn, tag) for k, lab in anc)

    tot_graph = 0
    for tag in ("fc1", "act", "fc2", "norm"):
        g = e = 0
        for what, lab, c, anc in leaves:
            if what != "kernel":
                continue
            s = split(anc)
            line_ok = any(pyframe(x, "Net.forward", tag) for x in (s[1] if s else []))
            if s and any(pyframe(x, "replay", "replay") for x in s[0]) and line_ok and \
                    any(qual(x, "capture") for x in s[1]):
                g += c
            if not s and under(anc, "Net.forward", tag) and \
                    any(k == "python" and qual(lab2, "eager_ref") for k, lab2 in anc):
                e += c
        tot_graph += g
        print("(1) Net.forward line %d (%s): below <graph replay> %d = %d x %g; eager_ref ran %d there (%s)" %
              (L[tag], tag, g, replays, g / replays, e, "the same per replay" if g == replays * e else
               "differs: the library may pick other kernels under capture"))
        if not g or g % replays:
            fails.append("torch %s: %d kernels below <graph replay>, not a positive multiple of %d" % (tag, g, replays))
    below_replay = [(what, c, anc) for what, lab, c, anc in leaves if what == "kernel" and
                    any(k == "python" and pyframe(lab2, "replay", "replay") for k, lab2 in anc)]
    all_replay = sum(c for w, c, a in below_replay)
    in_graph = sum(c for w, c, a in below_replay if split(a))
    print("(1) kernels below replay(): %d, below its <graph replay>: %d, under a capture-time Net.forward line: %d" %
          (all_replay, in_graph, tot_graph))
    if not (all_replay == in_graph == tot_graph and all_replay % replays == 0 and all_replay):
        fails.append("torch: %d kernels below replay(), %d below <graph replay>, %d placed by layer" %
                     (all_replay, in_graph, tot_graph))

    # (2), (3) explicit API
    def count(site_fn, site_tag, what, name, fn, tag):
        n = 0
        for w, lab, c, anc in leaves:
            s = split(anc)
            if w != what or not s or (name and name not in lab):
                continue
            if any(pyframe(x, site_fn, site_tag) for x in s[0]) and any(pyframe(x, fn, tag) for x in s[1]):
                n += c
        return n

    for what, name, fn in (("kernel", "gpd_graph_ka", "add_a"), ("kernel", "gpd_graph_kb", "add_b"),
                           ("memset", None, "add_memset")):
        n = count("replay_explicit", "replay_explicit", what, name, fn, fn)
        print("(2) replay_explicit > <graph replay> > %s: %s %d (want %d)" % (fn, name or what, n, replays))
        if n != replays:
            fails.append("explicit %s: %d != %d" % (fn, n, replays))
        n1 = count("replay_updated", "replay_updated", what, name, fn, fn)
        n2 = count("replay_updated", "replay_updated", what, name, fn + "2", fn + "2")
        print("(3) after cuGraphExecUpdate: replay_updated > <graph replay> > %s %d, > %s2 %d (want %d in all)" %
              (fn, n1, fn, n2, UPDATED))
        if n1 + n2 != UPDATED:
            fails.append("updated %s: %d + %d != %d" % (fn, n1, n2, UPDATED))
    print("FAIL: " + "; ".join(fails) if fails else "PASS")
    return 1 if fails else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "run-duty":
        torch_duty_part(float(sys.argv[2]))
        return 0
    if len(sys.argv) >= 4 and sys.argv[1] == "check-duty":
        return check_duty(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 2 and sys.argv[1] == "check":
        return check(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 50)
    replays = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    torch_part(replays)
    explicit_part(replays)
    return 0


if __name__ == "__main__":
    sys.exit(main())
