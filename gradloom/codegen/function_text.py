"""The lines of one LLVM function under construction: fresh names, emitted instructions, labels."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FunctionText:
    """Lines of one LLVM function under construction, and the label being appended to."""

    lines: list[str] = field(default_factory=list)
    label: str = "entry"
    counter: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def start_block(self, label: str) -> None:
        self.lines.append(f"{label}:")
        self.label = label
