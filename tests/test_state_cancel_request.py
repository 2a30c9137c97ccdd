"""``$/cancel_request`` in the state engine (docs/API.md "Permission requests"; mirrors
``rust/state/permission.rs`` and ``_fallback/state/permission.py``): the request it cancels and
who sent it are kept, in both protocol versions, and carried by checkpoints. Both backends."""

from __future__ import annotations

import pytest

import acp_fast
from acp_fast import builders as B


def cancel(request_id) -> bytes:
    return B.notification("$/cancel_request", {"requestId": request_id})


PERMISSION = B.request_permission(7, "s", {"toolCallId": "c1", "title": "Edit"}, [], protocol_version=1)


@pytest.mark.parametrize("version", [None, 1, 2])
def test_cancel_requests_are_kept_with_their_sender(backend, version):
    store = backend.ToolCallStore(version)
    store.apply(PERMISSION, source="agent")
    # a pending permission request: its session and tool call are named
    assert tuple(store.apply(cancel(7), source="agent")) == ("s", "request", 7, "cancelled", "c1")
    assert tuple(store.apply(cancel("7"), source="client")) == (None, "request", "7", "cancelled", None)
    assert tuple(store.apply(cancel(None))) == (None, "request", None, "cancelled", None)
    assert store.cancel_requests() == [
        {"requestId": 7, "source": "agent"},
        {"requestId": "7", "source": "client"},
        {"requestId": None, "source": None},
    ]
    # the permission request is still pending: the client answers it (ACP, "Cancellation")
    assert store.permission(7)["outcome"] == "pending"
    assert store.state()["cancelRequests"] == store.cancel_requests()
    again = backend.ToolCallStore.from_json(store.to_json())
    assert again.state() == store.state() and again.cancel_requests() == store.cancel_requests()


def test_bad_cancel_requests_are_state_errors(backend):
    store = backend.ToolCallStore()
    for request_id, found in ((1.5, "number 1.5"), (True, "true"), ({"a": 1}, "object")):
        with pytest.raises(acp_fast.DecodeError) as info:
            store.apply(cancel(request_id))
        assert info.value.code == -32602 and info.value.kind == "invalid_request_id"
        assert str(info.value).startswith(
            f'expected "params.requestId" to be a string, an integer or null, found {found}'
        )
    with pytest.raises(acp_fast.DecodeError, match="found none"):
        store.apply(B.notification("$/cancel_request", {}))
    assert store.apply(b'{"jsonrpc":"2.0","method":"$/cancel_request"}') is None  # no params: nothing to keep
    assert store.cancel_requests() == [] and "cancelRequests" not in store.state()


def test_only_the_last_thousand_are_kept(backend):
    store = backend.ToolCallStore()
    for i in range(1005):
        store.apply(cancel(i), source="client")
    kept = store.cancel_requests()
    assert len(kept) == 1000 and kept[0] == {"requestId": 5, "source": "client"}
    assert backend.ToolCallStore.from_json(store.to_json()).cancel_requests() == kept


def test_checkpoint_checks_cancel_requests(backend):
    store = backend.ToolCallStore()
    store.apply(cancel(3), source="agent")
    doc = store.to_json()
    assert doc.endswith(b',"cancelRequests":[{"requestId":3,"source":"agent"}]}')
    for bad, message in (
        (b'"source":"agent"', 'expected "state.cancelRequests.0.source" to be "agent", "client" or null'),
        (b'"requestId":3', 'expected "state.cancelRequests.0.requestId" to be a string, an integer or null'),
    ):
        broken = doc.replace(bad, bad.split(b":")[0] + b":1.5")
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            backend.ToolCallStore.from_json(broken)
