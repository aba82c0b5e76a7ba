"""Random-kernel gradient fuzzer for gradloom: `python -m tools.fuzz --seed S --count N`.

Generation: ``model`` (the case tree), ``ops`` (expression operators), ``gen`` (cases),
``stmts`` / ``stmt_kinds`` (bodies), ``validate`` (well-formedness), ``render`` (Python source for
gradloom and warp-lang, plain or traced). Checking: ``evaluate`` (run a program, Tape gradients)
and ``check`` (finite differences, rejection of kinks and branch flips) inside ``worker``
subprocesses that ``runner`` drives; ``session`` batches cases and ``classify`` names the result.
Afterwards: ``edits`` / ``shrink`` (minimise a failure), ``patterns`` (known-bug patterns),
``report`` (files), ``cli`` (the command line). Time-indexed cases (``--pattern time``):
``timeline`` (cases and the oracle of where threads meet), ``timeline_trace`` (the kernel text
run in Python, checking that oracle), ``timeline_check`` (gradients, refusals, classes),
``timeline_warp`` (forward values on warp-lang). See docs/fuzzing.md.
"""
