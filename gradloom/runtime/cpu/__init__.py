"""The CPU backend: kernels run on the host's cores, split across a worker pool (registered by
backend.py, loaded by name from runtime/backend.py)."""
