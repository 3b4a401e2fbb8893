"""The one home of the tests' helpers: every suite takes what it shares from here, and no test
module imports from another test module (tests/structure/test_test_helpers.py checks both).

- ``backends``: the two event-log backends (SQLite, PostgreSQL) and a test's log storage.
- ``fixtures``: the fixtures every suite may ask for (``storage``, ``postgres``).
- ``servers``: a real server in this process (one, with its web port, or replicas), its log.
- ``processes``: the real ``spades-server`` process, started, killed and restarted.
- ``clients``: gRPC clients, Play and Watch streams, the status a refused call ends with.
- ``seats``: a seat's actions and whole turns played through streams.
- ``refusals``: a refusal's status and reason code, and that it wrote nothing.
- ``accounts``, ``admin``: accounts and keys; the operator's token and AdminService.
- ``faults``: SDK clients that journal what was acknowledged, and the log read as the truth.
- ``rules``: rule sets for property tests and the rulebook's trumps restated.
- ``browser``, ``tls``: a real chromium for the web tests; a self-signed certificate.
- ``marks``: the marks (``slow``, ``faults``, ``browser``, ``cluster``) each folder gives its tests.
- ``skips``: under CI every skip is a failure (README.md, "Skipped tests").
- ``time``: a clock the test moves by hand (``ManualClock``), and waiting on a state.
"""
