"""Code generation: scalar IR to LLVM IR text, and the CPU target that compiles it."""
