"""The red-team harness of issue 11: bad inputs and faults, each tried as a hostile user would.

Every case is a :class:`Case` in one of the tables (:mod:`tests.redteam.inputs` for bad inputs,
:mod:`tests.redteam.faults` for faults), filed under the issue's class (1 processes, 2 one
validation path, 3 caps and apimachinery rules, 4 SDK types, 5 bounded reads, 6 the store, 7 file
safety, 8 secrets and leftovers, 9 the webhook server, 10 honest messages, 11 initializers).

``python -m tests.redteam`` runs every case in a process of its own (so a hang is a timeout and
a crash a traceback, whatever the code under test does) and prints, per class and in all::

    bad inputs tried / clear errors / tracebacks / hangs / wrongly accepted
    faults tried / survived with nothing lost

The pytest side pins the same classes with exact expectations: the corpus
(tests/unit/test_corpus.py: ``plan`` and ``run`` give the exact lines of each ``.stderr``), the
SDK's calls (tests/unit/client/test_arguments.py: every ``SDK_CALLS`` entry's exact error, and a
hypothesis test over ``train()``'s arguments), and the faults' own tests (tests/e2e/
test_nothing_outlives_its_job.py, tests/e2e/test_local_files_and_secrets.py,
tests/unit/local/test_store_faults.py and test_file_safety.py,
tests/unit/controller/test_webhook_server_hostile_clients.py, tests/unit/initializers/).
"""
