package io.connectgrpc.jvm.plugins;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigData;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.provider.ConfigProvider;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;

/**
 * The Java config providers a worker declares ({@code config.providers.<name>.class} naming a
 * class of {@code plugin.path}), built as Kafka Connect's worker builds them: Kafka's
 * {@link Plugins#newConfigProvider} finds the class among the scanned providers, instantiates
 * it in its plugin's class loader and configures it with its
 * {@code config.providers.<name>.param.*} settings. One instance per name, kept until the
 * host closes; every lookup runs in the provider's class loader, as Kafka's
 * {@code WorkerConfigTransformer} does.
 *
 * <p>Lookups answer {@code {"data": {...}, "ttl": <ms or null>}}; a provider that cannot be
 * built or that throws answers {@code {"error": {"class": ..., "message": ...}}}. An error
 * never holds a value the provider returned.
 */
final class ConfigProviders implements AutoCloseable {

    private static final String PREFIX = "config.providers.";

    private final Plugins plugins;
    private final Map<String, ConfigProvider> built = new ConcurrentHashMap<>();

    ConfigProviders(Plugins plugins) {
        this.plugins = plugins;
    }

    /**
     * Builds (once) the provider {@code name} of class {@code className} with {@code params}
     * (its {@code param.*} settings, the prefix left out), and answers its class.
     */
    Map<String, Object> open(String name, String className, Map<String, String> params) {
        try {
            ConfigProvider provider = provider(name, className, params);
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("class", provider.getClass().getName());
            return answer;
        } catch (Exception | LinkageError e) {
            return Json.error(e);
        }
    }

    /** The values of {@code keys} at {@code path} from the provider {@code name} (built if needed). */
    Map<String, Object> get(String name, String className, Map<String, String> params, String path, List<String> keys) {
        try {
            ConfigProvider provider = provider(name, className, params);
            ConfigData data;
            try (LoaderSwap swap = plugins.withClassLoader(provider.getClass().getClassLoader())) {
                data = provider.get(path, Set.copyOf(keys));
            }
            Map<String, Object> answer = new LinkedHashMap<>();
            Map<String, String> values = new HashMap<>();
            if (data != null && data.data() != null) {
                data.data().forEach((key, value) -> {
                    if (value != null) {
                        values.put(key, value);
                    }
                });
            }
            answer.put("data", values);
            answer.put("ttl", data == null ? null : data.ttl());
            return answer;
        } catch (Exception | LinkageError e) {
            return Json.error(e);
        }
    }

    private ConfigProvider provider(String name, String className, Map<String, String> params) {
        ConfigProvider existing = built.get(name);
        if (existing != null) {
            return existing;
        }
        synchronized (built) {
            return built.computeIfAbsent(name, n -> build(n, className, params));
        }
    }

    private ConfigProvider build(String name, String className, Map<String, String> params) {
        Map<String, String> props = new HashMap<>();
        props.put(PREFIX + name + ".class", className);
        params.forEach((key, value) -> props.put(PREFIX + name + ".param." + key, value));
        AbstractConfig config = new AbstractConfig(new ConfigDef(), props, false);
        ConfigProvider provider = plugins.newConfigProvider(config, PREFIX + name, Plugins.ClassLoaderUsage.PLUGINS);
        if (provider == null) {
            throw new IllegalStateException("no class for config provider " + name);
        }
        return provider;
    }

    @Override
    public void close() {
        synchronized (built) {
            built.values().forEach(provider -> Utils.closeQuietly(provider, "config provider"));
            built.clear();
        }
    }
}
