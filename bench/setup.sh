#!/usr/bin/env bash
# Creates bench/.venv with PyTorch for bench/reference.py (which runs it on the CPU only).
#
# PyPI's Linux x86_64 torch wheel is the CUDA build: libtorch_python.so itself links
# libcudart, libcudnn, libcufile and libtorch_cuda.so (which links cuBLAS, cuFFT, NCCL, ...),
# so `pip install --no-deps torch` does not even import (libcudart.so.13 not found). The
# CPU-only wheels live on PyTorch's own index, which this machine cannot reach. So we install
# the wheel with its CUDA runtime libraries (a few GB on disk): they are loaded but never
# initialised, and the benchmark runs on the CPU only (torch.cuda is never touched). The
# baseline RSS of `import torch` is reported by reference.py so the memory column can be
# read with that overhead in mind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"
torch_version="${TORCH_VERSION:-2.15.0}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet "torch==$torch_version" numpy

"$venv/bin/python" - <<'PY'
import torch
torch.set_num_threads(2)
a = torch.randn(64, 64)
b = a @ a.T
assert b.shape == (64, 64) and torch.isfinite(b).all()
print("torch", torch.__version__, "cuda:", torch.cuda.is_available(), "threads:", torch.get_num_threads(), "matmul ok")
PY
