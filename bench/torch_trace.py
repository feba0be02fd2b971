"""Records a real torch.profiler trace on the device (CUDA): a small MLP and convolution
trained for a few steps under `torch.profiler.profile` (CPU and CUDA activities, shapes), exported
with `export_chrome_trace` — the file issue 46 asks to commit as a real input.

    python3 bench/torch_trace.py --out torch_profiler.json [--steps 3]
"""
import argparse

import torch
from torch.profiler import ProfilerActivity, profile, schedule


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(8),
        torch.nn.Flatten(), torch.nn.Linear(16 * 64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10),
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    sched = schedule(wait=1, warmup=1, active=a.steps)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                 record_shapes=True) as prof:
        for _ in range(2 + a.steps):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            prof.step()
    prof.export_chrome_trace(a.out)


if __name__ == "__main__":
    main()
