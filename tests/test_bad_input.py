"""Bad input: one catalogue of wrong calls to every op, each of which must raise a Python exception of the
expected type whose message names the bad argument, never crash the interpreter and never return a result.

The catalogue runs in a subprocess (so an abort or segfault is a failed row, not a dead test run; after a crash
the remaining rows run in a fresh process), and each row is also a parametrized test named after it.
Every op of tensorops.registry has rows (or says where its errors are tested); a row names a registry op, the
Normalize module or one of the registry's torch.ops schemas. The torch.ops rows skip when the extension is not
compiled; rows that need a GPU skip without one.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from typing import Any, Callable, Dict, Optional, Tuple, Type, Union

import pytest
import torch

import tensorops
from tensorops import registry

ExcTypes = Union[Type[BaseException], Tuple[Type[BaseException], ...]]


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    op: str  # a registry op ("Normalize" for the module), or "ops.<schema>" for torch.ops.tensorops
    args: Callable[[], Tuple[tuple, Dict[str, Any]]]  # builds (args, kwargs) when the row runs
    exc: ExcTypes  # the exception type(s) accepted (where torch itself raises RuntimeError for a drop-in, both)
    match: str  # regex searched in the message: it names the bad argument
    gpu: bool = False


def _img(dtype=torch.uint8, shape=(1, 3, 4, 4), device="cpu"):
    return torch.zeros(shape, dtype=dtype, device=device)


def _f(*shape):
    return torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape)


M, S = [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]
NAN, INF = float("nan"), float("inf")
RT = RuntimeError  # torch's own type for this error; the drop-in may keep it
ARG_INPUT, ARG_MEAN, ARG_STD = r"\binput\b", r"\bmean\b", r"\bstd\b"
ARG_DIM = r"(?i)\bdim(ension)?\b"
ARG_MIN, ARG_MAX = r"\bmin\b", r"\bmax\b"
ARG_TENSORS = r"(?i)\btensors\b"
ARG_TENSOR = r"\btensor\b"
ARG_SPLIT = r"split_size|sections"
ARG_IMAGES = r"\bimages\b"


def a(*args, **kwargs):
    return lambda: (args, kwargs)


def _jpeg_bytes(declare=None) -> bytes:
    """An 8x8 JPEG's bytes; ``declare=(H, W)`` rewrites its frame header to claim that size (a bomb header)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 120, 200)).save(buf, format="JPEG")
    data = bytearray(buf.getvalue())
    if declare is not None:
        sof = data.index(b"\xff\xc0")  # baseline frame: FFC0, length, precision, height, width
        data[sof + 5:sof + 9] = declare[0].to_bytes(2, "big") + declare[1].to_bytes(2, "big")
    return bytes(data)




# ---- tensorops.augment: a (2, 3, 4, 4) uint8 batch; each op's wrong batch (float32: TypeError; 2 channels) --------
AUGMENT_ARGS = {  # the arguments after the batch that make a valid call
    "adjust_brightness": (1.0,), "adjust_contrast": (1.0,), "adjust_saturation": (1.0,), "adjust_hue": (0.0,),
    "adjust_sharpness": (1.0,), "posterize": (4,), "solarize": (128.0,), "autocontrast": (), "equalize": (),
    "invert": (), "rgb_to_grayscale": (), "affine": (), "rotate": (30.0,),
    "erase": (torch.zeros(2, 4, dtype=torch.long),), "apply_ops": (torch.tensor([1, 2]), torch.ones(2)),
    "mix": ([torch.zeros(2, 3, 4, 4, dtype=torch.uint8)], torch.full((2, 2), 0.5)),
}


def _u8(dtype=torch.uint8, shape=(2, 3, 4, 4)):
    return torch.zeros(shape, dtype=torch.uint8).to(dtype)


def _codes(code, n=2):
    return torch.full((n,), code, dtype=torch.long)


def _params(n=2, m=None):
    p = torch.zeros(n, 9, dtype=torch.float64)
    p[:, 4] = 1.0  # scale
    if m is not None:
        p[:, 0] = torch.tensor(m, dtype=torch.float64)
    return p


def _augment_rows():
    rows = []
    for op, rest in AUGMENT_ARGS.items():
        rows += [
            Row(f"{op}/batch-float32", op, lambda r=rest: ((_u8(torch.float32), *r), {}), TypeError, r"\bbatch\b.*\buint8\b"),
            Row(f"{op}/batch-2-channels", op, lambda r=rest: ((_u8(shape=(2, 2, 4, 4)), *r), {}), ValueError, r"\bbatch\b.*\bchannels\b"),
            Row(f"{op}/batch-3d", op, lambda r=rest: ((_u8(shape=(3, 4, 4)), *r), {}), ValueError, r"\bbatch\b"),
        ]
    return rows


CATALOGUE = [
    # ---- normalize: input ---------------------------------------------------------------------------------
    Row("normalize/input-complex", "normalize", lambda: ((_img(torch.complex64), M, S), {}), TypeError, ARG_INPUT),
    Row("normalize/input-bool", "normalize", lambda: ((_img(torch.bool), M, S), {}), TypeError, ARG_INPUT),
    Row("normalize/input-int32", "normalize", lambda: ((_img(torch.int32), M, S), {}), TypeError, ARG_INPUT),
    Row("normalize/input-0dim", "normalize", lambda: ((torch.tensor(3, dtype=torch.uint8), [0.5], [0.5]), {}), ValueError, ARG_INPUT),
    Row("normalize/input-str", "normalize", a("img.png", M, S), TypeError, ARG_INPUT),
    Row("normalize/input-None", "normalize", a(None, M, S), TypeError, ARG_INPUT),
    Row("normalize/input-nested-list", "normalize", a([[[1, 2, 3]]], M, S), TypeError, ARG_INPUT),
    # ---- normalize: statistics ----------------------------------------------------------------------------
    Row("normalize/mean-str", "normalize", lambda: ((_img(), "abc", S), {}), TypeError, ARG_MEAN),
    Row("normalize/std-None", "normalize", lambda: ((_img(), M, None), {}), TypeError, ARG_STD),
    Row("normalize/mean-nested-list", "normalize", lambda: ((_img(), [M], S), {}), TypeError, ARG_MEAN),
    Row("normalize/mean-str-element", "normalize", lambda: ((_img(), [0.5, "a", 0.5], S), {}), TypeError, ARG_MEAN),
    Row("normalize/std-None-element", "normalize", lambda: ((_img(), M, [0.5, None, 0.5]), {}), TypeError, ARG_STD),
    Row("normalize/mean-complex-number", "normalize", lambda: ((_img(), 1 + 2j, S), {}), TypeError, ARG_MEAN),
    Row("normalize/mean-bool", "normalize", lambda: ((_img(), True, S), {}), TypeError, ARG_MEAN),
    Row("normalize/mean-empty-list", "normalize", lambda: ((_img(), [], S), {}), ValueError, ARG_MEAN),
    Row("normalize/std-empty-tuple", "normalize", lambda: ((_img(), M, ()), {}), ValueError, ARG_STD),
    Row("normalize/mean-length-2-for-3-channels", "normalize", lambda: ((_img(), [0.5, 0.5], S), {}), ValueError, ARG_MEAN),
    Row("normalize/std-length-4-for-3-channels", "normalize", lambda: ((_img(), M, [0.2] * 4), {}), ValueError, ARG_STD),
    Row("normalize/mean-1d-tensor-wrong-length", "normalize", lambda: ((_img(), torch.zeros(4), S), {}), ValueError, ARG_MEAN),
    Row("normalize/mean-tensor-not-broadcastable", "normalize", lambda: ((_img(), torch.zeros(2, 3, 1, 1), S), {}), ValueError, ARG_MEAN),
    Row("normalize/std-tensor-more-dims", "normalize", lambda: ((_img(), M, torch.ones(1, 1, 1, 1, 1)), {}), ValueError, ARG_STD),
    Row("normalize/mean-tensor-complex", "normalize", lambda: ((_img(), torch.zeros(3, dtype=torch.complex64), S), {}), TypeError, ARG_MEAN),
    Row("normalize/std-tensor-bool", "normalize", lambda: ((_img(), M, torch.ones(3, dtype=torch.bool)), {}), TypeError, ARG_STD),
    Row("normalize/mean-nan", "normalize", lambda: ((_img(), [NAN, 0.5, 0.5], S), {}), ValueError, ARG_MEAN),
    Row("normalize/mean-inf-scalar", "normalize", lambda: ((_img(), INF, S), {}), ValueError, ARG_MEAN),
    Row("normalize/std-inf", "normalize", lambda: ((_img(), M, [0.2, -INF, 0.2]), {}), ValueError, ARG_STD),
    Row("normalize/std-zero", "normalize", lambda: ((_img(), M, [0.2, 0.0, 0.2]), {}), ValueError, ARG_STD),
    Row("normalize/std-subnormal", "normalize", lambda: ((_img(), M, [0.2, 1e-40, 0.2]), {}), ValueError, ARG_STD),
    Row("normalize/std-tiny-coefficient-overflows", "normalize", lambda: ((_img(), [1e30] * 3, [1e-10] * 3), {}), ValueError, ARG_STD),
    Row("normalize/std-zero-scalar", "normalize", lambda: ((_img(), 0.5, 0.0), {}), ValueError, ARG_STD),
    # ---- normalize: keyword arguments ----------------------------------------------------------------------
    Row("normalize/dim-out-of-range", "normalize", lambda: ((_img(), M, S), {"dim": 4}), IndexError, ARG_DIM),
    Row("normalize/dim-negative-out-of-range", "normalize", lambda: ((_img(), M, S), {"dim": -5}), IndexError, ARG_DIM),
    Row("normalize/dim-str", "normalize", lambda: ((_img(), M, S), {"dim": "C"}), TypeError, ARG_DIM),
    Row("normalize/dim-float", "normalize", lambda: ((_img(), M, S), {"dim": 1.0}), TypeError, ARG_DIM),
    Row("normalize/dim-None", "normalize", lambda: ((_img(), M, S), {"dim": None}), TypeError, ARG_DIM),
    Row("normalize/dtype-int32", "normalize", lambda: ((_img(), M, S), {"dtype": torch.int32}), TypeError, r"\bdtype\b"),
    Row("normalize/dtype-uint8", "normalize", lambda: ((_img(), M, S), {"dtype": torch.uint8}), TypeError, r"\bdtype\b"),
    Row("normalize/dtype-complex", "normalize", lambda: ((_img(), M, S), {"dtype": torch.complex64}), TypeError, r"\bdtype\b"),
    Row("normalize/dtype-str", "normalize", lambda: ((_img(), M, S), {"dtype": "float32"}), TypeError, r"\bdtype\b"),
    Row("normalize/scale-str", "normalize", lambda: ((_img(), M, S), {"scale": "1/255"}), TypeError, r"\bscale\b"),
    Row("normalize/scale-nan", "normalize", lambda: ((_img(), M, S), {"scale": NAN}), (TypeError, ValueError), r"\bscale\b"),
    Row("normalize/memory-format-3d-for-4d", "normalize", lambda: ((_img(), M, S), {"memory_format": torch.channels_last_3d}), ValueError, r"memory_format"),
    Row("normalize/memory-format-channels-last-for-3d", "normalize", lambda: ((_img(shape=(3, 4, 4)), M, S), {"memory_format": torch.channels_last}), ValueError, r"memory_format"),
    Row("normalize/memory-format-str", "normalize", lambda: ((_img(), M, S), {"memory_format": "nhwc"}), (TypeError, ValueError), r"memory_format"),
    Row("normalize/mean-on-cpu-input-on-cuda", "normalize", lambda: ((_img(device="cuda"), torch.zeros(3), torch.ones(3, device="cuda")), {}), (ValueError, RT), ARG_MEAN, gpu=True),
    Row("normalize/std-on-cuda-input-on-cpu", "normalize", lambda: ((_img(), torch.zeros(3), torch.ones(3, device="cuda")), {}), (ValueError, RT), ARG_STD, gpu=True),
    # ---- Normalize (the module) ---------------------------------------------------------------------------
    Row("Normalize/mean-str", "Normalize", a("abc", S), TypeError, ARG_MEAN),
    Row("Normalize/mean-None", "Normalize", a(None, S), TypeError, ARG_MEAN),
    Row("Normalize/std-str-element", "Normalize", a(M, [0.2, "x", 0.2]), TypeError, ARG_STD),
    Row("Normalize/mean-complex-tensor", "Normalize", lambda: ((torch.zeros(3, dtype=torch.complex64), S), {}), TypeError, ARG_MEAN),
    Row("Normalize/mean-2d", "Normalize", a([M], S), ValueError, ARG_MEAN),
    Row("Normalize/std-empty", "Normalize", a(M, []), ValueError, ARG_STD),
    Row("Normalize/mean-nan", "Normalize", a([NAN] * 3, S), ValueError, ARG_MEAN),
    Row("Normalize/std-inf", "Normalize", a(M, [INF] * 3), ValueError, ARG_STD),
    Row("Normalize/std-zero", "Normalize", a(M, [0.2, 0.0, 0.2]), ValueError, ARG_STD),
    Row("Normalize/forward-channel-mismatch", "Normalize.forward", lambda: (((M, S), {}, (_img(shape=(1, 4, 2, 2)),)), {}), ValueError, ARG_MEAN),
    Row("Normalize/forward-str-input", "Normalize.forward", lambda: (((M, S), {}, ("img.png",)), {}), TypeError, ARG_INPUT),
    Row("Normalize/forward-bad-dim", "Normalize.forward", lambda: (((M, S), {"dim": 5}, (_img(),)), {}), IndexError, ARG_DIM),
    # ---- torch.ops.tensorops.normalize* (what TorchScript calls): the C++ checks --------------------------
    Row("ops.normalize/input-bool", "ops.normalize", lambda: ((_img(torch.bool), [0.5], [1.0], 1, 1.0, torch.float32, torch.preserve_format), {}), TypeError, ARG_INPUT),
    Row("ops.normalize/input-0dim", "ops.normalize", lambda: ((torch.tensor(1.0), [0.5], [1.0], 0, 1.0, torch.float32, torch.preserve_format), {}), ValueError, ARG_INPUT),
    Row("ops.normalize/mean-empty", "ops.normalize", lambda: ((_img(), [], [1.0], 1, 1.0, torch.float32, torch.preserve_format), {}), ValueError, ARG_MEAN),
    Row("ops.normalize/mean-length", "ops.normalize", lambda: ((_img(), [0.1, 0.2], S, 1, 1.0, torch.float32, torch.preserve_format), {}), ValueError, ARG_MEAN),
    Row("ops.normalize/dim-out-of-range", "ops.normalize", lambda: ((_img(), M, S, 7, 1.0, torch.float32, torch.preserve_format), {}), IndexError, ARG_DIM),
    Row("ops.normalize/dtype-int64", "ops.normalize", lambda: ((_img(), M, S, 1, 1.0, torch.int64, torch.preserve_format), {}), TypeError, r"\bdtype\b"),
    Row("ops.normalize_tensor/std-not-broadcastable", "ops.normalize_tensor", lambda: ((_img(), torch.zeros(1, 3, 1, 1), torch.ones(1, 2, 1, 1), 1.0, torch.float32, torch.preserve_format), {}), ValueError, ARG_STD),
    Row("ops.normalize_tensor/mean-wrong-rank", "ops.normalize_tensor", lambda: ((_img(), torch.zeros(3), torch.ones(1, 3, 1, 1), 1.0, torch.float32, torch.preserve_format), {}), ValueError, ARG_MEAN),
    Row("ops.normalize_tensor/mean-complex", "ops.normalize_tensor", lambda: ((_img(), torch.zeros(1, 3, 1, 1, dtype=torch.complex64), torch.ones(1, 3, 1, 1), 1.0, torch.float32, torch.preserve_format), {}), TypeError, ARG_MEAN),
    Row("ops.normalize_tensor/std-int", "ops.normalize_tensor", lambda: ((_img(), torch.zeros(1, 3, 1, 1), torch.ones(1, 3, 1, 1, dtype=torch.int32), 1.0, torch.float32, torch.preserve_format), {}), TypeError, ARG_STD),
    # ---- clamp / clamp_ -------------------------------------------------------------------------------------
    Row("clamp/input-complex", "clamp", lambda: ((torch.ones(2, 3, dtype=torch.complex64),), {"min": 0.0}), (TypeError, RT), ARG_INPUT),
    Row("clamp/input-str", "clamp", a("abc", min=0.0), TypeError, ARG_INPUT),
    Row("clamp/input-None", "clamp", a(None, min=0.0), TypeError, ARG_INPUT),
    Row("clamp/input-nested-list", "clamp", a([[1.0, 2.0]], min=0.0), TypeError, ARG_INPUT),
    Row("clamp/no-bounds", "clamp", lambda: ((_f(2, 3),), {}), (ValueError, RT), r"\bmin\b.*\bmax\b|\bmax\b.*\bmin\b"),
    Row("clamp/both-bounds-None", "clamp", lambda: ((_f(2, 3),), {"min": None, "max": None}), (ValueError, RT), r"\bmin\b.*\bmax\b|\bmax\b.*\bmin\b"),
    Row("clamp/min-str", "clamp", lambda: ((_f(2, 3),), {"min": "0"}), TypeError, ARG_MIN),
    Row("clamp/max-nested-list", "clamp", lambda: ((_f(2, 3),), {"max": [[1.0]]}), TypeError, ARG_MAX),
    Row("clamp/min-complex-number", "clamp", lambda: ((_f(2, 3),), {"min": 1 + 1j}), (TypeError, RT), ARG_MIN),
    Row("clamp/min-complex-tensor", "clamp", lambda: ((_f(2, 3),), {"min": torch.zeros(3, dtype=torch.complex64)}), (TypeError, RT), ARG_MIN),
    Row("clamp/max-dtype-object", "clamp", lambda: ((_f(2, 3),), {"max": torch.float32}), TypeError, ARG_MAX),
    Row("clamp/min-not-broadcastable", "clamp", lambda: ((_f(2, 3),), {"min": torch.zeros(4)}), (ValueError, RT), ARG_MIN),
    Row("clamp/max-not-broadcastable", "clamp", lambda: ((_f(2, 3),), {"max": torch.zeros(3, 2)}), (ValueError, RT), ARG_MAX),
    Row("clamp/min-on-cuda-input-on-cpu", "clamp", lambda: ((_f(2, 3),), {"min": torch.zeros(3, device="cuda")}), (ValueError, RT), ARG_MIN, gpu=True),
    Row("clamp/max-on-cpu-input-on-cuda", "clamp", lambda: ((_f(2, 3).cuda(),), {"max": torch.zeros(3)}), (ValueError, RT), ARG_MAX, gpu=True),
    Row("clamp_/input-str", "clamp_", a("abc", min=0.0), TypeError, ARG_INPUT),
    Row("clamp_/no-bounds", "clamp_", lambda: ((_f(2, 3),), {}), (ValueError, RT), r"\bmin\b.*\bmax\b|\bmax\b.*\bmin\b"),
    Row("clamp_/input-complex", "clamp_", lambda: ((torch.ones(2, 3, dtype=torch.complex64),), {"max": 1.0}), (TypeError, RT), ARG_INPUT),
    Row("clamp_/min-grows-input-shape", "clamp_", lambda: ((_f(2, 3),), {"min": torch.zeros(4, 2, 3)}), (ValueError, RT), ARG_MIN),
    Row("clamp_/float-bound-on-int-input", "clamp_", lambda: ((torch.arange(6).view(2, 3),), {"min": 0.5}), (TypeError, RT), ARG_MIN),
    Row("clamp_/overlapping-input", "clamp_", lambda: ((torch.zeros(1, 3).expand(2, 3),), {"min": 0.5}), (ValueError, RT), ARG_INPUT),
    Row("clamp_/max-on-cuda-input-on-cpu", "clamp_", lambda: ((_f(2, 3),), {"max": torch.zeros(3, device="cuda")}), (ValueError, RT), ARG_MAX, gpu=True),
    # ---- clamp / clamp_ on a list of tensors (tensorops/foreach.py) ------------------------------------------
    Row("clamp/list-None-element", "clamp", lambda: (([_f(2), None],), {"min": 0.0}), TypeError, ARG_INPUT),
    Row("clamp/list-complex-element", "clamp", lambda: (([_f(2), torch.ones(2, dtype=torch.complex64)],), {"min": 0.0}), (TypeError, RT), ARG_INPUT),
    Row("clamp/list-min-str", "clamp", lambda: (([_f(2)],), {"min": "0"}), TypeError, ARG_MIN),
    Row("clamp_/list-no-bounds", "clamp_", lambda: (([_f(2)],), {}), (ValueError, RT), r"\bmin\b.*\bmax\b|\bmax\b.*\bmin\b"),
    Row("clamp_/list-float-bound-on-int", "clamp_", lambda: (([torch.arange(3)],), {"min": 0.5}), (TypeError, RT), r"Float|Long|cast"),
    # ---- cat ------------------------------------------------------------------------------------------------
    Row("cat/empty-list", "cat", a([]), (ValueError, RT), ARG_TENSORS),
    Row("cat/empty-tuple", "cat", a(()), (ValueError, RT), ARG_TENSORS),
    Row("cat/a-tensor-not-a-list", "cat", lambda: ((_f(2, 3),), {}), TypeError, ARG_TENSORS),
    Row("cat/str", "cat", a("ab"), TypeError, ARG_TENSORS),
    Row("cat/None", "cat", a(None), TypeError, ARG_TENSORS),
    Row("cat/None-element", "cat", lambda: (([_f(2), None],), {}), TypeError, ARG_TENSORS),
    Row("cat/nested-list-element", "cat", a([[1.0, 2.0], [3.0]]), TypeError, ARG_TENSORS),
    Row("cat/number-element", "cat", lambda: (([_f(2), 3.0],), {}), TypeError, ARG_TENSORS),
    Row("cat/0dim-tensor", "cat", lambda: (([torch.tensor(1.0), torch.tensor(2.0)],), {}), (ValueError, RT), ARG_TENSORS),
    Row("cat/shape-mismatch", "cat", lambda: (([_f(2, 3), _f(2, 4)],), {"dim": 0}), (ValueError, RT), ARG_TENSORS),
    Row("cat/ndim-mismatch", "cat", lambda: (([_f(2, 3), _f(3)],), {}), (ValueError, RT), ARG_TENSORS),
    Row("cat/dim-out-of-range", "cat", lambda: (([_f(2, 3), _f(2, 3)],), {"dim": 2}), IndexError, ARG_DIM),
    Row("cat/dim-negative-out-of-range", "cat", lambda: (([_f(2, 3), _f(2, 3)],), {"dim": -3}), IndexError, ARG_DIM),
    Row("cat/dim-str", "cat", lambda: (([_f(2, 3), _f(2, 3)],), {"dim": "rows"}), TypeError, ARG_DIM),
    Row("cat/dim-float", "cat", lambda: (([_f(2, 3), _f(2, 3)],), {"dim": 1.0}), TypeError, ARG_DIM),
    Row("cat/mixed-devices", "cat", lambda: (([_f(2, 3), _f(2, 3).cuda()],), {}), (ValueError, RT), ARG_TENSORS, gpu=True),
    # ---- split ----------------------------------------------------------------------------------------------
    Row("split/tensor-str", "split", a("abc", 1), TypeError, ARG_TENSOR),
    Row("split/tensor-None", "split", a(None, 1), TypeError, ARG_TENSOR),
    Row("split/tensor-nested-list", "split", a([[1.0, 2.0]], 1), TypeError, ARG_TENSOR),
    Row("split/tensor-0dim", "split", lambda: ((torch.tensor(1.0), 1), {}), (ValueError, RT), ARG_TENSOR),
    Row("split/zero-split-size", "split", lambda: ((_f(4, 3), 0), {}), (ValueError, RT), ARG_SPLIT),
    Row("split/negative-split-size", "split", lambda: ((_f(4, 3), -1), {}), (ValueError, RT), ARG_SPLIT),
    Row("split/negative-section", "split", lambda: ((_f(4, 3), [-1, 5]), {}), (ValueError, RT), ARG_SPLIT),
    Row("split/sections-sum-short", "split", lambda: ((_f(4, 3), [1, 2]), {}), (ValueError, RT), ARG_SPLIT),
    Row("split/sections-sum-long", "split", lambda: ((_f(4, 3), [2, 3]), {}), (ValueError, RT), ARG_SPLIT),
    Row("split/sections-empty", "split", lambda: ((_f(4, 3), []), {}), (ValueError, RT), ARG_SPLIT),
    Row("split/split-size-float", "split", lambda: ((_f(4, 3), 1.5), {}), TypeError, ARG_SPLIT),
    Row("split/split-size-str", "split", lambda: ((_f(4, 3), "2"), {}), TypeError, ARG_SPLIT),
    Row("split/split-size-None", "split", lambda: ((_f(4, 3), None), {}), TypeError, ARG_SPLIT),
    Row("split/sections-float-element", "split", lambda: ((_f(4, 3), [1.0, 3.0]), {}), TypeError, ARG_SPLIT),
    Row("split/sections-nested", "split", lambda: ((_f(4, 3), [[1, 3]]), {}), TypeError, ARG_SPLIT),
    Row("split/dim-out-of-range", "split", lambda: ((_f(4, 3), 1), {"dim": 2}), IndexError, ARG_DIM),
    Row("split/dim-negative-out-of-range", "split", lambda: ((_f(4, 3), 1), {"dim": -3}), IndexError, ARG_DIM),
    Row("split/dim-str", "split", lambda: ((_f(4, 3), 1), {"dim": "rows"}), TypeError, ARG_DIM),
    # ---- stack / chunk ----------------------------------------------------------------------------------------
    Row("stack/a-tensor-not-a-list", "stack", lambda: ((_f(2, 3),), {}), TypeError, ARG_TENSORS),
    Row("stack/dim-out-of-range", "stack", lambda: (([_f(2, 3), _f(2, 3)],), {"dim": 3}), IndexError, ARG_DIM),
    Row("stack/dim-str", "stack", lambda: (([_f(2, 3)],), {"dim": "rows"}), TypeError, ARG_DIM),
    Row("chunk/input-str", "chunk", a("abc", 2), TypeError, ARG_INPUT),
    Row("chunk/zero-chunks", "chunk", lambda: ((_f(4, 3), 0), {}), (ValueError, RT), r"\bchunks\b"),
    Row("chunk/chunks-float", "chunk", lambda: ((_f(4, 3), 1.5), {}), TypeError, r"\bchunks\b"),
    Row("chunk/dim-out-of-range", "chunk", lambda: ((_f(4, 3), 2), {"dim": 2}), IndexError, ARG_DIM),
    # ---- crop_mirror_normalize --------------------------------------------------------------------------------
    Row("crop_mirror_normalize/images-str", "crop_mirror_normalize", a("abc", M, S, size=2), TypeError, ARG_IMAGES),
    Row("crop_mirror_normalize/images-empty-list", "crop_mirror_normalize", a([], M, S, size=2), ValueError, ARG_IMAGES),
    Row("crop_mirror_normalize/std-length-2-for-3-channels", "crop_mirror_normalize", lambda: ((_img(), M, [0.2] * 2), {"size": 2}), ValueError, ARG_STD),
    Row("crop_mirror_normalize/size-str", "crop_mirror_normalize", lambda: ((_img(), M, S), {"size": "a"}), TypeError, r"\bsize\b"),
    Row("crop_mirror_normalize/mirror-length", "crop_mirror_normalize", lambda: ((_img(shape=(2, 3, 4, 4)), M, S), {"size": 2, "mirror": torch.tensor([True])}), ValueError, r"\bmirror\b"),
    Row("crop_mirror_normalize/top-left-rows", "crop_mirror_normalize", lambda: ((_img(shape=(2, 3, 4, 4)), M, S), {"size": 2, "top_left": torch.zeros(3, 2, dtype=torch.long)}), ValueError, r"\btop_left\b"),
    Row("crop_mirror_normalize/crop-outside-the-image", "crop_mirror_normalize", lambda: ((_img(), M, S), {"size": 5}), ValueError, r"\btop_left\b"),
    Row("crop_mirror_normalize/channels-differ", "crop_mirror_normalize", lambda: (([_img(shape=(3, 4, 4)), _img(shape=(1, 4, 4))], M, S), {"size": 2}), ValueError, ARG_IMAGES),
    Row("crop_mirror_normalize/out-of-bounds-str", "crop_mirror_normalize", lambda: ((_img(), M, S), {"size": 2, "out_of_bounds": "x"}), ValueError, r"out_of_bounds"),
    # ---- resized_crop_mirror_normalize ------------------------------------------------------------------------
    Row("resized_crop_mirror_normalize/images-str", "resized_crop_mirror_normalize", a("abc", M, S, size=2), TypeError, ARG_IMAGES),
    Row("resized_crop_mirror_normalize/std-length-2-for-3-channels", "resized_crop_mirror_normalize", lambda: ((_img(), M, [0.2] * 2), {"size": 2}), ValueError, ARG_STD),
    Row("resized_crop_mirror_normalize/size-missing", "resized_crop_mirror_normalize", lambda: ((_img(), M, S), {"size": None}), TypeError, r"\bsize\b"),
    Row("resized_crop_mirror_normalize/boxes-rows", "resized_crop_mirror_normalize", lambda: ((_img(shape=(2, 3, 4, 4)), M, S), {"size": 2, "boxes": torch.zeros(3, 4)}), ValueError, r"\bboxes\b"),
    Row("resized_crop_mirror_normalize/box-outside-the-image", "resized_crop_mirror_normalize", lambda: ((_img(), M, S), {"size": 2, "boxes": torch.tensor([[0, 0, 5, 4]])}), ValueError, r"\bboxes\b.*sample 0"),
    Row("resized_crop_mirror_normalize/box-empty", "resized_crop_mirror_normalize", lambda: ((_img(), M, S), {"size": 2, "boxes": torch.tensor([[0, 0, 0, 4]])}), ValueError, r"\bboxes\b.*sample 0"),
    Row("resized_crop_mirror_normalize/interpolation", "resized_crop_mirror_normalize", lambda: ((_img(), M, S), {"size": 2, "interpolation": "area"}), ValueError, r"\binterpolation\b"),
    Row("resized_crop_mirror_normalize/uint8-with-stats", "resized_crop_mirror_normalize", lambda: ((_img(), M, S), {"size": 2, "dtype": torch.uint8}), ValueError, r"mean=None"),
    Row("resized_crop_mirror_normalize/out-shape", "resized_crop_mirror_normalize", lambda: ((_img(), M, S), {"size": 2, "out": torch.empty(1, 3, 3, 3)}), ValueError, r"\bout\b"),
    # ---- decode_resized_crop_mirror_normalize: bad bytes are ordinary input, named by sample (and path) --------
    Row("decode_resized_crop_mirror_normalize/data-bytes-not-list", "decode_resized_crop_mirror_normalize", a(b"\xff\xd8\xff", M, S, size=2), TypeError, r"\bdata\b"),
    Row("decode_resized_crop_mirror_normalize/data-empty-list", "decode_resized_crop_mirror_normalize", a([], M, S, size=2), ValueError, r"\bdata\b"),
    Row("decode_resized_crop_mirror_normalize/data-float-tensor", "decode_resized_crop_mirror_normalize", a([torch.zeros(3)], M, S, size=2), TypeError, r"data\[0\]"),
    Row("decode_resized_crop_mirror_normalize/data-empty-bytes", "decode_resized_crop_mirror_normalize", a([b""], M, S, size=2, boxes=[[0, 0, 1, 1]]), ValueError, r"sample 0\b.*empty"),
    Row("decode_resized_crop_mirror_normalize/data-random-bytes", "decode_resized_crop_mirror_normalize", a([bytes(range(256)) * 4], M, S, size=2, boxes=[[0, 0, 1, 1]], paths=["x.jpg"]), ValueError, r"sample 0 \(x\.jpg\)"),
    Row("decode_resized_crop_mirror_normalize/data-truncated-jpeg", "decode_resized_crop_mirror_normalize", lambda: (([_jpeg_bytes()[:40]], M, S), {"size": 2, "boxes": [[0, 0, 8, 8]]}), ValueError, r"sample 0\b"),
    Row("decode_resized_crop_mirror_normalize/data-bomb-header", "decode_resized_crop_mirror_normalize", lambda: (([_jpeg_bytes(declare=(60000, 60000))], M, S), {"size": 2, "boxes": [[0, 0, 8, 8]]}), ValueError, r"sample 0\b.*max_pixels"),
    Row("decode_resized_crop_mirror_normalize/box-outside-the-image", "decode_resized_crop_mirror_normalize", lambda: (([_jpeg_bytes()], M, S), {"size": 2, "boxes": [[0, 0, 9, 8]]}), ValueError, r"\bboxes\b.*sample 0"),
    Row("decode_resized_crop_mirror_normalize/on-error", "decode_resized_crop_mirror_normalize", lambda: (([_jpeg_bytes()], M, S), {"size": 2, "on_error": "ignore"}), ValueError, r"\bon_error\b"),
    Row("decode_resized_crop_mirror_normalize/max-pixels", "decode_resized_crop_mirror_normalize", lambda: (([_jpeg_bytes()], M, S), {"size": 2, "max_pixels": -1}), ValueError, r"\bmax_pixels\b"),
    Row("decode_resized_crop_mirror_normalize/paths-length", "decode_resized_crop_mirror_normalize", lambda: (([_jpeg_bytes()], M, S), {"size": 2, "paths": ["a", "b"]}), ValueError, r"\bpaths\b"),
    Row("decode_resized_crop_mirror_normalize/out-shape", "decode_resized_crop_mirror_normalize", lambda: (([_jpeg_bytes()], M, S), {"size": 2, "out": torch.empty(1, 3, 3, 3)}), ValueError, r"\bout\b"),
    # ---- tensorops.augment (tensorops/augment/functional.py): the per-sample checks name the argument and sample --
    *_augment_rows(),
    Row("adjust_brightness/factor-length-3-for-2-samples", "adjust_brightness", lambda: ((_u8(), torch.ones(3)), {}), ValueError, r"\bbrightness_factor\b.*\(2,\)"),
    Row("adjust_brightness/factor-str", "adjust_brightness", lambda: ((_u8(), "1.5"), {}), TypeError, r"\bbrightness_factor\b"),
    Row("adjust_brightness/factor-negative", "adjust_brightness", lambda: ((_u8(), torch.tensor([1.0, -0.5])), {}), ValueError, r"\bbrightness_factor of sample 1\b"),
    Row("adjust_contrast/factor-negative", "adjust_contrast", lambda: ((_u8(), torch.tensor([-1.0, 0.5])), {}), ValueError, r"\bcontrast_factor of sample 0\b"),
    Row("adjust_saturation/factor-negative", "adjust_saturation", lambda: ((_u8(), -2.0), {}), ValueError, r"\bsaturation_factor of sample 0\b"),
    Row("adjust_saturation/factor-2d", "adjust_saturation", lambda: ((_u8(), torch.ones(2, 1)), {}), ValueError, r"\bsaturation_factor\b"),
    Row("adjust_sharpness/factor-nan", "adjust_sharpness", lambda: ((_u8(), torch.tensor([1.0, NAN])), {}), ValueError, r"\bsharpness_factor of sample 1\b"),
    Row("adjust_hue/factor-above-half", "adjust_hue", lambda: ((_u8(), torch.tensor([0.1, 0.7])), {}), ValueError, r"\bhue_factor of sample 1\b.*\[-0\.5, 0\.5\]"),
    Row("adjust_hue/factor-length", "adjust_hue", lambda: ((_u8(), [0.1]), {}), ValueError, r"\bhue_factor\b"),
    Row("posterize/bits-9", "posterize", lambda: ((_u8(), 9), {}), ValueError, r"\bbits of sample 0\b"),
    Row("posterize/bits-fraction", "posterize", lambda: ((_u8(), torch.tensor([2.0, 1.5])), {}), ValueError, r"\bbits of sample 1\b"),
    Row("solarize/threshold-above-255", "solarize", lambda: ((_u8(), torch.tensor([255.0, 256.0])), {}), ValueError, r"\bthreshold of sample 1\b"),
    Row("rgb_to_grayscale/num-output-channels-2", "rgb_to_grayscale", lambda: ((_u8(), 2), {}), ValueError, r"\bnum_output_channels\b"),
    Row("affine/scale-zero", "affine", lambda: ((_u8(),), {"scale": torch.tensor([1.0, 0.0])}), ValueError, r"\bscale of sample 1\b"),
    Row("affine/translate-rows", "affine", lambda: ((_u8(),), {"translate": torch.zeros(3, 2)}), ValueError, r"\btranslate\b"),
    Row("affine/shear-str", "affine", lambda: ((_u8(),), {"shear": "x"}), TypeError, r"\bshear\b"),
    Row("affine/interpolation-bicubic", "affine", lambda: ((_u8(),), {"interpolation": "bicubic"}), ValueError, r"\binterpolation\b"),
    Row("affine/fill-2-values-for-3-channels", "affine", lambda: ((_u8(),), {"fill": [1, 2]}), ValueError, r"\bfill\b"),
    Row("rotate/angle-length", "rotate", lambda: ((_u8(), torch.zeros(3)), {}), ValueError, r"\bangle\b"),
    Row("rotate/center-str", "rotate", lambda: ((_u8(), 10.0), {"center": "ab"}), TypeError, r"\bcenter\b"),
    Row("erase/boxes-3-columns", "erase", lambda: ((_u8(), torch.zeros(2, 3, dtype=torch.long)), {}), ValueError, r"\bboxes\b"),
    Row("erase/boxes-float", "erase", lambda: ((_u8(), torch.zeros(2, 4)), {}), TypeError, r"\bboxes\b"),
    Row("erase/boxes-negative", "erase", lambda: ((_u8(), torch.tensor([[0, 0, 1, 1], [0, -1, 1, 1]])), {}), ValueError, r"\bboxes of sample 1\b"),
    Row("erase/value-shape", "erase", lambda: ((_u8(), torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 2)), {}), ValueError, r"\bvalue\b"),
    Row("erase/value-str", "erase", lambda: ((_u8(), torch.zeros(2, 4, dtype=torch.long), "a"), {}), TypeError, r"\bvalue\b"),
    Row("apply_ops/ops-out-of-range", "apply_ops", lambda: ((_u8(), torch.tensor([0, 18]), torch.zeros(2)), {}), ValueError, r"\bops of sample 1\b"),
    Row("apply_ops/ops-float", "apply_ops", lambda: ((_u8(), torch.tensor([1.7, 10.2]), torch.zeros(2)), {}), TypeError, r"\bops\b"),
    Row("solarize/threshold-nan", "solarize", lambda: ((_u8(), torch.tensor([NAN, 0.0])), {}), ValueError, r"\bthreshold of sample 0\b"),
    Row("apply_ops/ops-length", "apply_ops", lambda: ((_u8(), torch.tensor([0]), torch.zeros(2)), {}), ValueError, r"\bops\b"),
    Row("apply_ops/magnitudes-length", "apply_ops", lambda: ((_u8(), torch.tensor([0, 1]), torch.zeros(3)), {}), ValueError, r"\bmagnitudes\b"),
    Row("apply_ops/hue-magnitude-out-of-range", "apply_ops", lambda: ((_u8(), torch.tensor([4, 4]), torch.tensor([0.0, 0.6])), {}), ValueError, r"\bmagnitudes \(hue\) of sample 1\b"),
    Row("apply_ops/posterize-magnitude-9", "apply_ops", lambda: ((_u8(), torch.tensor([0, 6]), torch.tensor([0.0, 9.0])), {}), ValueError, r"\bmagnitudes \(posterize\) of sample 1\b"),
    Row("apply_ops/interpolation", "apply_ops", lambda: ((_u8(), torch.tensor([0, 16]), torch.zeros(2)), {"interpolation": "area"}), ValueError, r"\binterpolation\b"),
    Row("mix/augmented-shape", "mix", lambda: ((_u8(), [_u8(shape=(2, 3, 4, 5))], torch.full((2, 2), 0.5)), {}), ValueError, r"augmented\[0\]"),
    Row("mix/augmented-float", "mix", lambda: ((_u8(), [_u8(torch.float32)], torch.full((2, 2), 0.5)), {}), TypeError, r"augmented\[0\]"),
    Row("mix/weights-columns", "mix", lambda: ((_u8(), [_u8()], torch.full((2, 3), 0.5)), {}), ValueError, r"\bweights\b"),
    Row("mix/weights-list", "mix", lambda: ((_u8(), [_u8()], [[0.5, 0.5]] * 2), {}), ValueError, r"\bweights\b"),
    # torch.ops.tensorops.augment_* (what compiled graphs call): the C++ checks
    Row("ops.augment_apply/batch-float", "ops.augment_apply", lambda: ((_u8().float(), _codes(1), _params()), {"interpolation": 0, "fill": None}), TypeError, r"\bbatch\b"),
    Row("ops.augment_apply/ops-int32", "ops.augment_apply", lambda: ((_u8(), _codes(1).int(), _params()), {"interpolation": 0, "fill": None}), TypeError, r"\bops\b"),
    Row("ops.augment_apply/ops-unknown-code", "ops.augment_apply", lambda: ((_u8(), _codes(99), _params()), {"interpolation": 0, "fill": None}), ValueError, r"\bops\b.*sample 0"),
    Row("ops.augment_apply/params-8-columns", "ops.augment_apply", lambda: ((_u8(), _codes(1), torch.zeros(2, 8, dtype=torch.float64)), {"interpolation": 0, "fill": None}), ValueError, r"\bparams\b"),
    Row("ops.augment_apply/params-float32", "ops.augment_apply", lambda: ((_u8(), _codes(1), _params().float()), {"interpolation": 0, "fill": None}), TypeError, r"\bparams\b"),
    Row("ops.augment_apply/negative-factor", "ops.augment_apply", lambda: ((_u8(), _codes(1), _params(m=[1.0, -1.0])), {"interpolation": 0, "fill": None}), ValueError, r"\bparams\b.*sample 1"),
    Row("ops.augment_apply/interpolation-2", "ops.augment_apply", lambda: ((_u8(), _codes(12), _params()), {"interpolation": 2, "fill": None}), ValueError, r"\binterpolation\b"),
    Row("ops.augment_apply/fill-2-values", "ops.augment_apply", lambda: ((_u8(), _codes(12), _params()), {"interpolation": 0, "fill": [1.0, 2.0]}), ValueError, r"\bfill\b"),
    Row("ops.augment_apply/quarter-turn-not-square", "ops.augment_apply", lambda: ((_u8(shape=(2, 3, 3, 4)), _codes(13), _params()), {"interpolation": 0, "fill": None}), ValueError, r"\bops\b.*sample 0.*square"),
    Row("ops.augment_mix/no-augmented", "ops.augment_mix", lambda: ((_u8(), [], torch.ones(2, 1)), {}), ValueError, r"\baugmented\b"),
    Row("ops.augment_mix/augmented-strides", "ops.augment_mix", lambda: ((_u8(), [_u8().contiguous(memory_format=torch.channels_last)[:, :, :, :]], torch.ones(2, 2)), {}), ValueError, r"\baugmented\b"),
    Row("ops.augment_mix/weights-float64", "ops.augment_mix", lambda: ((_u8(), [_u8()], torch.ones(2, 2, dtype=torch.float64)), {}), TypeError, r"\bweights\b"),
    Row("ops.augment_erase/boxes-int32", "ops.augment_erase", lambda: ((_u8(), torch.zeros(2, 4, dtype=torch.int32), torch.zeros(2, 3, dtype=torch.uint8)), {}), TypeError, r"\bboxes\b"),
    Row("ops.augment_erase/boxes-negative", "ops.augment_erase", lambda: ((_u8(), torch.tensor([[0, 0, 1, 1], [0, -1, 1, 1]]), torch.zeros(2, 3, dtype=torch.uint8)), {}), ValueError, r"\bboxes\b.*sample 1"),
    Row("ops.augment_erase/value-float", "ops.augment_erase", lambda: ((_u8(), torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 3)), {}), TypeError, r"\bvalue\b"),
    Row("ops.augment_erase/value-rows", "ops.augment_erase", lambda: ((_u8(), torch.zeros(2, 4, dtype=torch.long), torch.zeros(3, 3, dtype=torch.uint8)), {}), ValueError, r"\bvalue\b"),
]

# Registry ops whose bad input raises torch's own exceptions word for word (a drop-in of a function that names no
# argument), tested against torch where they are: the catalogue has no rows for them.
TORCH_ERRORS = {
    "clip_grad_value_": "tests/test_foreach_clamp.py::test_clip_grad_value_single_tensor_and_errors",
}

ROWS = {row.id: row for row in CATALOGUE}
assert len(ROWS) == len(CATALOGUE), "row ids must be unique"
SCHEMAS = {schema for op in registry.OPS.values() for schema in op.schemas}


def _known(op: str) -> bool:
    """A row's op is a registry op, the Normalize module, or a schema a registry op calls."""
    if op.startswith("ops."):
        return op[4:] in SCHEMAS
    return op.split(".")[0] in (*registry.OPS, "Normalize")


def test_rows_name_registry_ops_and_every_registry_op_has_rows():
    unknown = sorted({row.op for row in CATALOGUE if not _known(row.op)})
    assert not unknown, f"catalogue rows for ops tensorops.registry does not list: {unknown}"
    assert not _known("bogus") and not _known("ops.bogus") and _known("Normalize.forward")
    covered = {row.op.split(".")[0] for row in CATALOGUE}
    missing = [name for name in registry.OPS if name not in covered and name not in TORCH_ERRORS]
    assert not missing, f"registry ops without bad-input rows (add rows, or a TORCH_ERRORS entry): {missing}"
    assert set(TORCH_ERRORS) <= set(registry.OPS) and not set(TORCH_ERRORS) & covered


def _op_available(op: str) -> bool:
    """False only for a torch.ops row when the extension is not compiled (the schemas are not registered)."""
    return not op.startswith("ops.") or tensorops.is_compiled()


def _call(row: Row):
    args, kwargs = row.args()
    if row.op.startswith("ops."):
        return getattr(torch.ops.tensorops, row.op[4:]).default(*args, **kwargs)
    if row.op == "Normalize.forward":
        (ctor_args, ctor_kwargs, fwd_args), _ = args, kwargs
        return tensorops.Normalize(*ctor_args, **ctor_kwargs)(*fwd_args)
    fn = registry.OPS[row.op].function if row.op in registry.OPS else getattr(tensorops, row.op)
    return fn(*args, **kwargs)


def run_row(row: Row) -> Dict[str, Any]:
    """What one row did: {'status': 'ok' | 'fail' | 'skip', 'detail': ...}."""
    if not _op_available(row.op):
        return {"status": "skip", "detail": f"torch.ops.tensorops.{row.op[4:]} not registered (extension not compiled)"}
    if row.gpu and not torch.cuda.is_available():
        return {"status": "skip", "detail": "needs a CUDA GPU"}
    try:
        result = _call(row)
    except BaseException as exc:  # noqa: BLE001 - the type is what we check
        name, msg = type(exc).__name__, str(exc)
        expected = row.exc if isinstance(row.exc, tuple) else (row.exc,)
        if not isinstance(exc, expected):
            return {"status": "fail", "detail": f"raised {name} (want {'/'.join(e.__name__ for e in expected)}): {msg[:300]}"}
        if not re.search(row.match, msg):
            return {"status": "fail", "detail": f"{name} message does not name the argument (/{row.match}/): {msg[:300]}"}
        return {"status": "ok", "detail": f"{name}: {msg[:200]}"}
    return {"status": "fail", "detail": f"returned {type(result).__name__} instead of raising (a silently wrong result)"}


def _child(ids) -> None:
    """Subprocess side: run the rows in order, announcing each before it runs so a crash points at it."""
    for rid in ids:
        print("BEGIN " + json.dumps(rid), flush=True)
        res = run_row(ROWS[rid])
        print("RESULT " + json.dumps({"id": rid, **res}), flush=True)


_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_TESTS_DIR)
_CHILD = (
    "import sys, json; sys.path[:0] = {paths!r}; import warnings; warnings.simplefilter('ignore');"
    "import test_bad_input as t; t._child(json.loads(sys.stdin.read()))"
)


def run_catalogue_in_subprocesses(ids, timeout: float = 120.0) -> Dict[str, Dict[str, Any]]:
    """Every row's result; a row that kills or hangs its interpreter is a failure, and the rest of the catalogue
    runs on in a fresh interpreter."""
    results: Dict[str, Dict[str, Any]] = {}
    pending = list(ids)
    while pending:
        code = _CHILD.format(paths=[_TESTS_DIR, _ROOT])
        try:
            proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(pending), capture_output=True,
                                  text=True, timeout=timeout, cwd=_ROOT)
            out, rc, err = proc.stdout, proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            rc, err = None, f"hung for {timeout} s"
        began: Optional[str] = None
        for line in out.splitlines():
            if line.startswith("BEGIN "):
                began = json.loads(line[6:])
            elif line.startswith("RESULT "):
                res = json.loads(line[7:])
                results[res.pop("id")] = res
                began = None
        if began is not None:  # the interpreter died (or hung) inside this row
            how = f"exit status {rc}" if rc is not None else err
            results[began] = {"status": "crash", "detail": f"the interpreter died in this row ({how}): {err[-2000:]}"}
        elif rc != 0 and not all(i in results for i in pending):
            raise RuntimeError(f"catalogue subprocess failed before its first row (rc={rc}): {err[-3000:]}")
        pending = [i for i in pending if i not in results]
    return results


@pytest.fixture(scope="module")
def catalogue_results():
    return run_catalogue_in_subprocesses(list(ROWS))


def test_catalogue_runs_to_the_end_without_a_crash(catalogue_results):
    assert set(catalogue_results) == set(ROWS)
    crashed = {k: v["detail"] for k, v in catalogue_results.items() if v["status"] == "crash"}
    assert not crashed, f"rows that killed or hung the interpreter: {crashed}"
    failed = {k: v["detail"] for k, v in catalogue_results.items() if v["status"] == "fail"}
    assert not failed, "rows that did not raise as expected:\n" + "\n".join(f"  {k}: {d}" for k, d in failed.items())
    ran = [k for k, v in catalogue_results.items() if v["status"] == "ok"]
    assert ran, "no row ran"


def _param(row: Row):
    marks = []
    if row.op.startswith("ops."):
        marks.append(pytest.mark.skipif(not _op_available(row.op), reason=f"torch.ops.tensorops.{row.op[4:]} not registered (extension not compiled)"))
    if row.gpu:
        marks.append(pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (mixed devices)"))
        marks.append(pytest.mark.cuda)
    return pytest.param(row, id=row.id, marks=marks)


@pytest.mark.parametrize("row", [_param(r) for r in CATALOGUE])
def test_row(row, catalogue_results):
    res = catalogue_results[row.id]
    assert res["status"] == "ok", f"{row.id}: {res['detail']}"


@pytest.mark.parametrize("row", [_param(r) for r in CATALOGUE if r.op == "normalize" and not r.gpu])
def test_row_in_process(row):
    """The normalize rows again in this interpreter, for a traceback when one fails."""
    exc = row.exc if isinstance(row.exc, tuple) else (row.exc,)
    with pytest.raises(exc, match=row.match):
        _call(row)


# ---- statistics tensors are data: not value-checked (that would need a device sync), IEEE like torch -------
@pytest.mark.parametrize("bad", ["nan_mean", "inf_mean", "zero_std", "inf_std"])
def test_tensor_statistics_with_non_finite_values_propagate_like_torch(bad):
    x = torch.randint(0, 256, (2, 3, 4, 4), dtype=torch.uint8)
    mean, std = torch.tensor(M).view(3, 1, 1), torch.tensor(S).view(3, 1, 1)
    which, value = {"nan_mean": ("m", NAN), "inf_mean": ("m", INF), "zero_std": ("s", 0.0), "inf_std": ("s", INF)}[bad]
    (mean if which == "m" else std)[1] = value
    out = tensorops.normalize(x, mean, std)
    ref = (x.float() / 255 - mean) / std
    torch.testing.assert_close(out, ref, equal_nan=True)
