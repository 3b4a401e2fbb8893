"""The one home of the tests' helpers: every suite takes what it shares from here, no test
module imports from another test module, and no suite imports another suite's helper module
(tests/structure/test_test_helpers.py checks all three).

- ``backends``: the two event-log backends (SQLite, PostgreSQL) and a test's log storage.
- ``fixtures``: the fixtures every suite may ask for (``storage``, ``postgres``).
- ``servers``: a real server in this process (one, with its web port, or replicas), its log.
- ``processes``: the real ``spades-server`` process, started, killed and restarted.
- ``clients``: gRPC clients, Play and Watch streams, the status a refused call ends with.
- ``seats``: a seat's actions and whole turns played through streams.
- ``refusals``: a refusal's status and reason code, and that it changed nothing.
- ``accounts``, ``admin``: accounts and keys; the operator's token and AdminService.
- ``faults``: SDK clients that journal what was acknowledged, and the log read as the truth.
- ``rules``: rule sets for property tests and the rulebook's trumps restated.
- ``browser``, ``tls``: a real chromium for the web tests; a self-signed certificate.
- ``stores``: a table store on a SQLite file and a table seated through it (no server).
- ``terminal``: someone at a terminal running ``spades``, and the server process they call.
- ``bot_matches``, ``bot_process``, ``players``: SDK bots seated and played, their match's record
  audited; a real ``spades-bot`` process; bot accounts playing what their stream assigns.
- ``cluster_tables``, ``history``: tables of bots played through a load balancer, and their
  history checked against the log (the cluster suite and its benchmark).
- ``random_matches``: random legal matches under many rule sets (records, analysis).
- ``dds``, ``endings``: DDS on engine positions, and endings to solve (solver tests, benchmark).
- ``import_graph``: a package's import graph read from its sources, and its cycles.
- ``marks``: the marks (``slow``, ``faults``, ``browser``, ``cluster``) each folder gives its tests.
- ``skips``: under CI every skip is a failure (README.md, "Skipped tests").
- ``time``: a clock the test moves by hand (``ManualClock``), and waiting on a state.
"""
