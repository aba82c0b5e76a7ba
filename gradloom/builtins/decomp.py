"""Matrix decompositions: svd3, svd2, qr3, eig3.

All four are compositions of scalar primitives, so their gradients come from reverse mode through
the iterations (a fixed, unrolled number of Jacobi sweeps; Givens rotations for QR). At converged
iterates that derivative is the derivative of the decomposition, as long as it is well defined:
singular values / eigenvalues distinct, QR of a full-rank matrix.

Conventions (Warp's documented ones, plus the choices Warp leaves open, noted here):

* svd3: A = U diag(sigma) V^T; U, V rotations (det +1); sigma sorted by decreasing magnitude,
  sigma[0], sigma[1] >= 0, sigma[2] has the sign of det(A).
* svd2: sigma >= 0, decreasing; V is a rotation, U carries the reflection when det(A) < 0.
* qr3: A = Q R; Q a rotation; R upper triangular with R[0,0], R[1,1] >= 0 (R[2,2] has the sign
  of det(A)).
* eig3: A = Q diag(d) Q^T for symmetric A; Q a rotation; d sorted ascending (like numpy's eigh;
  Warp promises no order). Only the symmetric part (A + A^T) / 2 is used, so a non-symmetric A
  is treated as its symmetric part, and gradients split evenly between A[i,j] and A[j,i].
"""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import MatrixType, VectorType
from .registry import builtin
from .values import Composite, Ctx, OutArgs, TupleVal, Value, describe

Mat = list[list[Var]]  # rows of SSA scalars

_VM = "Vector Math"
SVD_SWEEPS = 5  # quadratic convergence: 4 sweeps reach float64 rounding on random 3x3s;
# the fifth is margin for the derivative, which converges about one sweep behind the values
EIG_SWEEPS = 5
SVD2_SWEEPS = 2  # one rotation diagonalises a 2x2 exactly; the second sweep polishes rounding
#: a Jacobi pair whose off-diagonal and diagonal difference are within this many rounding units
#: of its diagonal's magnitude is degenerate: it is not rotated (_jacobi_rotation)
_DEGENERATE = 8
_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


# -- matrices as rows of scalars ------------------------------------------------------------------

def _rows_of(m: Composite, n: int) -> Mat:
    return [list(m.comps[r * n:(r + 1) * n]) for r in range(n)]


def _composite(m: Mat, t: MatrixType) -> Composite:
    return Composite(t, tuple(c for row in m for c in row))


def _identity(ctx: Ctx, n: int, like: Var) -> Mat:
    one, zero = ctx.const(1, like.type), ctx.const(0, like.type)
    return [[one if r == c else zero for c in range(n)] for r in range(n)]


def _col_dot(ctx: Ctx, m: Mat, p: int, q: int) -> Var:
    acc = ctx.op("mul", m[0][p], m[0][q])
    for row in m[1:]:
        acc = ctx.op("add", acc, ctx.op("mul", row[p], row[q]))
    return acc


def _combine(ctx: Ctx, c: Var, s: Var, x: Var, y: Var) -> tuple[Var, Var]:
    """(c x - s y, s x + c y): a plane rotation of the pair (x, y)."""
    return (ctx.op("sub", ctx.op("mul", c, x), ctx.op("mul", s, y)),
            ctx.op("add", ctx.op("mul", s, x), ctx.op("mul", c, y)))


def _rotate_cols(ctx: Ctx, m: Mat, p: int, q: int, c: Var, s: Var) -> None:
    """m <- m J, J the rotation with J[p,p] = J[q,q] = c, J[p,q] = s, J[q,p] = -s."""
    for row in m:
        row[p], row[q] = _combine(ctx, c, s, row[p], row[q])


def _rotate_rows(ctx: Ctx, m: Mat, p: int, q: int, c: Var, s: Var) -> None:
    """m <- J^T m."""
    for k in range(len(m)):
        m[p][k], m[q][k] = _combine(ctx, c, s, m[p][k], m[q][k])


# -- rotations ------------------------------------------------------------------------------------

def _sqrt_pos(ctx: Ctx, q: Var) -> tuple[Var, Var]:
    """(q > 0, sqrt(q) where q > 0 else 1): no sqrt(0) whose derivative would be 0/0 = NaN."""
    pos = ctx.op("gt", q, ctx.const(0, q.type))
    return pos, ctx.op("sqrt", ctx.op("select", pos, q, ctx.const(1, q.type)))


def _jacobi_rotation(ctx: Ctx, alpha: Var, beta: Var, gamma: Var) -> tuple[Var, Var]:
    """(c, s) of the rotation that zeroes the off-diagonal of [[alpha, gamma], [gamma, beta]]
    (the smaller of the two angles), in the cancellation-free form
    t = 2 gamma sign(tau) / (|tau| + sqrt(tau^2 + 4 gamma^2)), tau = beta - alpha."""
    tau = ctx.op("sub", beta, alpha)
    two_g = ctx.op("add", gamma, gamma)
    pos, root = _sqrt_pos(ctx, ctx.op("add", ctx.op("mul", tau, tau), ctx.op("mul", two_g, two_g)))
    # a pair already diagonal with equal diagonal entries, to rounding: no rotation. Its angle
    # would be set by rounding noise, with a derivative of order 1 / noise; the functions of the
    # pair that are differentiable there (sums of its eigenvalues, ...) do not depend on it
    scale = ctx.op("add", ctx.op("abs", alpha), ctx.op("abs", beta))
    noise = ctx.op("mul", scale, ctx.const(_DEGENERATE * _EPS[tau.type.name], tau.type))
    pos = ctx.op("and", pos, ctx.op("gt", root, noise))
    zero, one = ctx.const(0, tau.type), ctx.const(1, tau.type)
    signed = ctx.op("select", ctx.op("ge", tau, zero), two_g, ctx.op("neg", two_g))
    t = ctx.op("select", pos, ctx.op("div", signed, ctx.op("add", ctx.op("abs", tau), root)), zero)
    c = ctx.op("div", one, ctx.op("sqrt", ctx.op("add", one, ctx.op("mul", t, t))))
    return c, ctx.op("mul", t, c)


def _givens_qr(ctx: Ctx, m: Mat) -> tuple[Mat, Mat]:
    """(Q, R) with m = Q R, Q a rotation, R upper triangular with R[j,j] >= 0 for j < n - 1."""
    n = len(m)
    r = [row[:] for row in m]
    q = _identity(ctx, n, m[0][0])
    zero, one = ctx.const(0, m[0][0].type), ctx.const(1, m[0][0].type)
    for j in range(n - 1):
        for i in range(j + 1, n):
            a, b = r[j][j], r[i][j]
            pos, rho = _sqrt_pos(ctx, ctx.op("add", ctx.op("mul", a, a), ctx.op("mul", b, b)))
            c = ctx.op("select", pos, ctx.op("div", a, rho), one)
            s = ctx.op("neg", ctx.op("select", pos, ctx.op("div", b, rho), zero))
            _rotate_rows(ctx, r, j, i, c, s)  # row j <- c a + |s| b (= rho), row i <- 0
            r[i][j] = zero  # exactly zero, as a function of m too (so its derivative is 0)
            _rotate_cols(ctx, q, j, i, c, s)
    return q, r


def _swap_cols(ctx: Ctx, cond: Var, mats: list[Mat], i: int, j: int) -> None:
    """Where cond: column i <- column j, column j <- -column i (a rotation: det stays +1)."""
    for m in mats:
        for row in m:
            a, b = row[i], row[j]
            row[i] = ctx.op("select", cond, b, a)
            row[j] = ctx.op("select", cond, ctx.op("neg", a), b)


def _sort_cols(ctx: Ctx, keys: list[Var], mats: list[Mat], descending: bool) -> list[Var]:
    """Sort columns (and keys) by key with compare-and-swap steps; returns the sorted keys."""
    keys = keys[:]
    pairs = [(0, 1)] if len(keys) == 2 else [(0, 1), (1, 2), (0, 1)]
    for i, j in pairs:
        cond = ctx.op("gt" if descending else "lt", keys[j], keys[i])
        _swap_cols(ctx, cond, mats, i, j)
        keys[i], keys[j] = (ctx.op("select", cond, keys[j], keys[i]),
                            ctx.op("select", cond, keys[i], keys[j]))
    return keys


# -- the decompositions ---------------------------------------------------------------------------

def _one_sided_jacobi(ctx: Ctx, a: Mat, sweeps: int) -> tuple[Mat, Mat]:
    """(B, V) with B = A V, V a rotation, the columns of B orthogonal and sorted by decreasing
    length (Hestenes' one-sided Jacobi: rotate column pairs until they are orthogonal)."""
    n = len(a)
    b = [row[:] for row in a]
    v = _identity(ctx, n, a[0][0])
    pairs = [(p, q) for p in range(n) for q in range(p + 1, n)]
    for _ in range(sweeps):
        for p, q in pairs:
            c, s = _jacobi_rotation(ctx, _col_dot(ctx, b, p, p), _col_dot(ctx, b, q, q),
                                    _col_dot(ctx, b, p, q))
            _rotate_cols(ctx, b, p, q, c, s)
            _rotate_cols(ctx, v, p, q, c, s)
    _sort_cols(ctx, [_col_dot(ctx, b, k, k) for k in range(n)], [b, v], descending=True)
    return b, v


def svd(ctx: Ctx, a: Composite) -> tuple[Composite, Composite, Composite]:
    """U, sigma, V of a 2x2 or 3x3 matrix, with the conventions in the module docstring."""
    t = a.type
    assert isinstance(t, MatrixType)
    n = t.rows
    b, v = _one_sided_jacobi(ctx, _rows_of(a, n), SVD_SWEEPS if n == 3 else SVD2_SWEEPS)
    u, r = _givens_qr(ctx, b)  # B has orthogonal columns, so R is diagonal: the signed sigmas
    sigma = [r[k][k] for k in range(n)]
    if n == 2:  # svd2 wants sigma >= 0: a negative last one moves its sign into U
        neg = ctx.op("lt", sigma[1], ctx.const(0, sigma[1].type))
        sigma[1] = ctx.op("select", neg, ctx.op("neg", sigma[1]), sigma[1])
        for row in u:
            row[1] = ctx.op("select", neg, ctx.op("neg", row[1]), row[1])
    return _composite(u, t), Composite(VectorType(n, t.dtype), tuple(sigma)), _composite(v, t)


def qr(ctx: Ctx, a: Composite) -> tuple[Composite, Composite]:
    assert isinstance(a.type, MatrixType)
    q, r = _givens_qr(ctx, _rows_of(a, a.type.rows))
    return _composite(q, a.type), _composite(r, a.type)


def eig_symmetric(ctx: Ctx, a: Composite) -> tuple[Composite, Composite]:
    """Q, d of the symmetric part of a 3x3 matrix by cyclic two-sided Jacobi."""
    t = a.type
    assert isinstance(t, MatrixType)
    n, m = t.rows, _rows_of(a, t.rows)
    half = ctx.const(0.5, t.dtype)
    s = [[ctx.op("mul", half, ctx.op("add", m[r][c], m[c][r])) for c in range(n)]
         for r in range(n)]
    q = _identity(ctx, n, s[0][0])
    for _ in range(EIG_SWEEPS):
        for p, k in ((0, 1), (0, 2), (1, 2)):
            c, sn = _jacobi_rotation(ctx, s[p][p], s[k][k], s[p][k])
            _rotate_cols(ctx, s, p, k, c, sn)
            _rotate_rows(ctx, s, p, k, c, sn)
            _rotate_cols(ctx, q, p, k, c, sn)
    d = _sort_cols(ctx, [s[k][k] for k in range(n)], [q], descending=False)
    return _composite(q, t), Composite(VectorType(n, t.dtype), tuple(d))


# -- builtins -------------------------------------------------------------------------------------

def _square(ctx: Ctx, name: str, a: Value, n: int) -> Composite:
    if not isinstance(a, Composite) or not isinstance(a.type, MatrixType) \
            or a.type.shape != (n, n) or not a.type.dtype.is_float:
        raise ctx.error(f"wp.{name}() needs a float {n}x{n} matrix, got {describe(a)}")
    return a


def _outputs(ctx: Ctx, name: str, names: tuple[str, ...], given: tuple[Value, ...],
             results: tuple[Composite, ...]) -> Value | OutArgs:
    """Warp's two calling forms: `r1, r2 = wp.f(A)`, or `wp.f(A, r1, r2)` writing variables."""
    if not given:
        return TupleVal(results)
    if len(given) != len(results):
        raise ctx.error(f"wp.{name}() takes the matrix alone, or the matrix and the output "
                        f"variables {', '.join(names)}; got {len(given) + 1} arguments")
    for label, g, r in zip(names, given, results, strict=True):
        if not isinstance(g, Composite) or g.type != r.type:
            raise ctx.error(f"wp.{name}(): output {label} must be a variable of type {r.type!r}, "
                            f"got {describe(g)}")
    return OutArgs(None, tuple((k + 1, r) for k, r in enumerate(results)))


@builtin("svd3", "singular value decomposition of a 3x3 matrix: A = U diag(sigma) V^T, U and V "
         "rotations, sigma by decreasing magnitude (sigma[2] has the sign of det A)", group=_VM,
         signatures=("(A: Matrix33) -> (Matrix33, Vector3, Matrix33)",
                     "(A: Matrix33, U: Matrix33, sigma: Vector3, V: Matrix33) -> None"))
def svd3(ctx: Ctx, a: Value, *out: Value) -> Value | OutArgs:
    return _outputs(ctx, "svd3", ("U", "sigma", "V"), out, svd(ctx, _square(ctx, "svd3", a, 3)))


@builtin("svd2", "singular value decomposition of a 2x2 matrix: A = U diag(sigma) V^T, "
         "sigma >= 0 decreasing, V a rotation", group=_VM,
         signatures=("(A: Matrix22) -> (Matrix22, Vector2, Matrix22)",
                     "(A: Matrix22, U: Matrix22, sigma: Vector2, V: Matrix22) -> None"))
def svd2(ctx: Ctx, a: Value, *out: Value) -> Value | OutArgs:
    return _outputs(ctx, "svd2", ("U", "sigma", "V"), out, svd(ctx, _square(ctx, "svd2", a, 2)))


@builtin("qr3", "QR decomposition of a 3x3 matrix: A = Q R, Q a rotation, R upper triangular",
         group=_VM, signatures=("(A: Matrix33) -> (Matrix33, Matrix33)",
                                "(A: Matrix33, Q: Matrix33, R: Matrix33) -> None"))
def qr3(ctx: Ctx, a: Value, *out: Value) -> Value | OutArgs:
    return _outputs(ctx, "qr3", ("Q", "R"), out, qr(ctx, _square(ctx, "qr3", a, 3)))


@builtin("eig3", "eigendecomposition of a symmetric 3x3 matrix: A = Q diag(d) Q^T, Q a "
         "rotation, d ascending", group=_VM,
         signatures=("(A: Matrix33) -> (Matrix33, Vector3)",
                     "(A: Matrix33, Q: Matrix33, d: Vector3) -> None"))
def eig3(ctx: Ctx, a: Value, *out: Value) -> Value | OutArgs:
    return _outputs(ctx, "eig3", ("Q", "d"), out,
                    eig_symmetric(ctx, _square(ctx, "eig3", a, 3)))
