"""The ConnectService RPCs, each classified here by hand as a read (a viewer may call it) or
a mutation (an admin only), for the unit tests of the auth interceptor and the integration
tests of a secured worker. ``tests/unit/test_auth.py`` fails until a new RPC is put in one
of the two sets."""

from __future__ import annotations

READS = {
    "ListConnectors", "GetConnector", "GetConnectorConfig", "GetConnectorStatus",
    "GetTaskStatus", "ListTasks", "WatchConnectorStatus", "GetOffsets", "ValidateConfig",
    "ListPlugins", "GetPluginConfig", "GetClusterInfo", "ListLoggers", "GetLogger",
    "GetConnectorTopics",
    # Pipeline preview (issue 26 item 6)
    "PreviewPipeline",
}
MUTATIONS = {
    "CreateConnector", "PutConnectorConfig", "PatchConnectorConfig", "DeleteConnector",
    "PauseConnector", "ResumeConnector", "StopConnector", "RestartConnector", "RestartTask",
    "AlterOffsets", "ResetOffsets", "SetLogLevel", "ResetConnectorTopics",
}
