#!/usr/bin/env bash
# The GPU machine's one call, where every document and the GPU session's instructions have always called it:
# benchmarks/gpu_check.sh OUTDIR. The script itself lives with the GPU room (benchmarks/gpu/gpu_check.sh).
exec bash "$(dirname "$0")/gpu/gpu_check.sh" "$@"
