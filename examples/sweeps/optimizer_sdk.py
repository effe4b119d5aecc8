"""The Kubeflow SDK 0.5.0's hyperparameter optimization example, on trainjob.

As the Kubeflow docs write it, with the imports swapped (``kubeflow.trainer`` ->
``trainjob``, ``kubeflow.optimizer`` -> ``trainjob.optimizer``). On this machine it runs
locally (``TRAINJOB_BACKEND=local``, or no cluster configured): each trial is a TrainJob whose
function gets the parameters as keyword arguments; the best trial is the one with the lowest
loss. Run: ``python examples/sweeps/optimizer_sdk.py``.
"""

from trainjob import CustomTrainer
from trainjob.optimizer import (
    Objective,
    OptimizerClient,
    RandomSearch,
    Search,
    TrainJobTemplate,
    TrialConfig,
)


def train_func(lr: float, batch_size: int, epochs: int = 10) -> None:
    import torch

    from trainjob import update_trainjob_status

    torch.manual_seed(0)
    x = torch.randn(256, 4)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        for i in range(0, len(x), batch_size):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[i : i + batch_size]), y[i : i + batch_size])
            loss.backward()
            optimizer.step()
        # Katib's collector reads this line; update_trainjob_status reports the same
        print(f"epoch={epoch} loss={loss.item():.6f}")
    update_trainjob_status(metrics={"loss": loss.item()})


template = TrainJobTemplate(
    runtime="torch-distributed",
    trainer=CustomTrainer(func=train_func, func_args={"epochs": 10}),
)

client = OptimizerClient()

job_name = client.optimize(
    trial_template=template,
    trial_config=TrialConfig(num_trials=2, parallel_trials=2),
    search_space={
        "lr": Search.loguniform(0.001, 0.1),
        "batch_size": Search.choice([16, 32, 64]),
    },
    objectives=[Objective(metric="loss", direction="minimize")],
    algorithm=RandomSearch(random_state=42),
)
print(f"OptimizationJob: {job_name}")

job = client.wait_for_job_status(job_name)
for trial in job.trials:
    print(trial.name, trial.parameters, [(m.name, m.latest) for m in trial.metrics])

best = client.get_best_results(job_name)
print(f"best parameters: {best.parameters}" if best else "no best trial")
for line in client.get_job_logs(job_name):
    print(line)

client.delete_job(job_name)
