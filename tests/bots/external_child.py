"""A child bot for the exec adapter's tests: speaks the protocol, then misbehaves on cue.

python external_child.py MODE [MARKER]

MODE says what it does at its first decision: ``good`` (answers every decision with the last
legal action), ``crash`` (exits with code 3), ``hang`` (never answers), ``garbage`` (writes a
line that is not JSON), ``illegal`` (picks an action that is not on offer), ``exit-after-5``
(answers five decisions, then exits), ``noted`` (as ``good``, with a note on each answer),
``bad-note`` (a note that is not a string). With MARKER, only the first child that finds no file at
that path misbehaves (it creates the file): the restarted child is ``good``, so a test can see
the restart.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def say(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    if len(sys.argv) > 2:
        marker = Path(sys.argv[2])
        if marker.exists():
            mode = "good"
        else:
            marker.write_text("started")
    answered = 0
    for line in sys.stdin:
        message = json.loads(line)
        if message["type"] == "hello":
            say({"type": "hello", "version": 1, "name": "child"})
            continue
        if message["type"] != "decide":
            continue
        if mode == "crash":
            sys.exit(3)
        if mode == "hang":
            time.sleep(60)
        if mode == "garbage":
            sys.stdout.write("I think I will play the queen\n")
            sys.stdout.flush()
            continue
        if mode == "illegal":
            say({"id": message["id"], "choice": len(message["legal"])})
            continue
        if mode == "exit-after-5" and answered == 5:
            sys.exit(0)
        answered += 1
        answer: dict[str, object] = {"id": message["id"], "choice": len(message["legal"]) - 1}
        if mode == "noted":
            answer["note"] = f"child note {message['id']}"
        elif mode == "bad-note":
            answer["note"] = 42
        say(answer)


if __name__ == "__main__":
    main()
