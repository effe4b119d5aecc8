"""SSH key pairs for MPI runtimes: the one impure step before compiling an MPI TrainJob.

Upstream's MPI plugin generates an ECDSA P-521 key the first time it builds a TrainJob's Secret.
trainjob's compiler draws no randomness, so whoever compiles (the controller when the Secret does
not exist yet, the local executor for each new job) calls :func:`generate_ssh_key_pair` and passes
the pair in ``CompileOptions(ssh_private_key=..., ssh_public_key=...)``.

Here, beside the executor interface, because it is a step of every executor's submit (not of the
pure compiler), and knows no backend.
"""

from __future__ import annotations


def generate_ssh_key_pair() -> tuple[str, str]:
    """A new (private, public) pair: PEM ``EC PRIVATE KEY`` and an ``authorized_keys`` line."""
    # Imported here: the controller loads cryptography only once an MPI TrainJob needs a key.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private.decode(), public.decode() + "\n"
