"""Built-in trainers: the programs a built-in runtime's node step runs inside its container.

``trainjob.trainers.llm`` is the LLM fine-tuning trainer behind the torchtune runtimes
(``BuiltinTrainer(TorchTuneConfig(...))``). A trainer runs in a cluster's container or as a
local-backend process, so nothing here imports the local backend, the controller, the client,
the CLI or the compiler.
"""
