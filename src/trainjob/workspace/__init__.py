"""Workspace snapshots: a folder packed at submit, named by its digest, unpacked for every trainer.

``trainjob run --workdir DIR`` and ``train(options=[Workspace(DIR)])`` pack a folder
(:mod:`.pack`: its ``.gitignore`` and an exclude list respected, symlinks never followed out of
it, a size limit) into a deterministic archive named by the SHA-256 of its tar stream. The
TrainJob records the digest and the folder in annotations (:mod:`.names`); the compiler's
Workspace plugin (``runtime/plugins/workspace.py``) gives the trainer pods an init container that
unpacks the archive (from the TrainJob's ConfigMap or an ``s3://`` object) into a volume on
``PYTHONPATH``, set as the working directory. The local and container backends unpack it once
per digest under ``$TRAINJOB_HOME/workspaces`` instead (``local/client/workspaces.py``); the
Kubernetes backend stores it (``cluster/workspaces.py``).

One home for the archive's format: :mod:`.names` (pure: names and the unpack script the init
container runs), :mod:`.pack` (reads the folder), :mod:`.unpack` (writes it out, never outside
its target).
"""
