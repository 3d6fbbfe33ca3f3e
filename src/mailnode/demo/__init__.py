"""``mailnode demo``: the main job on real mail, in one command, checking its own outcomes.

The demo starts a real ``mailnode serve`` in a temporary data directory and a real SMTP smarthost on
loopback, builds an organisation through the HTTP API, sends the corpus messages shipped in
``demo/data/`` over SMTP and reports what each became. It uses only public interfaces (the CLI, SMTP and
the HTTP API), never the node's modules, so it doubles as an end-to-end test: any outcome that differs
from the expected one ends it with ``E_DEMO_STEP_FAILED`` and a non-zero exit.
"""
