"""The JVM side's Python-facing parts: the Kafka Connect plugin jars fetched for tests and the
demo (:mod:`.plugin_jars`) and the built ``jvm/`` project (:mod:`.jvm_build`).

A side package, outside the layers (docs/architecture.md): it imports nothing of them, so
any layer that hosts Java plugins can use it.
"""
