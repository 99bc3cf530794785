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


def _decode_jpeg(data: bytes, gray: bool = False) -> torch.Tensor:
    """torchvision's decode_jpeg(mode=RGB) as (H, W, 3): the reference (Pillow does not identify these files).
    ``gray``: mode=GRAY, repeated to 3 channels (mode=RGB's values for a gray file; lossless gray files decode
    only so: libjpeg-turbo 3 converts no colours in lossless mode)."""
    tv_io = pytest.importorskip("torchvision.io", reason="the reference for these files is torchvision's decode_jpeg "
                                "(Pillow does not read a JPEG whose first marker does not follow SOI)")
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    mode = tv_io.ImageReadMode.GRAY if gray else tv_io.ImageReadMode.RGB
    return _quiet(tv_io.decode_jpeg, t, mode=mode).permute(1, 2, 0).expand(-1, -1, 3).contiguous()


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



def test_without_libjpeg_a_jpeg_whose_first_marker_does_not_follow_soi_takes_decode_jpeg_s_values(monkeypatch):
    """Builds without libjpeg-turbo decode every JPEG through the fallback: decode_jpeg where torchvision imports
    (Pillow does not identify these files)."""
    monkeypatch.setattr(_decode_ops, "has_libjpeg", lambda: False)
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    name, data = _cases()[0]
    ref = _decode_jpeg(data)
    boxes = torch.tensor([[3, 4, 40, 60]], dtype=torch.float64)
    got = _quiet(tensorops.decode_resized_crop_mirror_normalize, [data], None, None, size=(12, 9), boxes=boxes,
                 dtype=torch.uint8)
    want = tensorops.resized_crop_mirror_normalize([ref], None, None, dim=-1, size=(12, 9), boxes=boxes,
                                                   dtype=torch.uint8)
    assert torch.equal(got, want)
    cmyk = dict(jpeg_cases.CASES)["cmyk-48x64"]  # CMYK: Pillow's convert("RGB"), as the op's own decode gives it
    from PIL import Image

    pil = torch.from_numpy(np.array(Image.open(io.BytesIO(cmyk)).convert("RGB")))
    got = _quiet(tensorops.decode_resized_crop_mirror_normalize, [cmyk], None, None, size=(48, 64),
                 dtype=torch.uint8, antialias=False)
    assert torch.equal(got[0], pil.permute(2, 0, 1))


# ---- the fallback decoder: torchvision's decode_jpeg, then Pillow ------------------------------------------------
def _lossless_cases():
    img = jpeg_cases.photo(45, 70, seed=7)
    rgb = jpeg_cases.lossless(img, 1)
    gray = jpeg_cases.lossless(img[..., 1], 7)
    as_rgb = np.ascontiguousarray(np.broadcast_to(img[..., 1:2], img.shape))
    return [("rgb-left", img, rgb), ("gray-average", as_rgb, gray),
            ("rgb-junk-after-soi", img, rgb[:2] + b"\x00\x13\x37" + rgb[2:])]


def _pillow_without_lossless(monkeypatch):
    """Pillow as built on libjpeg-turbo 2.x (Debian's and older wheels): it cannot decode lossless (SOF3) JPEGs.
    Pillow 13's wheels (libjpeg-turbo 3) can, so the test stands such a Pillow in."""
    from PIL import Image

    real = Image.open

    def open_(fp, *args, **kw):
        data = fp.getvalue() if isinstance(fp, io.BytesIO) else b""
        if b"\xff\xc3" in data:  # an SOF3 marker (FF C3 cannot occur in entropy-coded data)
            raise OSError("unsupported JPEG process: SOF type 0xc3 (a Pillow on libjpeg-turbo 2.x)")
        return real(fp, *args, **kw)

    monkeypatch.setattr(Image, "open", open_)


def _expect(img: np.ndarray, data: bytes, **kw):
    """The lossless file's image through the same resize, and a check that it is decode_jpeg's decode too."""
    rgb = torch.from_numpy(img)
    assert torch.equal(_decode_jpeg(data, gray=tensorops.io.image_size(data)[2] == 1), rgb)
    return tensorops.resized_crop_mirror_normalize([rgb] * len(kw["boxes"]), M, S, dim=-1, **kw)


@pytest.mark.parametrize("case", _lossless_cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("pillow", ["pillow-13", "pillow-without-lossless"])
def test_lossless_jpegs_decode_through_decode_jpeg_where_pillow_cannot(case, pillow, monkeypatch):
    name, img, data = case
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    boxes = torch.tensor([[0, 0, 45, 70], [3.5, 10.25, 30, 41], [40, 0, 5, 1]], dtype=torch.float64)
    kw = dict(size=(12, 15), boxes=boxes, mirror=torch.tensor([False, True, False]))
    want = _expect(img, data, **kw)
    if pillow == "pillow-without-lossless":
        _pillow_without_lossless(monkeypatch)
    if tensorops.build_info().get("libjpeg"):  # the op finds a kind it does not decode, and says so once
        with pytest.warns(RuntimeWarning, match=r"sample 0 \(bytes [0-9a-f]+\) is a JPEG kind .* does not decode"):
            got = tensorops.decode_resized_crop_mirror_normalize([data] * 3, M, S, **kw)
    else:
        got = _quiet(tensorops.decode_resized_crop_mirror_normalize, [data] * 3, M, S, **kw)
    assert torch.equal(got, want), name
    assert _status([data], size=8)[1].tolist() == [_decode_ops.FALLBACK]


@pytest.mark.parametrize("libjpeg", [True, False], ids=["libjpeg", "without-libjpeg"])
def test_a_jpeg_neither_fallback_decoder_reads_is_an_error_naming_the_sample(libjpeg, monkeypatch):
    """A lossless file with junk after SOI (Pillow does not identify it) cut short in its scan (decode_jpeg refuses
    it): a ValueError naming the sample and saying what both decoders said; with on_error="fill", fill."""
    if not libjpeg:
        monkeypatch.setattr(_decode_ops, "has_libjpeg", lambda: False)
    elif not tensorops.build_info().get("libjpeg"):
        pytest.skip("this build has no libjpeg-turbo")
    pytest.importorskip("torchvision.io", reason="the case is one decode_jpeg refuses")
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    data = _lossless_cases()[2][2]
    cut = data[:len(data) * 2 // 3]
    with pytest.raises(ValueError, match=r"sample 1 \(b\.jpg\): .*torchvision's decode_jpeg refused it too"):
        _quiet(tensorops.decode_resized_crop_mirror_normalize, [GOOD, cut], M, S, size=8, paths=["a.jpg", "b.jpg"])
    out, failed = _quiet(tensorops.decode_resized_crop_mirror_normalize, [GOOD, cut], M, S, size=8,
                         on_error="fill", fill=-3.0)
    assert failed.tolist() == [False, True] and torch.equal(out[1], torch.full_like(out[1], -3.0))


def test_a_lossless_file_decode_jpeg_refuses_and_pillow_decodes_takes_pillow_s_values(monkeypatch):
    """The fidelity guide's difference: a lossless file whose end-of-image marker gave way to padding after its
    scan. decode_jpeg refuses it ("Image is incomplete or truncated"), Pillow decodes every row; the fallback,
    decode_jpeg then Pillow, gives Pillow's image (the cut-short rule concerns the kinds libjpeg-turbo decodes)."""
    tv_io = pytest.importorskip("torchvision.io", reason="the difference is decode_jpeg's refusal")
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    name, img, data = _lossless_cases()[0]
    padded = data[:-2] + bytes(64)
    with pytest.raises(RuntimeError, match="incomplete or truncated"):
        _quiet(tv_io.decode_jpeg, torch.frombuffer(bytearray(padded), dtype=torch.uint8))
    got = _quiet(tensorops.decode_resized_crop_mirror_normalize, [padded], None, None, size=(45, 70),
                 dtype=torch.uint8, antialias=False)
    assert torch.equal(got[0], torch.from_numpy(img).permute(2, 0, 1))
