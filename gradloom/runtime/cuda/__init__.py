"""The CUDA backend: NVIDIA GPUs through the driver API (registered by backend.py, loaded by
name from runtime/backend.py)."""
