"""The emulated CUDA tier (see conftest.py)."""
