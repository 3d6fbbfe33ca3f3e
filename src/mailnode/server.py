"""``mailnode serve``: the API (uvicorn), the SMTP listener and the durable executor in one process.

Start order: open the node (upgrading the schema), record this process as live (``liveness.register``),
launch DBOS (recovering pending workflows of this executor id), take over any dead process's work
(``liveness``), start the heartbeat, start the SMTP listener, then serve HTTP until SIGINT or SIGTERM (uvicorn
handles both and drains requests). Stop order is the reverse, ending with ``liveness.mark_stopped`` once DBOS is
destroyed, so another process (or this one's next start) takes over what it left pending at once; every part
is stopped even when another fails to stop.

Several processes on one database share everything (issue 19): materialisations wait on a DBOS queue any
process dequeues, scheduled passes are one workflow per tick whichever process's scheduler fires it first,
dispatch claims sends one by one with a lease, and a process that dies is taken over by a survivor within
``budgets.EXECUTOR_LEASE_SECONDS`` (``mailnode.liveness``; ``docs/operations.md``).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import uvicorn

from mailnode import budgets, liveness, logs, runtime, wiring
from mailnode.app import create_app
from mailnode.app_events import workflows as webhook_workflows
from mailnode.config import Settings
from mailnode.ingress import workflows
from mailnode.ingress.smtp import start_listener
from mailnode.node import Node
from mailnode.notices import workflows as notice_workflows
from mailnode.outbound import sweeper_workflows
from mailnode.outbound import workflows as outbound_workflows
from mailnode.schedules import interval_cron

if TYPE_CHECKING:
    from dbos import ScheduleInput

log = logging.getLogger("mailnode.server")


def run_server(settings: Settings) -> None:
    """Run the node in the foreground until interrupted. Raises ``E_SETTING_MALFORMED`` for bad addresses or
    an interval that cannot be a schedule, before anything starts."""
    host, port = settings.http_hostport
    smtp_host, smtp_port = settings.smtp_hostport  # validated before anything starts
    schedules(settings)  # every interval is a schedule, or nothing starts (E_SETTING_MALFORMED)
    logs.setup(settings.log_format, settings.log_libraries)
    with ExitStack() as stack:
        node = Node.open(settings)
        stack.callback(node.close)
        outbound_workflows.recover_own_claims(node)
        me = runtime.executor_id(node)
        liveness.register(node, me, "serve")
        stack.callback(liveness.mark_stopped, node, me)  # after runtime.shutdown: nothing of ours runs then
        wiring.launch(node)
        stack.callback(runtime.shutdown)
        heartbeat = Heartbeat(node, me)
        heartbeat.once()  # a predecessor that is gone is taken over now, not a beat later
        heartbeat.start()
        stack.callback(heartbeat.stop)
        apply_schedules(settings)
        workflows.scan_unmaterialised()
        controller = start_listener(node, workflows.start, smtp_host, smtp_port)
        stack.callback(controller.stop)
        app = create_app(node)
        # ``log_config=None``: uvicorn keeps its hands off logging (``logs.setup`` routes its records) and only
        # sets its loggers' level, to the libraries' level.
        server = _Server(uvicorn.Config(app, host=host, port=port, log_config=None,
                                        log_level=logs.library_level(settings.log_libraries), lifespan="off"))
        log.info("serve.listening http=%s:%s smtp=%s web=%s", host, port, settings.smtp, web_address(host, port))
        if settings.log_format == logs.LogFormat.TEXT:
            # The address a person opens: printed on stdout (not only logged) so the README's first command
            # shows it; with JSON logs every line stays a JSON object and ``serve.listening`` carries it.
            print(f"web inbox: {web_address(host, port)}", flush=True)
        server.run()


def recover_dead(node: Node, dead_executor_id: str) -> int:
    """Recover what the dead executor ``dead_executor_id`` left: its PENDING workflows go back to DBOS's queues
    for any live process (``runtime.recover_executor``) and its dispatch claims are resolved
    (``outbound.workflows.recover_claims_of``). Returns how many of both."""
    return runtime.recover_executor(dead_executor_id) + outbound_workflows.recover_claims_of(node, dead_executor_id)


class Heartbeat:
    """This process's heartbeat and takeover loop (``mailnode.liveness``) on a daemon thread: every
    ``budgets.EXECUTOR_HEARTBEAT_SECONDS``, ``once``.

    A process must never run on once another may have taken its work over. So the loop exits the process at
    once (``os._exit`` with ``budgets.EXECUTOR_FENCED_EXIT_STATUS``, as a crash: its durable work is already
    being redone elsewhere) when a beat finds its row taken over, and when no beat has succeeded for the
    lease minus two beats (the database unreachable: a survivor may be about to judge it dead). A pass that
    fails otherwise is logged with its traceback (``executor.heartbeat_failed``) and the next one runs.
    """

    def __init__(self, node: Node, executor_id: str) -> None:
        self.node, self.executor_id = node, executor_id
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mailnode-heartbeat", daemon=True)
        self._last_beat = time.monotonic()

    def once(self) -> list[liveness.Takeover]:
        """Beat, then take over every dead process (``liveness.take_over_dead``); the takeovers done. Exits the
        process when the beat finds this executor taken over (see the class docstring)."""
        if not liveness.beat(self.node, self.executor_id):
            fence(self.executor_id, "its row was taken over by another process")
        self._last_beat = time.monotonic()
        return liveness.take_over_dead(self.node, self.executor_id, lambda dead: recover_dead(self.node, dead))

    def start(self) -> None:
        """Start the loop."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the loop and wait for a pass in progress (bounded by the drain budget)."""
        self._stopping.set()
        self._thread.join(timeout=budgets.SHUTDOWN_DRAIN_SECONDS)

    def _run(self) -> None:
        unbeaten = budgets.EXECUTOR_LEASE_SECONDS - 2 * budgets.EXECUTOR_HEARTBEAT_SECONDS
        while not self._stopping.wait(budgets.EXECUTOR_HEARTBEAT_SECONDS):
            try:
                self.once()
            except Exception:
                log.exception("executor.heartbeat_failed executor=%s", self.executor_id)
                if time.monotonic() - self._last_beat > unbeaten:
                    fence(self.executor_id, f"no heartbeat succeeded for {unbeaten:.0f} s")


def fence(executor_id: str, why: str) -> None:
    """Exit this process at once (no cleanup, as ``kill -9``): another process has taken, or may be about to
    take, its durable work over (``Heartbeat``). Logged first as ``executor.fenced``."""
    log.critical("executor.fenced executor=%s: %s; exiting so no work runs twice", executor_id, why)
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(budgets.EXECUTOR_FENCED_EXIT_STATUS)


def web_address(host: str, port: int) -> str:
    """The URL a person opens for the web inbox served on ``host``:``port`` (pure). A wildcard listen
    address (``0.0.0.0``, ``::``, empty) is shown as the loopback address, which reaches it from this
    machine; an IPv6 address is bracketed (RFC 3986 section 3.2.2)."""
    shown = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


class _Server(uvicorn.Server):
    """uvicorn's server, minus re-raising the signal after shutdown.

    uvicorn re-raises a captured SIGTERM once it has drained, which ends the process before the rest of
    the node (SMTP listener, DBOS) is stopped; mailnode instead returns and stops them in order.
    """

    def handle_exit(self, sig: int, frame: Any) -> None:
        """First signal: drain and return; a second SIGINT forces the exit."""
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True


def schedules(settings: Settings) -> list[ScheduleInput]:
    """The node's DBOS schedules from ``settings``: name, workflow and cron (``schedules.interval_cron``).

    Raises ``E_SETTING_MALFORMED`` (422) naming the first interval setting that cannot be a schedule.
    """
    return [
        {"schedule_name": "materialise-scan", "workflow_fn": workflows.scheduled_scan,
         "schedule": interval_cron(settings.materialise_scan_interval_seconds, "materialise_scan_interval_seconds")},
        {"schedule_name": "dispatch-sweep", "workflow_fn": outbound_workflows.scheduled_sweep,
         "schedule": interval_cron(settings.dispatch_interval_seconds, "dispatch_interval_seconds")},
        {"schedule_name": "notify-sweeper", "workflow_fn": sweeper_workflows.scheduled_sweeper,
         "schedule": interval_cron(settings.sweeper_interval_seconds, "sweeper_interval_seconds")},
        {"schedule_name": "notice-sweep", "workflow_fn": notice_workflows.scheduled_notice_sweep,
         "schedule": interval_cron(settings.notice_sweep_interval_seconds, "notice_sweep_interval_seconds")},
        {"schedule_name": "webhook-pass", "workflow_fn": webhook_workflows.scheduled_webhook_pass,
         "schedule": interval_cron(settings.webhook_pass_interval_seconds, "webhook_pass_interval_seconds")},
    ]


def apply_schedules(settings: Settings) -> None:
    """Create or replace the node's DBOS schedules (idempotent; shared by every process of the node)."""
    from dbos import DBOS

    DBOS.apply_schedules(schedules(settings))
