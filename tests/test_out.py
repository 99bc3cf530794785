"""out= on normalize, crop_mirror_normalize and resized_crop_mirror_normalize: the kernels write ``out`` itself.

``out`` is checked before any work (shape, dtype, device, memory overlap, autograd: errors naming ``out``), then
the op's out form (``torch.ops.tensorops.<op>_out``, tagged torch.Tag.out) writes it: no full-size
temporary is allocated and nothing is copied (the profiler sees neither), its storage stays the caller's, and the
out ops pass opcheck and trace under torch.compile(fullgraph=True). Strided views with gaps take one temporary.
"""
from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import tensorops
from tensorops import reference
from conftest import DEVICES, requires_compiled

# torch.Tag.out is new in torch 2.14; on older torch the _out ops are defined untagged (csrc/tensorops.cpp)
HAS_OUT_TAG = hasattr(torch.Tag, "out")

pytestmark = requires_compiled

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
BOXES = torch.tensor([[0.0, 0.0, 20.0, 22.0], [2.5, 1.0, 15.0, 17.25], [4.0, 3.0, 12.0, 12.0]], dtype=torch.float64)
MIRROR = torch.tensor([False, True, False])


def _u8(shape, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8).to(device)


def _images(device="cpu"):
    return [_u8((3, 20 + i, 22), seed=i, device=device) for i in range(3)]


# Each case: (name, call(out) -> result, the result without out=, out's shape)
def _cases(device="cpu"):
    x = _u8((4, 3, 32, 48), device=device)
    ims = _images(device)
    batch = _u8((3, 3, 20, 22), seed=5, device=device)
    m4, s4 = torch.rand(4, 3, 1, 1, device=device), torch.rand(4, 3, 1, 1, device=device) + 0.5
    return [
        ("normalize", lambda out=None: tensorops.normalize(x, MEAN, STD, out=out), (4, 3, 32, 48)),
        ("normalize_tensor", lambda out=None: tensorops.normalize(x, m4, s4, out=out), (4, 3, 32, 48)),
        ("crop_mirror_normalize", lambda out=None: tensorops.crop_mirror_normalize(
            ims, MEAN, STD, size=(16, 18), mirror=MIRROR, out=out), (3, 3, 16, 18)),
        ("crop_mirror_normalize_batch", lambda out=None: tensorops.crop_mirror_normalize(
            batch, MEAN, STD, size=(16, 18), pad_channels=4, out=out), (3, 4, 16, 18)),
        ("resized_crop_mirror_normalize", lambda out=None: tensorops.resized_crop_mirror_normalize(
            ims, MEAN, STD, size=(12, 10), boxes=BOXES, mirror=MIRROR, out=out), (3, 3, 12, 10)),
        ("resized_crop_mirror_normalize_batch", lambda out=None: tensorops.resized_crop_mirror_normalize(
            batch, MEAN, STD, size=(12, 10), boxes=BOXES, out=out), (3, 3, 12, 10)),
    ]


CASES = _cases()
IDS = [c[0] for c in CASES]


def _allocated_and_copies(fn):
    """Bytes allocated on the CPU while fn runs (self allocations, freed or not) and the names of copy events."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = prof.events()
    allocated = sum(max(e.self_cpu_memory_usage, 0) for e in events)
    copies = [e.name for e in events if e.name in ("aten::copy_", "aten::_to_copy", "aten::clone")]
    ops = [e.name for e in events if e.name.startswith("tensorops::")]
    return allocated, copies, ops


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("fmt", [torch.contiguous_format, torch.channels_last], ids=["nchw", "nhwc"])
def test_kernel_writes_out_directly(case, fmt):
    name, call, shape = case
    want = call()
    out = torch.full(shape, float("nan")).contiguous(memory_format=fmt)
    ptr, strides = out.data_ptr(), out.stride()
    call(out)  # warm (statistics caches)
    out.fill_(float("nan"))
    result = []
    allocated, copies, ops = _allocated_and_copies(lambda: result.append(call(out)))
    assert result[0] is out and out.data_ptr() == ptr and out.stride() == strides
    torch.testing.assert_close(out, want)
    assert not copies, f"{name}: out= copied a result into out: {copies}"
    assert allocated < out.nbytes // 4, f"{name}: {allocated} bytes allocated for a {out.nbytes}-byte out"
    assert ops, f"{name}: no tensorops kernel ran"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_strided_out_with_gaps(case):
    # a view the kernels cannot write in place: one temporary, copied into it; the view's storage is written
    name, call, shape = case
    want = call()
    base = torch.zeros(shape[:-1] + (2 * shape[-1],))
    out = base[..., ::2]
    assert call(out) is out
    torch.testing.assert_close(out, want)
    assert (base[..., 1::2] == 0).all()


def _bad_outs(shape):
    return [
        (torch.empty(shape[:-1] + (shape[-1] + 1,)), ValueError, r"out has shape"),
        (torch.empty(shape, dtype=torch.float64), TypeError, r"out is torch\.float64 but the result is torch\.float32"),
        (torch.empty(shape, device="meta"), ValueError, r"out is on meta but the result is on cpu"),
        (torch.empty(1).expand(shape), RuntimeError, r"out: unsupported operation: more than one element"),
        ([1.0], TypeError, r"out must be a tensor"),
    ]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bad_out_raises_before_any_work(case):
    name, call, shape = case
    for out, err, pattern in _bad_outs(shape):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            with pytest.raises(err, match=pattern):
                call(out)
        ran = [e.name for e in prof.events() if e.name.startswith("tensorops::")]
        assert not ran, f"{name}: {ran} ran before out={pattern!r} was refused"


def test_out_overlapping_an_input_is_refused():
    x = torch.rand(2, 3, 8, 8)
    with pytest.raises(RuntimeError, match=r"normalize\(\): out: .*single memory location"):
        tensorops.normalize(x, MEAN, STD, out=x)
    with pytest.raises(RuntimeError, match=r"normalize\(\): out: .*single memory location"):
        tensorops.normalize(x[:, :, :4], MEAN, STD, out=x[:, :, 2:6])
    images = torch.rand(2, 3, 8, 8)
    with pytest.raises(RuntimeError, match=r"crop_mirror_normalize\(\): out: .*single memory location"):
        tensorops.crop_mirror_normalize(images, MEAN, STD, out=images)
    with pytest.raises(RuntimeError, match=r"resized_crop_mirror_normalize\(\): out: .*single memory location"):
        tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=8, out=images)
    # the C++ check guards direct calls of the overloads
    with pytest.raises(RuntimeError, match=r"tensorops: out: shares memory"):
        torch.ops.tensorops.normalize_out.default(x, MEAN, STD, 1, 1.0, torch.float32, torch.preserve_format, out=x)


def test_out_refuses_autograd_like_torch():
    x = torch.rand(2, 3, 8, 8, requires_grad=True)
    o = torch.empty(2, 3, 8, 8)
    msg = r"functions with out=\.\.\. arguments don't support automatic differentiation, but one of the arguments " \
          r"requires grad"
    with pytest.raises(RuntimeError, match=msg):
        torch.add(x, 1, out=o)  # torch's words
    with pytest.raises(RuntimeError, match=msg):
        tensorops.normalize(x, MEAN, STD, out=o)
    with pytest.raises(RuntimeError, match=msg):
        tensorops.normalize(x.detach(), MEAN, STD, out=torch.empty(2, 3, 8, 8, requires_grad=True))
    with pytest.raises(RuntimeError, match=msg):
        tensorops.normalize(x.detach(), torch.tensor(MEAN, requires_grad=True), STD, out=o)
    with pytest.raises(RuntimeError, match=msg):
        tensorops.crop_mirror_normalize(x, MEAN, STD, out=o)
    with pytest.raises(RuntimeError, match=msg):
        tensorops.resized_crop_mirror_normalize(x, MEAN, STD, size=8, out=o)
    with pytest.raises(RuntimeError, match=msg):  # the overload's own autograd kernel, for direct calls
        torch.ops.tensorops.normalize_out.default(x, MEAN, STD, 1, 1.0, torch.float32, torch.preserve_format, out=o)
    with torch.no_grad():
        assert tensorops.normalize(x, MEAN, STD, out=o) is o
    torch.testing.assert_close(o, reference.normalize(x.detach(), MEAN, STD, dim=1, scale=1.0, dtype=torch.float32))
    assert not o.requires_grad and o.grad_fn is None


def test_out_bumps_the_version_counter():
    o = torch.empty(2, 3, 4, 4)
    v = o._version
    tensorops.normalize(_u8((2, 3, 4, 4)), MEAN, STD, out=o)
    assert o._version > v


def _op_samples():
    x = _u8((2, 3, 6, 7))
    m, s = torch.rand(2, 3, 1, 1), torch.rand(2, 3, 1, 1) + 0.5
    ims = [_u8((3, 9, 8), seed=1), _u8((3, 7, 10), seed=2)]
    stats = (torch.rand(1, 3), torch.rand(1, 3) + 0.5)
    tl, mi = torch.tensor([[0, 0], [1, 2]]), torch.tensor([False, True])
    boxes = torch.tensor([[0.0, 0.0, 7.0, 8.0], [1.0, 1.5, 5.0, 6.0]], dtype=torch.float64)
    f32 = torch.float32
    cmn_rest = ([5, 6], -3, 1 / 255, f32, torch.contiguous_format, 4, 0.5, True)
    rcmn_rest = ([5, 6], -3, 1 / 255, 1, True, True, f32, torch.contiguous_format, 3, 0.0, False)
    return [
        ("normalize", (x, MEAN, STD, 1, 1 / 255, f32, torch.preserve_format), (2, 3, 6, 7)),
        ("normalize_tensor", (x, m, s, 1 / 255, f32, torch.preserve_format), (2, 3, 6, 7)),
        ("crop_mirror_normalize_list", (ims, *stats, tl, mi, *cmn_rest), (2, 4, 5, 6)),
        ("crop_mirror_normalize", (_u8((2, 3, 9, 10)), *stats, tl, mi, *cmn_rest), (2, 4, 5, 6)),
        ("resized_crop_mirror_normalize_list", (ims, *stats, boxes, mi, *rcmn_rest), (2, 3, 5, 6)),
        ("resized_crop_mirror_normalize", (_u8((2, 3, 9, 10)), *stats, boxes, mi, *rcmn_rest), (2, 3, 5, 6)),
    ]


OP_SAMPLES = _op_samples()


@pytest.mark.parametrize("sample", OP_SAMPLES, ids=[s[0] for s in OP_SAMPLES])
def test_out_overloads_opcheck(sample):
    name, args, shape = sample
    op = getattr(torch.ops.tensorops, name + "_out").default
    assert not HAS_OUT_TAG or torch.Tag.out in op.tags
    out = torch.empty(shape)
    # torch < 2.14 cannot functionalize a custom op returning its out (no torch.Tag.out): there the wrappers run the
    # functional op under torch.compile (tensorops._routing.call_out), and opcheck's AOT test does not apply
    utils = None if HAS_OUT_TAG else ("test_schema", "test_autograd_registration", "test_faketensor")
    torch.library.opcheck(op, args, {"out": out}, **({} if utils is None else {"test_utils": utils}))
    r = op(*args, out=out)
    assert r is out
    torch.testing.assert_close(out, getattr(torch.ops.tensorops, name).default(*args))


@pytest.mark.parametrize("sample", OP_SAMPLES, ids=[s[0] for s in OP_SAMPLES])
def test_out_overloads_check_out_in_cpp(sample):
    name, args, shape = sample
    op = getattr(torch.ops.tensorops, name + "_out").default
    with pytest.raises(ValueError, match=r"tensorops: out: has shape"):
        op(*args, out=torch.empty(shape[:-1] + (shape[-1] + 2,)))
    with pytest.raises(TypeError, match=r"tensorops: out: is Double but the result is Float"):
        op(*args, out=torch.empty(shape, dtype=torch.float64))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compile_fullgraph_with_out(case):
    name, call, shape = case
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.lookup_backend("aot_eager")(gm, example_inputs)

    torch._dynamo.reset()
    out = torch.full(shape, float("nan"))
    compiled = torch.compile(lambda o: call(o), backend=backend, fullgraph=True)
    r = compiled(out)
    torch.testing.assert_close(out, call())
    torch.testing.assert_close(r, out)  # (AOT returns its functional result for a mutated input's alias)
    targets = [n.target for g in graphs for n in g.graph.nodes if n.op == "call_function"]
    if not HAS_OUT_TAG:  # torch < 2.14: the functional op, then a copy into out (tensorops._routing.call_out)
        assert any(isinstance(t, torch._ops.OpOverload) and t.namespace == "tensorops" for t in targets), targets
    else:
        assert any(isinstance(t, torch._ops.OpOverload) and t.namespace == "tensorops" and t._opname.endswith("_out")
                   for t in targets), f"{name}: the compiled graph does not call an _out op: {targets}"
        assert torch.ops.aten.copy_.default not in targets and "copy_" not in [getattr(t, "__name__", "")
                                                                              for t in targets]


@pytest.mark.parametrize("device", DEVICES)
def test_out_values_on_each_device(device):
    for name, call, shape in _cases(device):
        out = torch.empty(shape, device=device)
        assert call(out) is out, name
        torch.testing.assert_close(out, call(), msg=name)


def test_registry_out_overloads_are_registered_and_tagged():
    from tensorops.registry import OPS

    rows = [op for op in OPS.values() if op.out_overloads]
    assert {op.name for op in rows} == {"normalize", "crop_mirror_normalize", "resized_crop_mirror_normalize"}
    for op in rows:
        assert op.out and set(op.out_overloads) <= set(op.schemas)
        for s in op.out_overloads:
            assert not HAS_OUT_TAG or torch.Tag.out in getattr(torch.ops.tensorops, s + "_out").default.tags
