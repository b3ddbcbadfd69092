"""Who may call a worker, and how workers prove themselves to each other.

Pure logic with no gRPC: the worker properties of TLS and authentication
(:mod:`.config`), the roles (:mod:`.roles`), the token and principal files
(:mod:`.credential_files`), files re-read when they change (:mod:`.reloading`) and the
inter-worker session key that signs forwarded calls (:mod:`.session_key`). The gRPC side
(credentials, the server interceptor) is in ``connect_grpc.api.tls`` and
``connect_grpc.api.auth``.
"""
