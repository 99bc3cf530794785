"""timm's semantics where they differ from torchvision: ``TimmMixup`` and ``TimmRandomErasing`` replayed through
timm's own code (its ``np.random`` / ``random`` calls scripted to return our draws), and the level clamps of timm's
policies above level 10. Skipped without timm (an optional test extra: pip install timm)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

mixup_mod = pytest.importorskip("timm.data.mixup", reason="timm is an optional test extra (pip install timm)")
erasing_mod = pytest.importorskip("timm.data.random_erasing", reason="timm is an optional test extra")

from tensorops.augment import _timm_tables  # noqa: E402
from tensorops.augment.timm import TimmMixup, TimmRandomErasing  # noqa: E402


class _ScriptedNumpy:
    """``np`` for timm's mixup module: ``np.random``'s draws replaced by ours, everything else numpy's."""

    def __init__(self, draws):
        self.random = self
        self.draws = draws

    def __getattr__(self, name):
        return getattr(np, name)

    def rand(self, size=None):
        return self.draws["rand"].pop(0)

    def beta(self, a, b, size=None):
        return self.draws["beta"].pop(0)

    def randint(self, lo, hi=None, size=None):
        return self.draws["randint"].pop(0)


@pytest.mark.parametrize("mode", ["batch", "pair", "elem"])
@pytest.mark.parametrize("alphas", [(0.8, 1.0), (0.0, 1.0), (0.4, 0.0)])
def test_timm_mixup_replays_timms_code(mode, alphas, monkeypatch):
    n, h, w = 6, 13, 17
    t = TimmMixup(*alphas, prob=0.9, switch_prob=0.5, mode=mode, label_smoothing=0.1, num_classes=5,
                  generator=torch.Generator().manual_seed(7))
    batch = torch.randn(n, 3, h, w)
    labels = torch.arange(n) % 5
    p = t.make_params(batch)
    out = t.transform(batch.clone(), p)
    soft = t.transform_labels(labels, p)
    rows = {"batch": 1, "pair": n // 2, "elem": n}[mode]
    keep = p["keep"][:rows].numpy()
    cut = p["cutmix"][:rows].numpy()
    draws = {"rand": [], "beta": [], "randint": []}
    lam_draw = keep.astype(np.float64)
    if mode == "batch":
        draws["rand"] = [0.0] + ([0.0 if cut[0] else 1.0] if alphas[0] > 0 and alphas[1] > 0 else [])
        draws["beta"] = [float(lam_draw[0])]
    else:
        both = alphas[0] > 0 and alphas[1] > 0
        draws["rand"] = ([np.where(cut, 0.0, 1.0)] if both else []) + [np.zeros(rows)]
        draws["beta"] = [lam_draw, lam_draw] if both else [lam_draw]
    b = p["boxes"]  # (i, j, h, w) -> timm's centre draws: cy = yl + cut_h // 2 where unclipped
    for r in range(rows):
        if cut[r] and keep[r] != 1.0:
            ratio = np.sqrt(np.float32(1) - np.float32(keep[r])) if mode != "batch" else np.sqrt(1 - keep[r])
            ch, cw = int(h * ratio), int(w * ratio)
            i, j, bh, bw = (int(v) for v in b[r])
            cy = i + ch // 2 if i > 0 else i + bh - (ch + 1) // 2
            cx = j + cw // 2 if j > 0 else j + bw - (cw + 1) // 2
            draws["randint"] += [cy, cx]
    monkeypatch.setattr(mixup_mod, "np", _ScriptedNumpy(draws))
    ref = mixup_mod.Mixup(*alphas, prob=0.9, switch_prob=0.5, mode=mode, label_smoothing=0.1, num_classes=5)
    x, y = ref(batch.clone(), labels)
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    torch.testing.assert_close(soft, y, rtol=0, atol=0)


def test_timm_mixup_draws_follow_timm():
    """Switch and apply rates (binomial, level 0.001) and the lam mean of Beta(0.8, 0.8) (1/2)."""
    t = TimmMixup(0.8, 1.0, prob=0.7, switch_prob=0.3, mode="elem", generator=torch.Generator().manual_seed(1))
    p = t.make_params(torch.zeros(8000, 1, 8, 8))
    applied = p["keep"] != 1.0
    assert abs(applied.double().mean() - 0.7) < 3.29 * (0.21 / 8000) ** 0.5 + 1e-3
    assert abs(p["cutmix"][applied].double().mean() - 0.3) < 0.02
    assert abs(p["keep"][applied].mean() - 0.5) < 0.01


@pytest.mark.parametrize("mode", ["const", "rand", "pixel"])
@pytest.mark.parametrize("counts", [(1, 1), (1, 3), (2, 2)])
def test_timm_random_erasing_replays_timms_code(mode, counts, monkeypatch):
    n, c, h, w = 5, 3, 20, 24
    t = TimmRandomErasing(1.0, mode=mode, min_count=counts[0], max_count=counts[1],
                          generator=torch.Generator().manual_seed(3))
    batch = torch.randn(n, c, h, w)
    p = t.make_params(batch)
    out = t.transform(batch.clone(), p)
    ref = batch.clone()
    for k in range(n):
        boxes = [bx for bx in p["boxes"][k].tolist() if bx[2] > 0]
        expected = ref[k].clone()
        for e, (i, j, bh, bw) in enumerate(p["boxes"][k].tolist()):
            if bh == 0:
                continue
            v = p["values"][e]
            if v.ndim == 2:
                expected[:, i:i + bh, j:j + bw] = v[k].to(batch.dtype).view(c, 1, 1)
        if mode != "pixel":
            torch.testing.assert_close(out[k], expected, rtol=0, atol=0)
        else:  # per-pixel noise inside the boxes, the rest untouched
            inside = torch.zeros(c, h, w, dtype=torch.bool)
            for i, j, bh, bw in boxes:
                inside[:, i:i + bh, j:j + bw] = True
            assert torch.equal(out[k][~inside], batch[k][~inside])
    # timm's _erase given the boxes' draws (random.uniform / randint scripted) erases exactly our boxes
    for k in range(n):
        slots = [bx for bx in p["boxes"][k].tolist() if bx[2] > 0]
        cnt = len(slots)
        script = {"random": [0.0], "randint": ([cnt] if counts[0] != counts[1] else [])}
        uni = []
        for i, j, bh, bw in slots:
            uni += [bh * bw * cnt / (h * w), float(np.log(bh / bw))]  # target area bh * bw, aspect bh / bw
            script["randint"] += [i, j]
        monkeypatch.setattr(erasing_mod.random, "random", lambda s=script: s["random"].pop(0))
        monkeypatch.setattr(erasing_mod.random, "randint", lambda a, b, s=script: s["randint"].pop(0))
        monkeypatch.setattr(erasing_mod.random, "uniform", lambda a, b, s=uni: s.pop(0))
        img = torch.ones(c, h, w)
        erasing_mod.RandomErasing(1.0, mode="const", min_count=counts[0], max_count=counts[1],
                                  device="cpu")._erase(img, c, h, w, img.dtype)
        mask = torch.zeros(c, h, w, dtype=torch.bool)
        for i, j, bh, bw in slots:
            mask[:, i:i + bh, j:j + bw] = True
        assert torch.equal(img == 0, mask)


def test_timm_random_erasing_count_and_rate():
    t = TimmRandomErasing(0.25, min_count=1, max_count=3, generator=torch.Generator().manual_seed(2))
    p = t.make_params(torch.zeros(6000, 3, 32, 32))
    erased = (p["boxes"][:, :, 2] > 0).sum(1)
    assert abs((erased > 0).double().mean() - 0.25) < 0.02
    counts = erased[erased > 0]
    for k in (1, 2, 3):  # count uniform in [1, 3] (a box fails its 10 attempts rarely at these areas)
        assert abs((counts == k).double().mean() - 1 / 3) < 0.04


def test_timm_levels_above_ten_clamp_as_timm():
    lv = torch.tensor([5.0, 10.0, 15.0, 20.0])
    kinds = ["solarize_add", "posterize_original", "posterize_increasing", "posterize", "solarize"]
    ops = torch.zeros(4, dtype=torch.int64)
    neg = torch.zeros(4, dtype=torch.bool)
    got = {k: _timm_tables._timm_args([k], ops, lv, neg, {}).tolist() for k in kinds}
    assert got["solarize_add"] == [55.0, 110.0, 128.0, 128.0]  # min(128, int(level / 10 * 110))
    assert got["posterize_original"] == [6.0, 8.0, 8.0, 8.0]  # >= 8 bits: timm returns the image
    assert got["posterize_increasing"] == [2.0, 0.0, 0.0, 0.0]  # Pillow's mask at < 0 bits clears all: 0 bits
    assert got["posterize"] == [2.0, 4.0, 6.0, 8.0]
    assert got["solarize"] == [128.0, 256.0, 256.0, 256.0]
