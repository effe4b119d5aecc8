"""trainjob: run Kubeflow Trainer V2 TrainJobs on a laptop or a Kubernetes cluster, with one API.

This module is the public face of the package. It stays cheap to import: no kubernetes, torch or
transformers is imported here.
"""

from trainjob.errors import FieldError, InvalidError, TrainJobError

__version__ = "0.1.0"

__all__ = ["FieldError", "InvalidError", "TrainJobError", "__version__"]
