"""Interop with other array frameworks: numpy, DLPack, PyTorch (and its autograd bridge), JAX.

Importing this package imports neither torch nor jax; each function loads its framework when
called.
"""
