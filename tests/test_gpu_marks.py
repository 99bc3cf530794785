"""The `cuda` marker selects every GPU test: `pytest -m cuda` (what benchmarks/gpu/gpu_check.sh runs) must not miss
one, and the marker must not sit on tests that run without a GPU."""
from __future__ import annotations

import pytest

from conftest import HAS_CUDA

GPU_WORDS = ("gpu", "cuda")


def _skipped_for_gpu(item) -> bool:
    """True when a skipif mark that names a GPU/CUDA need is active on this machine."""
    for m in item.iter_markers("skipif"):
        cond = m.args[0] if m.args else m.kwargs.get("condition", False)
        reason = str(m.kwargs.get("reason", "")).lower()
        if not isinstance(cond, str) and cond and any(w in reason for w in GPU_WORDS):
            return True
    return False


@pytest.mark.skipif(HAS_CUDA, reason="on a GPU machine the GPU tests run instead of skipping; nothing to compare")
def test_every_gpu_test_carries_the_cuda_marker(request):
    items = request.session.items
    if len({it.path for it in items}) < 3:
        pytest.skip("checks the whole suite's tests: run it with the other test files")
    missing = [it.nodeid for it in items if _skipped_for_gpu(it) and it.get_closest_marker("cuda") is None]
    assert not missing, f"GPU tests without @pytest.mark.cuda (so `-m cuda` misses them): {missing[:20]}"
    # and no test marked cuda runs on this machine without a GPU
    running = [it.nodeid for it in items if it.get_closest_marker("cuda") is not None and not _skipped_for_gpu(it)]
    assert not running, f"tests marked cuda that do not skip without a GPU: {running[:20]}"


def test_cuda_marker_is_registered(pytestconfig):
    assert any(line.startswith("cuda:") for line in pytestconfig.getini("markers"))
