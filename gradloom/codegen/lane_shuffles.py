"""How the SIMD thread loop moves lanes between a window's vector registers and one vector per
component: lanes picked out of a window's chunks (pairs of chunks and blends, or, for every
component of W whole elements, the element's size taken apart one prime factor at a time), and
components woven back into chunks for a store (codegen/lane_memory.py loads and stores them).
"""

from __future__ import annotations

from .lane_ops import LaneOps


class LaneShuffles(LaneOps):
    """Shuffles between window chunks and component vectors (a mixin of the CPU kernel
    emitter)."""

    def pick(self, chunks: list[str], ty: str, picks: list[int]) -> str:
        """Lane l gets element picks[l] of the chunks (W values each, in order; -1: none).
        One component of W whole elements in a forward window: `deinterleave`. Otherwise each
        pair of neighbouring chunks gives its lanes with one two-source shuffle (a single
        permute instruction), then blends merge those partial vectors, pairwise."""
        width = self.width
        if picks == list(range(width)):
            return chunks[0]
        per = len(chunks)
        if per > 1 and picks[0] < per and picks == [per * lane + picks[0] for lane in range(width)]:
            return self.deinterleave(chunks, ty, picks[0])
        parts: list[tuple[str, set[int]]] = []
        for pair in sorted({e // (2 * width) for e in picks if e >= 0}):
            lo = 2 * pair * width
            idx = [e - lo if e >= 0 and e // (2 * width) == pair else -1 for e in picks]
            if max(idx) < width:
                part = self.shuffle(chunks[2 * pair], width, ty, idx)
            else:
                part = self.shuffle2(chunks[2 * pair], chunks[2 * pair + 1], width, ty, idx)
            parts.append((part, {lane for lane, e in enumerate(idx) if e >= 0}))
        while len(parts) > 1:
            merged = []
            for (a, in_a), (b, in_b) in zip(parts[::2], parts[1::2], strict=False):
                blend = [lane if lane in in_a else width + lane if lane in in_b else -1
                         for lane in range(width)]
                merged.append((self.shuffle2(a, b, width, ty, blend), in_a | in_b))
            parts = merged + parts[len(merged) * 2:]
        return parts[0][0]

    def deinterleave(self, chunks: list[str], ty: str, c: int) -> str:
        """Component c of W elements of len(chunks) components each, stored one after the
        other in the chunks (a forward window): the stride is taken apart one prime factor at
        a time (`every`), so the components share the steps before their last one (LLVM merges
        the identical shuffles): 36 two-source permutes for the 9 components of W mat33s,
        where picking each component on its own took about 80."""
        stride = len(chunks)
        while stride > 1:
            a = _smallest_factor(stride)
            chunks = self.every(chunks, ty, a, c % a)
            stride, c = stride // a, c // a
        return chunks[0]

    def every(self, chunks: list[str], ty: str, a: int, k: int) -> list[str]:
        """The chunks of the values at a*t + k (t = 0, 1, ...) of the sequence the chunks hold:
        each output chunk gathers from a consecutive input chunks, with a - 1 two-source
        permutes (each adds one chunk's values to the lanes gathered so far)."""
        width, out = self.width, []
        for g in range(len(chunks) // a):
            src = [divmod(a * t + k, width) for t in range(width)]  # (chunk - a*g, lane)
            part = self.shuffle2(chunks[a * g], chunks[a * g + 1], width, ty,
                                 [j * width + e if j < 2 else -1 for j, e in src])
            for j in range(2, a):
                part = self.shuffle2(part, chunks[a * g + j], width, ty,
                                     [t if i < j else width + e if i == j else -1
                                      for t, (i, e) in enumerate(src)])
            out.append(part)
        return out

    def interleave(self, comps: list[str], ty: str) -> list[str]:
        """The inverse of `deinterleave`: the chunks of W elements of len(comps) components
        each, one element after the other, from the components' vectors (the same prime
        factors, the last step first)."""
        if len(comps) == 1:
            return comps
        a = _smallest_factor(len(comps))
        return self.weave([self.interleave(comps[k::a], ty) for k in range(a)], ty)

    def weave(self, seqs: list[list[str]], ty: str) -> list[str]:
        """The chunks of the sequence whose value a*t + k is value t of seqs[k] (a = len(seqs)):
        each output chunk picks from the few input chunks its lanes need."""
        width, a, out = self.width, len(seqs), []
        for q in range(a * len(seqs[0])):
            sources: list[tuple[int, int]] = []
            idx = []
            for e in range(q * width, (q + 1) * width):
                key = (e % a, e // a // width)
                if key not in sources:
                    sources.append(key)
                idx.append(sources.index(key) * width + e // a % width)
            out.append(self.pick([seqs[k][g] for k, g in sources], ty, idx))
        return out

    def shuffle2(self, a: str, b: str, n: int, ty: str, picks: list[int]) -> str:
        """Elements of a (indices < n) and b (indices >= n), two vectors of n elements."""
        out = self.f.fresh("%lmix")
        idx = "<" + ", ".join("i32 poison" if p < 0 else f"i32 {p}" for p in picks) + ">"
        self.f.emit(f"{out} = shufflevector <{n} x {ty}> {a}, <{n} x {ty}> {b}, "
                    f"<{len(picks)} x i32> {idx}")
        return out


def _smallest_factor(n: int) -> int:
    return next(d for d in range(2, n + 1) if n % d == 0)
