"""The replay of the Firestore SDK's JSON spec tests against Firegate's edge clients.

`spec_replay.py` beside this package is its command line; SPEC_REPLAY.md says how the steps map.
The modules, in the order they build on each other:

* `errors`: the harness's exceptions and gRPC status names;
* `files`: finding and naming the spec JSON files;
* `values`: spec JSON → Firestore REST values, queries and patches (the value converter is
  shared with docs_support.py);
* `matching`: a plain-JSON query matcher (which documents a query can hold);
* `events`: expected and actual snapshot events and their comparison;
* `classify`: which tests map, and with which watch;
* `run`: `SpecRun`, one test on one server, with the step modes of `steps_common`,
  `steps_backend`, `steps_scripted` and `steps_tabs`;
* `driver`: `Replay` (runs files, counts results, prints the table).

This file imports nothing, so `from specreplay.values import …` stays light.
"""
