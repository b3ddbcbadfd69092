"""Configuration read from files: the worker's properties (``worker``) and the connector
files that standalone mode and ``ctl`` read (``connector_files``)."""
