"""Test JPEGs: photo-like synthetic images encoded by Pillow (and by OpenCV where Pillow cannot), and corrupt mutants.

Not a test file: the decode and header tests import it. Pixel content is smooth low-frequency cosines per
channel (the bulk of a photo's DCT energy), a fine texture a few pixels in period (high-frequency
coefficients), a sharp-edged coloured disc (chroma edges, which the chroma upsampling must place), and mild
noise, all drawn by numpy from a seed: every case is the same bytes on every run.

``CASES`` is a list of ``(id, jpeg bytes)``; ``UNAVAILABLE`` maps the id of each case that cannot be written on
this machine to the reason (4:4:0 needs OpenCV), so tests can skip it by name instead of silently missing it.
"""
from __future__ import annotations

import io
from typing import Dict, Iterator, List, Tuple

import numpy as np
from PIL import Image

__all__ = ["photo", "encode", "scan_start", "corrupt_variants", "CASES", "UNAVAILABLE"]

_PIL_SUBSAMPLING = {"4:4:4": 0, "4:2:2": 1, "4:2:0": 2}


def photo(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A photo-like (h, w, 3) uint8 RGB image, the same for the same (h, w, seed)."""
    rng = np.random.default_rng(seed)
    y = (np.arange(h, dtype=np.float64)[:, None] + 0.5) / max(h, 1)
    x = (np.arange(w, dtype=np.float64)[None, :] + 0.5) / max(w, 1)
    py, px = np.arange(h, dtype=np.float64)[:, None], np.arange(w, dtype=np.float64)[None, :]
    disc = ((y - rng.uniform(0.3, 0.7)) ** 2 + (x - rng.uniform(0.3, 0.7)) ** 2) < rng.uniform(0.03, 0.08)
    img = np.empty((h, w, 3), dtype=np.float64)
    for c in range(3):
        acc = np.full((h, w), rng.uniform(70.0, 180.0))
        for _ in range(4):  # smooth gradients: low-frequency cosines
            fy, fx = rng.uniform(0.0, 3.0, 2)
            acc = acc + rng.uniform(10.0, 35.0) * np.cos(2 * np.pi * (fy * y + fx * x) + rng.uniform(0, 2 * np.pi))
        ty, tx = rng.uniform(3.0, 9.0, 2)  # texture: periods of a few pixels
        acc = acc + rng.uniform(4.0, 12.0) * np.sin(2 * np.pi * py / ty) * np.cos(2 * np.pi * px / tx)
        acc = np.where(disc, acc * 0.4 + rng.uniform(0.0, 255.0) * 0.6, acc)
        img[..., c] = acc + rng.normal(0.0, 3.0, (h, w))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def encode(img: np.ndarray, *, subsampling: str = "4:2:0", quality: int = 90, progressive: bool = False,
           restart: int = 0, mode: str = "RGB") -> bytes:
    """JPEG bytes of an (h, w, 3) uint8 RGB image.

    Args:
        subsampling: chroma sampling, "4:4:4", "4:2:2", "4:2:0" or "4:4:0" (ignored for "L" and "CMYK", which
            libjpeg writes unsubsampled). Pillow cannot write 4:4:0 (its encoder takes only 4:4:4, 4:2:2 and
            4:2:0; no sampling-factor keyword), so 4:4:0 (chroma halved vertically: luma sampling 1x2) is written
            with OpenCV (``cv2.IMWRITE_JPEG_SAMPLING_FACTOR_440``, mode "RGB" only); without OpenCV it raises
            ``NotImplementedError``.
        quality: libjpeg quality, 1..100.
        progressive: a progressive (SOF2) JPEG instead of baseline (SOF0).
        restart: a restart marker every ``restart`` MCUs (a DRI segment of that interval; Pillow's
            ``restart_marker_blocks``, OpenCV's ``IMWRITE_JPEG_RST_INTERVAL``); 0 for none.
        mode: "RGB" (YCbCr JPEG), "L" (one gray component, the image converted by Pillow) or "CMYK" (four
            components with Pillow's Adobe APP14 marker, the image converted by Pillow).
    """
    if mode not in ("RGB", "L", "CMYK"):
        raise ValueError(f"mode must be 'RGB', 'L' or 'CMYK', got {mode!r}")
    if subsampling not in ("4:4:4", "4:2:2", "4:2:0", "4:4:0"):
        raise ValueError(f"subsampling must be 4:4:4, 4:2:2, 4:2:0 or 4:4:0, got {subsampling!r}")
    if subsampling == "4:4:0" and mode == "RGB":
        return _encode_cv2_440(img, quality=quality, progressive=progressive, restart=restart)
    im = Image.fromarray(np.ascontiguousarray(img), "RGB")
    if mode != "RGB":
        im = im.convert(mode)
    kw = {"quality": quality, "progressive": progressive}
    if mode == "RGB":
        kw["subsampling"] = _PIL_SUBSAMPLING[subsampling]
    if restart:
        kw["restart_marker_blocks"] = restart  # Pillow >= 11: libjpeg's restart_interval, in MCUs
    buf = io.BytesIO()
    im.save(buf, "JPEG", **kw)
    data = buf.getvalue()
    if restart and b"\xff\xdd" not in data[:scan_start(data)]:
        raise NotImplementedError(f"Pillow {Image.__version__} ignored restart_marker_blocks (needs Pillow >= 11)")
    return data


def _encode_cv2_440(img: np.ndarray, *, quality: int, progressive: bool, restart: int) -> bytes:
    try:
        import cv2
    except ImportError:
        raise NotImplementedError("4:4:0 JPEGs need OpenCV (cv2): Pillow cannot write 4:4:0 sampling") from None
    if not hasattr(cv2, "IMWRITE_JPEG_SAMPLING_FACTOR_440"):
        raise NotImplementedError(f"OpenCV {cv2.__version__} cannot set JPEG sampling factors (needs >= 4.5.5)")
    params = [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive),
              cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_440,
              cv2.IMWRITE_JPEG_RST_INTERVAL, restart]
    ok, out = cv2.imencode(".jpg", np.ascontiguousarray(img[:, :, ::-1]), params)  # OpenCV takes BGR
    if not ok:
        raise NotImplementedError("OpenCV failed to write a 4:4:0 JPEG")
    return out.tobytes()


def scan_start(data: bytes) -> int:
    """Offset of the first entropy-coded byte (just after the first SOS segment) of a well-formed JPEG."""
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise ValueError(f"no marker at offset {i}")
        m, length = data[i + 1], (data[i + 2] << 8) | data[i + 3]
        i += 2 + length
        if m == 0xDA:
            return i
    raise ValueError("no SOS segment")


def corrupt_variants(data: bytes, n: int, seed: int = 0) -> Iterator[bytes]:
    """``n`` mutants of a JPEG, the same for the same (data, n, seed).

    First the landmark truncations (empty, inside SOI, inside the header, at and just after the start of the scan,
    inside the scan, just before and inside EOI), then random mutants: truncations at random offsets, and
    1-8 bytes flipped (one bit), overwritten (a random byte, FF or 00: markers and stuffing), at positions drawn
    half from the header and half from the entropy-coded data; a quarter of those are truncated as well.
    """
    rng = np.random.default_rng(seed)
    size, start = len(data), scan_start(data)
    landmarks = [0, 1, 2, 3, 4, start // 2, start - 1, start, start + 1, (start + size) // 2, size - 3, size - 2,
                 size - 1]
    count = 0
    for cut in landmarks[:n]:
        count += 1
        yield data[:max(0, min(cut, size - 1))]
    while count < n:
        count += 1
        if rng.random() < 0.3:
            yield data[:int(rng.integers(0, size))]
            continue
        out = bytearray(data)
        for _ in range(int(rng.integers(1, 9))):
            lo, hi = (2, start) if rng.random() < 0.5 else (start, max(start + 1, size - 2))
            pos = int(rng.integers(lo, hi))
            kind = rng.random()
            if kind < 0.4:
                out[pos] ^= 1 << int(rng.integers(0, 8))
            elif kind < 0.7:
                out[pos] = int(rng.integers(0, 256))
            else:
                out[pos] = 0xFF if kind < 0.85 else 0x00
        if rng.random() < 0.25:
            out = out[:int(rng.integers(2, size))]
        yield bytes(out)


def _cases() -> Tuple[List[Tuple[str, bytes]], Dict[str, str]]:
    cases: List[Tuple[str, bytes]] = []
    unavailable: Dict[str, str] = {}

    def add(cid: str, h: int, w: int, seed: int, **kw) -> None:
        try:
            cases.append((cid, encode(photo(h, w, seed), **kw)))
        except NotImplementedError as e:
            unavailable[cid] = str(e)

    for sub in ("4:2:0", "4:2:2", "4:4:4", "4:4:0"):
        tag = sub.replace(":", "")
        add(f"baseline-{tag}-48x64", 48, 64, 1, subsampling=sub)
        add(f"progressive-{tag}-48x64", 48, 64, 2, subsampling=sub, progressive=True)
    add("restart1-420-48x64", 48, 64, 3, restart=1)
    add("restart3-422-40x72", 40, 72, 4, subsampling="4:2:2", restart=3)
    add("restart2-progressive-444-33x17", 33, 17, 5, subsampling="4:4:4", progressive=True, restart=2)
    add("restart5-440-40x56", 40, 56, 6, subsampling="4:4:0", restart=5)
    add("gray-48x64", 48, 64, 7, mode="L")
    add("gray-progressive-31x47", 31, 47, 8, mode="L", progressive=True)
    add("cmyk-48x64", 48, 64, 9, mode="CMYK")
    add("cmyk-progressive-17x33", 17, 33, 10, mode="CMYK", progressive=True)
    for k, (h, w) in enumerate([(1, 1), (2, 3), (7, 5), (17, 33), (33, 17), (16, 16), (31, 47), (257, 193)]):
        add(f"odd-420-{h}x{w}", h, w, 20 + k)
        add(f"odd-422-progressive-{h}x{w}", h, w, 40 + k, subsampling="4:2:2", progressive=True)
    for k, (h, w) in enumerate([(7, 5), (17, 33), (31, 47)]):
        add(f"odd-440-{h}x{w}", h, w, 60 + k, subsampling="4:4:0")
    add("imagenet-420-q90-375x500", 375, 500, 80)
    add("imagenet-420-q75-progressive-500x375", 500, 375, 81, quality=75, progressive=True)
    return cases, unavailable


CASES, UNAVAILABLE = _cases()


# ---- files that libjpeg warns about, and kinds it may not decode ------------------------------------------------
def _segments(data: bytes) -> List[Tuple[int, int, int]]:
    """(offset, marker, total length) of each marker segment of a well-formed JPEG, up to and including the first
    SOS (its header only)."""
    out, i = [], 2
    while i + 4 <= len(data):
        m, length = data[i + 1], (data[i + 2] << 8) | data[i + 3]
        out.append((i, m, 2 + length))
        i += 2 + length
        if m == 0xDA:
            break
    return out


def _first(data: bytes, marker: int) -> Tuple[int, int]:
    return next((off, n) for off, m, n in _segments(data) if m == marker)


def damaged(seed: int = 0) -> List[Tuple[str, bytes]]:
    """``(id, bytes)`` of JPEGs damaged as real files are, each of which libjpeg decodes with a warning (or, for
    the last two, silently): junk bytes before a marker (in the header, before the scan, before EOI), a file cut
    short in its scan, corrupt entropy-coded data, a marker inside the scan, an unknown JFIF revision, an unknown Adobe transform code,
    invalid SOS parameters for a sequential file, an inconsistent progression, bytes after EOI, and a camera's
    MJPEG frame without Huffman tables (libjpeg supplies the standard ones). Sizes are odd (61 x 83) so that
    the iMCU grid and the partial decode's edges are exercised."""
    img = photo(61, 83, seed=seed)
    base = encode(img, subsampling="4:2:0", quality=88)
    prog = encode(img, subsampling="4:2:0", quality=88, progressive=True)
    s = scan_start(base)
    out = []
    dqt, _ = _first(base, 0xDB)
    out.append(("junk-before-dqt", base[:dqt] + b"\x00\x13\x37" + base[dqt:]))
    sos, _ = _first(base, 0xDA)
    out.append(("junk-before-sos", base[:sos] + b"\x00" * 5 + base[sos:]))
    eoi = base.rindex(b"\xff\xd9")
    out.append(("junk-before-eoi", base[:eoi] + b"\x12\x34" + base[eoi:]))
    out.append(("cut-in-scan", base[: s + (len(base) - s) // 2]))
    out.append(("cut-in-progressive-scans", prog[: len(prog) * 2 // 3]))
    rng = np.random.default_rng(seed)
    scan = bytearray(base)
    for off in rng.integers(s + (len(base) - s) // 3, len(base) - 2, 6):
        scan[off] = 0x00 if scan[off] != 0x00 else 0x55
    out.append(("corrupt-scan-bytes", bytes(scan)))  # libjpeg may not notice: the values change, no warning
    mid = s + (len(base) - s) // 2
    out.append(("marker-in-scan", base[:mid] + b"\xff\xd3" + base[mid:]))  # an RST where none belongs
    app0, _ = _first(base, 0xE0)
    jfif = bytearray(base)
    if bytes(jfif[app0 + 4:app0 + 9]) == b"JFIF\x00":
        jfif[app0 + 9] = 3  # major version 3
        out.append(("jfif-revision-3", bytes(jfif)))
    adobe = b"\xff\xee\x00\x0eAdobe\x00\x64\x00\x00\x00\x00\x07"  # APP14, transform code 7 (unknown)
    app0_len = _first(base, 0xE0)[1]  # without the JFIF marker, which libjpeg would believe first
    out.append(("adobe-transform-7", base[:2] + adobe + base[2 + app0_len:]))
    sos_seg = bytearray(base)
    ns = sos_seg[sos + 4]
    sos_seg[sos + 5 + 2 * ns + 1] = 0x3E  # Se 62 instead of 63
    out.append(("sos-not-sequential", bytes(sos_seg)))
    # a progressive file whose second scan (an AC or DC scan) appears twice: an inconsistent progression
    starts = [m.start() for m in __import__("re").finditer(b"\xff\xda", prog)]
    if len(starts) >= 3:
        out.append(("progression-repeated-scan", prog[:starts[2]] + prog[starts[1]:starts[2]] + prog[starts[2]:]))
    out.append(("bytes-after-eoi", base + b"\x00garbage after the image\xff\xd8"))
    dht = [(off, n) for off, m, n in _segments(base) if m == 0xC4]
    mjpeg = base
    for off, n in reversed(dht):
        mjpeg = mjpeg[:off] + mjpeg[off + n:]
    out.append(("mjpeg-no-huffman-tables", mjpeg))
    return out


def _bits(n: int) -> int:
    return int(n).bit_length()


def lossless(img: np.ndarray, predictor: int = 1) -> bytes:
    """A lossless (SOF3) JPEG of an (h, w) or (h, w, 3) uint8 image: Huffman-coded differences from the chosen
    predictor (1: left, 2: above, ..., 7), 8-bit samples, no point transform; three components are named 'R',
    'G', 'B', so decoders take them as RGB (no colour transform). Neither Pillow nor libjpeg-turbo 2.x write
    these; decoders with libjpeg-turbo 3 (torchvision 0.29, Pillow 13) read them."""
    a = np.asarray(img, dtype=np.int64)
    if a.ndim == 2:
        a = a[:, :, None]
    h, w, nc = a.shape
    # the standard luminance DC table (ITU T.81 K.3): categories 0..11, enough for 8-bit differences
    counts = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    values = list(range(12))
    codes, code, k = {}, 0, 0
    for length in range(1, 17):
        for _ in range(counts[length - 1]):
            codes[values[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    # predictions, as T.81 H.1.2.1: the first row from the left, the first column from above
    pred = np.zeros_like(a)
    pad = np.zeros((h + 1, w + 1, nc), dtype=np.int64)
    pad[1:, 1:] = a
    ra, rb, rc = pad[1:, :-1], pad[:-1, 1:], pad[:-1, :-1]
    formula = {1: ra, 2: rb, 3: rc, 4: ra + rb - rc, 5: ra + ((rb - rc) >> 1), 6: rb + ((ra - rc) >> 1),
               7: (ra + rb) >> 1}[predictor]
    pred[:] = formula
    pred[0, :] = ra[0, :]
    pred[:, 0] = rb[:, 0]
    pred[0, 0] = 128
    diff = (a - pred + 32768) % 65536 - 32768
    bits, nbits = 0, 0
    out = bytearray()

    def put(value: int, length: int) -> None:
        nonlocal bits, nbits
        bits = (bits << length) | (value & ((1 << length) - 1))
        nbits += length
        while nbits >= 8:
            byte = (bits >> (nbits - 8)) & 0xFF
            out.append(byte)
            if byte == 0xFF:
                out.append(0x00)
            nbits -= 8
        bits &= (1 << nbits) - 1

    for d in diff.reshape(-1).tolist():
        cat = _bits(abs(d))
        code, length = codes[cat]
        put(code, length)
        if cat:
            put(d if d > 0 else d - 1, cat)
    if nbits:
        put((1 << (8 - nbits)) - 1, 8 - nbits)
    ids = [0x52, 0x47, 0x42] if nc == 3 else [1]
    sof = bytes([8]) + h.to_bytes(2, "big") + w.to_bytes(2, "big") + bytes([nc])
    sof += b"".join(bytes([i, 0x11, 0]) for i in ids)
    dht = bytes([0x00]) + bytes(counts) + bytes(values)
    sos = bytes([nc]) + b"".join(bytes([i, 0x00]) for i in ids) + bytes([predictor, 0, 0])

    def seg(marker: int, body: bytes) -> bytes:
        return bytes([0xFF, marker]) + (len(body) + 2).to_bytes(2, "big") + body

    return b"\xff\xd8" + seg(0xC3, sof) + seg(0xC4, dht) + seg(0xDA, sos) + bytes(out) + b"\xff\xd9"
