package io.connectgrpc.jvm.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import io.connectgrpc.jvm.host.proto.StartTask;
import io.connectgrpc.jvm.host.proto.WarmWorker;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShippedPluginPathTest {

    @TempDir
    Path root;

    private static StartTask start(String pluginPath) {
        return StartTask.newBuilder()
                .setConnector("c")
                .setTask(0)
                .putAllWorkerProperties(Map.of("plugin.path", pluginPath, "group.id", "g"))
                .putAllPluginScanProperties(Map.of("plugin.path", pluginPath, "plugin.discovery", "service_load"))
                .build();
    }

    @Test
    void namesTheCopyAsPythonDoes() {
        // the values connect_grpc.java.shipped_plugins.shipped_name gives
        assertEquals("connect-plugins-5220d61326757e61", ShippedPluginPath.shippedName("/opt/connect/plugins"));
        assertEquals("connect-plugins-92cd10e6b8b068a9", ShippedPluginPath.shippedName("plugins"));
        assertEquals("connect-plugins-cac634203600e902", ShippedPluginPath.shippedName("/opt/x/uber.jar"));
    }

    @Test
    void eachShippedEntryIsReplacedByItsCopyTheOthersStay() throws IOException {
        Path dir = Files.createDirectories(root.resolve(ShippedPluginPath.shippedName("/opt/connect/plugins")));
        Path jarDir = Files.createDirectories(root.resolve(ShippedPluginPath.shippedName("/opt/x/uber.jar")));
        Path jar = Files.createFile(jarDir.resolve("uber.jar"));
        StartTask given = start("/opt/connect/plugins,/opt/x/uber.jar,/not/shipped");

        StartTask local = ShippedPluginPath.localize(given, root);

        String expected = dir + "," + jar + ",/not/shipped";
        assertEquals(expected, local.getPluginScanPropertiesMap().get("plugin.path"));
        assertEquals(expected, local.getWorkerPropertiesMap().get("plugin.path"));
        assertEquals("service_load", local.getPluginScanPropertiesMap().get("plugin.discovery"));
        assertEquals("g", local.getWorkerPropertiesMap().get("group.id"));
        assertEquals("c", local.getConnector());
    }

    @Test
    void withoutCopiesTheTaskIsLeftAsItIs() {
        StartTask given = start("/opt/connect/plugins");
        assertSame(given, ShippedPluginPath.localize(given, root));
        StartTask none = StartTask.newBuilder().setConnector("c").build();
        assertSame(none, ShippedPluginPath.localize(none, root));
    }

    @Test
    void aWarmWorkerIsLocalizedAsTheStartTasksOfItsWorkerAreSoThatTheyMatch() throws IOException {
        Files.createDirectories(root.resolve(ShippedPluginPath.shippedName("/opt/connect/plugins")));
        StartTask start = start("/opt/connect/plugins,/not/shipped");
        WarmWorker warm = WarmWorker.newBuilder().setWorkerId("w")
                .putAllWorkerProperties(start.getWorkerPropertiesMap())
                .putAllPluginScanProperties(start.getPluginScanPropertiesMap())
                .build();

        StartTask localStart = ShippedPluginPath.localize(start, root);
        WarmWorker localWarm = ShippedPluginPath.localize(warm, root);

        assertEquals(localStart.getWorkerPropertiesMap(), localWarm.getWorkerPropertiesMap());
        assertEquals(localStart.getPluginScanPropertiesMap(), localWarm.getPluginScanPropertiesMap());
        assertEquals(root.resolve(ShippedPluginPath.shippedName("/opt/connect/plugins")) + ",/not/shipped",
                localWarm.getWorkerPropertiesMap().get("plugin.path"));
        WarmWorker none = WarmWorker.newBuilder().setWorkerId("w").build();
        assertSame(none, ShippedPluginPath.localize(none, root));
    }
}
