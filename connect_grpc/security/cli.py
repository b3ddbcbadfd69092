"""``connect-grpc auth``: bearer tokens and the lines of ``auth.tokens.file``.

``new-token`` writes a fresh random token to stdout; ``hash-token`` reads a token from
stdin (never from the command line, which other users of the machine can see) and writes
its ``sha256:<hex>`` hash, the first field of a tokens-file line. Exit 0, or 2 with a
one-line reason on stderr for a token that is too short or not printable ASCII.
"""

from __future__ import annotations

import sys
from typing import TextIO

from connect_grpc.security.credential_files import hash_token, new_token

ACTIONS = ("new-token", "hash-token")


def run_auth_command(
    action: str, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    if action == "new-token":
        stdout.write(new_token() + "\n")
        return 0
    token = stdin.read().rstrip("\r\n")
    try:
        stdout.write(hash_token(token) + "\n")
    except ValueError as exc:
        stderr.write(f"connect-grpc auth hash-token: {exc}\n")
        return 2
    return 0
