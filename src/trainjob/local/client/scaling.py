"""``trainjob scale`` on the local backend: an elastic job's new node count, checked.

The stored TrainJob gets ``spec.trainer.numNodes`` and a new ``metadata.generation`` (as a spec
change on a cluster); the job's supervisor sees the new generation and adds or stops nodes
(:meth:`trainjob.local.job.attempt.Attempt.scale_to`). Called by
:meth:`trainjob.local.client.executor.LocalExecutor.scale`.
"""

from __future__ import annotations

import json
from typing import Any

from trainjob.api import constants as c
from trainjob.errors import FieldError, InvalidError, TrainJobError
from trainjob.executor import model as st
from trainjob.local.job import elastic
from trainjob.local.state.store import JobRow
from trainjob.runtime.plan import Plan


def scaled(row: JobRow, num_nodes: int) -> dict[str, Any]:
    """The stored TrainJob with ``num_nodes`` nodes; an error when the job is not elastic, has
    finished, or the count is outside its bounds."""
    bounds = elastic.bounds(Plan(tuple(json.loads(row.plan))))
    if bounds is None:
        raise TrainJobError(
            f'TrainJob "{row.name}" is not elastic: set spec.trainer.elasticPolicy '
            "(minNodes, maxNodes) to change its node count"
        )
    if row.phase in st.FINISHED:
        raise TrainJobError(f'TrainJob "{row.name}" is {row.phase}: its node count cannot change')
    if not isinstance(num_nodes, int) or not bounds.min_nodes <= num_nodes <= bounds.max_nodes:
        raise InvalidError(
            [
                FieldError.invalid(
                    "spec.trainer.numNodes",
                    num_nodes,
                    f"must be between elasticPolicy.minNodes ({bounds.min_nodes}) "
                    f"and maxNodes ({bounds.max_nodes})",
                )
            ],
            c.TRAINJOB_KIND,
            row.name,
        )
    data = row.trainjob_dict()
    meta = data.setdefault("metadata", {})
    meta["generation"] = int(meta.get("generation") or 1) + 1
    data.setdefault("spec", {}).setdefault("trainer", {})["numNodes"] = num_nodes
    return data
