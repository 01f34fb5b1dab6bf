"""Herald: a Kubernetes-style watch cache engine (Rust), from Python.

One writer applies versioned changes; any number of watches, each with
label/field selectors, receive exactly the events they may see, in
resource-version order, then an end with a reason (``Watch.end_reason``).
"""

from types import TracebackType
from typing import AsyncIterator, Dict, Iterable, Iterator, List, Literal, Optional, Tuple, Type, Union

__version__: str

EventKind = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
ChangeKind = Literal["ADDED", "MODIFIED", "DELETED"]
EndReason = Literal[
    "stopped",
    "deadline",
    "too_slow",
    "gone",
    "relisted",
    "engine_stopped",
    "too_large_resource_version",
    "engine_failed",
    "drained",
]
VersionMatch = Literal["NotOlderThan", "Exact"]

class HeraldError(Exception):
    """The base of every error Herald raises."""

class InvalidArgument(HeraldError):
    """An argument out of its domain: an invalid name, options Kubernetes
    refuses, a malformed continue token, a second ``writer()``."""

class InvalidSelector(InvalidArgument):
    """A label or field selector that does not parse."""

class Gone(HeraldError):
    """The resource version asked for is older than the history kept (HTTP
    410 Gone): list again."""

class TooLargeResourceVersion(HeraldError):
    """The resource version asked for was not reached in time (HTTP 504)."""

class OutOfOrder(HeraldError):
    """A write at or below the engine's resource version (nothing changed)."""

class NotReady(HeraldError):
    """The engine holds no list yet (``replace`` first), or lost its source
    (HTTP 429: retry)."""

class EngineStopped(HeraldError):
    """The engine was stopped."""

class ClosedError(HeraldError):
    """A call on a writer or a watch after its ``close()``."""

class Object:
    """An object to write with ``Writer.replace``. Immutable."""

    def __init__(
        self,
        namespace: str,
        name: str,
        labels: Optional[Dict[str, str]] = None,
        fields: Optional[Dict[str, str]] = None,
        payload: Union[bytes, bytearray, None] = None,
    ) -> None: ...
    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` when the namespace is ""."""
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Dict[str, str]:
        """A new dict of the labels."""
    @property
    def payload(self) -> bytes:
        """The payload (a copy)."""
    def field(self, name: str) -> Optional[str]:
        """A selectable field's value, or None."""

class Item(Object):
    """One object of a list or a get: an ``Object`` and the version of its
    last change."""

    @property
    def resource_version(self) -> int:
        """The version of the object's last change."""

class ListPage:
    """One page of ``Engine.list``."""

    @property
    def items(self) -> List[Item]:
        """The objects, in key order."""
    @property
    def resource_version(self) -> int:
        """The version of the state read."""
    @property
    def continue_token(self) -> Optional[str]:
        """Pass it as ``continue_token`` for the next page; None on the last."""
    def __len__(self) -> int: ...

class Event:
    """One event of a watch. Immutable."""

    @property
    def kind(self) -> EventKind: ...
    @property
    def resource_version(self) -> int: ...
    @property
    def key(self) -> Optional[str]:
        """``namespace/name``; None for a bookmark."""
    @property
    def namespace(self) -> Optional[str]: ...
    @property
    def name(self) -> Optional[str]: ...
    @property
    def payload(self) -> bytes:
        """The object's payload (b"" for a bookmark), copied on each access."""
    @property
    def labels(self) -> Dict[str, str]: ...
    @property
    def initial_events_end(self) -> bool:
        """True on the bookmark that ends a watch-list's initial events."""
    def field(self, name: str) -> Optional[str]: ...

class Watch(Iterator[Event], AsyncIterator[Event]):
    """A watch. ``for ev in watch`` blocks with the GIL released;
    ``async for ev in watch`` waits on the running asyncio loop (one eventfd
    per loop, no thread); ``poll()`` takes a batch. Iteration stops at the
    end; ``end_reason`` says why.

    ``stop()``, ``close()`` and ``end_reason`` may be called from any thread.
    One consumer at a time; a watch awaited on a loop stays on that loop.
    """

    def __iter__(self) -> "Watch": ...
    def __next__(self) -> Event: ...
    def __aiter__(self) -> "Watch": ...
    async def __anext__(self) -> Event: ...
    def poll(self, max: int = 256, timeout: Optional[float] = 0.0) -> List[Event]:
        """Up to ``max`` events, waiting up to ``timeout`` seconds for the
        first (0: not at all; None: without limit). [] when the time ran out
        or the watch ended."""
    def stop(self) -> None:
        """Ends the watch ("stopped", unless it ended already); nothing more
        is delivered. Never waits."""
    def close(self) -> None:
        """Stops and releases the watch; later receives raise ClosedError."""
    @property
    def end_reason(self) -> Optional[EndReason]:
        """Why the watch ended; None while it runs."""
    @property
    def end_message(self) -> Optional[str]: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> "Watch": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """Closes the watch."""

class Writer:
    """The engine's one writer. Thread-safe (calls are serialised)."""

    def apply(
        self,
        kind: ChangeKind,
        resource_version: int,
        namespace: str,
        name: str,
        labels: Optional[Dict[str, str]] = None,
        fields: Optional[Dict[str, str]] = None,
        payload: Union[bytes, bytearray, None] = None,
    ) -> None:
        """Applies one change at ``resource_version`` (above the engine's,
        else OutOfOrder). Raises NotReady before the first ``replace``."""
    def replace(self, objects: Iterable[Object], resource_version: int) -> None:
        """Replaces the whole state (a list from the source); the first makes
        the engine ready."""
    def progress(self, resource_version: int) -> None:
        """Advances the engine's version without a change."""
    def close(self) -> None:
        """Drops the writer; later calls raise ClosedError."""
    def __enter__(self) -> "Writer": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class Engine:
    """A watch cache for one resource type. Thread-safe."""

    def __init__(
        self,
        indexed_fields: Optional[List[str]] = None,
        history: Optional[Tuple[int, int]] = None,
        too_large_timeout: Optional[float] = None,
        slow_watchers: Literal["park", "time_budget"] = "park",
        inline_dispatch: bool = True,
    ) -> None:
        """``indexed_fields``: fields to route watches by (``spec.nodeName``);
        ``history``: (lower, upper) bounds of the changes kept;
        ``too_large_timeout``: seconds to wait for a version not reached yet
        (default 3); ``slow_watchers``: "park" (a slow watcher is parked and
        resumed from history, ending "gone" only if its next change left it)
        or "time_budget" (Kubernetes': it ends "too_slow");
        ``inline_dispatch`` (under "park"): ``Writer.apply`` fans its change
        out on the caller's thread when the engine's dispatcher is idle, so
        a writer on an event loop wakes its watches without a hop through
        the dispatcher thread (False: the dispatcher thread always does)."""
    def writer(self) -> Writer:
        """The engine's one writer (once; again: InvalidArgument)."""
    def stop(self) -> None:
        """Stops the engine for good: watches end "engine_stopped"."""
    @property
    def resource_version(self) -> int: ...
    @property
    def lifecycle(self) -> Literal["pending", "ready", "stopped"]: ...
    def stats(self) -> Dict[str, int]: ...
    def watch(
        self,
        resource_version: Optional[int] = None,
        label_selector: str = "",
        field_selector: str = "",
        namespace: Optional[str] = None,
        key: Optional[str] = None,
        allow_bookmarks: bool = False,
        send_initial_events: Optional[bool] = None,
        resource_version_match: Optional[VersionMatch] = None,
        timeout: Optional[float] = None,
    ) -> Watch:
        """Kubernetes' WATCH. ``resource_version`` None or 0: the current
        state as ADDED events, then changes; R: the changes after R (Gone if
        R left the history; "too_large_resource_version" if R is not reached
        in time). ``send_initial_events`` implies
        ``resource_version_match="NotOlderThan"``. ``timeout``: seconds until
        the watch ends with "deadline" (None: never; ``float("inf")``
        saturates to never; 0 ends it at once)."""
    def list(
        self,
        resource_version: Optional[int] = None,
        label_selector: str = "",
        field_selector: str = "",
        namespace: Optional[str] = None,
        key: Optional[str] = None,
        limit: int = 0,
        continue_token: Optional[str] = None,
        resource_version_match: Optional[VersionMatch] = None,
    ) -> ListPage:
        """Kubernetes' LIST: one page of at most ``limit`` (0: all)."""
    def get(
        self,
        key: str,
        resource_version: Optional[int] = None,
        resource_version_match: Optional[VersionMatch] = None,
    ) -> Optional[Item]:
        """The object at ``key``, or None."""
    def __enter__(self) -> "Engine": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """Stops the engine."""
