"""The separate environment the libraries run in: a venv with them, warp-lang and this checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VENV = REPO_ROOT / "build" / "libenv"
#: what `setup` installs beside gradloom (pinned to the releases the numbers were taken with)
PACKAGES = ("mujoco-warp==4.0.0", "newton==1.8.0", "warp-lang==1.19.0", "pytest", "torch==2.13.0",
            "usd-core==26.11")  # usd-core: pxr, which newton's bear example reads its mesh with


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def setup(venv: Path) -> Path:
    """Create the venv (if needed) and install the libraries and this checkout (editable)."""
    if not python_of(venv).exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(python_of(venv))
    subprocess.run([py, "-m", "pip", "install", "-q", *PACKAGES], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "-e", str(REPO_ROOT)], check=True)
    return python_of(venv)


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import mujoco_warp, os; "
                          "print(os.path.dirname(os.path.dirname(mujoco_warp.__file__)))"],
                         check=True, capture_output=True, text=True)  # fmt: skip
    return Path(out.stdout.strip())


def command(python: Path, backend: str) -> list[str]:
    """How a child starts: plainly for warp-lang, through gradloom.as_warp for gradloom."""
    if backend == "warp":
        return [str(python)]
    if backend == "gradloom":
        return [str(python), "-m", "gradloom.as_warp"]
    raise ValueError(f"backend is 'warp' or 'gradloom', got {backend!r}")
