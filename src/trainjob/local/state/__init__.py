"""What the local backend keeps on this machine, shared by the client side and the job side.

``home`` (the directory layout), ``store`` (SQLite; its tables in ``schema``, its rows in
``rows``), ``status`` (a TrainJob's conditions as stored), ``files`` and ``logfiles`` (files
written safely, log files), ``procs`` and ``ptree`` (spawning, killing, liveness of processes).
Both :mod:`trainjob.local.client` and :mod:`trainjob.local.job` import it; it imports neither
(``.importlinter``).
"""
