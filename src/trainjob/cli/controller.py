"""``trainjob controller``: run the Kubernetes operator (in a cluster or against any kubeconfig).

Examples::

    trainjob controller                                   # in a cluster (the Deployment's command)
    trainjob controller --kubeconfig kc --no-leader-elect --webhook-host 127.0.0.1 \\
        --self-signed-webhooks                            # development, webhooks on loopback

Webhooks: ``--self-signed-webhooks`` makes a loopback CA and registers its own webhook
configurations; ``--cert-management secret`` keeps certificates in a Secret and the CA in the
installed configurations (the manifests' default); ``--cert-dir`` serves cert-manager's files;
none of these: no webhooks. The TrainJob status endpoint (progress, KEP-2779) is served on port
10443 unless ``--no-status-server``. SIGTERM/SIGINT stop it cleanly (the lease is released).

Registered on :data:`trainjob.cli.root.app`; the work is done by :class:`trainjob.controller.manager.Manager`.
"""

from __future__ import annotations

import logging
import signal
import sys
from enum import StrEnum
from types import FrameType
from typing import Annotated

import typer

from trainjob.api import constants as c
from trainjob.cli.root import app


class CertManagement(StrEnum):
    none = "none"
    secret = "secret"


@app.command("controller")
def controller(
    kubeconfig: Annotated[
        str | None,
        typer.Option(help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)"),
    ] = None,
    context: Annotated[str | None, typer.Option(help="kubeconfig context")] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="watch only this namespace (default: all)"),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="concurrent reconciles")] = 5,
    bind_host: Annotated[
        str, typer.Option(help="address of the health and metrics servers")
    ] = "0.0.0.0",
    metrics_port: Annotated[int, typer.Option(help="Prometheus /metrics port (-1: off)")] = 8080,
    health_port: Annotated[int, typer.Option(help="/healthz and /readyz port (-1: off)")] = 8081,
    leader_elect: Annotated[bool, typer.Option(help="elect a leader with a Lease")] = True,
    leader_election_namespace: Annotated[
        str | None, typer.Option(help="namespace of the Lease (default: the controller's own)")
    ] = None,
    leader_election_id: Annotated[str, typer.Option(help="name of the Lease")] = (
        "trainjob-controller.trainer.kubeflow.org"
    ),
    lease_duration: Annotated[float, typer.Option(help="seconds")] = 15.0,
    renew_deadline: Annotated[float, typer.Option(help="seconds")] = 10.0,
    retry_period: Annotated[float, typer.Option(help="seconds")] = 2.0,
    webhook_host: Annotated[str, typer.Option(help="address of the webhook server")] = "0.0.0.0",
    webhook_port: Annotated[
        int, typer.Option(help="webhook server port (0: any free port)")
    ] = 9443,
    self_signed_webhooks: Annotated[
        bool,
        typer.Option(help="development: loopback CA, and register our own webhook configurations"),
    ] = False,
    cert_management: Annotated[
        CertManagement, typer.Option(help="secret: keep webhook certificates in a Secret")
    ] = CertManagement.none,
    cert_dir: Annotated[
        str | None, typer.Option(help="serve tls.crt/tls.key from this directory (cert-manager)")
    ] = None,
    webhook_secret: Annotated[str, typer.Option(help="Secret of the self-managed certificates")] = (
        "trainjob-webhook-cert"
    ),
    webhook_service: Annotated[str, typer.Option(help="Service in front of the webhooks")] = (
        "trainjob-controller"
    ),
    mutating_webhook_configuration: Annotated[
        str | None,
        typer.Option(
            help=f"the MutatingWebhookConfiguration (default: {c.MUTATING_WEBHOOK_CONFIGURATION}; "
            "with --self-signed-webhooks: trainjob-dev-mutating-webhook-configuration)"
        ),
    ] = None,
    validating_webhook_configuration: Annotated[
        str | None,
        typer.Option(
            help=f"the ValidatingWebhookConfiguration (default: {c.VALIDATING_WEBHOOK_CONFIGURATION}; "
            "with --self-signed-webhooks: trainjob-dev-validating-webhook-configuration)"
        ),
    ] = None,
    status_server: Annotated[
        bool,
        typer.Option(help="serve the TrainJob status endpoint trainers report progress to"),
    ] = True,
    status_server_host: Annotated[str, typer.Option(help="address of the status server")] = (
        "0.0.0.0"
    ),
    status_server_port: Annotated[
        int, typer.Option(help="status server port (0: any free port)")
    ] = 10443,
    status_server_url: Annotated[
        str | None,
        typer.Option(
            help="the URL pods reach the status server at (default: "
            "https://<webhook service>.<namespace>.svc:<port>)"
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING, ERROR")] = "INFO",
) -> None:
    """Run the TrainJob controller and its admission webhooks."""
    # the controller, the kube client and the API models load when it runs, not for --help
    from trainjob.controller import priority, statusserver
    from trainjob.controller.manager import Manager, Options, default_leader_election_namespace
    from trainjob.controller.webhooks import serving
    from trainjob.kube.client import Client
    from trainjob.kube.errors import ApiError

    if leader_elect and not lease_duration > renew_deadline > retry_period > 0:
        print(
            f"error: leader election needs --lease-duration ({lease_duration:g}) > "
            f"--renew-deadline ({renew_deadline:g}) > --retry-period ({retry_period:g}) > 0",
            file=sys.stderr,
        )
        raise typer.Exit(1)
    logging.basicConfig(
        level=log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    client = Client.from_config(kubeconfig, context, max_connections=max(16, workers * 4))
    own_ns = default_leader_election_namespace(client)
    webhooks: serving.Options | None = None
    if self_signed_webhooks:
        webhooks = serving.Options(
            mode="dev",
            host=webhook_host,
            port=webhook_port,
            mutating_config=mutating_webhook_configuration,
            validating_config=validating_webhook_configuration,
        )
    elif cert_dir:
        webhooks = serving.Options(
            mode="certdir", host=webhook_host, port=webhook_port, cert_dir=cert_dir
        )
    elif cert_management is CertManagement.secret:
        webhooks = serving.Options(
            mode="secret",
            host=webhook_host,
            port=webhook_port,
            secret_name=webhook_secret,
            service_name=webhook_service,
            namespace=own_ns,
            mutating_config=mutating_webhook_configuration,
            validating_config=validating_webhook_configuration,
        )
    options = Options(
        namespace=namespace,
        workers=workers,
        bind_host=bind_host,
        metrics_port=None if metrics_port < 0 else metrics_port,
        health_port=None if health_port < 0 else health_port,
        leader_elect=leader_elect,
        leader_election_namespace=leader_election_namespace or own_ns,
        leader_election_id=leader_election_id,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        webhooks=webhooks,
        status_server=statusserver.Options(
            host=status_server_host,
            port=status_server_port,
            base_url=status_server_url,
            service_name=webhook_service,
            namespace=own_ns,
        )
        if status_server
        else None,
    )
    manager = Manager(client, options)
    sys.setswitchinterval(priority.SWITCH_INTERVAL)  # the webhook's loop waits less for the GIL

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logging.getLogger(__name__).info("received %s, stopping", signal.Signals(signum).name)
        manager.stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        code = manager.run()
    except ApiError as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(1) from None
    raise typer.Exit(code)
