"""The red-team harness of issue 11: bad inputs and faults, each tried as a hostile user would.

Every case is a :class:`Case` in one of the tables (:mod:`tests.redteam.inputs` for bad inputs,
:mod:`tests.redteam.faults` for faults), filed under the issue's class (1 processes, 2 one
validation path, 3 caps and apimachinery rules, 4 SDK types, 5 bounded reads, 6 the store, 7 file
safety, 8 secrets and leftovers, 9 the webhook server, 10 honest messages, 11 initializers).

``python -m tests.redteam`` runs every case in a process of its own (so a hang is a timeout and
a crash a traceback, whatever the code under test does) and prints, per class and in all::

    bad inputs tried / clear errors / tracebacks / hangs / wrongly accepted
    faults tried / survived with nothing lost

The pytest side (tests/unit/test_redteam_inputs.py, tests/e2e/test_redteam_faults.py) runs the
same cases in-process and asserts each input's exact one-line error (``expected.yaml``).
"""
