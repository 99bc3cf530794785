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


# ---- JPEGs whose first marker does not follow SOI --------------------------------------------------------------
def _photos():
    """(name, RGB array): a synthetic photo always, and scikit-image's real photographs where it is installed."""
    out = [("synthetic-61x83", jpeg_cases.photo(61, 83, seed=5))]
    try:
        from skimage import data
    except ImportError:
        return out
    return out + [("coffee", data.coffee()), ("astronaut", data.astronaut())]


def _mutants(jpeg: bytes):
    """A JPEG's first marker moved away from its SOI as damaged files have it: junk bytes after FF D8, the first
    marker's FF damaged (libjpeg then skips that whole segment as junk), zero padding before the marker."""
    assert jpeg[:3] == b"\xff\xd8\xff"
    junk = bytes(np.random.default_rng(len(jpeg)).integers(0, 255, 97, dtype=np.uint8))  # no FF: one run of junk
    return [("junk-after-soi", jpeg[:2] + b"\x00\x13\x37" + jpeg[2:]),
            ("long-junk-after-soi", jpeg[:2] + junk + jpeg[2:]),
            ("damaged-first-ff", jpeg[:2] + b"\x7f" + jpeg[3:]),
            ("zeros-after-soi", jpeg[:2] + bytes(8) + jpeg[2:])]


def _cases():
    out = []
    for name, img in _photos():
        for progressive in (False, True):
            base = jpeg_cases.encode(img, subsampling="4:2:0", quality=90, progressive=progressive)
            out += [(f"{name}-{'progressive' if progressive else 'baseline'}-{m}", d) for m, d in _mutants(base)]
    return out


def _decode_jpeg(data: bytes) -> torch.Tensor:
    """torchvision's decode_jpeg(mode=RGB) as (H, W, 3): the reference (Pillow does not identify these files)."""
    tv_io = pytest.importorskip("torchvision.io", reason="the reference for these files is torchvision's decode_jpeg "
                                "(Pillow does not read a JPEG whose first marker does not follow SOI)")
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return _quiet(tv_io.decode_jpeg, t, mode=tv_io.ImageReadMode.RGB).permute(1, 2, 0).contiguous()


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_a_jpeg_whose_first_marker_does_not_follow_soi_decodes_as_decode_jpeg_does(case, monkeypatch):
    name, data = case
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    ref = _decode_jpeg(data)
    H, W = ref.shape[:2]
    assert tensorops.io.image_size(data) == (H, W, 3)  # the header probe agrees with the decoder
    boxes = torch.tensor([[0, 0, H, W], [H // 3, W // 4, H // 2, W // 2], [1.5, 2.25, H - 3, W - 5],
                          [H - 9, W - 11, 9, 11]], dtype=torch.float64)
    kw = dict(size=(24, 19), boxes=boxes, dtype=torch.uint8)
    want = tensorops.resized_crop_mirror_normalize([ref] * len(boxes), None, None, dim=-1, **kw)
    if tensorops.build_info().get("libjpeg"):  # libjpeg skips to the first marker, and warns, as decode_jpeg does
        with pytest.warns(RuntimeWarning, match=r"sample 0 \(bytes [0-9a-f]{16}\): libjpeg warned \(.*extraneous "
                                                r"bytes before marker"):
            got = tensorops.decode_resized_crop_mirror_normalize([data] * len(boxes), None, None, **kw)
    else:  # the fallback decoder: decode_jpeg's own
        got = _quiet(tensorops.decode_resized_crop_mirror_normalize, [data] * len(boxes), None, None, **kw)
    assert torch.equal(got, want), (got.int() - want.int()).abs().flatten(1).amax(1)
    whole = _quiet(tensorops.decode_resized_crop_mirror_normalize, [data], None, None, size=(H, W),
                   dtype=torch.uint8, antialias=False)  # boxes=None: the header's size, the image itself
    assert torch.equal(whole[0], ref.permute(2, 0, 1))
    status = _status([data], size=8)[1].tolist()
    assert status == [_decode_ops.WARNED if tensorops.build_info().get("libjpeg") else _decode_ops.FALLBACK]
    if tensorops.build_info().get("libjpeg"):  # strict: the warning is the error, naming the sample
        with pytest.raises(ValueError, match=r"sample 1 \(b\.jpg\): .*extraneous bytes"):
            tensorops.decode_resized_crop_mirror_normalize([GOOD, data], M, S, size=8, strict=True,
                                                           paths=["a.jpg", "b.jpg"])

