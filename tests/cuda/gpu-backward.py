"""gpu-backward.py - public models nobody here wrote, trained a few steps,
for "how much GPU time sits under a Python frame of the user's script"
(docs/PYTHON.md "Work handed to a worker thread"; tests/cuda/
gpu-backward.sh records it and check-backward.py counts).

GPT-2 and BERT from `transformers` configs, torchvision's ResNet-18:
random weights (no download), random inputs, AdamW, loss.backward().
The backward kernels run on PyTorch's autograd threads; with backward
under forward they land under the Python frames of the forward operation
whose gradient they compute (train_step > the loss line > the model's
modules), else (handoff) under this script's train_step > loss.backward()
line.

Usage: python3 gpu-backward.py gpt2|bert|resnet18 [steps]   (default 10)
"""
import sys

import torch


def build(name, dev):
    """Model, a step's inputs and its loss function."""
    torch.manual_seed(0)
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=4)
        model = GPT2LMHeadModel(cfg)
        x = torch.randint(0, cfg.vocab_size, (8, 256), device=dev)
        return model, x, lambda m, x: m(input_ids=x, labels=x).loss  # L:gpt2_loss
    if name == "bert":
        from transformers import BertConfig, BertForMaskedLM
        cfg = BertConfig(num_hidden_layers=4)
        model = BertForMaskedLM(cfg)
        x = torch.randint(0, cfg.vocab_size, (8, 256), device=dev)
        return model, x, lambda m, x: m(input_ids=x, labels=x).loss  # L:bert_loss
    if name == "resnet18":
        import torchvision
        model = torchvision.models.resnet18(weights=None, num_classes=1000)
        x = torch.randn(32, 3, 224, 224, device=dev)
        y = torch.randint(0, 1000, (32,), device=dev)
        return model, x, lambda m, x: torch.nn.functional.cross_entropy(m(x), y)  # L:resnet_loss
    raise SystemExit("unknown model %s" % name)


def train_step(model, opt, loss_fn, x):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model, x)  # L:fwd
    loss.backward()  # L:bwd
    opt.step()  # L:opt
    return loss


def main():
    name = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    dev = torch.device("cuda")
    model, x, loss_fn = build(name, dev)
    model = model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(steps):
        loss = train_step(model, opt, loss_fn, x)  # L:step
    torch.cuda.synchronize()
    print("model %s steps %d loss %.4f torch %s" % (name, steps, loss.item(), torch.__version__))


if __name__ == "__main__":
    main()
