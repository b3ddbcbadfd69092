"""Roles and callers.

Kafka Connect has no roles (a REST extension decides); ours are fixed and small:

- ``viewer``: every read of ConnectService, ``ValidateConfig`` (it changes nothing) and
  ``WatchConnectorStatus``;
- ``admin``: all of ConnectService;
- ``worker``: ClusterService, the workers' own calls to each other. Only a call signed
  with the cluster's session key has it; no token or certificate can grant it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Role(enum.Enum):
    VIEWER = "viewer"
    ADMIN = "admin"
    WORKER = "worker"

    @classmethod
    def granted_by_file(cls, text: str) -> Role | None:
        """The role a token or principals file line names (viewer or admin), else None."""
        try:
            role = cls(text)
        except ValueError:
            return None
        return role if role in CLIENT_ROLES else None


#: The roles a token or a certificate can carry.
CLIENT_ROLES = (Role.VIEWER, Role.ADMIN)


class Authentication(enum.Enum):
    """How a caller proved who it is."""

    #: Nothing: the worker authenticates nobody (no tokens file, no client certificates).
    NONE = "none"
    TOKEN = "token"
    CERTIFICATE = "certificate"
    #: A call another worker forwarded, signed with the session key.
    WORKER_SIGNATURE = "worker-signature"


#: The credential of a caller of a worker that authenticates nobody.
NO_CREDENTIAL = "none"


def token_credential(digest: bytes) -> str:
    return f"token:{digest.hex()}"


def certificate_credential(subject: str) -> str:
    return f"certificate:{subject}"


def worker_credential(worker_id: str) -> str:
    return f"worker:{worker_id}"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a call is from, and what it may do."""

    principal: str
    #: None: authenticated, but no role was granted (a certificate the principals file
    #: does not list).
    role: Role | None
    authentication: Authentication
    #: What another worker needs to apply its own policy to this caller when the call is
    #: forwarded to it: ``token:<sha256 hex of the token>``, ``certificate:<subject>``,
    #: ``worker:<id>`` or ``none``. Never a secret.
    credential: str

    def may(self, required: Role) -> bool:
        """Whether this caller's role allows a call that needs ``required``."""
        if self.role is None:
            return False
        if required is Role.WORKER or self.role is Role.WORKER:
            return self.role is required
        return self.role is Role.ADMIN or required is Role.VIEWER


#: The caller of a worker that authenticates nobody: everyone may do everything a client
#: may (as Kafka Connect's, without a REST extension).
ANONYMOUS = Caller("anonymous", Role.ADMIN, Authentication.NONE, NO_CREDENTIAL)
