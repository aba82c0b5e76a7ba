"""Child process of bench_peers.py: one framework, every case built once, timed on request.

    python benchmarks/peers_child.py --framework NAME --sizes JSON --out DIR [--threads N]

NAME is gradloom, warp, drjit or taichi. For each case (host_data.grad_data inputs, the same
float32 values in every framework) the child computes, on fresh inputs, the forward outputs and
the input gradients once and saves them to DIR as .npy files for the parent to check against
float64; then it builds the case that is timed, runs it once in each mode and works out how many
calls make one sample (>= MIN_SAMPLE_S of work). It prints one line MARK + JSON (files, first
call times, calls per sample, errors) and then answers commands read from stdin, one JSON object
per line: {"case": NAME, "mode": "fwd" | "fwdbwd"} -> MARK + {"ms": ms per call, "first_ms": ms}
(one sample: one call timed apart as first_ms, untimed calls up to WARM_S, then the
sample's calls back to back),
{"op": "quit"} -> exit.

A case offers `fwd()` (the forward launches, finished), `fwdbwd()` (forward and backward to the
input gradients, finished, ready to repeat), `outputs()` and `grads()` (numpy arrays after one
call of each on fresh inputs). gradloom and warp run the Warp-API kernels of kernels_src.py
(the very text bench_core.py times; backward through `wp.Tape`, as bench_core's backward
table); Dr.Jit and Taichi run peers_drjit.py and peers_taichi.py.
"""

import argparse
import gc
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from specs import MARK  # noqa: E402

MIN_SAMPLE_S = 0.02  # one sample runs a case for at least this long
#: untimed calls, for at least this long, between a sample's first call and its timed calls: the
#: framework that ran before may still be spinning its pool (Dr.Jit's threads spin for 20-30 ms
#: of CPU after a call), and the second core of this VM takes ~50 ms of work to reach full speed
#: (gradloom's integrate on 2 threads: 5.0 ms per call, falling to 3.0 over 12 calls)
WARM_S = 0.06
# where each case's outputs are among the launch inputs of kernels_src.make_grad_case:
# output name -> (launch index, input index)
WP_OUTPUTS = {
    "saxpy": {"y": (0, 2)},
    "integrate": {"x": (0, 0), "v": (0, 1)},
    "nbody": {"acc": (0, 2)},
    "neo_hookean": {"energy": (0, 3)},
    "cloth": {"x_out": (1, 7)},
}


class WpCase:
    """A kernels_src GradCase run forward alone or forward + tape.backward (gradloom, warp)."""

    def __init__(self, wp: Any, k: Any, name: str, data: dict[str, Any]) -> None:
        self.wp, self.name, self.case = wp, name, k.make_grad_case(name, data)

    def fwd(self) -> None:
        for a in self.case.zero:
            a.zero_()
        for kernel, dim, inputs in self.case.launches:
            self.wp.launch(kernel, dim=dim, inputs=inputs, device="cpu")
        self.wp.synchronize()

    def fwdbwd(self) -> None:
        tape = self.case.forward_on_tape()
        self.case.backward(tape)
        self.wp.synchronize()
        tape.zero()  # the gradients, for the next call (as bench_core's backward)

    def outputs(self) -> dict[str, Any]:
        self.fwd()
        where = WP_OUTPUTS[self.name]
        return {k: self.case.launches[i][2][j].numpy() for k, (i, j) in where.items()}

    def grads(self) -> dict[str, Any]:
        tape = self.case.forward_on_tape()
        self.case.backward(tape)
        self.wp.synchronize()
        out = {k: a.grad.numpy().copy() for k, a in self.case.wrt.items()}
        tape.reset()  # a gradloom tape that stays alive keeps snapshotting what it watched
        return out


class WpFramework:
    """gradloom or warp, the kernels of kernels_src.py written out for it."""

    def __init__(self, backend: str, threads: int | None) -> None:
        from kernels_src import KERNELS_SRC
        from measure import setup_code

        work = Path(tempfile.mkdtemp(prefix=f"gl-peers-{backend}-"))
        (work / "bench_kernels.py").write_text(KERNELS_SRC.replace("__BACKEND__", backend))
        ns: dict[str, Any] = {}
        exec(setup_code(backend, str(work / "cache"), True), ns)
        self.wp = ns["wp"]
        if threads and backend == "gradloom":
            self.wp.config.num_threads = threads
        sys.path.insert(0, str(work))
        import bench_kernels  # type: ignore[import-not-found]  # written above

        self.k = bench_kernels
        self.version = str(self.wp.__version__)

    def make(self, name: str, data: dict[str, Any]) -> WpCase:
        return WpCase(self.wp, self.k, name, data)


class PeerFramework:
    """Dr.Jit or Taichi: a module with setup(threads) -> version and make(name, data)."""

    def __init__(self, module: str, threads: int | None) -> None:
        import importlib

        self.mod = importlib.import_module(module)
        self.version = self.mod.setup(threads)

    def make(self, name: str, data: dict[str, Any]) -> Any:
        return self.mod.make(name, data)


def framework(name: str, threads: int | None) -> Any:
    if name in ("gradloom", "warp"):
        return WpFramework(name, threads)
    return PeerFramework({"drjit": "peers_drjit", "taichi": "peers_taichi"}[name], threads)


def prepare(fw: Any, name: str, n: int, out: Path) -> tuple[Any, dict[str, Any]]:
    """Save the checked results of case `name`, then build the timed case; (case, info)."""
    import numpy as np
    from host_data import grad_data

    data = grad_data(name, n)
    info: dict[str, Any] = {"files": {}, "first_s": {}, "calls": {}}
    for mode, method in (("fwd", "outputs"), ("fwdbwd", "grads")):
        t = time.perf_counter()
        try:
            arrays = getattr(fw.make(name, data), method)()
        except Exception as e:
            info.setdefault("errors", {})[mode] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
            continue
        info["first_s"][mode] = time.perf_counter() - t  # the first call compiles
        for key, arr in arrays.items():
            path = out / f"{name}-{mode}-{key}.npy"
            np.save(path, np.asarray(arr))
            info["files"].setdefault(mode, {})[key] = str(path)
    gc.collect()  # the checked cases' arrays and tapes, before the timed case exists
    case = fw.make(name, data)
    for mode in info["first_s"]:
        fn = getattr(case, mode)
        fn()
        t = time.perf_counter()
        fn()
        info["calls"][mode] = max(1, round(MIN_SAMPLE_S / max(time.perf_counter() - t, 1e-6)))
    return case, info


def serve(cases: dict[str, Any], infos: dict[str, Any]) -> None:
    """Answer timing commands from stdin until {"op": "quit"} or end of input."""
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("op") == "quit":
            return
        fn = getattr(cases[cmd["case"]], cmd["mode"])
        calls = infos[cmd["case"]]["calls"][cmd["mode"]]
        t = time.perf_counter()
        fn()  # not in the sample: the other cases ran since this one's last (caches, allocator)
        first_ms = (time.perf_counter() - t) * 1e3
        while time.perf_counter() - t < WARM_S:
            fn()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        ms = (time.perf_counter() - t) / calls * 1e3
        print(MARK + json.dumps({"ms": ms, "first_ms": first_ms}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--framework", required=True, choices=["gradloom", "warp", "drjit", "taichi"])
    ap.add_argument("--sizes", required=True, help='JSON: {"saxpy": 1024, ...}')
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    t = time.perf_counter()
    fw = framework(args.framework, args.threads or None)
    ready: dict[str, Any] = {"import_s": time.perf_counter() - t, "version": fw.version}
    cases, infos = {}, {}
    for name, n in json.loads(args.sizes).items():
        try:
            cases[name], infos[name] = prepare(fw, name, n, Path(args.out))
        except Exception as e:
            infos[name] = {"errors": {"build": f"{type(e).__name__}: {e}"}, "calls": {}}
            traceback.print_exc()
    print(MARK + json.dumps({**ready, "cases": infos}), flush=True)
    serve(cases, infos)


if __name__ == "__main__":
    main()
