"""A TEST DOUBLE for the Hugging Face Hub (it cannot be reached from the test machines): a small
local HTTP server that answers the requests ``huggingface_hub.snapshot_download`` makes (repo
info, recursive tree listing, HEAD and GET of ``/resolve/<sha>/<file>``), with the Hub's ids (the
git blob id of a file, its ETag). Point ``HF_ENDPOINT`` at ``FakeHub.url``. Used by
tests/unit/initializers/test_hf.py and the red-team harness."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

SHA = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_secret_token_do_not_print"
REPOS: dict[str, dict[str, bytes]] = {
    "datasets/org/ds": {
        "README.md": b"# a dataset\n",
        "data/train.jsonl": b'{"q": 1}\n' * 100,
        "data/test.jsonl": b'{"q": 2}\n',
        "other/x.csv": b"a,b\n",
    },
    "models/org/llm": {
        "config.json": b"{}",
        "model.safetensors": b"s" * 4096,
        "pytorch_model.bin": b"b" * 4096,
        "tokenizer.model": b"t",
        "modeling.py": b"# remote code",
    },
}


def git_blob_id(body: bytes) -> str:
    """The git object id the Hub gives a file not in LFS (and its ETag)."""
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


@dataclass
class FakeHub:
    """The Hub stand-in: its URL and the Authorization headers it saw."""

    url: str
    auth: list[str | None] = field(default_factory=list)


@contextlib.contextmanager
def serve() -> Iterator[FakeHub]:
    """The Hub stand-in on a free loopback port, for the ``with`` block."""
    fake = FakeHub("")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            fake.auth.append(self.headers.get("authorization"))

        def reply(self, code: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(code)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            path = urlparse(self.path).path
            for repo, files in REPOS.items():
                kind, repo_id = repo.split("/", 1)
                api = f"/api/{kind}/{repo_id}"
                resolve = (
                    f"/{repo_id}/resolve/{SHA}/" if kind == "models" else f"/{repo}/resolve/{SHA}/"
                )
                if path == api or path.startswith(f"{api}/revision/"):
                    info = {
                        "id": repo_id,
                        "sha": SHA,
                        "siblings": [{"rfilename": f} for f in files],
                    }
                    return self.reply(
                        200, json.dumps(info).encode(), {"Content-Type": "application/json"}
                    )
                if path.startswith(f"{api}/tree/"):
                    tree = [
                        {
                            "type": "file",
                            "path": f,
                            "size": len(b),
                            "oid": git_blob_id(b),
                        }
                        for f, b in files.items()
                    ]
                    return self.reply(
                        200, json.dumps(tree).encode(), {"Content-Type": "application/json"}
                    )
                if path.startswith(resolve) and path[len(resolve) :] in files:
                    body = files[path[len(resolve) :]]
                    etag = f'"{git_blob_id(body)}"'
                    return self.reply(200, body, {"X-Repo-Commit": SHA, "ETag": etag})
            self.reply(
                404,
                b'{"error": "Repository not found"}',
                {"X-Error-Code": "RepoNotFound", "Content-Type": "application/json"},
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
