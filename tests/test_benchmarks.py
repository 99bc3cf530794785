"""The benchmark suite and the GPU validation tooling, tested without a GPU.

* the harness on a tiny grid: JSON rows with every key and positive times, the table, the plot;
* the rows come from tensorops.registry (a row for an op it does not list is an error); the grids hold the
  issues' performance-floor cases; no import circle among the benchmarks modules; each module has one name
  (``benchmarks.<module>``, whichever room holds it);
* benchmarks/sanitizers/sanitize_ops.py's calls, on the CPU kernels;
* benchmarks/gpu/gpu_summary.py on a synthetic junit XML, sanitizer logs and benchmark JSON;
* (benchmarks/gpu/gpu_check.sh itself: tests/test_gpu_check.py).
"""
from __future__ import annotations

import ast
import importlib.util
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import tensorops

REPO = Path(__file__).resolve().parent.parent
try:  # `benchmarks` is not installed with the package: import it from the checkout
    import benchmarks
except ImportError:
    sys.path.append(str(REPO))
    import benchmarks

from benchmarks import gpu_summary, harness, report, sanitize_ops, timing  # noqa: E402
from benchmarks import __main__ as cli  # noqa: E402
from benchmarks import cat_split as bench_cat_split  # noqa: E402
from benchmarks import clamp as bench_clamp  # noqa: E402
from benchmarks import normalize as bench_normalize  # noqa: E402
from benchmarks.case import Bench, Case  # noqa: E402
from tensorops import registry  # noqa: E402

CPU = torch.device("cpu")


# ------------------------------------------------------------------------------------------------ the harness


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One run of the smoke grid (normalize only: the family every branch has), compile included."""
    out = tmp_path_factory.mktemp("bench")
    result = harness.run(devices=["cpu"], grid="smoke", ops=["normalize"], out_dir=str(out), progress=False,
                         say=lambda msg: None)
    return result, out


def test_smoke_json_has_rows_with_expected_keys(smoke):
    result, out = smoke
    path = Path(result["files"]["json"])
    assert path.parent == out and path.exists()
    data = json.loads(path.read_text())
    assert data["rows"], "no rows"
    for row in data["rows"]:
        assert set(timing.ROW_KEYS) <= set(row), set(timing.ROW_KEYS) - set(row)
        assert row["device"] == "cpu" and row["op"] == "normalize"
        for key in ("eager_s", "tensorops_s", "copy_s"):
            assert row[key] > 0, (key, row)
        assert row["bytes"] > 0 and row["gbps"] > 0 and row["pct_of_copy"] > 0
        assert row["speedup_vs_eager"] == pytest.approx(row["eager_s"] / row["tensorops_s"])
        assert row["check"] == "ok"
        assert any(name.startswith("out.copy_(x)") for name in row["extras_s"])
        if tensorops.is_compiled():  # what the CPU thread policy decided during the row
            policy = row["parallel_policy"]
            assert {"parallel_passes", "serial_passes", "probes", "costly_regions"} <= set(policy)
            assert all(v >= 0 for v in policy.values())
    meta = data["meta"]
    for key in ("cpu_model", "cpu_count", "torch", "tensorops_build_info", "gpu_name", "grid", "wall_s"):
        assert key in meta
    assert meta["tensorops_build_info"] == tensorops.build_info()
    png = Path(result["files"]["png"])
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_smoke_compile_column(smoke):
    result, _ = smoke
    compiled_rows = [r for r in result["rows"] if not (r["compile_error"] or "").startswith("not run")]
    assert compiled_rows, "the smoke grid should compile at least one row"
    for row in compiled_rows:
        if row["compile_error"]:
            pytest.skip(f"torch.compile is unavailable on this machine: {row['compile_error']}")
        assert row["compile_s"] > 0 and row["speedup_vs_compile"] > 0
        assert row["compile_warmup_s"] > 0


def test_table_is_aligned(smoke):
    result, _ = smoke
    text = report.format_table(result)
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("device"))
    body = lines[header + 2: header + 2 + len(result["rows"])]
    assert len(body) == len(result["rows"])
    # Right-aligned numeric columns end at the same offset on every line: check the '% copy' column.
    end = lines[header].index("% copy") + len("% copy")
    for line in body:
        assert line[end - 1] == "%", line
    assert set(lines[header + 1].replace(" ", "")) == {"-"}


def _bogus_case(times):
    return Case(op="bogus", series="bogus", case="x1", shape="1", dtype="f32", layout="contiguous", nbytes=8,
                make=lambda device: Bench(eager=torch.neg, tensorops=torch.neg, args=(torch.ones(1),)),
                eager_expr="torch.neg(x)", times=times)


@pytest.mark.parametrize("times, message", [("no_such_op", "not in tensorops.registry"),
                                            ("cat", "registered with bench='cat_split'")])
def test_a_row_for_an_op_the_registry_does_not_place_here_is_an_error(monkeypatch, times, message):
    monkeypatch.setattr(bench_normalize, "cases", lambda device, grid: [_bogus_case(times)])
    with pytest.raises(ValueError, match=message):
        harness.collect_cases(CPU, "smoke", ["normalize"])
    with pytest.raises(ValueError, match=message):
        harness.benchmarked_ops()


def test_rows_needing_a_missing_package_are_skipped_and_said(monkeypatch, capsys):
    # what the Quickstart's demo meets on a bare install: no torchvision, so its rows go, saying why
    needy = [_bogus_case("normalize"), _bogus_case("normalize")]
    for case in needy:
        case.requires = ("tensorops_no_such_package",)
    plain = _bogus_case("normalize")
    monkeypatch.setattr(bench_normalize, "cases", lambda device, grid: [*needy, plain])
    result = harness.run(devices=["cpu"], grid="smoke", ops=["normalize"], do_compile=False, progress=False)
    assert len(result["rows"]) == 1
    assert result["meta"]["rows_skipped"] == [{"op": "bogus", "rows": 2, "needs": "tensorops_no_such_package"}]
    assert "skipped 2 bogus row(s): they need tensorops_no_such_package" in capsys.readouterr().out


def test_runs_never_overwrite_the_published_results():
    # the Quickstart's demo ran into benchmarks/results/ and the docs' generated tables then disagreed with it
    published = REPO / "benchmarks" / "results"
    assert Path(cli.DEFAULT_OUT).parent == published and Path(cli.DEFAULT_OUT) != published
    assert "benchmarks/results/local/" in (REPO / ".gitignore").read_text().splitlines()


def test_ops_come_from_the_registry():
    ops = harness.benchmarked_ops()
    assert ops and set(ops) <= set(registry.OPS)
    assert list(ops) == [o for o in registry.OPS if o in ops]  # registry order
    assert {c.times for c in harness.collect_cases(CPU, "smoke", ops)} == set(ops)
    assert harness.resolve_ops(["cat_split"]) == ["cat", "split"]  # a benchmark module stands for its ops
    assert harness.resolve_ops(["split", "cat", "split"]) == ["split", "cat"]
    unbenchmarked = [o for o in registry.OPS if o not in ops]
    for bad, message in [("bogus", "unknown op 'bogus'")] + [(o, "no benchmark rows time") for o in unbenchmarked]:
        with pytest.raises(ValueError, match=message):
            harness.resolve_ops([bad])


def test_every_family_runs():
    result = harness.run(devices=["cpu"], grid="smoke", ops=["clamp", "cat", "split"], do_compile=False,
                         progress=False, say=lambda msg: None)
    ops = {r["op"] for r in result["rows"]}
    assert ops == {"clamp", "clamp_fwd_bwd", "cat", "split"}
    for row in result["rows"]:
        assert row["check"] == "ok", row
        assert row["tensorops_s"] > 0 and row["eager_s"] > 0
        assert row["compile_error"].startswith("not run")


def test_check_same_catches_wrong_results_not_rounding():
    e = torch.randn(1000, dtype=torch.float64).float() * 100
    assert timing.check_same(e, e * (1 + 1e-6)) == "ok"
    assert timing.check_same((e, e.sum()), (e, e.sum() + 1e-3)) == "ok"  # another summation order
    assert timing.check_same(e, e.flip(0)).startswith("mismatch")
    assert timing.check_same((e, e), (e,)).startswith("mismatch")
    assert timing.check_same(e, e.half()).startswith("mismatch: tensor 0 is torch.float16")
    i = torch.arange(10)
    assert timing.check_same(i, i) == "ok" and timing.check_same(i, i + 1).startswith("mismatch")


def test_a_raising_op_is_recorded_and_fails_the_cli(monkeypatch, tmp_path, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr(tensorops, "normalize", broken)
    result = harness.run(devices=["cpu"], grid="smoke", ops=["normalize"], do_compile=False, progress=False,
                         say=lambda msg: None)
    for row in result["rows"]:
        assert row["check"] == "error: tensorops raised RuntimeError: kernel exploded"
        assert row["tensorops_s"] is None and row["eager_s"] > 0 and row["speedup_vs_eager"] is None
    assert "PROBLEM: error: tensorops raised" in report.format_table(result)
    assert cli.main(["--smoke", "--no-compile", "--no-progress", "--ops", "normalize", "--out", str(tmp_path)]) == 1
    assert "kernel exploded" in capsys.readouterr().err


def _find(cases, **want):
    return [c for c in cases if all(getattr(c, k) == v for k, v in want.items())]


def test_quick_grid_has_the_issue_floors():
    norm = bench_normalize.cases(CPU, "quick")
    (imagenet,) = _find(norm, case="imagenet", dtype="u8->f32", layout="NCHW")
    assert imagenet.shape == "32x3x224x224" and "quick" in imagenet.compile_grids
    assert imagenet.eager_expr == "(x.float() / 255 - mean) / std"
    assert imagenet.nbytes == 32 * 3 * 224 * 224 * (1 + 4)
    assert _find(norm, layout="NHWC->NCHW") and _find(norm, dtype="u8->f16") and _find(norm, dtype="u8->bf16")

    clamp = bench_clamp.cases(CPU, "quick")
    (fb,) = _find(clamp, op="clamp_fwd_bwd", case="imagenet")
    assert fb.nbytes >= 5 * 32 * 3 * 224 * 224 * 4
    assert _find(clamp, op="clamp", case="imagenet", dtype="f32", layout="NCHW, (1,3,1,1) bounds")
    assert {c.dtype for c in clamp} == {"f32", "f16", "i32"}

    cs = bench_cat_split.cases(CPU, "quick")
    (many,) = _find(cs, op="cat", shape="10000 x (64), dim 0", dtype="f32")
    assert many.nbytes == 2 * 10000 * 64 * 4 and many.no_compile_reason
    assert _find(cs, op="cat", shape="4 x (8,3,224,224), dim 1", dtype="f32")
    (split4,) = _find(cs, op="split", shape="(32,12,112,112) -> 4 pieces, dim 1", dtype="f32")
    assert split4.eager_expr.startswith("torch.split_with_sizes_copy")
    assert {c.case for c in cs if c.op == "cat"} >= {"x2", "x10000"}


@pytest.mark.parametrize("grid", ["smoke", "quick", "full"])
def test_grids_are_well_formed(grid):
    for device in (CPU, torch.device("cuda")):
        for bench in registry.benchmark_modules():
            cases = harness.module_cases(bench, device, grid)
            assert cases, f"benchmarks/ops/{bench}.py has no rows in the {grid} grid"
            keys = [(c.op, c.series, c.shape, c.dtype, c.layout) for c in cases]
            assert len(keys) == len(set(keys)), "duplicate rows"
            # None: the row's Bench counts its bytes once its inputs exist (test below)
            assert all((c.nbytes is None or c.nbytes > 0) and registry.OPS[c.times].bench == bench for c in cases)
            assert all(set(c.compile_grids) <= set(harness.GRIDS) for c in cases)


def test_listing_the_grid_makes_no_inputs_and_lazy_rows_count_their_bytes(monkeypatch):
    """Every CLI call lists the full grid (--ops' choices): encoding the decode rows' JPEGs there (2-12 MP photos
    among them) cost a minute per call. The files are made when a row runs, and its Bench counts their bytes."""
    from benchmarks import decode

    real = decode.encode_jpegs
    monkeypatch.setattr(decode, "encode_jpegs", lambda *a, **k: pytest.fail("a JPEG was encoded to list the grid"))
    assert "decode_resized_crop_mirror_normalize" in harness.benchmarked_ops()
    (row,) = [c for c in harness.module_cases("decode", CPU, "smoke") if not c.series.endswith(" vs torch-native")]
    assert row.nbytes is None
    monkeypatch.setattr(decode, "encode_jpegs", real)
    pytest.importorskip("torchvision", reason="the decode row's columns are torchvision's (the listing was checked)")
    bench = row.make(CPU)
    files = bench.args[0]
    assert bench.nbytes == sum(f.numel() for f in files) + len(files) * 3 * 8 * 8 * 4


def test_real_photo_rows_sit_beside_the_photo_like_ones_and_need_scikit_image(monkeypatch, capsys):
    """The quick grid times real photographs next to the synthetic ones (resize: HWC memory and CHW, train and
    eval; decode: train and eval); listing it makes no photo, and without scikit-image the rows go, saying so."""
    from benchmarks import decode
    from benchmarks import resized_crop_mirror_normalize as rcmn

    def fail(*a, **k):
        pytest.fail("a real photo was made to list the grid")

    monkeypatch.setattr(decode, "real_photos", fail)
    monkeypatch.setattr(rcmn, "real_photos", fail)
    grid = {bench: harness.module_cases(bench, CPU, "quick") for bench in ("resized_crop_mirror_normalize", "decode")}
    real = {bench: [c for c in cases if c.series.endswith(" real photos")] for bench, cases in grid.items()}
    assert {(c.layout, c.series.split()[2]) for c in real["resized_crop_mirror_normalize"]} == {
        (lay, mode) for lay in rcmn.LAYOUTS.values() for mode in ("train", "eval")}
    assert {c.series.split()[2] for c in real["decode"]} == {"train", "eval"}
    rows = real["resized_crop_mirror_normalize"] + real["decode"]
    assert all(c.case == "real photos (scikit-image)" and "skimage" in c.requires for c in rows)
    for bench, cases in real.items():  # each beside the photo-like row of the same kind
        assert all(any(o.series == c.series[: -len(" real photos")] for o in grid[bench]) for c in cases)
    monkeypatch.setattr(harness.importlib.util, "find_spec",
                        lambda name, *a: None if name == "skimage" else object())
    kept, skipped = harness.drop_unavailable([(CPU, c) for c in rows], print)
    assert kept == [] and {r["needs"] for r in skipped} == {"skimage"}
    assert "pip install scikit-image" in capsys.readouterr().out


# ------------------------------------------------------------------ the Quickstart's demo: image rows without torchvision


def _native(items):
    """The rows against torch (and Pillow) alone, of Cases or of a result's row dicts."""
    return [c for c in items if (c["series"] if isinstance(c, dict) else c.series).endswith(" vs torch-native")]


def test_quickstart_has_image_rows_that_need_no_torchvision():
    """The Quickstart runs before torchvision is installed: the quick grid still times the resize (train, eval)
    and the JPEG decode (train; eval too in the full grid) against what torch and Pillow alone give, and needs
    nothing else."""
    from benchmarks import decode
    from benchmarks import resized_crop_mirror_normalize as rcmn

    resize = _native(harness.module_cases("resized_crop_mirror_normalize", CPU, "quick"))
    dec = _native(harness.module_cases("decode", CPU, "quick"))
    assert {c.series for c in resize} >= {f"resized_crop_mirror_normalize u8->f32 {m} hwc{rcmn.NATIVE}"
                                           for m in ("train", "eval")}
    assert {c.series for c in dec} == {f"decode_resized_crop_mirror_normalize jpeg->f32 train{decode.NATIVE}"}
    assert {c.series.split()[2] for c in _native(harness.module_cases("decode", CPU, "full"))} == {"train", "eval"}
    for c in resize + dec:
        assert "torchvision" not in c.requires and "skimage" not in c.requires
        assert report.peer({"eager_expr": c.eager_expr}) in ("torch", "Pillow + torch"), c.eager_expr
        assert c.shape.startswith("32x")


@pytest.fixture(scope="module")
def no_torchvision_smoke(tmp_path_factory):
    """The smoke grid of the image families as a bare install runs it: torchvision (and scikit-image) hidden."""
    saved = {k: sys.modules.get(k, "absent") for k in ("torchvision", "skimage")}
    sys.modules["torchvision"] = None  # find_spec and import both see it missing
    sys.modules["skimage"] = None
    try:
        out = tmp_path_factory.mktemp("bare")
        said = []
        result = harness.run(devices=["cpu"], grid="smoke", out_dir=str(out), progress=False, say=said.append,
                             ops=["crop_mirror_normalize", "resized_crop_mirror_normalize",
                                  "decode_resized_crop_mirror_normalize"])
    finally:
        for k, v in saved.items():
            if v == "absent":
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return result, said


def test_native_image_rows_run_and_agree_without_torchvision(no_torchvision_smoke):
    result, said = no_torchvision_smoke
    native = _native(result["rows"])
    assert {r["times"] for r in native} == {"resized_crop_mirror_normalize", "decode_resized_crop_mirror_normalize"}
    assert {r["series"].split()[-4] for r in native if r["times"] == "resized_crop_mirror_normalize"} >= {
        "train", "eval"}
    assert all(r["check"] == "ok" and r["speedup_vs_eager"] > 0 for r in native), [r["check"] for r in native]
    assert any("need torchvision" in m for m in said)  # the torchvision rows were skipped, and said so
    assert Path(result["files"]["png"]).stat().st_size > 0


def test_augment_row_times_the_jitter_against_torch_per_image(monkeypatch):
    """Where tensorops.augment exists the demo adds resize + ColorJitter (brightness, contrast, saturation per
    sample) + normalize against torchvision's formulas written in torch per image. Without it here, a stand-in
    module with the contract's signatures (vectorized over the batch, so not the row's own per-image code)
    checks the row itself."""
    import types

    from benchmarks import resized_crop_mirror_normalize as rcmn

    if not rcmn._has_augment():
        def blend(x, other, f):
            f = f.to(torch.float32).view(-1, 1, 1, 1)
            return x.mul(f).add_(other * (1 - f)).clamp_(0, 255).to(torch.uint8)

        def gray(x):
            r, g, b = x.unbind(-3)
            return r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).floor_().unsqueeze(-3)

        functional = types.SimpleNamespace(
            adjust_brightness=lambda x, f: blend(x, torch.zeros_like(x, dtype=torch.float32), f),
            adjust_contrast=lambda x, f: blend(x, gray(x).mean(dim=(-3, -2, -1), keepdim=True), f),
            adjust_saturation=lambda x, f: blend(x, gray(x), f))
        package = types.ModuleType("tensorops.augment")
        package.functional = functional
        monkeypatch.setitem(sys.modules, "tensorops.augment", package)
        monkeypatch.setitem(sys.modules, "tensorops.augment.functional", functional)
        monkeypatch.setattr(rcmn, "_has_augment", lambda: True)
        monkeypatch.setattr(harness, "missing_packages", lambda case: [])
    (row,) = [c for c in rcmn.native_cases("smoke") if "color jitter" in c.series]
    assert row.requires == ("tensorops.augment",)
    assert any("color jitter" in c.series for c in rcmn.native_cases("quick"))
    bench = row.make(CPU)
    assert timing.check_same(bench.eager(*bench.args), bench.tensorops(*bench.args), atol=row.check_atol) == "ok"
    # the stand-in's values are torchvision's: where torchvision is here, the row's per-image code is checked too
    tv = pytest.importorskip("torchvision.transforms.v2.functional", reason="torchvision checks jitter_native")
    x = torch.randint(0, 256, (3, 9, 11), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    want = tv.adjust_saturation(tv.adjust_contrast(tv.adjust_brightness(x, 1.3), 0.7), 1.2)
    assert torch.equal(rcmn.jitter_native(x, 1.3, 0.7, 1.2), want)


def test_plot_puts_image_rows_first_and_no_series_alone_in_a_panel(no_torchvision_smoke, smoke):
    rows = [r for r in no_torchvision_smoke[0]["rows"] + smoke[0]["rows"] if r["speedup_vs_eager"]]
    images, single, lines, panels = report.plot_groups(rows)
    assert len(images) + len(single) + len(lines) == len(rows)
    assert images and all(report.is_image_row(r) for r in images)
    for dev, fam in panels:  # a line panel's every series has two points or more
        series = [r["series"] for r in lines if (r["device"], r["times"]) == (dev, fam)]
        assert series and all(series.count(name) >= 2 for name in series)
    labels = [report.bar_label(r) for r in images]
    assert len(set(zip(labels, map(report.peer, images)))) == len(images), "two bars with one label"
    assert {report.peer(r) for r in _native(images)} == {"torch", "Pillow + torch"}


def test_real_photos_are_imagenet_sized_jpegs():
    pytest.importorskip("skimage", reason="the real photographs come from scikit-image's sample data")
    from PIL import Image

    from benchmarks.case import real_photo_sizes, real_photos

    sizes = real_photo_sizes(8)
    assert sizes == real_photo_sizes(8) and len(set(sizes)) > 1
    assert all(300 <= min(s) and max(s) <= 500 and 3 * max(s) <= 4 * min(s) for s in sizes)
    files = real_photos(8)
    assert files == real_photos(8)  # deterministic (and cached)
    for f, (h, w) in zip(files, sizes):
        im = Image.open(io.BytesIO(f))
        assert im.format == "JPEG" and im.mode == "RGB" and im.size == (w, h)
        assert [c[1:3] for c in im.layer] == [(2, 2), (1, 1), (1, 1)]  # 4:2:0
        assert 0.5 < len(f) * 8 / (w * h) < 8  # bits per pixel of a photo, not of a flat or a noise image


def test_photo_stats_measures_every_set_and_its_table_renders():
    pytest.importorskip("torchvision", reason="photo_stats times torchvision v2's decode and resize")
    pytest.importorskip("skimage", reason="one of its sets is the real photographs")
    from benchmarks import docs_views, photo_stats

    rows = photo_stats.measure(rounds=1, n=2)
    assert [r["set"] for r in rows] == list(photo_stats.SETS)
    for r in rows:
        assert r["bits_per_pixel"] > 0 and all(v["median"] > 0 for v in r["ms_per_image"].values())
    header, cells = docs_views.view_photo_stats("photo_stats.json", {"sets": rows})
    assert len(cells) == len(photo_stats.SETS) and all(len(c) == len(header) for c in cells)


def _imports(path: Path):
    """The benchmarks.* modules a file imports, anywhere in it (function-level imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "benchmarks":
                out |= {a.name for a in node.names}
            elif node.module.startswith("benchmarks."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("benchmarks.")}
    return out


def module_files():
    """benchmarks module name -> its file, in the package's directory or one of its rooms (``benchmarks.ROOMS``)."""
    files = {}
    for folder in [REPO / "benchmarks"] + [REPO / "benchmarks" / room for room in benchmarks.ROOMS]:
        for p in folder.glob("*.py"):
            assert p.stem not in files, f"two modules named benchmarks.{p.stem}: {files[p.stem]} and {p}"
            files[p.stem] = p
    return files


def import_graph():
    """benchmarks module -> the benchmarks modules it imports, with the runners' imports by name
    (harness imports every registry bench module, sanitize_ops every sanitize_<family> module)."""
    files = module_files()
    graph = {name: _imports(path) & set(files) for name, path in files.items()}
    graph["harness"] |= set(registry.benchmark_modules())
    graph["sanitize_ops"] |= {f"sanitize_{f}" for f in registry.families()}
    return graph


def find_cycle(graph):
    """One import circle as a list of modules (first == last), or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_no_import_circle_in_benchmarks():
    graph = import_graph()
    assert set(registry.benchmark_modules()) <= set(graph) and "case" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)
    # the finder finds one: a family module importing the runner back
    assert find_cycle({**graph, "normalize": graph["normalize"] | {"harness"}}) is not None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_each_benchmarks_module_has_one_name_whichever_room_holds_it():
    # the rooms are directories on benchmarks.__path__, not subpackages: benchmarks.isa is found in benchmarks/images/
    files = module_files()
    rooms = [REPO / "benchmarks" / room for room in benchmarks.ROOMS]
    assert all(room.is_dir() and not (room / "__init__.py").exists() for room in rooms), "a room is no subpackage"
    assert not set(benchmarks.ROOMS) & set(files), "a room named like a module"
    on_disk = {p.name for p in (REPO / "benchmarks").iterdir() if p.is_dir()} - {"results", "__pycache__"}
    assert on_disk == set(benchmarks.ROOMS), "a directory of benchmarks/ that is not in benchmarks.ROOMS"
    for name, path in files.items():
        spec = importlib.util.find_spec(f"benchmarks.{name}")
        assert spec is not None and Path(spec.origin) == path, name
    for path in files.values():  # nothing imports through a room's name (that would be a second copy)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for n in names:
                assert n.split(".")[:2] not in [["benchmarks", room] for room in benchmarks.ROOMS], (path, n)


def test_cli_smoke_writes_files(tmp_path):
    rc = cli.main(["--smoke", "--no-compile", "--no-progress", "--ops", "normalize", "--out", str(tmp_path)])
    assert rc == 0
    assert (tmp_path / "bench_cpu_smoke.json").exists() and (tmp_path / "bench_cpu_smoke.png").exists()


def test_cli_rejects_bad_arguments():
    with pytest.raises(SystemExit) as exc:
        cli.parse_args(["--ops", "normalize,bogus"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        cli.parse_args(["--device", "tpu"])
    with pytest.raises(SystemExit):
        cli.parse_args(["--threads", "0"])
    assert cli.parse_args(["--ops", "cat_split"]).ops == ["cat", "split"]
    assert cli.parse_args(["--threads", "1"]).threads == 1
    for bad in (["--load", "-1"], ["--load-limit", "0"]):
        with pytest.raises(SystemExit):
            cli.parse_args(bad)
    assert cli.parse_args(["--load", "2"]).load == 2 and cli.parse_args([]).load == 0


# ------------------------------------------------------------------------------------- --load: busy processes


def _gone(pid: int, within_s: float) -> bool:
    """True once process ``pid`` no longer runs (reaped, or a zombie: it has stopped computing)."""
    import time

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process states from /proc")
def test_load_processes_run_inside_the_block_and_stop_after_it():
    from benchmarks.load import BusyLoad

    with BusyLoad(2, limit_s=60) as load:
        pids = [p.pid for p in load.procs]
        assert len(pids) == 2 and load.alive() == 2
        assert load.describe()["busy_processes"] == 2
    assert all(_gone(pid, 5) for pid in pids)
    with pytest.raises(ValueError, match="load"):
        BusyLoad(-1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process states from /proc")
def test_load_processes_stop_after_their_time_limit():
    from benchmarks.load import BusyLoad

    load = BusyLoad(1, limit_s=0.3).start()
    try:
        pid = load.procs[0].pid
        load.procs[0].wait(timeout=10)  # exits by itself, nobody stops it
        assert load.alive() == 0
    finally:
        load.stop()
    assert _gone(pid, 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process states from /proc")
def test_load_processes_stop_when_the_benchmark_is_killed():
    # a stand-in benchmark process starts the load, prints its pids, and is SIGKILLed: no cleanup code runs
    code = textwrap.dedent("""
        import sys, time
        sys.path.insert(0, sys.argv[1])
        from benchmarks.load import BusyLoad
        load = BusyLoad(2, limit_s=120).start()
        print(" ".join(str(p.pid) for p in load.procs), flush=True)
        time.sleep(120)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code, str(REPO)], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(x) for x in parent.stdout.readline().split()]
        assert len(pids) == 2 and not any(_gone(pid, 0.1) for pid in pids)
    finally:
        parent.kill()
        parent.wait()
    assert all(_gone(pid, 10) for pid in pids), "busy processes outlived the benchmark that started them"


def test_json_records_the_load(tmp_path):
    result = harness.run(devices=["cpu"], grid="smoke", ops=["cat"], do_compile=False, progress=False,
                         out_dir=str(tmp_path), load=1, load_limit_s=120, say=lambda msg: None)
    saved = json.loads((tmp_path / "bench_cpu_smoke_load1.json").read_text())
    for meta in (result["meta"], saved["meta"]):
        assert meta["load"]["busy_processes"] == 1 and meta["load"]["limit_s"] == 120
        assert meta["load"]["still_running_at_end"] == 1  # the load ran for the whole timing
    assert "--load 1" in report.format_table(result)
    md = (tmp_path / "bench_cpu_smoke_load1.md").read_text()
    assert "--load 1" in md and md.count("\n| cat |") == len(saved["rows"])
    row = saved["rows"][0]
    assert row["rounds"] == harness.ROUNDS["smoke"]
    assert set(row["spread_s"]) == {"eager", "tensorops"}
    assert row["speedup_vs_eager_spread"]["min"] <= row["speedup_vs_eager_spread"]["max"]
    quiet = harness.run(devices=["cpu"], grid="smoke", ops=["cat"], do_compile=False, progress=False,
                        say=lambda msg: None)
    assert quiet["meta"]["load"]["busy_processes"] == 0
    assert "no added load" in report.format_table(quiet)


def test_interleaved_rounds_time_every_statement_once_per_round():
    calls = []
    samples = timing.measure_interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                                          min_run_time=0.001, rounds=3)
    assert {k: len(v) for k, v in samples.items()} == {"a": 3, "b": 3}
    assert all(t > 0 for v in samples.values() for t in v)
    sp = timing.spread([3.0, 1.0, 2.0, 4.0])
    assert (sp["min"], sp["median"], sp["max"]) == (1.0, 2.5, 4.0)
    assert report.fmt_ratio(2.0, {"min": 1.0, "max": 3.0}) == "2.00x (1.00-3.00)"
    assert report.fmt_ratio(2.0, {"min": 1.9, "max": 2.1}) == "2.00x"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given when there is no GPU")
def test_cli_cuda_without_gpu_is_an_error(tmp_path, capsys):
    assert cli.main(["--smoke", "--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "no GPU" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- sanitize_ops.py


def test_sanitize_ops_calls_run_on_cpu(capsys):
    assert sanitize_ops.main(["--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "calls ok on cpu" in out
    for op in registry.OPS:  # every registry op has its calls
        assert f"\n{op}:\n" in "\n" + out
    assert any("1000" in c for c in sanitize_ops.CALLS) and any("x[1:]" in c for c in sanitize_ops.CALLS)


def test_sanitize_ops_without_calls_for_a_registry_op_is_an_error(monkeypatch):
    from benchmarks import sanitize_cat_split

    monkeypatch.delattr(sanitize_cat_split, "run_chunk")
    with pytest.raises(LookupError, match="sanitize_cat_split.py has no run_chunk"):
        sanitize_ops.main(["--device", "cpu", "--ops", "normalize,chunk"])
    with pytest.raises(SystemExit):
        sanitize_ops.main(["--device", "cpu", "--ops", "bogus"])


# -------------------------------------------------------------------------------------------- gpu_summary.py

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="5" time="1.0">
<testcase classname="tests.test_normalize" name="test_a[cuda]" time="0.1"/>
<testcase classname="tests.test_normalize" name="test_b[cuda]" time="0.1"/>
<testcase classname="tests.test_clamp" name="test_c[cuda]" time="0.1"/>
<testcase classname="tests.test_clamp" name="test_d[cuda]" time="0.1"><failure message="boom">x</failure></testcase>
<testcase classname="tests.test_cat" name="test_e[cuda]" time="0.1"><skipped message="no"/></testcase>
</testsuite></testsuites>
"""
MEMCHECK = "noise\n========= COMPUTE-SANITIZER\nsanitize_ops: 77 calls ok\n========= ERROR SUMMARY: 0 errors\n"
RACECHECK = ("========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)\n"
             "========= ERROR SUMMARY: 2 errors\n")


def _row(op, series, nbytes, pct, device="cuda:0", check="ok"):
    return {"op": op, "series": series, "shape": f"{nbytes}", "dtype": "f32", "device": device, "bytes": nbytes,
            "pct_of_copy": pct, "gbps": pct * 30, "copy_gbps": 3000.0, "speedup_vs_eager": 5.0,
            "speedup_vs_compile": 1.1, "check": check}


def _write_outdir(path: Path, junit=JUNIT, memcheck=MEMCHECK, racecheck=RACECHECK, rows=None):
    if junit is not None:
        (path / "junit.xml").write_text(junit)
    if memcheck is not None:
        (path / "memcheck.log").write_text(memcheck)
    if racecheck is not None:
        (path / "racecheck.log").write_text(racecheck)
    if rows is not None:
        (path / "bench_cuda_quick.json").write_text(json.dumps({"meta": {"gpu_name": "NVIDIA H200", "torch": "2.11"},
                                                                "rows": rows, "skipped": []}))


ROWS = [
    _row("normalize", "normalize u8->f32 NCHW", 1_000, 3.0),
    _row("normalize", "normalize u8->f32 NCHW", 100_000_000, 91.0),
    _row("clamp", "clamp f32 tensor bounds", 50_000_000, 80.0),
    _row("clamp", "clamp f32 tensor bounds", 900, 2.0, device="cpu"),
]


def test_parse_junit(tmp_path):
    (tmp_path / "junit.xml").write_text(JUNIT)
    t = gpu_summary.parse_junit(str(tmp_path / "junit.xml"))
    assert (t["tests"], t["passed"], t["failed"], t["skipped"]) == (5, 3, 1, 1)
    assert t["failed_tests"] == ["tests.test_clamp::test_d[cuda]"]


@pytest.mark.parametrize("text, errors", [
    (MEMCHECK, 0),
    (RACECHECK, 2),
    ("========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n", 1),
    ("========= ERROR SUMMARY: 12 errors\n", 12),
    ("the process was killed before the end\n", None),
])
def test_parse_sanitizer_log(tmp_path, text, errors):
    (tmp_path / "x.log").write_text(text)
    assert gpu_summary.parse_sanitizer_log(str(tmp_path / "x.log"))["errors"] == errors


def test_summary_reports_tests_sanitizers_and_bandwidth(tmp_path, capsys):
    _write_outdir(tmp_path, rows=ROWS)
    rc = gpu_summary.main([str(tmp_path)])
    text = capsys.readouterr().out
    assert rc == 1  # a failed test and racecheck errors
    assert "tests: 3 passed, 1 failed, 1 skipped (of 5)" in text
    assert "FAILED tests.test_clamp::test_d[cuda]" in text
    assert "memcheck: 0 errors" in text and "racecheck: 2 errors" in text
    norm = next(line for line in text.splitlines() if "normalize u8->f32 NCHW" in line)
    assert "91% of copy" in norm and "< target" not in norm  # the largest size is the one reported
    clamp = next(line for line in text.splitlines() if "clamp f32 tensor bounds" in line)
    assert "80% of copy" in clamp and "< target" in clamp  # the CPU row is not a CUDA result
    assert (tmp_path / "summary.txt").read_text().strip() == text.strip()
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["ok"] is False and any("racecheck" in p for p in saved["problems"])


def test_summary_all_clean(tmp_path):
    clean_junit = JUNIT.replace('<failure message="boom">x</failure>', "").replace('failures="1"', 'failures="0"')
    _write_outdir(tmp_path, junit=clean_junit, racecheck=MEMCHECK, rows=ROWS)
    assert gpu_summary.main([str(tmp_path)]) == 0
    assert "RESULT: all clean" in (tmp_path / "summary.txt").read_text()


def test_summary_of_an_early_failure_says_what_did_not_run(tmp_path):
    _write_outdir(tmp_path, memcheck=None, racecheck=None, rows=None)
    s = gpu_summary.summarize(str(tmp_path))
    text = gpu_summary.format_summary(s)
    assert not s["ok"]
    assert "memcheck: not run" in text and "benchmarks: not run" in text


def test_summary_flags_wrong_results(tmp_path):
    _write_outdir(tmp_path, racecheck=MEMCHECK, rows=[_row("cat", "cat", 10, 50.0, check="mismatch: x")])
    s = gpu_summary.summarize(str(tmp_path))
    assert any("differs from native torch" in p for p in s["problems"])

# gpu_check.sh's plumbing: tests/test_gpu_check.py


# ---------------------------------------------------------------------------------------------- pipeline.py


def test_pipeline_runs_every_path_on_a_few_files(tmp_path, monkeypatch, capsys):
    # its reference paths are torchvision v2's, on PIL images: where those are absent (an extra), nothing to run
    pytest.importorskip("torchvision", reason="benchmarks.pipeline times torchvision v2's paths (an optional extra)")
    pytest.importorskip("PIL", reason="benchmarks.pipeline decodes with PIL too (torchvision's dependency)")
    from benchmarks import pipeline, pipeline_paths

    monkeypatch.setenv(pipeline.SIMD_ENV, str(tmp_path / "no-such-python"))
    # small files and crops: the harness's plumbing, in seconds even on the extension's pure-torch fallback
    for module in (pipeline, pipeline_paths):
        monkeypatch.setattr(module, "CROP", 16)
    monkeypatch.setattr(pipeline_paths, "RESIZE", 18)
    monkeypatch.setattr(pipeline_paths, "imagenet_like_sizes", lambda n, g: [(40 + 3 * k, 52 - k) for k in range(n)])
    rc = pipeline.main(["--files", "3", "--epoch", "5", "--rounds", "1", "--workers", "0", "--out", str(tmp_path)])
    assert rc == 0
    data = json.loads((tmp_path / "pipeline_full.json").read_text())
    assert data["meta"]["epoch_images"] == 5  # an epoch cycles over the 3 files (check_batch counted 5 per epoch)
    assert {(r["mode"], r["path"]) for r in data["loader"]} == {(m, k) for m in ("train", "eval")
                                                                 for k in pipeline.PATHS}
    assert all(r["images_per_s"] > 0 for r in data["loader"])
    assert data["resize_only"]["Pillow"]["ms_per_image"] > 0  # benchmarks/pipelines/pil_resize.py under this Python
    assert "no-such-python" in data["resize_only"]["Pillow-SIMD"]["skipped"]  # skipped, saying why
    text = capsys.readouterr().out
    assert "| train | 0 |" in text and "Pillow-SIMD: skipped" in text


def test_augment_cuda_smoke_runs_and_checks_against_the_cpu_kernels(tmp_path):
    """benchmarks.augment_cuda (gpu_check.sh's augment rows) at smoke size on the CPU: every policy row is written,
    timed against torchvision where it is installed, and checked against the CPU kernels."""
    pytest.importorskip("tensorops.augment")
    import json

    from benchmarks import augment_cuda

    assert augment_cuda.main(["--device", "cpu", "--smoke", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "bench_augment_cuda.json").read_text())["rows"]
    assert [r["row"] for r in rows] == list(augment_cuda._policies())
    assert all(r["check"] == "equal to the CPU kernels" for r in rows), [r["check"] for r in rows]
    assert all(r["ms_per_image"]["tensorops"] > 0 for r in rows)
# ------------------------------------------------------------------------------------ augment.py, recipes.py


def _standin_augment():
    """tensorops.augment's contract (its functional ops and policies) done with torchvision per sample: what the
    augment and recipes benchmarks' plumbing is tested with where tensorops.augment is absent (its kernels have
    their own tests)."""
    import functools

    from torchvision.transforms import v2
    from torchvision.transforms.v2 import functional as F

    def each(fn):
        def run(batch, *args, **kw):
            cols = [a.tolist() if isinstance(a, torch.Tensor) else [a] * batch.shape[0] for a in args]
            return torch.stack([fn(x, *[c[i] for c in cols], **kw) for i, x in enumerate(batch)])
        return run

    class PerSample:
        def __init__(self, name, *args, **kw):
            self.t = getattr(v2, name)(*args, **kw)

        def __call__(self, batch, *labels):
            return self.t(batch, *labels) if labels else torch.stack([self.t(x) for x in batch])

    ns = {name: each(getattr(F, name)) for name in (
        "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_sharpness", "posterize",
        "solarize", "autocontrast", "equalize", "invert", "rgb_to_grayscale", "affine", "rotate")}
    ns["erase"] = each(lambda x, box, v: F.erase(x, *box, v=torch.tensor(v, dtype=x.dtype)))
    for name in ("TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix", "ColorJitter", "RandomErasing",
                 "MixUp", "CutMix"):
        ns[name] = functools.partial(PerSample, name)
    return ns.get, "stand-in: torchvision per sample (tests/test_benchmarks.py)"


def test_augment_times_every_row_and_writes_its_table(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torchvision", reason="benchmarks.augment compares against torchvision v2")
    from benchmarks import augment, docs_views

    monkeypatch.setattr(augment, "tensorops_augment", _standin_augment)
    rc = augment.main(["--smoke", "--sets", "photo-like", "--threads", "1", "--out", str(tmp_path)])
    assert rc == 0
    data = json.loads((tmp_path / "augment_smoke_threads1.json").read_text())
    assert [r["row"] for r in data["rows"]] == augment.row_names()
    assert {"activity", "load", "kornia", "tensorops_augment", "threads", "sets"} <= set(data["meta"])
    assert data["meta"]["activity"]["samples"] >= 1 and data["meta"]["load"]["busy_processes"] == 0
    kornia = importlib.util.find_spec("kornia") is not None
    for r in data["rows"]:
        mixes = r["row"].startswith(("MixUp", "CutMix"))
        assert r["baseline"] == (augment.TV_BATCH if mixes else augment.TV_IMAGE)
        want = {augment.TV_BATCH, augment.TOPS} | (set() if mixes else {augment.TV_IMAGE})
        assert want <= set(r["ms_per_image"]), (r["row"], r["missing"])
        assert (augment.KORNIA in r["ms_per_image"]) == (kornia and r["row"] != "AugMix"), r["missing"]
        assert all(t["median"] > 0 for t in r["ms_per_image"].values())
        assert set(r["ratio_to_baseline"]) == set(r["ms_per_image"]) - {r["baseline"]}
        if r["kind"] == "op":  # the stand-in is torchvision itself
            assert r["check"] == "bit-identical", r
    assert kornia or "not installed" in data["meta"]["kornia"]
    header, cells = docs_views.view_augment("augment_smoke.json", data)
    assert len(cells) == len(data["rows"]) and all(len(c) == len(header) for c in cells)
    assert len(docs_views.view_augment_policies("x", data)[1]) == len(augment.policies())
    md = (tmp_path / "augment_smoke_threads1.md").read_text()
    assert "| photo-like | 1 | TrivialAugmentWide |" in md and "augment_smoke_threads1.json" in md


def test_augment_without_tensorops_augment_skips_its_column_and_says_so(tmp_path, monkeypatch):
    pytest.importorskip("torchvision", reason="benchmarks.augment compares against torchvision v2")
    from benchmarks import augment

    monkeypatch.setattr(augment, "tensorops_augment", lambda: (None, "tensorops.augment is not in this build"))
    result = augment.run("smoke", threads=(1,), sets=(augment.SYNTH,), only=["brightness", "MixUp(0.2)"],
                         say=lambda msg: None)
    assert [r["row"] for r in result["rows"]] == ["brightness", "MixUp(0.2)"]
    assert all(augment.TOPS not in r["ms_per_image"] for r in result["rows"])
    assert result["meta"]["tensorops_augment"] == "tensorops.augment is not in this build"
    with pytest.raises(ValueError, match="unknown rows"):
        augment.run("smoke", only=["no such op"], say=lambda msg: None)


def test_recipes_time_both_paths_of_both_recipes(tmp_path, monkeypatch):
    pytest.importorskip("torchvision", reason="benchmarks.recipes compares against torchvision v2's pipeline")
    from benchmarks import docs_views, pipeline_paths, recipes

    # tensorops.augment itself: the tensorops path is the collate's augment= and after_normalize= with in-place
    # RandomErasing and RandomChoice([MixUp, CutMix]), which the per-sample stand-in does not model
    monkeypatch.setattr(pipeline_paths, "imagenet_like_sizes", lambda n, g: [(40 + 3 * k, 52 - k) for k in range(n)])
    rc = recipes.main(["--smoke", "--images", "photo-like", "--workers", "0", "--out", str(tmp_path)])
    assert rc == 0
    data = json.loads((tmp_path / "recipes_smoke_photo_like.json").read_text())
    expected = [(k, p) for k in recipes.RECIPES for p in recipes.PATHS[k]]
    assert sorted((r["recipe"], r["path"]) for r in data["rows"]) == sorted(expected)
    has_timm = importlib.util.find_spec("timm") is not None
    for r in data["rows"]:
        if r["recipe"] == "b" and r["path"] in (recipes.TIMM, recipes.PIPE) and not has_timm:
            assert "timm" in r["skipped"], r  # timm's own objects: skipped, saying why
            continue
        assert "skipped" not in r, r
        assert r["images_per_s"] > 0 and r["cpu_ms_per_image"]["median"] >= 0 and r["vs_torchvision"]["median"] > 0
        # against what the recipe's users run: torchvision's reference on PIL (a), timm's own pipeline (b)
        assert r["reference"] == ("torchvision v2 PIL" if r["recipe"] == "a" else recipes.TIMM)
        assert (r["vs_reference"] is None) == (r["recipe"] == "b" and not has_timm), r
    tops = [r for r in data["rows"] if r["path"] == recipes.TOPS]
    assert all(r["augment_in"] and r["policy"] for r in tops)
    assert {"activity", "load", "recipes", "epoch_images", "workers"} <= set(data["meta"])
    header, cells = docs_views.view_recipes("x", data)
    assert len(cells) == len(expected) and all(len(c) == len(header) for c in cells)
    assert (tmp_path / "recipes_smoke_photo_like.md").exists()


def test_augment_only_selects_rows_by_name_group_or_name_without_arguments():
    pytest.importorskip("torchvision", reason="benchmarks.augment's rows are built from torchvision's functions")
    from benchmarks import augment

    assert augment.select("policies") == [p.name for p in augment.policies()]
    assert augment.select("ColorJitter, RandAugment(2, 9),brightness") == [
        "ColorJitter(0.4, 0.4, 0.4, 0.1)", "ColorJitter(0.4, 0.4, 0.4)", "RandAugment(2, 9)", "brightness"]
    with pytest.raises(ValueError, match="no row is 'nope'"):
        augment.select("nope")


def test_augment_merges_parts_timed_in_separate_windows():
    from benchmarks import augment

    def part(rows, when, compiled):
        return {"meta": {"timestamp_utc": when, "git_commit": "c", "load": {}, "sets": ["photo-like"], "threads": [1],
                         "activity": {"samples": 10, "samples_with_a_compiler": compiled}, "wall_s": 1.0},
                "rows": [{"row": r} for r in rows]}

    merged = augment.merge([part(["TrivialAugmentWide"], "2026-01-01T00:00:00Z", 0),
                            part(["brightness", "hue"], "2026-01-01T00:05:00Z", 1)])
    assert [r["row"] for r in merged["rows"]] == ["TrivialAugmentWide", "brightness", "hue"]
    assert [p["rows"] for p in merged["meta"]["parts"]] == [1, 2]
    assert merged["meta"]["activity"]["samples"] == 20 and merged["meta"]["activity"]["samples_with_a_compiler"] == 1
    assert merged["meta"]["timestamp_utc"] == "2026-01-01T00:05:00Z"


def test_shared_memory_rows_time_every_way_of_getting_a_batchs_memory(tmp_path, monkeypatch):
    from benchmarks import shared_memory
    from tensorops.data import shared_batches as sb

    if not sb.reuse_enabled():
        pytest.skip("block reuse needs torch's file_descriptor sharing strategy on Linux")
    monkeypatch.setattr(shared_memory, "SHAPES", {"2 x 3 x 40 x 40": (2, 3, 40, 40)})
    monkeypatch.setattr(sb, "_pool", None)
    monkeypatch.setattr(sb, "get_worker_info", sb.get_worker_info)  # run() makes this process act as a worker
    assert shared_memory.main(["--rounds", "2", "--min-run-time", "0.01", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "shared_memory.json").read_text())["rows"]
    assert [r["way"] for r in rows] == list(shared_memory.WAYS)
    assert all(r["ms"] > 0 and r["spread_ms"]["min"] <= r["ms"] <= r["spread_ms"]["max"] for r in rows)
    assert sb._pool is not None and len(sb._pool.blocks) == 1  # the reused-block row wrote into one block



def test_isa_rows_run_each_build_in_a_process_of_its_own(tmp_path):
    pytest.importorskip("torchvision", reason="benchmarks.isa compares against torchvision v2 per image")
    from benchmarks import isa

    best = tensorops._extension._C.cpu_isa()
    assert isa.main(["--isas", best, "--images", "2", "--side", "24", "--rounds", "1", "--min-run-time", "0.01",
                     "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "isa.json").read_text())
    assert [b["isa"] for b in data["builds"]] == [best]
    rows = data["builds"][0]["rows"]
    assert len(rows) == 20 and all(r["tensorops"]["ms_per_image"] > 0 and r["vs_torchvision"] > 0 for r in rows)
    decode = next(r for r in rows if r["row"] == "decode_resized_crop_mirror_normalize")
    assert decode["vs_decode_jpeg + resize"] > 0  # the partial decode against the full one, the same resize
    # the peers' columns, where they are installed: every row they have, against the same arguments
    for peer, module in (("albumentations", "albumentations"), ("DALI CPU", "nvidia.dali")):
        if _importable(module):
            assert sum(f"vs_{peer}" in r for r in rows) >= 12, peer


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False
