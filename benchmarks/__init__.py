"""tensorops' benchmark suite: ``python -m benchmarks --help``.

One module per op family lists its cases (benchmarks/ops/<bench>.py, named by ``tensorops.registry``; they import
only ``case``); ``harness`` finds them by name and times them all the same way (``timing``: native eager,
torch.compile of the same expression, tensorops, and a copy of the same bytes) and writes the table, the JSON and
the plot (``report``).

The modules live in rooms, one idea each (benchmarks/README.md has the map):

* the top: the shared machinery (``__main__``, ``harness``, ``timing``, ``case``, ``machine``, ``load``);
* ``ops/``: the op families' rows and the measurements behind the kernels' constants;
* ``images/``: the image ops (augment, the CPU builds side by side, the peers, photographs, decode fidelity);
* ``pipelines/``: DataLoader pipelines and the training recipes end to end, and what their memory costs;
* ``sanitizers/``: the sanitizer calls of every kernel;
* ``gpu/``: the GPU machine's check (``gpu_check.sh``), its summary and its CUDA-only rows;
* ``reporting/``: what a run writes and the docs' generated tables.

A room is a directory on this package's ``__path__``, not a subpackage: ``benchmarks.isa`` is still the module
``benchmarks.isa`` (found in benchmarks/images/isa.py), so ``python -m benchmarks.isa``, ``from benchmarks import
isa`` and every documented command stay as they were. The rooms have no ``__init__.py`` so that each module has
one name only (``benchmarks.images.isa`` would be a second copy of ``benchmarks.isa``, with its own state: never
import through a room's name), and no room is named like a module (``benchmarks.<room>`` names only a
directory). tests/test_benchmarks.py checks both. Files are found through ``PACKAGE``, ``RESULTS`` and ``REPO``
below, never from a module's own ``__file__`` (a module may change rooms; benchmarks/pipelines/batch_cache_rss.py,
which runs by path beside another checkout's package, is the one exception and says so).
"""
import os

PACKAGE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(PACKAGE)
RESULTS = os.path.join(PACKAGE, "results")  # published results: the docs' tables are generated from these
LOCAL_RESULTS = os.path.join(RESULTS, "local")  # a run's default output (ignored by git)
ROOMS = ("ops", "images", "pipelines", "sanitizers", "gpu", "reporting")

__path__ += [os.path.join(PACKAGE, room) for room in ROOMS]
