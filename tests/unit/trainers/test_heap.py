"""trainers/llm/heap: a CPU training process keeps the heap memory it frees (glibc's mmap and trim
thresholds raised), unless its malloc was tuned or replaced through the environment.

Whether the settings took is checked in a fresh interpreter (they last for the process: the test
run's own stays as it was), by counting the page faults of a block allocated, freed and allocated
again: fresh pages each time with glibc's defaults, none the second time once tuned.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from trainjob.trainers.llm import heap

glibc = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)

PROBE = """
import json, resource, sys
from trainjob.trainers.llm import heap

def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = bytearray(64 << 20)  # 64 MiB, zeroed: every page touched
    del block
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

tuned = heap.keep_freed_memory() if sys.argv[1] == "tune" else False
faults()
print(json.dumps({"tuned": tuned, "again": faults()}))
"""


def probe(mode: str, env: dict[str, str] | None = None) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True, env=env
    )
    return dict(json.loads(out.stdout))


@glibc
def test_a_tuned_process_reuses_the_pages_it_freed() -> None:
    default, tuned = probe("keep-defaults"), probe("tune")
    assert tuned["tuned"]
    assert default["again"] > 10_000  # 64 MiB mapped afresh: 16,384 pages of 4 KiB
    assert tuned["again"] < 100


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MALLOC_TRIM_THRESHOLD_", "131072"),
        ("MALLOC_MMAP_THRESHOLD_", "131072"),
        ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072"),
        ("LD_PRELOAD", "libjemalloc.so.2"),
    ],
)
def test_malloc_tuned_through_the_environment_is_left_alone(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    for var in (*heap.ENV, "GLIBC_TUNABLES", "LD_PRELOAD"):
        monkeypatch.delenv(var, raising=False)
    assert not heap.tuned_by_user()
    monkeypatch.setenv(name, value)
    assert heap.tuned_by_user()
    assert heap.keep_freed_memory() is False


def test_other_glibc_tunables_do_not_count_as_malloc_tuning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in (*heap.ENV, "LD_PRELOAD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=4096")
    assert not heap.tuned_by_user()
