"""The GPU peer of `tpl loss`: the exact L(alpha) by brute force in PyTorch, beside the built
binary, in one run.

For every ordered pair of rows (q, d) the best subset S of cells is a prefix of the cells with
q_i > d_i sorted by q_i/d_i decreasing (TKDE Theorem 5), so L(alpha) is the largest
log((1 + x q_S) / (1 + x d_S)), x = e^alpha - 1, over those prefixes: every row pair, a sort,
prefix sums, in float64, `--block` rows q at a time against all rows d. No pruning at all.

    python benches/peers/torch_loss.py --matrix M.npy --alpha 1 [--tpl target/release/tpl]
        [--device cuda] [--runs 5] [--block 8]

M is a dense matrix as `.npy` or text (`benches` writes both: `gen_matrix grid 64 M.npy`,
`gen_matrix dense 2048 M.npy`). Prints the median time of the PyTorch computation alone (the
matrix already on the device, synchronised), the median of `tpl loss`'s whole process, both
values and their relative difference; exits 1 when they differ by more than 1e-9. Needs
`torch` (CUDA for `--device cuda`) and `numpy`; run on demand, not in CI.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np


def read_matrix(path):
    if path.lower().endswith(".npy"):
        return np.load(path)
    return np.loadtxt(path, delimiter=",", comments="#", ndmin=2)


def loss_torch(torch, p, alpha, block):
    """Exact L(alpha) of the row-stochastic matrix `p` (a float64 tensor on its device)."""
    n = p.shape[0]
    x = torch.special.expm1(torch.tensor(alpha, dtype=torch.float64, device=p.device))
    best = torch.zeros((), dtype=torch.float64, device=p.device)
    d = p.unsqueeze(0)  # (1, n, n)
    for start in range(0, n, block):
        q = p[start:start + block].unsqueeze(1)  # (b, 1, n)
        gains = q > d
        ratio = torch.where(gains, q / d, torch.full((), -torch.inf, dtype=torch.float64, device=p.device))
        order = torch.argsort(ratio, dim=2, descending=True, stable=True)
        kept = torch.gather(gains.expand(-1, n, -1), 2, order)
        gap = torch.gather((q - d).expand(-1, n, -1), 2, order)
        base = torch.gather(d.expand(q.shape[0], -1, -1), 2, order)
        delta = torch.cumsum(torch.where(kept, gap, 0.0), dim=2)
        d_s = torch.cumsum(torch.where(kept, base, 0.0), dim=2)
        values = torch.where(kept, torch.log1p(x * delta / (1.0 + x * d_s)), 0.0)
        best = torch.maximum(best, values.max())
    return float(best)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", required=True)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--tpl", default="target/release/tpl")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--block", type=int, default=8, help="rows q per chunk (memory: block·n² doubles, several times)")
    args = parser.parse_args()

    import torch

    device = torch.device(args.device)
    p = torch.tensor(read_matrix(args.matrix), dtype=torch.float64, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    loss_torch(torch, p[: min(64, p.shape[0]), : min(64, p.shape[0])], args.alpha, args.block)  # warm-up
    peer, tpl = [], []
    value = reference = None
    for _ in range(args.runs):
        sync()
        started = time.perf_counter()
        value = loss_torch(torch, p, args.alpha, args.block)
        sync()
        peer.append(time.perf_counter() - started)
        started = time.perf_counter()
        out = subprocess.run(
            [args.tpl, "loss", "--matrix", args.matrix, "--alpha", repr(args.alpha), "--format", "json"],
            check=True, capture_output=True, text=True,
        )
        tpl.append(time.perf_counter() - started)
        reference = json.loads(out.stdout)["loss"][0]
    gap = abs(value - reference) / max(abs(reference), 1e-300)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"n = {p.shape[0]}, alpha = {args.alpha}, {args.runs} runs each")
    print(f"PyTorch brute force on {name}: {statistics.median(peer):.3f} s (median), L = {value!r}")
    print(f"tpl loss, whole process: {statistics.median(tpl):.3f} s (median), L = {reference!r}")
    print(f"relative difference {gap:.2e}")
    return 0 if gap <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
