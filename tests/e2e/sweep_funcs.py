"""Trial functions the sweep e2e tests ship (the SDK ships a function from its source file).

Each writes a marker file (``marks``: a directory) when it starts and ends, so a test sees how
many trials ran at once, that none ran twice, and when one ended and the next began.
"""


def linear_regression(lr: float, marks: str, epochs: int = 25) -> None:
    """A tiny torch model (one linear layer, 64 points) trained with SGD at ``lr``; prints
    Katib's ``name=value`` lines, one per epoch."""
    import json
    import os
    import time

    start = time.time()
    import torch

    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 64).unsqueeze(1)
    y = 3 * x + 0.5
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss = torch.tensor(0.0)
    for epoch in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        print(f"epoch={epoch} loss={loss.item():.6f}", flush=True)
    with open(os.path.join(marks, f"{os.getpid()}.json"), "w") as f:
        json.dump({"lr": lr, "start": start, "end": time.time(), "loss": loss.item()}, f)


def quadratic(x: float, marks: str, pause: float = 0.0) -> None:
    """No torch: ``loss=(x-0.3)**2``, reported with update_trainjob_status's protocol by the
    stdout collector; a pause keeps it running a while."""
    import json
    import os
    import time

    start = time.time()
    time.sleep(pause)
    loss = (x - 0.3) ** 2
    print(f"loss={loss}", flush=True)
    with open(os.path.join(marks, f"{os.getpid()}.json"), "w") as f:
        json.dump({"x": x, "start": start, "end": time.time(), "loss": loss}, f)


def curve(quality: float, marks: str, steps: int = 8, pause: float = 0.25) -> None:
    """A learning curve: at step s the loss is quality / s (a higher quality is worse)."""
    import json
    import os
    import time

    start = time.time()
    for step in range(1, steps + 1):
        print(f"step={step} loss={quality / step}", flush=True)
        time.sleep(pause)
    with open(os.path.join(marks, f"{os.getpid()}.json"), "w") as f:
        json.dump({"quality": quality, "start": start, "end": time.time()}, f)


def parabola(x: float) -> None:
    """No marks (a container sees no host directory): ``loss=(x-0.3)**2``."""
    print(f"loss={(x - 0.3) ** 2}", flush=True)
