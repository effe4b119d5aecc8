"""The job side of the local backend: what runs inside a job's supervisor process.

``supervisor`` (the per-job process that runs the JobSet), ``attempt`` (the pods of one attempt),
``jobset_rules`` (JobSet's rules), ``reports`` and ``statusserver`` (progress reports),
``tracking`` (every process a job started), ``pods`` (a Plan's pods as local processes: env,
endpoints, paths, commands; over ``templates``, ``network``, ``mounts``, ``container_env``,
``commands``), ``podrun`` (one pod's processes), ``probes``, ``volumes``, ``mpi`` (OpenMPI on one
host), ``outputs``, ``runner`` and ``containers/`` (how pods run: processes or containers). It knows
nothing of the client side (:mod:`trainjob.local.client`, enforced by ``.importlinter``) and
reads and writes a job only through :mod:`trainjob.local.state`.
"""
