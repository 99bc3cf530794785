"""Nothing lost in the switch: every JPEG of a folder (any depth) through torchvision's ``decode_jpeg`` and Pillow,
and through tensorops' decode op, each file in a subprocess of its own batch (a crash is counted, not fatal).

For each file whose first bytes are a JPEG's: the references (decode_jpeg(mode=RGB), Pillow's convert("RGB")),
then the op on the whole image and on boxes that touch every edge (one column wide at both edges, a strip, a
random box), uint8 output, compared bit for bit with resized_crop_mirror_normalize of the reference decode. The
summary counts the files each decoder decodes, the files torchvision decodes that tensorops refuses (the number
that must be 0), the files where the values differ, crashes and hangs (a file over ``--timeout`` seconds), and
the files tensorops decoded with a libjpeg warning or through the fallback decoder.

    python -m benchmarks.jpeg_corpus DIR [DIR ...] [--out benchmarks/results/jpeg_corpus.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Dict, List

CHUNK = 40  # files per subprocess


def _files(roots: List[str]) -> List[str]:
    out = []
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for name in sorted(names):
                path = os.path.join(dirpath, name)
                try:
                    with open(path, "rb") as f:
                        if f.read(3) == b"\xff\xd8\xff":
                            out.append(path)
                except OSError:
                    pass
    return sorted(out)


def _check(paths: List[str]) -> List[Dict[str, object]]:
    """Runs in the worker: one record per file."""
    import io
    import warnings

    import numpy as np
    import torch
    from PIL import Image

    import tensorops
    from tensorops import _decode_ops
    from tensorops.decode import decode_with_status

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    try:
        from torchvision.io import ImageReadMode, decode_jpeg
    except ImportError:
        decode_jpeg = None
    records = []
    for path in paths:
        data = open(path, "rb").read()
        rec: Dict[str, object] = {"path": path, "bytes": len(data)}
        ref = None
        if decode_jpeg is not None:
            try:
                ref = decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.RGB)
                ref = ref.permute(1, 2, 0).contiguous()
                rec["torchvision"] = "decoded"
            except Exception as e:  # noqa: BLE001 - any refusal is a refusal
                rec["torchvision"] = f"refused: {str(e)[-120:]}"
        try:
            with Image.open(io.BytesIO(data)) as im:
                pil = torch.from_numpy(np.array(im.convert("RGB")))
                cmyk = im.mode == "CMYK"
            rec["pillow"] = "decoded"
            if ref is None or cmyk:  # CMYK: the op gives Pillow's conversion (torchvision inverts some)
                ref = pil if ref is None or cmyk else ref
        except Exception as e:  # noqa: BLE001
            rec["pillow"] = f"refused: {str(e)[-120:]}"
        H, W = (int(ref.shape[0]), int(ref.shape[1])) if ref is not None else (1, 1)
        if ref is not None and H * W > 60_000_000:
            rec["tensorops"] = "skipped: over 60 MP"
            records.append(rec)
            continue
        boxes = [[0, 0, H, W], [0, 0, H, 1], [0, W - 1, H, 1], [H // 3, 0, max(1, H // 3), W],
                 [H // 4, W // 5, max(1, H // 2), max(1, W // 3)]]
        size = (min(H, 48), min(W, 48))
        bx = torch.tensor(boxes, dtype=torch.float64)
        try:
            got, status, texts = decode_with_status([data] * len(boxes), None, None, size=size, boxes=bx,
                                                    dtype=torch.uint8, on_error="fill")
            st = int(status[0])
            rec["tensorops"] = {_decode_ops.OK: "decoded", _decode_ops.WARNED: "decoded with a warning",
                                _decode_ops.FALLBACK: "decoded by the fallback",
                                _decode_ops.FAILED: "refused"}[st]
            if st != _decode_ops.OK:
                rec["tensorops_text"] = texts.get(0, "")
            if st != _decode_ops.FAILED and ref is not None:
                want = tensorops.resized_crop_mirror_normalize([ref] * len(boxes), None, None, dim=-1, size=size,
                                                               boxes=bx, dtype=torch.uint8)
                rec["equal"] = bool(torch.equal(got, want))
                if not rec["equal"]:
                    rec["max_diff"] = int((got.int() - want.int()).abs().max())
        except ValueError as e:
            rec["tensorops"] = "error"
            rec["tensorops_text"] = str(e)[-200:]
        records.append(rec)
    return records


def _worker() -> None:
    paths = json.loads(sys.stdin.read())
    print(json.dumps(_check(paths)))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("roots", nargs="+")
    p.add_argument("--out", default=None, help="write the records and the summary as JSON here")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a chunk of files may take")
    a = p.parse_args(argv)
    files = _files(a.roots)
    records: List[Dict[str, object]] = []
    t0 = time.time()
    for i in range(0, len(files), CHUNK):
        chunk = files[i:i + CHUNK]
        try:
            r = subprocess.run([sys.executable, "-m", "benchmarks.jpeg_corpus", "--worker"], input=json.dumps(chunk),
                               capture_output=True, text=True, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            r = None
        if r is not None and r.returncode == 0:
            records += json.loads(r.stdout.strip().splitlines()[-1])
            continue
        for path in chunk:  # the chunk crashed or hung: each file alone finds which
            try:
                one = subprocess.run([sys.executable, "-m", "benchmarks.jpeg_corpus", "--worker"],
                                     input=json.dumps([path]), capture_output=True, text=True, timeout=a.timeout)
                records += json.loads(one.stdout.strip().splitlines()[-1]) if one.returncode == 0 else \
                    [{"path": path, "tensorops": f"crashed (exit {one.returncode})"}]
            except subprocess.TimeoutExpired:
                records.append({"path": path, "tensorops": "hang"})
    tv = [r for r in records if r.get("torchvision") == "decoded"]
    either = [r for r in records if r.get("torchvision") == "decoded" or r.get("pillow") == "decoded"]
    summary = {
        "files": len(records),
        "torchvision decodes": len(tv),
        "torchvision or Pillow decodes": len(either),
        "refused by tensorops, decoded by torchvision": sum(1 for r in tv if r.get("tensorops") in ("refused",
                                                                                                    "error")),
        "refused by tensorops, decoded by Pillow alone": sum(1 for r in either if r not in tv and r.get(
            "tensorops") in ("refused", "error")),
        "values differ": sum(1 for r in records if r.get("equal") is False),
        "bit-identical": sum(1 for r in records if r.get("equal") is True),
        "crashes": sum(1 for r in records if str(r.get("tensorops", "")).startswith("crashed")),
        "hangs": sum(1 for r in records if r.get("tensorops") == "hang"),
        "decoded with a libjpeg warning": sum(1 for r in records if r.get("tensorops") == "decoded with a warning"),
        "decoded by the fallback": sum(1 for r in records if r.get("tensorops") == "decoded by the fallback"),
        "refused by all": sum(1 for r in records if r.get("tensorops") in ("refused", "error") and r not in either),
        "errors naming no sample": sum(1 for r in records if r.get("tensorops") == "error"
                                       and "sample 0" not in str(r.get("tensorops_text", ""))),
        "seconds": round(time.time() - t0, 1),
    }
    for k, v in summary.items():
        print(f"{k:>48}: {v}")
    for r in records:
        if (r in tv and r.get("tensorops") in ("refused", "error")) or r.get("equal") is False:
            print("  ", r)
    if a.out:  # the summary and the files worth a look (every file both references refuse is left out)
        from benchmarks.machine import machine_info

        notable = [r for r in records if r in either and r.get("tensorops") != "decoded" or r.get("equal") is False
                   or str(r.get("tensorops", "")).startswith(("crashed", "hang"))]
        with open(a.out, "w") as f:
            json.dump({"meta": machine_info(), "roots": a.roots, "summary": summary, "notable": notable}, f,
                      indent=1)


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker()
    else:
        main()
