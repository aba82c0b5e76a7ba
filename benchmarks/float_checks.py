"""Is a fast answer right? Relative comparisons of results, and float64 references for the peers.

numpy only. `rel_error` / `compare` judge a result against a reference array by array (used for
the example steps, gradloom against warp-lang, and for every peer's outputs and gradients
against float64). `reference` gives, for each peers case, the float64 forward outputs and the
float64 gradients of the case's loss with respect to its inputs, computed analytically over
the whole arrays (tests/test_bench_checks.py holds them against central finite differences).
"""

from __future__ import annotations

from typing import Any

import numpy as np

EXAMPLE_RTOL = 1e-3  # example steps: max |a - b| <= EXAMPLE_RTOL * max |b|, per array
# peers: |a - r| <= PEER_RTOL |r| + PEER_ATOL max|r| elementwise (float32 against float64)
PEER_RTOL, PEER_ATOL = 1e-3, 1e-4


def rel_error(a: Any, ref: Any) -> float:
    """max |a - ref| / max |ref| (float64; inf when the shapes differ or a value is not finite)."""
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    if a.shape != ref.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    diff = np.abs(a - ref)
    if not np.all(np.isfinite(diff)):
        return float("inf")
    scale = float(np.abs(ref).max())
    return float(diff.max()) / scale if scale > 0 else float(diff.max())


def compare(got: dict[str, Any], ref: dict[str, Any], rtol: float = EXAMPLE_RTOL) -> dict[str, Any]:
    """Every array of `ref` against the same-named array of `got` with rel_error: {"ok": bool,
    "worst": name, "error": its rel_error, "missing": names absent from got}."""
    missing = sorted(set(ref) - set(got))
    errors = {k: rel_error(got[k], ref[k]) for k in ref if k in got}
    worst = max(errors, key=lambda k: errors[k]) if errors else ""
    err = errors.get(worst, 0.0)
    return {"ok": not missing and err <= rtol, "worst": worst, "error": err, "missing": missing}


def elementwise_ok(a: Any, ref: Any) -> tuple[bool, float]:
    """(every |a - r| <= PEER_RTOL |r| + PEER_ATOL max|r|, the largest |a - r| / that bound)."""
    a = np.asarray(a, np.float64).reshape(-1)
    r = np.asarray(ref, np.float64).reshape(-1)
    if a.shape != r.shape or not np.all(np.isfinite(a)):
        return False, float("inf")
    bound = PEER_RTOL * np.abs(r) + PEER_ATOL * (float(np.abs(r).max()) or 1.0)
    excess = float((np.abs(a - r) / bound).max()) if a.size else 0.0
    return excess <= 1.0, excess


# ---- float64 references of the peers cases (inputs: host_data.grad_data) ---------------------


def _f64(d: dict[str, Any]) -> dict[str, Any]:
    return {k: np.asarray(v, np.float64) if k not in ("si", "sj") else v for k, v in d.items()}


def reference(name: str, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(outputs, gradients) in float64 for one case; the loss is the one of bench_core's
    backward: Σ seed·output (saxpy, integrate, nbody), the energy (neo_hookean), Σ |x_out|²
    (cloth)."""
    d = _f64(data)
    return _REFERENCES[name](d)


def _saxpy(d: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    y = d["a"] * d["x"] + d["y"]
    return {"y": y}, {"x": d["a"] * d["seed_y"], "y": d["seed_y"]}


def _integrate(d: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    x1 = d["x"] + d["v"] * d["dt"]
    v1 = d["v"] + d["g"] * d["dt"]
    return {"x": x1, "v": v1}, {"x": d["seed_x"], "v": d["seed_x"] * d["dt"] + d["seed_v"]}


def _nbody(d: dict[str, Any], chunk: int = 256) -> tuple[dict[str, Any], dict[str, Any]]:
    """acc_i = Σ_j m_j d_ij r_ij⁻³ with d_ij = p_j - p_i, r² = |d|² + eps2; L = Σ_i s_i·acc_i."""
    pos, m, s, eps2 = d["pos"], d["mass"], d["seed_acc"], float(d["eps2"])
    n = len(pos)
    acc, g_pos, g_mass = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n)
    for lo in range(0, n, chunk):
        i = slice(lo, min(lo + chunk, n))
        dij = pos[None, :, :] - pos[i, None, :]  # (rows, n, 3)
        inv3 = (1.0 / np.sqrt((dij * dij).sum(axis=2) + eps2)) ** 3
        acc[i] = (dij * (m[None, :] * inv3)[:, :, None]).sum(axis=1)
        sd = (s[i, None, :] * dij).sum(axis=2)  # s_i·d_ij
        g_mass += (sd * inv3).sum(axis=0)
        # ∂(m_j s_i·d r⁻³)/∂d = m_j (s_i r⁻³ - 3 (s_i·d) r⁻⁵ d); d = p_j - p_i
        inv5 = inv3 ** (5.0 / 3.0)
        gd = m[None, :, None] * (s[i, None, :] * inv3[:, :, None] - 3.0 * (sd * inv5)[:, :, None] * dij)
        g_pos += gd.sum(axis=0)
        g_pos[i] -= gd.sum(axis=1)
    return {"acc": acc}, {"pos": g_pos, "mass": g_mass}


def _neo_hookean(d: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """E = Σ mu/2 (tr FᵀF - 3) - mu log J + lam/2 (log J)²; ∂e/∂F = mu F + (lam log J - mu) F⁻ᵀ."""
    F, mu, lam = d["F"], float(d["mu"]), float(d["lam"])
    log_j = np.log(np.linalg.det(F))
    e = 0.5 * mu * ((F * F).sum(axis=(1, 2)) - 3.0) - mu * log_j + 0.5 * lam * log_j**2
    f_inv_t = np.transpose(np.linalg.inv(F), (0, 2, 1))
    grad = mu * F + (lam * log_j - mu)[:, None, None] * f_inv_t
    return {"energy": np.array([e.sum()])}, {"F": grad}


def _cloth(d: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One cloth step (host_data.cloth_step64) and the adjoint of L = Σ |x_out|², by hand."""
    x, v, w, dt, ke, kd = d["x"], d["v"], d["inv_mass"][:, None], float(d["dt"]), d["ke"], d["kd"]
    si, sj, n = d["si"], d["sj"], len(x)
    delta = x[sj] - x[si]
    length = np.sqrt((delta * delta).sum(axis=1))
    u = delta / length[:, None]
    dv = v[sj] - v[si]
    c = ke * (length - d["rest"]) + kd * (dv * u).sum(axis=1)
    fs = u * c[:, None]
    f = _scatter(si, fs, n) - _scatter(sj, fs, n)
    v1 = v + (f * w + d["g"]) * dt
    x1 = x + v1 * dt
    g_x1 = 2.0 * x1  # L = Σ |x1|²
    g_v1 = g_x1 * dt
    g_f = g_v1 * w * dt
    g_fs = g_f[si] - g_f[sj]  # f_i += fs, f_j -= fs
    g_c = (g_fs * u).sum(axis=1)
    g_u = g_fs * c[:, None] + (g_c * kd)[:, None] * dv
    g_len = g_c * ke
    g_delta = (g_u - (g_u * u).sum(axis=1)[:, None] * u) / length[:, None] + g_len[:, None] * u
    g_dv = (g_c * kd)[:, None] * u
    g_x = g_x1 + _scatter(sj, g_delta, n) - _scatter(si, g_delta, n)
    g_v = g_v1 + _scatter(sj, g_dv, n) - _scatter(si, g_dv, n)
    return {"x_out": x1}, {"x": g_x, "v": g_v}


def _scatter(index: Any, values: Any, n: int) -> Any:
    """Σ values[k] into row index[k] of an (n, 3) array."""
    return np.stack([np.bincount(index, values[:, c], n) for c in range(3)], axis=1)


_REFERENCES = {
    "saxpy": _saxpy,
    "integrate": _integrate,
    "nbody": _nbody,
    "neo_hookean": _neo_hookean,
    "cloth": _cloth,
}
