"""decode_resized_crop_mirror_normalize's registrations on the compiled ops (fake kernels), the sample helpers of its
CPU and CUDA paths (bytes, names in messages), and the paths that
do not run them: encoded samples that are not JPEG, and builds without libjpeg-turbo, decode through
torchvision.io or PIL into (H, W, 3) uint8 images, which the same op then resamples in place."""
from __future__ import annotations

import io as _io
import re
import warnings
from typing import Optional, Sequence

import numpy as np
import torch

from tensorops import _checks, _extension

NAME = "decode_resized_crop_mirror_normalize"
JPEG_MAGIC = b"\xff\xd8\xff"


def has_libjpeg() -> bool:
    """Whether this build decodes JPEGs itself (libjpeg-turbo's partial decode)."""
    return bool(_extension.build_info().get("libjpeg"))


_WARNED = set()


def warn_once(key: str, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def is_jpeg(data: torch.Tensor) -> bool:
    return data.numel() >= 3 and bytes(data[:3].tolist()) == JPEG_MAGIC


def decode_other(data: torch.Tensor, label: str, max_pixels: int = 0) -> torch.Tensor:
    """A whole image that the op does not decode itself, as a contiguous (H, W, 3) uint8 tensor: through
    torchvision.io.decode_image (RGB) where torchvision is installed, else PIL's convert("RGB"), which is also
    what CMYK JPEGs become in a build without libjpeg-turbo (torchvision inverts some of those). ``label``
    names the sample in errors; an image declaring more than ``max_pixels`` pixels (0: no limit but Pillow's
    own) is refused before it is decoded."""
    from PIL import Image, UnidentifiedImageError

    raw = data.numpy().tobytes()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(_io.BytesIO(raw))
            W, H = im.size
            if max_pixels and H * W > max_pixels:
                raise ValueError(_checks.where(NAME) + f"{label}: the image declares {H}x{W} = {H * W} pixels, "
                                 f"more than max_pixels = {max_pixels} (a decompression bomb?)")
            rgb = im.convert("RGB")
    except UnidentifiedImageError:
        raise ValueError(_checks.where(NAME) + f"{label}: not an image (neither JPEG nor a format Pillow reads; "
                         f"first bytes {raw[:8]!r})") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise ValueError(_checks.where(NAME) + f"{label}: Pillow refuses the image as a decompression bomb (over "
                         f"max_pixels or its own limit): {e}") from None
    except ValueError as e:
        if str(e).startswith(_checks.where(NAME)):
            raise
        raise ValueError(_checks.where(NAME) + f"{label}: cannot decode the image: {e}") from None
    except (OSError, SyntaxError) as e:
        raise ValueError(_checks.where(NAME) + f"{label}: cannot decode the image: {e}") from None
    import numpy as np

    return torch.from_numpy(np.array(rgb, dtype=np.uint8, copy=True))


def _where(msg: str) -> str:
    return _checks.where(NAME) + msg


def as_bytes(item: object, n: int) -> torch.Tensor:
    """One sample's encoded bytes as a contiguous 1-D uint8 CPU tensor (no copy where it can be read in place)."""
    if isinstance(item, torch.Tensor):
        if item.dtype != torch.uint8 or item.dim() != 1:
            raise TypeError(_where(f"data[{n}] must be a 1-D uint8 tensor of encoded bytes (torchvision.io.read_file's), "
                                 f"got {item.dtype} of shape {tuple(item.shape)}"))
        return item.cpu().contiguous()
    if isinstance(item, np.ndarray):
        if item.dtype != np.uint8 or item.ndim != 1:
            raise TypeError(_where(f"data[{n}] must be a 1-D uint8 array of encoded bytes, got {item.dtype} of shape "
                                 f"{item.shape}"))
        item = np.ascontiguousarray(item)
    elif not isinstance(item, (bytes, bytearray, memoryview)):
        raise TypeError(_where(f"data[{n}] must be encoded bytes (bytes, a 1-D uint8 tensor or array), got "
                             f"{type(item).__name__}"))
    if len(item) == 0 if not isinstance(item, np.ndarray) else item.size == 0:
        return torch.empty(0, dtype=torch.uint8)
    with warnings.catch_warnings():  # read-only buffers (bytes): the op only reads them
        warnings.simplefilter("ignore", UserWarning)
        return torch.frombuffer(item, dtype=torch.uint8)


def label(n: int, paths: Optional[Sequence[object]]) -> str:
    return f"sample {n} ({paths[n]})" if paths is not None else f"sample {n}"


def with_path(message: str, paths: Optional[Sequence[object]]) -> str:
    """The op's "sample n: ..." message with the sample's path, where the caller gave paths."""
    m = re.search(r"sample (\d+): ", message)
    if paths is None or m is None:
        return message
    n = int(m.group(1))
    return message[:m.end() - 2] + f" ({paths[n]})" + message[m.end() - 2:] if n < len(paths) else message


def _register() -> None:
    lib = "tensorops::"

    def fake(data, mean, std, boxes, mirror, size, scale, interpolation, antialias, crop_first, dtype,
             memory_format, channels, fill, pad, max_pixels, skip_errors, reduced_scale):
        N = len(data)
        out = torch.empty((N, channels, size[0], size[1]), dtype=dtype, device=data[0].device,
                          memory_format=memory_format)
        return out, torch.empty((N,), dtype=torch.bool, device=data[0].device)

    def fake_out(data, mean, std, boxes, mirror, size, scale, interpolation, antialias, crop_first, dtype,
                 memory_format, channels, fill, pad, max_pixels, skip_errors, reduced_scale, *, out):
        N = len(data)
        _checks.check_out(NAME, out, (N, channels, size[0], size[1]), dtype, data[0].device)
        return torch.empty((N,), dtype=torch.bool, device=data[0].device)

    torch.library.register_fake(lib + NAME, fake)
    torch.library.register_fake(lib + NAME + "_out", fake_out)


def call(data, args: tuple, out: Optional[torch.Tensor]):
    """The op (or its _out op) on prepared arguments: (batch, failed)."""
    ops = torch.ops.tensorops
    if out is None:
        return ops.decode_resized_crop_mirror_normalize.default(data, *args)
    failed = ops.decode_resized_crop_mirror_normalize_out.default(data, *args, out=out)
    return out, failed


if _extension.is_compiled() and hasattr(torch.ops.tensorops, NAME):
    _register()
