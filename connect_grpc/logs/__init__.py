"""Logging: where and how log lines are written, and plugins' output captured (``output``);
the log levels read and set at run time (``levels``, KIP-495)."""
