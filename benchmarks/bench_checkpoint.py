"""Checkpointed rollouts: memory and time of a long rollout's gradient, full Tape against
`gradloom.checkpoint.rollout` (the √N default and a byte budget of 5% of the full tape's),
gradloom only (warp-lang has no checkpointing: its example does it by hand). Each variant runs
in a child process (its peak RSS is its own); prints medians of several runs, what the tape
held at its peak, and whether the gradients match the full tape's bit for bit (targets: memory
<= 5% of the full tape's, time <= 1.5x).

    python benchmarks/bench_checkpoint.py [--steps 10000] [--n 1024] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import gradloom as wp
from gradloom import checkpoint


@wp.kernel
def spring_forces(x: wp.array(dtype=wp.vec3), rest: float, stiffness: wp.array(dtype=float),
                  f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    n = x.shape[0]
    acc = wp.vec3(0.0, -9.8, 0.0)
    if i > 0:
        d = x[i] - x[i - 1]
        acc = acc - stiffness[i] * (wp.length(d) - rest) * wp.normalize(d)
    if i < n - 1:
        d = x[i + 1] - x[i]
        acc = acc + stiffness[i + 1] * (wp.length(d) - rest) * wp.normalize(d)
    f[i] = acc


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
              f: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    if i > 0:  # particle 0 is pinned
        v[i] = v[i] * 0.999 + dt * f[i]
        x[i] = x[i] + dt * v[i]


@wp.kernel
def tip_height(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    if i == x.shape[0] - 1:
        out[0] = x[i][1] * x[i][1]


class Chain:
    def __init__(self, n: int) -> None:
        pos = np.zeros((n, 3), np.float32)
        pos[:, 0] = np.arange(n, dtype=np.float32) * 0.01
        self.n = n
        self.x0 = wp.array(pos, dtype=wp.vec3, requires_grad=True)
        self.k = wp.array(np.full(n, 200.0, np.float32), requires_grad=True)
        self.x = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
        self.v = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
        self.f = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
        self.loss = wp.zeros(1, dtype=float, requires_grad=True)

    def step(self, i: int) -> None:
        wp.launch(spring_forces, self.n, inputs=[self.x, 0.01, self.k], outputs=[self.f])
        wp.launch(integrate, self.n, inputs=[self.x, self.v, self.f, 1e-4])


def gradient(chain: Chain, steps: int, variant: str, budget: int) -> tuple[int, wp.Tape]:
    """One forward + backward; the most bytes the tape held at once."""
    tape, record = wp.Tape(), None
    with tape:
        wp.copy(chain.x, chain.x0)
        chain.v.zero_()
        if variant == "full":
            for i in range(steps):
                chain.step(i)
        elif variant == "sqrt":
            record = checkpoint.rollout(chain.step, steps, [chain.x, chain.v])
        else:
            record = checkpoint.rollout(chain.step, steps, [chain.x, chain.v], budget=budget)
        wp.launch(tip_height, chain.n, inputs=[chain.x], outputs=[chain.loss])
    held = tape.memory().total
    outside = held - (record.memory().total if record is not None else 0)
    tape.backward(loss=chain.loss)
    if record is not None:  # the rollout's peak (its backward included), beside the rest
        held = max(held, outside + record.peak)
    return held, tape


def child(args: argparse.Namespace) -> None:
    chain = Chain(args.n)
    gradient(chain, 20, args.variant, args.budget)  # compile, warm up
    times, held = [], 0
    for _ in range(args.runs):
        chain.k.grad.zero_()
        chain.x0.grad.zero_()
        t0 = time.perf_counter()
        held, tape = gradient(chain, args.steps, args.variant, args.budget)
        times.append(time.perf_counter() - t0)
        del tape
    np.savez(args.out, x0=chain.x0.grad.numpy(), k=chain.k.grad.numpy(),
             loss=chain.loss.numpy())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"ms": statistics.median(times) * 1e3, "held": held, "rss": rss}))


def run_child(variant: str, args: argparse.Namespace, out: str, budget: int) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", "--variant", variant, "--steps",
           str(args.steps), "--n", str(args.n), "--runs", str(args.runs), "--out", out,
           "--budget", str(budget)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--variant", default="full")
    parser.add_argument("--budget", type=int, default=0)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        full = run_child("full", args, os.path.join(tmp, "full.npz"), 0)
        ref = np.load(os.path.join(tmp, "full.npz"))
        print(f"rollout of {args.steps} steps, {args.n} particles, {args.runs} runs (median)")
        print(f"{'variant':>14} {'ms':>10} {'time':>6} {'tape held':>12} {'memory':>7} "
              f"{'peak RSS':>10} {'bits':>5}")
        _row("full tape", full, full, True)
        budget = int(full["held"] * 0.05)
        for variant, label in (("sqrt", "sqrt(N)"), ("budget", "budget 5%")):
            out = os.path.join(tmp, f"{variant}.npz")
            got = run_child(variant, args, out, budget)
            same = all(np.array_equal(ref[k], np.load(out)[k]) for k in ("x0", "k", "loss"))
            _row(label, got, full, same)


def _row(label: str, got: dict[str, float], full: dict[str, float], same: bool) -> None:
    print(f"{label:>14} {got['ms']:10.1f} {got['ms'] / full['ms']:5.2f}x "
          f"{got['held'] / 2**20:10.2f}MB {got['held'] / full['held']:6.2%} "
          f"{got['rss'] / 2**20:8.0f}MB {'yes' if same else 'NO':>5}")


if __name__ == "__main__":
    main()
