"""tensorops' benchmark suite: ``python -m benchmarks --help``.

One module per op family lists its cases (benchmarks/<bench>.py, named by ``tensorops.registry``; they import
only ``case``); ``harness`` finds them by name and times them all the same way (``timing``: native eager,
torch.compile of the same expression, tensorops, and a copy of the same bytes) and writes the table, the JSON and
the plot (``report``).
"""
