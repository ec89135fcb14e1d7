"""A small model for the record tests: two layers of Linear (with and without bias) and a
matmul written in a forward, a batched matmul (skipped), and a bf16 head."""

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(64, 64, bias=False)
        self.o = nn.Linear(64, 64, bias=False)
        self.up = nn.Linear(64, 256)
        self.mix = nn.Parameter(torch.randn(64, 32))

    def forward(self, x):
        y = self.o(self.q(x))
        y = torch.nn.functional.gelu(self.up(y))
        scores = torch.bmm(x, x.transpose(1, 2))  # batched: not a GEMM the library takes
        return x @ self.mix, scores, y


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(64, 10).to(torch.bfloat16)

    def forward(self, x):
        for layer in self.layers:
            layer(x)
        return self.head(x.to(torch.bfloat16))


def workloads():
    """(model, inputs) at two batch sizes, as `python -m tilesmith record` takes them."""
    model = Small()
    return [(model, (torch.randn(2, 8, 64),)), (model, (torch.randn(1, 64, 64),))]
