"""crop_mirror_normalize's and resized_crop_mirror_normalize's registrations on the compiled ops: fake kernels,
the autograd.Function they share (images' backward and jvp), the vmap batching rules, and :func:`_call`, the
route to the batch or list op. Both maps are linear in the images and take (images, mean, std, <boxes>, mirror,
size, dim, scale, ..., fill, pad): one Function, one vmap rule, one route, keyed by the op's name (``kind``)."""
from __future__ import annotations

import functools
from typing import List, Optional, Sequence, Union

import torch

from tensorops import _checks, _extension, _routing, reference


CMN = "crop_mirror_normalize"
RESIZED = "resized_crop_mirror_normalize"


def _call(images: Union[torch.Tensor, List[torch.Tensor]], args: tuple, direct: bool = False,
          kind: str = CMN, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The batch or list op ``kind`` on ``images`` with the rest of its arguments ``args``: below autograd when
    no derivative can be needed, through :class:`_CropMirrorNormalize` otherwise (``direct``: the op itself, as
    a torch.library batching rule calls it). ``out``: its ``_out`` op writes into out (checked by the
    caller, _checks.check_out)."""
    name = kind if isinstance(images, torch.Tensor) else kind + "_list"
    if out is not None:
        return _routing.call_out(name, (images, *args), out)
    op = getattr(torch.ops.tensorops, name).default
    if direct:
        return op(images, *args)
    return _routing.call(op, _CropMirrorNormalize, _apply_args(images, *args, kind=kind), (images, *args))


def _apply_args(images, *args, kind: str = CMN) -> tuple:
    """The arguments of _CropMirrorNormalize.apply: what is not an image as one Static, then the images."""
    batch = isinstance(images, torch.Tensor)
    return (_extension.Static((batch, args, kind)), *([images] if batch else images))


class _CropMirrorNormalize(torch.autograd.Function):
    """Derivatives with respect to the images (statistics, crop and mirror held constant). The map is linear in
    the images: its jvp is the op itself on the tangents with mean 0 and fill 0, its backward scatters
    ``grad * scale / std`` back through the mirror and the crop."""

    @staticmethod
    def forward(static, *images):
        batch, args, kind = static.value
        with _extension.below_autograd():
            return _call(images[0] if batch else list(images), args, direct=True, kind=kind)

    @staticmethod
    def setup_context(ctx, inputs, output):
        static, *images = inputs
        ctx.batch, ctx.args, ctx.kind = static.value
        ctx.shapes = [tuple(im.shape) for im in images]
        ctx.dtypes = [im.dtype for im in images]

    @staticmethod
    def backward(ctx, grad):
        if ctx.kind == CMN:
            grads = _images_grad(grad, ctx.batch, ctx.shapes, ctx.dtypes, ctx.args)
        else:
            grads = _resized_grad(grad, ctx.batch, ctx.shapes, ctx.dtypes, ctx.args)
        return (None, *[g if need else None for g, need in zip(grads, ctx.needs_input_grad[1:])])

    @staticmethod
    def jvp(ctx, _, *tangents):
        # linear in the images: the tangent is the op on the tangents with mean 0 and fill 0
        m, s = ctx.args[:2]
        ts = [torch.zeros(shape, dtype=dt, device=s.device) if t is None else t
              for t, shape, dt in zip(tangents, ctx.shapes, ctx.dtypes)]
        args = (torch.zeros_like(m), *ctx.args[1:-2], 0.0, ctx.args[-1])
        return _call(ts[0] if ctx.batch else ts, args, kind=ctx.kind)

    @staticmethod
    def vmap(info, in_dims, static, *images):
        batch, args, kind = static.value
        return _vmap(info, in_dims[1:], images[0] if batch else list(images), args, direct=False, kind=kind)


def _images_grad(grad: torch.Tensor, batch: bool, shapes, dtypes, args) -> List[torch.Tensor]:
    """The images' gradients (one per image of the list form, one for the batch form) from the output's."""
    m, s, tl, mi, size, dim, scale = args[:7]
    acc = reference.acc_dtype(grad.dtype)
    N = grad.shape[0]
    C = shapes[0][1 if batch else 0] if dim == -3 else shapes[0][-1]
    a = (scale / s.to(acc)).expand(N, C)
    if batch:
        return [_image_grad(grad, shapes[0], dtypes[0], dim, a, tl, mi)]
    return [
        _image_grad(grad[n : n + 1], (1,) + shape, dt, dim, a[n : n + 1], tl[n : n + 1], mi[n : n + 1])[0]
        for n, (shape, dt) in enumerate(zip(shapes, dtypes))
    ]


def _resized_grad(grad: torch.Tensor, batch: bool, shapes, dtypes, args) -> List[torch.Tensor]:
    """resized_crop_mirror_normalize's image gradients: the map is linear in the images, so its vector-Jacobian
    product is autograd's through the torch composition (reference) at any point (zeros)."""
    m, s, boxes, mi, size, dim, scale, interpolation, antialias, crop_first, dtype, memory_format, channels = args[:13]
    with torch.enable_grad():
        images = [torch.zeros(shape, dtype=dt, device=grad.device, requires_grad=True)
                  for shape, dt in zip(shapes, dtypes)]
        out = reference.resized_crop_mirror_normalize(
            images[0] if batch else images, torch.zeros_like(m), s, boxes, mi, size, dim=dim, scale=scale,
            interpolation=interpolation, antialias=antialias, crop_first=crop_first, dtype=dtype,
            memory_format=memory_format, channels=channels, fill=0.0, pad=args[-1])
        return list(torch.autograd.grad(out, images, grad, create_graph=torch.is_grad_enabled()))


def _vmap(info, in_dims, images, args, direct: bool, kind: str = CMN):
    """vmap of either form with only the images batched: the vmapped dim and the sample dim fold into one
    bigger batch (or one longer list), so the whole thing is still one kernel call; per-sample arguments repeat
    for each slice."""
    B = info.batch_size
    m, s, tl, mi = args[:4]
    if isinstance(images, torch.Tensor):
        x = images.movedim(in_dims[0], 0) if in_dims[0] is not None else images.expand((B,) + tuple(images.shape))
        N = x.shape[1]
        flat: Union[torch.Tensor, List[torch.Tensor]] = x.reshape((B * N,) + tuple(x.shape[2:]))
    else:
        N = len(images)
        moved = [im.movedim(d, 0) if d is not None else im.expand((B,) + tuple(im.shape))
                 for im, d in zip(images, in_dims)]
        flat = [moved[n][b] for b in range(B) for n in range(N)]
    rep = lambda t: t.repeat(B, 1) if t.shape[0] == N and N > 1 else t  # noqa: E731
    per_sample = (rep(m), rep(s), tl.repeat(B, 1), mi.repeat(B))
    out = _call(flat, per_sample + tuple(args[4:]), direct=direct, kind=kind)
    return out.view((B, N) + tuple(out.shape[1:])), 0


def _image_grad(
    grad: torch.Tensor, shape: Sequence[int], image_dtype: torch.dtype, dim: int, a: torch.Tensor,
    top_left: torch.Tensor, mirror: torch.Tensor,
) -> torch.Tensor:
    """Gradient of a batch of same-sized images (shape: (B, C, H, W) or (B, H, W, C)) from grad (B, C', h, w):
    grad * scale / std scattered back through the mirror and the crop (index_put_ with accumulate; positions
    outside the image add zero). ``a`` is scale / std as (B, C); top_left (B, 2) and mirror (B,)."""
    B, Cp, h, w = grad.shape
    C = shape[1] if dim == -3 else shape[3]
    H, W = (shape[2], shape[3]) if dim == -3 else (shape[1], shape[2])
    out = grad.new_zeros(shape, dtype=image_dtype)
    chw = out if dim == -3 else out.permute(0, 3, 1, 2)
    if H == 0 or W == 0 or B == 0 or h == 0 or w == 0:
        return out
    dev = grad.device
    tl = top_left.to(dev)
    mi = mirror.to(dev)
    ar_h = torch.arange(h, device=dev)
    ar_w = torch.arange(w, device=dev)
    rows = tl[:, 0:1] + ar_h  # (B, h)
    cols = tl[:, 1:2] + torch.where(mi[:, None], w - 1 - ar_w, ar_w)  # (B, w)
    valid = ((rows >= 0) & (rows < H))[:, None, :, None] & ((cols >= 0) & (cols < W))[:, None, None, :]
    g = grad if Cp == C else grad.narrow(1, 0, C)
    g = (g if g.dtype == a.dtype else g.to(a.dtype)) * a[:, :, None, None]
    g = torch.where(valid, g, torch.zeros((), dtype=g.dtype, device=dev))
    idx = (
        torch.arange(B, device=dev)[:, None, None, None],
        torch.arange(C, device=dev)[None, :, None, None],
        rows.clamp(0, H - 1)[:, None, :, None],
        cols.clamp(0, W - 1)[:, None, None, :],
    )
    # out of place, so that vmap over a batch of gradients (batched gradcheck, jacrev) has its rules
    chw = chw.index_put(idx, g if g.dtype == image_dtype else g.to(image_dtype), accumulate=True)
    return chw if dim == -3 else chw.permute(0, 2, 3, 1)


def _register() -> None:
    lib = "tensorops::"

    def cmn_fake(images, mean, std, top_left, mirror, size, dim, scale, dtype, memory_format, channels, fill, pad):
        return _fake(images, size, dtype, memory_format, channels)

    def resized_fake(images, mean, std, boxes, mirror, size, dim, scale, interpolation, antialias, crop_first, dtype,
                     memory_format, channels, fill, pad):
        return _fake(images, size, dtype, memory_format, channels)

    def _fake(images, size, dtype, memory_format, channels):
        first = images if isinstance(images, torch.Tensor) else images[0]
        N = images.shape[0] if isinstance(images, torch.Tensor) else len(images)
        return torch.empty((N, channels, size[0], size[1]), dtype=dtype, device=first.device,
                           memory_format=memory_format)

    def out_fake(fake, kind):
        # the _out ops: out checked as the wrappers check it, and returned
        def fake_out(images, *args, out):
            want = fake(images, *args)
            return _checks.check_out(kind, out, want.shape, want.dtype, want.device)
        return fake_out

    for kind, fake in ((CMN, cmn_fake), (RESIZED, resized_fake)):
        to_apply = functools.partial(_apply_args, kind=kind)
        for name in (kind, kind + "_list"):
            torch.library.register_fake(lib + name, fake)
            torch.library.register_fake(lib + name + "_out", out_fake(fake, kind))
            _extension.register_out_autograd(name)
            _extension.register_autograd_function(name, _CropMirrorNormalize, to_apply)
            torch.library.register_vmap(lib + name, functools.partial(_vmap_rule, kind=kind))

    # torch's legacy vmap (torch._vmap_internals, which gradcheck's batched checks use) has no fallback for
    # Tensor[] ops: there, the native-torch composition, which it has rules for
    def cmn_legacy(images, mean, std, top_left, mirror, size, dim, scale, dtype, memory_format, channels, fill, pad):
        return reference.crop_mirror_normalize(
            images, mean, std, top_left, mirror, size, dim=dim, scale=scale, dtype=dtype,
            memory_format=memory_format, channels=channels, fill=fill, pad=pad,
        )

    def resized_legacy(images, mean, std, boxes, mirror, size, dim, scale, interpolation, antialias, crop_first,
                       dtype, memory_format, channels, fill, pad):
        return reference.resized_crop_mirror_normalize(
            images, mean, std, boxes, mirror, size, dim=dim, scale=scale, interpolation=interpolation,
            antialias=antialias, crop_first=crop_first, dtype=dtype, memory_format=memory_format,
            channels=channels, fill=fill, pad=pad,
        )

    _extension._IMPL.impl(CMN + "_list", cmn_legacy, "Batched")  # type: ignore[union-attr]
    _extension._IMPL.impl(RESIZED + "_list", resized_legacy, "Batched")  # type: ignore[union-attr]


def _vmap_rule(info, in_dims, images, mean, std, boxes, mirror, *rest, kind: str):
    """torch.library's rule for the ops called directly under vmap (the wrappers go through the Function's)."""
    batch = isinstance(images, torch.Tensor)
    image_dims = [in_dims[0]] if batch else list(in_dims[0])
    if any(d is not None for d in in_dims[1:5]) or all(d is None for d in image_dims):
        # something per-sample is vmapped: one call per vmapped slice
        tensors = [images, mean, std, boxes, mirror]
        slice_ = lambda t, d, b: t if d is None else t.select(d, b)  # noqa: E731

        def one(b):
            ims = slice_(images, in_dims[0], b) if batch else [slice_(t, d, b) for t, d in zip(images, image_dims)]
            rest5 = [slice_(t, d, b) for t, d in zip(tensors[1:], in_dims[1:5])]
            return _call(ims, (*rest5, *rest), direct=True, kind=kind)

        return torch.stack([one(b) for b in range(info.batch_size)]), 0
    return _vmap(info, image_dims, images, (mean, std, boxes, mirror, *rest), direct=True, kind=kind)


if _extension.is_compiled():
    _register()
