"""Restarts of connectors whose config's values expire: a Java config provider may give the
values it returns a time to live (Vault's leases), and Kafka Connect then restarts the
connector when it runs out, unless its ``config.action.reload`` is ``none``
(``WorkerConfigTransformer``). The worker schedules one restart per connector, from its
start: a start again (the restart itself, an update) schedules anew from the values it read,
a stop cancels it. The restart itself is the herder's (``StatusListener.on_config_expired``),
as any plain restart of the connector: its tasks restart only if their configs change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

#: The soonest a restart follows the start that read the values: a provider whose values
#: expire at once would otherwise restart its connector without a pause.
MIN_RELOAD_DELAY_S = 1.0


class ExpiryReloads:
    """One timer per connector whose values expire. Thread-safe."""

    def __init__(self, on_expired: Callable[[str], None]) -> None:
        self._on_expired = on_expired
        self._lock = threading.Lock()
        self._timers: dict[str, threading.Timer] = {}

    def schedule(self, connector: str, ttl_ms: int | None, restarts: bool) -> None:
        """The values of ``connector``'s config, read now, hold ``ttl_ms``: a restart when
        they run out if ``restarts`` (its ``config.action.reload``); any earlier one is
        dropped."""
        self.cancel(connector)
        if ttl_ms is None:
            return
        if not restarts:
            log.info("connector_config_expiry_ignored", connector=connector, ttl_ms=ttl_ms,
                     reason="config.action.reload=none")
            return
        delay_s = max(MIN_RELOAD_DELAY_S, ttl_ms / 1000)
        timer = threading.Timer(delay_s, self._expired, args=(connector,))
        timer.name = f"config-expiry-{connector}"
        timer.daemon = True
        with self._lock:
            self._timers[connector] = timer
        timer.start()
        log.info("connector_restart_scheduled", connector=connector, ttl_ms=ttl_ms,
                 reason="its config's values expire")

    def cancel(self, connector: str) -> None:
        with self._lock:
            timer = self._timers.pop(connector, None)
        if timer is not None:
            timer.cancel()

    def _expired(self, connector: str) -> None:
        with self._lock:
            if self._timers.get(connector) is not threading.current_thread():
                return  # cancelled or scheduled anew meanwhile
            del self._timers[connector]
        log.info("connector_config_expired", connector=connector)
        self._on_expired(connector)
