package io.connectgrpc.jvm.plugins;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.connect.runtime.rest.entities.ConfigInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.apache.kafka.connect.runtime.rest.entities.ConfigValueInfo;

/**
 * The entry point for Python, through py4j (PySpark's driver JVM gateway) or the command line
 * ({@link Main}): plain strings in and JSON strings out, so that nothing but {@code String}
 * crosses the gateway.
 *
 * <pre>
 *   host = jvm.io.connectgrpc.jvm.plugins.JavaPluginHost.open(json.dumps(worker_properties))
 *   catalogue = json.loads(host.listPlugins())
 *   result = json.loads(host.validate(json.dumps(connector_config)))
 *   errors = json.loads(host.validateErrors(json.dumps(connector_config)))
 *   preview = json.loads(host.preview(json.dumps(preview_request)))
 *   host.close()
 * </pre>
 *
 * <p>{@link #listPlugins()} answers {@code {"plugin_path": ..., "plugin_discovery": ...,
 * "plugins": [...]}} (see {@link PluginDescription}); {@link #validate(String)} answers Kafka's
 * {@code ConfigInfos} JSON as its REST API returns it, or {@code {"error": {"class": ...,
 * "message": ...}}} when Kafka's validation fails outright (its REST API's 400 or 500).
 */
public final class JavaPluginHost implements AutoCloseable {

    /**
     * The hosts of this JVM by their worker properties: one scan of a plugin path per JVM,
     * shared by the catalogue, the connectors and the tasks the JVM hosts (a scan costs
     * seconds of CPU, and one class loader per plugin keeps a plugin's static state single).
     */
    private static final Map<Map<String, String>, JavaPluginHost> SHARED = new ConcurrentHashMap<>();

    private final PluginCatalogue catalogue;
    private final ConfigProviders configProviders;
    /** Built by the first preview: its metrics registry is the one thing it keeps. */
    private volatile PipelinePreview previewer;

    private JavaPluginHost(PluginCatalogue catalogue) {
        this.catalogue = catalogue;
        this.configProviders = new ConfigProviders(catalogue.plugins());
    }

    /**
     * Scans a plugin path.
     *
     * @param workerPropertiesJson a JSON object of Kafka Connect worker properties, at least
     *     {@code plugin.path}; {@code plugin.discovery} defaults to Kafka's
     *     ({@code hybrid_warn})
     */
    public static JavaPluginHost open(String workerPropertiesJson) {
        return new JavaPluginHost(PluginCatalogue.open(Json.readStringMap(workerPropertiesJson)));
    }

    /**
     * This JVM's host for these worker properties, scanning the path on first use. Never
     * closed by its users: it lives as long as the JVM.
     */
    public static JavaPluginHost shared(String workerPropertiesJson) {
        Map<String, String> props = Map.copyOf(Json.readStringMap(workerPropertiesJson));
        return SHARED.computeIfAbsent(props, p -> new JavaPluginHost(PluginCatalogue.open(p)));
    }

    /** The catalogue: every plugin found, with its type, version and config definition. */
    public String listPlugins() {
        return Json.write(listing(catalogue));
    }

    /** Kafka Connect's validation of a connector config (a JSON object of strings). */
    public String validate(String connectorConfigJson) {
        try {
            return Json.write(catalogue.validate(Json.readStringMap(connectorConfigJson)));
        } catch (Exception | LinkageError e) {
            // A plugin that needs a missing class fails with a LinkageError: an answer, like
            // any failed validation, not a broken gateway.
            return Json.write(Json.error(e));
        }
    }

    /**
     * Kafka Connect's validation of a connector config, answered with what a create or an
     * update needs of it: {@link #validate}'s answer with each key's value reduced to its name
     * and its errors, in Kafka's order, and no definitions. A twentieth of the size, and a
     * JVM that has written few answers takes milliseconds less to write it on the path of
     * every create.
     */
    public String validateErrors(String connectorConfigJson) {
        try {
            return Json.write(errorsOf(catalogue.validate(Json.readStringMap(connectorConfigJson))));
        } catch (Exception | LinkageError e) {
            return Json.write(Json.error(e));
        }
    }

    /**
     * PreviewPipeline of a Java connector ({@link PipelinePreview}): {@code {"type": "sink"|
     * "source", "config": {...}, "worker": {...}, "records": [...]}} in, {@code {"records":
     * [...]}}, {@code {"config_error": ...}} (a plugin that cannot be built) or
     * {@code {"error": ...}} out.
     */
    public String preview(String requestJson) {
        try {
            return Json.write(previewer().preview(Json.readObject(requestJson)));
        } catch (Exception | LinkageError e) {
            return Json.write(Json.error(e));
        }
    }

    private PipelinePreview previewer() {
        PipelinePreview built = previewer;
        if (built == null) {
            synchronized (this) {
                built = previewer;
                if (built == null) {
                    built = new PipelinePreview(catalogue);
                    previewer = built;
                }
            }
        }
        return built;
    }

    /**
     * {@code ConfigInfos} as its JSON names it, each key's value only its name and errors (a
     * key Kafka's validation gave no value has none).
     */
    static Map<String, Object> errorsOf(ConfigInfos infos) {
        List<Map<String, Object>> configs = new ArrayList<>(infos.configs().size());
        for (ConfigInfo info : infos.configs()) {
            ConfigValueInfo value = info.configValue();
            String name = value != null ? value.name() : info.configKey().name();
            List<String> errors = value != null ? value.errors() : List.of();
            configs.add(Map.of("value", Map.of("name", name, "errors", errors)));
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("name", infos.name());
        body.put("error_count", infos.errorCount());
        body.put("groups", infos.groups());
        body.put("configs", configs);
        return body;
    }

    /**
     * Builds the worker's Java config provider a request names ({@code {"provider": name,
     * "class": ..., "params": {...}}}), once per name, and answers {@code {"class": ...}} or
     * {@code {"error": ...}} ({@link ConfigProviders}).
     */
    public String openConfigProvider(String requestJson) {
        try {
            Map<String, Object> request = Json.readObject(requestJson);
            return Json.write(configProviders.open(
                    (String) request.get("provider"), (String) request.get("class"), params(request)));
        } catch (Exception e) {
            return Json.write(Json.error(e));
        }
    }

    /**
     * A lookup of that provider ({@code "path"} and {@code "keys"} beside the fields of
     * {@link #openConfigProvider}): {@code {"data": {...}, "ttl": ...}} or {@code {"error": ...}}.
     */
    public String configData(String requestJson) {
        try {
            Map<String, Object> request = Json.readObject(requestJson);
            @SuppressWarnings("unchecked")
            List<String> keys = (List<String>) request.get("keys");
            return Json.write(configProviders.get((String) request.get("provider"),
                    (String) request.get("class"), params(request), (String) request.get("path"), keys));
        } catch (Exception e) {
            return Json.write(Json.error(e));
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> params(Map<String, Object> request) {
        Object params = request.get("params");
        return params == null ? Map.of() : (Map<String, String>) params;
    }

    /** The catalogue behind this entry point, for JVM callers. */
    public PluginCatalogue catalogue() {
        return catalogue;
    }

    @Override
    public void close() {
        PipelinePreview built = previewer;
        if (built != null) {
            built.close();
        }
        configProviders.close();
        catalogue.close();
    }

    static Map<String, Object> listing(PluginCatalogue catalogue) {
        Map<String, Object> body = new LinkedHashMap<>();
        Map<String, String> props = catalogue.workerProperties();
        body.put("plugin_path", props.get("plugin.path"));
        body.put("plugin_discovery", props.getOrDefault("plugin.discovery", "hybrid_warn"));
        List<PluginDescription> plugins = catalogue.describe();
        body.put("plugins", plugins);
        return body;
    }
}
