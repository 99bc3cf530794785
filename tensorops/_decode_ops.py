"""decode_resized_crop_mirror_normalize's registrations on the compiled ops (fake kernels), the sample helpers of its
CPU and CUDA paths (bytes, names in messages), and the paths that
do not run them: encoded samples that are not JPEG, and builds without libjpeg-turbo, decode through
torchvision.io or PIL into (H, W, 3) uint8 images, which the same op then resamples in place."""
from __future__ import annotations

import hashlib
import io as _io
import re
import warnings
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch

from tensorops import _checks, _extension

NAME = "decode_resized_crop_mirror_normalize"
# A JPEG starts with SOI (FF D8), all libjpeg asks: bytes before the first marker are skipped with a warning
# ("extraneous bytes before marker"), as decode_jpeg and tensorops.io.image_size skip them. Not FF D8 FF, which
# Pillow asks, and which sent such files to Pillow, which does not identify them.
JPEG_MAGIC = b"\xff\xd8"
# A sample's status, the op's second output (csrc/include/tensorops/decode_report.h). The op's 3 (a JPEG kind the
# linked libjpeg does not decode) becomes FALLBACK once run() has decoded it through decode_other.
OK, FAILED, WARNED, FALLBACK = 0, 1, 2, 3


def has_libjpeg() -> bool:
    """Whether this build decodes JPEGs itself (libjpeg-turbo's partial decode)."""
    return bool(_extension.build_info().get("libjpeg"))


_WARNED = set()


def warn_once(key: str, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def is_jpeg(data: torch.Tensor) -> bool:
    return data.numel() >= 2 and bytes(data[:2].tolist()) == JPEG_MAGIC


def _torchvision_decode(data: torch.Tensor, max_pixels: int) -> Tuple[Optional[torch.Tensor], str]:
    """A JPEG through torchvision's ``decode_jpeg(mode=RGB)`` as (H, W, 3) uint8, or ``(None, why not)``: torchvision
    not importable, not a JPEG, a header ``tensorops.io.image_size`` cannot read or declaring more than
    ``max_pixels`` (0: Pillow's own error limit) pixels (Pillow then says why), CMYK/YCCK (Pillow's
    ``convert("RGB")`` is the op's, torchvision inverts some of those), or decode_jpeg's refusal."""
    if not is_jpeg(data):
        return None, ""
    try:
        from torchvision.io import ImageReadMode, decode_jpeg
    except ImportError:
        return None, ""
    from tensorops import io

    try:
        H, W, C = io.image_size(data)
    except ValueError:
        return None, ""
    if not max_pixels:
        from PIL import Image

        max_pixels = 2 * Image.MAX_IMAGE_PIXELS if Image.MAX_IMAGE_PIXELS else 0
    if C == 4 or (max_pixels and H * W > max_pixels):
        return None, ""
    try:
        with warnings.catch_warnings():  # torchvision 0.29 deprecates its decoders on every call
            warnings.simplefilter("ignore", DeprecationWarning)
            # gray as gray, then 3 equal channels: what mode=RGB gives (libjpeg replicates gray), and what a lossless
            # gray file decodes to (libjpeg-turbo 3 converts no colours in lossless mode: mode=RGB is refused)
            img = decode_jpeg(data, mode=ImageReadMode.GRAY if C == 1 else ImageReadMode.RGB)
    except (RuntimeError, ValueError) as e:  # libjpeg's errors
        return None, f"torchvision's decode_jpeg refused it too: {str(e).splitlines()[0] if str(e) else e!r}"
    return img.permute(1, 2, 0).expand(H, W, 3).contiguous(), ""


def decode_other(data: torch.Tensor, label: str, max_pixels: int = 0) -> torch.Tensor:
    """A whole image that the op does not decode itself (another format, a JPEG kind the linked libjpeg does not
    decode, every JPEG in a build without libjpeg-turbo), as a contiguous (H, W, 3) uint8 tensor. JPEGs: torchvision's
    ``decode_jpeg(mode=RGB)`` where torchvision imports (the reference decoder; its libjpeg-turbo 3 reads lossless
    files, which a Pillow on libjpeg-turbo 2.x cannot, and files whose first marker does not follow SOI, which
    Pillow does not identify), then, where it cannot or refuses, Pillow. Everything else, and CMYK JPEGs, Pillow's
    ``convert("RGB")`` (torchvision inverts some CMYK files). Pillow, not ``torchvision.io.decode_image``:
    torchvision 0.29.1's ``decode_png`` crashes the process on some damaged PNGs (measured), where Pillow raises.
    ``label`` names the sample in errors; an image declaring more than ``max_pixels`` pixels (0: no limit but
    Pillow's own) is refused before it is decoded."""
    from PIL import Image, UnidentifiedImageError

    decoded, refusal = _torchvision_decode(data, max_pixels)
    if decoded is not None:
        return decoded
    also = f" ({refusal})" if refusal else ""
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
                         f"first bytes {raw[:8]!r}){also}") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise ValueError(_checks.where(NAME) + f"{label}: Pillow refuses the image as a decompression bomb (over "
                         f"max_pixels or its own limit): {e}") from None
    except ValueError as e:
        if str(e).startswith(_checks.where(NAME)):
            raise
        raise ValueError(_checks.where(NAME) + f"{label}: cannot decode the image: {e}{also}") from None
    except (OSError, SyntaxError) as e:
        raise ValueError(_checks.where(NAME) + f"{label}: cannot decode the image: {e}{also}") from None
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


class Unnamed(str):
    """A sample's name that is not a path ("batch index 3": bytes handed to a collate): warnings name such a
    sample by a digest of its bytes too, and report it once per digest, not once per name."""


def _named(n: int, paths: Optional[Sequence[object]]) -> bool:
    return paths is not None and not isinstance(paths[n], Unnamed)


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
             memory_format, channels, fill, pad, max_pixels, skip_errors, reduced_scale, strict=False):
        N = len(data)
        out = torch.empty((N, channels, size[0], size[1]), dtype=dtype, device=data[0].device,
                          memory_format=memory_format)
        return out, torch.empty((N,), dtype=torch.int8, device=data[0].device)  # each sample's status

    def fake_out(data, mean, std, boxes, mirror, size, scale, interpolation, antialias, crop_first, dtype,
                 memory_format, channels, fill, pad, max_pixels, skip_errors, reduced_scale, strict=False, *, out):
        N = len(data)
        _checks.check_out(NAME, out, (N, channels, size[0], size[1]), dtype, data[0].device)
        return torch.empty((N,), dtype=torch.int8, device=data[0].device)

    torch.library.register_fake(lib + NAME, fake)
    torch.library.register_fake(lib + NAME + "_out", fake_out)


def call(data, args: tuple, out: Optional[torch.Tensor]):
    """The op (or its _out op) on prepared arguments: (batch, status)."""
    ops = torch.ops.tensorops
    if out is None:
        return ops.decode_resized_crop_mirror_normalize.default(data, *args)
    failed = ops.decode_resized_crop_mirror_normalize_out.default(data, *args, out=out)
    return out, failed


if _extension.is_compiled() and hasattr(torch.ops.tensorops, NAME):
    _register()


def digest(data: torch.Tensor) -> str:
    """A short digest of a file's bytes, naming it where it has no path."""
    return hashlib.blake2b(data.numpy().tobytes(), digest_size=8).hexdigest()


def report_once(what: str, n: int, paths: Optional[Sequence[object]], data: torch.Tensor, message: str) -> bool:
    """One RuntimeWarning per file and kind of report: the file is named by its path where the caller gave one,
    else by a digest of its bytes (the same bytes at another batch position are the same file; other bytes at
    the same position are not). Returns whether it warned."""
    key = (what, str(paths[n]) if _named(n, paths) else digest(data))
    if key in _WARNED:
        return False
    _WARNED.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=4)
    return True


def sample_name(n: int, paths: Optional[Sequence[object]], data: torch.Tensor) -> str:
    """How a warning names a sample: its path, else its index and the digest of its bytes."""
    if _named(n, paths):
        return f"sample {n} ({paths[n]})"
    return f"sample {n} ({paths[n]}, bytes {digest(data)})" if paths is not None else \
        f"sample {n} (bytes {digest(data)})"


def run(inputs: List[torch.Tensor], encoded: List[torch.Tensor], args: tuple, out: Optional[torch.Tensor],
        paths: Optional[Sequence[object]], on_error: str) -> Tuple[torch.Tensor, torch.Tensor, dict]:
    """The op on prepared arguments, then what its statuses ask for: the JPEGs it left to the fallback decoder
    (a kind the linked libjpeg does not decode) decoded whole by decode_other and resampled by the same op with
    their boxes, and one warning per file that libjpeg warned about. Returns (batch, status, texts): texts maps
    the samples that are not OK to what the op said of them."""
    try:
        batch, status = call(inputs, args, out)
    except ValueError as e:  # the op's "tensorops: data: sample n: ...", in this function's words
        _extension._C.decode_notes()
        raise ValueError(with_path(str(e).replace("tensorops: data: ", _checks.where(NAME), 1), paths)) from None
    if not bool(status.any()):
        return batch, status, {}
    texts = {n: text for n, _, text in _extension._C.decode_notes()}
    unsupported = (status == FALLBACK).nonzero().flatten().tolist()
    if unsupported:
        decoded, rows = [], []
        max_pixels = int(args[14])
        for n in unsupported:
            try:
                decoded.append(decode_other(encoded[n], label(n, paths), max_pixels))
                rows.append(n)
            except ValueError as e:
                if on_error == "raise":
                    raise ValueError(f"{e} (libjpeg-turbo {_extension.build_info().get('libjpeg')}: "
                                     f"{texts.get(n, '')})") from None
                status[n] = FAILED
        if rows:
            warn_once("fallback", _where(
                f"{sample_name(rows[0], paths, encoded[rows[0]])} is a JPEG kind the linked libjpeg-turbo "
                f"{_extension.build_info().get('libjpeg')} does not decode ({texts.get(rows[0], '')}): such files "
                f"are decoded whole by torchvision's decode_jpeg (else Pillow), then resized as the others (bit for "
                f"bit the same resize); "
                f"tensorops.build_info()['jpeg_kinds'] lists the kinds decoded in part"))
            idx = torch.tensor(rows, dtype=torch.int64)
            sub_args = (args[0], args[1], args[2].index_select(0, idx), args[3].index_select(0, idx), *args[4:])
            sub, _ = call(decoded, sub_args, None)
            _extension._C.decode_notes()
            batch[idx] = sub
    for n in (status == WARNED).nonzero().flatten().tolist():
        report_once("warned", n, paths, encoded[n], _where(
            f"{sample_name(n, paths, encoded[n])}: libjpeg warned ({texts.get(n, 'no text')}) and the image was "
            f"decoded as torchvision's decode_jpeg and Pillow decode it; strict=True makes this an error"))
    return batch, status, texts
