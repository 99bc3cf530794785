"""Saved models that contain tensorops ops (torch.jit.trace, a torch.jit.script-ed function, torch.export) load and
run in a fresh process after `import tensorops`, which registers the ops they call."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import torch
from torch import nn

import tensorops
from conftest import requires_compiled

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


class Preprocess(nn.Module):
    """uint8 NHWC images -> normalized NCHW (transpose fused) -> clamp -> conv."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = tensorops.Normalize(MEAN, STD, memory_format=torch.contiguous_format)
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(x.permute(0, 3, 1, 2))
        return self.conv(tensorops.clamp(y, -2.0, 2.0))


def scripted_fn(x: torch.Tensor) -> torch.Tensor:
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]  # TorchScript reads no global lists
    return torch.ops.tensorops.normalize(x, mean, std, -3, 1.0 / 255.0, torch.float32, torch.preserve_format)


CHILD = textwrap.dedent(
    """
    import sys, torch
    import tensorops  # registers torch.ops.tensorops.*: what the saved models call
    d = sys.argv[1]
    data = torch.load(d + "/io.pt")
    x, img = data["x"], data["img"]
    outs = {
        "traced": torch.jit.load(d + "/traced.pt")(x),
        "scripted": torch.jit.load(d + "/scripted.pt")(img),
        "exported": torch.export.load(d + "/exported.pt2").module()(x),
    }
    for name, out in outs.items():
        assert torch.equal(out, data[name]), name
    with torch.profiler.profile() as prof:
        torch.jit.load(d + "/scripted.pt")(img)
    assert any(e.name == "tensorops::normalize" for e in prof.events()), "the kernel did not run"
    print("ran", sorted(outs))
    """
)


@requires_compiled
def test_traced_scripted_and_exported_models_run_in_a_fresh_process(tmp_path):
    torch.manual_seed(0)
    model = Preprocess().eval()
    x = torch.randint(0, 256, (2, 10, 12, 3), dtype=torch.uint8)
    img = torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit deprecation notices
        traced = torch.jit.trace(model, (x,))
        scripted = torch.jit.script(scripted_fn)
        traced.save(str(tmp_path / "traced.pt"))
        scripted.save(str(tmp_path / "scripted.pt"))
    exported = torch.export.export(model, (x,))
    torch.export.save(exported, str(tmp_path / "exported.pt2"))
    with torch.no_grad():
        expect = model(x)
        data = {"x": x, "img": img, "traced": traced(x), "scripted": scripted(img), "exported": exported.module()(x)}
    for name in ("traced", "exported"):
        assert torch.equal(data[name], expect), name
    assert torch.equal(data["scripted"], tensorops.normalize(img, MEAN, STD))
    torch.save(data, str(tmp_path / "io.pt"))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", CHILD, str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ran ['exported', 'scripted', 'traced']" in res.stdout
    # and it is `import tensorops` that makes them loadable: without it the operator is unknown
    res = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", "import torch; torch.jit.load('traced.pt')"],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300,
    )
    assert res.returncode != 0 and "tensorops" in res.stderr, res.stderr
