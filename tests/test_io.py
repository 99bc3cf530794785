"""tensorops.io: image_size against Pillow's header reading on every test JPEG and other formats, its errors on
truncated and corrupt bytes (a ValueError or a size, never another exception), read_file and the ImageFolder loader."""
from __future__ import annotations

import ast
import doctest
import io as pyio
import os

import numpy as np
import pytest
import torch
from PIL import Image, features

import tensorops.io as tio
from jpeg_cases import CASES, UNAVAILABLE, corrupt_variants, encode, photo, scan_start

_CASE_IDS = [cid for cid, _ in CASES] + sorted(UNAVAILABLE)
_CASE_DATA = dict(CASES)


def _case(cid: str) -> bytes:
    if cid in UNAVAILABLE:
        pytest.skip(f"{cid} cannot be written here: {UNAVAILABLE[cid]}")
    return _CASE_DATA[cid]


def _pil_hwc(data: bytes):
    with Image.open(pyio.BytesIO(data)) as im:
        w, h = im.size
        return h, w, {"P": 3, "PA": 4}.get(im.mode, len(im.getbands()))


def _sof_end(data: bytes) -> int:
    """The offset just after the first SOFn segment of a well-formed JPEG (no fill bytes)."""
    i = 2
    while True:
        m, length = data[i + 1], (data[i + 2] << 8) | data[i + 3]
        i += 2 + length
        if m in (0xC0, 0xC1, 0xC2):
            return i


def _check_result(result) -> None:
    """What image_size may return for any bytes: three positive ints."""
    assert isinstance(result, tuple) and len(result) == 3, result
    assert all(type(v) is int and v > 0 for v in result), result


@pytest.mark.parametrize("cid", _CASE_IDS)
def test_jpeg_cases_match_pillow(cid):
    data = _case(cid)
    h, w = (int(v) for v in cid.rsplit("-", 1)[1].split("x"))
    channels = 1 if cid.startswith("gray") else 4 if cid.startswith("cmyk") else 3
    assert tio.image_size(data) == _pil_hwc(data) == (h, w, channels)


@pytest.mark.parametrize("sub,luma", [("4:4:4", (1, 1)), ("4:2:2", (2, 1)), ("4:2:0", (2, 2)), ("4:4:0", (1, 2))])
@pytest.mark.parametrize("progressive,restart", [(False, 0), (True, 2)])
def test_encode_writes_what_it_is_asked(sub, luma, progressive, restart):
    """The helper's options reach the file: sampling factors, SOF2, the DRI interval, and the pixels."""
    img = photo(24, 40, seed=9)
    try:
        data = encode(img, subsampling=sub, progressive=progressive, restart=restart, quality=95)
    except NotImplementedError as e:
        pytest.skip(str(e))
    header = data[:scan_start(data)]
    with Image.open(pyio.BytesIO(data)) as im:
        assert [layer[1:3] for layer in im.layer] == [luma, (1, 1), (1, 1)]
        assert bool(im.info.get("progressive")) == progressive == (b"\xff\xc2" in header)
        dri = header.find(b"\xff\xdd")
        assert (dri >= 0) == bool(restart) and (not restart or header[dri + 4:dri + 6] == bytes([0, restart]))
        err = np.abs(np.asarray(im.convert("RGB"), dtype=np.int16) - img).mean()
        assert err < 8, err  # q95 of this content: ~3-6 (noise, texture, the disc's chroma edges); a wrong image ~50


def test_jpeg_with_exif_and_icc_segments():
    img = Image.fromarray(photo(30, 41, seed=3))
    exif = Image.Exif()
    exif[0x010F] = "tensorops"  # Make
    exif[0x0112] = 6  # orientation: the header's size is the stored (unrotated) one, as Pillow's
    buf = pyio.BytesIO()
    img.save(buf, "JPEG", exif=exif.tobytes(), icc_profile=b"\0" * 3000, comment=b"hello")
    data = buf.getvalue()
    assert data.count(b"\xff\xe1") >= 1 and b"ICC_PROFILE" in data
    assert tio.image_size(data) == _pil_hwc(data) == (30, 41, 3)


def test_jpeg_fill_bytes_and_standalone_markers_are_skipped():
    data = _case("baseline-420-48x64")
    end = _sof_end(data)
    sof = data.rfind(b"\xff\xc0", 0, end)
    # fill FFs before the SOF, a TEM and a RST0 marker, and junk bytes between segments (libjpeg skips them too)
    mutated = data[:sof] + b"\xff\xff\xff\x01\xff\xd0\x12\x34" + data[sof:]
    assert tio.image_size(mutated) == (48, 64, 3)
    assert tio.image_size(data[:2] + b"\xff\xff" + data[2:]) == (48, 64, 3)


def test_jpeg_zero_size_and_bad_frame_headers():
    data = bytearray(_case("baseline-444-48x64"))
    sof = data.rfind(b"\xff\xc0", 0, _sof_end(bytes(data)))
    zero = bytearray(data)
    zero[sof + 5:sof + 9] = b"\0\0\0\0"
    with pytest.raises(ValueError, match="JPEG declares a 0x0 image"):
        tio.image_size(bytes(zero))
    zero[sof + 7:sof + 9] = b"\0\x10"  # width 16, height 0 (DNL)
    with pytest.raises(ValueError, match="JPEG declares a 16x0 image"):
        tio.image_size(bytes(zero))
    two = bytearray(data)
    two[sof + 9] = 2
    with pytest.raises(ValueError, match="declares 2 components"):
        tio.image_size(bytes(two))
    short = bytearray(data)
    short[sof + 2:sof + 4] = b"\x00\x01"
    with pytest.raises(ValueError, match="segment length 1"):
        tio.image_size(bytes(short))


def test_jpeg_without_frame_header():
    with pytest.raises(ValueError, match="not an image: .*EOI"):
        tio.image_size(b"\xff\xd8\xff\xdb\x00\x02\xff\xd9")
    with pytest.raises(ValueError, match=r"scan \(SOS\)"):
        tio.image_size(b"\xff\xd8\xff\xda\x00\x02\x00\x00")
    with pytest.raises(ValueError, match="unknown marker ff05"):
        tio.image_size(b"\xff\xd8\xff\x05\x00\x02")


@pytest.mark.parametrize("cid", ["baseline-420-48x64", "progressive-444-48x64", "gray-48x64", "cmyk-48x64",
                                 "restart1-420-48x64", "odd-420-1x1"])
def test_every_truncation_of_a_jpeg_header(cid):
    data = _case(cid)
    end, expected = _sof_end(data), tio.image_size(data)
    for k in range(0, scan_start(data) + 8):
        if k < 2:
            with pytest.raises(ValueError, match="not an image"):
                tio.image_size(data[:k])
        elif k < end:
            with pytest.raises(ValueError, match="truncated JPEG header"):
                tio.image_size(data[:k])
        else:
            assert tio.image_size(data[:k]) == expected, k


def test_corrupt_jpegs_give_a_size_or_a_value_error():
    sizes = errors = 0
    for cid in ("baseline-420-48x64", "progressive-422-48x64", "cmyk-48x64", "odd-420-7x5", "restart1-420-48x64"):
        variants = list(corrupt_variants(_case(cid), 100, seed=len(cid)))
        assert len(variants) == 100 and variants == list(corrupt_variants(_case(cid), 100, seed=len(cid)))
        for v in variants:
            try:
                result = tio.image_size(v)
            except ValueError as e:
                assert str(e), v
                errors += 1
            else:
                _check_result(result)
                sizes += 1
    assert sizes > 0 and errors > 0  # both outcomes occur: the mutants reach the header and the scan data


def test_random_bytes_give_a_size_or_a_value_error():
    rng = np.random.default_rng(0)
    prefixes = [b"", b"\xff\xd8", b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", b"RIFF",
                b"BM", b"GIF89a"]
    for k in range(400):
        data = prefixes[k % len(prefixes)] + rng.integers(0, 256, int(rng.integers(0, 80)), dtype=np.uint8).tobytes()
        try:
            _check_result(tio.image_size(data))
        except ValueError as e:
            assert str(e)


PNG_MODES = [("L", 1), ("RGB", 3), ("P", 3), ("LA", 2), ("RGBA", 4), ("I;16", 1), ("1", 1)]


@pytest.mark.parametrize("mode,channels", PNG_MODES)
def test_png_each_colour_type(mode, channels):
    im = Image.fromarray(photo(13, 21, seed=5)).convert("RGBA" if mode in ("LA", "RGBA") else "RGB")
    if mode == "I;16":
        im = im.convert("L").convert("I;16")
    elif mode != im.mode:
        im = im.convert(mode)
    buf = pyio.BytesIO()
    im.save(buf, "PNG")
    data = buf.getvalue()
    assert tio.image_size(data) == _pil_hwc(data) == (13, 21, channels)


def test_png_truncated_and_corrupt_header():
    buf = pyio.BytesIO()
    Image.new("RGB", (9, 4)).save(buf, "PNG")
    data = buf.getvalue()
    for k in range(8, 33):
        with pytest.raises(ValueError, match="truncated PNG header"):
            tio.image_size(data[:k])
    assert tio.image_size(data[:33]) == (4, 9, 3)
    bad = bytearray(data)
    bad[18] ^= 1
    with pytest.raises(ValueError, match="CRC"):
        tio.image_size(bytes(bad))


@pytest.mark.parametrize("fmt,mode", [("WEBP", "RGB"), ("WEBP", "RGBA"), ("BMP", "RGB"), ("GIF", "P"),
                                      ("TIFF", "RGB")])
def test_other_formats_through_pillow(fmt, mode):
    if fmt == "WEBP" and not features.check("webp"):
        pytest.skip("this Pillow is built without WebP support")
    im = Image.fromarray(photo(11, 19, seed=6)).convert(mode)
    if mode == "RGBA":  # an alpha that varies, so the encoder keeps it
        im.putalpha(Image.fromarray(photo(11, 19, seed=7)[..., 0]))
    buf = pyio.BytesIO()
    im.save(buf, fmt)
    data = buf.getvalue()
    assert tio.image_size(data) == _pil_hwc(data) == (11, 19, {"RGBA": 4}.get(mode, 3))


def test_png_named_jpeg_reports_its_size(tmp_path):
    path = tmp_path / "n01440764_10043.JPEG"
    Image.fromarray(photo(23, 17, seed=7)).save(path, "PNG")
    assert tio.image_size(tio.read_file(path)) == (23, 17, 3)


def test_input_kinds():
    data = _case("baseline-422-48x64")
    expected = (48, 64, 3)
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    strided = torch.zeros(2 * len(data), dtype=torch.uint8)
    strided[::2] = t
    offset = torch.cat([torch.zeros(5, dtype=torch.uint8), t])[5:]
    for d in [data, bytearray(data), memoryview(data), t, strided[::2], offset, np.frombuffer(data, np.uint8),
              np.frombuffer(data, np.uint8).copy(), memoryview(np.frombuffer(data, np.int8)), memoryview(data)[0:]]:
        assert tio.image_size(d) == expected, type(d)
    for bad in [t.to(torch.int32), t.reshape(1, -1), 3, "x.jpg", [255, 216]]:
        with pytest.raises(TypeError, match="data must be"):
            tio.image_size(bad)


def test_index_prefixes_messages():
    with pytest.raises(ValueError, match=r"^sample 7: not an image: the data is empty$"):
        tio.image_size(b"", index=7)
    with pytest.raises(ValueError, match=r"^sample 0: truncated JPEG header"):
        tio.image_size(_case("baseline-420-48x64")[:40], index=0)
    with pytest.raises(ValueError, match=r"^not an image"):
        tio.image_size(b"hello")
    with pytest.raises(TypeError, match=r"^sample 2: data must be"):
        tio.image_size(1.5, index=2)
    assert tio.image_size(_case("gray-48x64"), index=4) == (48, 64, 1)


def test_read_file_round_trip_and_empty(tmp_path):
    data = _case("imagenet-420-q90-375x500")
    path = tmp_path / "a.jpg"
    path.write_bytes(data)
    for p in (path, str(path), os.fsencode(path)):
        t = tio.read_file(p)
        assert t.dtype == torch.uint8 and t.dim() == 1 and t.is_contiguous()
        assert t.numpy().tobytes() == data
    t[0] = 7  # writable, and owns its bytes
    assert path.read_bytes() == data
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    e = tio.read_file(empty)
    assert e.dtype == torch.uint8 and e.shape == (0,)
    one = tmp_path / "one"
    one.write_bytes(b"\x01")
    torch.testing.assert_close(tio.read_file(one), torch.tensor([1], dtype=torch.uint8))


def test_read_file_matches_torchvision(tmp_path):
    tvio = pytest.importorskip("torchvision.io", reason="torchvision is not installed")
    path = tmp_path / "b.jpg"
    path.write_bytes(_case("odd-420-257x193"))
    torch.testing.assert_close(tio.read_file(path), tvio.read_file(str(path)))


def test_read_file_missing_path_names_it(tmp_path):
    missing = tmp_path / "nope" / "missing.JPEG"
    with pytest.raises(FileNotFoundError) as info:
        tio.read_file(missing)
    assert str(missing) in str(info.value)
    with pytest.raises(IsADirectoryError) as info:
        tio.read_file(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_loader_with_image_folder(tmp_path):
    datasets = pytest.importorskip("torchvision.datasets", reason="torchvision is not installed")
    files = {}
    for cls, name, fmt in [("cat", "a.jpg", "JPEG"), ("cat", "b.JPEG", "PNG"), ("dog", "c.png", "PNG")]:
        (tmp_path / cls).mkdir(exist_ok=True)
        Image.fromarray(photo(10 + len(files), 12, seed=len(files))).save(tmp_path / cls / name, fmt)
        files[str(tmp_path / cls / name)] = (tmp_path / cls / name).read_bytes()
    ds = datasets.ImageFolder(str(tmp_path), loader=tio.loader)
    assert len(ds) == 3 and ds.classes == ["cat", "dog"]
    for k, (path, label) in enumerate(ds.samples):
        data, y = ds[k]
        assert y == label and isinstance(data, torch.Tensor) and data.dtype == torch.uint8
        assert data.numpy().tobytes() == files[path]
        assert tio.image_size(data)[1:] == (12, 3)


def test_module_imports_neither_pillow_nor_torchvision_at_import():
    tree = ast.parse(open(tio.__file__).read())
    top = {n.split(".")[0] for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
           for n in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])}
    assert not top & {"PIL", "torchvision", "cv2"}, top
    assert tio.__all__ == ["image_size", "read_file", "loader"]
    assert sum(1 for _ in open(tio.__file__)) < 400


def test_docstring_examples_run():
    import tensorops

    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(tio, globs={"torch": torch, "tensorops": tensorops}) if t.examples]
    assert {t.name.rsplit(".", 1)[1] for t in tests} >= {"image_size", "read_file", "loader"}
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0
