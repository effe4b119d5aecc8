"""Kubernetes rules every layer of trainjob shares: pure functions and constants, no I/O.

``times`` (RFC 3339 ``metav1.Time``: now, format, parse), ``conditions`` (apimachinery's
``meta.SetStatusCondition`` semantics), ``jobset`` (JobSet and Job label keys, condition types,
reasons and messages, spelled as upstream) and ``resources`` (an API resource type and its URL
paths). The API models, the compiler, both executors, the controller, the SDK and the CLI import
these modules; none of them keeps a copy. This package imports nothing else from trainjob.
"""
