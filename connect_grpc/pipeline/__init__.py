"""The record pipeline: a connector's pipeline keys and their parsing (``keys``, ``config``;
checked by ``validation`` and ``output_check``), its plugins built (``build``) and a task's
pipeline (``task_pipeline``, with its ``record_stages``: converters around the ``chain`` of
transformations, ``converting``; error ``tolerance``, the ``dead_letter`` queue and KIP-610's
``errant`` reporter), what a task is handed to build it where it runs (``spec``), and the
PipelinePreview RPC's part (``preview_model``, ``preview_convert``, ``preview_input``,
``preview``).

It imports nothing of ``runtime``, ``herder``, ``api`` or ``app`` (an import contract checks
it): runtime's task runners and the herder use it, never the reverse.
"""
