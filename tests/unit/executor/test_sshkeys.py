"""SSH key pairs for MPI: the formats upstream's MPI plugin writes into the Secret."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from trainjob.executor.sshkeys import generate_ssh_key_pair


def test_private_key_is_a_p521_ec_pem_and_public_key_matches_it() -> None:
    private, public = generate_ssh_key_pair()
    assert private.startswith("-----BEGIN EC PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(private.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.curve.name == "secp521r1"
    assert public.startswith("ecdsa-sha2-nistp521 ") and public.endswith("\n")
    loaded = serialization.load_ssh_public_key(public.strip().encode())
    assert isinstance(loaded, ec.EllipticCurvePublicKey)
    assert loaded.public_numbers() == key.public_key().public_numbers()


def test_each_call_makes_a_new_pair() -> None:
    assert generate_ssh_key_pair()[0] != generate_ssh_key_pair()[0]
