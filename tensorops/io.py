"""Reading image files and their headers: the bytes of a file as a uint8 tensor, and an encoded image's size.

:func:`read_file` gives a file's bytes as a 1-D uint8 tensor (what ``torchvision.io.read_file`` gives), and
:func:`loader` is the same as an ``ImageFolder`` loader, so a DataLoader worker reads files without decoding them
and the collate decodes each image only where its crop reads (:class:`tensorops.data.ResizedCropMirrorNormalizeCollate`
with :func:`tensorops.decode_resized_crop_mirror_normalize`). :func:`image_size` reads an image's height, width and
channels from its header (JPEG and PNG here, in microseconds, without decoding; other formats through Pillow's lazy
``Image.open``), which is what a sampler needs to draw crop boxes before anything is decoded.

Encoded bytes are untrusted input: :func:`image_size` raises a ``ValueError`` saying what is wrong for any bytes
that are not a readable image header (empty, truncated, corrupt), never another exception. Pillow and torchvision
are imported only inside the functions that use them.
"""
from __future__ import annotations

import os
import zlib
from typing import Optional, Tuple, Union

import numpy as np
import torch

__all__ = ["image_size", "read_file", "loader"]

Encoded = Union[bytes, bytearray, memoryview, torch.Tensor, np.ndarray]
PathLike = Union[str, bytes, os.PathLike]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# SOFn markers: baseline, extended, progressive, lossless, and their differential / arithmetic-coded variants
# (C4 DHT, C8 JPG and CC DAC sit between them and are not frame headers)
_SOF = frozenset((0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF))
# markers without a length: TEM and the restart markers RST0..RST7
_STANDALONE = frozenset((0x01, 0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7))
# PNG colour type -> (channels, allowed bit depths)
_PNG_COLOUR = {0: (1, (1, 2, 4, 8, 16)), 2: (3, (8, 16)), 3: (3, (1, 2, 4, 8)), 4: (2, (8, 16)), 6: (4, (8, 16))}
# Pillow modes whose bands are not the decoded image's channels: palettes expand to RGB (with alpha)
_PIL_CHANNELS = {"P": 3, "PA": 4}


class _Truncated(Exception):
    """The header ends before the fields being read."""


def _view(data: object, where: str) -> memoryview:
    """A flat byte memoryview of the encoded data, reading tensors and arrays in place (no copy when contiguous)."""
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.uint8 or data.dim() != 1:
            raise TypeError(f"{where}data must be a 1-D uint8 tensor of encoded bytes (torchvision.io.read_file's), "
                            f"got {data.dtype} of shape {tuple(data.shape)}")
        data = data.detach().cpu().numpy()
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1:
            raise TypeError(f"{where}data must be a 1-D uint8 array of encoded bytes, got {data.dtype} of shape "
                            f"{data.shape}")
        return memoryview(np.ascontiguousarray(data))
    if isinstance(data, (bytes, bytearray)):
        return memoryview(data)
    if isinstance(data, memoryview):
        if data.format == "B" and data.ndim == 1:
            return data
        return memoryview(data.tobytes()) if not data.c_contiguous else data.cast("B")
    raise TypeError(f"{where}data must be encoded bytes (bytes, bytearray, memoryview, or a 1-D uint8 tensor or "
                    f"array), got {type(data).__name__}")


def _head(b: memoryview, n: int = 12) -> str:
    return " ".join(f"{x:02x}" for x in b[:n]) + (" ..." if len(b) > n else "")


def _next_marker(b: memoryview, i: int) -> Tuple[int, int]:
    """(marker, offset after it) of the first marker at or after ``i``, as libjpeg's next_marker finds it: bytes
    that are not FF are skipped (libjpeg warns "extraneous bytes before marker"), then FF fill bytes, and FF 00
    (a stuffed zero) is no marker."""
    n = len(b)
    while True:
        if i >= n:
            raise _Truncated
        if b[i] != 0xFF:  # rare: junk between segments; find the next FF a chunk at a time
            while True:
                k = bytes(b[i:i + 4096]).find(b"\xff")
                if k >= 0:
                    i += k
                    break
                i += 4096
                if i >= n:
                    raise _Truncated
        while i < n and b[i] == 0xFF:
            i += 1
        if i >= n:
            raise _Truncated
        if b[i] != 0x00:
            return b[i], i + 1
        i += 1


def _jpeg_size(b: memoryview) -> Tuple[int, int, int]:
    n = len(b)
    i = 2  # after SOI (FF D8)
    while True:
        m, i = _next_marker(b, i)
        if m in _STANDALONE:
            continue
        if m == 0xD9:
            raise ValueError("not an image: the JPEG ends (EOI) before any frame header (SOF), a tables-only stream")
        if m == 0xD8:
            raise ValueError(f"corrupt JPEG header: a second SOI marker at offset {i - 2}, before any frame header")
        if m == 0xDA:
            raise ValueError(f"corrupt JPEG header: a scan (SOS) at offset {i - 2} before any frame header (SOF)")
        if m < 0xC0:
            raise ValueError(f"corrupt JPEG header: unknown marker ff{m:02x} at offset {i - 2}")
        if i + 2 > n:
            raise _Truncated
        length = (b[i] << 8) | b[i + 1]
        if length < 2:
            raise ValueError(f"corrupt JPEG header: marker ff{m:02x} at offset {i - 2} has segment length {length}")
        if m not in _SOF:
            i += length
            continue
        if i + length > n:
            raise _Truncated
        if length < 8:
            raise ValueError(f"corrupt JPEG header: the frame header (SOF) has length {length}, under 8")
        precision, h, w, nf = b[i + 2], (b[i + 3] << 8) | b[i + 4], (b[i + 5] << 8) | b[i + 6], b[i + 7]
        if not 2 <= precision <= 16:
            raise ValueError(f"corrupt JPEG header: the frame header declares {precision}-bit samples")
        if h == 0 or w == 0:
            dnl = "; a height of 0, set later by a DNL marker, is not supported" if h == 0 and w else ""
            raise ValueError(f"JPEG declares a {w}x{h} image (width x height{dnl})")
        if nf not in (1, 3, 4):
            raise ValueError(f"corrupt JPEG header: the frame header declares {nf} components (images have 1, 3 "
                             f"or 4)")
        if length < 8 + 3 * nf:
            raise ValueError(f"corrupt JPEG header: the frame header's length {length} is too short for its {nf} "
                             f"components")
        return h, w, nf


def _png_size(b: memoryview) -> Tuple[int, int, int]:
    if len(b) < 33:  # signature, IHDR's length and type, its 13 bytes and its CRC
        raise ValueError(f"truncated PNG header: {len(b)} bytes, the IHDR chunk needs 33")
    if bytes(b[8:16]) != b"\x00\x00\x00\x0dIHDR":
        raise ValueError(f"corrupt PNG header: the first chunk is not a 13-byte IHDR (got {_head(b[8:16], 8)})")
    if zlib.crc32(b[12:29]) != int.from_bytes(b[29:33], "big"):
        raise ValueError("corrupt PNG header: the IHDR chunk's CRC does not match its bytes")
    w, h = int.from_bytes(b[16:20], "big"), int.from_bytes(b[20:24], "big")
    depth, colour = b[24], b[25]
    if not (0 < w < 2 ** 31 and 0 < h < 2 ** 31):
        raise ValueError(f"corrupt PNG header: IHDR declares a {w}x{h} image (width x height)")
    if colour not in _PNG_COLOUR or depth not in _PNG_COLOUR[colour][1]:
        raise ValueError(f"corrupt PNG header: IHDR declares colour type {colour} with bit depth {depth}")
    return h, w, _PNG_COLOUR[colour][0]


def _pil_size(b: memoryview) -> Tuple[int, int, int]:
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise ValueError(f"not an image: neither JPEG nor PNG (first bytes {_head(b)}), and Pillow, which reads "
                         f"other formats' headers, is not installed") from None
    import io

    try:
        with Image.open(io.BytesIO(b)) as im:
            w, h = im.size
            c = _PIL_CHANNELS.get(im.mode, len(im.getbands()))
            fmt = im.format
    except UnidentifiedImageError:
        raise ValueError(f"not an image: neither JPEG nor PNG, and Pillow does not recognize the format (first "
                         f"bytes {_head(b)})") from None
    except Exception as e:  # any failure of a Pillow plugin on untrusted bytes
        raise ValueError(f"not an image: Pillow cannot read the header ({type(e).__name__}: {e})") from None
    if not (isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0):
        raise ValueError(f"not an image: Pillow reads a {w}x{h} {fmt} image (width x height)")
    return h, w, c


def image_size(data: Encoded, *, index: Optional[int] = None) -> Tuple[int, int, int]:
    """(height, width, channels) of an encoded image, read from its header without decoding it.

    JPEG: the first frame header (SOFn) found walking the markers from SOI (fill bytes and standalone markers
    skipped, as libjpeg does); channels are its components (1 gray, 3 YCbCr or RGB, 4 CMYK or YCCK). PNG: the
    IHDR chunk (checked against its CRC); channels by colour type (gray 1, RGB 3, palette 3, gray+alpha 2,
    RGBA 4). Other formats: Pillow's lazy ``Image.open`` (when Pillow is installed), channels its bands (a palette
    counted as its RGB or RGBA). The format is told by the bytes, not a file name: a PNG named ``.JPEG`` reads
    as a PNG.

    Args:
        data: the encoded file: ``bytes``, ``bytearray``, ``memoryview``, or a 1-D uint8 tensor (as
            ``torchvision.io.read_file`` and :func:`read_file` give) or numpy array, read in place.
        index: names the sample in messages (``sample {index}: ...``) for callers reading a batch; nothing else.

    Returns:
        ``(height, width, channels)``: three positive Python ints.

    Raises:
        ValueError: the bytes are not a readable image header, saying what is wrong ("not an image: ...",
            "truncated JPEG header: ...", "JPEG declares a 0x0 image ..."). Any bytes at all give a size or this.
        TypeError: ``data`` is not one of the types above (or not 1-D uint8).

    Example:
        >>> import io
        >>> from PIL import Image
        >>> buf = io.BytesIO()
        >>> Image.new("RGB", (40, 30), (200, 100, 50)).save(buf, "JPEG")
        >>> tensorops.io.image_size(buf.getvalue())
        (30, 40, 3)
        >>> tensorops.io.image_size(torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8))
        (30, 40, 3)
        >>> tensorops.io.image_size(b"\\xff\\xd8\\xff\\xe0", index=3)
        Traceback (most recent call last):
          ...
        ValueError: sample 3: truncated JPEG header: 4 bytes end before the frame header (SOF)
    """
    where = "" if index is None else f"sample {index}: "
    b = _view(data, where)
    try:
        if len(b) == 0:
            raise ValueError("not an image: the data is empty")
        if len(b) >= 2 and b[0] == 0xFF and b[1] == 0xD8:
            try:
                return _jpeg_size(b)
            except _Truncated:
                raise ValueError(f"truncated JPEG header: {len(b)} bytes end before the frame header (SOF)") from None
        if bytes(b[:8]) == _PNG_SIGNATURE:
            return _png_size(b)
        return _pil_size(b)
    except ValueError as e:
        if where:
            raise ValueError(where + str(e)) from None
        raise


def read_file(path: PathLike) -> torch.Tensor:
    """A file's bytes as a 1-D uint8 tensor, as ``torchvision.io.read_file`` gives them (without torchvision).

    The file is read straight into the tensor's memory (one read, no second copy), so the tensor is writable and
    owns its bytes. An empty file gives an empty tensor.

    Args:
        path: the file's path (``str``, ``bytes`` or ``os.PathLike``).

    Returns:
        A 1-D ``torch.uint8`` CPU tensor of the file's length.

    Raises:
        OSError: the file cannot be read (missing, a directory, no permission): the ``OSError`` subclass ``open``
            raises, with the path in its message.

    Example:
        >>> import os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> with open(os.path.join(d, "x.bin"), "wb") as f:
        ...     _ = f.write(b"\\xff\\xd8\\xff")
        >>> tensorops.io.read_file(os.path.join(d, "x.bin"))
        tensor([255, 216, 255], dtype=torch.uint8)
        >>> tensorops.io.read_file(os.path.join(d, "missing.jpg"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
          ...
        FileNotFoundError: [Errno 2] No such file or directory: '...missing.jpg'
    """
    try:
        with open(path, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            out = torch.empty(size, dtype=torch.uint8)
            view, got = memoryview(out.numpy()), 0
            while got < size:  # one read(2) returns at most ~2 GiB
                k = f.readinto(view[got:])
                if not k:
                    break
                got += k
            if got < size:  # the file shrank while being read
                out = out[:got].clone()
            rest = f.read()  # a file that grew, or reports no size (pipes, /proc): what is left
            if rest:
                out = torch.cat([out, torch.frombuffer(bytearray(rest), dtype=torch.uint8)])
            return out
    except OSError as e:
        if e.filename is None:  # a failed read, not a failed open: name the path all the same
            raise type(e)(e.errno, e.strerror or str(e), os.fsdecode(path)) from e
        raise


def loader(path: PathLike) -> torch.Tensor:
    """An ``ImageFolder`` loader that reads each file's bytes without decoding them: :func:`read_file`.

    ``torchvision.datasets.ImageFolder(root, loader=tensorops.io.loader)`` yields ``(bytes tensor, label)``
    samples; the collate then decodes the bytes, each image only where its crop reads
    (:class:`tensorops.data.ResizedCropMirrorNormalizeCollate`, which reads sizes with :func:`image_size` and
    decodes with :func:`tensorops.decode_resized_crop_mirror_normalize`), so a DataLoader worker sends encoded
    bytes, not decoded images, to the collate.

    Args:
        path: the image file's path, as ``ImageFolder`` passes it.

    Returns:
        The file's bytes: a 1-D ``torch.uint8`` tensor.

    Example:
        >>> import os, tempfile
        >>> from PIL import Image
        >>> path = os.path.join(tempfile.mkdtemp(), "cat.png")
        >>> Image.new("RGB", (5, 4)).save(path)
        >>> data = tensorops.io.loader(path)
        >>> data.dtype, tensorops.io.image_size(data)
        (torch.uint8, (4, 5, 3))
    """
    return read_file(path)
