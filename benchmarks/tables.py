"""Printing of the benchmark's results: the forward, backward, bandwidth and scaling tables and the
summary against the core targets (every number a median over the variant's samples)."""

import argparse
import os
from typing import Any

from runner import SCALING_THREADS, Variant
from specs import (
    BYTES_PER_ELEMENT,
    COMPUTE_BOUND,
    COPY_BYTES,
    GRAD_ATOL,
    GRAD_RTOL,
    KERNELS,
    MEMORY_BOUND,
    MODULE_KERNELS,
    TARGET_COPY_FRACTION,
    TARGET_LAUNCH_US,
    TARGET_PREPARED_US,
    TARGET_RATIO,
    TARGET_SCALING,
)

Variants = dict[str, Variant]
ROWS = [  # metric, label, unit, target
    ("import", "import + init", "s", ""),
    ("cold", f"cold compile, {MODULE_KERNELS} kernels", "s", "<=1/3 of warp fwd-only"),
    ("warm_wall", "warm start, process wall", "s", "<=0.3 s"),
    ("warm_in", "warm start, in-process", "s", ""),
    ("launch", "launch overhead", "µs", f"<={TARGET_LAUNCH_US:g} µs"),
    ("prepared", "prepared launch (cmd.launch())", "µs", f"<={TARGET_PREPARED_US:g} µs"),
    ("recorded", "launch recorded on a Tape", "µs", ""),
    ("backward_launch", "backward, per recorded launch", "µs", ""),
    *[(k, k, "ms", f"g/warp <={TARGET_RATIO}") for k in COMPUTE_BOUND],
    *[(k, k, "ms", f">={TARGET_COPY_FRACTION:.0%} of copy") for k in MEMORY_BOUND],
]


def num(x: float | None) -> str:
    return "-" if x is None else (f"{x:.3f}" if x < 100 else f"{x:.1f}")


def cell(v: Variant | None, metric: str) -> str:
    """A variant's median of metric as text: '-' when not measured, 'ERROR' when it failed."""
    if v is None:
        return "-"
    return "ERROR" if metric in v.errors else num(v.value(metric))


def ratio(a: Variant | None, b: Variant | None, metric: str) -> float | None:
    x, y = (a.value(metric) if a else None), (b.value(metric) if b else None)
    return x / y if x is not None and y else None


def kernel_label(name: str, sizes: dict[str, int]) -> str:
    return f"{name} {sizes[name]:,}" + (" (step)" if name == "cloth" else "")


def gbs(v: Variant | None, name: str, sizes: dict[str, int]) -> float | None:
    """GB/s reached by a memory-bound kernel: bytes read + written per launch / ms per launch."""
    ms = v.value(name) if v else None
    return BYTES_PER_ELEMENT[name] * sizes[name] / (ms * 1e-3) / 1e9 if ms else None


def verdict(
    metric: str, g: Variant | None, r: float | None, rf: float | None, frac: float | None
) -> str:
    """'met' / 'not met' against the row's target ('' when it cannot be judged)."""
    x = g.value(metric) if g else None
    checks = {
        "cold": (rf, 1 / 3),
        "warm_wall": (x, 0.3),
        "launch": (x, TARGET_LAUNCH_US),
        "prepared": (x, TARGET_PREPARED_US),
        **{k: (r, TARGET_RATIO) for k in COMPUTE_BOUND},
    }
    if metric in MEMORY_BOUND:
        return "" if frac is None else ("met" if frac >= TARGET_COPY_FRACTION else "not met")
    value, limit = checks.get(metric, (None, 0.0))
    return "" if value is None else ("met" if value <= limit else "not met")


def report(
    variants: Variants, args: argparse.Namespace, sizes: dict[str, int], copy_gbs: float | None
) -> None:
    """The forward table: start-up, compile, launch overhead and throughput."""
    g, w, wf = (variants.get(n) for n in ("gradloom", "warp", "warp-fwd"))
    threads = args.threads or f"default (GRADLOOM_NUM_THREADS unset, {os.cpu_count()} cores)"
    reported = g.extra.get("num_threads") if g else None
    threads = f"{threads}, wp.config.num_threads={reported}" if reported else threads
    print()
    print(
        f"gradloom vs warp-lang {w.extra.get('version', '?') if w else '(not run)'}, CPU, "
        f"gradloom threads={threads}; medians; ratio = gradloom time / warp time"
    )
    fmt = "{:<40}{:>10}{:>10}{:>10}{:>9}{:>9}  {:<30}{}"
    print(fmt.format("", "gradloom", "warp", "warp", "g/warp", "g/warp", "target", ""))
    print(fmt.format("", "", "fwd+bwd", "fwd-only", "", "fwd-only", "", ""))
    for metric, label, unit, target in ROWS:
        if metric in KERNELS:
            label = kernel_label(metric, sizes)
        r, rf = ratio(g, w, metric), ratio(g, wf, metric)
        b = gbs(g, metric, sizes) if metric in MEMORY_BOUND else None
        frac = b / copy_gbs if b and copy_gbs else None
        mark = verdict(metric, g, r, rf, frac)
        cols = [cell(g, metric), cell(w, metric), cell(wf, metric)]
        cols += [f"{r:.2f}" if r else "-", f"{rf:.2f}" if rf else "-"]
        print(
            fmt.format(
                f"{label} [{unit}]", *cols, f"{target} {mark}".strip(), output_note(g, w, metric)
            )
        )
    print(f"python startup alone (python -c pass): {args.startup_s:.3f} s")
    for v in variants.values():
        for metric, err in v.errors.items():
            print(f"error [{v.name}] {metric}: {err}")


def output_note(g: Variant | None, w: Variant | None, metric: str) -> str:
    """Do both sides' checksums (sum of |output| after one launch) agree to 1e-3 relative?"""
    if metric not in KERNELS or not g or not w:
        return ""
    cg, cw = g.extra.get("checksum", {}).get(metric), w.extra.get("checksum", {}).get(metric)
    if cg is None or cw is None:
        return ""
    rel = abs(cg - cw) / max(abs(cw), 1e-30)
    return "  outputs match" if rel < 1e-3 else f"  OUTPUTS DIFFER (rel {rel:.1e})"


def report_backward(variants: Variants, sizes: dict[str, int], grads: dict[str, Any]) -> None:
    """The backward table (tape forward, tape.backward, their sum) and the gradient check."""
    g, w = variants.get("gradloom"), variants.get("warp")

    def r(metric: str) -> str:
        x = ratio(g, w, metric)
        return f"{x:.2f}" if x else "-"

    print()
    print(
        "backward: the forward launches recorded on a new wp.Tape, then tape.backward (seeded "
        "outputs, or loss=...); ms, medians over the repeats; ratio = gradloom / warp"
    )
    fmt = "{:<26}{:>9}{:>9}{:>7}  {:>9}{:>9}{:>7}  {:>9}{:>9}{:>7}  {:<16}{}"
    print(fmt.format("", "backward", "", "", "fwd+bwd", "", "", "tape fwd", "", "", "target", ""))
    head = ["gradloom", "warp", "g/w"] * 3
    print(fmt.format("kernel", *head, f"fwd+bwd <={TARGET_RATIO}", "input gradients"))
    for name in KERNELS:
        x = ratio(g, w, f"fwdbwd:{name}")
        mark = ""
        if x is not None and name in COMPUTE_BOUND:
            mark = "met" if x <= TARGET_RATIO else "not met"
        checks = grads.get(name, {})
        agree = ", ".join(f"{k} {'match' if c['match'] else 'DIFFER'}" for k, c in checks.items())
        cols = [
            c
            for m in ("bwd", "fwdbwd", "fwd")
            for c in (cell(g, f"{m}:{name}"), cell(w, f"{m}:{name}"), r(f"{m}:{name}"))
        ]
        print(fmt.format(kernel_label(name, sizes), *cols, mark, agree or "-"))
    report_grads(grads)


def report_grads(grads: dict[str, Any]) -> None:
    """One line per compared input gradient, with the float64 finite difference at the worst."""
    if not grads:
        return
    print(
        f"gradients: agree when |g - w| <= {GRAD_RTOL:g}|w| + {GRAD_ATOL:g} max|w| everywhere; "
        "at the element where they differ most, a float64 central difference (FD) of the loss"
    )
    for name, checks in grads.items():
        for key, c in checks.items():
            print(
                f"  {name}.{key} ({c['elements']:,} values): "
                f"{'match' if c['match'] else 'DIFFER'}, max |g - w| = "
                f"{c['max_abs_diff']:.3g} (max |w| = {c['max_abs_warp']:.3g}); at "
                f"[{c['worst_index']}]: gradloom {c['gradloom']:.7g}, warp {c['warp']:.7g}, "
                f"FD64 {c['fd64']:.7g}"
            )


def bw_text(x: float | None, v: Variant | None, name: str, pct: bool) -> str:
    if v is not None and name in v.errors:
        return "ERROR"
    return "-" if x is None else (f"{x:.0%}" if pct else f"{x:.2f}")


def report_bandwidth(variants: Variants, sizes: dict[str, int], copy_gbs: float | None) -> None:
    """GB/s of the memory-bound kernels against numpy's copy bandwidth."""
    g, w = variants.get("gradloom"), variants.get("warp")
    copy = f"{copy_gbs:.2f} GB/s" if copy_gbs else "ERROR"
    print()
    print(
        "memory-bound kernels: GB/s = (bytes read + written per launch) / (ms per launch); "
        f"numpy copy (np.copyto, 2 x {COPY_BYTES // 2**20} MiB float32, read + write): {copy}"
    )
    fmt = "{:<26}{:>10}{:>10}{:>10}{:>10}{:>10}  {}"
    print(fmt.format("kernel", "MB/launch", "gradloom", "warp", "gradloom", "warp", "target"))
    print(fmt.format("", "", "GB/s", "GB/s", "/ copy", "/ copy", ""))
    for name in MEMORY_BOUND:
        mb = BYTES_PER_ELEMENT[name] * sizes[name] / 1e6
        bg, bw = gbs(g, name, sizes), gbs(w, name, sizes)
        fg = bg / copy_gbs if bg and copy_gbs else None
        fw = bw / copy_gbs if bw and copy_gbs else None
        mark = "" if fg is None else ("met" if fg >= TARGET_COPY_FRACTION else "not met")

        cols = [
            bw_text(x, v, name, pct)
            for x, v, pct in ((bg, g, False), (bw, w, False), (fg, g, True), (fw, w, True))
        ]
        print(
            fmt.format(
                kernel_label(name, sizes),
                f"{mb:.1f}",
                *cols,
                f">={TARGET_COPY_FRACTION:.0%} {mark}".strip(),
            )
        )


def scaling(g: Variant | None, name: str) -> float | None:
    """gradloom's forward speed-up from 1 to 2 threads (time with 1 / time with 2)."""
    t1, t2 = (g.value(f"t{n}:{name}") if g else None for n in SCALING_THREADS)
    return t1 / t2 if t1 and t2 else None


def report_scaling(variants: Variants, sizes: dict[str, int]) -> None:
    """gradloom's forward time with GRADLOOM_NUM_THREADS=1 and =2, every kernel (the target
    applies to the compute-bound ones)."""
    g = variants.get("gradloom")
    if g is None:
        return
    print()
    print("per thread count (gradloom forward, ms per launch; speed-up = t1 / t2)")
    fmt = "{:<26}{:>12}{:>12}{:>10}  {}"
    print(fmt.format("kernel", "1 thread", "2 threads", "speed-up", "target"))
    for name in KERNELS:
        s = scaling(g, name)
        mark = "" if s is None else ("met" if s >= TARGET_SCALING else "not met")
        target = f">={TARGET_SCALING}x {mark}".strip() if name in COMPUTE_BOUND else ""
        cols = [cell(g, f"t{n}:{name}") for n in SCALING_THREADS]
        print(fmt.format(kernel_label(name, sizes), *cols, f"{s:.2f}x" if s else "-", target))


def report_busy(variants: Variants, sizes: dict[str, int]) -> None:
    """Forward times while another process keeps one core busy: gradloom on 1 and 2 threads
    (2 / 1 should stay <= 1.10: a split launch never loses much to the serial path) and warp."""
    g, w = variants.get("gradloom"), variants.get("warp")
    if not any(v and any(m.startswith("busy:") for m in v.samples) for v in (g, w)):
        return
    print()
    print("one core busy (forward, ms per launch; another process spins on a core)")
    fmt = "{:<26}{:>12}{:>12}{:>8}{:>12}{:>8}"
    print(fmt.format("kernel", "gl 1 thr", "gl 2 thr", "2 / 1", "warp", "g2/warp"))
    for name in KERNELS:
        t1, t2 = (f"busy:t{n}:{name}" for n in SCALING_THREADS)
        r21 = (g.value(t2) or 0) / (g.value(t1) or 1) if g and g.value(t1) else None
        rw = (g.value(t2) / w.value(f"busy:{name}")
              if g and w and g.value(t2) and w.value(f"busy:{name}") else None)
        print(fmt.format(kernel_label(name, sizes), cell(g, t1), cell(g, t2),
                         f"{r21:.2f}" if r21 else "-", cell(w, f"busy:{name}"),
                         f"{rw:.2f}" if rw else "-"))


Row = tuple[str, str, str, bool | None]  # what, measured, target, passed (None: not measured)


def target_row(
    what: str, x: float | None, text: str, limit: float, at_most: bool, failed: bool = False
) -> Row:
    """One "Done when" row: x against limit (x <= limit when at_most, else x >= limit); a
    gradloom measurement that failed (failed) is a FAIL, one not made is n/a."""
    if what.endswith("copy GB/s"):
        need = f">= {limit:.0%}"
    else:
        need = f"{'<=' if at_most else '>='} {limit:g}" + ("x" if text.endswith("x") else "")
    if x is None:
        return (what, "ERROR", need, False) if failed else (what, "-", need, None)
    return what, text, need, (x <= limit) if at_most else (x >= limit)


def done_when_rows(
    variants: Variants, sizes: dict[str, int], copy_gbs: float | None, grads: dict[str, Any]
) -> list[Row]:
    """Every core target, then the correctness line."""
    g, w = variants.get("gradloom"), variants.get("warp")
    rows = []

    def failed(*metrics: str) -> bool:
        return g is not None and any(m in g.errors for m in metrics)

    for prefix, label in (("", "forward"), ("fwdbwd:", "forward + backward")):
        for name in COMPUTE_BOUND:
            r = ratio(g, w, prefix + name)
            what = f"{label} {name}: time gradloom / warp"
            bad = failed(prefix + name)
            rows.append(target_row(what, r, f"{r or 0:.3f}", TARGET_RATIO, True, bad))
    for name in MEMORY_BOUND:
        b = gbs(g, name, sizes)
        f = b / copy_gbs if b and copy_gbs else None
        text = f"{f or 0:.0%} ({b or 0:.1f} GB/s)"
        what = f"{name}: gradloom GB/s / numpy copy GB/s"
        rows.append(target_row(what, f, text, TARGET_COPY_FRACTION, False, failed(name)))
    for metric, what, limit in (
        ("launch", "launch overhead [µs]", TARGET_LAUNCH_US),
        ("prepared", "prepared launch, cmd.launch() [µs]", TARGET_PREPARED_US),
    ):
        x = g.value(metric) if g else None
        rows.append(target_row(what, x, f"{x or 0:.2f}", limit, True, failed(metric)))
    for name in COMPUTE_BOUND:
        s = scaling(g, name)
        what = f"{name}: speed-up 1 -> 2 threads"
        bad = failed(*(f"t{n}:{name}" for n in SCALING_THREADS))
        rows.append(target_row(what, s, f"{s or 0:.2f}x", TARGET_SCALING, False, bad))
    return [*rows, correctness_row(g, w, grads)]


def correctness_row(g: Variant | None, w: Variant | None, grads: dict[str, Any]) -> Row:
    """Do every kernel's output checksum and input gradients match Warp's (both sides ran)?"""
    what = "(correctness) outputs and input gradients match warp's"
    if g is None or w is None:
        return what, "-", "all", None
    grads_ok = set(grads) == set(KERNELS) and all(
        c["match"] for checks in grads.values() for c in checks.values()
    )
    notes = [output_note(g, w, k) for k in KERNELS]
    ok = grads_ok and all(n.strip() and "DIFFER" not in n for n in notes)
    return what, "all" if ok else "NOT ALL", "all", ok


def report_done_when(
    variants: Variants, sizes: dict[str, int], copy_gbs: float | None, grads: dict[str, Any]
) -> None:
    """The "Done when" summary: every target with the measured value and PASS / FAIL."""
    rows = done_when_rows(variants, sizes, copy_gbs, grads)
    print()
    print("Targets: gradloom at its default thread count unless --threads")
    fmt = "{:<56}{:>22}  {:<10}{}"
    print(fmt.format("target", "measured", "needs", ""))
    for what, measured, target, ok in rows:
        print(fmt.format(what, measured, target, "n/a" if ok is None else "PASS" if ok else "FAIL"))
    judged = [ok for *_, ok in rows if ok is not None]
    missing = len(rows) - len(judged)
    print(f"{sum(judged)} of {len(rows)} PASS" + (f" ({missing} not measured)" if missing else ""))
