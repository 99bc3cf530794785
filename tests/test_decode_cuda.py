"""decode_resized_crop_mirror_normalize(device="cuda"): torchvision's batched GPU decode (nvJPEG), then one
resized_crop_mirror_normalize call on the GPU.

GPU tests (marked ``cuda``): bit for bit ``resized_crop_mirror_normalize(decode_jpeg(list, device="cuda"))``, a
PNG and CMYK JPEGs among JPEGs (decoded on the CPU), corrupt files raised or filled, ``out=``. CPU tests: device
validation, the ImportError without torchvision, and the dispatch PLUMBING with stand-ins: the module's GPU decode
replaced by torchvision's CPU decode and its device by the CPU. Those prove the routing (which sample goes where,
the per-sample retry after a refused batch, the failed mask, the messages), not nvJPEG's behaviour."""
from __future__ import annotations

import importlib.util
import io
import sys

import numpy as np
import pytest
import torch

import tensorops
from tensorops import _decode_cuda

from conftest import HAS_CUDA, kernel_ran, requires_compiled, requires_cuda, requires_cuda_kernels
import jpeg_cases

pytestmark = pytest.mark.filterwarnings("ignore:The image decoding and encoding capabilities of TorchVision:"
                                        "DeprecationWarning")
M, S = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
needs_torchvision = pytest.mark.skipif(importlib.util.find_spec("torchvision") is None,
                                       reason="needs torchvision (pip install 'tensorops[torchvision]')")
CASES = dict(jpeg_cases.CASES)
JPEGS = [d for name, d in jpeg_cases.CASES if not name.startswith("cmyk")]
GOOD = CASES["imagenet-420-q90-375x500"]
CMYK = CASES["cmyk-48x64"]
SETTINGS = [dict(size=(24, 31)), dict(size=(7, 5), crop_first=False), dict(size=16, interpolation="bicubic"),
            dict(size=(9, 40), antialias=False, memory_format=torch.channels_last),
            dict(size=(12, 8), interpolation="nearest", pad_channels=4, fill=-1.0)]


def _t(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def _png(img: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


def _pil_chw(data: bytes) -> torch.Tensor:
    from PIL import Image

    return torch.from_numpy(np.array(Image.open(io.BytesIO(data)).convert("RGB"))).permute(2, 0, 1)


def _boxes(images) -> torch.Tensor:
    """Per (3, H, W) image: the whole image for every third, else a fractional box inside it."""
    rows = []
    for n, (_, H, W) in enumerate(i.shape for i in images):
        dy, dx = 0.25 * (H > 2), 0.5 * (W > 1)
        rows.append([0.0, 0.0, H, W] if n % 3 == 0 else [dy, dx, H - 2 * dy, W - dx])
    return torch.tensor(rows, dtype=torch.float64)


def _bomb() -> bytes:
    data = bytearray(jpeg_cases.encode(jpeg_cases.photo(8, 8)))
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = (50000).to_bytes(2, "big") + (50000).to_bytes(2, "big")
    return bytes(data)


BAD = {"empty": b"", "header-truncated": GOOD[:20], "no-frame-header": b"\xff\xd8\xff" + bytes(500),
       "random": bytes(range(256)) * 3, "scan-truncated": GOOD[:jpeg_cases.scan_start(GOOD) + 10], "bomb": _bomb()}

# ---------------------------------------------------------------------------------------------------------------
# CPU: validation and the import error


@pytest.mark.parametrize("device", ["gpu", "mps", "meta", "cuda:x", 1.5, True, [0]])
def test_device_must_be_cpu_or_cuda(device):
    with pytest.raises(ValueError, match=r"\bdevice\b"):
        tensorops.decode_resized_crop_mirror_normalize([GOOD], M, S, size=8, device=device)


@requires_compiled
def test_device_cpu_is_the_cpu_path():
    ref = tensorops.decode_resized_crop_mirror_normalize([GOOD, GOOD], M, S, size=8)
    for device in ("cpu", torch.device("cpu"), "cpu:0"):
        assert torch.equal(tensorops.decode_resized_crop_mirror_normalize([GOOD, GOOD], M, S, size=8,
                                                                          device=device), ref)


def test_cuda_without_torchvision_is_an_import_error_naming_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.io", None)
    with pytest.raises(ImportError, match=r"torchvision.*tensorops\[torchvision\]"):
        tensorops.decode_resized_crop_mirror_normalize([GOOD], M, S, size=8, device="cuda")


@needs_torchvision
@pytest.mark.skipif(HAS_CUDA, reason="checks the message on a machine where torch sees no GPU")
def test_cuda_without_a_visible_gpu_is_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"device='cuda'.*no CUDA GPU"):
        tensorops.decode_resized_crop_mirror_normalize([GOOD], M, S, size=8, device="cuda")


# ---------------------------------------------------------------------------------------------------------------
# CPU: the dispatch plumbing, with torchvision's CPU decode standing in for nvJPEG and the CPU for the GPU


@pytest.fixture
def stand_in(monkeypatch):
    """Replaces the GPU decode by torchvision's CPU decode_jpeg (which, like nvJPEG's batch, raises when any
    sample fails) and the device by the CPU; returns (the list of batch sizes it was called with, the set of
    sample bytes it refuses as nvJPEG would)."""
    from torchvision.io import ImageReadMode, decode_jpeg

    calls, refuse = [], set()

    def gpu_decode(datas, device):
        assert device.type == "cpu" and all(d.device.type == "cpu" and d.dim() == 1 for d in datas)
        calls.append(len(datas))
        if any(d.numpy().tobytes() in refuse for d in datas):
            raise RuntimeError("stand-in: nvJPEG refuses this batch")
        return [decode_jpeg(d, mode=ImageReadMode.RGB) for d in datas]

    monkeypatch.setattr(_decode_cuda, "_gpu_decode", gpu_decode)
    monkeypatch.setattr(_decode_cuda, "_target", lambda device: torch.device("cpu"))
    return calls, refuse


def _tv(datas) -> list:
    from torchvision.io import ImageReadMode, decode_jpeg

    return [decode_jpeg(_t(d), mode=ImageReadMode.RGB) for d in datas]


@needs_torchvision
@pytest.mark.parametrize("kw", SETTINGS, ids=lambda kw: "-".join(f"{k}" for k in kw))
def test_plumbing_one_batched_decode_then_the_fused_op(stand_in, kw):
    calls, _ = stand_in
    images = _tv(JPEGS)
    boxes, mirror = _boxes(images), torch.arange(len(JPEGS)) % 2 == 1
    ref = tensorops.resized_crop_mirror_normalize(images, M, S, boxes=boxes, mirror=mirror, **kw)
    got = tensorops.decode_resized_crop_mirror_normalize(JPEGS, M, S, boxes=boxes, mirror=mirror, device="cuda", **kw)
    assert calls == [len(JPEGS)] and torch.equal(got, ref)
    whole = tensorops.decode_resized_crop_mirror_normalize(JPEGS, M, S, device="cuda", **kw)  # boxes=None
    assert torch.equal(whole, tensorops.resized_crop_mirror_normalize(images, M, S, **kw))


@needs_torchvision
def test_plumbing_uint8_and_out(stand_in):
    images = _tv(JPEGS[:4])
    boxes = _boxes(images)
    u8 = tensorops.decode_resized_crop_mirror_normalize(JPEGS[:4], None, None, size=9, boxes=boxes,
                                                        dtype=torch.uint8, device="cuda")
    assert torch.equal(u8, tensorops.resized_crop_mirror_normalize(images, None, None, size=9, boxes=boxes,
                                                                   dtype=torch.uint8))
    out = torch.empty(4, 3, 9, 9).contiguous(memory_format=torch.channels_last)
    res = tensorops.decode_resized_crop_mirror_normalize(JPEGS[:4], M, S, size=9, boxes=boxes, out=out,
                                                         device="cuda")
    assert res is out and torch.equal(out, tensorops.resized_crop_mirror_normalize(images, M, S, size=9, boxes=boxes))


@needs_torchvision
def test_plumbing_png_cmyk_and_refused_jpegs_decode_on_the_cpu(stand_in):
    calls, refuse = stand_in
    refused = CASES["gray-48x64"]
    refuse.add(refused)
    png = _png(jpeg_cases.photo(30, 41))
    datas = [GOOD, png, CMYK, refused, CASES["baseline-444-48x64"]]
    images = [_tv([GOOD])[0], _pil_chw(png), _pil_chw(CMYK), _pil_chw(refused), _tv([datas[4]])[0]]
    boxes = _boxes(images)
    got = tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=12, boxes=boxes, device="cuda")
    # PNG and CMYK never reach the GPU decoder; the refused batch of 3 is retried one by one
    assert calls == [3, 1, 1, 1]
    assert torch.equal(got, tensorops.resized_crop_mirror_normalize(images, M, S, size=12, boxes=boxes))


@needs_torchvision
@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
def test_plumbing_bad_data_raises_naming_the_sample_or_fills(stand_in, bad):
    calls, _ = stand_in
    datas = [GOOD, BAD[bad], GOOD]
    boxes = torch.tensor([[0, 0, 4, 4], [0, 0, 1, 1], [10, 10, 30, 30]], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"decode_resized_crop_mirror_normalize\(\): sample 1 \(b\.jpg\)") as e:
        tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=4, boxes=boxes, paths=["a", "b.jpg", "c"],
                                                       device="cuda")
    if bad == "bomb":
        assert "max_pixels" in str(e.value) and calls == [2]  # refused from its header: never decoded
    calls.clear()
    out = torch.empty(3, 3, 4, 4)
    got, failed = tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=4, boxes=boxes, fill=7.0,
                                                                 on_error="fill", out=out, device="cuda")
    assert got is out and failed.tolist() == [False, True, False] and (out[1] == 7.0).all()
    good = _tv([GOOD])[0]
    ref = tensorops.resized_crop_mirror_normalize([good, good], M, S, size=4, boxes=boxes[[0, 2]])
    # close, not equal: the failed sample's 1x1 stand-in in the fused call moves the list kernel's other samples
    # by up to an ulp or so (its results depend on the other images' sizes)
    torch.testing.assert_close(out[[0, 2]], ref)


@needs_torchvision
def test_plumbing_the_first_bad_sample_is_named(stand_in):
    _, refuse = stand_in
    scan = BAD["scan-truncated"]  # a good header: it fails only when decoded (the stand-in and Pillow refuse it)
    refuse.add(scan)
    datas = [GOOD, scan, BAD["random"]]
    with pytest.raises(ValueError, match=r"sample 1\b.*GPU decoder refused it too"):
        tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=4, boxes=[[0, 0, 4, 4]] * 3, device="cuda")
    _, failed = tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=4, boxes=[[0, 0, 4, 4]] * 3,
                                                               on_error="fill", device="cuda")
    assert failed.tolist() == [False, True, True]


@needs_torchvision
def test_plumbing_the_fused_ops_errors_in_this_functions_words(stand_in):
    calls, _ = stand_in
    with pytest.raises(ValueError, match=r"decode_resized_crop_mirror_normalize\(\): boxes must have shape \(2, 4\)"):
        tensorops.decode_resized_crop_mirror_normalize([GOOD, GOOD], M, S, size=4, boxes=[[0, 0, 4, 4]], device="cuda")
    assert calls == []  # checked before any decode
    with pytest.raises(ValueError, match=r"decode_resized_crop_mirror_normalize\(\).*\bboxes\b.*sample 1 \(b\.jpg\)"):
        tensorops.decode_resized_crop_mirror_normalize([GOOD, GOOD], M, S, size=4, boxes=[[0, 0, 4, 4], [0, 0, 400, 4]],
                                                       paths=["a", "b.jpg"], device="cuda")
    with pytest.raises(ValueError, match=r"reduced_scale.*device"):
        tensorops.decode_resized_crop_mirror_normalize([GOOD], M, S, size=4, reduced_scale=True, device="cuda")


# ---------------------------------------------------------------------------------------------------------------
# GPU


def _gpu_ref(datas) -> list:
    """torchvision's batched GPU decode of ``datas`` (one list, as the op makes it)."""
    from torchvision.io import ImageReadMode, decode_jpeg

    try:
        return decode_jpeg([_t(d) for d in datas], mode=ImageReadMode.RGB, device="cuda")
    except RuntimeError as e:
        names = {d: name for name, d in jpeg_cases.CASES}
        refused = []
        for d in datas:
            try:
                decode_jpeg(_t(d), mode=ImageReadMode.RGB, device="cuda")
            except RuntimeError:
                refused.append(names.get(d, f"{len(d)} bytes"))
        pytest.fail(f"nvJPEG refuses test JPEGs {refused} ({str(e).splitlines()[0]}): the op decodes such files on "
                    f"the CPU, so this reference does not apply to them; leave them out of this test")


@pytest.mark.cuda
@requires_cuda
@needs_torchvision
@pytest.mark.parametrize("kw", SETTINGS, ids=lambda kw: "-".join(f"{k}" for k in kw))
def test_cuda_bit_identical_to_resizing_the_gpu_decode(kw):
    images = _gpu_ref(JPEGS)
    boxes, mirror = _boxes(images), torch.arange(len(JPEGS)) % 2 == 1
    ref = tensorops.resized_crop_mirror_normalize(images, M, S, boxes=boxes, mirror=mirror, **kw)
    got = tensorops.decode_resized_crop_mirror_normalize(JPEGS, M, S, boxes=boxes, mirror=mirror, device="cuda", **kw)
    assert got.device.type == "cuda"
    assert got.is_contiguous(memory_format=kw.get("memory_format", torch.contiguous_format))
    assert torch.equal(got, ref)
    whole = tensorops.decode_resized_crop_mirror_normalize(JPEGS, M, S, device="cuda", **kw)
    assert torch.equal(whole, tensorops.resized_crop_mirror_normalize(images, M, S, **kw))


@pytest.mark.cuda
@requires_cuda_kernels
@needs_torchvision
def test_cuda_runs_the_fused_cuda_kernel_not_the_cpu_decode():
    got, ran = kernel_ran(tensorops.decode_resized_crop_mirror_normalize, JPEGS[:6], M, S, size=16, device="cuda")
    assert "tensorops::resized_crop_mirror_normalize_list" in ran, ran
    assert "tensorops::decode_resized_crop_mirror_normalize" not in ran, ran


@pytest.mark.cuda
@requires_cuda
@needs_torchvision
def test_cuda_png_and_cmyk_among_jpegs():
    png = _png(jpeg_cases.photo(30, 41))
    jpegs = [GOOD, CASES["baseline-444-48x64"], CASES["gray-48x64"]]
    datas = [jpegs[0], png, jpegs[1], CMYK, jpegs[2]]
    gpu = _gpu_ref(jpegs)
    images = [gpu[0], _pil_chw(png).cuda(), gpu[1], _pil_chw(CMYK).cuda(), gpu[2]]
    boxes = _boxes(images)
    got = tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=12, boxes=boxes, device="cuda")
    assert torch.equal(got, tensorops.resized_crop_mirror_normalize(images, M, S, size=12, boxes=boxes))


@pytest.mark.cuda
@requires_cuda
@needs_torchvision
@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
def test_cuda_bad_data_raises_or_fills(bad):
    """Header-level damage is refused before nvJPEG; a damaged scan is refused by nvJPEG or decoded by it (the
    decoder's verdict): either way raise and fill agree, and the good samples are the GPU decode's."""
    datas = [GOOD, BAD[bad], GOOD]
    boxes = torch.tensor([[0, 0, 4, 4], [0, 0, 1, 1], [10, 10, 30, 30]], dtype=torch.float64)
    try:
        tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=4, boxes=boxes, paths=["a", "b", "c"],
                                                       device="cuda")
        raised = False
    except ValueError as e:
        assert "sample 1 (b)" in str(e), str(e)
        raised = True
    assert raised or bad == "scan-truncated", f"{bad} was not refused"
    out = torch.empty(3, 3, 4, 4, device="cuda").contiguous(memory_format=torch.channels_last)
    got, failed = tensorops.decode_resized_crop_mirror_normalize(datas, M, S, size=4, boxes=boxes, fill=7.0,
                                                                 on_error="fill", out=out, device="cuda")
    assert got is out and failed.tolist() == [False, raised, False]
    assert torch.isfinite(out).all() and (not raised or (out[1] == 7.0).all())
    if bad != "scan-truncated":  # refused from the header: the good ones are decoded as one batch
        ref = tensorops.resized_crop_mirror_normalize(_gpu_ref([GOOD, GOOD]), M, S, size=4, boxes=boxes[[0, 2]])
        torch.testing.assert_close(out[[0, 2]], ref)  # an ulp or so: the 1x1 stand-in of the failed sample


@pytest.mark.cuda
@requires_cuda
@needs_torchvision
def test_cuda_out_and_its_device():
    images = _gpu_ref(JPEGS[:4])
    boxes = _boxes(images)
    ref = tensorops.resized_crop_mirror_normalize(images, M, S, size=9, boxes=boxes)
    out = torch.empty(4, 3, 9, 9, device="cuda")
    res = tensorops.decode_resized_crop_mirror_normalize(JPEGS[:4], M, S, size=9, boxes=boxes, out=out, device="cuda")
    assert res is out and torch.equal(out, ref)
    mean = torch.tensor(M)  # statistics tensors on the CPU, as the CPU path takes them
    got = tensorops.decode_resized_crop_mirror_normalize(JPEGS[:4], mean, S, size=9, boxes=boxes, device="cuda")
    assert torch.equal(got, tensorops.resized_crop_mirror_normalize(images, mean.cuda(), S, size=9, boxes=boxes))
    with pytest.raises(ValueError, match=r"\bout\b"):
        tensorops.decode_resized_crop_mirror_normalize(JPEGS[:4], M, S, size=9, boxes=boxes,
                                                       out=torch.empty(4, 3, 9, 9), device="cuda")
