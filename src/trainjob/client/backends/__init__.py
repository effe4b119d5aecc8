"""Backends of :class:`trainjob.TrainerClient`: ``local`` (this machine) and ``kubernetes``.

Both implement :class:`trainjob.client.backends.base.RuntimeBackend`; the client only forwards
calls. Modules are imported on first use so ``import trainjob`` stays cheap.
"""
