"""Nothing lost in the switch from decode_jpeg: JPEGs damaged as real files are (junk before a marker, corrupt
scan data, an unknown JFIF revision or Adobe transform, bad SOS parameters, an inconsistent progression, bytes
after EOI, MJPEG frames without Huffman tables) decode as torchvision's decode_jpeg decodes them, bit for bit,
each reported once by name; strict=True refuses them; a file cut short stays an error (decode_jpeg refuses it;
Pillow too, unless it has every row before the cut: the fidelity guide's one difference); lossless JPEGs, which
the linked libjpeg-turbo 2.x cannot decode, go through the fallback decoder and the same resize; boxes narrow
enough to leave a subsampled chroma component one sample wide are bit-identical too; the collate's drop warning
names each file once."""
from __future__ import annotations

import collections
import io
import re
import warnings

import numpy as np
import pytest
import torch

import tensorops
from tensorops import _decode_ops

from conftest import kernel_ran, requires_compiled
import jpeg_cases
import test_decode
from test_decode import boxes_for, full_decode

pytestmark = requires_compiled
M, S = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
needs_libjpeg = pytest.mark.skipif(not tensorops.build_info().get("libjpeg"),
                                   reason="this build has no libjpeg-turbo (its warnings and crops are not used)")
DAMAGED = jpeg_cases.damaged()
SILENT = {"bytes-after-eoi", "mjpeg-no-huffman-tables"}  # libjpeg decodes these without a warning
# libjpeg warns about these only when it reads that far (a partial decode stops below its box) or not at all
# (changed scan bytes that still decode): the values are the point
UNSEEN = {"junk-before-eoi", "corrupt-scan-bytes"}
CUT = {"cut-in-scan", "cut-in-progressive-scans"}  # decode_jpeg and Pillow refuse these
GOOD = jpeg_cases.encode(jpeg_cases.photo(30, 40, seed=1))


def _reference(data: bytes):
    """decode_jpeg's (or Pillow's) decode, or None where it refuses the file."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return full_decode(data)
    except (RuntimeError, OSError, ValueError):
        return None


def _status(data, **kw):
    from tensorops.decode import decode_with_status

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return decode_with_status(data, None, None, dtype=torch.uint8, on_error="fill", **kw)


@needs_libjpeg
@pytest.mark.parametrize("case", DAMAGED, ids=[c[0] for c in DAMAGED])
def test_damaged_files_decode_as_decode_jpeg_does(case, monkeypatch):
    name, data = case
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    ref = _reference(data)
    if name in CUT:
        assert ref is None, f"{name}: the reference decoder was expected to refuse a file cut short"
        for strict in (False, True):
            with pytest.raises(ValueError, match=r"sample 1 \(cut\.jpg\).*(cut short|Premature end)"):
                tensorops.decode_resized_crop_mirror_normalize([GOOD, data], M, S, size=8, strict=strict,
                                                               paths=["ok.jpg", "cut.jpg"])
        return_value = _status([data], size=8)
        assert return_value[1].tolist() == [_decode_ops.FAILED]
    else:
        assert ref is not None, f"{name}: decode_jpeg refuses it (the case is meant to be one it decodes)"
        H, W = ref.shape[:2]
        boxes = torch.tensor(boxes_for(H, W, np.random.default_rng(len(data)), n=6), dtype=torch.float64)
        N = len(boxes)
        for first, (size, interpolation) in ((True, ((13, 17), "bilinear")), (False, ((8, 8), "bicubic"))):
            kw = dict(size=size, boxes=boxes, interpolation=interpolation, dtype=torch.uint8)
            want = tensorops.resized_crop_mirror_normalize([ref] * N, None, None, dim=-1, **kw)
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                got = tensorops.decode_resized_crop_mirror_normalize([data] * N, None, None, **kw)
            said = [str(w.message) for w in rec if "libjpeg warned" in str(w.message)]
            if name in SILENT or not first:  # nothing to say, or said already: once per file
                assert said == [], said
            elif name in UNSEEN:
                assert len(said) <= 1, said
            else:
                assert len(said) == 1 and re.search(r"sample 0 \(bytes [0-9a-f]{16}\): libjpeg warned", said[0])
            diff = (got.int() - want.int()).abs().flatten(1).amax(1)
            assert torch.equal(got, want), f"{name} {interpolation}: samples differ from decode_jpeg's by {diff}"
        status = _status([data], size=8)[1].tolist()
        assert status == [_decode_ops.OK if name in SILENT else _decode_ops.WARNED] or name in UNSEEN, status
    if name not in SILENT | UNSEEN:  # strict: libjpeg's warning is the error, naming the sample
        with pytest.raises(ValueError, match=r"sample 1 \(b\.jpg\): "):
            tensorops.decode_resized_crop_mirror_normalize([GOOD, data], M, S, size=8, strict=True,
                                                           paths=["a.jpg", "b.jpg"])


@needs_libjpeg
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the control file's "extraneous bytes" warning
def test_a_file_cut_short_that_pillow_decodes_is_refused_as_decode_jpeg_refuses_it(monkeypatch):
    """The fidelity guide's one difference from Pillow, with or without torchvision installed: a baseline file whose
    end-of-image marker gave way to zero bytes after its scan (it ends inside that padding) is decoded by Pillow (its
    decoder has every row before the cut and reads no further) and refused by decode_jpeg ("Image is incomplete or
    truncated"); the op refuses it as decode_jpeg does. The same file with its marker after the padding decodes, to
    the reference's values (decode_jpeg's, else Pillow's)."""
    from PIL import Image

    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    assert GOOD.endswith(b"\xff\xd9")
    cut = GOOD[:-2] + bytes(64)
    whole = cut + b"\xff\xd9"

    def pillow(data):
        return torch.from_numpy(np.array(Image.open(io.BytesIO(data)).convert("RGB")))

    assert torch.equal(pillow(cut), pillow(GOOD)), "Pillow decodes the file cut short (the difference's premise)"
    assert test_decode.cut_short(cut) and not test_decode.cut_short(whole)
    try:
        from torchvision.io import decode_jpeg
    except ImportError:
        pass
    else:  # what the op follows
        with pytest.raises(RuntimeError):
            decode_jpeg(torch.frombuffer(bytearray(cut), dtype=torch.uint8))
    for strict in (False, True):
        with pytest.raises(ValueError, match=r"sample 1 \(cut\.jpg\): the JPEG ends before its end-of-image marker"):
            tensorops.decode_resized_crop_mirror_normalize([GOOD, cut], M, S, size=8, strict=strict,
                                                           paths=["ok.jpg", "cut.jpg"])
    assert _status([cut], size=8)[1].tolist() == [_decode_ops.FAILED]
    kw = dict(size=(13, 17), boxes=torch.tensor([[0, 0, 30, 40], [3.5, 2.25, 20, 31]], dtype=torch.float64),
              dtype=torch.uint8)
    got = tensorops.decode_resized_crop_mirror_normalize([whole] * 2, None, None, **kw)
    ref = _reference(whole)  # decode_jpeg's, else Pillow's: the same image
    assert ref is not None and torch.equal(ref, pillow(GOOD))
    assert torch.equal(got, tensorops.resized_crop_mirror_normalize([ref] * 2, None, None, dim=-1, **kw))


@needs_libjpeg
def test_a_warned_file_is_reported_once_by_path_and_each_other_file_by_its_bytes(monkeypatch):
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    damaged = dict(DAMAGED)
    a, b = damaged["junk-before-sos"], damaged["marker-in-scan"]
    ok = jpeg_cases.encode(jpeg_cases.photo(30, 40))

    def messages(data, paths=None):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            tensorops.decode_resized_crop_mirror_normalize(data, M, S, size=8, paths=paths)
        return [str(w.message) for w in rec if "libjpeg warned" in str(w.message)]

    first = messages([ok, a], ["x/ok.jpg", "x/a.jpg"])
    assert len(first) == 1 and "sample 1 (x/a.jpg)" in first[0] and "extraneous bytes" in first[0], first
    assert messages([a, ok], ["x/a.jpg", "x/ok.jpg"]) == []  # the same path: already reported
    assert len(messages([ok, a])) == 1 and messages([a, ok]) == []  # no paths: by its bytes, wherever it sits
    assert len(messages([ok, b])) == 1  # other bytes at the same position: another file


@needs_libjpeg
def test_a_warning_inside_a_partial_decode_decodes_that_image_again_in_full():
    data = dict(DAMAGED)["marker-in-scan"]
    ref = _reference(data)
    H, W = ref.shape[:2]
    boxes = torch.tensor([[H - 9, W - 11, 9, 11], [H // 2, 0, H - H // 2, 7]], dtype=torch.float64)
    kw = dict(size=(9, 11), boxes=boxes, dtype=torch.uint8)
    before = tensorops._extension._C.decode_whole_row_redecodes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, names = kernel_ran(tensorops.decode_resized_crop_mirror_normalize, [data] * 2, None, None, **kw)
    assert "tensorops::decode_resized_crop_mirror_normalize" in names
    assert tensorops._extension._C.decode_whole_row_redecodes() == before + 2  # both boxes' decodes warned
    assert torch.equal(got, tensorops.resized_crop_mirror_normalize([ref] * 2, None, None, dim=-1, **kw))


def _lossless_cases():
    img = jpeg_cases.photo(45, 70, seed=7)
    return [("rgb-left", img, jpeg_cases.lossless(img, 1)), ("rgb-planar", img, jpeg_cases.lossless(img, 4)),
            ("gray-average", img[..., 1], jpeg_cases.lossless(img[..., 1], 7))]


@pytest.mark.parametrize("case", _lossless_cases(), ids=lambda c: c[0])
def test_lossless_jpegs_take_the_fallback_and_the_same_resize(case, monkeypatch):
    name, img, data = case
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    rgb = torch.from_numpy(np.ascontiguousarray(np.broadcast_to(img[..., None], img.shape + (3,)) if img.ndim == 2
                                                else img))
    from PIL import Image

    pil = torch.from_numpy(np.array(Image.open(io.BytesIO(data)).convert("RGB")))
    assert torch.equal(pil, rgb), "Pillow's decode of a lossless file is the image itself"
    ok = jpeg_cases.encode(jpeg_cases.photo(30, 40, seed=1))
    boxes = torch.tensor([[0, 0, 45, 70], [3.5, 10.25, 30, 41], [40, 0, 5, 1]], dtype=torch.float64)
    kw = dict(size=(12, 15), boxes=boxes, mirror=torch.tensor([False, True, False]))
    want = tensorops.resized_crop_mirror_normalize([rgb] * 3, M, S, dim=-1, **kw)
    if tensorops.build_info().get("libjpeg"):  # the op finds it is a kind it does not decode, and says so once
        with pytest.warns(RuntimeWarning, match=r"sample 0 \(bytes [0-9a-f]+\) is a JPEG kind .* does not decode"):
            got = tensorops.decode_resized_crop_mirror_normalize([data] * 3, M, S, **kw)
    else:  # every JPEG goes through Pillow
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = tensorops.decode_resized_crop_mirror_normalize([data] * 3, M, S, **kw)
    assert torch.equal(got, want), name
    mixed, failed = tensorops.decode_resized_crop_mirror_normalize(
        [ok, data, b"\xff\xd8\xff not a jpeg"], M, S, size=(12, 15), boxes=torch.tensor(
            [[0, 0, 30, 40], [3.5, 10.25, 30, 41], [0, 0, 1, 1]], dtype=torch.float64), on_error="fill", fill=0.0,
        mirror=torch.tensor([False, True, False]))
    assert failed.tolist() == [False, False, True]
    assert torch.equal(mixed[1], want[1])
    status = _status([data], size=8)[1].tolist()
    assert status == [_decode_ops.FALLBACK], status


@needs_libjpeg
def test_build_info_says_which_jpeg_kinds_are_decoded_in_part():
    kinds = tensorops.build_info()["jpeg_kinds"]
    assert "progressive" in kinds and "baseline" in kinds, kinds


@needs_libjpeg
@pytest.mark.parametrize("subsampling", ["4:2:0", "4:2:2", "4:4:4", "4:4:0"])
def test_boxes_one_or_two_columns_wide_at_either_edge_are_bit_identical(subsampling):
    """Widths 48..63 (every residue mod 16) and boxes of width 1 and 2 in the first and last columns, and one
    column inside: libjpeg-turbo's crop would leave 4:2:0 / 4:2:2 chroma one sample wide there and replicate it."""
    if subsampling in jpeg_cases.UNAVAILABLE or (subsampling == "4:4:0" and not _has_cv2_440()):
        pytest.skip("4:4:0 JPEGs need OpenCV (cv2) to write them")
    bad = []
    for r in range(16):
        W, H = 48 + r, 21
        data = jpeg_cases.encode(jpeg_cases.photo(H, W, seed=r), subsampling=subsampling, quality=95)
        ref = full_decode(data)
        boxes = torch.tensor([[0, 0, H, 1], [0, W - 1, H, 1], [0, 0, H, 2], [0, W - 2, H, 2], [0, 17, H, 1],
                              [5, W - 1, 7, 1], [0, 0.5, H, 0.5]], dtype=torch.float64)
        kw = dict(size=(H, 3), boxes=boxes, dtype=torch.uint8, antialias=False)
        got = tensorops.decode_resized_crop_mirror_normalize([data] * len(boxes), None, None, **kw)
        want = tensorops.resized_crop_mirror_normalize([ref] * len(boxes), None, None, dim=-1, **kw)
        for n in range(len(boxes)):
            if not torch.equal(got[n], want[n]):
                bad.append((W, boxes[n].tolist(), int((got[n].int() - want[n].int()).abs().max())))
    assert not bad, f"{subsampling}: (width, box, largest difference) {bad}"


def _has_cv2_440() -> bool:
    try:
        jpeg_cases.encode(jpeg_cases.photo(8, 8), subsampling="4:4:0")
    except NotImplementedError:
        return False
    return True


@needs_libjpeg
def test_a_real_photo_box_of_one_column_matches_the_full_decode():
    """The review's case: a 313x450 photo (W = 2 mod 16), the box [0, 449, 313, 1]."""
    data = jpeg_cases.encode(jpeg_cases.photo(313, 450, seed=11), subsampling="4:2:0", quality=90)
    ref = full_decode(data)
    boxes = torch.tensor([[0, 449, 313, 1], [0, 0, 313, 1]], dtype=torch.float64)
    kw = dict(size=(224, 224), boxes=boxes, dtype=torch.uint8)
    got = tensorops.decode_resized_crop_mirror_normalize([data] * 2, None, None, **kw)
    assert torch.equal(got, tensorops.resized_crop_mirror_normalize([ref] * 2, None, None, dim=-1, **kw))


@needs_libjpeg
def test_the_collate_drops_each_bad_file_once_even_at_the_same_batch_position(monkeypatch):
    from tensorops.data import ResizedCropMirrorNormalizeCollate

    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    ok = jpeg_cases.encode(jpeg_cases.photo(30, 40, seed=2))
    cut1, cut2 = ok[:len(ok) // 2], ok[:len(ok) // 2 + 7]
    collate = ResizedCropMirrorNormalizeCollate(8, None, None, dtype=torch.uint8, on_error="drop",
                                                generator=torch.Generator().manual_seed(0))

    def dropped(items):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            batch, labels = collate([(it, k) for k, it in enumerate(items)])
        return batch, labels, [str(w.message) for w in rec if "dropped" in str(w.message)]

    batch, labels, first = dropped([ok, cut1])
    assert batch.shape[0] == 1 and labels.tolist() == [0] and len(first) == 1
    assert "batch index 1 (bytes " in first[0] and re.search("cut short|Premature end", first[0]), first
    assert dropped([ok, cut2])[2] != [], "another bad file at the same batch position must be named too"
    assert dropped([cut1, ok])[2] == []  # the first one again, elsewhere: already named
    assert collate.report == {"warned": 0, "fallback": 0, "dropped": 3}


@needs_libjpeg
def test_the_collate_counts_warned_and_fallback_files_and_passes_strict(monkeypatch):
    from tensorops.data import ResizedCropMirrorNormalizeCollate

    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    damaged = dict(DAMAGED)
    items = [(damaged["junk-before-sos"], 0), (_lossless_cases()[0][2], 1), (damaged["bytes-after-eoi"], 2)]
    collate = ResizedCropMirrorNormalizeCollate(8, M, S, train=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch, labels = collate(items)
    assert batch.shape == (3, 3, 8, 8) and collate.report == {"warned": 1, "fallback": 1, "dropped": 0}
    strict = ResizedCropMirrorNormalizeCollate(8, M, S, train=False, strict=True)
    with pytest.raises(ValueError, match=r"sample 0 \(batch index 0\): .*extraneous bytes"):
        strict(items)
    dropping = ResizedCropMirrorNormalizeCollate(8, M, S, train=False, strict=True, on_error="drop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch, labels = dropping(items)
    assert labels.tolist() == [1, 2] and dropping.report == {"warned": 0, "fallback": 1, "dropped": 1}
    with pytest.raises(TypeError, match="strict must be a bool"):
        ResizedCropMirrorNormalizeCollate(8, M, S, strict="yes")


def test_normalizing_loader_keeps_a_namedtuple_batch():
    from tensorops.data import NormalizingLoader

    Batch = collections.namedtuple("Batch", ["images", "labels"])
    x = torch.randint(0, 256, (2, 3, 4, 4), dtype=torch.uint8)
    out = list(NormalizingLoader([Batch(x, torch.tensor([0, 1]))], M, S))
    assert type(out[0]) is Batch and out[0].labels.tolist() == [0, 1]
    torch.testing.assert_close(out[0].images, tensorops.normalize(x, M, S))
