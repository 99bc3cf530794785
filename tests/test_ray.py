"""tensorops.ray on a local two-node Ray cluster: read_images (or read_binary_files) -> the stage ->
iter_torch_batches.

One module-scoped cluster (a head and a second node, one CPU each, on this machine); every dataset is a folder of
small JPEGs written here. Eval results are compared bit for bit with ResizedCropMirrorNormalizeCollate on the same
decoded images, rows matched by path. A column of JPEG bytes gives the decoded column's output bit for bit: the
decode op equals resized_crop_mirror_normalize of decode_jpeg(RGB), which equals Pillow's decode of these files.
"""
import io
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'tensorops[ray]')")
pytest.importorskip("ray.data", reason="ray is installed without Ray Data (pip install 'tensorops[ray]')")
PIL_Image = pytest.importorskip("PIL.Image", reason="Pillow is needed to write the test JPEGs")

from ray.cluster_utils import Cluster  # noqa: E402
from ray.data.collate_fn import NumpyBatchCollateFn  # noqa: E402

import tensorops  # noqa: E402
from tensorops.data import ResizedCropMirrorNormalizeCollate  # noqa: E402

pytestmark = pytest.mark.ray

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
SIZE = 48
MB = 2**20


class _KeepPaths(NumpyBatchCollateFn):
    """iter_torch_batches' collate: the image column as a tensor (no copy), paths as strings."""

    def __call__(self, batch):
        return {"image": torch.from_numpy(batch["image"]), "path": [str(p) for p in batch["path"]]}


@pytest.fixture(scope="module")
def cluster():
    node = {"num_cpus": 1, "object_store_memory": 100 * MB}
    c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    c.add_node(**node)
    ray.init(address=c.address, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # rows are matched by path: no test relies on Ray keeping their order
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("jpegs")
    rng = np.random.default_rng(0)
    for i in range(8):
        h, w = (int(v) for v in rng.integers(60, 121, 2))
        PIL_Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(root / f"img{i}.jpg", quality=90)
    return str(root)


def _decoded(folder):
    """The same decode read_images does (PIL, mode RGB), keyed by path."""
    out = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        with PIL_Image.open(path) as im:
            out[path] = np.asarray(im.convert("RGB"))
    return out


def _run(folder, stage, *, concurrency=None, batch_size=3, binary=False, **kwargs):
    """read_images (``binary``: read_binary_files, the stage given column="bytes") -> stage (batches of
    ``batch_size`` rows) -> iter_torch_batches; {path: (C, h, w) tensor}."""
    # half a CPU for each read task and each actor: two 1-CPU nodes each holding one actor still run the reads
    if binary:
        ds = ray.data.read_binary_files(folder, include_paths=True, num_cpus=0.5)
    else:
        ds = ray.data.read_images(folder, mode="RGB", include_paths=True, num_cpus=0.5)
    if concurrency is None:  # an instance: tasks
        ds = ds.map_batches(stage, batch_format="numpy", batch_size=batch_size)
    else:  # the class: an actor pool
        ds = ds.map_batches(stage, batch_format="numpy", batch_size=batch_size, concurrency=concurrency, num_cpus=0.5,
                            fn_constructor_kwargs=kwargs)
    if binary:
        ds = ds.rename_columns({"bytes": "image"})
    rows = {}
    for batch in ds.iter_torch_batches(batch_size=4, collate_fn=_KeepPaths()):
        for path, image in zip(batch["path"], batch["image"]):
            rows[path.split("://")[-1]] = image.clone()
    return rows


def _expected(folder, **options):
    decoded = _decoded(folder)
    collate = ResizedCropMirrorNormalizeCollate(SIZE, MEAN, STD, train=False, **options)
    batch, _ = collate([(img, 0) for img in decoded.values()])
    return dict(zip(decoded, batch))


def _assert_rows_equal(got, want):
    assert sorted(got) == sorted(want)
    for path in want:
        torch.testing.assert_close(got[path], want[path], rtol=0, atol=0, msg=lambda m: f"{path}: {m}")


def test_eval_actor_pool_matches_collate(cluster, folder):
    from tensorops.ray import ResizedCropMirrorNormalize

    got = _run(folder, ResizedCropMirrorNormalize, concurrency=2, size=SIZE, mean=MEAN, std=STD, train=False)
    _assert_rows_equal(got, _expected(folder))
    assert next(iter(got.values())).shape == (3, SIZE, SIZE)


def test_eval_tasks_fp16_padded(cluster, folder):
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False, dtype=torch.float16,
                                                     pad_channels=4)
    got = _run(folder, stage)
    want = _expected(folder, dtype=torch.float16, pad_channels=4)
    assert next(iter(got.values())).dtype == torch.float16
    _assert_rows_equal(got, want)


def test_train_seeded_repeats_across_forms(cluster, folder):
    from tensorops.ray import ResizedCropMirrorNormalize

    kwargs = dict(size=SIZE, mean=MEAN, std=STD, train=True, seed=7)
    first = _run(folder, ResizedCropMirrorNormalize, concurrency=2, batch_size=3, **kwargs)
    # tasks, rows cut into other batches (5, then 1 and 2: whole blocks), in whatever order: the same crops
    for batch_size in (5, 1):
        _assert_rows_equal(_run(folder, ResizedCropMirrorNormalize(**kwargs), batch_size=batch_size), first)
    # the crops are random (not the eval crop), and a new epoch draws new ones
    evaluated = _expected(folder)
    assert any(not torch.equal(first[p], evaluated[p]) for p in first)
    other = _run(folder, ResizedCropMirrorNormalize(**kwargs, epoch=1))
    assert any(not torch.equal(first[p], other[p]) for p in first)


def test_read_binary_files_matches_collate(cluster, folder):
    # the object store carries the files' bytes; the stage decodes them: the decoded images' batch, bit for bit
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False, column="bytes")
    _assert_rows_equal(_run(folder, stage, binary=True), _expected(folder))


def test_error_names_the_file(cluster, tmp_path):
    PIL_Image.fromarray(np.full((70, 90), 128, np.uint8)).save(tmp_path / "gray.jpg")  # one channel
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False)
    ds = ray.data.read_images(str(tmp_path), include_paths=True).map_batches(stage, batch_format="numpy")
    with pytest.raises(Exception) as info:  # Ray's wrapper (RayTaskError) around the stage's ValueError
        ds.take_all()
    text = str(info.value)
    assert "ValueError: tensorops.ray.ResizedCropMirrorNormalize(): 1 of 1 rows failed: path=" in text, text
    assert "gray.jpg" in text and "3 values but the images have 1 channels" in text, text


def test_import_does_not_import_ray_and_names_the_extra():
    code = (
        "import sys, tensorops; assert 'ray' not in sys.modules, 'import tensorops imported ray'\n"
        "sys.modules['ray'] = None\n"  # ray absent
        "try:\n    tensorops.ray\nexcept ImportError as e:\n"
        "    assert 'tensorops[ray]' in str(e), e; print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(tensorops.__file__)),
                                                        os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_bad_options_fail_on_the_driver():
    from tensorops.ray import ResizedCropMirrorNormalize

    with pytest.raises(TypeError, match="bfloat16"):
        ResizedCropMirrorNormalize(SIZE, MEAN, STD, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="generator"):
        ResizedCropMirrorNormalize(SIZE, MEAN, STD, generator=torch.Generator())
    with pytest.raises(ValueError, match="size"):
        ResizedCropMirrorNormalize(0, MEAN, STD)


# ---- the stage called directly on numpy batches (no cluster) ----------------------------------------------------
def _photos(n, seed=0, gray=False):
    rng = np.random.default_rng(seed)
    shape = (lambda h, w: (h, w)) if gray else (lambda h, w: (h, w, 3))
    return [rng.integers(0, 256, shape(*(int(v) for v in rng.integers(60, 121, 2))), dtype=np.uint8) for _ in range(n)]


def test_seed_without_a_key_column_raises_instead_of_repeating_across_actors():
    # every actor would otherwise start the same stream: the same crops on every actor
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, seed=3)
    with pytest.raises(ValueError, match=r"seed=3 needs a key column .*key_column=.*the batch has \['image'\]"):
        stage({"image": np.array(_photos(2), dtype=object)})
    keyed = stage({"image": np.array(_photos(2), dtype=object), "id": np.array([10, 11])})["image"]
    assert keyed.shape == (2, 3, SIZE, SIZE)
    # eval draws nothing, and seed=None draws fresh entropy per process: neither needs a key
    tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False, seed=3)({"image": _photos(2)})
    tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD)({"image": _photos(2)})


@pytest.mark.parametrize("gray", [True, False])
def test_empty_batch_keeps_the_channels_of_its_column(gray):
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, [0.5] if gray else MEAN, [0.2] if gray else STD,
                                                     train=False)
    empty = np.zeros((0, 70, 90) if gray else (0, 70, 90, 3), np.uint8)  # what a fixed-shape numpy column gives
    out = stage({"image": empty, "path": np.array([], dtype=object)})["image"]
    full = stage({"image": np.zeros((1, 70, 90) if gray else (1, 70, 90, 3), np.uint8),
                  "path": np.array(["a.jpg"], dtype=object)})["image"]
    assert out.shape == (0, *full.shape[1:]) == (0, 1 if gray else 3, SIZE, SIZE)
    assert out.dtype == full.dtype


def test_rows_that_are_not_images_name_their_path():
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False)
    column = np.empty(3, dtype=object)
    column[:] = [_photos(1)[0], "not an image", _photos(1)[0]]
    with pytest.raises(TypeError, match=r"path='b.jpg': an image must be a numeric array"):
        stage({"image": column, "path": np.array(["a.jpg", "b.jpg", "c.jpg"], dtype=object)})
    column[1] = np.zeros(5, np.uint8)
    with pytest.raises(ValueError, match=r"path='b.jpg': an image must be an \(H, W\) or \(H, W, C\) array"):
        stage({"image": column, "path": np.array(["a.jpg", "b.jpg", "c.jpg"], dtype=object)})


# ---- columns of encoded bytes (read_binary_files' "bytes"), called directly ------------------------------------
def _column(rows):
    """An object array of these rows, as Ray's numpy batches hold bytes and ragged images."""
    column = np.empty(len(rows), dtype=object)
    column[:] = rows
    return column


def _jpegs(n, seed=0):
    """n JPEGs written by Pillow (the last one grayscale): (their bytes, Pillow's RGB decode as read_images')."""
    data, decoded = [], []
    for image in _photos(n - 1, seed) + _photos(1, seed + 1, gray=True):
        buf = io.BytesIO()
        PIL_Image.fromarray(image).save(buf, format="JPEG", quality=90)
        data.append(buf.getvalue())
        with PIL_Image.open(io.BytesIO(data[-1])) as im:
            decoded.append(np.asarray(im.convert("RGB")))
    return data, decoded


@pytest.mark.parametrize("train, options", [(True, {}), (False, {"dtype": torch.float16, "pad_channels": 4})])
def test_bytes_column_equals_the_decoded_column(train, options):
    data, decoded = _jpegs(5)
    paths = _column([f"img{k}.jpg" for k in range(5)])
    kwargs = dict(train=train, seed=7, **options)
    want = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, **kwargs)(
        {"image": _column(decoded), "path": paths})["image"]
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, column="bytes", **kwargs)
    for rows in (data, [np.frombuffer(d, np.uint8) for d in data]):  # bytes, or 1-D uint8 arrays
        got = stage({"bytes": _column(rows), "path": paths})
        assert sorted(got) == ["bytes", "path"] and got["path"] is paths
        assert got["bytes"].dtype == want.dtype and got["bytes"].shape == want.shape
        np.testing.assert_array_equal(got["bytes"], want)
    with pytest.raises(KeyError, match="pass column='bytes'"):  # read_binary_files' column, not the default
        tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, **kwargs)({"bytes": _column(data), "path": paths})


def test_bad_file_in_a_bytes_column_names_its_path_or_is_dropped():
    data, _ = _jpegs(3)
    rows = [data[0], data[1][: len(data[1]) // 4], b"not an image", data[2]]  # truncated scan; no header
    paths = _column(["ok-a.jpg", "cut-b.jpg", "junk-c.jpg", "ok-d.jpg"])
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False, column="bytes")
    with pytest.raises(ValueError, match=r"^tensorops\.ray\.ResizedCropMirrorNormalize\(\): .*path='cut-b\.jpg'"):
        stage({"bytes": _column(rows[:2]), "path": paths[:2]})
    with pytest.raises(ValueError, match=r"^tensorops\.ray\.ResizedCropMirrorNormalize\(\): .*path='junk-c\.jpg'"):
        stage({"bytes": _column(rows[2:]), "path": paths[2:]})
    # on_error="drop": the bad rows leave every column, one warning each
    drop = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False, column="bytes", on_error="drop")
    with pytest.warns(RuntimeWarning, match="dropped path='(cut-b|junk-c).jpg'") as record:
        got = drop({"bytes": _column(rows), "path": paths, "id": np.arange(4)})
    dropped = [str(w.message) for w in record if "dropped" in str(w.message)]
    assert len(dropped) == 2 and "cut-b.jpg" in dropped[0] and "junk-c.jpg" in dropped[1], dropped
    assert list(got["path"]) == ["ok-a.jpg", "ok-d.jpg"] and got["id"].tolist() == [0, 3]
    want = stage({"bytes": _column([rows[0], rows[3]]), "path": paths[[0, 3]]})["bytes"]
    np.testing.assert_array_equal(got["bytes"], want)


def test_a_damaged_row_decodes_with_a_warning_and_strict_refuses_it(monkeypatch):
    """A JPEG with junk bytes before a marker (libjpeg warns; decode_jpeg and Pillow decode it) keeps its row,
    named once; strict=True makes it a bad row; stage.report counts both."""
    from tensorops import _decode_ops

    monkeypatch.setattr(_decode_ops, "_WARNED", set())
    data, decoded = _jpegs(3)
    sos = data[0].index(b"\xff\xda")
    junk = data[0][:sos] + b"\x00\x00\x00" + data[0][sos:]
    rows, paths = _column([junk, data[1]]), _column(["junk-a.jpg", "ok-b.jpg"])
    stage = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False, column="bytes")
    with pytest.warns(RuntimeWarning, match=r"junk-a\.jpg.*libjpeg warned"):
        got = stage({"bytes": rows, "path": paths})
    want = stage({"bytes": _column(data[:2]), "path": paths})  # the same pixels: the junk is skipped
    np.testing.assert_array_equal(got["bytes"], want["bytes"])
    assert stage.report == {"warned": 1, "fallback": 0, "dropped": 0}
    strict = tensorops.ray.ResizedCropMirrorNormalize(SIZE, MEAN, STD, train=False, column="bytes", strict=True,
                                                      on_error="drop")
    with pytest.warns(RuntimeWarning, match=r"dropped path='junk-a\.jpg'.*extraneous bytes"):
        got = strict({"bytes": rows, "path": paths})
    assert list(got["path"]) == ["ok-b.jpg"] and strict.report == {"warned": 0, "fallback": 0, "dropped": 1}
