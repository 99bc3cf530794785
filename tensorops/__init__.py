"""tensorops: fused PyTorch preprocessing kernels (CPU and CUDA) that are drop-in replacements for native ops."""
from tensorops._extension import __version__, build_info, is_compiled
from tensorops.modules import Normalize
from tensorops.normalize import normalize
from tensorops.cat_split import cat, split
from tensorops.foreach import clamp, clamp_, clip_grad_value_  # tensorops.clamp's, also taking lists of tensors
from tensorops.stack_chunk import chunk, stack

__all__ = [
    "__version__", "build_info", "is_compiled", "normalize", "Normalize", "clamp", "clamp_", "clip_grad_value_",
    "cat", "split", "stack", "chunk",
]
