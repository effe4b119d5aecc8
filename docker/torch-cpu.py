"""Make PyPI's torch in a virtual environment a CPU-only one: remove what a CPU never loads.

PyPI has no CPU-only torch for Linux x86_64 (that wheel is on download.pytorch.org only): its torch
is the CUDA build, and ``libtorch.so`` links ``libtorch_cuda.so``, which links twelve CUDA
libraries of the nvidia-* / cuda-toolkit wheels (cudart, cuBLAS and cuBLASLt, cuFFT, cuSPARSE and
cuSPARSELt, cuSOLVER, nvJitLink, NVRTC, NCCL, NVSHMEM, cuFile, cuDNN's loader, CUPTI): without
them ``import torch`` fails (``OSError: libcudart.so.13: cannot open shared object file``, then
``ValueError: libcublasLt.so.*[0-9] not found``), so those stay. What stays unread on a CPU, as
``/proc/self/maps`` shows after ``import torch`` and a gloo all-reduce, goes:

* triton's package (1.0 GB): the GPU compiler of ``torch.compile``; torch runs without it
  (has_triton False). Its metadata stays, so that pip does not bring it back for a package that
  needs torch;
* cuDNN's engines, graph, ops, adv... (0.9 GB): ``libcudnn.so.9`` loads them on the first cuDNN
  call on a GPU; the loader itself stays;
* cuSOLVER Mg, NVSHMEM's device bitcode and archives, static CUDA archives, the profiler (nvperf),
  cufftw, nvblas, CUDA headers (0.3 GB).

The result is for CPUs only: on a GPU, cuDNN's calls and ``torch.compile`` would fail, so the
image that uses it sets ``CUDA_VISIBLE_DEVICES=""`` (torch then sees no GPU anywhere). Usage: ``python torch-cpu.py VENV``; it checks the result
(``import torch``, a gloo all-reduce) and prints what it removed.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

REMOVE = (
    "triton",
    "nvidia/cudnn/lib/libcudnn_*.so*",
    "nvidia/cu13/lib/libcusolverMg.so*",
    "nvidia/cu13/lib/libnvperf_*.so",
    "nvidia/cu13/lib/libpcsamplingutil.so",
    "nvidia/cu13/lib/libcheckpoint.so",
    "nvidia/cu13/lib/libcufftw.so*",
    "nvidia/cu13/lib/libnvblas.so*",
    "nvidia/cu13/lib/*.a",
    "nvidia/nvshmem/lib/*.bc",
    "nvidia/nvshmem/lib/*.a",
    "nvidia/*/include",
)

# What a CPU does with torch (the unit test reads what this loads, before any pruning) ...
WORKLOAD = """
import os, torch, torch.distributed as dist
assert not torch.cuda.is_available()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="0", RANK="0", WORLD_SIZE="1")
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
t = torch.ones(3, requires_grad=True)
(t * 2).sum().backward()
x = torch.tensor([1.0, 2.0])
dist.all_reduce(x)
assert x.tolist() == [1.0, 2.0] and t.grad.tolist() == [2.0, 2.0, 2.0]
dist.destroy_process_group()
"""
# ... and, after pruning, that it still works and triton is gone.
CHECK = WORKLOAD + """
try:
    import triton
    raise SystemExit("triton is still importable")
except ImportError:
    pass
print("torch", torch.__version__, "imports and all-reduces on the CPU")
"""


def size(path: Path) -> int:
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def removable(site: Path) -> list[Path]:
    """What of ``site`` (a site-packages) goes: every match of REMOVE."""
    return [Path(hit) for pattern in REMOVE for hit in sorted(glob.glob(str(site / pattern)))]


def prune(site: Path) -> int:
    """Remove :func:`removable`; the bytes freed. triton's metadata stays: without it, pip would
    download triton (1 GB) again for any package that needs torch (CustomTrainer's
    packages_to_install); ``import triton`` fails, which is how torch and transformers tell it
    is absent."""
    freed = 0
    for path in removable(site):
        freed += size(path)
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    return freed


def main(venv: str) -> int:
    python = Path(venv) / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    freed = prune(site)
    print(f"torch-cpu: removed {freed / 1e9:.2f} GB a CPU never loads", flush=True)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    return subprocess.run([python, "-c", CHECK], env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
