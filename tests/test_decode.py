"""decode_resized_crop_mirror_normalize: bit for bit resized_crop_mirror_normalize of the fully decoded image, on
JPEGs the tests encode (every subsampling, progressive, restart markers, grayscale, CMYK, odd sizes) and boxes
that touch every edge; bad bytes (truncations, flips, random data, a bomb header) are a ValueError naming the
sample, never a crash; other formats and builds without libjpeg-turbo take the whole-image path."""
from __future__ import annotations

import io
import threading
import warnings

import numpy as np
import pytest
import torch

import tensorops
from tensorops import _decode_ops

from conftest import kernel_ran, requires_compiled
import jpeg_cases

pytestmark = requires_compiled
M, S = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
needs_libjpeg = pytest.mark.skipif(not tensorops.build_info().get("libjpeg"),
                                   reason="this build has no libjpeg-turbo (the whole-image path is tested below)")


def reference_decode(data: bytes) -> tuple:
    """The reference decode, (H, W, 3) uint8, and the decoder that gave it: torchvision.io.decode_jpeg(mode=RGB)
    where torchvision is installed (what the op promises to equal), else Pillow's (equal to it on this
    libjpeg-turbo, but for the files cut short that Pillow decodes: see cut_short); CMYK files as Pillow's
    convert("RGB") (torchvision converts those its own way)."""
    from PIL import Image

    im = Image.open(io.BytesIO(data))
    if im.mode != "CMYK":
        try:
            from torchvision.io import ImageReadMode, decode_jpeg
        except ImportError:
            pass
        else:
            t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
            return decode_jpeg(t, mode=ImageReadMode.RGB).permute(1, 2, 0).contiguous(), "decode_jpeg"
    return torch.from_numpy(np.array(im.convert("RGB"))), "Pillow"


def full_decode(data: bytes) -> torch.Tensor:
    """reference_decode's image."""
    return reference_decode(data)[0]


# The frame kinds (SOF markers) the linked libjpeg-turbo decodes itself, 8-bit samples only: baseline, extended and
# progressive, Huffman-coded (and arithmetic-coded where build_info says it was compiled in). The others go through
# the op's fallback decoder, Pillow, which then decides.
_OWN_KINDS = {0xC0, 0xC1, 0xC2} | ({0xC9, 0xCA} if "arithmetic" in tensorops.build_info().get("jpeg_kinds", "")
                                   else set())


def cut_short(data: bytes) -> bool:
    """The fidelity guide's rule, written here on its own (not asked of the op): a JPEG of a kind the linked
    libjpeg-turbo decodes is cut short when no end-of-image marker (FF D9) follows its first scan's header.
    decode_jpeg refuses such a file (it reads the file to that marker); Pillow decodes some of them (it stops
    once it has every row: damaged tables or scan data can give every row before the cut), and the op refuses
    them all, with or without torchvision. The markers are walked as libjpeg reads them: bytes before a marker
    skipped, FF fill bytes and FF 00 pairs passed over, RSTn and TEM without a length. False where the header
    itself is not whole (libjpeg's header read then decides, not this rule)."""
    if not tensorops.build_info().get("libjpeg") or data[:2] != b"\xff\xd8":
        return False
    pos, sof = 2, None
    while True:
        while pos < len(data) and data[pos] != 0xFF:  # junk before a marker
            pos += 1
        while pos < len(data) and data[pos] == 0xFF:  # the marker's FF and any fill bytes before its code
            pos += 1
        if pos >= len(data):
            return False
        code = data[pos]
        pos += 1
        if code == 0x00 or code == 0x01 or 0xD0 <= code <= 0xD8:  # FF 00, TEM, RSTn, SOI: no length
            continue
        if code == 0xD9 or pos + 2 > len(data):  # EOI before any scan, or no length: the header read refuses
            return False
        length = (data[pos] << 8) | data[pos + 1]
        if 0xC0 <= code <= 0xCF and code not in (0xC4, 0xC8, 0xCC) and sof is None:  # the frame: SOFn
            sof = (code, data[pos + 2] if pos + 2 < len(data) else None)
        if code == 0xDA:
            if sof is None or sof[0] not in _OWN_KINDS or sof[1] != 8:
                return False  # no frame, or one the fallback decodes
            return b"\xff\xd9" not in data[pos + length:]
        pos += length


def boxes_for(H: int, W: int, rng: np.random.Generator, n: int = 12) -> list:
    """Integer and fractional boxes inside an H x W image: the whole image, one pixel in each corner, strips along
    every edge, and random ones."""
    out = [[0, 0, H, W], [0, 0, 1, 1], [H - 1, W - 1, 1, 1], [0, W - 1, H, 1], [H - 1, 0, 1, W],
           [0.5 * (H > 1), 0.25 * (W > 1), H - 0.5 * (H > 1), W - 0.25 * (W > 1)]]
    for _ in range(n):
        bh, bw = rng.uniform(0.2, 1) * H, rng.uniform(0.2, 1) * W
        top, left = rng.uniform(0, H - bh), rng.uniform(0, W - bw)
        out.append([top, left, bh, bw] if rng.random() < 0.5 else [int(top), int(left), max(1, int(bh)),
                                                                    max(1, int(bw))])
    return out


@needs_libjpeg
@pytest.mark.parametrize("case", jpeg_cases.CASES, ids=[c[0] for c in jpeg_cases.CASES])
def test_bit_identical_to_resizing_the_full_decode(case):
    name, data = case
    full = full_decode(data)
    H, W = full.shape[:2]
    rng = np.random.default_rng(len(data))
    boxes = torch.tensor(boxes_for(H, W, rng), dtype=torch.float64)
    N = len(boxes)
    mirror = torch.from_numpy(rng.random(N) < 0.5)
    for interpolation, antialias, crop_first, size in (("bilinear", True, True, (24, 31)),
                                                       ("bilinear", True, False, (7, 5)),
                                                       ("bicubic", True, True, (16, 16)),
                                                       ("bilinear", False, True, (9, 40)),
                                                       ("nearest", False, False, (12, 8))):
        kw = dict(size=size, boxes=boxes, mirror=mirror, interpolation=interpolation, antialias=antialias,
                  crop_first=crop_first)
        ref = tensorops.resized_crop_mirror_normalize([full] * N, M, S, dim=-1, **kw)
        got = tensorops.decode_resized_crop_mirror_normalize([data] * N, M, S, **kw)
        diff = (got - ref).abs().flatten(1).amax(1)
        assert torch.equal(got, ref), f"{name} {interpolation} crop_first={crop_first}: samples differ by {diff}"


@needs_libjpeg
def test_inputs_forms_uint8_output_out_and_the_kernel_ran():
    name, data = jpeg_cases.CASES[-1]
    full = full_decode(data)
    boxes = torch.tensor([[10, 20, 200, 300], [0.5, 1.5, 250.0, 301.25]], dtype=torch.float64)
    ref = tensorops.resized_crop_mirror_normalize([full, full], M, S, dim=-1, size=32, boxes=boxes)
    forms = [data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8),
             torch.frombuffer(bytearray(data), dtype=torch.uint8)]
    for form in forms:
        got, names = kernel_ran(tensorops.decode_resized_crop_mirror_normalize, [form, form], M, S, size=32,
                                boxes=boxes)
        assert "tensorops::decode_resized_crop_mirror_normalize" in names, (type(form), names)
        assert torch.equal(got, ref), type(form)
    u8 = tensorops.decode_resized_crop_mirror_normalize([data] * 2, None, None, size=32, boxes=boxes,
                                                        dtype=torch.uint8)
    assert torch.equal(u8, tensorops.resized_crop_mirror_normalize([full] * 2, None, None, dim=-1, size=32,
                                                                   boxes=boxes, dtype=torch.uint8))
    out = torch.empty(2, 3, 32, 32).contiguous(memory_format=torch.channels_last)
    res = tensorops.decode_resized_crop_mirror_normalize([data] * 2, M, S, size=32, boxes=boxes, out=out)
    assert res is out and torch.equal(out, ref)
    whole = tensorops.decode_resized_crop_mirror_normalize([data], M, S, size=16)  # boxes=None: the whole image
    assert torch.equal(whole, tensorops.resized_crop_mirror_normalize([full], M, S, dim=-1, size=16))


def _scale_for(box, size):
    """The reduced-scale rule as documented: the smallest 1/d (d = 8, 4, 2) at which the box still covers size."""
    for d in (8, 4, 2):
        if box[2] >= d * size[0] and box[3] >= d * size[1]:
            return d
    return 1


@needs_libjpeg
@pytest.mark.parametrize("subsampling,progressive", [("4:2:0", False), ("4:4:4", False), ("4:2:2", True)])
def test_reduced_scale_decodes_boxes_as_the_whole_scaled_image_and_stays_close_to_exact(subsampling, progressive):
    H, W = 400, 320  # divisible by 8: each whole scaled image is itself an identity resize of the op's
    data = jpeg_cases.encode(jpeg_cases.photo(H, W, seed=3), subsampling=subsampling, progressive=progressive)
    scaled = {d: tensorops.decode_resized_crop_mirror_normalize(
        [data], None, None, size=(H // d, W // d), dtype=torch.uint8, reduced_scale=True)[0].permute(1, 2, 0)
        for d in (2, 4, 8)}
    assert scaled[8].shape == (50, 40, 3)
    boxes = [[0, 0, H, W], [13, 7, 300, 250], [H - 200, W - 120, 200, 120], [0.5, 3.25, 171.5, 99.0], [5, 5, 40, 40]]
    full = full_decode(data)
    for size in ((24, 24), (48, 31), (90, 70)):
        kw = dict(size=size, boxes=torch.tensor(boxes, dtype=torch.float64), dtype=torch.uint8)
        got = tensorops.decode_resized_crop_mirror_normalize([data] * len(boxes), None, None, reduced_scale=True,
                                                             **kw)
        exact = tensorops.resized_crop_mirror_normalize([full] * len(boxes), None, None, dim=-1, **kw)
        for n, box in enumerate(boxes):
            d = _scale_for(box, size)
            src = full if d == 1 else scaled[d]
            ref = tensorops.resized_crop_mirror_normalize([src], None, None, dim=-1, size=size, dtype=torch.uint8,
                                                          boxes=torch.tensor([[v / d for v in box]]))[0]
            assert torch.equal(got[n], ref), f"box {box} at 1/{d}: differs from the whole image decoded at 1/{d}"
            mse = (got[n].double() - exact[n].double()).pow(2).mean().item()
            psnr = 10 * np.log10(255 ** 2 / max(mse, 1e-12))
            assert d == 1 and mse == 0 or psnr > 30, f"box {box} at 1/{d}: PSNR {psnr:.1f} dB from the exact path"
    with pytest.raises(TypeError, match="reduced_scale must be a bool"):
        tensorops.decode_resized_crop_mirror_normalize([data], M, S, size=8, reduced_scale=1)


def _check_bad(data, label="sample 1"):
    """data, as sample 1 beside a good JPEG: a valid batch or a ValueError naming sample 1, and with
    on_error="fill" the same verdict (failed[1]) and sample 0 untouched."""
    good = jpeg_cases.CASES[0][1]
    boxes = torch.tensor([[0, 0, 4, 4], [0, 0, 1, 1]], dtype=torch.float64)
    try:
        tensorops.decode_resized_crop_mirror_normalize([good, data], M, S, size=4, boxes=boxes, paths=["a", "b"])
        raised = False
    except ValueError as e:
        assert f"{label} (b)" in str(e), str(e)
        raised = True
    out, failed = tensorops.decode_resized_crop_mirror_normalize([good, data], M, S, size=4, boxes=boxes,
                                                                 on_error="fill", fill=7.0)
    assert failed.tolist() == [False, raised]
    if raised:
        assert (out[1] == 7.0).all()
    return raised


def test_bad_data_is_a_value_error_naming_the_sample():
    good = jpeg_cases.CASES[0][1]
    for data in (b"", b"\xff\xd8", b"\xff\xd8\xff", good[:20], good[: len(good) // 3], bytes(range(256)) * 3,
                 b"\xff\xd8\xff" + bytes(500)):
        assert _check_bad(data), data[:16]


def test_decompression_bomb_header_is_refused_before_decoding(monkeypatch):
    small = jpeg_cases.encode(jpeg_cases.photo(8, 8))
    data = bytearray(small)
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = (50000).to_bytes(2, "big") + (50000).to_bytes(2, "big")
    with pytest.raises(ValueError, match=r"sample 0\b.*max_pixels"):
        tensorops.decode_resized_crop_mirror_normalize([bytes(data)], M, S, size=2, boxes=[[0, 0, 8, 8]])
    # the same header with the limit lifted: the declared rows are missing, which libjpeg warns about and fills
    # (as decode_jpeg would); the op decodes the box without a hang, and strict=True refuses the file. Without
    # libjpeg-turbo, Pillow refuses the header itself (its own bomb limit).
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    lifted = dict(size=2, boxes=[[49990, 49990, 8, 8]], max_pixels=None)
    if tensorops.build_info().get("libjpeg"):
        with pytest.warns(RuntimeWarning, match=r"sample 0 .*libjpeg warned"):
            tensorops.decode_resized_crop_mirror_normalize([bytes(data)], M, S, **lifted)
        with pytest.raises(ValueError, match=r"sample 0\b"):
            tensorops.decode_resized_crop_mirror_normalize([bytes(data)], M, S, strict=True, **lifted)
    else:
        with pytest.raises(ValueError, match=r"sample 0\b.*decompression bomb"):
            tensorops.decode_resized_crop_mirror_normalize([bytes(data)], M, S, **lifted)


@needs_libjpeg
@pytest.mark.parametrize("kw", [dict(subsampling="4:2:0"), dict(subsampling="4:4:4"), dict(subsampling="4:2:2"),
                                dict(mode="L"), dict(mode="CMYK"), dict(subsampling="4:4:4", restart=2)],
                         ids=["420", "444", "422", "gray", "cmyk", "444-restart"])
def test_reduced_scale_reads_no_scan_a_progressive_file_does_not_need_at_one_eighth(kw, monkeypatch):
    # jpeg.h drop_ac_scans: at 1/8 a luma (or 4:4:4) block is one pixel, read from its DC coefficient alone, so
    # the AC scans of those components are dropped before decoding; the values must be the whole file's
    H, W = 200, 168
    data = jpeg_cases.encode(jpeg_cases.photo(H, W, seed=4), progressive=True, **kw)
    boxes = torch.tensor([[0, 0, H, W], [16, 8, 160, 152], [H - 90, W - 100, 90, 100], [3.5, 1.25, 120.5, 99.0]],
                         dtype=torch.float64)
    call = lambda: tensorops.decode_resized_crop_mirror_normalize(  # noqa: E731 - boxes over 8x the output: 1/8
        [data] * len(boxes), None, None, size=(11, 12), boxes=boxes, dtype=torch.uint8, reduced_scale=True)
    before = tensorops._extension._C.jpeg_dc_scan_decodes()
    dropped = call()
    assert tensorops._extension._C.jpeg_dc_scan_decodes() == before + len(boxes)  # every region took that path
    monkeypatch.setenv("TENSOROPS_JPEG_DC_SCANS", "0")
    whole = call()
    assert tensorops._extension._C.jpeg_dc_scan_decodes() == before + len(boxes)  # switched off: none did
    assert torch.equal(dropped, whole)


def _reference_or_none(data: bytes) -> tuple:
    """reference_decode's (image, decoder), or (None, None) where the reference decoder refuses the file."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return reference_decode(data)
    except (RuntimeError, OSError, ValueError, SyntaxError):
        return None, None


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the damaged files libjpeg warns about, named one by one
def test_fuzzed_jpegs_never_crash():
    """2400 mutants (truncations at many offsets, byte flips in the header and the scan) of three JPEGs, half of
    them decoded at reduced scale: each is a valid batch or a ValueError naming its sample; the ASan+UBSan CPU
    build runs this test too. The others, decoded exactly: every mutant the reference decoder decodes is decoded,
    to the same values (its whole image resized), none refused, where that decoder is decode_jpeg; where it is
    Pillow (no torchvision installed), the same but for the one documented difference (fidelity guide): a file
    cut short (cut_short) that Pillow decodes is refused, as decode_jpeg refuses it."""
    bases = [jpeg_cases.encode(jpeg_cases.photo(48, 64, seed=1)),
             jpeg_cases.encode(jpeg_cases.photo(33, 17, seed=2), subsampling="4:4:4", progressive=True),
             jpeg_cases.encode(jpeg_cases.photo(40, 40, seed=3), subsampling="4:2:2", restart=1)]
    errors = total = compared = cut_refused = 0
    for k, base in enumerate(bases):
        for data in jpeg_cases.corrupt_variants(base, 800, seed=k):
            total += 1
            reduced = total % 2 == 0  # every other mutant decoded at 1/8 scale (16x16 boxes over a 2x2 output)
            ref, decoder = (None, None) if reduced else _reference_or_none(data)
            refuse = decoder == "Pillow" and cut_short(data)  # the documented difference from Pillow
            box = [0, 0, 1, 1] if ref is None else [0, 0, ref.shape[0], ref.shape[1]]
            boxes = torch.tensor([[0, 0, 16, 16]] * 2 if reduced else [[0, 0, 4, 4], box], dtype=torch.float64)
            try:
                out = tensorops.decode_resized_crop_mirror_normalize([base, data], M, S, size=2 if reduced else 4,
                                                                     boxes=boxes, reduced_scale=reduced,
                                                                     out_of_bounds="pad")
                assert torch.isfinite(out).all()
            except ValueError as e:
                assert "sample 1" in str(e), str(e)
                if refuse:
                    assert "end-of-image marker" in str(e), f"mutant {total}: cut short, refused otherwise: {e}"
                    cut_refused += 1
                else:
                    assert ref is None, f"mutant {total}: the reference ({decoder}) decodes it, the op refused it: {e}"
                errors += 1
                continue
            assert not refuse, f"mutant {total}: cut short (no end-of-image marker after its scan header), " \
                               f"which decode_jpeg refuses, and the op decoded it"
            if ref is not None:
                want = tensorops.resized_crop_mirror_normalize([ref], M, S, dim=-1, size=4, boxes=boxes[1:])
                assert torch.equal(out[1:], want), f"mutant {total}: differs from the reference decode ({decoder})"
                compared += 1
    assert total == 2400 and 0 < errors < total and compared > 200, (errors, compared, cut_refused)


def test_other_formats_decode_whole():
    from PIL import Image

    img = jpeg_cases.photo(30, 41)
    boxes = torch.tensor([[2, 3, 20, 30]], dtype=torch.float64)
    for fmt in ("PNG", "BMP", "WEBP"):
        buf = io.BytesIO()
        try:
            Image.fromarray(img).save(buf, format=fmt, **({"lossless": True} if fmt == "WEBP" else {}))
        except (KeyError, OSError) as e:
            pytest.skip(f"this Pillow cannot write {fmt}: {e}")
        ref = tensorops.resized_crop_mirror_normalize([torch.from_numpy(img)], M, S, dim=-1, size=8, boxes=boxes)
        got = tensorops.decode_resized_crop_mirror_normalize([buf.getvalue()], M, S, size=8, boxes=boxes,
                                                             paths=["n01440764/x.JPEG"])
        assert torch.equal(got, ref), fmt


def test_without_libjpeg_the_whole_image_path_warns_once_and_gives_pillows_values(monkeypatch):
    monkeypatch.setattr(_decode_ops, "has_libjpeg", lambda: False)
    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    name, data = jpeg_cases.CASES[-1]
    from PIL import Image

    pil = torch.from_numpy(np.array(Image.open(io.BytesIO(data)).convert("RGB")))
    boxes = torch.tensor([[10, 20, 200, 300]], dtype=torch.float64)
    with pytest.warns(RuntimeWarning, match="without libjpeg-turbo"):
        got = tensorops.decode_resized_crop_mirror_normalize([data], M, S, size=32, boxes=boxes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tensorops.decode_resized_crop_mirror_normalize([data], M, S, size=32, boxes=boxes)
    assert torch.equal(got, tensorops.resized_crop_mirror_normalize([pil], M, S, dim=-1, size=32, boxes=boxes))


@needs_libjpeg
def test_threads_decode_concurrently():
    datas = [d for _, d in jpeg_cases.CASES]
    fulls = [full_decode(d) for d in datas]
    boxes = torch.tensor([[0, 0, f.shape[0], f.shape[1]] for f in fulls], dtype=torch.float64)
    ref = tensorops.resized_crop_mirror_normalize(fulls, M, S, dim=-1, size=12, boxes=boxes)
    results, barrier = [], threading.Barrier(4)

    def work():
        barrier.wait()
        for _ in range(5):
            results.append(tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=12, boxes=boxes))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == 20 and all(torch.equal(r, ref) for r in results)


@needs_libjpeg
@pytest.mark.parametrize("train", [True, False])
def test_collate_on_bytes_equals_the_collate_on_decoded_images(train, tmp_path):
    from tensorops.data import ResizedCropMirrorNormalizeCollate

    datas = [d for _, d in jpeg_cases.CASES if len(d) > 2000][:6]
    assert len(datas) >= 3
    paths = []
    for k, d in enumerate(datas):
        paths.append(tmp_path / f"{k}.jpg")
        paths[-1].write_bytes(d)

    def collate():
        return ResizedCropMirrorNormalizeCollate(16, M, S, train=train, generator=torch.Generator().manual_seed(3))

    decoded = collate()([(full_decode(d).permute(2, 0, 1), k) for k, d in enumerate(datas)])
    for items in (datas, [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in datas], paths):
        batch, labels = collate()([(it, k) for k, it in enumerate(items)])
        assert torch.equal(batch, decoded[0]) and torch.equal(labels, decoded[1])


@needs_libjpeg
def test_collate_drops_a_bad_sample_and_warns_once(tmp_path):
    from tensorops.data import ResizedCropMirrorNormalizeCollate

    good = jpeg_cases.CASES[-1][1]
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(good[: len(good) // 4])
    samples = [(good, 0), (str(bad), 1), (b"not an image", 2), (good, 3)]
    with pytest.raises(ValueError, match=r"sample 1 \(.*broken\.jpg\)"):
        ResizedCropMirrorNormalizeCollate(16, M, S, train=False)(samples[:2])
    with pytest.raises(ValueError, match=r"sample 2 \(batch index 2\): not an image"):
        ResizedCropMirrorNormalizeCollate(16, M, S, train=False)(samples)
    collate = ResizedCropMirrorNormalizeCollate(16, M, S, train=False, on_error="drop")
    with pytest.warns(RuntimeWarning, match="dropped"):
        batch, labels = collate(samples)
    assert batch.shape == (2, 3, 16, 16) and labels.tolist() == [0, 3]
    ref, _ = ResizedCropMirrorNormalizeCollate(16, M, S, train=False)([(good, 0), (good, 3)])
    assert torch.equal(batch, ref)


def _without_last_scan(data: bytes) -> bytes:
    """A progressive JPEG with its last scan (libjpeg's script ends on the luma's AC refinement) cut out: still a
    valid file that decodes without a warning, whose missing coefficients libjpeg's block smoothing guesses."""
    last = data.rfind(b"\xff\xda")
    assert last > 0 and data.endswith(b"\xff\xd9")
    return data[:last] + b"\xff\xd9"


@needs_libjpeg
@pytest.mark.parametrize("subsampling", ["4:2:0", "4:4:4"])
def test_a_progressive_file_without_its_last_scan_decodes_a_column_crop_as_the_whole_image(subsampling):
    # block smoothing reads the DC values of neighbouring blocks up to two away: a crop of columns must give the
    # blocks it uses those neighbours, or its edge blocks are smoothed as image edges (up to 3 steps apart). The
    # reference is the op's own decode of every column (libjpeg-turbo 2.1.5's; torchvision's and Pillow's newer
    # libjpeg-turbo smooth such files differently: the fidelity guide's list), read back pixel for pixel
    data = _without_last_scan(jpeg_cases.encode(jpeg_cases.photo(120, 200, seed=5), subsampling=subsampling,
                                                progressive=True, quality=75))
    H, W, _ = tensorops.io.image_size(data)
    pixels = dict(mean=[0.0] * 3, std=[1.0] * 3, interpolation="nearest", antialias=False, crop_first=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an otherwise valid file: no warning
        whole = tensorops.decode_resized_crop_mirror_normalize(
            [data], size=(H, W), boxes=torch.tensor([[0, 0, H, W]], dtype=torch.float64), **pixels)[0]
        for x in (0, 17, 40, 64, 95, 150):
            for w in (9, 33, 50):
                if x + w > W:
                    continue
                box = torch.tensor([[0, x, H, w]], dtype=torch.float64)
                got = tensorops.decode_resized_crop_mirror_normalize([data], size=(H, w), boxes=box, **pixels)[0]
                steps = ((got - whole[:, :, x:x + w]).abs().max() * 255).round()
                assert torch.equal(got, whole[:, :, x:x + w]), f"columns [{x}, {x + w}): {steps} steps apart"
