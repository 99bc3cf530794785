"""tensorops' benchmark suite: ``python -m benchmarks --help``.

One module per op family (normalize, clamp, cat_split) lists its cases; ``harness`` times them all the same way
(native eager, torch.compile of the same expression, tensorops, and a copy of the same bytes) and writes the
table, the JSON and the plot.
"""
