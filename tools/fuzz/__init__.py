"""Random-kernel gradient fuzzer for gradloom: `python -m tools.fuzz --seed S --count N`.

Modules: ``model`` (the case tree), ``ops`` (the expression operator table), ``gen`` (random
cases), ``render`` (Python source for gradloom / warp-lang), ``evaluate`` (runs one case and
checks gradients against float64 central differences), ``worker`` / ``runner`` (subprocesses that
pin a crash or hang to one case), ``classify``, ``shrink`` and ``report``; ``cli`` is the
command line. See docs/fuzzing.md.
"""
