"""decode_resized_crop_mirror_normalize(device="cuda"): the JPEGs decoded whole by torchvision's batched GPU
decoder (nvJPEG), the rest (other formats, CMYK/YCCK JPEGs, JPEGs nvJPEG refuses) on the CPU and copied over, then
one resized_crop_mirror_normalize call on the device. Bad samples are found per sample after a failed batch call,
named as the CPU path names them, and with on_error="fill" their outputs are ``fill``."""
from __future__ import annotations

import warnings
from typing import Dict, List, Optional, Sequence

import torch

from tensorops import _checks, _decode_ops, io
from tensorops._crop_mirror_normalize_ops import RESIZED
from tensorops._optional import require

NAME = _decode_ops.NAME
DEVICE_TYPES = ("cpu", "cuda")


def _err(msg: str) -> str:
    return _checks.where(NAME) + msg


def parse_device(device: object) -> torch.device:
    """``device`` as a torch.device of type cpu or cuda, or a ValueError naming ``device``."""
    if isinstance(device, bool) or not isinstance(device, (str, torch.device, int)):
        raise ValueError(_err(f"device must be \"cpu\", \"cuda\", \"cuda:<index>\", a torch.device of those or "
                              f"None, got {type(device).__name__} {device!r}"))
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(_err(f"device must be \"cpu\", \"cuda\", \"cuda:<index>\", a torch.device of those or "
                              f"None, got {device!r}")) from None
    if dev.type not in DEVICE_TYPES:
        raise ValueError(_err(f"device must be a CPU or CUDA device (\"cpu\", \"cuda\", \"cuda:<index>\"), got "
                              f"{device!r} (type {dev.type!r})"))
    return dev


def _target(device: torch.device) -> torch.device:
    """The device the batch is made on (a CUDA device torch sees). Tests stand a CPU device in for it."""
    if not torch.cuda.is_available():
        raise RuntimeError(_err(f"device={str(device)!r}, but torch sees no CUDA GPU"))
    return device


def _gpu_decode(datas: List[torch.Tensor], device: torch.device) -> List[torch.Tensor]:
    """torchvision's batched GPU decode: N encoded JPEGs (1-D uint8 CPU tensors) to N (3, H, W) uint8 tensors on
    ``device`` (nvJPEG). Raises on any sample it refuses, without saying which. Tests stand a CPU decode in."""
    from torchvision.io import ImageReadMode, decode_jpeg

    with warnings.catch_warnings():  # torchvision 0.29 deprecates its decoders on every call
        warnings.simplefilter("ignore", DeprecationWarning)
        return decode_jpeg(datas, mode=ImageReadMode.RGB, device=device)


def _cpu_decode(e: torch.Tensor, label: str, max_pixels: int, device: torch.device) -> torch.Tensor:
    """A whole image decoded on the CPU (the CPU path's decode_other: JPEGs by torchvision's decode_jpeg, then
    Pillow; CMYK JPEGs and other formats Pillow's convert("RGB")), as a (3, H, W) uint8 tensor on ``device``."""
    if e.numel() == 0:
        raise ValueError(_err(f"{label}: the data is empty"))
    return _decode_ops.decode_other(e, label, max_pixels).permute(2, 0, 1).to(device)


def _one_by_one(todo: List[int], encoded, labels, max_pixels: int, device, images, errors) -> None:
    """After a failed batched GPU decode: each JPEG alone on the GPU, and where nvJPEG refuses it, on the CPU;
    one that neither decodes is an error of its sample."""
    for n in todo:
        try:
            images[n] = _gpu_decode([encoded[n]], device)[0]
            continue
        except torch.OutOfMemoryError:
            raise
        except Exception as gpu_error:  # nvJPEG's refusals are RuntimeErrors, not all of them
            refusal = f"{type(gpu_error).__name__}: {gpu_error}".splitlines()[0]
        try:
            images[n] = _cpu_decode(encoded[n], labels[n], max_pixels, device)
        except ValueError as e:
            errors[n] = f"{e} (the GPU decoder refused it too: {refusal})"


def _in_our_words(e: Exception, paths: Optional[Sequence[object]]) -> Exception:
    """The fused op's ValueError or TypeError (its Python checks' or its kernel's "tensorops: ..." message) in this
    function's words, with the sample's path where the caller gave paths."""
    _with_path = _decode_ops.with_path

    message = str(e)
    for prefix in (_checks.where(RESIZED), "tensorops: "):
        if message.startswith(prefix):
            message = _checks.where(NAME) + message[len(prefix):]
            break
    return (ValueError if isinstance(e, ValueError) else TypeError)(_with_path(message, paths))


def decode(data: Sequence[object], mean, std, device: torch.device, paths: Optional[Sequence[object]],
           max_pixels: int, on_error: str, kwargs: dict, reduced_scale: object = False):
    """decode_resized_crop_mirror_normalize's device="cuda" path; ``data``, ``paths`` and ``on_error`` are
    checked, ``max_pixels`` is an int (0: no limit); ``kwargs`` are resized_crop_mirror_normalize's keywords
    (size, boxes, mirror, ..., out), passed through."""
    _as_bytes, _label = _decode_ops.as_bytes, _decode_ops.label
    from tensorops.resized_crop_mirror_normalize import _boxes, resized_crop_mirror_normalize

    if reduced_scale is not False:  # libjpeg's DCT scaling: the CPU decode's
        raise ValueError(_err(f"reduced_scale is the CPU decode's (libjpeg-turbo's DCT scaling): it needs "
                              f"device=\"cpu\" or None, got reduced_scale={reduced_scale!r} with "
                              f"device={str(device)!r}"))
    require("torchvision.io", feature=f"{NAME}(device={str(device)!r})", package="torchvision", extra="torchvision")
    dev = _target(device)
    encoded = [_as_bytes(item, n) for n, item in enumerate(data)]
    N = len(encoded)
    kwargs = dict(kwargs)
    boxes = kwargs.pop("boxes")
    try:  # checked before any decode
        bx = None if boxes is None else _boxes(boxes, [(1, 1)] * N).clone()
    except (ValueError, TypeError) as e:
        raise _in_our_words(e, paths) from None
    labels = [_label(n, paths) for n in range(N)]
    images: List[Optional[torch.Tensor]] = [None] * N
    errors: Dict[int, str] = {}
    gpu: List[int] = []
    for n, e in enumerate(encoded):
        if not _decode_ops.is_jpeg(e):
            try:
                images[n] = _cpu_decode(e, labels[n], max_pixels, dev)
            except ValueError as err:
                errors[n] = str(err)
            continue
        try:  # the header first: nothing is allocated for a bomb or a file without a frame header
            H, W, C = io.image_size(e)
        except ValueError as err:
            errors[n] = _err(f"{labels[n]}: {err}")
            continue
        if max_pixels and H * W > max_pixels:
            errors[n] = _err(f"{labels[n]}: the image declares {H}x{W} = {H * W} pixels, more than max_pixels = "
                             f"{max_pixels} (a decompression bomb?)")
        elif C == 4:  # CMYK/YCCK: Pillow's convert("RGB"), as the CPU path gives them
            try:
                images[n] = _cpu_decode(e, labels[n], max_pixels, dev)
            except ValueError as err:
                errors[n] = str(err)
        else:
            gpu.append(n)
    if gpu:
        try:
            for n, img in zip(gpu, _gpu_decode([encoded[n] for n in gpu], dev)):
                images[n] = img
        except torch.OutOfMemoryError:
            raise
        except Exception:  # one sample (which, it does not say) or more refused: find them
            _one_by_one(gpu, encoded, labels, max_pixels, dev, images, errors)
    if errors and on_error == "raise":
        raise ValueError(errors[min(errors)])

    failed = torch.zeros(N, dtype=torch.bool)
    for n in errors:
        failed[n] = True
        images[n] = torch.zeros((3, 1, 1), dtype=torch.uint8, device=dev)  # a stand-in, its output filled below
    # statistics tensors are taken on any device, as by the CPU path
    mean, std = (t.to(dev) if isinstance(t, torch.Tensor) else t for t in (mean, std))
    if bx is None:  # the whole image: its decoded size is its header's
        bx = torch.tensor([[0.0, 0.0, float(t.shape[1]), float(t.shape[2])] for t in images],
                          dtype=torch.float64).view(N, 4)
    bx[failed] = torch.tensor([0.0, 0.0, 1.0, 1.0], dtype=torch.float64)
    try:
        batch = resized_crop_mirror_normalize(images, mean, std, boxes=bx, dim=-3, **kwargs)
    except (ValueError, TypeError) as e:
        raise _in_our_words(e, paths) from None
    if on_error == "fill":
        for n in errors:
            batch[n].fill_(kwargs.get("fill", 0.0))
        return batch, failed
    return batch
