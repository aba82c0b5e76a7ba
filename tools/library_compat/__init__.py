"""Libraries built on Warp (MuJoCo Warp, newton) run on gradloom through `gradloom.as_warp`.

Run from the repository root: ``python -m tools.library_compat --help`` (see docs/libraries.md).
The libraries live in an environment of their own (``setup``), never the project's.
"""
