"""Config providers (Kafka's KIP-297, KIP-421, KIP-887): ``${provider:[path:]key}`` references
in connector configs, resolved only when a config is handed to a plugin.

The worker declares its providers with Kafka Connect's properties::

    config.providers=file,dir,env
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.file.param.allowed.paths=/etc/connect/secrets
    config.providers.dir.class=DirectoryConfigProvider
    config.providers.env.class=EnvVarConfigProvider
    config.providers.env.param.allowlist.pattern=DB_.*

Stored and returned configs keep the references; the worker resolves them when it starts a
connector or a task, and validation resolves them to check the values a plugin would get.

Modules: ``specs`` (the worker properties), ``providers`` (file, directory, environment),
``transformer`` (finding, resolving and reverting references) and ``redaction`` (resolved
values masked in log lines). The package imports only the shared kernels below it
(``errors``, ``properties``), never ``worker_config``, so ``worker_config`` can use ``specs``
without an import cycle (the ``connect_grpc`` package's import contracts check it).
"""
