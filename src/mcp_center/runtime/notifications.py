"""What a server's notifications do in the host: log messages, list_changed, the activity feed (R-3.5, R-8.1, R-12.1).

Every connection gets handlers from one `Notifications` object (the manager owns it):

- `notifications/message` goes to the activity feed and to every log listener (the gateway forwards
  them to agents, R-8.1);
- `notifications/{tools,prompts,resources}/list_changed` asks the connection to refresh those
  categories (the same path "Refresh catalog" takes);
- any other notification is recorded in the activity feed (progress is recorded by the call it
  belongs to, with its operation id).

A handler is bound to one connection and asks `is_current()` before it acts: an old instance's
notifications never touch the current session's catalog or feed (R-3.5).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import mcp_types as types
from mcp.client.session import IncomingMessage, LoggingFnT, MessageHandlerFnT

from mcp_center.runtime.activity import ActivityRecorder
from mcp_center.runtime.catalog import Category
from mcp_center.runtime.connection import Connection

__all__ = ["CHANGED_CATEGORIES", "LogListener", "Notifications", "ResourceListener"]

logger = logging.getLogger(__name__)

LogListener = Callable[[str, types.LoggingMessageNotificationParams], None]
"""`(server_id, params)` for every `notifications/message` a current connection receives."""

ResourceListener = Callable[[str, str], None]
"""`(server_id, uri)` for every `notifications/resources/updated` a current connection receives."""

_SEEN_ELSEWHERE = frozenset({"notifications/message", "notifications/progress"})
"""Notifications the activity feed records through their own callbacks (log level, call's operation id)."""

CHANGED_CATEGORIES: Mapping[str, tuple[Category, ...]] = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "resource_templates"),
}
"""The catalog categories a `list_changed` notification asks to refresh."""


class Notifications:
    """Builds the per-connection notification handlers and keeps the log listeners.

    Args:
        activity: The activity feed log messages and notifications are recorded in (R-12.1).
    """

    def __init__(self, activity: ActivityRecorder) -> None:
        self._activity = activity
        self._log_listeners: list[LogListener] = []
        self._resource_listeners: list[ResourceListener] = []

    def add_log_listener(self, listener: LogListener) -> Callable[[], None]:
        """Receive every server log message (`notifications/message`) as `(server_id, params)`.

        The listener is called synchronously and must not block (the gateway forwards them, R-8.1).
        Returns a function that removes the listener.
        """
        self._log_listeners.append(listener)

        def remove() -> None:
            if listener in self._log_listeners:
                self._log_listeners.remove(listener)

        return remove

    def add_resource_listener(self, listener: ResourceListener) -> Callable[[], None]:
        """Receive every `notifications/resources/updated` as `(server_id, uri)` (the gateway relays
        them to the agents that subscribed, R-8.1). Called synchronously; must not block. Returns a
        function that removes the listener."""
        self._resource_listeners.append(listener)

        def remove() -> None:
            if listener in self._resource_listeners:
                self._resource_listeners.remove(listener)

        return remove

    def logging_handler(self, server_id: str, conn: Connection, is_current: Callable[[], bool]) -> LoggingFnT:
        """The `logging_callback` of `conn`: feed + listeners, while `is_current()` holds."""

        async def handle(params: types.LoggingMessageNotificationParams) -> None:
            if not is_current():
                return
            self._activity.log(
                server_id, conn.connection_id, level=params.level, logger=params.logger, data=params.data
            )
            for listener in list(self._log_listeners):
                try:
                    listener(server_id, params)
                except Exception:
                    logger.exception("runtime.log_listener_failed")

        return handle

    def message_handler(self, server_id: str, conn: Connection, is_current: Callable[[], bool]) -> MessageHandlerFnT:
        """The `message_handler` of `conn`: records notifications and refreshes on list_changed (R-3.5)."""

        async def handle(message: IncomingMessage) -> None:
            # an old instance's notifications never touch the current session's catalog.
            if not isinstance(message, types.ServerNotification) or not is_current():
                return
            if message.method not in _SEEN_ELSEWHERE:
                params = (
                    message.params.model_dump(mode="json", by_alias=True, exclude_none=True) if message.params else None
                )
                self._activity.notification(server_id, conn.connection_id, message.method, params)
            categories = CHANGED_CATEGORIES.get(message.method)
            if categories is not None and conn.is_live:
                conn.request_refresh(categories)
            if isinstance(message, types.ResourceUpdatedNotification):
                self._resource_updated(server_id, str(message.params.uri))

        return handle

    def _resource_updated(self, server_id: str, uri: str) -> None:
        for listener in list(self._resource_listeners):
            try:
                listener(server_id, uri)
            except Exception:
                logger.exception("runtime.resource_listener_failed")

    @staticmethod
    def list_changed_handler(conn: Connection, is_current: Callable[[], bool]) -> Callable[[str], None]:
        """For the lean forwarder: a notification method name → refresh its categories on `conn`."""

        def list_changed(method: str) -> None:
            categories = CHANGED_CATEGORIES.get(method)
            if categories is not None and conn.is_live and is_current():
                conn.request_refresh(categories)

        return list_changed
