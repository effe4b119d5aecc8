"""MPI hello: every rank reports in, rank 0 checks an allreduce of the ranks.

Run by examples/mpi-hello.yaml: the launcher runs ``mpirun -n 4 python mpi-hello/hello.py``
over the hostfile the runtime mounts (locally rewritten to ``localhost slots=N``).
"""

from __future__ import annotations

import sys

from mpi4py import MPI


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    sys.stdout.write(f"hello from rank {rank} of {size} on {MPI.Get_processor_name()}\n")
    sys.stdout.flush()
    total = comm.allreduce(rank, op=MPI.SUM)
    assert total == size * (size - 1) // 2, f"allreduce gave {total}"
    comm.Barrier()
    if rank == 0:
        sys.stdout.write(f"allreduce ok sum={total} size={size}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
