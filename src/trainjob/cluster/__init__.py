"""The Kubernetes implementation of the executor interface: TrainJobs on a cluster, through its API.

``executor`` (:class:`~trainjob.cluster.executor.KubernetesExecutor`, what the CLI's ``--backend
kubernetes`` and the SDK's kubernetes backend act through) and ``state`` (pure: a TrainJob, its
JobSet and its pods as the job model). Trainjob's or upstream's controller and JobSet run the job
there; this package only reads and changes objects over the API.
"""
