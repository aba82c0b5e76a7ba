"""The kernel-language library: the value model, operators and builtin functions."""
