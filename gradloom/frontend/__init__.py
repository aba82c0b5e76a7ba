"""The frontend: Python source of kernels and funcs, lowered to scalar IR."""
