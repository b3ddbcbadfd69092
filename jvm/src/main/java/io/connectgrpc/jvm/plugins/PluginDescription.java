package io.connectgrpc.jvm.plugins;

import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import org.apache.kafka.connect.runtime.rest.entities.ConfigKeyInfo;
import org.apache.kafka.connect.runtime.rest.entities.PluginInfo;

/**
 * One plugin of the catalogue: Kafka's {@code PluginInfo} fields ({@code class}, {@code type},
 * {@code version}, as {@code GET /connector-plugins} shows them), where it was found (a plugin
 * location of {@code plugin.path}, or {@code classpath}), and its config definition in the
 * shape of {@code GET /connector-plugins/{name}/config} (null for config providers).
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
public record PluginDescription(
        @JsonProperty("class") String className,
        @JsonProperty("type") String type,
        @JsonProperty("version") String version,
        @JsonProperty("location") String location,
        @JsonProperty("config") List<ConfigKeyInfo> config) {

    PluginDescription(PluginInfo info, String location, List<ConfigKeyInfo> config) {
        this(info.className(), info.type().toString(), info.version(), location, config);
    }
}
