# A script written against the Kubeflow SDK's documented API (kubeflow.trainer, SDK v0.4/v0.5).
# tests/e2e/test_porting.py runs it on trainjob after changing only the two import lines below.
from kubeflow.trainer import CustomTrainer, TrainerClient
from kubeflow.trainer.options import Labels


def train_pytorch(epochs: int = 2, lr: float = 0.05) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    x = torch.randn(64, 4)
    y = x.sum(dim=1, keepdim=True)
    shard = slice(rank * 32, (rank + 1) * 32)
    for epoch in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[shard]), y[shard])
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        print(f"epoch {epoch} rank {rank}/{world} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


client = TrainerClient()

for runtime in client.list_runtimes():
    print(f"Runtime: {runtime.name}, framework: {runtime.trainer.framework}")

torch_runtime = client.get_runtime("torch-distributed")
print(
    f"Default nodes: {torch_runtime.trainer.num_nodes}, type: {torch_runtime.trainer.trainer_type}"
)

job_name = client.train(
    runtime=torch_runtime,
    trainer=CustomTrainer(
        func=train_pytorch,
        func_args={"epochs": 3, "lr": 0.1},
        num_nodes=2,
        resources_per_node={"cpu": 1},
        env={"NCCL_DEBUG": "INFO"},
    ),
    options=[Labels({"team": "ml"})],
)
print(f"TrainJob: {job_name}")

# Stream the master node's logs while it trains (waits for the pod to start).
for line in client.get_job_logs(job_name, follow=True):
    print(f"[node-0] {line}")

seen = []
job = client.wait_for_job_status(
    name=job_name,
    status={"Complete"},
    timeout=600,
    polling_interval=2,
    callbacks=[lambda j: seen.append(j.status)],
)
print(f"Status: {job.status}, checks: {len(seen) > 0}")
for step in job.steps:
    print(f"Step: {step.name}, Status: {step.status}, Devices: {step.device} x {step.device_count}")

for line in client.get_job_logs(name=job_name, step="node-1"):
    if "loss" in line:
        print(f"[node-1] {line}")

job = client.get_job(job_name)
print(f"Created: {job.creation_timestamp.year > 2000}, runtime: {job.runtime.name}")

for event in client.get_job_events(job_name):
    print(f"Event: {event.involved_object_kind} {event.reason}")

for j in client.list_jobs(runtime=torch_runtime):
    print(f"Job: {j.name}, status: {j.status}, nodes: {j.num_nodes}")

client.delete_job(job_name)
print(f"Jobs left: {len(client.list_jobs())}")
print("done")
