"""Time gradloom against warp-lang on the same kernels, each side in its own fresh processes.

    python benchmarks/bench_core.py [--quick] [--only warp|gradloom] [--threads N]

The kernels are written once, as Warp-API source text (kernels_src.py), and written to a temporary
directory twice: once with `import warp as wp`, once with `import gradloom as wp`. Every
measurement runs in a child process (this script with --child, or a tiny `python -c` for the warm
start) so that the two frameworks never share a process. Forward: start-up, compile, launch
overhead (plain and prepared), throughput, bandwidth of the memory-bound kernels against numpy's
copy, gradloom on 1 and on 2 threads (also with one core kept busy by another process, warp
alongside); backward: forward + `tape.backward` on a `wp.Tape`, with a
check that both sides' input gradients agree. Ends with a summary against the targets in specs.py. See
benchmarks/README.md.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules below

from measure import TASKS, child_main
from runner import Bench, Variant, run_child
from specs import FULL, QUICK
from tables import (
    report,
    report_backward,
    report_bandwidth,
    report_busy,
    report_done_when,
    report_scaling,
)

HERE = Path(__file__).resolve().parent

USAGE = """\
Time gradloom against NVIDIA Warp (warp-lang) on the same kernels and print tables of the
results with the ratio gradloom / warp (below 1: gradloom is faster):

  - forward: import time, cold compile, warm start, launch overhead, throughput per kernel;
  - backward: forward + wp.Tape backward, checking that both give the same gradients;
  - bandwidth of the memory-bound kernels against numpy's copy;
  - gradloom per thread count (1 and 2 threads), every kernel;
  - the same with another process keeping one core busy, warp alongside.

Needs warp-lang for the Warp side (pip install ".[bench]"); with --only gradloom it does not.
A full run takes a few minutes, --quick about one. Each measurement runs in a fresh child
process. The JSON with every sample goes to benchmarks/results/. Temporary files (the kernel
modules and caches of the children) are deleted when the run ends, also on Ctrl-C.

examples:
  python benchmarks/bench_core.py --quick
  python benchmarks/bench_core.py --only gradloom --threads 2
"""


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=USAGE, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", choices=["warp", "gradloom"],
                    help="measure one framework only (no ratios)")
    ap.add_argument("--quick", action="store_true",
                    help="smaller sizes and fewer repeats (about a minute)")
    ap.add_argument("--threads", type=int, default=0, metavar="N",
                    help="worker threads gradloom may use (GRADLOOM_NUM_THREADS);\n"
                         "default: every core (Warp's CPU backend is serial)")
    ap.add_argument("--cold", type=int, metavar="N",
                    help="cold compiles timed per framework (default 3, --quick 2)")
    ap.add_argument("--warm", type=int, metavar="N",
                    help="warm starts timed per framework (default 5, --quick 3)")
    ap.add_argument("--runs", type=int, metavar="N",
                    help="timed runs per kernel (default 7, --quick 3)")
    ap.add_argument("--launches", type=int, metavar="N",
                    help="launches timed for the launch overhead (default 20000, --quick 5000)")
    ap.add_argument("--no-busy", action="store_true",
                    help="skip the busy-core table (throughput while another process keeps\n"
                         "one core busy)")
    ap.add_argument("--child", choices=TASKS, help=argparse.SUPPRESS)
    ap.add_argument("--kernels", help=argparse.SUPPRESS)
    ap.add_argument("--grads", help=argparse.SUPPRESS)
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    ap.add_argument("--kdir", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--no-backward", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    q = args.quick
    args.cold = args.cold or (2 if q else 3)
    args.warm = args.warm or (3 if q else 5)
    args.runs = args.runs or (3 if q else 7)
    args.launches = args.launches or (5000 if q else 20000)
    return args


def variants_for(args: argparse.Namespace) -> dict[str, Variant]:
    variants: dict[str, Variant] = {}
    if args.only != "warp":
        variants["gradloom"] = Variant("gradloom", "gradloom", backward=False, full=True)
    if args.only != "gradloom":
        variants["warp"] = Variant("warp", "warp", backward=True, full=True)
        variants["warp-fwd"] = Variant("warp-fwd", "warp", backward=False, full=False)
    return variants


def save(
    args: argparse.Namespace,
    sizes: dict[str, int],
    variants: dict[str, Variant],
    grads: dict[str, Any],
    copy: dict[str, Any] | None,
) -> Path:
    """Every sample, the gradient check and the machine, as JSON under benchmarks/results/."""
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"bench_core-{time.strftime('%Y%m%d-%H%M%S')}.json"
    meta = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "args": {k: v for k, v in vars(args).items() if not k.startswith(("child", "kdir"))},
        "sizes": sizes,
        "gradloom_env": {k: v for k, v in os.environ.items() if k.startswith("GRADLOOM_")},
    }
    doc = {
        "meta": meta,
        "copy_bandwidth": copy,
        "grad_check": grads,
        "variants": {
            n: {
                "backend": v.backend,
                "backward": v.backward,
                "median": {m: v.value(m) for m in v.samples},
                "samples": v.samples,
                "errors": v.errors,
                "extra": v.extra,
            }
            for n, v in variants.items()
        },
    }
    path.write_text(json.dumps(doc, indent=1))
    return path


def main() -> None:
    args = parse_args()
    if args.child:
        child_main(args)
        return
    startup = [run_child([sys.executable, "-c", "pass"], dict(os.environ))[2] for _ in range(5)]
    args.startup_s = statistics.median(startup)
    variants = variants_for(args)
    bench = Bench(args)
    # SIGTERM ends the run like Ctrl-C does, so the work directory is removed either way
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        run(args, variants, bench)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        sys.exit(130)
    finally:
        shutil.rmtree(bench.work, ignore_errors=True)


def run(args: argparse.Namespace, variants: dict[str, Variant], bench: Bench) -> None:
    """Every measurement, then the tables and the JSON file."""
    from host_data import compare_grads

    print(f"benchmark work dir: {bench.work}")
    copy, err = bench.copy_bandwidth()
    copy_gbs = copy["gbs"] if copy else None
    print(f"  numpy copy bandwidth: {f'{copy_gbs:.2f} GB/s' if copy_gbs else 'ERROR ' + err}")
    for v in variants.values():
        bench.measure(v)
    if not args.no_busy:
        bench.measure_busy(variants)
    sizes = QUICK if args.quick else FULL
    g, w = variants.get("gradloom"), variants.get("warp")
    grads = (
        compare_grads(g.extra.get("grads", {}), w.extra.get("grads", {}), sizes) if g and w else {}
    )
    report(variants, args, sizes, copy_gbs)
    report_backward(variants, sizes, grads)
    report_bandwidth(variants, sizes, copy_gbs)
    report_scaling(variants, sizes)
    report_busy(variants, sizes)
    report_done_when(variants, sizes, copy_gbs, grads)
    print(f"results written to {save(args, sizes, variants, grads, copy)}")


if __name__ == "__main__":
    main()
