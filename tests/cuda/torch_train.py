"""torch_train.py - a real PyTorch workload for gpuprof on a GPU: a few
training steps of a small CNN + MLP on random CIFAR-sized data (CUDA).

Prints "torch_steps_s <seconds>" for the timed steps (after warm-up) so the
wall time can be compared with and without gpuprof, and "torch_steady"
with the per-step times of the same window (median, 10th and 90th
percentile, mean, in microseconds: the host's time between one step's
start and the next, which is the step time of a launch-bound loop in its
steady state; the window is synchronized at both ends only).  With
TORCH_T0=<unix s> in the environment (the driver's clock just before it
started the process) it prints "torch_startup_s" too: seconds from T0
until torch was imported, until the model was on the GPU (CUDA
initialized), and until the warm-up ended; process start-up is reported
apart from the steady state.  With TORCH_BLOCK=N it also prints
"block <step> <unix time s> <s for the last N steps>" every N timed steps
(no synchronization added), to see a tracing window come and go in a
long run.

Turns (TORCH_TURNS=1, for tests/cuda/torch-turns.py): after the warm-up
it prints "ready <pid>" and then, for each line "go N" on stdin, runs N
steps synchronized at both ends and prints "turn <s> <median step s>"
("dump N": "dump <s> <us of each step>..."); "quit" or end of input ends
it.  Several such processes (bare, detached,
duty-cycled ...) then take turns on one GPU, so that the configurations
are compared a fraction of a second apart instead of a process apart.
Usage:
  python3 torch_train.py [steps] [warmup] [batch] [width]
batch (default 64) and width (channel multiplier, default 1) make the
kernels larger, so the run is less bound by launch cost.
"""
import os
import sys
import time

T_IMPORT0 = time.time()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

T_IMPORTED = time.time()
T_SETUP = [0.0, 0.0]  # unix s: setup() had the model on the GPU, warm-up ended
LAST_STEPS = []  # per-step s of the last run() (torch_steady)


def make_model(w=1):
    return nn.Sequential(
        nn.Conv2d(3, 32 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32 * w, 64 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * w * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10))


def train_step(model, opt, loss_fn, x, y):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


def setup(argv):
    """(steps, warmup, batch, width, dev, model, opt, loss_fn, xs, ys) from argv."""
    steps = int(argv[1]) if len(argv) > 1 else 50
    warmup = int(argv[2]) if len(argv) > 2 else 5
    batch = int(argv[3]) if len(argv) > 3 else 64
    width = int(argv[4]) if len(argv) > 4 else 1
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = make_model(width).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    xs = torch.randn(batch, 3, 32, 32)        # host tensors: copied each step (H2D)
    ys = torch.randint(0, 10, (batch,))
    torch.cuda.synchronize()
    T_SETUP[0] = time.time()
    return steps, warmup, batch, width, dev, model, opt, loss_fn, xs, ys


def quantile(v, q):
    """The q-quantile of the sorted list v (linear between neighbours)."""
    x = q * (len(v) - 1)
    i = int(x)
    return v[i] if i + 1 >= len(v) else v[i] + (v[i + 1] - v[i]) * (x - i)


def timed_steps(steps, dev, model, opt, loss_fn, xs, ys, block=0):
    """steps synchronized at both ends: (wall s, final loss, per-step s).
    A step's time is from its start to the next one's (the last one's to
    the end of the window, after the synchronization)."""
    torch.cuda.synchronize()
    ts = [0.0] * (steps + 1)
    t0 = tb = ts[0] = time.perf_counter()
    loss = None
    for i in range(steps):
        loss = train_step(model, opt, loss_fn, xs.to(dev), ys.to(dev))
        t = ts[i + 1] = time.perf_counter()
        if block and (i + 1) % block == 0:
            print(f"block {i + 1} {time.time():.3f} {t - tb:.4f}", flush=True)
            tb = t
    final = loss.item() if loss is not None else 0.0  # D2H copy
    torch.cuda.synchronize()
    ts[steps] = time.perf_counter()
    return ts[steps] - t0, final, [b - a for a, b in zip(ts, ts[1:])]


def steady_line(per_step):
    """"torch_steady" (after it) with the per-step times (us): median p10 p90 mean."""
    v = sorted(per_step)
    if not v:
        return "torch_steady n=0"
    return "torch_steady median_us %.2f p10_us %.2f p90_us %.2f mean_us %.2f n=%d" % (
        quantile(v, 0.5) * 1e6, quantile(v, 0.1) * 1e6, quantile(v, 0.9) * 1e6, sum(v) / len(v) * 1e6, len(v))


def run(steps, warmup, batch, width, dev, model, opt, loss_fn, xs, ys):
    """Warm-up steps, then the timed steps: (wall s of the timed steps, final loss)."""
    for _ in range(warmup):
        train_step(model, opt, loss_fn, xs.to(dev), ys.to(dev))
    torch.cuda.synchronize()
    T_SETUP[1] = time.time()
    block = int(os.environ.get("TORCH_BLOCK", "0"))
    dt, final, LAST_STEPS[:] = timed_steps(steps, dev, model, opt, loss_fn, xs, ys, block)
    return dt, final


def turns(steps, warmup, batch, width, dev, model, opt, loss_fn, xs, ys):
    """TORCH_TURNS: warm up, say ready, then one synchronized run of N
    steps per "go N" line on stdin (see the module's docstring)."""
    for _ in range(warmup):
        train_step(model, opt, loss_fn, xs.to(dev), ys.to(dev))
    torch.cuda.synchronize()
    T_SETUP[1] = time.time()
    startup_line()
    print(f"ready {os.getpid()}", flush=True)
    while True:
        w = sys.stdin.readline().split()
        if not w or w[0] not in ("go", "dump"):
            break
        n = int(w[1]) if len(w) > 1 else steps
        dt, _, per = timed_steps(n, dev, model, opt, loss_fn, xs, ys)
        if w[0] == "dump":
            print("dump %.6f %s" % (dt, " ".join("%.1f" % (x * 1e6) for x in per)), flush=True)
            continue
        per.sort()
        print(f"turn {dt:.6f} {quantile(per, 0.5):.8f}", flush=True)


def startup_line():
    """"torch_startup_s" (TORCH_T0 set): s from T0 to torch imported, to
    CUDA up (model on the GPU), to the warm-up's end; else nothing."""
    t0 = os.environ.get("TORCH_T0")
    if t0:
        t0 = float(t0)
        print("torch_startup_s import %.3f cuda %.3f warm %.3f (python began %.3f)" % (
            T_IMPORTED - t0, T_SETUP[0] - t0, T_SETUP[1] - t0, T_IMPORT0 - t0), flush=True)


def main():
    a = setup(sys.argv)
    if os.environ.get("TORCH_TURNS", "0") != "0":
        turns(*a)
        return
    dt, final = run(*a)
    print(f"torch_steps_s {dt:.4f} steps={a[0]} batch={a[2]} width={a[3]} loss={final:.4f}")
    print(steady_line(LAST_STEPS))
    startup_line()


if __name__ == "__main__":
    main()
