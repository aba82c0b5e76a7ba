"""Every primitive declares its effects in its table entry, and the passes read them from there."""

import ast
from pathlib import Path

import pytest

from gradloom.ir.prim_entry import OBSERVABLE
from gradloom.ir.prims import PRIMS, Effect, Prim

PACKAGE = Path(__file__).resolve().parents[1] / "gradloom"


def test_effects_are_required_in_every_table_entry():
    with pytest.raises(TypeError):
        Prim("new_prim", 1, lambda ts, r: ts[0])  # type: ignore[call-arg]
    for p in PRIMS.values():
        assert isinstance(p.effects, Effect), p.name


def test_effects_agree_with_what_each_primitive_is():
    for p in PRIMS.values():
        if p.vjp is not None:  # derivative rules read primals: only pure ops are recomputed
            # (the tile-memory rules of lload/lstore, and of a block's exchange, read only
            # their address operands, pure integer values, never a result: they move adjoints
            # between memory slots)
            assert p.pure or p.name in ("lload", "lstore") or p.moves_adjoints, p.name
    # a primitive with no result exists only for what it does
    no_result = {"store", "print", "check_bounds", "push", "adj_add", "lstore"}
    for name in no_result:
        assert PRIMS[name].effects & OBSERVABLE, name
    assert all(Effect.ATOMIC in p.effects for n, p in PRIMS.items() if n.startswith("atomic_"))
    assert all(Effect.GRAD in p.effects for n, p in PRIMS.items() if n.startswith("adj_"))
    assert PRIMS["load"].effects == Effect.READ
    assert PRIMS["tid"].effects == Effect.THREAD


def _prim_name_lists(path: Path) -> list[str]:
    """Tuples/sets/lists of two or more string constants that are all primitive names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2:
            names = [e.value for e in node.elts
                     if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if (len(names) == len(node.elts) and all(n in PRIMS for n in names)
                    and any(PRIMS[n].effects != Effect.NONE for n in names)):
                found.append(f"{path.name}:{node.lineno}: {names}")
    return found


@pytest.mark.parametrize("package", ["autodiff", "passes"])
def test_passes_keep_no_hand_lists_of_effectful_primitives(package):
    # effects live in ir/prims.py; a pass that lists primitives by name drifts from the table
    found = [f for path in sorted((PACKAGE / package).glob("*.py"))
             for f in _prim_name_lists(path)]
    assert not found, found


def test_every_data_memory_primitive_has_a_memory_rule():
    for p in PRIMS.values():
        assert (p.memory_rule is not None) == p.memory, p.name
