"""Integrations of acp-fast with other ACP libraries.

* [`acp_fast.integrations.acp_sdk`][acp_fast.integrations.acp_sdk]: the official ACP Python SDK
  (PyPI ``agent-client-protocol``, import name ``acp``): SDK connections that read and write
  frames through acp-fast ([`acp_sdk.install`][acp_fast.integrations.acp_sdk.install]).
* [`acp_fast.integrations.session_state`][acp_fast.integrations.session_state]: a drop-in
  ``SessionAccumulator`` for ``acp.contrib.session_state``, backed by
  [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore].
* [`acp_fast.integrations.models`][acp_fast.integrations.models]: conversions between acp-fast
  records / frames and the SDK's pydantic models.

The SDK is an optional dependency: ``pip install 'acp-fast[sdk]'``. This package itself imports
nothing from it; the three modules above raise an ImportError naming the extra when it is missing.
See docs/SDK.md.
"""

from __future__ import annotations

#: The SDK releases the integrations support: the requirement of the ``sdk`` extra.
SDK_REQUIREMENT = "agent-client-protocol>=0.12.1,<2"
#: The releases the tests run against (CI runs them on each): the oldest supported and the newest
#: 1.0 pre-release. Releases in between are found out by what they have, not by their number.
SDK_TESTED_VERSIONS = ("0.12.1", "1.0.0rc3")
#: The oldest SDK release supported (the floor of [`SDK_REQUIREMENT`][acp_fast.integrations.SDK_REQUIREMENT]).
SDK_VERSION = SDK_TESTED_VERSIONS[0]
#: The extra that installs it: ``pip install 'acp-fast[sdk]'``.
SDK_EXTRA = "acp-fast[sdk]"

__all__ = ["SDK_EXTRA", "SDK_REQUIREMENT", "SDK_TESTED_VERSIONS", "SDK_VERSION", "require_sdk"]


def require_sdk(module: str) -> None:
    """Raise an ImportError naming the ``sdk`` extra when the ACP SDK (``acp``) is missing."""
    try:
        import acp
        import acp.connection  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{module} needs the official ACP Python SDK (import name 'acp', PyPI "
            f"'{SDK_REQUIREMENT}'); install it with: pip install '{SDK_EXTRA}'"
        ) from exc
