"""Sweeps (OptimizationJob): the pure engine that decides the next trials and which to stop
(:mod:`trainjob.optimizer.engine`, on Optuna), the trial TrainJobs made from the template
(:mod:`trainjob.optimizer.template`) and the OptimizationJob's status
(:mod:`trainjob.optimizer.status`). Each backend only creates, watches and stops TrainJobs.

Importing this package imports neither Optuna nor pydantic: the engine imports Optuna itself.
"""
