"""gpt2_train.py - a public model nobody here wrote, for gpuprof's cost
on a GPU: GPT-2 from a `transformers` config (GPT2LMHeadModel, random
weights, no download), trained with AdamW on random token ids.

Speaks the same protocol as torch_train.py (tests/cuda/torch-turns.py's
workers): without TORCH_TURNS it runs [steps] timed steps after [warmup]
and prints "torch_steps_s <s>" and "torch_steady ..."; with TORCH_TURNS=1
it warms up, prints "ready <pid>" and then runs N steps per "go N" line
("turn <wall s> <median step s>"), "dump N" ("dump <s> <us each>..."),
until "quit".  TORCH_T0 gives the "torch_startup_s" line as there.

Usage:
  python3 gpt2_train.py [steps] [warmup] [layers] [batch] [seq]
defaults 50 steps, 5 warm-up, 4 layers, batch 8, sequence 256 tokens
(n_embd 768, 12 heads, vocabulary 50257: GPT-2 small's widths).
"""
import os
import sys
import time

import torch_train  # the turns protocol and its helpers (same folder)

T0 = time.time()
import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

torch_train.T_IMPORTED = time.time()


def setup(argv):
    """Model, optimizer and one batch on the GPU, from argv."""
    steps = int(argv[1]) if len(argv) > 1 else 50
    warmup = int(argv[2]) if len(argv) > 2 else 5
    layers = int(argv[3]) if len(argv) > 3 else 4
    batch = int(argv[4]) if len(argv) > 4 else 8
    seq = int(argv[5]) if len(argv) > 5 else 256
    dev = torch.device("cuda")
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=layers, n_positions=max(1024, seq))
    model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq))  # host: copied each step (H2D)
    torch.cuda.synchronize()
    torch_train.T_SETUP[0] = time.time()
    return steps, warmup, model, opt, ids, dev


def gpt2_step(model, opt, loss_fn, x, y):
    """One training step (torch_train.train_step's signature: loss_fn
    and y are unused, the labels are the inputs)."""
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=x, labels=x).loss
    loss.backward()
    opt.step()
    return loss


def main():
    steps, warmup, model, opt, ids, dev = setup(sys.argv)
    torch_train.train_step = gpt2_step  # timed_steps and turns call it
    a = (steps, warmup, 0, 0, dev, model, opt, None, ids, ids)
    if os.environ.get("TORCH_TURNS", "0") != "0":
        torch_train.turns(*a)
        return
    dt, final = torch_train.run(*a)
    print(f"torch_steps_s {dt:.4f} steps={steps} model=gpt2 loss={final:.4f}")
    print(torch_train.steady_line(torch_train.LAST_STEPS))
    torch_train.startup_line()


if __name__ == "__main__":
    main()
