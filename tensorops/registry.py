"""The one table of tensorops' public ops and what each supports.

The tests (bad-input catalogue, properties, concurrency), ``benchmarks/sanitizers/sanitize_ops.py`` and the benchmark
harness read this table instead of keeping lists of their own, so a new op joins all of them by adding one
``OpInfo`` row here (docs/guides/development.rst, "Adding an op").
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Dict, Tuple


@dataclasses.dataclass(frozen=True)
class OpInfo:
    """One public op: ``<module>.<name>`` (``tensorops.<name>`` unless ``module`` says otherwise), a drop-in for
    ``torch_name``.

    ``family``: the op family; its benchmark is the module ``benchmarks.<bench>`` (its cases in
    ``benchmarks/ops/<bench>.py``; augment's runner in ``benchmarks/images/``) and its kernels in
    ``csrc/cpu``/``csrc/cuda`` files of that family. ``schemas``: the ``torch.ops.tensorops`` ops the function
    calls (their CPU and CUDA kernels are what the "kernel ran" tests look for in the profiler). ``harness``:
    ``benchmarks/ops/<bench>.py`` gives the benchmark harness its rows (``cases(device, grid)``); False where that
    module is a runner of its own (augment: torchvision per image vs batch vs kornia), which the harness skips.
    Names are unique across modules (the tests, the catalogue and the sanitizer key on them).
    """

    name: str
    torch_name: str
    family: str
    bench: str
    schemas: Tuple[str, ...]
    devices: Tuple[str, ...] = ("cpu", "cuda")
    autograd: bool = True  # gradients flow (floating inputs), double backward included
    forward_ad: bool = True  # torch.autograd.forward_ad and torch.func.jvp give torch's tangents
    vmap: bool = True  # torch.func.vmap: one kernel call for the whole batch
    compile: bool = True  # torch.compile(fullgraph=True) traces it
    out: bool = False  # takes out=
    # the schemas with an ``<schema>_out`` op (torch.Tag.out) that out= calls: the kernels write out itself
    # (without one, out= copies a result into out)
    out_overloads: Tuple[str, ...] = ()
    inplace: bool = False  # writes its input
    tensor_list: bool = False  # takes (or gives) a list of tensors (clamp and clamp_: as well as a tensor)
    module: str = "tensorops"  # the public module that exports it (tensorops.augment's ops stay in their module)
    harness: bool = True  # benchmarks/ops/<bench>.py has harness rows (see above)

    @property
    def function(self):
        return getattr(importlib.import_module(self.module), self.name)

    @property
    def qualname(self) -> str:
        """``tensorops.normalize``, ``tensorops.augment.adjust_hue``: what users call."""
        return f"{self.module}.{self.name}"


def _augment(name: str, schema: str = "augment_apply", torch_name: str = "") -> OpInfo:
    """A tensorops.augment op: uint8 in and out (no derivatives, no vmap), its own benchmark runner
    (benchmarks/images/augment.py), torch.compile through the fake kernels of tensorops/_augment_ops.py."""
    return OpInfo(name, torch_name or f"torchvision.transforms.v2.functional.{name}", "augment", "augment", (schema,),
                  autograd=False, forward_ad=False, vmap=False, module="tensorops.augment", harness=False)


OPS: Dict[str, OpInfo] = {
    op.name: op
    for op in (
        OpInfo("normalize", "torchvision.transforms.v2.functional.normalize", "normalize", "normalize",
               ("normalize", "normalize_tensor", "normalize_tensor_backward"), out=True,
               out_overloads=("normalize", "normalize_tensor")),
        OpInfo("clamp", "torch.clamp", "clamp", "clamp",
               ("clamp", "clamp_scalar", "clamp_backward", "clamp_scalar_backward",
                "foreach_clamp_scalar"), out=True, tensor_list=True),
        OpInfo("clamp_", "torch.clamp_", "clamp", "clamp",
               ("clamp_", "clamp_scalar_", "foreach_clamp_scalar_"), inplace=True, tensor_list=True),
        OpInfo("clip_grad_value_", "torch.nn.utils.clip_grad_value_", "clamp", "stack_chunk_foreach",
               ("foreach_clamp_scalar_",), autograd=False, forward_ad=False, vmap=False, compile=False,
               inplace=True, tensor_list=True),
        OpInfo("cat", "torch.cat", "cat_split", "cat_split", ("cat",), out=True, tensor_list=True),
        OpInfo("split", "torch.split", "cat_split", "cat_split", ("split",), out=True, tensor_list=True),
        OpInfo("stack", "torch.stack", "cat_split", "stack_chunk_foreach", ("cat",), out=True, tensor_list=True),
        OpInfo("chunk", "torch.chunk", "cat_split", "stack_chunk_foreach", ("split",), tensor_list=True),
        OpInfo("crop_mirror_normalize", "DALI's crop_mirror_normalize", "crop_mirror_normalize",
               "crop_mirror_normalize", ("crop_mirror_normalize", "crop_mirror_normalize_list"),
               out=True, out_overloads=("crop_mirror_normalize", "crop_mirror_normalize_list"), tensor_list=True),
        OpInfo("resized_crop_mirror_normalize", "torchvision.transforms.v2.functional.resized_crop",
               "resized_crop_mirror_normalize", "resized_crop_mirror_normalize",
               ("resized_crop_mirror_normalize", "resized_crop_mirror_normalize_list"), out=True,
               out_overloads=("resized_crop_mirror_normalize", "resized_crop_mirror_normalize_list"), tensor_list=True),
        # encoded bytes in, on the host: no derivatives, no transforms; its _out op returns which samples failed
        # (not out itself), so it is a schema of its own rather than a torch.Tag.out overload
        OpInfo("decode_resized_crop_mirror_normalize", "torchvision.io.decode_jpeg", "decode", "decode",
               ("decode_resized_crop_mirror_normalize", "decode_resized_crop_mirror_normalize_out"),
               devices=("cpu",), autograd=False, forward_ad=False, vmap=False, compile=False, out=True,
               tensor_list=True),
        # tensorops.augment: torchvision v2's image ops on uint8 batches, per-sample arguments; each sample equals
        # the v2 function on that image (apply_ops: one OPS entry per sample, each such a function)
        *(_augment(name) for name in (
            "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_sharpness",
            "posterize", "solarize", "autocontrast", "equalize", "invert", "rgb_to_grayscale", "affine", "rotate")),
        _augment("erase", "augment_erase"),
        _augment("apply_ops", torch_name="per-sample torchvision.transforms.v2.functional ops (TrivialAugmentWide's)"),
        _augment("mix", "augment_mix", torch_name="v2.AugMix's mix of its chains (torchvision.transforms.v2.AugMix)"),
    )
}


def families() -> Tuple[str, ...]:
    """The op families, in table order."""
    return tuple(dict.fromkeys(op.family for op in OPS.values()))


def benchmark_modules() -> Tuple[str, ...]:
    """The ``benchmarks.<module>`` names that hold the harness's benchmark cases, in table order (the ops of a
    runner of its own, ``harness=False``, are timed by that runner)."""
    return tuple(dict.fromkeys(op.bench for op in OPS.values() if op.harness))
