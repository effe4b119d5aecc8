"""Run one red-team case in this process and print its outcome as one JSON line (the harness's
child: ``python -m tests.redteam.one CASE_ID WORKDIR``)."""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from tests.redteam.cases import Failed, Outcome, Verdict
from tests.redteam.registry import all_cases


def main() -> int:
    case_id, work = sys.argv[1], Path(sys.argv[2])
    case = all_cases()[case_id]
    try:
        outcome = case.run(work)
    except Failed as e:
        outcome = Outcome(Verdict.LOST, str(e))
    except BaseException as e:  # a crash of the code under test (or of the case)
        tb = traceback.format_exc()
        outcome = Outcome(Verdict.TRACEBACK, f"{type(e).__name__}: {e}\n{tb[-2000:]}")
    print(
        "REDTEAM " + json.dumps({"verdict": outcome.verdict.value, "detail": outcome.detail[:4000]})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
