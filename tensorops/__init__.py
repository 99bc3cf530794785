"""tensorops: fused PyTorch preprocessing kernels (CPU and CUDA) that are drop-in replacements for native ops."""
from tensorops._extension import __version__, build_info, is_compiled
from tensorops.modules import Normalize
from tensorops.normalize import normalize
from tensorops.cat_split import cat, split
from tensorops.foreach import clamp, clamp_, clip_grad_value_  # tensorops.clamp's, also taking lists of tensors
from tensorops.stack_chunk import chunk, stack
from tensorops.crop_mirror_normalize import crop_mirror_normalize
from tensorops.resized_crop_mirror_normalize import resized_crop_mirror_normalize
from tensorops.decode import decode_resized_crop_mirror_normalize
from tensorops.batch_cache import empty_cache
from tensorops import data, io

__all__ = [
    "__version__", "build_info", "is_compiled", "normalize", "Normalize", "clamp", "clamp_", "clip_grad_value_",
    "cat", "split", "stack", "chunk", "crop_mirror_normalize",
    "resized_crop_mirror_normalize", "decode_resized_crop_mirror_normalize", "empty_cache", "data", "io",
]


def __getattr__(name: str):
    # tensorops.transforms (torchvision v2 transforms) is imported on first use, so `import tensorops` never
    # imports torchvision; without torchvision it raises an ImportError that says so
    # tensorops.ray (Ray Data stages) likewise: `import tensorops` never imports ray
    if name in ("transforms", "ray"):
        import importlib

        return importlib.import_module(f"tensorops.{name}")
    raise AttributeError(f"module 'tensorops' has no attribute {name!r}")
