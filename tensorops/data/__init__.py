"""DataLoader helpers built on tensorops' kernels.

* :mod:`tensorops.data.collates`: ``collate_fn`` callables that crop (and resize), mirror and normalize a batch in one pass;
* :mod:`tensorops.data.loaders`: :class:`NormalizingLoader`, normalizing uint8 batches in the consumer (CPU, or
  a CUDA device one batch ahead on a side stream); :class:`RecyclingLoader`, a transparent wrapper that hands the shared
  memory of released batches back to the workers on every step;
* :mod:`tensorops.data.shared_batches`: the workers' shared blocks, reused only when no process can read them;
* :mod:`tensorops.data.boxes`: the RandomResizedCrop and Resize + CenterCrop boxes for a whole batch;
* :mod:`tensorops.data.seeding`: the collates' random streams, per DataLoader worker and epoch;
* :mod:`tensorops.data.augmenting`: how ``augment=`` (of the collates and the loader) applies transforms, drawing
  from the caller's stream, and how label-mixing transforms give soft labels;
* :mod:`tensorops.data.images`: PIL images, numpy arrays and tensors as HWC uint8 tensors;
* :mod:`tensorops.data.pipeline`: :func:`from_pipeline`, a script's own torchvision / timm pipeline as the fused
  batch path (reading the transforms: ``pipeline_torchvision``, ``pipeline_timm``; the plan and the wrappers for
  what runs as given: ``pipeline_plan``; the collate: ``pipeline_collate``).
"""
from tensorops.data.collates import CropMirrorNormalizeCollate, ResizedCropMirrorNormalizeCollate
from tensorops.data.images import as_image
from tensorops.data.loaders import NormalizingLoader, RecyclingLoader
from tensorops.data.pipeline import from_pipeline

__all__ = ["CropMirrorNormalizeCollate", "ResizedCropMirrorNormalizeCollate", "NormalizingLoader", "RecyclingLoader",
           "as_image", "from_pipeline"]
