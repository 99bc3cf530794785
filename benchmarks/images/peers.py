"""The CPU peers as optional benchmark columns: albumentations (per image, HWC numpy, OpenCV underneath) and NVIDIA
DALI's CPU operators (the batch, one pipeline per row), each given the same per-sample arguments as tensorops'
row where it has the op. Neither is a dependency: without the library its column is simply absent.

What each column runs, and where it computes something other than torchvision's values (a *cost-only* row: the
user compares the cost, tensorops keeps torchvision's values):

- albumentations: its functional API with the row's magnitudes where it has one (``adjust_*_torchvision``,
  ``posterize``, ``solarize``, ``auto_contrast``, ``equalize``, ``warp_affine``: no per-call parameter machinery,
  which favours it), its transform class at ``p=1`` otherwise (``ColorJitter``, ``Sharpen``, ``Erasing``). Hue goes
  through OpenCV's 8-bit HSV (cost only), sharpness is a 3x3 kernel of its own (cost only), auto-contrast's
  ``cdf`` method and equalize's ``cv`` mode are OpenCV's (cost only).
- DALI: ``fn.brightness``, ``fn.contrast`` (centre 128, not the image's mean: cost only), ``fn.saturation``,
  ``fn.hue``, ``fn.color_twist`` for ColorJitter (one fixed order: cost only), ``fn.rotate``, ``fn.warp_affine``,
  ``fn.erase``, ``nvidia.dali.auto_aug``'s TrivialAugmentWide / RandAugment / AutoAugment (their own draws), and
  ``fn.resize`` (antialiased, region of interest) + ``fn.crop_mirror_normalize`` for the resize row; one DALI
  thread, as tensorops and torchvision run on one.

OpenCV picks its SIMD level at run time: ``opencv_isa_env`` caps it to the build being measured (an AVX2-only
machine runs OpenCV's AVX2 paths; the baseline build leaves it, as torch's, at the CPU's best). DALI's CPU
operators cannot be capped: their column is the CPU's best level.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List

import torch

# OpenCV's names of the features above AVX2 (as cv2.getCPUFeaturesLine() prints them; OPENCV_CPU_DISABLE takes
# them, and marks them "?" there once off). AVX_VNNI is the VEX form that AVX2-only EPYCs lack too.
_AVX512 = "AVX512F,AVX512-SKX,AVX512-CLX,AVX512BW,AVX512DQ,AVX512VL,AVX512CD,AVX512-COMMON,AVX_VNNI"
# the baseline build stands for ARM, where the peers run their NEON paths: their choice is left as it is there
_OPENCV_DISABLE = {"avx2": _AVX512}

Rows = Dict[str, Dict[str, Callable[[], Any]]]


def opencv_isa_env(isa: str) -> Dict[str, str]:
    """The environment that caps OpenCV's run-time dispatch at ``isa``'s level."""
    off = _OPENCV_DISABLE.get(isa, "")
    return {"OPENCV_CPU_DISABLE": off} if off else {}


def albumentations_rows(batch: torch.Tensor, m: Dict[str, torch.Tensor]) -> Rows:
    """{row: {"albumentations": fn}} for the rows albumentations has; {} without it. ``m`` holds the per-sample
    magnitudes of tensorops' rows (float64 tensors, torchvision's units)."""
    try:
        import albumentations as Al
        import albumentations.augmentations.geometric.functional as G
        import albumentations.augmentations.pixel.functional as F
        import cv2
    except ImportError:
        return {}
    cv2.setNumThreads(1)
    images = [x.numpy() for x in batch.permute(0, 2, 3, 1).contiguous()]
    h, w = images[0].shape[:2]
    mats = {"rotate": [_cv_matrix(a, 0.0, w, h) for a in m["angle"].tolist()],
            "shear": [_cv_matrix(0.0, sh, w, h) for sh in m["shear"].tolist()]}

    def each(f: Callable[[Any, Any], Any], params: Any) -> Callable[[], Any]:
        return lambda: [f(x, p) for x, p in zip(images, params)]

    def cls(t: Any) -> Callable[[], Any]:
        return lambda: [t(image=x)["image"] for x in images]

    rows: Rows = {
        "brightness": each(lambda x, f: F.adjust_brightness_torchvision(x, float(f)), m["brightness"]),
        "contrast": each(lambda x, f: F.adjust_contrast_torchvision(x, float(f)), m["contrast"]),
        "saturation": each(lambda x, f: F.adjust_saturation_torchvision(x, float(f)), m["saturation"]),
        "hue": each(lambda x, f: F.adjust_hue_torchvision(x, float(f)), m["hue"]),
        "sharpness": cls(Al.Sharpen(alpha=(0.2, 0.5), lightness=(0.5, 1.0), p=1.0)),
        "posterize": each(lambda x, b: F.posterize(x, int(b)), m["bits"]),
        "solarize": each(lambda x, t: F.solarize(x, float(t) / 255), m["threshold"]),
        "autocontrast": each(lambda x, _: F.auto_contrast(x, 0, None, "cdf"), range(len(images))),
        "equalize": each(lambda x, _: F.equalize(x), range(len(images))),
        "rotate nearest": each(lambda x, a: G.warp_affine(x, a, cv2.INTER_NEAREST, 0, cv2.BORDER_CONSTANT, (h, w)),
                               mats["rotate"]),
        "rotate bilinear": each(lambda x, a: G.warp_affine(x, a, cv2.INTER_LINEAR, 0, cv2.BORDER_CONSTANT, (h, w)),
                                mats["rotate"]),
        "shear bilinear": each(lambda x, a: G.warp_affine(x, a, cv2.INTER_LINEAR, 0, cv2.BORDER_CONSTANT, (h, w)),
                               mats["shear"]),
        "erasing": cls(Al.Erasing(scale=(0.02, 0.33), ratio=(0.3, 3.3), fill=0, p=1.0)),
        "ColorJitter(0.4, 0.4, 0.4, 0.1)": cls(Al.ColorJitter(0.4, 0.4, 0.4, 0.1, p=1.0)),
    }
    return {k: {"albumentations": f} for k, f in rows.items()}


def _cv_matrix(angle: float, shear: float, w: int, h: int):
    """The 3x3 forward matrix of a rotation by ``angle`` (shear 0) or an x-shear by ``shear`` degrees about the
    centre (albumentations' form; OpenCV and DALI take its first two rows)."""
    import numpy as np

    cx, cy = (w - 1) * 0.5, (h - 1) * 0.5
    if shear == 0:
        a = math.radians(angle)
        lin = np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])
    else:
        lin = np.array([[1.0, math.tan(math.radians(shear))], [0.0, 1.0]])
    c = np.array([cx, cy])
    return np.vstack([np.hstack([lin, (c - lin @ c)[:, None]]), [0.0, 0.0, 1.0]]).astype(np.float32)


def _constant(value: Any) -> Callable[[], Any]:
    """A source of no arguments (DALI passes the iteration to a callable that takes one)."""
    return lambda: value


def _dali_run(source: List[Any], graph: Callable[..., Any], inputs: List[List[Any]],
              conditionals: bool = False) -> Callable[[], Any]:
    """One DALI CPU pipeline (one thread) over the HWC arrays ``source`` and per-sample argument lists ``inputs``:
    its run function, built and run once."""
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=len(source), num_threads=1, device_id=None, exec_dynamic=True, seed=0,
                  enable_conditionals=conditionals)
    def pipe():
        x = fn.external_source(source=_constant(source), batch=True, no_copy=True, layout="HWC")
        args = [fn.external_source(source=_constant(v), batch=True) for v in inputs]
        return graph(x, *args)

    p = pipe()
    p.build()
    p.run()
    return p.run


def dali_resize(photos: List[torch.Tensor], boxes: torch.Tensor, side: int, mean: List[float],
                std: List[float]) -> Any:
    """DALI's resize (region of interest, antialiased) + crop_mirror_normalize of decode_jpeg's images (HWC
    memory) in these boxes (top, left, height, width); None without DALI."""
    try:
        import numpy as np
        from nvidia.dali import fn, types
    except ImportError:
        return None
    hwc = [p.permute(1, 2, 0).numpy() for p in photos]
    b = boxes.tolist()
    return _dali_run(hwc, lambda x, s, e: fn.crop_mirror_normalize(
        fn.resize(x, roi_start=s, roi_end=e, size=[side, side], antialias=True), dtype=types.FLOAT,
        output_layout="CHW", mean=[v * 255 for v in mean], std=[v * 255 for v in std]),
        [[np.array(r[:2], np.float32) for r in b], [np.array([r[0] + r[2], r[1] + r[3]], np.float32) for r in b]])


def dali_rows(batch: torch.Tensor, m: Dict[str, torch.Tensor], boxes: torch.Tensor) -> Rows:
    """{row: {"DALI CPU": fn}} for the augmentation rows DALI's CPU operators have; {} without DALI. ``boxes``:
    the erasing boxes (top, left, height, width)."""
    try:
        import numpy as np
        from nvidia.dali import fn, types
        from nvidia.dali.auto_aug import auto_augment, rand_augment, trivial_augment
    except ImportError:
        return {}
    images = [x.numpy() for x in batch.permute(0, 2, 3, 1).contiguous()]
    h, w = images[0].shape[:2]

    def per_sample(t: Any) -> List[Any]:
        return [np.array(v, dtype=np.float32) for v in torch.as_tensor(t).tolist()]

    def run(graph: Callable[..., Any], inputs: List[List[Any]], conditionals: bool = False) -> Callable[[], Any]:
        return _dali_run(images, graph, inputs, conditionals)

    shear = [_cv_matrix(0.0, float(s), w, h)[:2] for s in m["shear"]]
    rows: Rows = {
        "brightness": run(lambda x, f: fn.brightness(x, brightness=f), [per_sample(m["brightness"])]),
        "contrast": run(lambda x, f: fn.contrast(x, contrast=f), [per_sample(m["contrast"])]),
        "saturation": run(lambda x, f: fn.saturation(x, saturation=f), [per_sample(m["saturation"])]),
        "hue": run(lambda x, f: fn.hue(x, hue=f), [per_sample(m["hue"] * 360)]),
        "rotate nearest": run(lambda x, a: fn.rotate(x, angle=a, keep_size=True, fill_value=0,
                                                      interp_type=types.INTERP_NN), [per_sample(m["angle"])]),
        "rotate bilinear": run(lambda x, a: fn.rotate(x, angle=a, keep_size=True, fill_value=0,
                                                       interp_type=types.INTERP_LINEAR), [per_sample(m["angle"])]),
        "shear bilinear": run(lambda x, mt: fn.warp_affine(x, matrix=mt, fill_value=0, inverse_map=False,
                                                            interp_type=types.INTERP_LINEAR), [shear]),
        "erasing": run(lambda x, a, s: fn.erase(x, anchor=a, shape=s, axis_names="HW", fill_value=0),
                       [per_sample(boxes[:, :2]), per_sample(boxes[:, 2:])]),
        "ColorJitter(0.4, 0.4, 0.4, 0.1)": run(
            lambda x: fn.color_twist(x, brightness=fn.random.uniform(range=(0.6, 1.4)),
                                     contrast=fn.random.uniform(range=(0.6, 1.4)),
                                     saturation=fn.random.uniform(range=(0.6, 1.4)),
                                     hue=fn.random.uniform(range=(-36.0, 36.0))), []),
        "TrivialAugmentWide": run(lambda x: trivial_augment.trivial_augment_wide(x, shape=[h, w]), [],
                                  conditionals=True),
        "RandAugment": run(lambda x: rand_augment.rand_augment(x, n=2, m=9, shape=[h, w]), [], conditionals=True),
        "AutoAugment": run(lambda x: auto_augment.auto_augment_image_net(x, shape=[h, w]), [], conditionals=True),
    }
    return {k: {"DALI CPU": f} for k, f in rows.items()}
