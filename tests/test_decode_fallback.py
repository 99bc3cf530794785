"""The last files torchvision's decode_jpeg decodes that the op refused, and what a refused sample gives:

* a JPEG whose first marker does not follow SOI directly (junk bytes after ``FF D8``, a damaged first ``FF``):
  libjpeg skips to the next marker with a warning, as decode_jpeg does; the op decodes it to decode_jpeg's values
  and its header probe (``tensorops.io.image_size``) reads the same size;
* the fallback decoder (JPEG kinds the linked libjpeg-turbo does not decode, builds without libjpeg-turbo) is
  torchvision's decode_jpeg where torchvision imports, then Pillow: lossless (SOF3) files decode where Pillow
  cannot read them;
* with ``on_error="fill"`` a failed sample's output is ``fill`` exactly, never what some decoder made of it."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch

import tensorops
from tensorops import _decode_ops

from conftest import requires_compiled
import jpeg_cases

pytestmark = requires_compiled
M, S = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
GOOD = jpeg_cases.encode(jpeg_cases.photo(30, 40, seed=1))


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _status(data, **kw):
    from tensorops.decode import decode_with_status

    return _quiet(decode_with_status, data, None, None, dtype=torch.uint8, on_error="fill", **kw)


# ---- on_error="fill" --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, fill", [(torch.float32, 7.0), (torch.uint8, 7.0)])
def test_a_sample_refused_before_the_op_is_fill_even_where_libjpeg_reads_its_bytes(monkeypatch, dtype, fill):
    """A sample the fallback decoder refuses is failed, and its output is ``fill``. Its bytes used to go on to
    the op, which decoded what libjpeg reads (a JPEG with junk after SOI, refused by Pillow, was flagged failed
    with the image's values). The routing is forced here (every sample to the fallback, which refuses sample 1),
    so the rule holds whatever the JPEG test says."""
    real = _decode_ops.decode_other

    def refuse_sample_1(data, label, max_pixels=0):
        if label.startswith("sample 1"):
            raise ValueError(f"tensorops: {label}: refused by the test")
        return real(data, label, max_pixels)

    monkeypatch.setattr(_decode_ops, "is_jpeg", lambda data: False)
    monkeypatch.setattr(_decode_ops, "decode_other", refuse_sample_1)
    mean, std = (M, S) if dtype == torch.float32 else (None, None)
    for boxes in (None, torch.tensor([[0, 0, 30, 40], [2, 3, 20, 30]], dtype=torch.float64)):
        out, failed = _quiet(tensorops.decode_resized_crop_mirror_normalize, [GOOD, GOOD], mean, std, size=(6, 5),
                             boxes=boxes, dtype=dtype, on_error="fill", fill=fill)
        assert failed.tolist() == [False, True]
        assert torch.equal(out[1], torch.full_like(out[1], fill)), out[1]
        assert not torch.equal(out[0], out[1])
    _, status, texts = _status([GOOD, GOOD], size=4)
    assert status.tolist() == [_decode_ops.FALLBACK, _decode_ops.FAILED]
    assert "refused by the test" in texts[1], texts
