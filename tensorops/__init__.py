"""tensorops: fused PyTorch preprocessing kernels (CPU and CUDA) that are drop-in replacements for native ops."""
from tensorops._extension import __version__, build_info, is_compiled
from tensorops.modules import Normalize
from tensorops.normalize import normalize
from tensorops.cat_split import cat, split
from tensorops.clamp import clamp, clamp_
from tensorops.stack_chunk import chunk, stack

__all__ = [
    "__version__", "build_info", "is_compiled", "normalize", "Normalize", "clamp", "clamp_",
    "cat", "split", "stack", "chunk",
]
