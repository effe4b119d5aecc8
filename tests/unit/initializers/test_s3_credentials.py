"""Credentials against moto's server with IAM checks on: wrong keys and missing rights.

moto checks signatures and IAM policies when ``moto.settings.INITIAL_NO_AUTH_ACTION_COUNT`` is 0
(read per request by the server thread, which runs in this process). The test makes an IAM user
with a real key pair first, with checks still off, then turns them on for the initializer runs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.initializers.conftest import S3, Run

READ_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject"], "Resource": "*"}
    ],
}


@pytest.fixture
def iam_checks(s3: S3) -> Iterator[dict[str, tuple[str, str]]]:
    """Key pairs of a reader and of a user with no rights; IAM checks on while the test runs."""
    boto3 = pytest.importorskip("boto3")
    settings = pytest.importorskip("moto.settings")
    iam = boto3.client(
        "iam",
        endpoint_url=s3.endpoint,
        aws_access_key_id="AKIASETUP",
        aws_secret_access_key="setup",
        region_name="us-east-1",
    )
    keys: dict[str, tuple[str, str]] = {}
    for role, policy in (("reader", READ_POLICY), ("nobody", None)):
        user = f"{role}-{uuid.uuid4().hex[:8]}"
        iam.create_user(UserName=user)
        if policy is not None:
            iam.put_user_policy(UserName=user, PolicyName="read", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        keys[role] = (key["AccessKeyId"], key["SecretAccessKey"])
    before = settings.INITIAL_NO_AUTH_ACTION_COUNT
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    try:
        yield keys
    finally:
        settings.INITIAL_NO_AUTH_ACTION_COUNT = before


@pytest.fixture
def bucket(s3: S3) -> str:
    name = f"cred-{uuid.uuid4().hex[:12]}"
    s3.client.create_bucket(Bucket=name)
    s3.client.put_object(Bucket=name, Key="data/a.txt", Body=b"a")
    return name


def test_a_readers_keys_download(
    s3: S3, run: Run, tmp_path: Path, bucket: str, iam_checks: dict[str, tuple[str, str]]
) -> None:
    key_id, secret = iam_checks["reader"]
    env = s3.env(f"s3://{bucket}/data", tmp_path, ACCESS_KEY_ID=key_id, SECRET_ACCESS_KEY=secret)
    proc = run("dataset", env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a.txt").read_bytes() == b"a"
    assert secret not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("who", "want"),
    [
        pytest.param(
            "wrong secret",
            "error: SECRET_ACCESS_KEY: the request signature does not match at {endpoint}: "
            "check SECRET_ACCESS_KEY (and ACCESS_KEY_ID)",
            id="a wrong secret key",
        ),
        pytest.param(
            "unknown key",
            "error: ACCESS_KEY_ID: the S3 endpoint at {endpoint} does not know this access key: "
            "check ACCESS_KEY_ID and SECRET_ACCESS_KEY",
            id="an unknown access key",
        ),
        pytest.param(
            "nobody",
            "error: ACCESS_KEY_ID: access denied to s3://{bucket}/data at {endpoint}: set "
            "ACCESS_KEY_ID and SECRET_ACCESS_KEY (or ROLE_ARN) of an identity allowed "
            "s3:ListBucket and s3:GetObject",
            id="keys without the rights",
        ),
    ],
)
def test_bad_credentials_are_one_line_naming_the_field(
    s3: S3,
    run: Run,
    tmp_path: Path,
    bucket: str,
    iam_checks: dict[str, tuple[str, str]],
    who: str,
    want: str,
) -> None:
    key_id, secret = iam_checks["reader"]
    if who == "wrong secret":
        secret = "wrong-" + secret
    elif who == "unknown key":
        key_id = "AKIAUNKNOWN000000000"
    else:
        key_id, secret = iam_checks["nobody"]
    env = s3.env(f"s3://{bucket}/data", tmp_path, ACCESS_KEY_ID=key_id, SECRET_ACCESS_KEY=secret)
    proc = run("dataset", env)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [want.format(bucket=bucket, endpoint=s3.endpoint)]
    assert "Traceback" not in proc.stderr
    assert secret not in proc.stdout + proc.stderr
