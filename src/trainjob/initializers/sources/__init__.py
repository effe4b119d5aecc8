"""One module per storage scheme, each with ``fetch(cfg)``: ``file``, ``s3``, ``hf``.

``command.fetch`` imports the one a ``STORAGE_URI`` names, so a source's library (boto3,
huggingface_hub) is imported only when that source runs.
"""
